//! Every `$ neff …` transcript of README.md and `docs/*.md` is what the binary prints.
//!
//! A transcript is a fenced block whose info string is `console`. Each line starting with `$ `
//! is a command, the lines under it (up to the next `$ ` line or the fence) are what it prints,
//! standard output and standard error together as a terminal would show them. Each block runs
//! in a fresh temporary directory, its commands one after another (so `neff unpack` may leave a
//! directory for the `neff pack` below it), each through `sh -c` with the `neff` this test was
//! built with first on the `PATH`. A command that exits non-zero must say so itself
//! (`; echo $?`), so a transcript shows every failure it expects.
//!
//! The directory holds what the docs' commands name: `matmul_small.neff` and
//! `matmul_large.neff` (`../shared/fixtures/public/nkipy/`), each directory of
//! `../shared/fixtures/public/trainium-kernel-fusion/` under its own name
//! (`fused_attention/fused.neff`), `touched.neff` (`matmul_small.neff` with the lowest bit of
//! byte 1028, in the gzip header's MTIME, flipped), and `../shared` itself, so a command may name
//! `../shared/fixtures/training-cache`. Commands without a FILE use the built-in sample and need
//! none of it. A block that names a fixture is skipped, with a note, when `../shared` is absent,
//! and fails under `CI=true`.
//!
//! Output must match exactly but for two placeholders, for what genuinely varies from run to
//! run (a timing) or what a page leaves out of a long output:
//! - `[..]` within a line matches any text on that line (`in [..] ms`);
//! - a line that is exactly `...` matches any number of lines, none included.
//!
//! Fenced blocks of any other kind are not run; a `$ neff` line in one is a failure, so that no
//! transcript escapes this test. The firmware's and the benches' outputs are ```text blocks
//! without `$ neff` (they need QEMU or minutes).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../../../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root (the command crate sits three levels below it).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..").canonicalize().unwrap()
}

/// The documents whose transcripts run: README.md and the Markdown files of `docs/`.
fn documents() -> Vec<PathBuf> {
    let root = repo_root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

/// One `$ ` line and what it prints.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// One ```console block: where it starts (1-based line of the fence) and its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Transcript {
    line: usize,
    steps: Vec<Step>,
}

/// The ```console blocks of a Markdown text, and the lines of other fenced blocks that look
/// like a transcript (`$ neff`), which would go untested.
fn parse(text: &str) -> (Vec<Transcript>, Vec<usize>) {
    let mut transcripts = Vec::new();
    let mut stray = Vec::new();
    // The fence of the block we are in, and whether it is a transcript.
    let mut open: Option<(String, bool)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let fence = "```".to_string();
                    let console = info.trim() == "console";
                    if console {
                        transcripts.push(Transcript { line: i + 1, steps: Vec::new() });
                    }
                    open = Some((fence, console));
                }
            }
            Some((fence, console)) => {
                if trimmed.starts_with(fence.as_str()) && trimmed.trim_start_matches('`').trim().is_empty() {
                    open = None;
                } else if *console {
                    let current = transcripts.last_mut().unwrap();
                    if let Some(command) = line.strip_prefix("$ ") {
                        current.steps.push(Step { command: command.to_string(), expected: Vec::new() });
                    } else if let Some(step) = current.steps.last_mut() {
                        step.expected.push(line.to_string());
                    } else {
                        // Output before any command: kept as a step without one, reported below.
                        current.steps.push(Step { command: String::new(), expected: vec![line.to_string()] });
                    }
                } else if line.starts_with("$ neff") {
                    stray.push(i + 1);
                }
            }
        }
    }
    (transcripts, stray)
}

/// Whether one output line matches one expected line, `[..]` matching any text.
fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() || !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the output lines match the expected ones, a `...` line matching any run of lines.
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((first, rest)) => {
            actual.split_first().is_some_and(|(line, more)| line_matches(first, line) && lines_match(rest, more))
        }
    }
}

/// The fixtures a transcript may name, linked into `dir` from `shared` (the `../shared`
/// directory); `touched.neff` is written.
fn lay_out_fixtures(dir: &Path, shared: &Path) {
    let public = shared.join("fixtures/public");
    for name in ["matmul_small.neff", "matmul_large.neff"] {
        std::os::unix::fs::symlink(public.join("nkipy").join(name), dir.join(name)).unwrap();
    }
    for entry in std::fs::read_dir(public.join("trainium-kernel-fusion")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::os::unix::fs::symlink(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    let mut touched = std::fs::read(public.join("nkipy/matmul_small.neff")).unwrap();
    touched[1028] ^= 1;
    std::fs::write(dir.join("touched.neff"), touched).unwrap();
}

/// Whether a transcript's commands name something of `../shared` (else the built-in sample and
/// what the block makes itself are enough).
fn needs_shared(transcript: &Transcript) -> bool {
    const SHARED_NAMES: &[&str] = &["../shared", "matmul_small", "matmul_large", "touched.neff", "baseline_", "fused_"];
    transcript.steps.iter().any(|s| SHARED_NAMES.iter().any(|n| s.command.contains(n)))
}

/// Runs one transcript; returns a message per step that failed.
fn run(doc: &str, transcript: &Transcript, bin_dir: &Path, shared: Option<&Path>) -> Vec<String> {
    let base = tempfile::tempdir().unwrap();
    let work = base.path().join("work");
    std::fs::create_dir(&work).unwrap();
    if let Some(shared) = shared {
        std::os::unix::fs::symlink(shared, base.path().join("shared")).unwrap();
        lay_out_fixtures(&work, shared);
    }
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut failures = Vec::new();
    for step in &transcript.steps {
        let place = format!("{doc}:{}: `$ {}`", transcript.line, step.command);
        if step.command.is_empty() {
            failures.push(format!("{doc}:{}: output before any `$ ` line", transcript.line));
            continue;
        }
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("exec 2>&1\n{}", step.command))
            .current_dir(&work)
            .env("PATH", &path)
            .env_remove("NEURON_COMPILE_CACHE_URL")
            .env_remove("CARGO_TERM_COLOR")
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = printed.lines().collect();
        if !out.status.success() {
            failures.push(format!("{place} exited with {} (add `; echo $?` if it should)\n{printed}", out.status));
        } else if !lines_match(&step.expected, &lines) {
            failures.push(format!(
                "{place} printed something else.\n--- the page shows:\n{}\n--- the binary printed:\n{printed}",
                step.expected.join("\n")
            ));
        }
    }
    failures
}

#[test]
fn every_transcript_of_the_docs_is_what_neff_prints() {
    let bin_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_neff"), bin_dir.path().join("neff")).unwrap();
    // `../shared`, found as the other tests find it (None, with a note, when absent).
    let shared = common::fixture("public").map(|p| p.parent().unwrap().parent().unwrap().to_path_buf());
    let root = repo_root();
    let (mut ran, mut skipped, mut blocks) = (0, 0, 0);
    let mut failures = Vec::new();
    for doc in documents() {
        let name = doc.strip_prefix(&root).unwrap().display().to_string();
        let (transcripts, stray) = parse(&std::fs::read_to_string(&doc).unwrap());
        for line in stray {
            failures.push(format!("{name}:{line}: a `$ neff` line outside a ```console block is never run"));
        }
        for transcript in &transcripts {
            blocks += 1;
            if needs_shared(transcript) && shared.is_none() {
                skipped += transcript.steps.len();
                continue;
            }
            ran += transcript.steps.len();
            failures.extend(run(&name, transcript, bin_dir.path(), shared.as_deref()));
        }
    }
    println!("{blocks} transcripts, {ran} commands run, {skipped} skipped (no ../shared)");
    // The docs hold dozens of transcripts: finding none means the parser or the paths are wrong.
    assert!(blocks >= 20, "only {blocks} ```console blocks found");
    assert!(failures.is_empty(), "{} transcript steps differ:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// Every verb of `neff --help` has its page, `docs/neff-<verb>.md`, and the page shows the verb
/// run in at least one transcript.
#[test]
fn every_verb_has_a_page_with_a_transcript() {
    let help = Command::new(env!("CARGO_BIN_EXE_neff")).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let commands = help.split("Commands:\n").nth(1).expect("a Commands: list in --help");
    let verbs: Vec<&str> = commands
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|v| *v != "help")
        .collect();
    assert!(verbs.len() >= 13, "{verbs:?}");
    let root = repo_root();
    let mut failures = Vec::new();
    for verb in &verbs {
        let page = root.join(format!("docs/neff-{verb}.md"));
        let Ok(text) = std::fs::read_to_string(&page) else {
            failures.push(format!("docs/neff-{verb}.md is missing"));
            continue;
        };
        let (transcripts, _) = parse(&text);
        let runs_it = |s: &Step| s.command.split_whitespace().take(2).eq(["neff", verb]);
        if !transcripts.iter().any(|t| t.steps.iter().any(runs_it)) {
            failures.push(format!("docs/neff-{verb}.md has no transcript of `neff {verb}`"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The runner itself, on texts whose answer is known.
#[test]
fn the_runner_parses_blocks_and_matches_placeholders() {
    let doc = "text\n```console\n$ neff check\nok: [..]\n$ neff x; echo $?\n...\n1\n```\n```text\n$ neff info\n```\n";
    let (transcripts, stray) = parse(doc);
    assert_eq!(stray, [10]);
    assert_eq!(transcripts.len(), 1);
    assert_eq!(transcripts[0].line, 2);
    let steps = &transcripts[0].steps;
    assert_eq!(steps[0], Step { command: "neff check".into(), expected: vec!["ok: [..]".into()] });
    assert_eq!(steps[1].expected, ["...", "1"]);

    assert!(line_matches("in [..] ms", "in 14.5 ms"));
    assert!(line_matches("a [..] b [..] c", "a x b y c"));
    assert!(!line_matches("in [..] ms", "in 14.5 s"));
    assert!(!line_matches("ab[..]ba", "aba"), "the two ends may not overlap");
    assert!(!line_matches("exact", "exact "));
    let want = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&want(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(lines_match(&want(&["a", "...", "d"]), &["a", "d"]));
    assert!(!lines_match(&want(&["a", "...", "d"]), &["a", "b"]));
    assert!(!lines_match(&want(&["a"]), &["a", "b"]), "unshown output is a difference");
    assert!(!lines_match(&want(&["a", "b"]), &["a"]));
}
