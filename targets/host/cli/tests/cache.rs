//! `neff cache` and `neff cache clean` on compile-cache trees built here in temporary
//! directories from the real NEFFs: an ok entry of each layout, a failed compile, a truncated
//! `model.neff`, one without its done marker, one whose lock this test holds, an older
//! compiler's entry, and symbolic links pointing outside the cache.

#[path = "../../../../tests/common/mod.rs"]
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
    // A good NEFF and no done marker: ok all the same (the NEFF is checked).
    let undone = entry(V23, "MODULE_4444+aaaa");
    write(&undone.join("model.neff"), &bytes);
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
            (&format!("{V23}/MODULE_4444+aaaa"), "ok"),
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
        (Some(7), Some(4), Some(1))
    );
    let sum: u64 = entries.iter().map(|e| e["size"].as_u64().unwrap()).sum();
    assert_eq!(totals["size"], sum);
    let text = stdout(&neff_p(&[&"cache", &r]));
    assert!(
        text.contains("7 entries: 4 ok, 1 failed, 1 broken, 0 uncompiled, 0 incomplete, 1 locked; 1 stale lock files;"),
        "{text}"
    );
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
            (&format!("{V23}/MODULE_4444+aaaa"), "ok"),
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
    write(&ok.join("model.neff"), &neff_host::sample::SampleBuilder::new().build().unwrap());
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
    assert_eq!(failed["markers"], serde_json::json!(["model.neff is ERROR"]), "{failed}");
    assert_eq!(failed["reason"], "the compile failed; no log says why", "{failed}");

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

/// The real training cache of `../shared/fixtures/training-cache/` (libneuronxla of the 2.14
/// age: no `model.done` anywhere), as it is: each NEFF is opened and checked, the failed
/// compile shows the compiler's reason from its log, the HLO-only entries and the stale lock
/// are told apart. Read in place, never copied (it is read-only: nothing is written to it).
#[test]
fn the_real_214_training_cache_gets_its_true_states() {
    let Some(root) = common::fixture("training-cache") else { return };
    const V: &str = "neuronxcc-2.14.227.0+2d4f85be";
    let doc = cache_json(&root);
    let m = |h: &str| format!("{V}/MODULE_{h}+ade7b014");
    assert_eq!(
        states(&doc),
        expect(&[
            (&m("10014641777187220149"), "ok"),
            (&m("10103772202104053224"), "ok"),
            (&m("13443422193924449328"), "uncompiled"),
            (&m("14041361676943519958"), "ok"),
            (&m("5881221677676581935"), "uncompiled"),
            (&m("6691326907223315616"), "failed"),
            (&m("6855667900855398127"), "ok"),
        ])
    );
    let entries = doc["entries"].as_array().unwrap();
    let get = |h: &str| entries.iter().find(|e| e["path"] == m(h)).unwrap();
    // A good entry: everything that is there.
    let ok = get("10014641777187220149");
    let neff_path = root.join(m("10014641777187220149")).join("model.neff");
    assert_eq!(ok["neff"]["path"], format!("{}/model.neff", m("10014641777187220149")));
    assert_eq!(ok["neff"]["size"], 72704);
    assert_eq!(ok["hlo_size"], 3694);
    assert_eq!(ok["flags"], serde_json::json!({"file": "compile_flags.txt", "flags": ["--model-type=cnn-training"]}));
    assert_eq!((ok["done"].as_bool(), ok["locks"].as_array().map(Vec::len)), (Some(false), Some(0)));
    assert_eq!((ok["compiler_version"].as_str(), ok["target"].as_str()), (Some("2.14.227.0+2d4f85be"), Some("sunda")));
    let mem: Value = serde_json::from_slice(&neff_p(&[&"mem", &neff_path, &"--json"]).stdout).unwrap();
    assert_eq!(ok["device_memory"], mem["total"]);
    assert_eq!((ok["reason"].clone(), ok["error"].clone()), (Value::Null, Value::Null));
    // The failed compile: which markers, and the compiler's own line from model.log.
    let failed = get("6691326907223315616");
    assert_eq!(failed["markers"], serde_json::json!(["model.neff is ERROR", "model.log"]));
    assert_eq!(failed["reason"], "BrokenPipeError: [Errno 32] Broken pipe");
    assert_eq!(failed["error_code"], Value::Null);
    assert_eq!(failed["neff"]["size"], 5);
    // The stale lock: reported, held by nobody; the entry is HLO and flags only.
    let stale = get("13443422193924449328");
    assert_eq!(
        stale["locks"],
        serde_json::json!([{"path": format!("{}/model.hlo_module.pb.lock", m("13443422193924449328")), "held": false}])
    );
    assert_eq!((stale["neff"].clone(), stale["hlo_size"].as_u64()), (Value::Null, Some(1415)));
    assert_eq!(doc["locks"], serde_json::json!([{"path": "lock", "held": false}]), "the root's lock, free");
    let t = &doc["totals"];
    let counts: Vec<u64> = ["entries", "ok", "failed", "broken", "uncompiled", "incomplete", "locked", "stale_locks"]
        .iter()
        .map(|k| t[k].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [7, 4, 1, 0, 2, 0, 0, 1]);

    let text = stdout(&neff_p(&[&"cache", &root]));
    assert!(
        text.contains("7 entries: 4 ok, 1 failed, 0 broken, 2 uncompiled, 0 incomplete, 0 locked; 1 stale lock files;"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  failed     {}  (libneuronxla, compiler 2.14.227.0+2d4f85be, 1,511 bytes: model.neff is ERROR, model.log: BrokenPipeError: [Errno 32] Broken pipe)\n", m("6691326907223315616"))),
        "{text}"
    );
    assert!(text.contains(&format!("  uncompiled {}  (libneuronxla, compiler 2.14.227.0+2d4f85be, 1,440 bytes, stale lock model.hlo_module.pb.lock: no NEFF", m("13443422193924449328"))), "{text}");
    assert!(text.contains("  lock       lock  (free)\n"), "{text}");
}

/// The NEFF of the generated 2.14 replica: one shaped like the trn1 NEFFs of that age.
fn trn1_neff() -> Vec<u8> {
    neff_host::scale::ScaleSpec::preset("trn1").unwrap().build().unwrap()
}

/// The generated replica of the 2.14 training cache (`CacheReplica::training_2_14_small`:
/// every kind of the real one): each entry's state and each failed one's reason, in JSON and
/// in text.
#[test]
fn a_generated_214_replica_gets_every_state_and_reason() {
    use neff_host::cache_gen::{CacheReplica, EntryKind};
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let written = CacheReplica::training_2_14_small().write(r, &trn1_neff()).unwrap();
    let doc = cache_json(r);
    let got: Vec<(String, String)> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e["state"].as_str().unwrap().to_owned()))
        .collect();
    let want: Vec<(String, String)> = written.iter().map(|(p, k)| (p.clone(), k.state().to_owned())).collect();
    assert_eq!(got, want, "every entry, in path order, with its kind's state");
    for (e, (_, kind)) in doc["entries"].as_array().unwrap().iter().zip(&written) {
        match kind {
            EntryKind::FailedBrokenPipe214 | EntryKind::FailedKilled214 => {
                assert_eq!(e["reason"], kind.reason().unwrap(), "{e}");
                assert_eq!(e["markers"], serde_json::json!(["model.neff is ERROR", "model.log"]), "{e}");
                let code = if *kind == EntryKind::FailedKilled214 { Value::from("F137") } else { Value::Null };
                assert_eq!(e["error_code"], code, "{e}");
            }
            EntryKind::Ok214 => {
                assert_eq!((e["target"].as_str(), e["done"].as_bool()), (Some("sunda"), Some(false)), "{e}");
                assert!(e["device_memory"].as_u64().unwrap() > 0, "{e}");
            }
            EntryKind::StaleLock214 => assert_eq!(e["locks"][0]["held"], false, "{e}"),
            _ => assert_eq!(e["locks"], serde_json::json!([]), "{e}"),
        }
    }
    let t = &doc["totals"];
    assert_eq!(
        ["entries", "ok", "failed", "broken", "uncompiled", "incomplete", "locked", "stale_locks"]
            .map(|k| t[k].as_u64().unwrap()),
        [34, 18, 3, 0, 13, 0, 0, 2]
    );
    let text = stdout(&neff_p(&[&"cache", &r]));
    assert!(
        text.contains(
            "34 entries: 18 ok, 3 failed, 0 broken, 13 uncompiled, 0 incomplete, 0 locked; 2 stale lock files;"
        ),
        "{text}"
    );
    assert!(text.contains(&format!(": model.neff is ERROR, model.log: {})\n", neff_host::cache_gen::F137)), "{text}");
    assert_eq!(
        text.matches(": model.neff is ERROR, model.log: BrokenPipeError: [Errno 32] Broken pipe)\n").count(),
        2,
        "{text}"
    );
}

/// Holds an `fcntl` (POSIX record) lock on `lock`, as `fcntl.lockf` does.
fn hold_fcntl(lock: &Path) -> fs::File {
    let f = fs::OpenOptions::new().read(true).write(true).open(lock).unwrap();
    rustix::fs::fcntl_lock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    f
}

/// Every layout and age in one cache (`CacheReplica::mixed`), with links out of it: the
/// states of each kind; a lock held by `flock` or by `fcntl` is `locked`, and once released the
/// entry shows what it is; optimum-neuron's registry and exported-model folders are no entries.
#[test]
fn a_mixed_cache_of_every_layout_and_age() {
    use neff_host::cache_gen::{CacheReplica, EntryKind};
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = root.path();
    let written = CacheReplica::mixed().write(r, neff_host::SAMPLE_NEFF).unwrap();
    write(&outside.path().join("MODULE_7777+cccc/model.log"), b"ERROR\n");
    std::os::unix::fs::symlink(outside.path(), r.join("escape")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("MODULE_7777+cccc"),
        r.join(neff_host::cache_gen::DIR_214).join("MODULE_9+link"),
    )
    .unwrap();
    let (locked_rel, _) = written.iter().find(|(_, k)| *k == EntryKind::Locked).unwrap();
    let lock_path = r.join(locked_rel).join("model.hlo_module.pb.lock");
    let want: BTreeMap<String, String> = written.iter().map(|(p, k)| (p.clone(), k.state().to_owned())).collect();
    for how in ["flock", "fcntl"] {
        let held = if how == "flock" { hold(&lock_path) } else { hold_fcntl(&lock_path) };
        let doc = cache_json(r);
        assert_eq!(states(&doc), want, "held by {how}; links, 0_REGISTRY and exported models are no entries");
        let e = doc["entries"].as_array().unwrap().iter().find(|e| e["path"] == locked_rel.as_str()).unwrap();
        assert_eq!(e["locks"][0]["held"], true, "{how}: {e}");
        assert_eq!(e["reason"], "model.hlo_module.pb.lock is held: a compile is under way", "{e}");
        drop(held);
    }
    // A `neff` child another test thread forks while the lock is held shares its descriptor
    // until it execs (the descriptor is close-on-exec), and an `fcntl` lock lives as long as
    // any copy: wait until this process can take the lock itself.
    let free = (0..500).any(|_| {
        let f = fs::OpenOptions::new().read(true).write(true).open(&lock_path).unwrap();
        let taken = rustix::fs::fcntl_lock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok();
        if !taken {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        taken
    });
    assert!(free, "the lock is still held 5 s after its holder let go");
    let doc = cache_json(r);
    assert_eq!(states(&doc)[locked_rel.as_str()], "uncompiled", "released, the entry shows what it is");
    let entries = doc["entries"].as_array().unwrap();
    let of = |kind: EntryKind| {
        let (p, _) = written.iter().find(|(_, k)| *k == kind).unwrap();
        entries.iter().find(|e| e["path"] == p.as_str()).unwrap().clone()
    };
    let failed = of(EntryKind::FailedLog);
    assert_eq!(
        (failed["markers"].clone(), failed["error_code"].clone()),
        (serde_json::json!(["model.log"]), Value::from("NCC_INLA001"))
    );
    assert_eq!(failed["reason"], EntryKind::FailedLog.reason().unwrap());
    let incomplete = of(EntryKind::IncompleteDone);
    assert!(
        incomplete["reason"].as_str().unwrap().starts_with("no model.done and the NEFF is refused"),
        "{incomplete}"
    );
    let broken = of(EntryKind::Truncated214);
    assert!(broken["reason"].as_str().unwrap().starts_with("header: "), "no done marker in the 2.14 age: {broken}");
    assert_eq!(broken["reason"], broken["error"]);
    let later = of(EntryKind::OkDone);
    assert_eq!((later["done"].as_bool(), later["flags"]["file"].as_str()), (Some(true), Some("compile_flags.json")));
    assert_eq!(later["flags"]["flags"], serde_json::json!(["--target=trn2", "--model-type=transformer", "-O1"]));
    let vllm = of(EntryKind::Vllm);
    assert_eq!((vllm["layout"].as_str(), vllm["done"].as_bool()), (Some("vllm-neuron"), Some(true)));
}

/// `clean` removes each kind of leftover on its own, lists it with `--dry-run`, never touches
/// an entry or a lock another process holds, never goes through a link.
#[test]
fn clean_removes_each_kind_of_leftover_on_its_own() {
    use neff_host::cache_gen::{CacheReplica, EntryKind};
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = root.path();
    let written = CacheReplica::mixed().write(r, neff_host::SAMPLE_NEFF).unwrap();
    write(&outside.path().join("MODULE_7777+cccc/model.hlo_module.pb"), b"hlo");
    std::os::unix::fs::symlink(outside.path(), r.join("escape")).unwrap();
    let path_of =
        |kind: EntryKind| written.iter().filter(|(_, k)| *k == kind).map(|(p, _)| r.join(p)).collect::<Vec<_>>();
    let locked = path_of(EntryKind::Locked).remove(0);
    let held = hold(&locked.join("model.hlo_module.pb.lock"));
    let before = states(&cache_json(r));

    // Stale locks: listed, then removed; the entries stay; the held one stays.
    let dry = stdout(&neff_p(&[&"cache", &"clean", &r, &"--stale-locks", &"--dry-run"]));
    assert_eq!(dry.matches("  would remove stale lock ").count(), 1, "{dry}");
    assert!(dry.contains("would remove 0 entries, 0 bytes; 1 stale lock files (dry run: nothing removed); 1 locked entries left alone"), "{dry}");
    let stale = path_of(EntryKind::StaleLock214).remove(0).join("model.hlo_module.pb.lock");
    assert!(stale.exists());
    let out = neff_p(&[&"cache", &"clean", &r, &"--stale-locks"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stale.exists(), "the stale lock goes");
    assert!(stale.parent().unwrap().join("model.hlo_module.pb").exists(), "its entry stays");
    assert!(locked.join("model.hlo_module.pb.lock").exists(), "the held lock stays");
    assert!(r.join("lock").exists(), "the root's lock stays");
    assert_eq!(states(&cache_json(r)), before, "no state changed");

    // Each kind of entry on its own.
    for (flag, kinds) in [
        ("--uncompiled", vec![EntryKind::Uncompiled214, EntryKind::StaleLock214]),
        ("--failed", vec![EntryKind::FailedBrokenPipe214, EntryKind::FailedKilled214, EntryKind::FailedLog]),
        ("--broken", vec![EntryKind::Truncated214, EntryKind::BrokenDone]),
    ] {
        let gone: Vec<PathBuf> = kinds.iter().flat_map(|k| path_of(*k)).collect();
        let dry = stdout(&neff_p(&[&"cache", &"clean", &r, &flag, &"--dry-run"]));
        assert!(dry.contains(&format!("would remove {} entries", gone.len())), "{flag}: {dry}");
        assert!(gone.iter().all(|p| p.exists()), "{flag}: a dry run removes nothing");
        let out = neff_p(&[&"cache", &"clean", &r, &flag]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(gone.iter().all(|p| !p.exists()), "{flag}: {}", stdout(&out));
    }
    let left: Vec<String> = states(&cache_json(r)).into_values().collect();
    assert!(left.iter().all(|s| s == "ok" || s == "incomplete" || s == "locked"), "{left:?}");
    assert!(locked.exists(), "the entry whose lock is held stays");
    assert!(outside.path().join("MODULE_7777+cccc/model.hlo_module.pb").exists(), "nothing through the link");
    // Released, the HLO-only entry it was goes with --uncompiled.
    drop(held);
    assert_eq!(code(&neff_p(&[&"cache", &"clean", &r, &"--uncompiled"])), 0);
    assert!(!locked.exists());
    assert_eq!(code(&neff_p(&[&"cache", &"clean", &r])), 2, "a selector is needed");
}

/// Every verb that reads a NEFF says so when it meets libneuronxla's failed-compile marker,
/// through the one place refusals go (`commands::run`); a file that is not the marker gets no
/// such hint.
#[test]
fn every_verb_names_the_failed_compile_marker() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("model.neff");
    write(&marker, b"ERROR");
    let short = dir.path().join("short.neff");
    write(&short, b"ERRORS");
    let good = dir.path().join("good.neff");
    write(&good, neff_host::SAMPLE_NEFF);
    let out_dir = dir.path().join("out");
    let hint = "hint: this file is a compile cache's marker for a failed compile";
    let verbs: Vec<(&str, Vec<&dyn AsRef<std::ffi::OsStr>>)> = vec![
        ("info", vec![&"info"]),
        ("check", vec![&"check"]),
        ("load", vec![&"load"]),
        ("mem", vec![&"mem"]),
        ("ls", vec![&"ls"]),
        ("cat", vec![&"cat"]),
        ("unpack", vec![&"unpack"]),
    ];
    for (verb, head) in verbs {
        for (file, want) in [(&marker, true), (&short, false)] {
            let mut args = head.clone();
            args.push(file);
            match verb {
                "cat" => args.push(&"neff.json"),
                "unpack" => {
                    args.push(&"-o");
                    args.push(&out_dir);
                }
                _ => {}
            }
            let out = neff_p(&args);
            let err = stderr(&out);
            assert_eq!(code(&out), 1, "{verb}: {err}");
            assert_eq!(err.contains(hint), want, "{verb} {}: {err}", file.display());
        }
    }
    // diff: a side it cannot read is exit 2 (1 says "different"), the file named on the line.
    let out = neff_p(&[&"diff", &good, &marker]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.starts_with(&format!("error: {}: header: ", marker.display())), "{err}");
    assert!(err.contains("; this file is a compile cache's marker for a failed compile"), "{err}");
    let err = stderr(&neff_p(&[&"diff", &good, &short]));
    assert!(!err.contains("failed compile"), "{err}");
    // mem of several files: the marker named in its hint.
    let err = stderr(&neff_p(&[&"mem", &good, &marker]));
    assert!(err.contains(&format!("hint: {}: this file is a compile cache's marker", marker.display())), "{err}");
}

/// The `neff cache` transcript of docs/neff-cache.md on the real training cache: each `$ neff ...`
/// line is run from the repository's root and prints what the page shows under it.
#[test]
fn the_docs_cache_transcript_is_what_neff_prints() {
    if common::fixture("training-cache").is_none() {
        return;
    }
    // The command crate sits three levels below the repository's root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..").canonicalize().unwrap();
    let readme = fs::read_to_string(root.join("docs/neff-cache.md")).unwrap();
    let at = readme.find("$ neff cache ../shared/fixtures/training-cache\n").expect("the transcript");
    let block = &readme[at..at + readme[at..].find("```").unwrap()];
    let mut runs: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        match line.strip_prefix("$ ") {
            Some(command) => runs.push((command.to_owned(), String::new())),
            None => {
                let (_, out) = runs.last_mut().unwrap();
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    assert_eq!(runs.len(), 2, "{block}");
    for (command, want) in runs {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_neff")).args(&args).current_dir(&root).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), want, "{command}");
    }
}
