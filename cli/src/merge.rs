//! `cassalock merge FILE...`: the result files of a sharded sweep, whichever command wrote
//! them (`report`, `sim`, `bench sim`, or a family sweep), merged into what one run over the
//! whole range prints or writes. The first file's `format` says which command's they are.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::usage_error;

/// `cassalock merge FILE...`: the shards' result files in any order.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The result files of every shard (1/N to N/N) of one sweep, each once.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Report shards (`report ... --shard K/N --shard-out FILE`): the directory the report's
    /// files are written to [default: reports]. `sim` and `bench sim` merges
    /// only print.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Read the first file's format and merge with the command that wrote it.
pub fn merge(args: MergeArgs) -> ExitCode {
    // The first file says which command's shards these are.
    let format = match crate::shard::read_any(&args.files[0]) {
        Ok(value) => value
            .get("format")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    if format.as_deref() == Some(crate::report::SHARD_FORMAT) {
        let out = args.out.unwrap_or_else(|| PathBuf::from("reports"));
        return crate::report::merge(&args.files, &out);
    }
    if let Some(out) = &args.out {
        return usage_error(&format!(
            "--out {}: only report shards write files; a sim merge prints its summary",
            out.display()
        ));
    }
    if format.as_deref() == Some(crate::sim::SHARD_FORMAT) {
        return crate::sim::merge(&args.files);
    }
    if format.as_deref() == Some(crate::bench_sim::SHARD_FORMAT) {
        return crate::bench_sim::merge(&args.files);
    }
    crate::family_sim::merge(&args.files)
}
