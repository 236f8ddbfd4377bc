//! The cluster scripts (`cluster/cassalock-servers`, `cluster/cassalock-cluster`) as the CLI
//! runs them: each call bounded in time, and the servers' own list of instances read back.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

/// The longest one call of a cluster script may run: above `cassalock-cluster restart`'s own
/// wait for a restarted node to answer (240 s by default), the slowest call there is.
pub const SCRIPT_LIMIT: Duration = Duration::from_secs(300);

/// One row of `cluster/cassalock-servers status --json`: an instance the script manages.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct ServerInstance {
    pub name: String,
    /// Read by the real build's faults only (`bench real` finds an instance by kind and port).
    #[cfg_attr(madsim, allow(dead_code))]
    pub kind: String,
    pub set: String,
    #[cfg_attr(madsim, allow(dead_code))]
    pub port: u16,
    /// leader or follower for an ensemble's member, primary or replica for Redis.
    #[serde(default)]
    pub role: String,
    /// up or down.
    #[serde(default)]
    pub state: String,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster").join(name)
}

/// Everything `pipe` gives until it closes, read on its own thread so that a child writing
/// more than a pipe holds cannot stall; sent on the channel once the pipe closes.
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = send.send(bytes);
    });
    receive
}

/// How long after a command ends its output may still be open: a process it started in the
/// background and left writing to the command's pipes would otherwise hold the read forever.
const OUTPUT_CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// Run `cluster/{name} {args}` for at most [`SCRIPT_LIMIT`] (killed past it): its exit status,
/// standard output and standard error.
fn run_bounded(name: &str, args: &[&str]) -> anyhow::Result<(std::process::ExitStatus, String, String)> {
    let mut command = Command::new(script(name));
    command.args(args);
    run_for_at_most(
        command,
        &format!("cluster/{name} {}", args.join(" ")),
        SCRIPT_LIMIT,
        OUTPUT_CLOSE_LIMIT,
    )
}

/// Run `command` (`what`, in messages) for at most `limit`, killed past it; its output must
/// close within `output_close_limit` of its end.
fn run_for_at_most(
    mut command: Command,
    what: &str,
    limit: Duration,
    output_close_limit: Duration,
) -> anyhow::Result<(std::process::ExitStatus, String, String)> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {what}"))?;
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().with_context(|| format!("waiting for {what}"))? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("`{what}` did not end within {limit:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let closed_by = Instant::now() + output_close_limit;
    let text = |pipe: mpsc::Receiver<Vec<u8>>, which: &str| -> anyhow::Result<String> {
        let bytes = pipe
            .recv_timeout(closed_by.saturating_duration_since(Instant::now()))
            .map_err(|_| {
                anyhow!(
                    "`{what}` ended ({status}), but its {which} was still open {output_close_limit:?} later: \
                     a process it started in the background writes there; send that process's output to a file"
                )
            })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    let stdout = text(stdout, "standard output")?;
    let stderr = text(stderr, "standard error")?;
    Ok((status, stdout, stderr))
}

/// Run one of the cluster scripts: its output, or what went wrong (print it with `{:#}`).
pub fn run_script(name: &str, args: &[&str]) -> anyhow::Result<String> {
    let (status, stdout, stderr) = run_bounded(name, args)?;
    let text = format!("{stdout}{stderr}");
    if !status.success() {
        bail!("`cluster/{name} {}` failed ({status}): {}", args.join(" "), text.trim());
    }
    Ok(text)
}

/// The instances `cluster/cassalock-servers` manages (it exits 3 when one is down, still
/// listing them all), or why they cannot be listed (print it with `{:#}`).
pub fn servers_status() -> anyhow::Result<Vec<ServerInstance>> {
    let (_, stdout, _) = run_bounded("cassalock-servers", &["status", "--json"])?;
    serde_json::from_str(&stdout)
        .map_err(|e| anyhow!("`cluster/cassalock-servers status --json` printed no instance list ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_that_is_not_there_is_an_error_naming_it() {
        let why = run_script("no-such-script", &["status"]).unwrap_err();
        assert!(format!("{why:#}").contains("cluster/no-such-script"), "{why:#}");
    }

    #[test]
    fn a_command_past_its_limit_is_killed_and_said() {
        let mut sleeper = Command::new("sleep");
        sleeper.arg("30");
        let started = Instant::now();
        let why = run_for_at_most(sleeper, "sleep 30", Duration::from_millis(200), OUTPUT_CLOSE_LIMIT).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10), "killed, not waited for");
        assert!(
            format!("{why:#}").contains("`sleep 30` did not end within 200ms"),
            "{why:#}"
        );
    }

    #[test]
    fn a_command_that_leaves_a_process_on_its_output_is_said_not_waited_for() {
        let mut leaver = Command::new("sh");
        leaver.args(["-c", "sleep 20 & echo started"]);
        let started = Instant::now();
        let close = Duration::from_millis(300);
        let why = run_for_at_most(leaver, "sh leaver", Duration::from_secs(60), close).unwrap_err();
        let waited = started.elapsed();
        assert!(waited >= close && waited < Duration::from_secs(10), "waited {waited:?}");
        assert!(
            format!("{why:#}").contains("its standard output was still open"),
            "{why:#}"
        );
    }

    #[test]
    fn a_command_printing_more_than_a_pipe_holds_still_ends() {
        let mut talker = Command::new("head");
        talker.args(["-c", "1000000", "/dev/zero"]);
        let (status, stdout, _) =
            run_for_at_most(talker, "head", Duration::from_secs(60), OUTPUT_CLOSE_LIMIT).expect("it ends");
        assert!(status.success());
        assert_eq!(stdout.len(), 1_000_000);
    }
}
