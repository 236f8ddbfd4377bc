//! The shipped libraries' lines of the matrix: the runs `cassalock bench clients` recorded
//! (`reports/real-clients/*.jsonl`, one file per program and fault), judged again here by the
//! one judge that judged them when they ran, one line per library, with our model's line of
//! the same lock named beside it. The lines are read off the records, never typed: a record
//! that changes changes its line, and `.ci/check-reports` sees it.
//!
//! A run is one schedule, not a search: a kept claim here says that one run kept it, and a
//! fault no run had is said as not run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufReader;
use std::path::Path;

use cassalock_judge::event::{self, Rules};
use cassalock_judge::{judge, ClaimId, ClaimVerdict, Judgement};

use crate::real_clients::{ours, record_name, ClientFault, LIBRARIES};
use crate::ReportError;

/// Where `bench clients` writes its records, from the repository's root (where every command
/// of the docs runs).
pub const CLIENT_RECORDS: &str = "reports/real-clients";
/// Most record files read (the plan has 22).
const MOST_RECORDS: usize = 1_000;

/// One library's runs: per fault, the claims it broke; and whether its resource was fenced.
#[derive(Debug, Default)]
struct Library {
    title: String,
    /// The first program of the library in [`LIBRARIES`]' order, and its place there.
    slug: String,
    order: usize,
    /// Per fault run (an index of [`ClientFault::ALL`]): (T1-belief broken, T1-resource broken,
    /// an overtaken holder never told, a run left one of the three undecided), in any of its
    /// runs under that fault.
    runs: BTreeMap<usize, (bool, bool, bool, bool)>,
    fenced: bool,
}

/// The section, from the records under `records`; a line saying so when there are none.
pub(super) fn libraries_section(md: &mut String, records: &Path) -> Result<(), ReportError> {
    let _ = writeln!(md, "## The shipped libraries, as run\n");
    let libraries = read_libraries(records)?;
    if libraries.is_empty() {
        let _ = writeln!(
            md,
            "No run of a shipped library is recorded here ({} has no record): `cassalock bench clients` \
             writes them.\n",
            records.display()
        );
        return Ok(());
    }
    let _ = writeln!(
        md,
        "Each library's own jar, module or package, driven as a black box by its client program \
         (`cassalock bench clients`, [real-clients.md](real-clients.md)), one run per fault, \
         on this machine's loopback. Read off the runs' records ({}), judged again by the judge \
         that judged them when they ran. One run is one schedule, not a search: a fault a line \
         does not name was either not run or kept in its one run. \"ours\" is our model's line \
         of the same lock in the table above.\n",
        CLIENT_RECORDS
    );
    let _ = writeln!(
        md,
        "| library | ours | faults run | two holders under | stale write reaches the resource under | overtaken holder never told under | fenced resource |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for library in libraries {
        let named = |pick: fn(&(bool, bool, bool, bool)) -> bool| -> String {
            let names: Vec<&str> = library
                .runs
                .iter()
                .filter(|(_, broken)| pick(broken))
                .map(|(&fault, _)| ClientFault::ALL[fault].label())
                .collect();
            if names.is_empty() {
                "none in its runs".to_owned()
            } else {
                names.join("; ")
            }
        };
        // A run that left a claim undecided says so: its fault is not a pass.
        let run: Vec<String> = library
            .runs
            .iter()
            .map(|(&fault, seen)| {
                let label = ClientFault::ALL[fault].label();
                if seen.3 {
                    format!("{label} (a claim undecided)")
                } else {
                    label.to_owned()
                }
            })
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            library.title,
            ours(&library.slug).map_or_else(|| "not modelled".to_owned(), |name| format!("`{name}`")),
            run.join("; "),
            named(|broken| broken.0),
            named(|broken| broken.1),
            named(|broken| broken.2),
            if library.fenced {
                "yes: its token grows, the resource refuses a lower one"
            } else {
                "no"
            },
        );
    }
    md.push('\n');
    Ok(())
}

/// Every record under `records`, judged, grouped by library (its title as its hello said: two
/// programs of one library, say its lock and its try_lock, make one line) in the order of
/// [`LIBRARIES`]; none when the folder is not there.
fn read_libraries(records: &Path) -> Result<Vec<Library>, ReportError> {
    let entries = match std::fs::read_dir(records) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ReportError::Read {
                path: records.to_path_buf(),
                source,
            })
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ReportError::Read {
            path: records.to_path_buf(),
            source,
        })?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    names.sort();
    if names.len() > MOST_RECORDS {
        return Err(ReportError::TooManyRecords {
            path: records.to_path_buf(),
            found: names.len(),
            most: MOST_RECORDS,
        });
    }
    let mut by_title: BTreeMap<String, Library> = BTreeMap::new();
    for name in &names {
        let Some((slug, fault)) = record_name(name) else {
            continue;
        };
        let path = records.join(name);
        let file = std::fs::File::open(&path).map_err(|source| ReportError::Read {
            path: path.clone(),
            source,
        })?;
        let record = event::read(BufReader::new(file)).map_err(|source| ReportError::Record {
            path: path.clone(),
            source,
        })?;
        let Judgement::Observed(verdicts) = judge(&record) else {
            return Err(ReportError::NotAClientRun { path });
        };
        let broken = |claim: ClaimId| {
            verdicts
                .checks
                .iter()
                .any(|(id, verdict, _)| *id == claim && *verdict == ClaimVerdict::Violated)
        };
        let order = LIBRARIES
            .iter()
            .position(|(listed, _)| *listed == slug)
            .unwrap_or(LIBRARIES.len());
        let title = record.header.lock.clone();
        let library = by_title.entry(title.clone()).or_insert_with(|| Library {
            title,
            slug: slug.to_owned(),
            order,
            ..Library::default()
        });
        if order < library.order {
            library.slug = slug.to_owned();
            library.order = order;
        }
        let fault_index = ClientFault::ALL
            .iter()
            .position(|&listed| listed == fault)
            .unwrap_or_default();
        let seen = library.runs.entry(fault_index).or_default();
        seen.0 |= broken(ClaimId::T1Belief);
        seen.1 |= broken(ClaimId::T1Resource);
        seen.2 |= broken(ClaimId::CLost);
        seen.3 |= [ClaimId::T1Belief, ClaimId::T1Resource, ClaimId::CLost]
            .iter()
            .any(|&claim| {
                verdicts
                    .checks
                    .iter()
                    .any(|(id, verdict, _)| *id == claim && *verdict == ClaimVerdict::Bounded)
            });
        library.fenced |= matches!(&record.header.run.rules, Rules::Observed(rules) if rules.fencing);
    }
    let mut libraries: Vec<Library> = by_title.into_values().collect();
    libraries.sort_by(|a, b| (a.order, &a.title).cmp(&(b.order, &b.title)));
    Ok(libraries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed_records() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(CLIENT_RECORDS)
    }

    #[test]
    fn a_record_name_gives_its_program_and_fault() {
        assert_eq!(
            record_name("redisson-fair-paused-holder.jsonl"),
            Some(("redisson-fair", ClientFault::PausedHolder))
        );
        assert_eq!(
            record_name("etcd34-waiter-paused-waiter.jsonl"),
            Some(("etcd34-waiter", ClientFault::PausedWaiter))
        );
        assert_eq!(
            record_name("curator-cut-off-holder.jsonl"),
            Some(("curator", ClientFault::CutOffHolder))
        );
        assert_eq!(record_name("none.jsonl"), None);
        assert_eq!(record_name("redis-py-none.txt"), None);
        assert_eq!(record_name("redis-py-sideways.jsonl"), None);
    }

    /// The committed runs, read and judged again: one line per library, the two programs of
    /// one library on one line, each fault's broken claims where the runs broke them.
    #[test]
    fn the_committed_client_runs_make_one_line_per_library() {
        let mut md = String::new();
        libraries_section(&mut md, &committed_records()).expect("the committed records read");
        let lines: Vec<&str> = md
            .lines()
            .filter(|line| line.starts_with("| ") && !line.starts_with("| library"))
            .collect();
        let redis_py = lines
            .iter()
            .find(|line| line.starts_with("| redis-py "))
            .unwrap_or_else(|| panic!("no redis-py line in:\n{md}"));
        assert!(
            redis_py.contains(
                "| `redis-set-nx` | none; holder paused past its lease; server restarted without persistence while held; holder cut off from its servers past its lease; failover to a replica that lagged while held | holder paused past its lease; server restarted without persistence while held; holder cut off from its servers past its lease |"
            ),
            "{redis_py}"
        );
        let fenced: Vec<&&str> = lines.iter().filter(|line| line.contains("RFencedLock")).collect();
        assert_eq!(fenced.len(), 1, "{md}");
        assert!(fenced[0].contains("| yes: its token grows"), "{}", fenced[0]);
        // Redisson's watchdog locks give two holders across the failover to a lagging replica.
        let rlock = lines
            .iter()
            .find(|line| line.starts_with("| Redisson 4.3.1 RLock "))
            .unwrap_or_else(|| panic!("no RLock line in:\n{md}"));
        assert!(
            rlock.contains("| holder paused past its lease; holder cut off from its servers past its lease; failover to a replica that lagged while held |"),
            "{rlock}"
        );
        let mut titles: Vec<&str> = lines
            .iter()
            .map(|line| line.split(" | ").next().unwrap_or(""))
            .collect();
        let all = titles.len();
        titles.dedup();
        assert_eq!(titles.len(), all, "a library on two lines:\n{md}");
        assert!(
            !md.contains("undecided"),
            "every committed run has every verdict:\n{md}"
        );
    }

    #[test]
    fn without_records_the_section_says_so() {
        let mut md = String::new();
        libraries_section(&mut md, Path::new("/nonexistent/records")).expect("no folder is no error");
        assert!(md.contains("No run of a shipped library is recorded here"), "{md}");
    }
}
