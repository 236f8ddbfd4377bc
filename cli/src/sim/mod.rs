//! `cassalock sim` and `cassalock replay`: run the simulation over seeds, or one seed in full.
//! This file only names the parts, one concept each, and what the rest of the CLI uses of them.
//!
//! Each part uses only parts listed above it (no cycle):
//! - `command_line`: the printed commands (a shell word, a seed's `replay` command);
//! - `row_file`: a row lock's scenario file (`lock = "queue"`, `[[scenario]]` tables);
//! - `scenario_args`: the scenario and its knobs, from the flags, `--set` and `--scenario-file`;
//! - `args`: the command lines of `sim` and `replay` (`--algorithm`, `--seeds`, `--shard`, ...);
//! - `tally`: a run's summary and one algorithm's tally of them (merged across shards too);
//! - `seeds`: running a sweep's seeds in batches, and `--per-seed-out`'s lines;
//! - `print`: printing a tally (replay and record lines), and how a sweep ended;
//! - `offsets`: `--sweep-offsets`, the skew scenario's smallest offset that breaks T1;
//! - `shard_file`: a shard's result file and `cassalock merge` of such files;
//! - `sweep`: the `sim` command itself;
//! - `replay`: the `replay` command.

mod args;
mod command_line;
mod offsets;
mod print;
mod replay;
mod row_file;
mod scenario_args;
mod seeds;
mod shard_file;
mod sweep;
mod tally;

pub use args::{ReplayArgs, SimArgs};
pub use command_line::{replay_command, shell_word};
pub use replay::replay;
pub(crate) use seeds::{run_seeds, MAX_SEEDS};
pub use shard_file::{merge, SHARD_FORMAT};
pub use sweep::sim;
