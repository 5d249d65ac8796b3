//! NEFFs at the scale of real models (spec §15.20: size is never a reason to refuse a valid
//! NEFF on the host): `info`, `check` and `load --digest-only` accept each generated preset,
//! and report its counts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod support;

use neff_host::scale::ScaleSpec;
use support::{code, neff_p, stdout};

/// Writes `preset` to a temporary file and runs every accepting verb on it.
fn accepted(preset: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{preset}.neff"));
    std::fs::write(&path, ScaleSpec::preset(preset).unwrap().build().unwrap()).unwrap();
    let mut info = String::new();
    for verb in [&["info"][..], &["check"][..], &["load", "--digest-only"][..]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            verb.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        args.push(&path);
        let out = neff_p(&args);
        assert_eq!(code(&out), 0, "{preset}: neff {verb:?}: {}", String::from_utf8_lossy(&out.stderr));
        if verb == ["info"] {
            info = stdout(&out);
        }
    }
    (dir, path, info)
}

#[test]
fn two_thousand_inputs_and_five_hundred_outputs_of_up_to_32_dims() {
    let (_d, _p, info) = accepted("io");
    assert!(info.contains("in01999"), "the last input is listed");
    assert!(info.contains("out00499"), "the last output is listed");
    let dims32 = format!("[{}]", ["2"; 32].join(", "));
    assert!(info.contains(&dims32), "a 32-dimension shape is printed whole");
}

#[test]
fn a_hundred_thousand_vars_in_one_def_json() {
    let (_d, _p, info) = accepted("vars");
    assert!(info.contains("vars (100002)"), "{}", info.lines().find(|l| l.contains("vars (")).unwrap_or(""));
}

#[test]
fn three_thousand_npy_weights_each_its_own_member() {
    let (_d, path, _) = accepted("weights");
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(text.lines().filter(|l| l.contains("WEIGHT") && l.contains("placed")).count(), 3000);
}

#[test]
fn sixteen_subgraphs() {
    let (_d, _p, info) = accepted("subgraphs");
    assert!(info.contains("subgraph sg15"));
}

#[test]
fn long_directory_and_member_names_through_pax() {
    let spec = ScaleSpec::preset("names").unwrap();
    let (_d, path, info) = accepted("names");
    assert!(info.contains(&spec.dir(1)), "the 300-byte directory is printed");
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    assert!(stdout(&out).contains(&format!("{}/{}", spec.dir(0), spec.weight_file(0))));
}

/// A NEFF whose failure is in a member with a 300-byte directory, at a key path holding a
/// 300-byte var name: an error keeps a 128-byte tail and a 96-byte head, yet every verb's
/// error line names both whole (issue 21), so the line says where the failure is.
#[test]
fn an_error_line_prints_a_long_member_name_and_key_path_whole() {
    let spec = ScaleSpec::preset("names").unwrap();
    let def = format!("{}/def.json", spec.dir(0));
    let var = format!("weight00000_{}", "v".repeat(300));
    let mut members = spec.members();
    let (_, body) = members.iter_mut().find(|(name, _)| *name == def).unwrap();
    let text = String::from_utf8(body.clone()).unwrap();
    let text = text.replacen("\"weight00000\":{\"alignment\":64", &format!("\"{var}\":{{\"alignment\":\"64\""), 1);
    assert!(text.contains(&var), "the var is renamed");
    *body = text.into_bytes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long-names.neff");
    std::fs::write(&path, neff_host::writer::neff_bytes(&spec.header(), &members).unwrap()).unwrap();

    for verb in [&["check"][..], &["info"][..], &["load", "--digest-only"][..]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            verb.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        args.push(&path);
        let out = neff_p(&args);
        assert_eq!(code(&out), 1, "{verb:?} refuses it");
        let err = support::stderr(&out);
        let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("{verb:?}: {err}"));
        assert!(line.contains(&format!("error: {def}: var.{var}.alignment: ")), "{verb:?}: {line}");
        assert!(!line.contains('…'), "{verb:?}: nothing elided: {line}");
    }

    // A check of one key of the entry (alignment not a power of two): the path names the key.
    let mut members = spec.members();
    let (_, body) = members.iter_mut().find(|(name, _)| *name == def).unwrap();
    let text = String::from_utf8(body.clone()).unwrap();
    let text = text.replacen("\"weight00000\":{\"alignment\":64", &format!("\"{var}\":{{\"alignment\":3"), 1);
    *body = text.into_bytes();
    std::fs::write(&path, neff_host::writer::neff_bytes(&spec.header(), &members).unwrap()).unwrap();
    let out = support::neff(&["check", path.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    let err = support::stderr(&out);
    assert!(err.contains(&format!("error: {def}: var.{var}.alignment: ")), "{err}");

    // A payload's failure, found by the loader outside any JSON: its 500-byte path whole.
    let weight = format!("{}/{}", spec.dir(0), spec.weight_file(0));
    let mut members = spec.members();
    let (_, body) = members.iter_mut().find(|(name, _)| *name == weight).unwrap();
    body[..6].copy_from_slice(b"\x93NUMPZ");
    std::fs::write(&path, neff_host::writer::neff_bytes(&spec.header(), &members).unwrap()).unwrap();
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    let err = support::stderr(&out);
    assert!(err.contains(&format!("error: {weight}: ")), "{err}");
}

#[test]
fn sixty_four_queue_sets_of_sixteen_queues_and_thirty_two_semaphores() {
    let (_d, _p, info) = accepted("queues");
    assert!(info.contains("dma queues (64)"));
    assert!(info.contains("16 queues"));
}

#[test]
fn eight_activation_sets() {
    let (_d, path, _) = accepted("act-sets");
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    let text = stdout(&out);
    // Bucket and control tables of 8 sets in 2 subgraphs, each an activation table.
    assert_eq!(text.lines().filter(|l| l.contains("ACT_TABLE") && l.contains("placed")).count(), 2 * 8 * 2);
}

/// `(descr, shape, data)` of a `.npy` v1 member, read here.
fn npy_parts(npy: &[u8]) -> (String, Vec<u64>, &[u8]) {
    assert!(npy.starts_with(b"\x93NUMPY\x01\x00"), "a v1 .npy");
    let len = usize::from(u16::from_le_bytes([npy[8], npy[9]]));
    let dict = std::str::from_utf8(&npy[10..10 + len]).unwrap();
    let field = |key: &str, close: char| {
        let at = dict.find(&format!("'{key}': ")).unwrap() + key.len() + 4;
        let end = at + 1 + dict[at + 1..].find(close).unwrap();
        dict[at + 1..end].to_owned()
    };
    let shape_text = field("shape", ')');
    let shape = shape_text.split(',').map(str::trim).filter(|d| !d.is_empty()).map(|d| d.parse().unwrap());
    (field("descr", '\''), shape.collect(), &npy[10 + len..])
}

#[test]
fn the_trn1_preset_has_the_shapes_of_the_trn1_neffs() {
    let bytes = ScaleSpec::preset("trn1").unwrap().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trn1.neff");
    std::fs::write(&path, &bytes).unwrap();

    // check, info and load (on its own arch, sunda) pass with nothing on stderr.
    for verb in [&["check"][..], &["info"][..], &["info", "--json"][..], &["load"][..], &["load", "--json"][..]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            verb.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        args.push(&path);
        let out = neff_p(&args);
        assert_eq!(code(&out), 0, "{verb:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{verb:?}: no warning: {}", String::from_utf8_lossy(&out.stderr));
        if verb == ["load", "--json"] {
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(doc["device_arch"], "sunda");
            assert_eq!(doc["device"]["arch_source"], "neff-target");
            assert_eq!(doc["warnings"], 0);
            let weights = doc["payloads"].as_array().unwrap().iter().filter(|p| p["usage"] == "WEIGHT");
            assert!(weights.clone().all(|p| p["state"] == "placed"));
            assert_eq!(weights.count(), 8);
        }
        if verb == ["check"] {
            assert!(stdout(&out).contains("target \"sunda\", 1 subgraphs") && stdout(&out).ends_with(", 0 warnings\n"));
        }
    }

    // The header, read here: version 1.0, feature_bits 0, lnc_size 1.
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!((u64_at(24), u64_at(32)), (1, 0), "NEFF version 1.0");
    assert_eq!(u64_at(544), 0, "feature_bits");
    assert_eq!(u32::from_le_bytes(bytes[552..556].try_into().unwrap()), 1, "lnc_size");

    // The tar, read with tar + flate2: neff.json is the fifth member, the order byte-wise.
    let members = support::members_of(&bytes);
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..5], ["hlo_stats.json", "info.json", "kelf-0.json", "metrics.json", "neff.json"]);
    assert!(names.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()), "{names:?}");
    let member = |name: &str| &members.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name}")).1;
    let json = |name: &str| -> serde_json::Value { serde_json::from_slice(member(name)).unwrap() };
    assert_eq!(json("kelf-0.json")["target"], "sunda");

    let def = json("sg00/def.json");
    assert!(def.get("runtime_statebuffer_reservation").is_none(), "no carveout on trn1");
    let queue = &def["dma_queue"]["qPoolIO0"];
    assert_eq!(queue["type"], "in");
    assert_eq!(queue["num_queues"], 16);
    assert_eq!(queue["owner"], "pool");
    assert_eq!(queue["fabric_path"], "main");
    assert_eq!(queue["semaphore_set"], serde_json::json!((40..56).collect::<Vec<u32>>()));

    // Every weight is cast (a float32 one copied) to the state buffer on the `in` queue; its
    // from_dtype is its .npy's dtype, its size the var's.
    let pool = json("sg00/Pool.json");
    let block = &pool["dma"][0];
    assert_eq!(block["queue"], "qPoolIO0");
    let descs = block["desc"].as_array().unwrap();
    assert_eq!(descs.len(), 8);
    let mut descrs = std::collections::BTreeSet::new();
    for d in descs {
        let var = &def["var"][d["from"].as_str().unwrap()];
        assert_eq!(var["type"], "file", "{d}");
        let (descr, shape, data) = npy_parts(member(&format!("sg00/{}", var["file_name"].as_str().unwrap())));
        let (dtype, size) = match descr.as_str() {
            "|i1" => ("int8", 1),
            "<f2" => ("float16", 2),
            "<f4" => ("float32", 4),
            "<V2" => ("bfloat16", 2),
            other => panic!("unexpected descr {other}"),
        };
        assert_eq!(d["from_dtype"], dtype, "{d}");
        assert_eq!(d["to_dtype"], "float32", "{d}");
        assert_eq!(d["to"], "SB", "{d}");
        assert_eq!(d["op"], if dtype == "float32" { "copy" } else { "cast" }, "{d}");
        assert_eq!(d["from_sizes"][0], shape[1] * size, "{d}: the innermost size is a row in bytes");
        assert_eq!(var["size"], data.len(), "{d}");
        assert_eq!(data.len() as u64, shape.iter().product::<u64>() * size);
        descrs.insert(descr);
    }
    assert_eq!(
        descrs.into_iter().collect::<Vec<_>>(),
        ["<V2", "<f2", "<f4", "|i1"],
        "int8, fp16, fp32 and bf16 weights"
    );
}

/// The `training` preset has the shape of the big NEFF of a torch-neuronx training cache
/// (neuronx-cc 2.14, trn1): its tar order, a few MB of engine JSON before `def.json`, a 1 MB
/// `def.json`, MB-size debug members nothing reads, the KELF node at index 398 of `neff.json`;
/// every verb accepts it.
#[test]
fn the_training_preset_is_shaped_like_a_training_neff() {
    let (_d, path, info) = accepted("training");
    assert!(info.contains("sunda"), "{info}");
    let members = support::members_of(&std::fs::read(&path).unwrap());
    let size = |name: &str| members.iter().find(|(n, _)| n == name).map(|(_, b)| b.len()).unwrap();
    let position = |name: &str| members.iter().position(|(n, _)| n == name).unwrap();
    // Byte-wise sorted, as the compiler writes it: the debug directory first, `neff.json`
    // before the subgraph, the engine JSONs before `def.json`.
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert_eq!(names[0], "debug_info/debug_info_hlo.dbg_sg000000");
    for engine in ["SP", "Activation", "DVE"] {
        assert!(position(&format!("sg00/{engine}.json")) < position("sg00/def.json"), "{engine}");
    }
    // Sizes in the real one's range: SP.json 2.5 MB, Activation.json 1 MB, def.json 1 MB.
    assert!((1_500_000..3_000_000).contains(&size("sg00/SP.json")), "{}", size("sg00/SP.json"));
    assert!((900_000..1_500_000).contains(&size("sg00/Activation.json")));
    assert!((900_000..1_100_000).contains(&size("sg00/def.json")), "{}", size("sg00/def.json"));
    let json: usize = members.iter().filter(|(n, _)| n.ends_with(".json")).map(|(_, b)| b.len()).sum();
    let debug: usize = members.iter().filter(|(n, _)| n.contains(".dbg")).map(|(_, b)| b.len()).sum();
    assert!((4_000_000..6_000_000).contains(&json), "{json} bytes of JSON");
    assert!((9_000_000..11_000_000).contains(&debug), "{debug} bytes of debug members");
    assert!(size("sg00/debug_info_backend_PE.dbg") > 1_000_000);
    // The DMA descriptors are real ones: the engine JSON parses, and its blocks hold them.
    let sp: serde_json::Value = serde_json::from_slice(&members[position("sg00/SP.json")].1).unwrap();
    let descs: usize = sp["dma"].as_array().unwrap().iter().map(|b| b["desc"].as_array().unwrap().len()).sum();
    assert_eq!(descs, 7000);
    let neff: serde_json::Value = serde_json::from_slice(&members[position("neff.json")].1).unwrap();
    let nodes = neff["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 399);
    assert_eq!(nodes.iter().position(|n| n["op"] == "tvm_op"), Some(398));
}
