//! The yardstick of `bench models`: stateright's own single-decree Paxos example, unmodified,
//! built from the stateright sources cargo already unpacked for this workspace and run in the
//! same `bench` run, so that our states per second are compared with it on the same machine at
//! the same moment.
//!
//! Steps, each a limit and an error that says what to do:
//! 1. `cargo pkgid` names the stateright version we depend on, whose sources cargo unpacked;
//! 2. that directory is copied to `target/paxos-baseline/` (the registry copy is never written:
//!    building there would leave a `Cargo.lock` in it), its manifest given an empty
//!    `[workspace]` table so that it is not taken for a member of ours;
//! 3. `cargo build --release --example paxos` there (the example's dev-dependencies come the
//!    way every other dependency comes; about a minute the first time, cached after);
//! 4. `paxos check <clients>` (breadth-first, one checker thread per core, as its own `main`
//!    chooses) and `paxos check-dfs <clients>` run with a time limit, and the unique states of
//!    the line `Done. states=…, unique=…, …` are divided by the wall time we measure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

/// The clients of the example's configuration we time (3 servers, the default network):
/// about 1.2 million unique states, seconds on 2 cores.
pub const CLIENTS: u32 = 3;

/// A run of the example that takes longer than this is killed and reported as an error.
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// One timed run of the example.
#[derive(Clone, Debug)]
pub struct BaselineRun {
    /// "check" (BFS) or "check-dfs".
    pub mode: &'static str,
    pub unique_states: u64,
    pub seconds: f64,
}

impl BaselineRun {
    pub fn states_per_second(&self) -> f64 {
        self.unique_states as f64 / self.seconds.max(1e-9)
    }
}

/// The stateright package directory cargo unpacked for this workspace: `cargo pkgid` names the
/// version we depend on, and cargo keeps every unpacked package under
/// `$CARGO_HOME/registry/src/<registry>/<name>-<version>`.
fn stateright_source() -> anyhow::Result<PathBuf> {
    let output = Command::new(env!("CARGO"))
        .args(["pkgid", "-p", "stateright"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo pkgid")?;
    if !output.status.success() {
        bail!("cargo pkgid -p stateright failed (see above)");
    }
    let pkgid = String::from_utf8_lossy(&output.stdout);
    let version = pkgid
        .trim()
        .rsplit(['@', '#'])
        .next()
        .filter(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .ok_or_else(|| anyhow!("cargo pkgid printed {:?}, not ...@<version>", pkgid.trim()))?;
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let registries = cargo_home.join("registry").join("src");
    let wanted = format!("stateright-{version}");
    let entries = std::fs::read_dir(&registries).with_context(|| format!("cannot list {}", registries.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path().join(&wanted))
        .filter(|dir| dir.join("examples").join("paxos.rs").exists())
        .collect();
    found.sort();
    found.into_iter().next().ok_or_else(|| {
        anyhow!(
            "no {wanted}/examples/paxos.rs under {}: build the workspace once (cargo build --release) so cargo unpacks it",
            registries.display()
        )
    })
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Build the example (once; cargo keeps it) and return the binary's path; print the error with
/// `{:#}` (each step says what it was doing, then why it failed).
pub fn build() -> anyhow::Result<PathBuf> {
    let source = stateright_source()?;
    let version = source
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stateright".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the cli crate has no parent directory")?;
    let root = workspace.join("target").join("paxos-baseline");
    let copy = root.join(&version);
    if !copy.join("Cargo.toml").exists() {
        copy_dir(&source, &copy).with_context(|| format!("copying {} to {}", source.display(), copy.display()))?;
        // The copy sits inside this workspace's directory: an empty workspace table makes it
        // its own (the only change; the example's code is as published).
        let manifest = copy.join("Cargo.toml");
        let mut text = std::fs::read_to_string(&manifest).with_context(|| manifest.display().to_string())?;
        text.push_str("\n[workspace]\n");
        std::fs::write(&manifest, text).with_context(|| manifest.display().to_string())?;
    }
    eprintln!(
        "building stateright's Paxos example ({version}) in {} (about a minute the first time)",
        copy.display()
    );
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--example", "paxos", "--quiet"])
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", root.join("target"))
        // The compiler of the toolchain that built us: a rustup proxy called from a toolchain's
        // cargo would pick one by the package's rust-version instead.
        .env("RUSTC", Path::new(env!("CARGO")).with_file_name("rustc"))
        // The example is compiled as published: without this workspace's `--cfg madsim`.
        .env_remove("RUSTFLAGS")
        .env("CARGO_ENCODED_RUSTFLAGS", "")
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!(
            "building the example failed (see above); try it by hand: cd {} && cargo build --release --example paxos",
            copy.display()
        );
    }
    Ok(root.join("target").join("release").join("examples").join("paxos"))
}

/// Parse the unique states of the example's last line, `Done. states=N, unique=U, depth=D, sec=S`.
pub fn parse_done(stdout: &str) -> Option<u64> {
    let line = stdout.lines().rev().find(|line| line.starts_with("Done."))?;
    let unique = line.split(", ").find_map(|field| field.strip_prefix("unique="))?;
    unique.trim().parse().ok()
}

/// Run the example once in `mode` ("check" or "check-dfs") and time it; print the error with
/// `{:#}`.
pub fn run(binary: &Path, mode: &'static str) -> anyhow::Result<BaselineRun> {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args([mode, &CLIENTS.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let mut stdout = child.stdout.take().context("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            bail!("paxos {mode} {CLIENTS} ran over {} s", RUN_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let seconds = started.elapsed().as_secs_f64();
    let text = reader.join().map_err(|_| anyhow!("the reader thread panicked"))?;
    let unique_states = parse_done(&text)
        .ok_or_else(|| anyhow!("paxos {mode} {CLIENTS}: no `Done. ... unique=N` line in its output"))?;
    Ok(BaselineRun {
        mode,
        unique_states,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_done;

    #[test]
    fn the_unique_count_is_read_from_the_last_done_line() {
        let out = "Checking. states=1, unique=1, depth=0\nDone. states=2420477, unique=1194428, depth=28, sec=6\n";
        assert_eq!(parse_done(out), Some(1_194_428));
        assert_eq!(parse_done("Checking. states=1, unique=1, depth=0\n"), None);
        assert_eq!(parse_done("Done. states=2, unique=x, depth=1, sec=0\n"), None);
    }
}
