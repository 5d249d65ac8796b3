//! `neff check --json` and refusals as JSON objects (`spec/cli-contract.md`, "--json and
//! refusals"): one object per FILE on stdout, a refused file's `{"error": {...}}` with every
//! key present, the exit status and the stderr line as without `--json`, and the same object
//! from every verb that takes `--json`.

mod support;

use serde_json::Value;
use support::{code, neff_p, stderr, stdout, write_temp};

use neff_host::sample::SampleBuilder;

/// The keys of a refusal object and of a warning object, in order.
const FAULT_KEYS: [&str; 10] =
    ["file", "code", "status", "stage", "member", "key_path", "offset", "offset_base", "message", "hints"];

/// A NEFF whose `def.json` has a string where a var's size is expected (code 902).
fn bad_def() -> tempfile::NamedTempFile {
    write_temp(
        &SampleBuilder::new().replace_text("sg00/def.json", "\"size\":16384", "\"size\":\"big\"").build().unwrap(),
    )
}

/// Each line of stdout as one JSON value.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn check_json_is_one_report_per_file_with_warnings_as_objects() {
    let sample = SampleBuilder::new().build().unwrap();
    let mut tailed = sample.clone();
    tailed.extend_from_slice(b"tail");
    let (clean, tail) = (write_temp(&sample), write_temp(&tailed));
    let out = neff_p(&[&"check", &"--json", &clean.path(), &tail.path()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let docs = json_lines(&stdout(&out));
    assert_eq!(docs.len(), 2);
    for (doc, file) in docs.iter().zip([clean.path(), tail.path()]) {
        assert_eq!(
            keys(doc),
            [
                "file",
                "target",
                "arch",
                "subgraphs",
                "members",
                "manifests",
                "payloads",
                "payload_bytes",
                "tar_bytes",
                "warnings",
                "verify",
                "time_ms"
            ]
        );
        assert_eq!(doc["file"], file.display().to_string());
        assert_eq!(doc["target"], "cayman");
        assert!(doc["payloads"].as_u64().unwrap() > 0);
    }
    assert_eq!(docs[0]["warnings"], Value::Array(vec![]));
    // The trailing bytes' warning, field by field, and still on stderr.
    let warnings = docs[1]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert_eq!(keys(w), FAULT_KEYS);
    assert_eq!(w["code"], 501);
    assert_eq!(w["stage"], "header");
    assert!(w["status"].is_null());
    assert!(stderr(&out).contains(&format!("warning: {}", w["message"].as_str().unwrap())), "{}", stderr(&out));
}

#[test]
fn a_refused_file_is_an_error_object_with_every_key_and_still_exits_1() {
    let bad = bad_def();
    let plain = neff_p(&[&"check", &bad.path()]);
    let out = neff_p(&[&"check", &"--json", &bad.path()]);
    assert_eq!((code(&plain), code(&out)), (1, 1));
    // The stderr line stays as it is.
    assert_eq!(stderr(&out), stderr(&plain));
    let docs = json_lines(&stdout(&out));
    assert_eq!(docs.len(), 1);
    assert_eq!(keys(&docs[0]), ["error"]);
    let e = &docs[0]["error"];
    assert_eq!(keys(e), FAULT_KEYS);
    assert_eq!(e["file"], bad.path().display().to_string());
    assert_eq!((e["code"].as_u64(), e["status"].as_str()), (Some(902), Some("NRT_INVALID")));
    assert_eq!((e["stage"].as_str(), e["member"].as_str()), (Some("def.json"), Some("sg00/def.json")));
    let key_path = e["key_path"].as_str().unwrap();
    assert!(key_path.starts_with("var.") && key_path.ends_with(".size"), "{key_path}");
    assert_eq!(e["offset_base"], "member");
    // The stderr line is built from the same fields.
    let offset = e["offset"].as_u64().unwrap();
    let line = format!("error: sg00/def.json: {key_path}: {} (byte {offset})", e["message"].as_str().unwrap());
    assert!(stderr(&out).starts_with(&line), "{}\nwanted {line}", stderr(&out));
    assert!(e["hints"].is_array());
}

#[test]
fn several_files_give_reports_and_refusals_in_the_order_given() {
    let good = write_temp(&SampleBuilder::new().build().unwrap());
    let bad = bad_def();
    let short = write_temp(&SampleBuilder::new().build().unwrap()[..500]);
    for threads in ["1", "3"] {
        let out = neff_p(&[&"check", &"--json", &"--threads", &threads, &bad.path(), &good.path(), &short.path()]);
        assert_eq!(code(&out), 1);
        let docs = json_lines(&stdout(&out));
        assert_eq!(docs.len(), 3, "{}", stdout(&out));
        assert_eq!(docs[0]["error"]["code"], 902);
        assert_eq!(docs[1]["file"], good.path().display().to_string());
        assert_eq!(docs[2]["error"]["code"], 501);
        assert_eq!(docs[2]["error"]["file"], short.path().display().to_string());
        // A truncated file keeps the command's hint, as data.
        assert!(!docs[2]["error"]["hints"].as_array().unwrap().is_empty());
        assert!(stderr(&out).contains("2 of 3 files refused"), "{}", stderr(&out));
    }
}

#[test]
fn every_json_verb_prints_the_same_refusal_object() {
    let bad = bad_def();
    let path = bad.path();
    let check = json_lines(&stdout(&neff_p(&[&"check", &"--json", &path])));
    for verb in [&["info", "--json"][..], &["load", "--json"], &["mem", "--json"]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = verb.iter().map(|a| a as _).collect();
        args.push(&path);
        let out = neff_p(&args);
        assert_eq!(code(&out), 1, "{verb:?}");
        assert_eq!(json_lines(&stdout(&out)), check, "{verb:?}");
        // Without --json nothing goes to stdout.
        let plain = neff_p(&[&verb[0], &path]);
        assert_eq!((code(&plain), stdout(&plain)), (1, String::new()), "{verb:?}");
    }
}

#[test]
fn usage_errors_and_unreadable_paths_print_no_json() {
    let out = neff_p(&[&"check", &"--json", &"/nonexistent/x.neff"]);
    assert_eq!(code(&out), 2);
    assert_eq!(stdout(&out), "");
}
