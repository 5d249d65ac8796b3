//! `neff cache` and `neff check` over many files across threads (`--threads N`): whatever N,
//! stdout (text and `--json`), stderr and the exit status are byte for byte those of the
//! one-thread run, on a generated cache of every entry state ([`neff_host::cache_gen::CacheTree`]:
//! refused NEFFs and the failed-compile `ERROR` marker among them) and on the real NEFFs of
//! `../shared/fixtures/public` (skipped with a note without them; a failure under `CI=true`).

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod fleet;
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use neff_host::cache_gen::{CacheTree, CACHE_CYCLE};
use neff_host::sample::SampleBuilder;
use support::*;

/// The thread counts compared with `--threads 1`: the machine's, and more than items.
const THREADS: [&str; 3] = ["2", "3", "16"];

/// Runs `neff` with `args` then `--threads N` for 1 and each of [`THREADS`]; requires the same
/// stdout, stderr and exit status from each, and returns the one-thread run.
fn same_whatever_the_threads(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let run = |n: &str| {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = args.to_vec();
        all.push(&"--threads");
        all.push(&n);
        neff_p(&all)
    };
    let serial = run("1");
    for n in THREADS {
        let par = run(n);
        let what = format!("{:?} --threads {n}", args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>());
        assert_eq!(code(&par), code(&serial), "{what}: exit status");
        assert_eq!(stdout(&par), stdout(&serial), "{what}: stdout");
        assert_eq!(stderr(&par), stderr(&serial), "{what}: stderr");
    }
    serial
}

#[test]
fn a_generated_cache_reads_the_same_on_any_thread_count() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let mut want = CacheTree { entries: 60, neff: neff_host::SAMPLE_NEFF }.write(r).unwrap();
    assert_eq!(want.len(), 60);
    // Four ok entries whose checks warn, each with a warning of its own.
    for i in 0..4 {
        let rel = format!("neuronxcc-2.23.6484.0+3b612583/MODULE_{i}+warn");
        let odd = SampleBuilder::new().replace_member("sg00/SP.bin", &vec![0x60; 200 + 64 * i]).build().unwrap();
        std::fs::create_dir_all(r.join(&rel)).unwrap();
        std::fs::write(r.join(&rel).join("model.neff"), odd).unwrap();
        std::fs::write(r.join(&rel).join("model.done"), b"").unwrap();
        want.push((rel, "ok"));
    }
    want.sort_by(|a, b| Path::new(&a.0).cmp(Path::new(&b.0)));

    let json = same_whatever_the_threads(&[&"cache", &r, &"--json"]);
    assert_eq!(code(&json), 0, "{}", stderr(&json));
    let warned: Vec<String> = stderr(&json).lines().map(str::to_owned).collect();
    let want_warned: Vec<String> = (0..4)
        .map(|i| format!("warning: sg00/SP.bin: instruction stream of {} bytes is not a multiple of 64", 200 + 64 * i))
        .collect();
    assert_eq!(warned, want_warned, "each entry's warning, in the entries' order");
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let got: Vec<(String, &str)> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e["state"].as_str().unwrap()))
        .collect();
    assert_eq!(got, want, "every entry, in path order, with the state the generator gave it");
    let count = |s: &str| CACHE_CYCLE.iter().filter(|c| **c == s).count() * 5;
    assert_eq!(doc["totals"]["ok"], count("ok") + 4);
    assert_eq!(doc["totals"]["failed"], count("failed"));
    assert_eq!(doc["totals"]["broken"], count("broken"));

    let text = same_whatever_the_threads(&[&"cache", &r]);
    assert_eq!(code(&text), 0);
    assert!(
        stdout(&text).contains(
            "64 entries: 44 ok, 10 failed, 5 broken, 0 uncompiled, 5 incomplete, 0 locked; 0 stale lock files;"
        ),
        "{}",
        stdout(&text)
    );

    // `clean --dry-run` scans the same way.
    let dry = same_whatever_the_threads(&[&"cache", &"clean", &r, &"--failed", &"--broken", &"--dry-run"]);
    assert!(stdout(&dry).contains("would remove 15 entries"), "{}", stdout(&dry));
}

#[test]
fn check_of_many_files_reads_the_same_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = neff_host::SAMPLE_NEFF;
    let mut files: Vec<PathBuf> = Vec::new();
    for i in 0..20 {
        let path = d.join(format!("f{i:02}.neff"));
        // Every fifth file raises a warning of its own (an instruction stream of an odd size).
        let odd;
        let bytes: &[u8] = match i % 5 {
            0 => {
                odd = SampleBuilder::new().replace_member("sg00/SP.bin", &vec![0x60; 200 + 64 * i]).build().unwrap();
                &odd
            }
            3 => &sample[..sample.len() / 2],
            4 => b"ERROR",
            _ => sample,
        };
        std::fs::write(&path, bytes).unwrap();
        files.push(path);
    }
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"check"];
    args.extend(files.iter().map(|f| f as &dyn AsRef<std::ffi::OsStr>));
    let out = same_whatever_the_threads(&args);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let oks: Vec<String> = stdout(&out).lines().map(|l| l.split(':').nth(1).unwrap().trim().to_owned()).collect();
    let want: Vec<String> =
        files.iter().enumerate().filter(|(i, _)| i % 5 < 3).map(|(_, f)| f.display().to_string()).collect();
    assert_eq!(oks, want, "one ok line per accepted file, in the order given");
    let err = stderr(&out);
    assert_eq!(err.matches("error: ").count(), 8 + 1, "{err}");
    assert!(err.contains(&format!("error: {}: header: ", files[3].display())), "a refusal names its file: {err}");
    assert!(err.contains("hint: this file is a compile cache's marker for a failed compile"), "{err}");
    assert!(err.ends_with("error: 8 of 20 files refused\n"), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    let want: Vec<String> = (0..20)
        .step_by(5)
        .map(|i| format!("warning: sg00/SP.bin: instruction stream of {} bytes is not a multiple of 64", 200 + 64 * i))
        .collect();
    assert_eq!(warnings, want, "each file's warning, in the order of the files");

    // An unreadable file: exit 2, counted apart.
    let missing = d.join("missing.neff");
    args.push(&missing);
    let out = same_whatever_the_threads(&args);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).ends_with("error: 1 of 21 files could not be read, 8 refused\n"), "{}", stderr(&out));

    // One file: what `check` has always printed.
    let one = neff_p(&[&"check", &files[0], &"--threads", &"4"]);
    assert_eq!(stdout(&one), stdout(&neff_p(&[&"check", &files[0]])));
    assert_eq!(code(&neff_p(&[&"check", &files[3], &"--threads", &"2"])), 1);
}

/// A cache whose ok entries are the real NEFFs, each also truncated as a broken entry.
#[test]
fn a_cache_of_the_real_neffs_reads_the_same_on_any_thread_count() {
    let real = fleet::real_neffs();
    if real.is_empty() {
        eprintln!("skipping: no real NEFFs (../shared/fixtures/public absent)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for (label, path) in &real {
        let bytes = std::fs::read(path).unwrap();
        let entry = |m: &str| r.join("neuronxcc-2.23.6484.0+3b612583").join(format!("MODULE_{label}{m}"));
        let write = |dir: &Path, name: &str, b: &[u8]| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(name), b).unwrap();
        };
        write(&entry("+ok"), "model.neff", &bytes);
        write(&entry("+ok"), "model.done", b"");
        write(&entry("+cut"), "model.neff", &bytes[..bytes.len() * 3 / 4]);
        write(&entry("+cut"), "model.done", b"");
    }
    let json = same_whatever_the_threads(&[&"cache", &r, &"--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["totals"]["ok"], real.len(), "{doc}");
    assert_eq!(doc["totals"]["broken"], real.len(), "{doc}");
    same_whatever_the_threads(&[&"cache", &r]);

    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"check", &"--verify"];
    args.extend(real.iter().map(|(_, p)| p as &dyn AsRef<std::ffi::OsStr>));
    let out = same_whatever_the_threads(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().filter(|l| l.starts_with("ok: ")).count(), real.len());
    eprintln!("{} real NEFFs: cache and check the same on 1, {} threads", real.len(), THREADS.join(", "));
}
