//! `--shard K/N`: one machine's part of a sweep too large for one machine (docs/sweeps.md).
//! Shard K of N runs the seeds `s` of the range with `s % N == K - 1`: a
//! split fixed by the seeds alone (not by `--jobs`, the machine or the order shards run in),
//! balanced to within one seed, and with every seed in exactly one shard.

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{anyhow, bail, Context};
use cassalock_sim::ranges::SeedRange;

/// The most shards a sweep is split into.
pub const MAX_SHARDS: u64 = 10_000;

/// Shard `k` of `n` (1-based: `1 <= k <= n <= MAX_SHARDS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shard {
    k: u64,
    n: u64,
}

impl Shard {
    /// The whole range: shard 1 of 1.
    pub const WHOLE: Shard = Shard { k: 1, n: 1 };

    /// `None` unless `1 <= k <= n <= MAX_SHARDS`.
    pub fn new(k: u64, n: u64) -> Option<Shard> {
        (1 <= k && k <= n && n <= MAX_SHARDS).then_some(Shard { k, n })
    }

    pub fn k(self) -> u64 {
        self.k
    }

    pub fn n(self) -> u64 {
        self.n
    }

    /// This shard's first seed in `range`, if it has one.
    fn first_seed(self, range: &SeedRange) -> Option<u64> {
        let offset = (self.k - 1 + self.n - range.first() % self.n) % self.n;
        range.first().checked_add(offset).filter(|&seed| seed <= range.last())
    }

    /// The seeds of `range` this shard runs (`seed % N == K - 1`), in increasing order.
    pub fn seeds(self, range: &SeedRange) -> impl Iterator<Item = u64> {
        let (last, step) = (range.last(), self.n);
        let mut next = self.first_seed(range);
        std::iter::from_fn(move || {
            let seed = next?;
            next = seed.checked_add(step).filter(|&following| following <= last);
            Some(seed)
        })
    }

    /// How many seeds of `range` this shard runs.
    pub fn count(self, range: &SeedRange) -> u128 {
        self.first_seed(range)
            .map_or(0, |first| u128::from((range.last() - first) / self.n) + 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// A `--shard` that is not K/N with `1 <= K <= N <= MAX_SHARDS`; says how to write one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotAShard;

impl fmt::Display for NotAShard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "write K/N with 1 <= K <= N <= {MAX_SHARDS}, e.g. 2/8 (shard 2 of 8)")
    }
}

impl std::error::Error for NotAShard {}

impl FromStr for Shard {
    type Err = NotAShard;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((k, n)) = text.trim().split_once('/') else {
            return Err(NotAShard);
        };
        let (Ok(k), Ok(n)) = (k.trim().parse::<u64>(), n.trim().parse::<u64>()) else {
            return Err(NotAShard);
        };
        Shard::new(k, n).ok_or(NotAShard)
    }
}

/// A shard's result file (`--shard-out FILE`), created before the shard runs so that a bad path
/// costs nothing.
pub struct ShardOut {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl ShardOut {
    /// Create `path`; the error (printed with `{:#}`) is the message for a usage error (exit 2).
    pub fn create(path: &Path) -> anyhow::Result<ShardOut> {
        let file = File::create(path).with_context(|| format!("--shard-out {}: cannot write it", path.display()))?;
        Ok(ShardOut {
            path: path.to_owned(),
            writer: BufWriter::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `result` as one line of JSON. A write that fails part-way leaves a file that is
    /// not JSON (merge refuses it) and says so: exit 6, an output not written.
    pub fn write<T: serde::Serialize>(mut self, result: &T) -> Result<(), ExitCode> {
        let written = serde_json::to_writer(&mut self.writer, result)
            .map_err(std::io::Error::from)
            .and_then(|()| self.writer.write_all(b"\n"))
            .and_then(|()| self.writer.flush());
        written.map_err(|error| {
            eprintln!("error: --shard-out {}: writing failed: {error}", self.path.display());
            ExitCode::from(crate::output::OUTPUT_FAILED)
        })
    }
}

/// Read a result file as JSON and check it says `format` and `version`; errors name the file
/// (print them with `{:#}`).
pub fn read_json(path: &Path, format: &str, version: u64) -> anyhow::Result<serde_json::Value> {
    let value = read_any(path)?;
    let found = value.get("version").and_then(serde_json::Value::as_u64);
    if value.get("format").and_then(serde_json::Value::as_str) != Some(format) {
        bail!(
            "{}: not a {format:?} file: merge the shards of one command",
            path.display()
        );
    }
    if found != Some(version) {
        bail!(
            "{}: shard file version {}; this cassalock reads version {version}: rerun the shards with this cassalock",
            path.display(),
            found.map_or_else(|| "missing".to_owned(), |found| found.to_string())
        );
    }
    Ok(value)
}

/// Read a file as JSON, whatever it holds; errors name the file (print them with `{:#}`).
pub fn read_any(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read it", path.display()))?;
    serde_json::from_str(&text).map_err(|error| {
        anyhow!(
            "{}: not a shard result file (not JSON: {error}); write one with --shard K/N --shard-out FILE",
            path.display()
        )
    })
}

/// Check that `files` (path, the sweep it belongs to, its shard) are every shard of one sweep,
/// each once; `rerun` is the command that runs the sweep, for the message on a missing shard.
pub fn check_cover(files: &[(&PathBuf, String, Shard)], rerun: &str) -> anyhow::Result<()> {
    let Some((first_path, sweep, first)) = files.first() else {
        bail!("give the shard files: cassalock merge FILE...");
    };
    let n = first.n;
    for (path, other, _) in &files[1..] {
        if other != sweep {
            bail!(
                "{}: a shard of another sweep ({other}) than {} ({sweep}); merge the shards of one sweep",
                path.display(),
                first_path.display()
            );
        }
    }
    let mut by_k: Vec<Option<&PathBuf>> = vec![None; usize::try_from(n).expect("at most 10000")];
    for (path, _, shard) in files {
        let slot = &mut by_k[usize::try_from(shard.k - 1).expect("at most 10000")];
        if let Some(other) = slot {
            bail!(
                "{} and {} are both shard {shard}: give each shard once",
                other.display(),
                path.display()
            );
        }
        *slot = Some(path);
    }
    let missing: Vec<String> = by_k
        .iter()
        .enumerate()
        .filter(|(_, path)| path.is_none())
        .map(|(index, _)| format!("{}/{n}", index + 1))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = missing.iter().take(10).map(String::as_str).collect();
    Err(anyhow!(
        "{} of {n} shards missing ({}{}): run `{rerun} --shard K/{n} --shard-out FILE` for each and merge every file",
        missing.len(),
        shown.join(", "),
        if missing.len() > shown.len() { ", ..." } else { "" },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_is_not_k_of_n() {
        assert_eq!("2/8".parse(), Ok(Shard { k: 2, n: 8 }));
        assert_eq!(" 1 / 1 ".parse(), Ok(Shard { k: 1, n: 1 }));
        assert_eq!("10000/10000".parse::<Shard>().unwrap().to_string(), "10000/10000");
        for bad in ["", "3", "0/3", "4/3", "1/0", "1/10001", "-1/3", "a/3", "1/3/4", "1.5/3"] {
            let error = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(error.contains("K/N"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn the_shards_of_a_range_hold_every_seed_once_and_differ_in_size_by_at_most_one() {
        for (range, n) in [("0..12", 3), ("5..=17", 4), ("7..8", 5), ("0..1000", 7), ("3..10", 1)] {
            let range: SeedRange = range.parse().unwrap();
            let mut all: Vec<u64> = Vec::new();
            let mut sizes = Vec::new();
            for k in 1..=n {
                let shard = Shard::new(k, n).unwrap();
                let seeds: Vec<u64> = shard.seeds(&range).collect();
                assert!(seeds.iter().all(|seed| seed % n == k - 1));
                assert!(seeds.windows(2).all(|pair| pair[0] < pair[1]));
                assert_eq!(shard.count(&range), seeds.len() as u128);
                sizes.push(seeds.len());
                all.extend(seeds);
            }
            all.sort_unstable();
            assert_eq!(all, range.seeds().collect::<Vec<_>>());
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
        // The top of the seed space does not wrap.
        let top: SeedRange = "18446744073709551610..=18446744073709551615".parse().unwrap();
        let seeds: Vec<u64> = Shard::new(2, 4).unwrap().seeds(&top).collect();
        assert_eq!(seeds, vec![18446744073709551613]);
    }
}
