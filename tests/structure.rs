//! The code's shape, held: no file over 1,000 lines unless its opening comment says which one
//! concept it is, no function over 150 lines, no `Result<_, String>` outside tests. Read as
//! text over every `.rs` file of the repository (build output left out), so a file added in
//! any crate, or in `examples/`, is held to the same rules.

use std::path::{Path, PathBuf};

/// Most lines a file may have unless it says it is one concept.
const MOST_FILE_LINES: usize = 1_000;
/// Most lines a function may have, its signature and closing brace counted.
const MOST_FUNCTION_LINES: usize = 150;
/// What a longer file says in its opening comment.
const ONE_CONCEPT: &str = "One concept, kept in one file over 1,000 lines:";
/// How far down the opening comment is looked for.
const OPENING_LINES: usize = 80;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn rust_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, found);
                }
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root(), &mut found);
    found.sort();
    assert!(
        found.len() > 100,
        "only {} .rs files found: is the root right?",
        found.len()
    );
    found
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs") || path.components().any(|c| c.as_os_str() == "tests")
}

/// The functions of `text` longer than `most` lines: (first line, name, lines). A function runs
/// from its `fn` line to the first line after it that is its indentation and `}` alone, which
/// is how rustfmt closes every function body of more than one line.
fn long_functions(text: &str, most: usize) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let Some(name) = function_name(body) else { continue };
        if line.trim_end().ends_with(';') || line.trim_end().ends_with('}') {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = lines[at + 1..].iter().position(|l| *l == close) {
            let length = end + 2;
            if length > most {
                found.push((at + 1, name.to_owned(), length));
            }
        }
    }
    found
}

/// `name` of a line that opens a function: `fn name`, `pub fn name`, `pub(crate) async fn name`.
fn function_name(line: &str) -> Option<&str> {
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    (end > 0).then(|| &rest[..end])
}

#[test]
fn a_file_over_1000_lines_says_which_one_concept_it_is() {
    let mut found = Vec::new();
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).expect("a readable file");
        let lines = text.lines().count();
        if lines > MOST_FILE_LINES && !text.lines().take(OPENING_LINES).any(|l| l.contains(ONE_CONCEPT)) {
            found.push(format!("{} ({lines} lines)", shown(&file)));
        }
    }
    assert!(
        found.is_empty(),
        "split these files, or say in the opening comment \"{ONE_CONCEPT} ...\":\n{}",
        found.join("\n")
    );
}

#[test]
fn no_function_is_over_150_lines() {
    let mut found = Vec::new();
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).expect("a readable file");
        for (at, name, lines) in long_functions(&text, MOST_FUNCTION_LINES) {
            found.push(format!("{}:{at}: {name} ({lines} lines)", shown(&file)));
        }
    }
    assert!(found.is_empty(), "split these functions:\n{}", found.join("\n"));
}

/// A `Result<..., String>` on `line`: its last type argument, at the `Result`'s own depth of
/// angle brackets, is `String` (so `Result<Vec<u8>, String>` counts; `Result<String, E>` and
/// an alias's `anyhow::Result<String>` do not).
fn returns_a_string_error(line: &str) -> bool {
    line.match_indices("Result<").any(|(start, found)| {
        let inside = &line[start + found.len()..];
        let mut depth = 0_usize;
        let mut last_argument = 0;
        for (at, c) in inside.char_indices() {
            match c {
                '<' => depth += 1,
                ',' if depth == 0 => last_argument = at + 1,
                '>' if depth == 0 => return last_argument > 0 && inside[last_argument..at].trim() == "String",
                '>' => depth -= 1,
                _ => {}
            }
        }
        false
    })
}

#[test]
fn no_library_code_returns_a_string_as_its_error() {
    let mut found = Vec::new();
    for file in rust_files().into_iter().filter(|f| !is_test_file(f)) {
        let text = std::fs::read_to_string(&file).expect("a readable file");
        for (at, line) in text.lines().enumerate() {
            if returns_a_string_error(line) {
                found.push(format!("{}:{}: {}", shown(&file), at + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "give these a typed error (thiserror in the libraries, anyhow at the command line's edge):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_rules_see_what_they_are_meant_to() {
    let long_body = "    x();\n".repeat(200);
    let text = format!("impl A {{\n    pub(crate) fn long(&self) {{\n{long_body}    }}\n    fn short() {{}}\n}}\n");
    assert_eq!(long_functions(&text, 150), [(2, "long".to_owned(), 202)]);
    assert!(long_functions(&text, 250).is_empty());
    assert_eq!(function_name("pub async fn run(x: u8) {"), Some("run"));
    assert_eq!(function_name("let fn_name = 3;"), None);
    assert!(returns_a_string_error("fn f() -> Result<Vec<u8>, String> {"));
    assert!(returns_a_string_error(
        "fn f() -> io::Result<()> { g::<Result<u8, String>>() }"
    ));
    assert!(!returns_a_string_error("fn f() -> Result<String, Error> {"));
    assert!(!returns_a_string_error("fn f() -> anyhow::Result<String> {"));
    assert!(!returns_a_string_error("fn f() -> Result<BTreeMap<String, u8>, E> {"));
    assert!(is_test_file(Path::new("/r/cli/tests/x.rs")));
    assert!(is_test_file(Path::new("/r/src/store/znode_tree/tests.rs")));
    assert!(!is_test_file(Path::new("/r/src/store/znode_tree.rs")));
}
