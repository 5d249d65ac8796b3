//! `info`, `check`, `load` and `schema` end to end: on both real NEFFs (expected values
//! computed here from the extracted JSON members and from members read with `tar` + `flate2`,
//! never by calling the crate), on the built-in sample, and on bad variants built with the
//! sample builder's knobs. Every run also asserts the command did not panic (exit 101).

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use std::path::{Path, PathBuf};

use neff_host::sample::{MemberOrder, SampleBuilder};
use serde_json::{json, Value};
use support::*;

const REAL: [&str; 2] = ["matmul_small", "matmul_large"];

fn real(name: &str) -> Option<PathBuf> {
    common::fixture(&format!("public/nkipy/{name}.neff"))
}

fn extracted(name: &str, member: &str) -> Value {
    let path = common::fixture(&format!("public/nkipy/{name}.extracted/{member}")).expect("extracted member");
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ok_json(out: &std::process::Output) -> Value {
    assert_eq!(code(out), 0, "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// `al_hal_tpb_arch_type` of a KELF target, as the contract lists it.
fn arch_value(target: &str) -> Value {
    match target {
        "sunda" | "v2" | "" => json!(2),
        "cayman" | "v3" => json!(3),
        "mariana" | "v4" => json!(4),
        "*" => Value::Null,
        other => panic!("unexpected target {other}"),
    }
}

/// `nrt_dtype_t` and element size of a dltype string (current public `nrt.h`).
fn nrt_dtype(dtype: &str) -> (u64, u64) {
    match dtype {
        "float32" => (10, 4),
        "float16" => (7, 2),
        "bfloat16" => (6, 2),
        "int8" => (2, 1),
        "uint8" => (3, 1),
        "int16" => (4, 2),
        "uint16" => (5, 2),
        "int32" => (8, 4),
        "uint32" => (9, 4),
        "int64" => (12, 8),
        "uint64" => (1, 8),
        _ => (0, 1),
    }
}

/// `kbin_mr_type` of a var type.
fn mr_type(t: &str) -> Value {
    match t {
        "state-buffer" => json!(1),
        "file" => json!(3),
        "tmp-buf" => json!(4),
        "input" => json!(5),
        "output" => json!(6),
        "pointer" => json!(7),
        "virtual" => json!(8),
        _ => Value::Null,
    }
}

/// `kbin_dma_ring_type` of a queue.
fn ring_type(q: &Value) -> Value {
    match q["type"].as_str().unwrap() {
        "in" => json!(7),
        "out" => json!(8),
        "data" if q["indirect_memcpy"] == json!(true) => json!(9),
        "data" => json!(6),
        "act_load" => json!(11),
        "embedding_update" => json!(15),
        _ => Value::Null,
    }
}

fn tensor(neff: &Value, name: &str, eid: usize) -> Value {
    let dtype = neff["attrs"]["dltype"][1][eid].as_str().unwrap();
    let shape: Vec<u64> =
        neff["attrs"]["shape"][1][eid].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    let (nrt, elem) = nrt_dtype(dtype);
    json!({ "name": name, "dtype": dtype, "nrt_dtype": nrt, "shape": shape, "size": shape.iter().product::<u64>() * elem })
}

/// The manifest part of `info --json`, computed from the extracted JSON members (and, for the
/// engine JSONs and instruction sizes, from the tar members).
fn expected_info(name: &str, members: &[(String, Vec<u8>)]) -> Value {
    let neff = extracted(name, "neff.json");
    let nodes = neff["nodes"].as_array().unwrap();
    let row = |n: usize| neff["node_row_ptr"][n].as_u64().unwrap() as usize;
    let kelf_members: Vec<&str> = nodes
        .iter()
        .filter(|n| n["attrs"]["func_name"] == "__kelf")
        .map(|n| n["attrs"]["kelf"].as_str().unwrap())
        .collect();
    let inputs: Vec<Value> = neff["arg_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| {
            let id = id.as_u64().unwrap() as usize;
            tensor(&neff, nodes[id]["name"].as_str().unwrap(), row(id))
        })
        .collect();
    let mut outputs: Vec<Value> = Vec::new();
    for head in neff["heads"].as_array().unwrap() {
        let (id, index) = (head[0].as_u64().unwrap() as usize, head[1].as_u64().unwrap() as usize);
        let name = nodes[id]["output_names"][index].as_str().or(nodes[id]["name"].as_str()).unwrap();
        let t = tensor(&neff, name, row(id) + index);
        match outputs.iter_mut().find(|o| o["name"] == name) {
            Some(first) => *first = t,
            None => outputs.push(t),
        }
    }
    let member = |path: &str| members.iter().find(|(n, _)| n == path).map(|(_, b)| b.as_slice());
    let mut kelf = Vec::new();
    let mut subgraphs = Vec::new();
    for km in &kelf_members {
        let k = extracted(name, km);
        kelf.push(json!({ "member": km, "version": k["version"], "target": k["target"], "arch": arch_value(k["target"].as_str().unwrap()) }));
        for g in k["graphs"].as_array().unwrap() {
            let definition = g["definition"].as_str().unwrap();
            let dir = definition.rsplit_once('/').unwrap().0;
            let def = extracted(name, definition);
            let mut vars: Vec<(&String, &Value)> = def["var"].as_object().unwrap().iter().collect();
            vars.sort_by_key(|(_, v)| v["var_id"].as_u64().unwrap());
            let or_null = |v: &Value| if v.is_null() { Value::Null } else { v.clone() };
            let vars: Vec<Value> = vars
                .iter()
                .map(|(n, v)| {
                    json!({
                        "name": n, "type": v["type"], "mr_type": mr_type(v["type"].as_str().unwrap()), "var_id": v["var_id"],
                        "size": or_null(&v["size"]), "alignment": or_null(&v["alignment"]),
                        "file_name": or_null(&v["file_name"]), "backing_variable_off": or_null(&v["backing_variable_off"]),
                    })
                })
                .collect();
            let mut queues: Vec<(&String, &Value)> =
                def["dma_queue"].as_object().map(|m| m.iter().collect()).unwrap_or_default();
            queues.sort_by(|a, b| a.0.cmp(b.0));
            let queues: Vec<Value> = queues
                .iter()
                .map(|(n, q)| {
                    let semaphores = if q["semaphore_set"].is_array() {
                        q["semaphore_set"].clone()
                    } else if q["semaphore"].is_u64() {
                        json!([q["semaphore"]])
                    } else {
                        json!([])
                    };
                    json!({
                        "name": n, "type": q["type"], "ring_type": ring_type(q), "owner": or_null(&q["owner"]),
                        "num_queues": q["num_queues"].as_u64().unwrap_or(1), "semaphores": semaphores,
                    })
                })
                .collect();
            let mut engines = Vec::new();
            for key in ["pe", "act", "pool", "dve", "sp"] {
                let Some(json_name) = def[key].as_str() else { continue };
                let json_path = format!("{dir}/{json_name}");
                let engine: Value =
                    serde_json::from_slice(member(&json_path).expect("engine JSON in the tar")).unwrap();
                let instr_name = engine["instr"].as_str().or(def[format!("{key}_instr")].as_str()).unwrap();
                let instr = format!("{dir}/{instr_name}");
                let size = member(&instr).expect("instruction stream in the tar").len() as u64;
                engines.push(json!({ "engine": key, "json": json_path, "instr": instr, "instr_size": size, "ninstr": size / 64 }));
            }
            let carveouts: Vec<Value> = def["runtime_statebuffer_reservation"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .map(|c| {
                            let first = if c["base_partition"].is_null() { &c["start_partition"] } else { &c["base_partition"] };
                            let count = if c["partitions"].is_null() { &c["num_partitions"] } else { &c["partitions"] };
                            json!({ "type": c["type"], "offset": c["offset"], "size": c["size"], "start_partition": first, "num_partitions": count })
                        })
                        .collect()
                })
                .unwrap_or_default();
            let f = &def["fp8_conversion_config"];
            let fp8 = if f.is_null() {
                Value::Null
            } else {
                json!({
                    "fp8_range_extension": f["fp8_range_extension"], "emax_fp8_e4m3": f["emax_fp8_e4m3"], "emax_fp8_e5m2": f["emax_fp8_e5m2"],
                    "ocp_sat": f["ocp_sat"], "fp8_sis": f["fp8_sis"], "fp8_sns": f["fp8_sns"],
                })
            };
            subgraphs.push(json!({
                "name": g["name"], "definition": definition, "version": def["version"], "vars": vars,
                "dma_queues": queues, "engines": engines, "carveouts": carveouts, "fp8": fp8,
            }));
        }
    }
    json!({ "kelf": kelf, "inputs": inputs, "outputs": outputs, "subgraphs": subgraphs })
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn info_json_of_the_real_neffs_equals_what_their_members_say() {
    for name in REAL {
        let Some(path) = real(name) else { return };
        let members = members_of(&std::fs::read(&path).unwrap());
        let doc = ok_json(&neff_p(&[&"info", &path, &"--json"]));
        // The contract's five keys in order, then the header hash (not verified: no --verify)
        // and the compiler version.
        assert_eq!(
            keys(&doc),
            ["header", "kelf", "inputs", "outputs", "subgraphs", "hash", "compiler_version"],
            "{name}"
        );
        let bytes = std::fs::read(&path).unwrap();
        let stored: String = bytes[172..188].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            doc["hash"],
            json!({"algorithm": "md5", "stored": stored, "result": "not-requested", "order": null, "computed": null}),
            "{name}"
        );
        let want = expected_info(name, &members);
        for key in ["kelf", "inputs", "outputs"] {
            assert_eq!(doc[key], want[key], "{name}: {key}");
        }
        let (have, want) = (doc["subgraphs"].as_array().unwrap(), want["subgraphs"].as_array().unwrap());
        assert_eq!(have.len(), want.len(), "{name}");
        for (h, w) in have.iter().zip(want) {
            // Field by field, so a failure names the field.
            for key in keys(w) {
                assert_eq!(h[key], w[key], "{name}: {}.{key}", w["name"]);
            }
            assert_eq!(keys(h), ["name", "definition", "version", "vars", "dma_queues", "engines", "carveouts", "fp8"]);
            assert_eq!(
                keys(&h["vars"][0]),
                ["name", "type", "mr_type", "var_id", "size", "alignment", "file_name", "backing_variable_off"]
            );
            assert_eq!(keys(&h["dma_queues"][0]), ["name", "type", "ring_type", "owner", "num_queues", "semaphores"]);
            assert_eq!(keys(&h["engines"][0]), ["engine", "json", "instr", "instr_size", "ninstr"]);
            assert_eq!(keys(&h["carveouts"][0]), ["type", "offset", "size", "start_partition", "num_partitions"]);
            assert_eq!(
                keys(&h["fp8"]),
                ["fp8_range_extension", "emax_fp8_e4m3", "emax_fp8_e5m2", "ocp_sat", "fp8_sis", "fp8_sns"]
            );
        }
    }
}

#[test]
fn info_json_shows_the_values_of_the_format_spec_examples() {
    // §14.1-14.4 and the fixtures' README, written out.
    let Some(small) = real("matmul_small") else { return };
    let doc = ok_json(&neff_p(&[&"info", &small, &"--json"]));
    assert_eq!(doc["kelf"], json!([{ "member": "kelf-0.json", "version": "0.5", "target": "cayman", "arch": 3 }]));
    assert_eq!(
        doc["inputs"][0],
        json!({ "name": "x", "dtype": "float16", "nrt_dtype": 7, "shape": [128, 256], "size": 65536 })
    );
    assert_eq!(doc["inputs"][1]["shape"], json!([256, 128]));
    // Two heads named output0: one output, the later head's values, the first's position.
    assert_eq!(
        doc["outputs"],
        json!([{ "name": "output0", "dtype": "float16", "nrt_dtype": 7, "shape": [128, 128], "size": 32768 }])
    );
    let sg = &doc["subgraphs"][0];
    assert_eq!(
        (sg["name"].as_str(), sg["definition"].as_str(), sg["version"].as_str()),
        (Some("sg00"), Some("sg00/def.json"), Some("0.6"))
    );
    let var = |n: &str| sg["vars"].as_array().unwrap().iter().find(|v| v["name"] == n).unwrap().clone();
    assert_eq!(
        var("SB"),
        json!({ "name": "SB", "type": "state-buffer", "mr_type": 1, "var_id": 0, "size": null, "alignment": null, "file_name": null, "backing_variable_off": null })
    );
    assert_eq!(var("identity_82_sg0000")["file_name"], "value_sg0000_identity_82_CRSM.npy");
    assert_eq!(var("identity_82_sg0000")["alignment"], 32768);
    assert_eq!(var("DGETable0")["mr_type"], Value::Null);
    let ids: Vec<u64> = sg["vars"].as_array().unwrap().iter().map(|v| v["var_id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        sg["dma_queues"][0],
        json!({ "name": "qPoolDynamic", "type": "dynamic", "ring_type": null, "owner": "pool", "num_queues": 16, "semaphores": (24..40).collect::<Vec<u32>>() })
    );
    assert_eq!(sg["dma_queues"][1]["name"], "qSPDynamicHW");
    assert_eq!(
        sg["engines"][0],
        json!({ "engine": "pe", "json": "sg00/PE.json", "instr": "sg00/PE.bin", "instr_size": 768, "ninstr": 12 })
    );
    let engines: Vec<&str> = sg["engines"].as_array().unwrap().iter().map(|e| e["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["pe", "act", "pool", "dve", "sp"]);
    assert_eq!(sg["engines"][1]["json"], "sg00/Activation.json");
    assert_eq!(
        sg["carveouts"],
        json!([{ "type": "evtaccel", "offset": 229368, "size": 8, "start_partition": 0, "num_partitions": 128 }])
    );
    assert_eq!(
        sg["fp8"],
        json!({ "fp8_range_extension": true, "emax_fp8_e4m3": 8, "emax_fp8_e5m2": 15, "ocp_sat": true, "fp8_sis": false, "fp8_sns": false })
    );

    let Some(large) = real("matmul_large") else { return };
    let doc = ok_json(&neff_p(&[&"info", &large, &"--json"]));
    // The 4 GiB input prints as a u64.
    assert_eq!(
        doc["inputs"][1],
        json!({ "name": "y", "dtype": "float16", "nrt_dtype": 7, "shape": [32768, 65536], "size": 4294967296u64 })
    );
    let sg = &doc["subgraphs"][0];
    let virtuals: Vec<&Value> = sg["vars"].as_array().unwrap().iter().filter(|v| v["type"] == "virtual").collect();
    assert_eq!(virtuals.len(), 16);
    assert!(virtuals.iter().all(|v| v["mr_type"] == 8 && v["backing_variable_off"].is_u64()));
    let spill = virtuals.iter().find(|v| v["name"] == "-t125_i0_RematSpillSave0_sg0000").unwrap();
    assert_eq!((spill["backing_variable_off"].as_u64(), spill["size"].as_u64()), (Some(7864320), Some(524288)));
    let act = sg["dma_queues"].as_array().unwrap().iter().find(|q| q["name"] == "qActDynamicHW").unwrap();
    assert_eq!(act["owner"], "act");
    assert_eq!(act["semaphores"], json!((40..56).collect::<Vec<u32>>()));
    assert_eq!(sg["engines"][0]["instr_size"], 1_361_216);
}

#[test]
fn info_json_of_the_sample_describes_what_the_builder_wrote() {
    let doc = ok_json(&neff(&["info", "--json"]));
    assert_eq!(doc["kelf"][0]["target"], "cayman");
    assert_eq!(doc["inputs"].as_array().unwrap().len(), 2);
    assert_eq!(doc["outputs"][0]["shape"], json!([64, 64]));
    assert_eq!(doc["subgraphs"].as_array().unwrap().len(), 2);
    assert_eq!(doc["subgraphs"][1]["engines"][4]["instr_size"], 192);
    // Targets print as written, with their arch value; "*" has none.
    for (target, arch) in [("v3", json!(3)), ("*", Value::Null), ("", json!(2))] {
        let f = write_temp(&SampleBuilder::new().target(target).build().unwrap());
        let doc = ok_json(&neff_p(&[&"info", &f.path(), &"--json"]));
        assert_eq!(doc["kelf"][0]["target"], target);
        assert_eq!(doc["kelf"][0]["arch"], arch, "{target:?}");
    }
    // Without neff.json the KELF is found by name, and there are no I/O tensors.
    let f = write_temp(&SampleBuilder::new().drop_member("neff.json").build().unwrap());
    let out = neff_p(&[&"info", &f.path(), &"--json"]);
    assert!(stderr(&out).contains("warning: kelf-0.json: no neff.json"), "{}", stderr(&out));
    let doc = ok_json(&out);
    assert_eq!(doc["kelf"][0]["member"], "kelf-0.json");
    assert_eq!((doc["inputs"].clone(), doc["outputs"].clone()), (json!([]), json!([])));
    assert_eq!(doc["subgraphs"].as_array().unwrap().len(), 2);
}

#[test]
fn info_does_not_depend_on_the_member_order() {
    let base = ok_json(&neff(&["info", "--json"]));
    for order in [MemberOrder::ManifestsFirst, MemberOrder::Reversed] {
        let f = write_temp(&SampleBuilder::new().order(order).build().unwrap());
        let doc = ok_json(&neff_p(&[&"info", &f.path(), &"--json"]));
        for key in ["kelf", "inputs", "outputs", "subgraphs"] {
            assert_eq!(doc[key], base[key], "{order:?}: {key}");
        }
    }
}

#[test]
fn check_accepts_the_real_neffs_and_the_sample() {
    for name in REAL {
        let Some(path) = real(name) else { return };
        let out = neff_p(&[&"check", &path, &"--arch", &"cayman"]);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        let line = stdout(&out);
        assert_eq!(line.lines().count(), 1, "{line}");
        let members = members_of(&std::fs::read(&path).unwrap());
        let want = format!(
            "ok: {}: target \"cayman\", runs on cayman, 2 subgraphs, {} members: 18 manifests, 24 payloads (",
            path.display(),
            members.len()
        );
        assert!(line.starts_with(&want), "{line}");
        assert!(line.trim_end().ends_with(", 0 warnings"), "{line}");
        assert!(out.stderr.is_empty(), "{}", stderr(&out));
    }
    let f = write_temp(neff_host::SAMPLE_NEFF);
    let out = neff_p(&[&"check", &f.path()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("24 payloads (81536 bytes)"), "{}", stdout(&out));
}

/// `check` (and `load`) of a sample variant: the error line.
fn rejected(builder: SampleBuilder, args: &[&str]) -> (String, String) {
    let f = write_temp(&builder.build().unwrap());
    let path = f.path().to_path_buf();
    let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&args[0], &path];
    for a in &args[1..] {
        all.push(a);
    }
    let out = neff_p(&all);
    let line = assert_one_line_error(&out, 1);
    assert!(out.stdout.is_empty(), "a rejection prints nothing on stdout: {}", stdout(&out));
    (line, stderr(&out))
}

#[test]
fn check_applies_the_arch_gate_only_when_asked() {
    let Some(small) = real("matmul_small") else { return };
    let out = neff_p(&[&"check", &small, &"--arch", &"sunda"]);
    let line = assert_one_line_error(&out, 1);
    assert_eq!(line, "error: kelf-0.json: target: Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v3, instance arch: v2");
    assert!(stderr(&out).contains("hint: the KELF target must match the device arch"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--allow-legacy accepts a NEFF for an older arch (NEURON_RT_ALLOW_LEGACY_NEFF=1)"),
        "{}",
        stderr(&out)
    );

    // A sunda NEFF: fine without --arch, refused on cayman, accepted there with --allow-legacy.
    let sunda = || SampleBuilder::new().target("sunda");
    let f = write_temp(&sunda().build().unwrap());
    assert_eq!(code(&neff_p(&[&"check", &f.path()])), 0);
    let (line, _) = rejected(sunda(), &["check", "--arch", "v3"]);
    assert!(line.ends_with("NEFF arch: v2, instance arch: v3"), "{line}");
    assert_eq!(code(&neff_p(&[&"check", &f.path(), &"--arch", &"cayman", &"--allow-legacy"])), 0);
    // A newer NEFF stays refused with --allow-legacy.
    let (line, _) = rejected(SampleBuilder::new().target("mariana"), &["check", "--arch", "cayman", "--allow-legacy"]);
    assert!(line.ends_with("NEFF arch: v4, instance arch: v3"), "{line}");
}

#[test]
fn check_names_the_missing_member_and_who_names_it() {
    let (line, _) = rejected(SampleBuilder::new().drop_member("sg01/Pool.bin"), &["check"]);
    assert_eq!(line, "error: sg01/Pool.json: instr: member sg01/Pool.bin is missing from the archive");
    let (line, _) = rejected(SampleBuilder::new().drop_member("sg01/def.json"), &["check"]);
    assert_eq!(line, "error: kelf-0.json: graphs[1].definition: member sg01/def.json is missing from the archive");
    let (line, _) = rejected(SampleBuilder::new().drop_member("sg00/value_sg0000_identity_7_CRSM.npy"), &["check"]);
    assert_eq!(
        line,
        "error: sg00/def.json: var.identity_7_sg0000.file_name: member sg00/value_sg0000_identity_7_CRSM.npy is missing from the archive"
    );
}

#[test]
fn a_missing_member_is_named_whole_and_its_reference_with_its_index() {
    // A 42-byte name the archive lacks: the core's error keeps 40 bytes of the member, and the
    // line gives it whole, with the var that names it.
    let long = format!("weight_{}.npy", "q".repeat(31));
    assert_eq!(long.len(), 42);
    let weight = "value_sg0000_identity_7_CRSM.npy";
    let renamed =
        || SampleBuilder::new().replace_text("sg00/def.json", weight, &long).drop_member(&format!("sg00/{weight}"));
    let (line, _) = rejected(renamed(), &["check"]);
    assert_eq!(
        line,
        format!(
            "error: sg00/def.json: var.identity_7_sg0000.file_name: member sg00/{long} is missing from the archive"
        )
    );
    // The same through `load` (the device path reports the same refusal).
    let (line, _) = rejected(renamed(), &["load", "--digest-only"]);
    assert!(
        line.ends_with(&format!("var.identity_7_sg0000.file_name: member sg00/{long} is missing from the archive")),
        "{line}"
    );
    // neff.json's KELF node: its index among the nodes.
    let f = write_temp(&SampleBuilder::new().replace_text("neff.json", "kelf-0.json", "kelf-7.json").build().unwrap());
    let out = neff_p(&[&"check", &f.path()]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_default();
    assert_eq!(line, "error: neff.json: nodes[2].attrs.kelf: member kelf-7.json is missing from the archive");
}

/// A generated long name part (`len` bytes or a few more), sometimes with characters beyond
/// ASCII and ones a shell or a tar name treats specially (none that JSON escapes: the sample's
/// text is edited in place).
fn long_part(rng: &mut common::Rng, len: usize) -> String {
    const PLAIN: &[char] = &['a', 'b', 'c', 'd', 'e', 'f', '0', '1', '7', '9', '_', '-', '.'];
    const EXOTIC: &[char] = &[' ', '+', '#', '~', 'é', 'Ω', '名'];
    let exotic = rng.below(3) == 0;
    let mut s = String::from("dangling_");
    while s.len() < len {
        s.push(if exotic && rng.below(8) == 0 {
            EXOTIC[rng.below(EXOTIC.len())]
        } else {
            PLAIN[rng.below(PLAIN.len())]
        });
    }
    s
}

#[test]
fn generated_long_names_in_dangling_references_are_printed_whole() {
    // Every kind of reference the chain follows, made dangling with a generated name of 42 to
    // 200 bytes (at times below a directory of its own): the core's error keeps 40 bytes of
    // the missing name, and `check` on a file prints it whole, with the key path's indices.
    let mut rng = common::Rng(0x6e65_6666);
    let mut kinds = std::collections::BTreeSet::new();
    for case in 0..16u64 {
        let sg = (case / 8 % 2) as usize;
        let dir = format!("sg{sg:02}");
        let len = 42 + (case as usize * 37) % 159;
        let mut part = long_part(&mut rng, len);
        if case % 5 == 4 {
            part = format!("w{case}/{part}");
        }
        // (manifest, text it holds, text replacing it, member dropped, key path, missing member)
        let (by, from, to, drop, key_path, missing) = match case % 8 {
            0 => (
                "neff.json".to_string(),
                "\"kelf\":\"kelf-0.json\"".to_string(),
                format!("\"kelf\":\"{part}\""),
                "kelf-0.json".to_string(),
                "nodes[2].attrs.kelf".to_string(),
                part.clone(),
            ),
            1 => (
                "kelf-0.json".into(),
                format!("{dir}/def.json"),
                format!("{dir}/{part}"),
                format!("{dir}/def.json"),
                format!("graphs[{sg}].definition"),
                format!("{dir}/{part}"),
            ),
            2 => (
                format!("{dir}/def.json"),
                format!("value_sg{sg:02}00_identity_7_CRSM.npy"),
                part.clone(),
                format!("{dir}/value_sg{sg:02}00_identity_7_CRSM.npy"),
                format!("var.identity_7_sg{sg:02}00.file_name"),
                format!("{dir}/{part}"),
            ),
            3 => (
                format!("{dir}/def.json"),
                "\"pool\":\"Pool.json\"".into(),
                format!("\"pool\":\"{part}\""),
                format!("{dir}/Pool.json"),
                "pool".into(),
                format!("{dir}/{part}"),
            ),
            4 => (
                format!("{dir}/Activation.json"),
                "[\"exp_and_others\"]".into(),
                format!("[\"{part}\"]"),
                format!("{dir}/exp_and_others.json"),
                "activation_function_sets[0]".into(),
                format!("{dir}/{part}.json"),
            ),
            5 => (
                format!("{dir}/exp_and_others.json"),
                "exp_and_others_bkt.bin".into(),
                part.clone(),
                format!("{dir}/exp_and_others_bkt.bin"),
                "bkt_bin".into(),
                format!("{dir}/{part}"),
            ),
            6 => (
                format!("{dir}/DVE.json"),
                "default_datapath_table.bin".into(),
                part.clone(),
                format!("{dir}/default_datapath_table.bin"),
                "dve_tables[0].datapath_table".into(),
                format!("{dir}/{part}"),
            ),
            _ => (
                format!("{dir}/exp_and_others.json"),
                "exp_and_others_ctrl.bin".into(),
                part.clone(),
                format!("{dir}/exp_and_others_ctrl.bin"),
                "ctl_bin".into(),
                format!("{dir}/{part}"),
            ),
        };
        assert!(missing.len() > 40, "case {case}: the core keeps 40 bytes of a missing name");
        kinds.insert(key_path.clone());
        let builder = SampleBuilder::new().replace_text(&by, &from, &to).drop_member(&drop);
        let (line, _) = rejected(builder, &["check"]);
        assert_eq!(
            line,
            format!("error: {by}: {key_path}: member {missing} is missing from the archive"),
            "case {case} ({} bytes)",
            missing.len()
        );
    }
    // Eight kinds of reference, two of them with an index that follows the subgraph.
    assert_eq!(kinds.len(), 10, "{kinds:?}");
}

#[test]
fn an_engine_below_its_definition_names_its_missing_member_whole() {
    // `sg00/x/DVE.json` names its tables from the definition's directory `sg00` (spec §4), so
    // the whole name is `sg00/<table>`, not `sg00/x/<table>` (which ends as the error's text does).
    let table = format!("datapath_{}.bin", "t".repeat(60));
    let dve = SampleBuilder::new().members().unwrap().into_iter().find(|(n, _)| n == "sg00/DVE.json").unwrap().1;
    let dve = String::from_utf8(dve).unwrap().replace("default_datapath_table.bin", &table);
    let builder = SampleBuilder::new()
        .replace_text("sg00/def.json", "\"dve\":\"DVE.json\"", "\"dve\":\"x/DVE.json\"")
        .drop_member("sg00/DVE.json")
        .add_member("sg00/x/DVE.json", dve.as_bytes())
        .drop_member("sg00/default_datapath_table.bin");
    let (line, _) = rejected(builder, &["check"]);
    assert_eq!(
        line,
        format!(
            "error: sg00/x/DVE.json: dve_tables[0].datapath_table: member sg00/{table} is missing from the archive"
        )
    );
}

#[test]
fn check_gives_key_path_and_byte_of_a_bad_value() {
    let bad = SampleBuilder::new().replace_text("sg00/def.json", "\"size\":16384", "\"size\":\"big\"");
    let (line, _) = rejected(bad, &["check"]);
    assert!(
        line.starts_with(
            "error: sg00/def.json: var.spill0_sg0000.size: expected an unsigned integer, found string (byte "
        ),
        "{line}"
    );
    let offset: u64 = line.rsplit_once("(byte ").unwrap().1.trim_end_matches(')').parse().unwrap();
    let def = SampleBuilder::new().members().unwrap().into_iter().find(|(n, _)| n == "sg00/def.json").unwrap().1;
    let at = String::from_utf8(def).unwrap().find("\"size\":16384").unwrap() as u64 + "\"size\":".len() as u64;
    assert_eq!(offset, at, "the byte offset is the value's position in the member");
}

#[test]
fn check_applies_the_cayman_carveout_rule_with_the_arch() {
    let no_carveout = || {
        SampleBuilder::new().replace_text(
            "sg00/def.json",
            "\"runtime_statebuffer_reservation\"",
            "\"runtime_statebuffer_reservation_x\"",
        )
    };
    let f = write_temp(&no_carveout().build().unwrap());
    // §15.19: the rule follows the KELF target (cayman), with or without --arch.
    for args in [&["check"][..], &["check", "--arch", "cayman"][..]] {
        let (line, all) = rejected(no_carveout(), args);
        assert!(
            line.starts_with(
                "error: sg00/def.json: runtime_statebuffer_reservation: Missing or corrupted runtime_statebuffer_reservation field"
            ),
            "{line}"
        );
        assert!(all.contains("hint: --allow-legacy"), "{all}");
    }
    let (line, all) = rejected(no_carveout(), &["check", "--arch", "cayman"]);
    assert!(line.contains("Missing or corrupted runtime_statebuffer_reservation field"), "{line}");
    assert!(all.contains("hint: --allow-legacy"), "{all}");
    assert_eq!(code(&neff_p(&[&"check", &f.path(), &"--arch", &"cayman", &"--allow-legacy"])), 0);
}

#[test]
fn check_and_load_reject_a_bad_header_and_a_damaged_archive() {
    let mut bytes = SampleBuilder::new().build().unwrap();
    bytes[..8].copy_from_slice(&7u64.to_le_bytes());
    let f = write_temp(&bytes);
    for verb in ["check", "load", "info"] {
        let line = assert_one_line_error(&neff_p(&[&verb, &f.path()]), 1);
        assert_eq!(line, "error: header: Unsupported NEFF packager: 7 (byte 0)", "{verb}");
    }
    let mut bytes = SampleBuilder::new().build().unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 32] {
        *b ^= 0xa5;
    }
    let f = write_temp(&bytes);
    for verb in ["check", "load", "info"] {
        assert_one_line_error(&neff_p(&[&verb, &f.path()]), 1);
    }
}

/// `(member, usage, len, digest)` of every placed payload of a `load --json` report.
fn placed(doc: &Value) -> Vec<(String, String, u64, String)> {
    doc["payloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["state"], "placed", "{p}");
            (
                p["member"].as_str().unwrap().to_owned(),
                p["usage"].as_str().unwrap().to_owned(),
                p["len"].as_u64().unwrap(),
                p["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn assert_digests_match_the_members(doc: &Value, members: &[(String, Vec<u8>)], what: &str) {
    let list = placed(doc);
    assert!(!list.is_empty(), "{what}");
    for (member, _, len, digest) in &list {
        let body = &members.iter().find(|(n, _)| n == member).unwrap_or_else(|| panic!("{what}: no member {member}")).1;
        let data = if member.ends_with(".npy") { common::neff::npy_data(body) } else { body.as_slice() };
        assert_eq!(*len, data.len() as u64, "{what}: {member}");
        assert_eq!(*digest, format!("{:016x}", neff::digest::digest64(data)), "{what}: {member}");
    }
}

#[test]
fn load_json_digests_are_those_of_the_members() {
    for name in REAL {
        let Some(path) = real(name) else { return };
        let members = members_of(&std::fs::read(&path).unwrap());
        let out = neff_p(&[&"load", &path, &"--json"]);
        assert!(out.stderr.is_empty(), "{name}: {}", stderr(&out));
        let doc = ok_json(&out);
        assert_digests_match_the_members(&doc, &members, name);
        assert_eq!(doc["device_arch"], "cayman");
        assert_eq!(doc["device"]["arch"], "cayman");
        assert_eq!(doc["device"]["arch_source"], "neff-target", "{name}: no --arch, the NEFF's own target");
        assert_eq!(doc["device"]["mode"], "memory");
        assert_eq!(doc["device"]["capacity"], 64u64 << 20);
        assert_eq!(doc["device"]["live_regions"], 24);
        assert_eq!(doc["released"], 0);
        assert_eq!(doc["warnings"], 0);
        assert!(doc["time_ms"].as_f64().unwrap() >= 0.0);
        let total: u64 = placed(&doc).iter().map(|p| p.2).sum();
        assert_eq!(doc["bytes_placed"], total);
        assert_eq!(
            doc["device"]["live_bytes"].as_u64().unwrap(),
            total,
            "{name}: no padding between classes is counted"
        );
        // Per subgraph: five instruction streams, four DVE tables, two activation tables, one weight.
        for sg in doc["subgraphs"].as_array().unwrap() {
            assert_eq!(sg["allocations"], 12);
            assert_eq!(sg["bytes_by_usage"]["WEIGHT"], 32768);
        }
    }
}

#[test]
fn load_digest_only_gives_the_same_report_without_the_bytes() {
    for name in REAL {
        let Some(path) = real(name) else { return };
        let memory = ok_json(&neff_p(&[&"load", &path, &"--json"]));
        let digest_only = ok_json(&neff_p(&[&"load", &path, &"--json", &"--digest-only"]));
        assert_eq!(digest_only["device"]["mode"], "digest-only");
        assert_eq!(digest_only["device"]["capacity"], 64u64 << 30);
        assert_eq!(placed(&digest_only), placed(&memory), "{name}");
        assert_eq!(digest_only["subgraphs"], memory["subgraphs"], "{name}");
    }
}

#[test]
fn load_of_the_sample_is_clean_and_human_readable() {
    let members = members_of(neff_host::SAMPLE_NEFF);
    let out = neff(&["load", "--json"]);
    assert!(out.stderr.is_empty(), "the sample loads without a warning: {}", stderr(&out));
    let doc = ok_json(&out);
    assert_digests_match_the_members(&doc, &members, "sample");
    assert_eq!(placed(&doc).len(), 24);
    assert_eq!(doc["target"], "cayman");

    let out = neff(&["load"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("loaded built-in sample NEFF into a simulated cayman device (memory, 64 MiB) in "),
        "{text}"
    );
    assert_eq!(text.lines().nth(1), Some("device: cayman (the NEFF's target; --arch pins one)"), "{text}");
    assert!(text.contains("\nsg01 (core 1): 12 allocations, 40768 bytes\n"), "{text}");
    for (member, usage, len, digest) in placed(&doc) {
        let line = text
            .lines()
            .find(|l| l.ends_with(&format!("  {member}")))
            .unwrap_or_else(|| panic!("no line for {member}"));
        assert!(line.contains(&usage) && line.contains(&digest) && line.contains(&format!(" {len} ")), "{line}");
    }
}

#[test]
fn load_refuses_a_wrong_arch_and_a_device_too_small() {
    let (line, _) = rejected(SampleBuilder::new(), &["load", "--arch", "mariana"]);
    assert!(line.ends_with("NEFF arch: v3, instance arch: v4"), "{line}");
    let f = write_temp(&SampleBuilder::new().target("mariana").build().unwrap());
    let doc = ok_json(&neff_p(&[&"load", &f.path(), &"--arch", &"v4", &"--json"]));
    assert_eq!(doc["device_arch"], "mariana");

    let Some(large) = real("matmul_large") else { return };
    let out = neff_p(&[&"load", &large, &"--device-mem", &"1M"]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.starts_with("error: sg00/PE.bin: device out of memory: requested 1361216 bytes"), "{line}");
    assert!(stderr(&out).contains("hint: the simulated device is too small"), "{}", stderr(&out));
}

/// `load` on `builder`'s NEFF with `args`: the JSON report and the human one.
fn load_both_ways(builder: &SampleBuilder, args: &[&str]) -> (Value, String) {
    let f = write_temp(&builder.build().unwrap());
    let path = f.path().to_path_buf();
    let run = |json: bool| {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"load", &path];
        for a in args {
            all.push(a);
        }
        if json {
            all.push(&"--json");
        }
        let out = neff_p(&all);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: no warning: {}", stderr(&out));
        out
    };
    let doc = ok_json(&run(true));
    (doc, stdout(&run(false)))
}

#[test]
fn load_without_arch_simulates_the_neffs_own_target() {
    // The KELF target arrives mid-stream: before the def.jsons in the real order (neff.json
    // last), after everything in the reversed one (neff.json first, kelf-0.json last). Either
    // way the device takes it before it binds, and says so.
    for order in [MemberOrder::Real, MemberOrder::Reversed, MemberOrder::ManifestsFirst] {
        for (target, arch) in [("sunda", "sunda"), ("v2", "sunda"), ("cayman", "cayman"), ("v4", "mariana")] {
            let what = format!("{target} {order:?}");
            let (doc, text) = load_both_ways(&SampleBuilder::new().target(target).order(order), &[]);
            assert_eq!(doc["device_arch"], arch, "{what}");
            assert_eq!(doc["device"]["arch"], arch, "{what}");
            assert_eq!(doc["device"]["arch_source"], "neff-target", "{what}");
            assert_eq!(placed(&doc).len(), 24, "{what}: every payload placed");
            let first = format!("into a simulated {arch} device (memory, 64 MiB) in ");
            assert!(text.lines().next().unwrap().contains(&first), "{what}: {text}");
            let device = format!("device: {arch} (the NEFF's target; --arch pins one)");
            assert_eq!(text.lines().nth(1), Some(device.as_str()), "{what}: {text}");
        }
    }
    // `--arch` pins the device, and says so; the gate then applies.
    let (doc, text) = load_both_ways(&SampleBuilder::new().target("sunda"), &["--arch", "v2"]);
    assert_eq!((&doc["device_arch"], &doc["device"]["arch_source"]), (&json!("sunda"), &json!("--arch")));
    assert_eq!(text.lines().nth(1), Some("device: sunda (--arch)"), "{text}");
    let (line, _) = rejected(SampleBuilder::new().target("sunda"), &["load", "--arch", "cayman"]);
    assert!(line.ends_with("NEFF arch: v2, instance arch: v3"), "{line}");
}

#[test]
fn load_of_a_target_any_neff_keeps_the_default_cayman_and_its_rules() {
    let any = || SampleBuilder::new().target("*");
    let (doc, text) = load_both_ways(&any(), &[]);
    assert_eq!(doc["device_arch"], "cayman");
    assert_eq!(doc["device"]["arch_source"], "default");
    assert_eq!(doc["target"], "*");
    assert_eq!(
        text.lines().nth(1),
        Some("device: cayman (the default: the NEFF's target is \"*\"; --arch pins one)"),
        "{text}"
    );
    // `*` takes the device's rules (§15.19): without the carveout, the default cayman device
    // refuses it, as a pinned cayman does; a pinned sunda takes it.
    let bare = || any().replace_text("sg00/def.json", "\"runtime_statebuffer_reservation\"", "\"reservation_x\"");
    for args in [&["load"][..], &["load", "--arch", "cayman"][..]] {
        let (line, _) = rejected(bare(), args);
        assert!(line.contains("Missing or corrupted runtime_statebuffer_reservation field"), "{args:?}: {line}");
    }
    let (doc, _) = load_both_ways(&bare(), &["--arch", "sunda", "--digest-only"]);
    assert_eq!(doc["device_arch"], "sunda");
    // A sunda NEFF without the carveout loads on its own target: the cayman rules are not its.
    let sunda_bare = SampleBuilder::new().target("sunda").replace_text(
        "sg00/def.json",
        "\"runtime_statebuffer_reservation\"",
        "\"x\"",
    );
    let (doc, _) = load_both_ways(&sunda_bare, &[]);
    assert_eq!(doc["device_arch"], "sunda");
}

#[test]
fn load_warnings_go_to_stderr_and_keep_exit_0() {
    let odd = SampleBuilder::new().replace_member("sg00/SP.bin", &[0x60; 200]);
    let f = write_temp(&odd.build().unwrap());
    let out = neff_p(&[&"load", &f.path(), &"--json"]);
    let doc = ok_json(&out);
    assert_eq!(doc["warnings"], 1);
    assert_eq!(stderr(&out), "warning: sg00/SP.bin: instruction stream of 200 bytes is not a multiple of 64\n");
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..").join(rel)
}

#[test]
fn schema_prints_the_checked_in_schema_readme() {
    let out = neff(&["schema"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let readme = std::fs::read_to_string(repo_file("schema/README.md")).unwrap();
    assert!(stdout(&out) == readme, "`neff schema` differs from schema/README.md");
    assert_eq!(stdout(&neff(&["schema", "--format", "markdown"])), readme);
}

#[test]
fn schema_json_is_one_record_per_consumed_key() {
    let doc = ok_json(&neff(&["schema", "--format", "json"]));
    let records = doc.as_array().unwrap();
    assert_eq!(records.len(), neff::manifest::CONSUMED_KEYS.len());
    for (r, k) in records.iter().zip(neff::manifest::CONSUMED_KEYS) {
        assert_eq!(
            (r["tier"].as_str(), r["path"].as_str(), r["field"].as_str()),
            (Some(k.tier), Some(k.path), Some(k.field))
        );
        assert_eq!(r["required"], k.required);
    }
    assert_eq!(
        keys(&records[0]),
        ["tier", "path", "aliases", "json_type", "required", "default", "field", "map", "missing", "doc", "notes"]
    );
    let carve = records.iter().find(|r| r["path"] == "runtime_statebuffer_reservation[].base_partition").unwrap();
    assert_eq!(carve["aliases"], json!(["start_partition"]));
    let num_queues = records.iter().find(|r| r["path"] == "dma_queue.<name>.num_queues").unwrap();
    assert_eq!(num_queues["default"], "1");
}

#[test]
fn info_lists_a_q7_engine_after_the_tpb_engines() {
    let Some(small) = real("matmul_small") else { return };
    let mut members = members_of(&std::fs::read(small).unwrap());
    let def = members.iter_mut().find(|(n, _)| n == "sg00/def.json").unwrap();
    let text = String::from_utf8(def.1.clone()).unwrap();
    def.1 = text.replacen("\"pe\":", "\"q7\": \"Q7.json\", \"q7_instr\": \"Q7.bin\", \"pe\":", 1).into_bytes();
    members.push(("sg00/Q7.json".into(), br#"{"dma":[],"instr":"Q7.bin","name":"Q7.json"}"#.to_vec()));
    members.push(("sg00/Q7.bin".into(), vec![0x5a; 128]));
    let fields = neff_host::writer::HeaderFields::new("file.neff", [7; 16], 2);
    let f = write_temp(&neff_host::writer::neff_bytes(&fields, &members).unwrap());
    let doc = ok_json(&neff_p(&[&"info", &f.path(), &"--json"]));
    let sg = &doc["subgraphs"][0];
    let engines: Vec<&str> = sg["engines"].as_array().unwrap().iter().map(|e| e["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["pe", "act", "pool", "dve", "sp", "q7"]);
    assert_eq!(
        sg["engines"][5],
        json!({ "engine": "q7", "json": "sg00/Q7.json", "instr": "sg00/Q7.bin", "instr_size": 128, "ninstr": 2 })
    );
    assert_eq!(doc["subgraphs"][1]["engines"].as_array().unwrap().len(), 5, "sg01 names no q7");
}
