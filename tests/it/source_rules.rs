//! Rules about the source text itself (ARCHITECTURE.md "Invariants"):
//! an algorithm is spelled only in its home, `src/select/algorithm.rs`, and
//! no source file grows past 600 lines without saying why.

use privalign::select::algorithm::AlgorithmKind;
use std::path::{Path, PathBuf};

/// The one home of the spellings.
const HOME: &str = "src/select/algorithm.rs";

/// String literals that may spell an algorithm outside its home: (file,
/// spelling, why). Every entry says why; nothing else is exempt.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/sweep/engine/mod.rs",
        "bon",
        "the stream-label pin test: the labels' exact bytes are what it fixes",
    ),
    (
        "src/sweep/engine/mod.rs",
        "privbon",
        "the stream-label pin test: the labels' exact bytes are what it fixes",
    ),
    (
        "src/sweep/engine/mod.rs",
        "itp",
        "the stream-label pin test: the labels' exact bytes are what it fixes",
    ),
    (
        "src/sweep/engine/mod.rs",
        "privitp",
        "the stream-label pin test: the labels' exact bytes are what it fixes",
    ),
    (
        "src/sweep/engine/replicate.rs",
        "PrivITP",
        "an internal invariant's expect() message, never output",
    ),
    (
        "src/results/shard_manifest.rs",
        "bon",
        "a unit-test config, written as a user writes one",
    ),
];

/// Files over [`MAX_LINES`] whose reason is kept here rather than in their
/// module doc: (file, why).
const LONG_ALLOWED: &[(&str, &str)] = &[(
    "src/data/ingest.rs",
    "being split by input form and concern (issue #12 item 4)",
)];

/// A longer file states its reason in a module-doc line starting with this.
const LONG_MARK: &str = "//! Long file:";
const MAX_LINES: usize = 600;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/…` paths and texts of every Rust file under src/, sorted.
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root()).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The string literals of Rust source (plain, raw and byte), each with its
/// line; comments and char literals are skipped, lifetimes are not mistaken
/// for chars. Escapes are left as written.
fn literals(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let line = |i: usize| 1 + b[..i].iter().filter(|&&c| c == b'\n').count();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").expect("unterminated block comment") + 2;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push((line(i), src[i + 1..j].to_string()));
            i = j + 1;
        } else if (b[i] == b'r' || rest.starts_with("br")) && (i == 0 || !ident(b[i - 1])) && {
            let r = rest.trim_start_matches('b');
            let r = &r[1..];
            let hashes = r.len() - r.trim_start_matches('#').len();
            r[hashes..].starts_with('"')
        } {
            let start = rest.find('"').unwrap();
            let hashes = &rest[rest.find('r').unwrap() + 1..start];
            let close = format!("\"{hashes}");
            let len = rest[start + 1..]
                .find(&close)
                .expect("unterminated raw string");
            out.push((line(i), rest[start + 1..start + 1 + len].to_string()));
            i += start + 1 + len + close.len();
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                i += 3 + rest[3..].find('\'').unwrap() + 1;
            } else if let Some(c) = rest[1..].chars().next()
                && rest[1 + c.len_utf8()..].starts_with('\'')
            {
                i += 2 + c.len_utf8();
            } else {
                i += 1;
            }
        } else if ident(b[i]) {
            // Skip a whole identifier, so that `br`/`r` inside one is not a prefix.
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every spelling of every algorithm: machine, reader and command-line names.
fn spellings() -> Vec<&'static str> {
    let mut v: Vec<&str> = AlgorithmKind::ALL
        .iter()
        .flat_map(|k| [k.name(), k.label(), k.cli_name()])
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Whether `text` contains `word` with no identifier character either side.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !ident(text[..at].chars().next_back()) && !ident(text[at + word.len()..].chars().next())
    })
}

#[test]
fn the_literal_scanner_sees_strings_and_skips_comments() {
    let src = r####"// "bon" in a comment
/* "itp" */ let a = "PrivBoN"; let c = '"'; fn f<'a>(x: &'a str) {}
let r = r#"privitp "quoted""#; let b = br"raw"; let e = "a\"b";"####;
    let got: Vec<String> = literals(src).into_iter().map(|l| l.1).collect();
    assert_eq!(got, ["PrivBoN", r#"privitp "quoted""#, "raw", r#"a\"b"#]);
    // Its home spells every algorithm, so the scanner finds them there.
    let home = std::fs::read_to_string(root().join(HOME)).unwrap();
    let lits = literals(&home);
    for s in spellings() {
        assert!(
            lits.iter().any(|(_, l)| has_word(l, s)),
            "{s} not found in {HOME}"
        );
    }
}

#[test]
fn no_algorithm_name_literal_outside_its_home() {
    let words = spellings();
    let mut found = Vec::new();
    for (file, text) in sources() {
        if file == HOME {
            continue;
        }
        for (line, lit) in literals(&text) {
            for &w in &words {
                if has_word(&lit, w) && !ALLOWED.iter().any(|(f, s, _)| *f == file && *s == w) {
                    found.push(format!("{file}:{line}: `{w}` in \"{lit}\""));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "algorithm names spelled outside {HOME}; format them from AlgorithmKind \
         (name(), label(), cli_name(), or select::algorithm::names), or add an entry \
         with its reason to ALLOWED in tests/it/source_rules.rs:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_over_600_lines_without_a_reason() {
    let mut found = Vec::new();
    for (file, text) in sources() {
        let lines = text.lines().count();
        let says_why = text
            .lines()
            .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
            .any(|l| l.starts_with(LONG_MARK) && l.len() > LONG_MARK.len() + 10);
        if lines > MAX_LINES && !says_why && !LONG_ALLOWED.iter().any(|(f, _)| *f == file) {
            found.push(format!("{file}: {lines} lines"));
        }
    }
    assert!(
        found.is_empty(),
        "split these by concern, or give the reason in a module-doc line `{LONG_MARK} …`:\n{}",
        found.join("\n")
    );
}
