//! The built-in sample NEFF: what the binary embeds is what the generator writes, and it is
//! a realistic, self-consistent NEFF.

mod support;

use neff_host::sample::{MemberOrder, SampleBuilder};
use support::*;

fn json(members: &[(String, Vec<u8>)], name: &str) -> serde_json::Value {
    let body = &members.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name}")).1;
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn body<'a>(members: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &members.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name}")).1
}

#[test]
fn the_embedded_sample_is_the_generated_one() {
    assert_eq!(neff_host::SAMPLE_NEFF, SampleBuilder::new().build().unwrap().as_slice());
}

#[test]
fn the_sample_has_the_real_layout_and_order() {
    let members = members_of(neff_host::SAMPLE_NEFF);
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.last(), Some(&"neff.json"));
    let mut sorted = names[..names.len() - 1].to_vec();
    sorted.sort();
    assert_eq!(sorted, names[..names.len() - 1], "byte-wise sorted before neff.json");
    let pos = |n: &str| names.iter().position(|m| *m == n).unwrap_or_else(|| panic!("no {n}"));
    assert!(pos("sg00/PE.bin") < pos("sg00/def.json"), "payloads before def.json");
    for sg in ["sg00", "sg01"] {
        for stem in ["PE", "Activation", "Pool", "DVE", "SP"] {
            let instr = body(&members, &format!("{sg}/{stem}.bin"));
            assert!(!instr.is_empty() && instr.len() % 64 == 0, "{sg}/{stem}.bin");
            let engine = json(&members, &format!("{sg}/{stem}.json"));
            assert_eq!(engine["instr"], format!("{stem}.bin"));
        }
    }
    assert!(names.iter().any(|n| n.starts_with("debug_info/")));
}

#[test]
fn the_sample_manifests_agree_with_each_other() {
    let m = SampleBuilder::new().members().unwrap();
    let neff = json(&m, "neff.json");
    let kelf_node = &neff["nodes"][2];
    assert_eq!(kelf_node["attrs"]["func_name"], "__kelf");
    let kelf_name = kelf_node["attrs"]["kelf"].as_str().unwrap();
    let kelf = json(&m, kelf_name);
    assert_eq!(kelf["target"], "cayman");
    let graphs = kelf["graphs"].as_array().unwrap();
    assert_eq!(graphs.len(), 2, "LNC 2");
    let shapes = neff["attrs"]["shape"][1].as_array().unwrap();
    let row_ptr = neff["node_row_ptr"].as_array().unwrap();
    assert_eq!(row_ptr.len(), neff["nodes"].as_array().unwrap().len() + 1);
    for g in graphs {
        let def_name = g["definition"].as_str().unwrap();
        let dir = def_name.rsplit_once('/').unwrap().0;
        let def = json(&m, def_name);
        let vars = def["var"].as_object().unwrap();
        // Dense var ids, as the runtime requires.
        let mut ids: Vec<u64> = vars.values().map(|v| v["var_id"].as_u64().unwrap()).collect();
        ids.sort();
        assert_eq!(ids, (0..vars.len() as u64).collect::<Vec<_>>());
        // I/O sizes equal product(shape) * 2 (float16) from neff.json.
        for (i, name) in [(0usize, "x"), (1, "y"), (2, "output0")] {
            let elems: u64 = shapes[i].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).product();
            assert_eq!(vars[name]["size"].as_u64().unwrap(), elems * 2, "{dir} {name}");
        }
        // The file var's .npy: v1 header whose shape product matches the var size.
        let (_, file_var) = vars.iter().find(|(_, v)| v["type"] == "file").unwrap();
        let npy = body(&m, &format!("{dir}/{}", file_var["file_name"].as_str().unwrap()));
        assert_eq!(&npy[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([npy[8], npy[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let dict = std::str::from_utf8(&npy[10..10 + header_len]).unwrap();
        assert!(dict.contains("'descr': '<f2'"), "{dict}");
        let shape = dict.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
        let elems: u64 =
            shape.split(',').filter(|s| !s.trim().is_empty()).map(|s| s.trim().parse::<u64>().unwrap()).product();
        assert_eq!(elems * 2, file_var["size"].as_u64().unwrap());
        assert_eq!(npy.len(), 10 + header_len + elems as usize * 2);
        assert!(vars.values().any(|v| v["type"] == "virtual" && v["backing_variable_off"].is_u64()));
        assert_eq!(def["runtime_statebuffer_reservation"][0]["offset"], 229368);
        assert_eq!(def["fp8_conversion_config"]["emax_fp8_e4m3"], 8);
        for (_, q) in def["dma_queue"].as_object().unwrap() {
            assert_eq!(q["semaphore_set"].as_array().unwrap().len() as u64, q["num_queues"].as_u64().unwrap());
        }
        // Every engine the def names exists, with its tables.
        for key in ["pe", "act", "pool", "dve", "sp"] {
            let engine = json(&m, &format!("{dir}/{}", def[key].as_str().unwrap()));
            assert_eq!(format!("{}", engine["instr"].as_str().unwrap()), def[format!("{key}_instr")].as_str().unwrap());
        }
        let act = json(&m, &format!("{dir}/Activation.json"));
        let set = act["activation_function_sets"][0].as_str().unwrap();
        let set_json = json(&m, &format!("{dir}/{set}.json"));
        body(&m, &format!("{dir}/{}", set_json["bkt_bin"].as_str().unwrap()));
        body(&m, &format!("{dir}/{}", set_json["ctl_bin"].as_str().unwrap()));
        json(&m, &format!("{dir}/{}", act["act_info"].as_str().unwrap()));
        let dve = json(&m, &format!("{dir}/DVE.json"));
        for (_, table) in dve["dve_tables"][0].as_object().unwrap() {
            body(&m, &format!("{dir}/{}", table.as_str().unwrap()));
        }
    }
}

#[test]
fn the_builder_knobs_change_what_they_say() {
    let sunda = SampleBuilder::new().target("sunda").members().unwrap();
    assert_eq!(json(&sunda, "kelf-0.json")["target"], "sunda");
    let one = SampleBuilder::new().subgraphs(1);
    assert_eq!(one.header_fields().lnc_size, 1);
    assert!(!one.members().unwrap().iter().any(|(n, _)| n.starts_with("sg01/")));
    let dropped = SampleBuilder::new().drop_member("sg01/def.json").members().unwrap();
    assert!(!dropped.iter().any(|(n, _)| n == "sg01/def.json"));
    let bad =
        SampleBuilder::new().replace_text("sg00/def.json", "\"size\":16384", "\"size\":\"big\"").members().unwrap();
    assert!(String::from_utf8_lossy(body(&bad, "sg00/def.json")).contains("\"size\":\"big\""));
    assert!(SampleBuilder::new().replace_text("sg00/def.json", "no such text", "x").members().is_err());
    assert!(SampleBuilder::new().drop_member("nope.json").members().is_err());
    let first = SampleBuilder::new().order(MemberOrder::ManifestsFirst).members().unwrap();
    assert_eq!(first[0].0, "neff.json");
    assert_eq!(first[1].0, "kelf-0.json");
    let reversed = SampleBuilder::new().order(MemberOrder::Reversed).members().unwrap();
    assert_eq!(reversed[0].0, "neff.json");
    let v1 = SampleBuilder::new().pkg_version(1).build().unwrap();
    assert_eq!(u64::from_le_bytes(v1[..8].try_into().unwrap()), 1);
    assert_eq!(members_of(&v1), members_of(neff_host::SAMPLE_NEFF));
}

#[test]
fn the_sample_walks_through_the_command() {
    let out = neff(&["info"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let expected = members_of(neff_host::SAMPLE_NEFF);
    assert!(text.contains(&format!(", {} members (", expected.len())), "{text}");
    assert!(stderr(&out).is_empty(), "no warnings on the sample: {}", stderr(&out));
}

#[test]
fn the_sample_walks_through_the_core_archive_and_its_hash_verifies() {
    use embedded_io::Read as _;
    use neff::archive::{Archive, OpenOptions};
    use neff::header::{DigestOrder, HashAlgorithm, Integrity};
    // The writer stores MD5 word-swapped, as neuronx-cc 2.18 and later do; SHA-256 as is.
    let cases = [
        (neff_host::SAMPLE_NEFF.to_vec(), HashAlgorithm::Md5, DigestOrder::WordSwapped),
        (SampleBuilder::new().pkg_version(1).build().unwrap(), HashAlgorithm::Sha256, DigestOrder::Plain),
    ];
    for (bytes, algorithm, order) in cases {
        let src: &[u8] = &bytes;
        let mut warnings = Vec::new();
        let mut sink = |w: &neff::Warning| warnings.push(w.to_string());
        let opts = OpenOptions { verify_integrity: true, ..OpenOptions::default() };
        let mut archive: Box<Archive<&[u8]>> =
            Box::new(Archive::open(src, Some(bytes.len() as u64), &opts, &mut sink).unwrap());
        let mut walked = Vec::new();
        while let Some(mut member) = archive.next_member(&mut sink).unwrap() {
            let name = member.name().to_owned();
            let mut body = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = member.read(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
            walked.push((name, body));
        }
        let finish = archive.finish(&mut sink).unwrap();
        assert!(
            matches!(finish.integrity, Integrity::Match { order: o, computed } if o == order && computed.algorithm() == algorithm),
            "the writer's hash is what current compilers write: {:?}",
            finish.integrity
        );
        assert_eq!(walked, members_of(&bytes));
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
