//! Finds each lock's scenario files in `src/family/scenario/` and writes the table that lists
//! them, so that a new lock's scenarios need their own files and nothing else in this crate.
//!
//! Every `*.rs` file there but `mod.rs` is one lock's: it declares `LOCK` (the registry's
//! lock) and `lock` (its lock from a scenario's settings), and its scenarios are the `.toml`
//! file of the same name (the data, in the language of `scenario_file.rs`). The generated file
//! declares each `.rs` as a module and lists (lock, builder, file name, file text);
//! `scenario::scenarios()` loads them in the registry's order.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::{env, fs};

const DIR: &str = "src/family/scenario";

fn main() {
    println!("cargo:rerun-if-changed={DIR}");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = manifest.join(DIR);
    let mut stems: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("reading {}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter_map(|path| path.file_stem().and_then(|stem| stem.to_str()).map(str::to_owned))
        .filter(|stem| stem != "mod")
        .collect();
    // Directory order is the file system's: sort, so the build is the same everywhere.
    stems.sort();
    for stem in &stems {
        assert!(
            !stem.is_empty()
                && stem
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{DIR}/{stem}.rs: a scenario file's name must be a Rust module name (lower case, digits, _)"
        );
    }
    for stem in &stems {
        let data = dir.join(format!("{stem}.toml"));
        assert!(
            data.is_file(),
            "{DIR}/{stem}.rs has no {stem}.toml beside it: a lock's scenarios are that file"
        );
    }
    let mut table = String::from("// Written by sim/build.rs from the files of src/family/scenario/.\n");
    for stem in &stems {
        let path = dir.join(format!("{stem}.rs"));
        writeln!(table, "#[path = {:?}]\nmod {stem};", path.display().to_string()).expect("writing to a String");
    }
    writeln!(
        table,
        "\n/// Each lock's scenario file: (lock, builder, file name, its text)."
    )
    .expect("writing to a String");
    writeln!(
        table,
        "const FILES: [(Lock, LockBuilder, &str, &str); {}] = [",
        stems.len()
    )
    .expect("writing to a String");
    for stem in &stems {
        let data = dir.join(format!("{stem}.toml"));
        writeln!(
            table,
            "    ({stem}::LOCK, {stem}::lock, \"{DIR}/{stem}.toml\", include_str!({:?})),",
            data.display().to_string()
        )
        .expect("writing to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lock_scenarios.rs");
    fs::write(&out, table).unwrap_or_else(|error| panic!("writing {}: {error}", out.display()));
}
