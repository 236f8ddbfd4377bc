//! The README's answer table ("which lock, under which faults") is a shortened copy of the one
//! `cassalock report matrix` writes at the top of `reports/matrix.md`. This keeps the copy true:
//! the same locks in the same order, the same faults under "two holders", "stale write" and
//! "holder the server no longer names", and
//! the same answer (yes or no, and the faults named) for the fencing token. When the matrix is
//! regenerated and a verdict moves, this fails with the lock and the cell to update.

use std::path::Path;

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The rows of the first table whose header starts with `| lock | no fault |`, as cells.
fn answer_rows(text: &str, file: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with("| lock | no fault |"));
    assert!(
        lines.next().is_some(),
        "{file} has no answer table (a header `| lock | no fault | ...`)"
    );
    lines
        .skip(1) // the |---| line
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// A lock's cell as the README shows it: its link text, or the cell itself.
fn lock_name(cell: &str) -> &str {
    cell.strip_prefix('[')
        .and_then(|rest| rest.split_once("](").map(|(name, _)| name))
        .unwrap_or(cell)
}

/// The faults a fencing cell names after "under", and whether it starts yes or no.
fn fencing(cell: &str) -> (bool, Vec<String>) {
    let yes = cell.starts_with("yes");
    assert!(
        yes || cell.starts_with("no"),
        "a fencing cell starts with yes or no: {cell:?}"
    );
    let faults = cell
        .split_once(" under")
        .map(|(_, faults)| {
            faults
                .trim_start_matches(':')
                .split(',')
                .map(|fault| fault.trim().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (yes, faults)
}

#[test]
fn the_readme_answer_table_says_what_the_matrix_says() {
    let readme = answer_rows(&read("README.md"), "README.md");
    let matrix = answer_rows(&read("reports/matrix.md"), "reports/matrix.md");
    assert_eq!(
        readme.len(),
        matrix.len(),
        "README.md's answer table has {} locks, reports/matrix.md's {}",
        readme.len(),
        matrix.len()
    );
    for (ours, theirs) in readme.iter().zip(&matrix) {
        assert_eq!(ours.len(), 6, "a README row of 6 cells: {ours:?}");
        assert_eq!(theirs.len(), 6, "a matrix row of 6 cells: {theirs:?}");
        let name = lock_name(&ours[0]);
        // The README may drop the matrix's "(redis-set-nx)" suffix: its name starts the same.
        assert!(
            theirs[0].starts_with(name.split(" (").next().unwrap_or(name)),
            "README row {name:?} stands where the matrix has {:?}",
            theirs[0]
        );
        for (column, title) in [
            (1, "no fault"),
            (2, "two holders under"),
            (3, "stale write under"),
            (4, "holder the server no longer names under"),
        ] {
            assert_eq!(
                ours[column], theirs[column],
                "{name}: the README's {title:?} cell differs from reports/matrix.md's"
            );
        }
        assert_eq!(
            fencing(&ours[5]),
            fencing(&theirs[5]),
            "{name}: the README's fencing cell {:?} says otherwise than reports/matrix.md's {:?}",
            ours[5],
            theirs[5]
        );
    }
}
