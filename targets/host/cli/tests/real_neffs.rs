//! Every real NEFF under `../shared/fixtures/public/` (found by walking the directory, so a new
//! one is picked up) through the command, as spec §15.21 and DESIGN.md's promises ask:
//!
//! - `check`, `info` and `load` pass with no error and no warning, and `load` runs on the
//!   NEFF's own target arch (read here from `neff.json` and its KELF with `serde_json`);
//! - `info` agrees with `profile.json` where one sits beside the NEFF (the neuron-profile
//!   report of a real run: its `neff_header` and `neff_node` tables, values as strings);
//! - `unpack` gives back every member byte for byte, against an independent reader (`tar` +
//!   `flate2`: the payload is the `data_size` bytes after the 1024-byte header, the gzip
//!   stream stops before its zero padding).
//!
//! Each test prints one line per NEFF (`cargo test -p neff-cli --test real_neffs -- --nocapture`).
//! Without `../shared` the tests say they skip; under `CI=true` that is a failure.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::*;

/// The real NEFFs there are today: a walk that finds fewer is broken.
const AT_LEAST: usize = 12;

/// `(name relative to public/, path)` of every `.neff` under `public/`, sorted; `None` (after
/// the helper's note) without `../shared`.
fn real_neffs() -> Option<Vec<(String, PathBuf)>> {
    let root = common::fixture("public")?;
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "neff") {
                let rel = path.strip_prefix(&root).unwrap().to_str().unwrap().replace('\\', "/");
                out.push((rel, path));
            }
        }
    }
    out.sort();
    assert!(out.len() >= AT_LEAST, "found {} NEFFs under {}, expected at least {AT_LEAST}", out.len(), root.display());
    Some(out)
}

fn json_of(out: &std::process::Output, what: &str) -> Value {
    assert_eq!(code(out), 0, "{what}: {}", stderr(out));
    assert!(out.stderr.is_empty(), "{what}: no warning, no error: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {}", stdout(out)))
}

fn parse_json(bytes: &[u8], what: &str) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The device arch `load` must simulate for this NEFF, read independently: the target of the
/// first KELF node of `neff.json` (by `attrs.func_name`, else by `op`), cayman for `*`.
fn own_arch(members: &BTreeMap<String, Vec<u8>>, name: &str) -> &'static str {
    let neff = parse_json(&members["neff.json"], &format!("{name}: neff.json"));
    let nodes = neff["nodes"].as_array().unwrap();
    let by = |key: &str| -> Option<&Value> {
        nodes.iter().find(|n| n["attrs"][key] == "__kelf" || (key == "op" && n["op"] == "__kelf"))
    };
    let node = by("func_name").or_else(|| by("op")).unwrap_or_else(|| panic!("{name}: no __kelf node"));
    let member = node["attrs"]["kelf"].as_str().unwrap();
    let kelf = parse_json(&members[member], &format!("{name}: {member}"));
    match kelf["target"].as_str().unwrap_or("") {
        "sunda" | "v2" | "" => "sunda",
        "cayman" | "v3" | "*" => "cayman",
        "mariana" | "v4" => "mariana",
        other => panic!("{name}: unexpected KELF target {other:?}"),
    }
}

/// The members, by name, read with `tar` + `flate2`; a name twice would make the comparison
/// ambiguous, so it fails here.
fn members_by_name(bytes: &[u8], name: &str) -> (Vec<String>, BTreeMap<String, Vec<u8>>) {
    let list = members_of(bytes);
    let order: Vec<String> = list.iter().map(|(n, _)| n.clone()).collect();
    let map: BTreeMap<String, Vec<u8>> = list.into_iter().collect();
    assert_eq!(map.len(), order.len(), "{name}: a member name appears twice");
    (order, map)
}

#[test]
fn every_real_neff_checks_infos_and_loads_on_its_own_arch_without_a_warning() {
    let Some(neffs) = real_neffs() else { return };
    for (name, path) in &neffs {
        let bytes = std::fs::read(path).unwrap();
        let (_, members) = members_by_name(&bytes, name);
        let arch = own_arch(&members, name);

        let out = neff_p(&[&"check", path]);
        assert_eq!(code(&out), 0, "{name}: check: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{name}: check warned: {}", stderr(&out));
        let check = stdout(&out);
        assert!(check.starts_with("ok: ") && check.ends_with(", 0 warnings\n"), "{name}: {check}");

        let out = neff_p(&[&"info", path]);
        assert_eq!(code(&out), 0, "{name}: info: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{name}: info warned: {}", stderr(&out));
        let info = json_of(&neff_p(&[&"info", path, &"--json"]), &format!("{name}: info --json"));
        assert_eq!(info["kelf"][0]["arch"].as_u64(), Some(arch_code(arch)), "{name}");

        let load = json_of(&neff_p(&[&"load", path, &"--json"]), &format!("{name}: load --json"));
        assert_eq!(load["warnings"], 0, "{name}");
        assert_eq!(load["device_arch"], arch, "{name}: load runs on the NEFF's own arch");
        assert_eq!(load["device"]["arch_source"], "neff-target", "{name}");
        let payloads = load["payloads"].as_array().unwrap();
        assert!(!payloads.is_empty(), "{name}: nothing placed");
        assert!(payloads.iter().all(|p| p["state"] == "placed"), "{name}: a payload not placed");
        let out = neff_p(&[&"load", path]);
        assert_eq!(code(&out), 0, "{name}: load: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{name}: load warned: {}", stderr(&out));
        let device = format!("device: {arch} (the NEFF's target; --arch pins one)");
        assert_eq!(stdout(&out).lines().nth(1), Some(device.as_str()), "{name}");

        println!(
            "{name}: check ok, 0 warnings; info ok, 0 warnings; load on {arch} (the NEFF's target), {} payloads placed, {} bytes, 0 warnings",
            payloads.len(),
            load["bytes_placed"]
        );
    }
}

fn arch_code(arch: &str) -> u64 {
    match arch {
        "sunda" => 2,
        "cayman" => 3,
        _ => 4,
    }
}

#[test]
fn unpack_gives_back_every_member_byte_for_byte() {
    let Some(neffs) = real_neffs() else { return };
    for (name, path) in &neffs {
        let bytes = std::fs::read(path).unwrap();
        let (order, members) = members_by_name(&bytes, name);
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = neff_p(&[&"unpack", path, &"-o", &out_dir]);
        assert_eq!(code(&out), 0, "{name}: unpack: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{name}: unpack warned: {}", stderr(&out));
        let mut total = 0usize;
        for (member, body) in &members {
            let written = std::fs::read(out_dir.join(member)).unwrap_or_else(|e| panic!("{name}: {member}: {e}"));
            assert!(
                written == *body,
                "{name}: {member} differs ({} bytes written, {} in the tar)",
                written.len(),
                body.len()
            );
            total += body.len();
        }
        let mut want: Vec<String> = members.keys().cloned().chain(["header.json".to_owned()]).collect();
        want.sort();
        assert_eq!(files_under(&out_dir), want, "{name}: every member and header.json, nothing else");
        let header = parse_json(&std::fs::read(out_dir.join("header.json")).unwrap(), name);
        let listed: Vec<&str> = header["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(listed, order, "{name}: header.json keeps the tar order");
        println!("{name}: unpack gave back {} members ({total} bytes) byte for byte, in tar order", members.len());
    }
}

/// `profile.json`'s value as a string (every value there is one).
fn text<'v>(row: &'v Value, key: &str, what: &str) -> &'v str {
    row[key].as_str().unwrap_or_else(|| panic!("{what}: {key} is not a string: {row}"))
}

fn number(row: &Value, key: &str, what: &str) -> u64 {
    let t = text(row, key, what);
    t.parse().unwrap_or_else(|e| panic!("{what}: {key} {t:?}: {e}"))
}

/// A profile shape `"[128 512]"` as numbers.
fn shape(text: &str, what: &str) -> Vec<u64> {
    let inner =
        text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or_else(|| panic!("{what}: shape {text:?}"));
    inner.split_whitespace().map(|d| d.parse().unwrap_or_else(|e| panic!("{what}: shape {text:?}: {e}"))).collect()
}

/// The `shape` of a `.npy` member's header (`'shape': (128, 128, 1, 1), `).
fn npy_shape(npy: &[u8], what: &str) -> Vec<u64> {
    assert!(npy.starts_with(b"\x93NUMPY"), "{what}: not a .npy");
    let head = String::from_utf8_lossy(&npy[..npy.len().min(4096)]);
    let start = head.find("'shape': (").unwrap_or_else(|| panic!("{what}: no shape")) + "'shape': (".len();
    let end = start + head[start..].find(')').unwrap();
    head[start..end].split(',').map(str::trim).filter(|d| !d.is_empty()).map(|d| d.parse().unwrap()).collect()
}

/// The stored hash `info` prints (`hash  <hex> (stored, not verified)`).
fn info_hash(info: &str, what: &str) -> String {
    let line =
        info.lines().find(|l| l.trim_start().starts_with("hash ")).unwrap_or_else(|| panic!("{what}: no hash line"));
    line.split_whitespace().nth(1).unwrap().to_owned()
}

/// Compares one NEFF's `info` with its `profile.json`; returns the summary line.
fn agree_with_profile(name: &str, path: &Path, profile: &Value) -> String {
    let info = json_of(&neff_p(&[&"info", &path, &"--json"]), &format!("{name}: info --json"));
    let human = stdout(&neff_p(&[&"info", &path]));
    let h = &info["header"];
    let rows = profile["neff_header"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{name}: one neff_header row");
    let p = &rows[0];
    let what = format!("{name}: neff_header");
    let mut agreed: Vec<&str> = Vec::new();
    let mut field = |label: &'static str, theirs: Value, ours: &Value| {
        assert_eq!(&theirs, ours, "{what}: {label}");
        agreed.push(label);
    };
    field("uuid", text(p, "uuid", &what).into(), &h["uuid"]);
    field("data_size", number(p, "data_size", &what).into(), &h["data_size"]);
    field("header_size", number(p, "header_size", &what).into(), &h["header_size"]);
    field("package_version", number(p, "package_version", &what).into(), &h["pkg_version"]);
    let version = format!("{}.{}", number(p, "major_version", &what), number(p, "minor_version", &what));
    field("major.minor_version", version.into(), &h["neff_version"]);
    field("build_version", text(p, "build_version", &what).into(), &h["build_version"]);
    field("network_name", text(p, "network_name", &what).into(), &h["name"]);
    field("neuroncores_per_lnc", number(p, "number_of_neuroncores_per_lnc", &what).into(), &h["lnc_size"]);
    // DOC-PKG names `num_tpb` "Number of Neuron cores"; `requested_tpb_count` is 1 as well in
    // every file, so which one the profiler prints here one value cannot say.
    field("logical_neuroncores", number(p, "number_of_logical_neuroncores", &what).into(), &h["num_tpb"]);
    // The header's `hash` field as stored (16 bytes for pkg 2): `info` prints it, `--json` has
    // no key for it (the contract's key list).
    field("hash", text(p, "hash", &what).into(), &info_hash(&human, &what).into());
    // The profiler prints the names of the set feature bits; which name is which bit one
    // value cannot say (spec §15.21), their number it can.
    let features = text(p, "enabled_features", &what).split(',').filter(|f| !f.trim().is_empty()).count();
    let bits = u64::from(h["feature_bits"].as_u64().unwrap().count_ones());
    field("enabled_features (count of feature_bits)", (features as u64).into(), &bits.into());
    let header_fields = agreed.len();

    let what = format!("{name}: neff_node");
    let mut io = (0usize, 0usize);
    let mut weights = 0usize;
    let mut graphs: Vec<String> = Vec::new();
    let tensors = |key: &str| -> BTreeMap<String, Value> {
        info[key].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap().to_owned(), t.clone())).collect()
    };
    let (inputs, outputs) = (tensors("inputs"), tensors("outputs"));
    // `(var, its member)` of every file var: the member is `file_name` in the directory of the
    // subgraph's definition.
    let file_vars: Vec<(&Value, String)> = info["subgraphs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|sg| {
            let dir = sg["definition"].as_str().unwrap().rsplit_once('/').map_or("", |(d, _)| d).to_owned();
            sg["vars"].as_array().unwrap().iter().filter(|v| v["type"] == "file").map(move |v| {
                let file = v["file_name"].as_str().unwrap();
                (v, if dir.is_empty() { file.to_owned() } else { format!("{dir}/{file}") })
            })
        })
        .collect();
    let bytes = std::fs::read(path).unwrap();
    let (_, members) = members_by_name(&bytes, name);
    let mut weight_names = std::collections::BTreeSet::new();
    for row in profile["neff_node"].as_array().unwrap() {
        let kind = text(row, "type", &what);
        let var = text(row, "variable_name", &what);
        match kind {
            "IN" | "OUT" => {
                let list = if kind == "IN" { &inputs } else { &outputs };
                let t = list.get(var).unwrap_or_else(|| panic!("{what}: {kind} {var} is not in info --json"));
                assert_eq!(t["shape"], Value::from(shape(text(row, "shape", &what), &what)), "{what}: {var} shape");
                assert_eq!(t["size"], number(row, "size", &what), "{what}: {var} size");
                if kind == "IN" {
                    io.0 += 1;
                } else {
                    io.1 += 1;
                }
            }
            "WEIGHT" => {
                let vars: Vec<&(&Value, String)> = file_vars.iter().filter(|(v, _)| v["name"] == var).collect();
                assert!(!vars.is_empty(), "{what}: weight {var} is no file var of info --json");
                for (v, member) in vars {
                    assert_eq!(v["size"], number(row, "size", &what), "{what}: weight {var} size");
                    // info has no weight shape: the profile's is the `.npy` header's, read here.
                    let npy = members.get(member).unwrap_or_else(|| panic!("{what}: no member {member}"));
                    assert_eq!(npy_shape(npy, member), shape(text(row, "shape", &what), &what), "{what}: {member}");
                }
                weight_names.insert(var.to_owned());
                weights += 1;
            }
            // A subgraph row: its graph, and `node`, the index of the KELF node in neff.json.
            "" => graphs.push(format!("{}@node{}", text(row, "sg_name", &what), number(row, "node", &what))),
            other => panic!("{what}: a node type this test does not know: {other:?}"),
        }
    }
    assert_eq!((io.0, io.1), (inputs.len(), outputs.len()), "{what}: every I/O tensor, once");
    let file_names: std::collections::BTreeSet<String> =
        file_vars.iter().map(|(v, _)| v["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(weight_names, file_names, "{what}: the weights are the file vars");
    // The subgraph rows name info's subgraphs, at the index of the KELF node, read here from
    // neff.json with serde_json (info --json has no node index).
    let neff = parse_json(&members["neff.json"], name);
    let kelf_node = neff["nodes"].as_array().unwrap().iter().position(|n| n["attrs"]["func_name"] == "__kelf").unwrap();
    let ours: Vec<String> = info["subgraphs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sg| format!("{}@node{kelf_node}", sg["name"].as_str().unwrap()))
        .collect();
    assert_eq!(graphs, ours, "{what}: subgraph rows");

    format!(
        "header {header_fields}/{header_fields} ({}); inputs {} and outputs {} (name, shape, size); weights {weights} (name, size vs file vars; shape vs .npy); subgraphs {}",
        agreed.join(", "),
        io.0,
        io.1,
        graphs.join(" ")
    )
}

#[test]
fn info_agrees_with_the_profile_beside_each_neff() {
    let Some(neffs) = real_neffs() else { return };
    let mut profiles = 0;
    for (name, path) in &neffs {
        let profile_path = path.with_file_name("profile.json");
        if !profile_path.exists() {
            println!("{name}: no profile.json beside it");
            continue;
        }
        let profile = parse_json(&std::fs::read(&profile_path).unwrap(), &profile_path.display().to_string());
        println!("{name}: agrees with profile.json: {}", agree_with_profile(name, path, &profile));
        profiles += 1;
    }
    // trainium-kernel-fusion has one beside each of its ten NEFFs.
    assert!(profiles >= 10, "{profiles} profiles compared");
}
