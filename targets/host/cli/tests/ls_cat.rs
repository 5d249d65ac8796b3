//! `neff ls`, `neff cat`, `neff completions` and `neff man`: members and their bytes checked
//! against the `tar` and `flate2` crates' reading of the real NEFFs, roles against the loader's
//! own placements and against the def.json members as serde_json reads them.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod fleet;
mod support;

use serde_json::Value;
use support::*;
use xxhash_rust::xxh3::xxh3_64;

fn ls_json(path: &std::path::Path) -> Value {
    let out = neff_p(&[&"ls", &path, &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn ls_lists_every_member_with_its_role() {
    for (label, path) in fleet::real_neffs() {
        let members = members_of(&std::fs::read(&path).unwrap());
        let doc = ls_json(&path);
        let rows = doc["members"].as_array().unwrap();
        let have: Vec<(String, u64, String)> = rows
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["size"].as_u64().unwrap(),
                    r["digest"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, u64, String)> =
            members.iter().map(|(n, b)| (n.clone(), b.len() as u64, format!("{:016x}", xxh3_64(b)))).collect();
        assert_eq!(have, want, "{label}");
        for r in rows {
            let name = r["name"].as_str().unwrap();
            let reached = r["reached_by"].as_array();
            match r["role"].as_str() {
                // The loader's payloads are exactly the members reached that are no manifest.
                Some("payload") => {
                    assert!(reached.is_some_and(|x| !x.is_empty()), "{label} {name}");
                    assert!(r["usage"].is_string() && r["core"].is_u64(), "{label} {name}");
                }
                Some("manifest") => assert!(reached.is_some() && r["usage"].is_null(), "{label} {name}"),
                None => assert!(reached.is_none() && r["usage"].is_null(), "{label} {name}"),
                other => panic!("{label} {name}: role {other:?}"),
            }
        }
        let root = rows.iter().find(|r| r["name"] == "neff.json").unwrap();
        assert_eq!(root["reached_by"], Value::Array(vec![]), "{label}");
        // Each weight is reached by its var's file_name, as the def.json members say.
        for (def_name, def) in members.iter().filter(|(n, _)| n.ends_with("/def.json")) {
            let dir = def_name.trim_end_matches("def.json");
            let doc: Value = serde_json::from_slice(def).unwrap();
            for (var, v) in doc["var"].as_object().unwrap() {
                let Some(file) = v["file_name"].as_str() else { continue };
                let row = rows.iter().find(|r| r["name"] == format!("{dir}{file}").as_str()).expect("weight member");
                assert_eq!(row["usage"], "WEIGHT", "{label} {file}");
                let by = row["reached_by"].as_array().unwrap();
                assert!(
                    by.iter().any(
                        |b| b["member"] == def_name.as_str() && b["key"] == format!("var.{var}.file_name").as_str()
                    ),
                    "{label} {file}: {by:?}"
                );
            }
        }
        let text = stdout(&neff_p(&[&"ls", &path]));
        let last = text.lines().last().unwrap();
        assert!(last.starts_with(&format!("{} members, ", members.len())), "{label}: {last}");
        assert!(text.contains("  neff.json  (the chain's root)\n"), "{label}");
    }
}

#[test]
fn cat_writes_each_member_byte_for_byte() {
    let real = fleet::real_neffs();
    let picked: Vec<_> = real.iter().filter(|(l, _)| l == "matmul_small" || l == "baseline_bf16_s512").collect();
    for (label, path) in picked {
        for (name, bytes) in members_of(&std::fs::read(path).unwrap()) {
            let out = neff_p(&[&"cat", path, &name]);
            assert_eq!(code(&out), 0, "{label} {name}: {}", stderr(&out));
            assert!(out.stdout == bytes, "{label} {name}: {} bytes, want {}", out.stdout.len(), bytes.len());
            if name.ends_with(".npy") {
                let out = neff_p(&[&"cat", path, &name, &"--data"]);
                assert_eq!(code(&out), 0, "{label} {name}: {}", stderr(&out));
                assert!(out.stdout == common::neff::npy_data(&bytes), "{label} {name} --data");
            }
        }
    }
}

#[test]
fn cat_of_several_members_writes_them_in_the_order_given() {
    // The real NEFFs (one checkpoint each: under 4 MiB of tar), and a generated one whose tar
    // stream spans several checkpoints.
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("weights.neff");
    let mut spec = neff_host::scale::ScaleSpec::small();
    spec.set("weights=6000").unwrap();
    std::fs::write(&generated, spec.build().unwrap()).unwrap();
    let mut inputs: Vec<(String, std::path::PathBuf)> = fleet::real_neffs().into_iter().take(3).collect();
    inputs.push(("generated".into(), generated));
    for (label, path) in inputs {
        let members = members_of(&std::fs::read(&path).unwrap());
        // Last first, then a few from the middle and the start, one of them twice.
        let mut picked: Vec<&(String, Vec<u8>)> = members.iter().rev().step_by((members.len() / 7).max(1)).collect();
        picked.push(&members[0]);
        picked.push(picked[0]);
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"cat", &path];
        for (name, _) in &picked {
            args.push(name);
        }
        let out = neff_p(&args);
        assert_eq!(code(&out), 0, "{label}: {}", stderr(&out));
        let want: Vec<u8> = picked.iter().flat_map(|(_, b)| b.iter().copied()).collect();
        assert!(out.stdout == want, "{label}: {} bytes, want {}", out.stdout.len(), want.len());
    }
    let Some((_, path)) = fleet::real_neffs().into_iter().next() else { return };
    let line = assert_one_line_error(&neff_p(&[&"cat", &path, &"neff.json", &"sg00/nope.bin"]), 1);
    assert!(line.starts_with("error: sg00/nope.bin: no such member ("), "{line}");
}

#[test]
fn cat_refuses_a_missing_member_and_data_of_a_non_npy() {
    let Some((_, path)) = fleet::real_neffs().into_iter().next() else { return };
    let line = assert_one_line_error(&neff_p(&[&"cat", &path, &"sg00/nope.bin"]), 1);
    assert!(line.starts_with("error: sg00/nope.bin: no such member ("), "{line}");
    let out = neff_p(&[&"cat", &path, &"neff.json", &"--data"]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.starts_with("error: neff.json: --data: "), "{line}");
    assert_eq!(code(&neff(&["cat", "/nonexistent.neff", "x"])), 2);
}

#[test]
fn completions_and_man_pages_come_from_the_command_line() {
    let verbs = [
        "info",
        "check",
        "load",
        "unpack",
        "pack",
        "schema",
        "mem",
        "diff",
        "ls",
        "cat",
        "completions",
        "man",
        "cache",
    ];
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = neff(&["completions", shell]);
        assert_eq!(code(&out), 0, "{shell}");
        let text = stdout(&out);
        for verb in verbs {
            assert!(text.contains(verb), "{shell}: {verb}");
        }
        // mem's flag, as each shell spells a long option.
        assert!(text.contains("--profiling") || text.contains("-l profiling"), "{shell}: mem's flag");
    }
    let page = stdout(&neff(&["man"]));
    assert!(page.contains(".TH neff 1"), "{page}");
    for verb in verbs {
        assert!(page.contains(&format!("neff\\-{verb}")) || page.contains(verb), "{verb}");
    }
    let mem = stdout(&neff(&["man", "mem"]));
    assert!(mem.contains(".TH neff-mem 1") && mem.contains("\\-\\-profiling"), "{mem}");
    assert_eq!(code(&neff(&["man", "bogus"])), 2);
    assert_eq!(code(&neff(&["completions", "tcsh"])), 2);
}
