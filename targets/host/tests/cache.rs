//! `neff cache` and `neff cache clean` on compile-cache trees built here in temporary
//! directories from the real NEFFs: an ok entry of each layout, a failed compile, a truncated
//! `model.neff`, one without its done marker, one whose lock this test holds, an older
//! compiler's entry, and symbolic links pointing outside the cache.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod fleet;
mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::*;

const V23: &str = "neuronxcc-2.23.6484.0+3b612583";
const V22: &str = "neuronxcc-2.22.1.0+0a1b2c3d";

struct Tree {
    root: tempfile::TempDir,
    outside: tempfile::TempDir,
    neff: PathBuf,
}

fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// The tree; `None` without the fixtures.
fn tree() -> Option<Tree> {
    let neff = fleet::fusion_neff("fused_attention")?;
    let vllm_neff = fleet::fusion_neff("baseline_bf16_s512")?;
    let bytes = fs::read(&neff).unwrap();
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = root.path();
    let entry = |v: &str, m: &str| r.join(v).join(m);
    // ok: everything libneuronxla writes for a successful compile.
    let ok = entry(V23, "MODULE_1111+aaaa");
    write(&ok.join("model.neff"), &bytes);
    write(&ok.join("model.done"), b"");
    write(&ok.join("model.log"), b"Compiler status PASS\n");
    write(&ok.join("compile_flags.json"), br#"["--target=trn2"]"#);
    write(&ok.join("model.hlo_module.pb"), &[7u8; 300]);
    // failed: a log, no NEFF.
    let failed = entry(V23, "MODULE_2222+aaaa");
    write(&failed.join("model.log"), b"ERROR: compilation failed\n");
    write(&failed.join("compile_flags.json"), b"[]");
    // broken: a done marker and a truncated NEFF.
    let broken = entry(V23, "MODULE_3333+aaaa");
    write(&broken.join("model.neff"), &bytes[..bytes.len() / 2]);
    write(&broken.join("model.done"), b"");
    // incomplete: a NEFF, no done marker.
    let incomplete = entry(V23, "MODULE_4444+aaaa");
    write(&incomplete.join("model.neff"), &bytes);
    // locked: a failed compile whose lock the test holds.
    let locked = entry(V23, "MODULE_5555+aaaa");
    write(&locked.join("model.log"), b"ERROR\n");
    write(&locked.join("model.lock"), b"");
    // a stale lock (nobody holds it) changes nothing.
    write(&ok.join("model.lock"), b"");
    // an older compiler's ok entry.
    let old = entry(V22, "MODULE_6666+bbbb");
    write(&old.join("model.neff"), &bytes);
    write(&old.join("model.done"), b"");
    // vllm-neuron.
    let vllm = r.join("vllm").join("9f8e7d");
    write(&vllm.join("graph_9f8e7d.neff"), &fs::read(&vllm_neff).unwrap());
    write(&vllm.join(".compilation_complete"), b"");
    // Links out of the cache: a directory of failed-looking entries, and one entry.
    let out = outside.path();
    write(&out.join("MODULE_7777+cccc/model.log"), b"ERROR\n");
    write(&out.join(V23).join("MODULE_8888+cccc/model.log"), b"ERROR\n");
    std::os::unix::fs::symlink(out, r.join("escape")).unwrap();
    std::os::unix::fs::symlink(out.join("MODULE_7777+cccc"), r.join(V23).join("MODULE_9999+link")).unwrap();
    Some(Tree { root, outside, neff })
}

fn cache_json(root: &Path) -> Value {
    let out = neff_p(&[&"cache", &root, &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn states(doc: &Value) -> BTreeMap<String, String> {
    doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e["state"].as_str().unwrap().to_owned()))
        .collect()
}

fn expect(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(p, s)| ((*p).to_owned(), (*s).to_owned())).collect()
}

fn hold(lock: &Path) -> fs::File {
    let f = fs::File::open(lock).unwrap();
    rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    f
}

fn dir_size(dir: &Path) -> u64 {
    fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

#[test]
fn cache_names_each_entry_state() {
    let Some(t) = tree() else { return };
    let r = t.root.path();
    let lock = hold(&r.join(V23).join("MODULE_5555+aaaa/model.lock"));
    let doc = cache_json(r);
    assert_eq!(
        states(&doc),
        expect(&[
            (&format!("{V22}/MODULE_6666+bbbb"), "ok"),
            (&format!("{V23}/MODULE_1111+aaaa"), "ok"),
            (&format!("{V23}/MODULE_2222+aaaa"), "failed"),
            (&format!("{V23}/MODULE_3333+aaaa"), "broken"),
            (&format!("{V23}/MODULE_4444+aaaa"), "incomplete"),
            (&format!("{V23}/MODULE_5555+aaaa"), "locked"),
            ("vllm/9f8e7d", "ok"),
        ]),
        "links are neither entries nor ways into them"
    );
    let entries = doc["entries"].as_array().unwrap();
    let get = |p: &str| entries.iter().find(|e| e["path"] == p).unwrap();
    let ok = get(&format!("{V23}/MODULE_1111+aaaa"));
    assert_eq!(ok["layout"], "libneuronxla");
    assert_eq!(ok["compiler_version"], "2.23.6484.0+3b612583");
    assert_eq!(ok["target"], "cayman");
    assert_eq!(ok["size"], dir_size(&r.join(V23).join("MODULE_1111+aaaa")));
    let mem: Value = serde_json::from_slice(&neff_p(&[&"mem", &t.neff, &"--json"]).stdout).unwrap();
    assert_eq!(ok["device_memory"], mem["total"]);
    let broken = get(&format!("{V23}/MODULE_3333+aaaa"));
    assert!(broken["error"].as_str().unwrap().starts_with("header: "), "{broken}");
    assert_eq!(broken["device_memory"], Value::Null);
    // vllm's version comes from the NEFF's info.json.
    let vllm = get("vllm/9f8e7d");
    assert_eq!(
        (vllm["layout"].as_str(), vllm["compiler_version"].as_str()),
        (Some("vllm-neuron"), Some("2.23.6484.0+3b612583"))
    );
    let totals = &doc["totals"];
    assert_eq!(
        (totals["entries"].as_u64(), totals["ok"].as_u64(), totals["locked"].as_u64()),
        (Some(7), Some(3), Some(1))
    );
    let sum: u64 = entries.iter().map(|e| e["size"].as_u64().unwrap()).sum();
    assert_eq!(totals["size"], sum);
    let text = stdout(&neff_p(&[&"cache", &r]));
    assert!(text.contains("7 entries: 3 ok, 1 failed, 1 broken, 1 incomplete, 1 locked;"), "{text}");
    drop(lock);
    // With the lock released, the entry shows what it is.
    assert_eq!(states(&cache_json(r))[&format!("{V23}/MODULE_5555+aaaa")], "failed");
}

#[test]
fn clean_removes_whole_entries_inside_the_cache_only() {
    let Some(t) = tree() else { return };
    let r = t.root.path();
    let lock = hold(&r.join(V23).join("MODULE_5555+aaaa/model.lock"));
    let before = states(&cache_json(r));

    // A dry run removes nothing.
    let out = neff_p(&[&"cache", &"clean", &r, &"--failed", &"--broken", &"--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("would remove 2 entries"), "{}", stdout(&out));
    assert_eq!(states(&cache_json(r)), before);

    let out = neff_p(&[&"cache", &"clean", &r, &"--failed", &"--broken"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let after = states(&cache_json(r));
    let mut want = before.clone();
    want.remove(&format!("{V23}/MODULE_2222+aaaa"));
    want.remove(&format!("{V23}/MODULE_3333+aaaa"));
    assert_eq!(after, want, "the locked failed entry stays");
    assert!(!r.join(V23).join("MODULE_2222+aaaa").exists());
    // What the links point at is untouched, and so are the links.
    let out_dir = t.outside.path();
    assert!(out_dir.join("MODULE_7777+cccc/model.log").exists());
    assert!(out_dir.join(V23).join("MODULE_8888+cccc/model.log").exists());
    assert!(r.join("escape").symlink_metadata().unwrap().file_type().is_symlink());
    assert!(r.join(V23).join("MODULE_9999+link").symlink_metadata().is_ok());

    drop(lock);
    let out = neff_p(&[&"cache", &"clean", &r, &"--failed"]);
    assert_eq!(code(&out), 0);
    assert!(!r.join(V23).join("MODULE_5555+aaaa").exists(), "released, the failed entry goes");

    // --older-than: by the compiler version, only older ones.
    let out = neff_p(&[&"cache", &"clean", &r, &"--older-than", &"2.23"]);
    assert_eq!(code(&out), 0);
    let left = states(&cache_json(r));
    assert_eq!(
        left,
        expect(&[
            (&format!("{V23}/MODULE_1111+aaaa"), "ok"),
            (&format!("{V23}/MODULE_4444+aaaa"), "incomplete"),
            ("vllm/9f8e7d", "ok"),
        ])
    );
    assert!(r.join(V22).exists(), "only the entry goes, not its version directory");
}

#[test]
fn clean_needs_a_selector_and_a_local_root() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(code(&neff_p(&[&"cache", &"clean", &dir.path()])), 2);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["cache", "--json"])
        .env("NEURON_COMPILE_CACHE_URL", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["root"], dir.path().display().to_string());
    assert_eq!(doc["totals"]["entries"], 0);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["cache"])
        .env("NEURON_COMPILE_CACHE_URL", "s3://bucket/cache")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(code(&neff(&["cache", "/nonexistent/cache"])), 2);
}

/// Issue 30: libneuronxla's failed-compile marker, a `model.neff` of the five bytes `ERROR`
/// (what torch-neuronx reports as "Got a cached failed neff"), in a 2.14 training cache
/// beside an ok entry (the built-in sample). Needs no fixture.
#[test]
fn the_failed_compile_marker_is_a_failed_entry() {
    const V14: &str = "neuronxcc-2.14.227.0+2d4f85be";
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let ok = r.join(V14).join("MODULE_1111+4fa1");
    write(&ok.join("model.neff"), &neff_cli::sample::SampleBuilder::new().build().unwrap());
    write(&ok.join("model.done"), b"");
    let marker = r.join(V14).join("MODULE_2222+4fa1");
    write(&marker.join("model.neff"), b"ERROR");
    write(&marker.join("model.done"), b"");
    write(&marker.join("compile_flags.json"), b"[]");

    let doc = cache_json(r);
    assert_eq!(
        states(&doc),
        expect(&[(&format!("{V14}/MODULE_1111+4fa1"), "ok"), (&format!("{V14}/MODULE_2222+4fa1"), "failed")]),
        "the marker is a failed compile, not a broken NEFF"
    );
    let failed = doc["entries"].as_array().unwrap().iter().find(|e| e["state"] == "failed").unwrap();
    assert_eq!(failed["error"], Value::Null, "{failed}");

    // `check` on the marker: refused as before (exit 1), with a hint saying what it is.
    let out = neff_p(&[&"check", &marker.join("model.neff")]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.starts_with("error: header: Invalid number of NEFF bytes received 5"), "{err}");
    assert!(err.contains("hint: this file is a compile cache's marker for a failed compile"), "{err}");
    // A short file that is not the marker gets no such hint.
    let other = r.join("short.neff");
    write(&other, b"ERRORS");
    let err = stderr(&neff_p(&[&"check", &other]));
    assert!(!err.contains("failed compile"), "{err}");

    let out = neff_p(&[&"cache", &"clean", &r, &"--failed"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!marker.exists(), "the marker's entry goes");
    assert!(ok.join("model.neff").exists(), "the ok entry stays");
}
