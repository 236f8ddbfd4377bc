//! `cassalock report`: regenerate the reports in `reports/`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use cassalock_report::fairness::{measure, write, FairnessOptions};
use cassalock_report::matrix::{run_matrix, MatrixOptions};
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
    Fairness(FairnessArgs),
    /// Every algorithm against every fault model, judged by the model checker and the
    /// simulator: reports/matrix.md and the traces under reports/matrix/.
    Matrix(MatrixArgs),
    /// Both reports (the fairness options; the matrix uses --matrix-seeds).
    All(AllArgs),
}

#[derive(Args, Debug)]
struct MatrixArgs {
    /// Where to write.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Simulation seeds per cell.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Parallel runs.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
}

#[derive(Args, Debug)]
struct AllArgs {
    #[command(flatten)]
    fairness: FairnessArgs,
    /// Simulation seeds per matrix cell.
    #[arg(long, default_value_t = 20)]
    matrix_seeds: u64,
}

#[derive(Args, Debug)]
struct FairnessArgs {
    /// Where to write.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Seeds per configuration.
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Critical-section length, A-B milliseconds.
    #[arg(long, default_value = "5-20", allow_hyphen_values = true)]
    hold_ms: MsRange,
    /// Think time between a release and the next attempt, A-B milliseconds.
    #[arg(long, default_value = "0-50", allow_hyphen_values = true)]
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
}

fn progress_bar(label: &str) -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, eta {eta}").expect("template"),
        );
        bar.set_message(label.to_owned());
        bar
    })
}

/// Fail before minutes of simulation, not after, when the output directory cannot be written.
fn ensure_writable(out: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create the output directory {}", out.display()))?;
    let probe = out.join(".cassalock-write-test");
    std::fs::write(&probe, b"").with_context(|| format!("cannot write into {}", out.display()))?;
    std::fs::remove_file(&probe).with_context(|| format!("cannot clean up {}", probe.display()))
}

fn fairness(args: &FairnessArgs) -> anyhow::Result<()> {
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
    ensure_writable(&args.out)?;
    let mut threads = args.threads.clone();
    threads.sort_unstable();
    threads.dedup();
    let options = FairnessOptions {
        out: args.out.clone(),
        seeds: args.seeds,
        threads,
        hold_ms: args.hold_ms.as_pair(),
        think_ms: args.think_ms.as_pair(),
        duration: Duration::from_secs(args.duration_s),
        jobs: args.jobs,
    };
    let bar = progress_bar("fairness");
    let measured = measure(&options, &|done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let files = write(&measured)?;
    println!(
        "fairness report: {}",
        files
            .iter()
            .map(|f| args.out.join(f).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn matrix(args: &MatrixArgs) -> anyhow::Result<()> {
    if args.seeds == 0 || args.seeds > 1000 {
        bail!("--seeds must be between 1 and 1000");
    }
    if args.jobs == 0 || args.jobs > 64 {
        bail!("--jobs must be between 1 and 64");
    }
    ensure_writable(&args.out)?;
    let options = MatrixOptions {
        out: args.out.clone(),
        seeds: args.seeds,
        jobs: args.jobs,
    };
    let bar = progress_bar("matrix");
    let files = run_matrix(&options, &|cell, done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(format!("matrix {cell}"));
        }
    })
    .map_err(anyhow::Error::msg)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    println!(
        "matrix report: {} and {} trace files under {}",
        args.out.join("matrix.md").display(),
        files.len() - 1,
        args.out.join("matrix").display()
    );
    Ok(())
}

pub fn run(args: ReportArgs) -> ExitCode {
    let result = match &args.which {
        Which::Fairness(fairness_args) => fairness(fairness_args),
        Which::Matrix(matrix_args) => matrix(matrix_args),
        Which::All(all) => fairness(&all.fairness).and_then(|()| {
            matrix(&MatrixArgs {
                out: all.fairness.out.clone(),
                seeds: all.matrix_seeds,
                jobs: all.fairness.jobs,
            })
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => crate::usage_error(&format!("{error:#}")),
    }
}
