//! `cassalock report`: regenerate the reports in `reports/`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use cassalock_report::fairness::{assemble, measure, measure_shard, write, FairnessOptions, FairnessShard};
use cassalock_report::matrix::{render_matrix, run_matrix, run_matrix_shard, MatrixOptions, MatrixRun, MatrixShard};
use serde::{Deserialize, Serialize};

use crate::shard::{Shard, ShardOut};
use cassalock_sim::ranges::MsRange;
use clap::{Args, Subcommand};

/// Regenerate a report (deterministic: the same command on the same commit writes the same bytes).
#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Fairness and performance of the old and queue locks (and TryGetLock) over thread counts,
    /// clock skew and the time source, with SVG charts: reports/fairness.md.
    #[command(
        after_help = "Exit status: 0 written; 2 bad options or a write failed. With --shard: 0 once the shard's file is written (the report comes from `cassalock merge`), 2 bad options, 6 the file could not be written."
    )]
    Fairness(FairnessArgs),
    /// Every algorithm against every fault model, judged by the model checker and the
    /// simulator: reports/matrix.md and the traces under reports/matrix/.
    Matrix(MatrixArgs),
    /// Both reports (the fairness options, and the matrix's as --matrix-max-seeds,
    /// --matrix-cell-time-s and --matrix-contract-seeds).
    All(AllArgs),
    /// The reports of a folder as one static site, readable offline: index.html (the answer
    /// table first, each lock's name linking to its cells), a page per lock and one per
    /// Markdown report, charts shown, traces linked. Run after `report all` and the `bench`
    /// reports.
    #[command(
        after_help = "Exit status: 0 written; 2 bad options, a report missing or unreadable, or a page could not be written; 6 standard output could not be written."
    )]
    Html(HtmlArgs),
}

#[derive(Args, Debug)]
struct HtmlArgs {
    /// The folder of reports to read (matrix.md at least) and to write the pages into.
    #[arg(long, default_value = "reports")]
    dir: PathBuf,
}

/// `report html` has no shards.
static NO_SHARD: ShardArgs = ShardArgs {
    shard: None,
    shard_out: None,
};

/// `report html`: the site, from the reports in `--dir`.
fn html(args: &HtmlArgs) -> anyhow::Result<Written> {
    let matrix = args.dir.join("matrix.md");
    if !matrix.is_file() {
        bail!(
            "{} is not there: write the reports first (`cassalock report all --out {}`), or name their folder with --dir",
            matrix.display(),
            args.dir.display()
        );
    }
    let site = cassalock_report::html::write_site(&args.dir).map_err(|error| anyhow::anyhow!("{error}"))?;
    println!(
        "html report: {} ({} pages; open it in a browser, no server needed)",
        args.dir.join("index.html").display(),
        site.pages.len()
    );
    Ok(Written::Deterministic)
}

/// The seed budget of each simulator search in the matrix (seeds 0..N at most).
const MATRIX_MAX_SEEDS: u64 = 200;
/// The wall-time cap of each simulator search in the matrix, seconds.
const MATRIX_CELL_TIME_S: u64 = 600;
/// Seeds of each run behind the matrix's "What the contract checks found".
const MATRIX_CONTRACT_SEEDS: u64 = 100;

/// Exit status when a wall-time cap stopped a search: the report was written, but it depends
/// on the machine's speed.
const STOPPED_BY_TIME: u8 = 3;

/// `--shard K/N --shard-out FILE`: one machine's part of a report (docs/sweeps.md).
#[derive(Args, Debug, Clone, Default)]
struct ShardArgs {
    /// Run only shard K of N of the report's runs (the units i of its fixed plan with
    /// i % N == K-1) and write their results to --shard-out instead of the report;
    /// `cassalock merge --out DIR FILE...` writes the report from every shard's file.
    #[arg(long, value_name = "K/N", requires = "shard_out")]
    shard: Option<Shard>,
    /// With --shard: the result file to write (JSON).
    #[arg(long, value_name = "FILE", requires = "shard")]
    shard_out: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 written; 2 bad options or a write failed; 3 written, but a wall-time cap (--cell-time-s) stopped some search before its seed budget (those cells say \"not a verdict\"), or a model check stopped at its time or memory limit: the report depends on the machine. With --shard: 0 once the shard's file is written (the report and its status come from `cassalock merge`), 2 bad options, 6 the file could not be written."
)]
struct MatrixArgs {
    /// Where to write.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Seed search: each simulator line of a cell runs seeds 0, 1, 2, ... until each of its
    /// claims is violated, or this many seeds.
    #[arg(long, default_value_t = MATRIX_MAX_SEEDS)]
    max_seeds: u64,
    /// Seed search: wall-time cap of each simulator line, seconds. A search it stops says
    /// "stopped by the time limit: not a verdict", and the command exits with status 3.
    #[arg(long, default_value_t = MATRIX_CELL_TIME_S)]
    cell_time_s: u64,
    /// Seeds of each run (scenario x algorithm x thesis listings or library) behind "What the
    /// contract checks found".
    #[arg(long, default_value_t = MATRIX_CONTRACT_SEEDS)]
    contract_seeds: u64,
    /// Parallel runs.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Only the thesis's rows: leaves out the other families' locks (Redis SET NX, Redlock,
    /// Memcached), whose Redlock models take about a minute and a half.
    #[arg(long)]
    thesis_only: bool,
    #[command(flatten)]
    shard: ShardArgs,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 written; 2 bad options or a write failed; 3 written, but a wall-time cap (--matrix-cell-time-s) stopped some matrix search, or a model check stopped at its time or memory limit: the report depends on the machine. With --shard: 0 once the shard's file is written (the reports and their status come from `cassalock merge`), 2 bad options, 6 the file could not be written."
)]
struct AllArgs {
    #[command(flatten)]
    fairness: FairnessArgs,
    /// The matrix's seed budget per simulator search (`report matrix --max-seeds`).
    #[arg(long, default_value_t = MATRIX_MAX_SEEDS)]
    matrix_max_seeds: u64,
    /// The matrix's wall-time cap per simulator search, seconds (`report matrix --cell-time-s`).
    #[arg(long, default_value_t = MATRIX_CELL_TIME_S)]
    matrix_cell_time_s: u64,
    /// Seeds per run of the matrix's contract findings (`report matrix --contract-seeds`).
    #[arg(long, default_value_t = MATRIX_CONTRACT_SEEDS)]
    matrix_contract_seeds: u64,
}

#[derive(Args, Debug)]
struct FairnessArgs {
    /// Where to write.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Seeds per configuration.
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Critical-section length, LO..HI milliseconds.
    #[arg(long, default_value = "5..20", allow_hyphen_values = true)]
    hold_ms: MsRange,
    /// Think time between a release and the next attempt, LO..HI milliseconds.
    #[arg(long, default_value = "0..50", allow_hyphen_values = true)]
    think_ms: MsRange,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 60)]
    duration_s: u64,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = "1,2,4,8,16,32", value_delimiter = ',')]
    threads: Vec<usize>,
    /// Parallel runs.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    #[command(flatten)]
    shard: ShardArgs,
}

/// Progress of one stage of a report. On a terminal, a bar, created only once the first total
/// is known (so it never shows "0/0, eta 0s"); otherwise a line on stderr at each tenth of the
/// work and one when the stage ends, so a run in CI or under `nohup` shows it is alive.
struct Progress {
    stage: &'static str,
    unit: &'static str,
    started: std::time::Instant,
    terminal: bool,
    bar: std::sync::OnceLock<indicatif::ProgressBar>,
    /// The last tenth of the work reported by a line (non-terminal output).
    last_tenth: std::sync::atomic::AtomicUsize,
}

impl Progress {
    fn new(stage: &'static str, unit: &'static str) -> Self {
        Progress {
            stage,
            unit,
            started: std::time::Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            bar: std::sync::OnceLock::new(),
            last_tenth: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn update(&self, what: &str, done: usize, total: usize) {
        let label = if what.is_empty() {
            self.stage.to_owned()
        } else {
            format!("{} {what}", self.stage)
        };
        if self.terminal {
            let bar = self.bar.get_or_init(|| {
                let bar = indicatif::ProgressBar::new(total as u64);
                let template = format!("{{msg}} [{{bar:40}}] {{pos}}/{{len}} {}, eta {{eta}}", self.unit);
                bar.set_style(indicatif::ProgressStyle::with_template(&template).expect("template"));
                bar.set_message(label.clone());
                bar
            });
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(label);
            return;
        }
        let tenth = done.saturating_mul(10) / total.max(1);
        let previous = self.last_tenth.fetch_max(tenth, std::sync::atomic::Ordering::Relaxed);
        if tenth > previous && done < total {
            eprintln!(
                "report: {label}: {done}/{total} {} ({}%), {} elapsed",
                self.unit,
                done * 100 / total.max(1),
                minutes_seconds(self.started.elapsed())
            );
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
        if !self.terminal {
            eprintln!(
                "report: {} done in {}",
                self.stage,
                minutes_seconds(self.started.elapsed())
            );
        }
    }
}

fn minutes_seconds(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    if seconds < 60 {
        format!("{seconds} s")
    } else {
        format!("{} min {} s", seconds / 60, seconds % 60)
    }
}

/// Fail before minutes of simulation, not after, when the output directory cannot be written.
fn ensure_writable(out: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create the output directory {}", out.display()))?;
    let probe = out.join(".cassalock-write-test");
    std::fs::write(&probe, b"").with_context(|| format!("cannot write into {}", out.display()))?;
    std::fs::remove_file(&probe).with_context(|| format!("cannot clean up {}", probe.display()))
}

/// The fairness report's options, or why the flags are refused.
fn fairness_options(args: &FairnessArgs) -> anyhow::Result<FairnessOptions> {
    if args.seeds == 0 || args.seeds > 100 {
        bail!("--seeds must be between 1 and 100");
    }
    if args.duration_s == 0 || args.duration_s > 3600 {
        bail!("--duration-s must be between 1 and 3600");
    }
    if args.threads.is_empty() || args.threads.iter().any(|&t| t == 0 || t > 64) {
        bail!("--threads: give thread counts between 1 and 64");
    }
    if args.jobs == 0 || args.jobs > 64 {
        bail!("--jobs must be between 1 and 64");
    }
    let mut threads = args.threads.clone();
    threads.sort_unstable();
    threads.dedup();
    Ok(FairnessOptions {
        out: args.out.clone(),
        seeds: args.seeds,
        threads,
        hold_ms: args.hold_ms.as_pair(),
        think_ms: args.think_ms.as_pair(),
        duration: Duration::from_secs(args.duration_s),
        jobs: args.jobs,
    })
}

fn fairness(args: &FairnessArgs) -> anyhow::Result<()> {
    let options = fairness_options(args)?;
    ensure_writable(&args.out)?;
    let progress = Progress::new("fairness", "runs");
    let measured = measure(&options, &|done, total| progress.update("", done, total))?;
    progress.finish();
    print_fairness_files(&write(&measured)?, &args.out);
    Ok(())
}

/// The line a fairness report run ends with (a merge of its shards prints the same).
fn print_fairness_files(files: &[String], out: &std::path::Path) {
    println!(
        "fairness report: {}",
        files
            .iter()
            .map(|f| out.join(f).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// What a report run ended with, when it wrote its files.
enum Written {
    /// A function of the commit and the options.
    Deterministic,
    /// Some search was stopped by its wall-time cap.
    StoppedByTime,
}

/// Refuse bad matrix options (before `report all` spends minutes on the fairness grid).
fn check_matrix_args(args: &MatrixArgs) -> anyhow::Result<()> {
    if args.max_seeds == 0 || args.max_seeds > 100_000 {
        bail!("--max-seeds (--matrix-max-seeds) must be between 1 and 100000");
    }
    if args.cell_time_s == 0 || args.cell_time_s > 86_400 {
        bail!("--cell-time-s (--matrix-cell-time-s) must be between 1 and 86400 seconds");
    }
    if args.contract_seeds == 0 || args.contract_seeds > 100_000 {
        bail!("--contract-seeds (--matrix-contract-seeds) must be between 1 and 100000");
    }
    if args.jobs == 0 || args.jobs > 64 {
        bail!("--jobs must be between 1 and 64");
    }
    Ok(())
}

/// The matrix's options, or why the flags are refused.
fn matrix_options(args: &MatrixArgs) -> anyhow::Result<MatrixOptions> {
    check_matrix_args(args)?;
    Ok(MatrixOptions {
        out: args.out.clone(),
        max_seeds: args.max_seeds,
        cell_time: Duration::from_secs(args.cell_time_s),
        contract_seeds: args.contract_seeds,
        jobs: args.jobs,
        thesis_only: args.thesis_only,
    })
}

fn matrix(args: &MatrixArgs) -> anyhow::Result<Written> {
    let options = matrix_options(args)?;
    ensure_writable(&args.out)?;
    let progress = Progress::new("matrix", "runs");
    let written =
        run_matrix(&options, &|unit, done, total| progress.update(unit, done, total)).map_err(anyhow::Error::msg)?;
    progress.finish();
    Ok(matrix_written(&options, &written))
}

/// Print what a matrix run wrote (a merge of its shards prints the same), and warn about the
/// searches its wall-time cap stopped.
fn matrix_written(options: &MatrixOptions, written: &MatrixRun) -> Written {
    println!(
        "matrix report: {} and {} trace files under {}",
        options.out.join("matrix.md").display(),
        written.files.len() - 1,
        options.out.join("matrix").display()
    );
    if written.stopped_by_time.is_empty() {
        return Written::Deterministic;
    }
    eprintln!(
        "warning: {} run(s) were stopped by this machine's limits, and the report depends on its speed: a seed search by the wall-time cap ({} s per search; its cells say \"not a verdict\": raise --cell-time-s / --matrix-cell-time-s, or lower the seeds), a model check by its time or memory limit (its state count and bounded verdicts are where it stopped: run on a less loaded machine):",
        written.stopped_by_time.len(),
        options.cell_time.as_secs()
    );
    for search in &written.stopped_by_time {
        eprintln!("  {search}");
    }
    Written::StoppedByTime
}

/// What a report shard's file says it is, and the version of its layout.
pub const SHARD_FORMAT: &str = "cassalock-report-shard";
pub const SHARD_VERSION: u64 = 1;

/// A report shard's result file (`report ... --shard K/N --shard-out FILE`), read by
/// `cassalock merge`: the command that writes the whole report on one machine, the shard, and
/// the results of its part of each report the command writes.
#[derive(Serialize, Deserialize)]
struct ReportShardFile {
    format: String,
    version: u64,
    command: String,
    k: u64,
    n: u64,
    fairness: Option<FairnessShard>,
    matrix: Option<MatrixShard>,
}

/// `cassalock report all ...` with every option that shapes both reports.
fn all_command_line(fairness: &FairnessOptions, matrix: &MatrixOptions) -> String {
    let fairness_flags = fairness
        .command_line()
        .strip_prefix("cassalock report fairness")
        .expect("the fairness command")
        .to_owned();
    format!(
        "cassalock report all{fairness_flags} --matrix-max-seeds {} --matrix-cell-time-s {} --matrix-contract-seeds {}",
        matrix.max_seeds,
        matrix.cell_time.as_secs(),
        matrix.contract_seeds
    )
}

/// The options of `report all`'s matrix.
fn all_matrix_args(all: &AllArgs) -> MatrixArgs {
    MatrixArgs {
        out: all.fairness.out.clone(),
        max_seeds: all.matrix_max_seeds,
        cell_time_s: all.matrix_cell_time_s,
        contract_seeds: all.matrix_contract_seeds,
        jobs: all.fairness.jobs,
        thesis_only: false,
        shard: ShardArgs::default(),
    }
}

/// The reports a command writes: their options, and the command that writes them all.
struct Planned {
    fairness: Option<FairnessOptions>,
    matrix: Option<MatrixOptions>,
    command: String,
}

fn planned(which: &Which) -> anyhow::Result<Planned> {
    Ok(match which {
        Which::Fairness(args) => {
            let options = fairness_options(args)?;
            Planned {
                command: options.command_line(),
                fairness: Some(options),
                matrix: None,
            }
        }
        Which::Matrix(args) => {
            let options = matrix_options(args)?;
            Planned {
                command: options.command_line(),
                fairness: None,
                matrix: Some(options),
            }
        }
        Which::Html(_) => bail!("`report html` renders reports already written: it has no shards"),
        Which::All(all) => {
            let matrix = matrix_options(&all_matrix_args(all))?;
            let fairness = fairness_options(&all.fairness)?;
            Planned {
                command: all_command_line(&fairness, &matrix),
                fairness: Some(fairness),
                matrix: Some(matrix),
            }
        }
    })
}

/// `report ... --shard K/N --shard-out FILE`: run this shard's part of each report and write
/// its results; 0 once written (the reports come from `cassalock merge`), 2 bad options, 6 the
/// file could not be written after the runs.
fn shard(which: &Which, shard: Shard, path: &std::path::Path) -> ExitCode {
    let planned = match planned(which) {
        Ok(planned) => planned,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    let out = match ShardOut::create(path) {
        Ok(out) => out,
        Err(error) => return crate::usage_error(&format!("{error:#}")),
    };
    let fairness = planned.fairness.as_ref().map(|options| {
        let progress = Progress::new("fairness", "runs");
        let measured = measure_shard(options, shard.k(), shard.n(), &|done, total| {
            progress.update("", done, total)
        });
        progress.finish();
        measured
    });
    let fairness = match fairness.transpose() {
        Ok(fairness) => fairness,
        Err(error) => return crate::usage_error(&error.to_string()),
    };
    let matrix = planned.matrix.as_ref().map(|options| {
        let progress = Progress::new("matrix", "runs");
        let results = run_matrix_shard(options, shard.k(), shard.n(), &|unit, done, total| {
            progress.update(unit, done, total)
        });
        progress.finish();
        results
    });
    let matrix = match matrix.transpose() {
        Ok(matrix) => matrix,
        Err(error) => return crate::usage_error(&error.to_string()),
    };
    let runs = fairness.as_ref().map_or(0, |f| f.results.len()) + matrix.as_ref().map_or(0, |m| m.results.len());
    let file = ReportShardFile {
        format: SHARD_FORMAT.to_owned(),
        version: SHARD_VERSION,
        command: planned.command.clone(),
        k: shard.k(),
        n: shard.n(),
        fairness,
        matrix,
    };
    let shown = out.path().display().to_string();
    if let Err(code) = out.write(&file) {
        return code;
    }
    println!(
        "shard {shard} of `{}`: {runs} runs, results written to {shown}; write the report from every shard's file with `cassalock merge --out DIR FILE...`",
        planned.command
    );
    ExitCode::SUCCESS
}

/// `cassalock merge --out DIR` of report shards: write into DIR exactly the files the
/// command writes on one machine, print what it prints, and exit as it would (0, 3; 2 for bad
/// files or options).
pub fn merge(paths: &[PathBuf], out: &std::path::Path) -> ExitCode {
    match merge_files(paths, out) {
        Ok(Written::Deterministic) => ExitCode::SUCCESS,
        Ok(Written::StoppedByTime) => ExitCode::from(STOPPED_BY_TIME),
        Err(error) => crate::usage_error(&format!("{error:#}")),
    }
}

fn merge_files(paths: &[PathBuf], out: &std::path::Path) -> anyhow::Result<Written> {
    #[derive(clap::Parser)]
    struct ReportCommand {
        #[command(flatten)]
        report: ReportArgs,
    }
    use clap::Parser;
    let mut files = Vec::new();
    for path in paths {
        let value = crate::shard::read_json(path, SHARD_FORMAT, SHARD_VERSION)?;
        let damaged = |why: String| anyhow::anyhow!("{}: a damaged shard file: {why}", path.display());
        let file: ReportShardFile = serde_json::from_value(value).map_err(|error| damaged(error.to_string()))?;
        let shard = Shard::new(file.k, file.n).ok_or_else(|| damaged(format!("shard {}/{}", file.k, file.n)))?;
        files.push((path, file, shard));
    }
    let cover: Vec<(&PathBuf, String, Shard)> = files
        .iter()
        .map(|(path, file, shard)| (*path, format!("`{}` in {} shards", file.command, shard.n()), *shard))
        .collect();
    crate::shard::check_cover(&cover, &files[0].1.command)?;
    let command = files[0].1.command.clone();
    let words = shlex::split(&command).unwrap_or_default();
    let mut which = ReportCommand::try_parse_from(words.iter().skip(1))
        .map_err(|error| {
            anyhow::anyhow!(
                "{}: the command {command:?} does not parse: {error}",
                paths[0].display()
            )
        })?
        .report
        .which;
    match &mut which {
        Which::Fairness(args) => args.out = out.to_owned(),
        Which::Matrix(args) => args.out = out.to_owned(),
        Which::All(all) => all.fairness.out = out.to_owned(),
        Which::Html(args) => args.dir = out.to_owned(),
    }
    let planned = planned(&which)?;
    // Every part of every file is taken (not copied) and checked present before anything is
    // written: a damaged file leaves DIR as it was.
    let require = |what: &str, has: fn(&ReportShardFile) -> bool| -> anyhow::Result<()> {
        match files.iter().find(|(_, file, _)| !has(file)) {
            Some((path, _, _)) => Err(anyhow::anyhow!(
                "{}: a damaged shard file: no {what} results",
                path.display()
            )),
            None => Ok(()),
        }
    };
    if planned.fairness.is_some() {
        require("fairness", |file| file.fairness.is_some())?;
    }
    if planned.matrix.is_some() {
        require("matrix", |file| file.matrix.is_some())?;
    }
    let mut fairness_shards: Vec<FairnessShard> = Vec::new();
    let mut matrix_shards: Vec<MatrixShard> = Vec::new();
    for (_, file, _) in &mut files {
        fairness_shards.extend(file.fairness.take());
        matrix_shards.extend(file.matrix.take());
    }
    ensure_writable(out)?;
    let mut written = Written::Deterministic;
    if let Some(options) = &planned.fairness {
        let measured = assemble(options, &fairness_shards).map_err(anyhow::Error::msg)?;
        print_fairness_files(&write(&measured)?, out);
    }
    if let Some(options) = &planned.matrix {
        let run = render_matrix(options, &matrix_shards).map_err(anyhow::Error::msg)?;
        written = matrix_written(options, &run);
    }
    Ok(written)
}

pub fn run(args: ReportArgs) -> ExitCode {
    let shard_args = match &args.which {
        Which::Fairness(fairness_args) => &fairness_args.shard,
        Which::Matrix(matrix_args) => &matrix_args.shard,
        Which::All(all) => &all.fairness.shard,
        Which::Html(_) => &NO_SHARD,
    };
    if let (Some(which_shard), Some(path)) = (shard_args.shard, &shard_args.shard_out) {
        return shard(&args.which, which_shard, path);
    }
    let result = match &args.which {
        Which::Fairness(fairness_args) => fairness(fairness_args).map(|()| Written::Deterministic),
        Which::Matrix(matrix_args) => matrix(matrix_args),
        Which::Html(html_args) => html(html_args),
        Which::All(all) => {
            let matrix_args = all_matrix_args(all);
            check_matrix_args(&matrix_args)
                .and_then(|()| fairness(&all.fairness))
                .and_then(|()| matrix(&matrix_args))
        }
    };
    match result {
        Ok(Written::Deterministic) => ExitCode::SUCCESS,
        Ok(Written::StoppedByTime) => ExitCode::from(STOPPED_BY_TIME),
        Err(error) => crate::usage_error(&format!("{error:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Report {
        #[command(flatten)]
        report: ReportArgs,
    }

    /// Parse a report's "Generated by" command as the shell would hand it to `cassalock`.
    fn parse(command: &str) -> Which {
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[..2], ["cassalock", "report"], "{command}");
        Report::try_parse_from(&words[1..])
            .unwrap_or_else(|e| panic!("`{command}` does not parse: {e}"))
            .report
            .which
    }

    /// The fields that shape the report (not `out`, not `jobs`), as text.
    fn fairness_shape(o: &FairnessOptions) -> String {
        format!(
            "{} {:?} {:?} {:?} {:?}",
            o.seeds, o.threads, o.hold_ms, o.think_ms, o.duration
        )
    }

    /// A `report all` shard's file names the command that writes both reports; a merge parses
    /// it back, so it must give the same options, the matrix's included.
    #[test]
    fn the_command_a_report_all_shard_records_parses_back_into_its_options() {
        let Which::All(all) = parse(
            "cassalock report all --seeds 2 --hold-ms 1..9 --think-ms 3..3 --duration-s 7 --threads 1,4 --matrix-max-seeds 9 --matrix-cell-time-s 41 --matrix-contract-seeds 5 --jobs 1",
        ) else {
            panic!("not report all")
        };
        let first = planned(&Which::All(all)).expect("valid");
        let Which::All(again) = parse(&first.command) else {
            panic!("`{}` is not report all", first.command)
        };
        let replanned = planned(&Which::All(again)).expect("valid");
        assert_eq!(replanned.command, first.command);
        let (fairness, matrix) = (first.fairness.unwrap(), first.matrix.unwrap());
        let (fairness_again, matrix_again) = (replanned.fairness.unwrap(), replanned.matrix.unwrap());
        assert_eq!(fairness_shape(&fairness_again), fairness_shape(&fairness));
        assert_eq!(fairness.threads, vec![1, 4]);
        assert_eq!(
            (
                matrix_again.max_seeds,
                matrix_again.cell_time,
                matrix_again.contract_seeds,
                matrix_again.thesis_only
            ),
            (9, Duration::from_secs(41), 5, false)
        );
        assert_eq!(
            (matrix.max_seeds, matrix.cell_time, matrix.contract_seeds),
            (
                matrix_again.max_seeds,
                matrix_again.cell_time,
                matrix_again.contract_seeds
            )
        );
    }

    #[test]
    fn each_generated_by_line_parses_back_into_the_options_that_wrote_the_report() {
        let non_default = FairnessOptions {
            seeds: 7,
            threads: vec![2, 3, 64],
            hold_ms: (1, 9),
            think_ms: (4, 4),
            duration: Duration::from_secs(11),
            ..FairnessOptions::default()
        };
        for options in [FairnessOptions::default(), non_default] {
            let Which::Fairness(args) = parse(&options.command_line()) else {
                panic!("not the fairness report")
            };
            let parsed = fairness_options(&args).expect("valid");
            assert_eq!(fairness_shape(&parsed), fairness_shape(&options));
        }
        let matrix = MatrixOptions {
            out: "reports".into(),
            max_seeds: 17,
            cell_time: Duration::from_secs(33),
            contract_seeds: 5,
            jobs: 2,
            thesis_only: true,
        };
        let Which::Matrix(args) = parse(&matrix.command_line()) else {
            panic!("not the matrix report")
        };
        let parsed = matrix_options(&args).expect("valid");
        assert_eq!(
            (
                parsed.max_seeds,
                parsed.cell_time,
                parsed.contract_seeds,
                parsed.thesis_only
            ),
            (
                matrix.max_seeds,
                matrix.cell_time,
                matrix.contract_seeds,
                matrix.thesis_only
            )
        );
    }
}
