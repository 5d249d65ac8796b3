//! Each check of the manifest layer on a failing document, with the runtime's message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, clippy::result_large_err)]
mod common;

use common::docs::{neff_io, parse, parse_chunked, IoAndKelfs, Parsed};
use neff::manifest::{Arch, DefJson, DescOp, EngineJson, Kelf, ManifestError, ManifestWarning, TargetCheck};
use neff::{Error, ErrorKind, Warning, WarningKind};

fn neff(doc: &str) -> (Result<IoAndKelfs, Error>, Vec<Warning>) {
    neff_io(doc.as_bytes())
}
fn kelf(doc: &str) -> Result<Kelf, Error> {
    parse::<Kelf>(doc.as_bytes(), "kelf-0.json").map(|p| p.doc)
}
fn def(doc: &str) -> (Result<Parsed<DefJson>, Error>, Vec<Warning>) {
    match parse::<DefJson>(doc.as_bytes(), "sg00/def.json") {
        Ok(p) => {
            let w = p.warnings.clone();
            (Ok(p), w)
        }
        Err(e) => (Err(e), Vec::new()),
    }
}
fn engine(doc: &str) -> Result<EngineJson, Error> {
    parse::<EngineJson>(doc.as_bytes(), "sg00/PE.json").map(|p| p.doc)
}

/// `key.path: message` of an error.
fn msg(e: &Error) -> String {
    format!("{}: {}", e.key_path, e.kind)
}

const NEFF: &str = r#"{"nodes":[{"op":"null","name":"x"},{"op":"tvm_op","name":"k","attrs":{"func_name":"__kelf","kelf":"kelf-0.json"},"output_names":["o"]}],"arg_nodes":[0],"heads":[[1,0,0]],"node_row_ptr":[0,1,2],"attrs":{"dltype":["list_str",["float32","DTYPE"]],"shape":["list_shape",[[2],[3]]]}}"#;

#[test]
fn neff_json_checks() {
    let (ok, w) = neff(NEFF);
    ok.unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].to_string(), "neff.json: attrs.dltype: Unknown dtype: DTYPE, defaulting to UNKNOWN");

    let e = neff(&NEFF.replace(r#""arg_nodes":[0],"#, "")).0.unwrap_err();
    assert_eq!(msg(&e), "arg_nodes: Missing required fields in NEFF JSON");
    assert_eq!(e.status(), neff::Status::Invalid);
    // Each refusal seed §3 names has a code of its own (not 901, 902 or 904, which others share).
    assert_eq!(
        (e.kind.code(), e.kind),
        (949, ErrorKind::Manifest(ManifestError::MissingRequiredFields { key: "arg_nodes" }))
    );
    let e = neff(&NEFF.replace(r#","attrs":{"dltype""#, r#","other":{"dltype""#)).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("attrs: Missing required fields in NEFF JSON", 949));
    let e = neff(&NEFF.replace(r#""dltype":["list_str",["float32","DTYPE"]],"#, "")).0.unwrap_err();
    assert_eq!(msg(&e), "attrs.dltype: Missing dltype or shape in attrs");
    assert_eq!(
        (e.kind.code(), e.kind),
        (950, ErrorKind::Manifest(ManifestError::MissingDltypeOrShape { key: "dltype" }))
    );
    let e = neff(&NEFF.replace(r#","shape":["list_shape",[[2],[3]]]"#, "")).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("attrs.shape: Missing dltype or shape in attrs", 950));
    let e = neff(&NEFF.replace(r#"["list_str","#, r#"["list_int","#)).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("attrs.dltype: Invalid dltype data format", 951));
    let e = neff(&NEFF.replace(r#"["list_shape",[[2],[3]]]"#, r#"{"a":1}"#)).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("attrs.shape: Invalid shape data format", 952));
    let e = neff(&NEFF.replace(r#""heads":[[1,0,0]]"#, r#""heads":[[9,0,0]]"#)).0.unwrap_err();
    assert_eq!(msg(&e), "heads[0]: Output node ID 9 out of bounds");
    let e = neff(&NEFF.replace(r#""heads":[[1,0,0]]"#, r#""heads":[[1,4,0]]"#)).0.unwrap_err();
    assert_eq!(msg(&e), "heads[0]: EID 5 out of bounds for dtypes/shapes");
    let dims33 = format!("[{}]", ["1"; 33].join(","));
    let e = neff(&NEFF.replace("[[2],[3]]", &format!("[{dims33},[3]]"))).0.unwrap_err();
    assert_eq!(msg(&e), "attrs.shape[1][0]: Too many dimensions (33)");
    // The runtime's own limit, 32 dimensions, is accepted.
    let dims32 = format!("[{}]", ["1"; 32].join(","));
    let (io, _) = neff(&NEFF.replace("[[2],[3]]", &format!("[{dims32},[3]]"))).0.unwrap();
    assert_eq!(io[0].shape.len(), 32);
    let e = neff(&NEFF.replace(r#","kelf":"kelf-0.json""#, "")).0.unwrap_err();
    assert_eq!(msg(&e), "nodes[1].attrs.kelf: KELF node found but missing 'kelf' attribute");
    let e = neff(&NEFF.replace(r#""kelf":"kelf-0.json""#, r#""kelf":0"#)).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("nodes[1].attrs.kelf: KELF attribute is not a string", 953));
    let found = neff::json::JsonType::UnsignedInteger;
    assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::KelfAttributeNotString { found }));
    // Only the KELF node's `attrs.kelf` must be a string: another node's is not read.
    let other = NEFF.replace(r#"{"op":"null","name":"x"}"#, r#"{"op":"null","name":"x","attrs":{"kelf":[1,{"a":2}]}}"#);
    let (io, kelfs) = neff(&other).0.unwrap();
    assert_eq!((io[0].name.as_str(), kelfs.len()), ("x", 1));
    let e = neff(&NEFF.replace("__kelf", "other")).0.unwrap_err();
    assert_eq!(msg(&e), "nodes: No KELF node found in NEFF JSON");
    // §5.2: a second KELF node must name its member too.
    let second = r#",{"op":"tvm_op","name":"k2","attrs":{"func_name":"__kelf"}}],"arg_nodes""#;
    let e = neff(&NEFF.replace(r#"],"arg_nodes""#, second).replace("[0,1,2]", "[0,1,2,3]")).0.unwrap_err();
    assert_eq!(msg(&e), "nodes[2].attrs.kelf: KELF node found but missing 'kelf' attribute");
    let named = second.replace(r#""__kelf"}"#, r#""__kelf","kelf":"kelf-1.json"}"#);
    let (_, kelfs) = neff(&NEFF.replace(r#"],"arg_nodes""#, &named).replace("[0,1,2]", "[0,1,2,3]")).0.unwrap();
    assert_eq!(kelfs.len(), 2);
    // libnrt looks an input up by its node's name: an input node without one is refused; a
    // node that is no input needs none.
    let e = neff(&NEFF.replace(r#"{"op":"null","name":"x"}"#, r#"{"op":"null"}"#)).0.unwrap_err();
    assert_eq!(msg(&e), "nodes[0].name: Missing required fields in NEFF JSON (input node 0 has no name)");
    let (io, _) = neff(&NEFF.replace(r#""name":"k","#, "")).0.unwrap();
    assert_eq!(io[0].name, "x");
    let (io, _) = neff(&NEFF.replace(r#""name":"x""#, r#""name":"""#)).0.unwrap();
    assert_eq!(io[0].name, "");
    let e = neff(&NEFF.replace("[[2],[3]]", "[[4294967295,4294967295,4294967295],[3]]")).0.unwrap_err();
    assert_eq!(msg(&e), "arg_nodes[0]: tensor size overflows 64 bits");

    // The op fallback finds the KELF node, with a warning.
    let by_op = NEFF
        .replace(r#""op":"tvm_op","name":"k","attrs":{"func_name":"__kelf","#, r#""op":"__kelf","name":"k","attrs":{"#);
    let (ok, w) = neff(&by_op);
    assert_eq!(ok.unwrap().1, ["kelf-0.json"]);
    assert!(w.iter().any(|w| w.kind == WarningKind::Manifest(ManifestWarning::KelfNodeByOp)));
}

#[test]
fn generated_parser_errors_carry_the_key_path() {
    let e = neff(&NEFF.replace(r#""name":"x""#, r#""name":"x","name":"y""#)).0.unwrap_err();
    assert_eq!(msg(&e), "nodes[0].name: duplicate key \"name\"");
    let e = neff(&NEFF.replace(r#""arg_nodes":[0]"#, r#""arg_nodes":[-1]"#)).0.unwrap_err();
    assert_eq!(msg(&e), "arg_nodes[0]: expected an unsigned integer, found negative integer");
    let e = neff(&NEFF.replace(r#""arg_nodes":[0]"#, r#""arg_nodes":[0.5]"#)).0.unwrap_err();
    assert_eq!(msg(&e), "arg_nodes[0]: expected an unsigned integer, found fractional number");
    let e = neff(&format!("{NEFF} x")).0.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Json(_)), "{e}");
}

#[test]
fn kelf_checks() {
    let good = r#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5","target":"*"}"#;
    let k = kelf(good).unwrap();
    assert_eq!(k.target_kind(), Ok(neff::manifest::KelfTarget::Any));
    assert_eq!(k.arch_value(), None);
    let e = kelf(&good.replace("0.5", "05")).unwrap_err();
    assert_eq!(msg(&e), "version: invalid string (.) in 05");
    let e = kelf(&good.replace(r#""*""#, r#""tonga""#)).unwrap_err();
    assert_eq!(msg(&e), "target: Invalid target 'tonga'");
    let absent = kelf(&good.replace(r#","target":"*""#, "")).unwrap();
    assert_eq!(absent.arch_value(), Some(Arch::Sunda));
    let v3 = kelf(&good.replace(r#""*""#, r#""v3""#)).unwrap();
    assert_eq!(v3.arch_value(), Some(Arch::Cayman));
    assert_eq!(
        v3.check_device(Arch::Mariana, false).unwrap_err().to_string(),
        "Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v3, instance arch: v4"
    );
    assert!(v3.check_device(Arch::Mariana, true).is_ok());
    let e = kelf(r#"{"version":"0.5","graphs":[{"name":"sg00"}]}"#).unwrap_err();
    assert_eq!(msg(&e), "graphs[0].definition: missing required key \"definition\"");
}

const DEF: &str = r#"{"var":{"o":{"type":"output","var_id":1,"size":4},"i":{"type":"input","var_id":0,"size":4,"alignment":64}},
"dma_queue":{"q":{"type":"in","owner":"pool","semaphore":10}},
"pe":"PE.json","act":"Activation.json","pool":"Pool.json","dve":"DVE.json","sp":"SP.json",
"runtime_statebuffer_reservation":[{"base_partition":0,"offset":229368,"partitions":128,"size":8,"type":"evtaccel"}],
"num_streams":2,"cc_streams":{"num_streams":0}}"#;

#[test]
fn def_json_var_checks() {
    let (d, w) = def(DEF);
    let d = d.unwrap();
    assert!(w.is_empty());
    assert_eq!(d.entries.vars[0].name.as_str(), "o", "streamed in document order");
    assert_eq!(d.doc.num_streams(), Some(2), "the runtime's key wins over cc_streams");
    assert_eq!(d.entries.queues[0].semaphores(), [10]);

    let e = def(&DEF.replace(r#""type":"input","#, "")).0.unwrap_err();
    assert_eq!(msg(&e), "var.i.type: Failed to parse, key: type");
    let e = def(&DEF.replace(r#""var_id":0,"#, "")).0.unwrap_err();
    assert_eq!(msg(&e), "var.i.var_id: missing <var_id>");
    let e = def(&DEF.replace(r#""alignment":64"#, r#""alignment":48"#)).0.unwrap_err();
    assert_eq!(msg(&e), "var.i.alignment: alignment provided not power of 2. alignment=48");
    // §15.17: the dense-id check runs only when `check_var_ids` is present (and not false).
    let gated = DEF.replace(r#"{"var":"#, r#"{"check_var_ids":true,"var":"#);
    let e = def(&gated.replace(r#""var_id":1"#, r#""var_id":5"#)).0.unwrap_err();
    assert_eq!(msg(&e), "var: Unexpected var_ids set! max=5, size=2");
    let e = def(&gated.replace(r#""var_id":1"#, r#""var_id":0"#)).0.unwrap_err();
    assert_eq!(msg(&e), "var: Unexpected var_ids set! max=0, size=2");
    let any_value = DEF.replace(r#"{"var":"#, r#"{"check_var_ids":{"on":[1]},"var":"#);
    assert!(def(&any_value.replace(r#""var_id":1"#, r#""var_id":5"#)).0.is_err());
    let sparse = def(&DEF.replace(r#""var_id":1"#, r#""var_id":5"#)).0.unwrap();
    assert_eq!(sparse.facts.max_var_id, Some(5), "sparse ids load without the key");
    let off = DEF.replace(r#"{"var":"#, r#"{"check_var_ids":false,"var":"#);
    assert!(def(&off.replace(r#""var_id":1"#, r#""var_id":5"#)).0.is_ok(), "false turns the check off");
    let e = def(&DEF.replace(r#""type":"output""#, r#""type":"tmp-buf""#)).0.unwrap_err();
    assert_eq!(msg(&e), "var: Invalid Neff: no Outputs");
    assert_eq!(e.kind.code(), 925);
    let e = def(&DEF.replace(r#""size":4,"alignment""#, r#""size":"4","alignment""#)).0.unwrap_err();
    assert_eq!(msg(&e), "var.i.size: expected an unsigned integer, found string");
    assert_eq!(
        e.to_string(),
        format!("sg00/def.json: var.i.size: expected an unsigned integer, found string (byte {})", e.offset)
    );
    // No `var` at all is the same refusal in the seed ("subgraph has no outputs"): one code.
    let e = def(r#"{"name":"definition"}"#).0.unwrap_err();
    assert_eq!(msg(&e), "var: Invalid Neff: no Outputs");
    assert_eq!((e.kind.code(), e.kind), (925, ErrorKind::Manifest(ManifestError::NoOutputs)));
    // Values outside the documented sets, where the spec does not say to refuse: warnings.
    let odd = DEF
        .replace(r#""size":4,"alignment":64"#, r#""size":4,"alignment":64,"fabric_path":"side","backing_buf":"main""#)
        .replace(r#""owner":"pool""#, r#""owner":"pool","fabric_path":"alt""#);
    let (d, w) = def(&odd);
    d.unwrap();
    let w: Vec<String> = w.iter().map(|w| format!("{}: {}", w.key_path, w.kind)).collect();
    assert_eq!(w, ["var.i.fabric_path: unknown fabric_path 'side': accepted (the spec does not say to refuse it)"]);
    // §7.3: a var that occupies device memory has a size; a pointer's is 8 bytes.
    let e = def(&DEF.replace(r#""size":4,"alignment""#, r#""alignment""#)).0.unwrap_err();
    assert_eq!(
        msg(&e),
        "var.i.size: var i of type input has no size (input, output, file, tmp-buf, virtual and pointer vars need one)"
    );
    let with = |extra: &str| DEF.replace(r#""var":{"#, &format!(r#""var":{{{extra},"#));
    def(&with(r#""sb":{"type":"state-buffer","var_id":2},"t":{"type":"dge-table","var_id":3,"list":[0]}"#)).0.unwrap();
    def(&with(r#""p":{"type":"pointer","var_id":2,"size":8,"referenced_var_id":0}"#)).0.unwrap();
    let e = def(&with(r#""p":{"type":"pointer","var_id":2,"size":4}"#)).0.unwrap_err();
    assert_eq!(msg(&e), "var.p.size: pointer var p has size 4; a pointer is 8 bytes");
    let e = def(&with(r#""w":{"type":"file","var_id":2,"file_name":"w.npy"}"#)).0.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Manifest(ManifestError::VarWithoutSize { .. })), "{e}");
    assert_eq!(e.key_path.as_str(), "var.w.size");
}

#[test]
fn def_json_queue_and_carveout_checks() {
    let e = def(&DEF.replace(r#""type":"in","#, "")).0.unwrap_err();
    assert_eq!(msg(&e), "dma_queue.q.type: missing <type> in q");
    // The queue's whole name, dots included (`%s` is the name, not the last dotted part).
    let dotted = DEF.replace(r#""type":"in","#, "").replace(r#""q":{"#, r#""q.in.0":{"#);
    assert_eq!(msg(&def(&dotted).0.unwrap_err()), "dma_queue.q.in.0.type: missing <type> in q.in.0");
    let e = def(&DEF.replace(r#""owner":"pool""#, r#""owner":"cpu""#)).0.unwrap_err();
    assert_eq!(msg(&e), "dma_queue.q.owner: Invalid owner 'cpu' for DMA queue q");
    let e = def(&DEF.replace(r#""semaphore":10"#, r#""queue_instances":["a"]"#)).0.unwrap_err();
    assert_eq!(
        msg(&e),
        "dma_queue.q.queue_instances: Invalid Neff: Queue set instances are not supported for input queues (q)"
    );
    let sems = (0..33).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let e = def(&DEF.replace(r#""semaphore":10"#, &format!(r#""semaphore_set":[{sems}]"#))).0.unwrap_err();
    assert_eq!(msg(&e), "dma_queue.q.semaphore_set: Runtime supports maximum of 32 semaphores per queue set (got 33)");
    let e = def(&DEF.replace(r#""type":"evtaccel""#, r#""type":"other""#)).0.unwrap_err();
    assert_eq!(msg(&e), "runtime_statebuffer_reservation[0].type: Invalid runtime_statebuffer_reservation type other");
    // Both carveout spellings are read.
    let renamed = DEF.replace("base_partition", "start_partition").replace(r#""partitions""#, r#""num_partitions""#);
    let d = def(&renamed).0.unwrap();
    assert_eq!(d.entries.carveouts[0].num_partitions, 128);
    let both = DEF.replace(r#""base_partition":0,"#, r#""base_partition":0,"start_partition":0,"#);
    assert_eq!(
        msg(&def(&both).0.unwrap_err()),
        "runtime_statebuffer_reservation[0].start_partition: duplicate key \"base_partition\""
    );

    let cayman = TargetCheck::Device(Arch::Cayman);
    let check = |doc: &str| {
        def(doc).0.unwrap().facts.check_carveouts(cayman, false).map_err(|(path, e)| format!("{path}: {e}"))
    };
    assert_eq!(check(DEF), Ok(()));
    assert_eq!(
        check(&DEF.replace(r#""base_partition":0"#, r#""base_partition":1"#)),
        Err("runtime_statebuffer_reservation[0]: Event Accel carveout SB partition must start at 0. Got 1".into())
    );
    assert_eq!(
        check(&DEF.replace(r#""partitions":128"#, r#""partitions":64"#)),
        Err("runtime_statebuffer_reservation[0]: Event Accel carveout SB partition count must be 128. Got 64".into())
    );
    assert_eq!(
        check(&DEF.replace("229368", "16")),
        Err("runtime_statebuffer_reservation[0]: Event Accel carveout SB partition offset must start at 0x37ff8. Got 0x10".into())
    );
    assert_eq!(
        check(&DEF.replace(r#""size":8"#, r#""size":16"#)),
        Err("runtime_statebuffer_reservation[0]: Event Accel carveout SB size must be 8. Got 16".into())
    );
    let without = DEF.replace(r#""runtime_statebuffer_reservation":[{"base_partition":0,"offset":229368,"partitions":128,"size":8,"type":"evtaccel"}],"#, "");
    let d = def(&without).0.unwrap().facts;
    assert_eq!(d.check_carveouts(cayman, false).map_err(|(_, e)| e), Err(ManifestError::MissingCarveout));
    assert_eq!(d.check_carveouts(cayman, true), Ok(()));
    assert_eq!(d.check_carveouts(TargetCheck::Device(Arch::Sunda), false), Ok(()));
    let empty =
        DEF.replace(r#"[{"base_partition":0,"offset":229368,"partitions":128,"size":8,"type":"evtaccel"}]"#, "[]");
    assert_eq!(def(&empty).0.unwrap().facts.check_carveouts(cayman, false), Ok(()));
}

/// `key.path: message` of the error `DEF` gives with `from` replaced by `to`.
fn def_error(from: &str, to: &str) -> String {
    assert!(DEF.contains(from), "{from}");
    msg(&def(&DEF.replace(from, to)).0.unwrap_err())
}

#[test]
fn def_json_queue_rules_of_the_runtime() {
    // §7.4: num_queues at most 16, on every queue type (real NEFFs write 16 on `in` queues,
    // §15.21).
    let dynamic = r#""type":"dynamic","owner":"pool","semaphore":10"#;
    let base = r#""type":"in","owner":"pool","semaphore":10"#;
    def(&DEF.replace(base, &format!("{dynamic},\"num_queues\":16"))).0.unwrap();
    assert_eq!(
        def_error(base, &format!("{dynamic},\"num_queues\":17")),
        "dma_queue.q.num_queues: Invalid Neff: DMA queue q has 17 queues; at most 16 are supported"
    );
    for kind in ["in", "out"] {
        let queue = format!(r#""type":"{kind}","owner":"pool","semaphore":10,"num_queues":16"#);
        def(&DEF.replace(base, &queue)).0.unwrap();
        assert_eq!(
            def_error(base, &queue.replace("16", "17")),
            "dma_queue.q.num_queues: Invalid Neff: DMA queue q has 17 queues; at most 16 are supported"
        );
    }
    let eu = r#""type":"embedding_update","owner":"pool","embedding_update_sync_semaphore":3,"num_queues":4"#;
    def(&DEF.replace(base, eu)).0.unwrap();
    // embedding_update needs its sync semaphore.
    let eu = r#""type":"embedding_update","owner":"pool""#;
    assert_eq!(
        def_error(base, eu),
        "dma_queue.q.embedding_update_sync_semaphore: Invalid Neff: embedding update queue q has no embedding_update_sync_semaphore"
    );
    def(&DEF.replace(base, &format!("{eu},\"embedding_update_sync_semaphore\":3"))).0.unwrap();
    // dynamic_dma needs both scratch fields.
    assert_eq!(
        def_error(base, &format!("{dynamic},\"dynamic_dma\":{{\"SB_scratch_partition_offset\":0}}")),
        "dma_queue.q.dynamic_dma: Invalid Neff: dynamic DMA queue q needs SB_scratch_partition_offset and SB_scratch_partition_size"
    );
}

#[test]
fn def_json_ucode_lib_rules_of_the_runtime() {
    let lib = |extra: &str| {
        DEF.replace(
            r#""num_streams":2"#,
            &format!(r#""num_streams":2,"ucode_lib":[{{"library":"gpsimd.bin","opcode":-123{extra}}}]"#),
        )
    };
    def(&lib(r#","ulib_to_ucode_version":"1.21.1.0","cpu_id":0,"total_cpus":8"#)).0.unwrap();
    let e = |extra: &str| msg(&def(&lib(extra)).0.unwrap_err());
    assert_eq!(e(""), "ucode_lib[0].ulib_to_ucode_version: Missing GPSIMD lib version!");
    assert_eq!(
        e(r#","ulib_to_ucode_version":"2.0.0.0""#),
        "ucode_lib[0].ulib_to_ucode_version: Mismatch between GPSIMD lib version and NRT version!"
    );
    // §7.6, §15.21: neuronx-cc 2.14 writes `cpu_id` 0 to 7 of `total_cpus` 8, a version
    // `"1.x.x.x"` and no `opcode` on the entry.
    def(&lib(r#","ulib_to_ucode_version":"1.x.x.x","cpu_id":7,"total_cpus":8,"is_builtin":true,"ulib_to_isa_version":"1.0.2520.0""#)).0.unwrap();
    let no_opcode = DEF.replace(
        r#""num_streams":2"#,
        r#""num_streams":2,"ucode_lib":[{"library":"l.so","ulib_to_ucode_version":"1.x.x.x","cpu_id":0,"total_cpus":8}]"#,
    );
    def(&no_opcode).0.unwrap();
    assert_eq!(
        e(r#","ulib_to_ucode_version":"1.x.x.x","cpu_id":8,"total_cpus":8"#),
        "ucode_lib[0].cpu_id: UCode Library gpsimd.bin has cpu_id 8, not below its total_cpus"
    );
    assert_eq!(
        e(r#","ulib_to_ucode_version":"1.2.0.0","cpu_id":1"#),
        "ucode_lib[0].cpu_id: UCode Library gpsimd.bin has cpu_id 1, not below its total_cpus"
    );
    assert_eq!(
        e(r#","ulib_to_ucode_version":"2.x.x.x","cpu_id":0,"total_cpus":8"#),
        "ucode_lib[0].ulib_to_ucode_version: Mismatch between GPSIMD lib version and NRT version!"
    );
    // The string form names a member; anything else is still not an array.
    def(&DEF.replace(r#""num_streams":2"#, r#""num_streams":2,"ucode_lib":"ucode_lib.json""#)).0.unwrap();
    assert_eq!(
        msg(&def(&DEF.replace(r#""num_streams":2"#, r#""num_streams":2,"ucode_lib":7"#)).0.unwrap_err()),
        "ucode_lib: expected an array, found unsigned integer"
    );
    assert_eq!(
        e(r#","ulib_to_ucode_version":"1.2.0.0","total_cpus":4"#),
        "ucode_lib[0].total_cpus: UCode Library gpsimd.bin has invalid number of total cpus 4"
    );
}

#[test]
fn def_json_ext_isa_library_has_at_most_18_ops() {
    // §7.1: `ext_isa_ucode_lib_def` replaces the default Extended-ISA (Q7) library.
    let lib = |ops: usize| {
        let f: Vec<String> = (0..ops).map(|i| format!(r#"{{"name":"op{i}","opcode":{i},"sub_opcode":0}}"#)).collect();
        DEF.replace(
            r#""num_streams":2"#,
            &format!(r#""num_streams":2,"ext_isa_ucode_lib_def":{{"functions":[{}],"add_lib":true}}"#, f.join(",")),
        )
    };
    let ok = def(&lib(18)).0.unwrap();
    let parsed = ok.doc.ext_isa_lib.as_ref().unwrap();
    assert_eq!((parsed.functions.unwrap().0, parsed.add_lib), (18, Some(true)));
    let e = def(&lib(19)).0.unwrap_err();
    assert_eq!(e.member.as_str(), "sg00/def.json");
    assert_eq!(
        msg(&e),
        "ext_isa_ucode_lib_def.functions: Extended-ISA library with 19 ops: the runtime supports at most 18"
    );
    let e = def(&DEF.replace(r#""num_streams":2"#, r#""num_streams":2,"ext_isa_ucode_lib_def":{"add_lib":1}"#))
        .0
        .unwrap_err();
    assert_eq!(e.key_path.as_str(), "ext_isa_ucode_lib_def.add_lib");
}

#[test]
fn values_the_spec_does_not_map_are_accepted_with_a_warning_naming_them() {
    let odd = DEF
        .replace(r#""type":"input","var_id":0"#, r#""type":"remote-ish","var_id":0,"dtype":"float8_e5m2""#)
        .replace(r#""type":"in","owner":"pool""#, r#""type":"mystery","owner":"pool""#);
    let (d, w) = def(&odd);
    d.unwrap();
    let text: Vec<String> = w.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        text,
        [
            "sg00/def.json: var.i.type: unknown type 'remote-ish': accepted (the spec does not say to refuse it)",
            "sg00/def.json: var.i.dtype: unknown dtype 'float8_e5m2': accepted (the spec does not say to refuse it)",
            "sg00/def.json: dma_queue.q.type: unknown type 'mystery': accepted (the spec does not say to refuse it)",
        ]
    );
}

/// Seed §6: `remote` is `MR_REMOTE` (11), no unknown type; `float4_e2m1fn` (no published
/// `kbin_dtype`) stays a warning, as `float8_e5m2` above.
#[test]
fn a_remote_var_is_mr_remote_and_unpublished_fp_dtypes_warn() {
    let remote = DEF.replace(r#""type":"input","var_id":0"#, r#""type":"remote","var_id":0,"dtype":"float4_e2m1fn""#);
    let (d, w) = def(&remote);
    let d = d.unwrap();
    let i = d.entries.vars.iter().find(|v| v.name.as_str() == "i").unwrap();
    assert_eq!((i.mr_type(), i.mr_type_value()), (Some(neff::manifest::MrType::Remote), Some(11)));
    let text: Vec<String> = w.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        text,
        ["sg00/def.json: var.i.dtype: unknown dtype 'float4_e2m1fn': accepted (the spec does not say to refuse it)"]
    );
}

/// `num_streams` fills the 4-byte `kbin_cc_streams_t.num_streams`: a larger value is refused,
/// not truncated.
#[test]
fn num_streams_past_u32_is_refused() {
    let d = def(&DEF.replace(r#""num_streams":2"#, r#""num_streams":4294967295"#)).0.unwrap();
    assert_eq!(d.doc.cc_streams_layout().num_streams, u32::MAX);
    let e = def(&DEF.replace(r#""num_streams":2"#, r#""num_streams":4294967296"#)).0.unwrap_err();
    assert_eq!(e.key_path.as_str(), "num_streams", "{e}");
    let e = def(
        &DEF.replace(r#""num_streams":2,"cc_streams":{"num_streams":0}"#, r#""cc_streams":{"num_streams":4294967296}"#)
    )
    .0
    .unwrap_err();
    assert_eq!(e.key_path.as_str(), "cc_streams.num_streams", "{e}");
    let none = def(&DEF.replace(r#""num_streams":2,"cc_streams":{"num_streams":0}"#, r#""x":0"#)).0.unwrap();
    assert_eq!(none.doc.cc_streams_layout().num_streams, 1, "the runtime's initial value");
}

/// Spec §7.3: a var's device-print `prefix` (a string) and `pipe` (an integer) are read and
/// typed.
#[test]
fn a_var_s_prefix_and_pipe_are_read_and_typed() {
    let printed = DEF.replace(r#""var_id":0,"#, r#""var_id":0,"prefix":"dbg_","pipe":3,"#);
    let (d, w) = def(&printed);
    let d = d.unwrap();
    assert!(w.is_empty(), "{w:?}");
    let i = d.entries.vars.iter().find(|v| v.name.as_str() == "i").unwrap();
    assert_eq!((i.prefix.as_deref(), i.pipe), (Some("dbg_"), Some(3)));
    let e = def(&DEF.replace(r#""var_id":0,"#, r#""var_id":0,"prefix":7,"#)).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("var.i.prefix: expected a string, found unsigned integer", 902));
    let e = def(&DEF.replace(r#""var_id":0,"#, r#""var_id":0,"pipe":"x","#)).0.unwrap_err();
    assert_eq!(msg(&e), "var.i.pipe: expected an integer, found string");
}

#[test]
fn def_json_engine_warnings() {
    let (d, w) = def(&DEF.replace(r#""sp":"SP.json","#, "").replace(r#""pe":"PE.json","#, ""));
    d.unwrap();
    let text: Vec<String> = w.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        text,
        [
            "sg00/def.json: pe: Engine pe not found in NEFF, using empty placeholder",
            "sg00/def.json: sp: Engine sp not found in NEFF, using empty placeholder"
        ]
    );
    let mut warnings = Vec::new();
    let instr = neff::manifest::engine::resolve_instr(
        Some("pe.bin"),
        Some("PE.bin"),
        neff::manifest::EngineType::Pe,
        "sg00/PE.json",
        &mut |w: &Warning| warnings.push(*w),
    );
    assert_eq!(instr, Some("PE.bin"));
    assert_eq!(warnings[0].to_string(), "sg00/PE.json: instr: pe_instr \"pe.bin\" differs from the engine JSON's instr \"PE.bin\"; using the engine JSON's");
}

#[test]
fn engine_dma_checks() {
    let good = r#"{"instr":"SP.bin","dma":[{"id":0,"queue":"q","desc":[{"from":"a","to":"b","from_off":0,"to_off":0},{"op":"fma","from":"a","to":"b","from_off":8,"to_off":8,"scale":0.5}]},{"id":1,"desc":[]}]}"#;
    let e = engine(good).unwrap();
    assert_eq!(e.dma_block_count(), 2);
    let first = parse::<EngineJson>(good.replace(r#",{"id":1,"desc":[]}"#, "").as_bytes(), "sg00/PE.json").unwrap();
    let descs = &first.entries.descs;
    assert_eq!((descs.len(), descs[1].scale.value()), (2, 0.5));
    // §8.2: both offsets are required (a CCE descriptor's sources carry their own from_off).
    let err = engine(&good.replace(r#""from_off":8,"#, "")).unwrap_err();
    assert_eq!(msg(&err), "dma[0].desc[1].from_off: missing required key \"from_off\"");
    let err = engine(&good.replace(r#","to_off":8"#, "")).unwrap_err();
    assert_eq!(msg(&err), "dma[0].desc[1].to_off: missing required key \"to_off\"");
    let err = engine(&good.replace(r#""op":"fma""#, r#""op":"xor""#)).unwrap_err();
    assert_eq!(msg(&err), "dma[0].desc[1].op: Unknown dma operation: xor");
    // §11.6, §15.21: `"op": "cast"` (what real trn1 NEFFs write) is COPY with the cast flag.
    let cast = good.replace(r#""op":"fma""#, r#""op":"cast","from_dtype":"int8","to_dtype":"float32""#);
    let parsed = parse::<EngineJson>(cast.replace(r#",{"id":1,"desc":[]}"#, "").as_bytes(), "sg00/PE.json").unwrap();
    let (plain, cast) = (&parsed.entries.descs[0], &parsed.entries.descs[1]);
    assert_eq!((cast.desc_op(), cast.is_cast(), plain.is_cast()), (Some(DescOp::Copy), true, false));
    let flagged = good.replace(r#""op":"fma""#, r#""op":"add","cast":true"#);
    let parsed = parse::<EngineJson>(flagged.replace(r#",{"id":1,"desc":[]}"#, "").as_bytes(), "sg00/PE.json").unwrap();
    assert_eq!((parsed.entries.descs[1].desc_op(), parsed.entries.descs[1].is_cast()), (Some(DescOp::Add), true));
    let err = engine(&good.replace(r#"{"id":1,"#, "{")).unwrap_err();
    assert_eq!(msg(&err), "dma[1].id: invalid dma block");
    // §8.2 types `id` as an int: a negative one is a block id like any other.
    engine(&good.replace(r#"{"id":1,"#, r#"{"id":-1,"#)).unwrap();
    // §8.2: no size is 0, and each side's steps and sizes have the same length.
    let sized = good
        .replace(r#""from_off":0,"to_off":0"#, r#""from_off":0,"to_off":0,"from_sizes":[128,1],"from_steps":[1,128]"#);
    engine(&sized).unwrap();
    let err = engine(&sized.replace("[128,1]", "[128,0]")).unwrap_err();
    assert_eq!(msg(&err), "dma[0].desc[0].from_sizes: Size cannot be 0");
    let err = engine(&sized.replace("[1,128]", "[1]")).unwrap_err();
    assert_eq!(
        msg(&err),
        "dma[0].desc[0].from_steps: descriptor steps have 1 entries but sizes have 2: they must match"
    );
    // The same rules for a def.json's top-level dma.
    let top = DEF.replace(
        r#""num_streams":2"#,
        r#""num_streams":2,"dma":[{"id":0,"desc":[{"from":"i","to":"o","from_off":0,"to_off":0,"to_sizes":[0]}]}]"#,
    );
    assert_eq!(msg(&def(&top).0.unwrap_err()), "dma[0].desc[0].to_sizes: Size cannot be 0");
    // §8.2: a descriptor reads from a variable, unless it is a CCE one, of at most 16 sources.
    let source = |desc: &str| engine(&good.replace(r#""from":"a","to":"b","from_off":0"#, desc));
    assert_eq!(
        msg(&source(r#""to":"b","from_off":0"#).unwrap_err()),
        "dma[0].desc[0].from: DMA descriptor without from (only a CCE descriptor, with from_arr, has none)"
    );
    let cce_with = |n: usize, src: &str, to_dtype: &str| {
        let arr = vec![src; n].join(",");
        source(&format!(r#""from_arr":[{arr}],"to":"b"{to_dtype},"from_off":0"#))
    };
    let good_src = r#"{"from":"a","from_off":0,"from_dtype":"bfloat16","from_sizes":[4,2],"from_steps":[1,4]}"#;
    let cce = |n: usize| cce_with(n, good_src, r#","to_dtype":"float32""#);
    cce(16).unwrap();
    assert_eq!(
        msg(&cce(17).unwrap_err()),
        "dma[0].desc[0].from_arr: CCE descriptor with 17 sources in from_arr: the runtime supports at most 16"
    );
    // §8.2: a CCE access pattern carries its dtype, on both sides.
    assert_eq!(
        msg(&cce_with(2, good_src, "").unwrap_err()),
        "dma[0].desc[0].to_dtype: Invalid cce desc ap without dtype"
    );
    let no_dtype = good_src.replace(r#","from_dtype":"bfloat16""#, "");
    let mixed = format!("{good_src},{no_dtype}");
    assert_eq!(
        msg(&cce_with(1, &mixed, r#","to_dtype":"float32""#).unwrap_err()),
        "dma[0].desc[0].from_arr[1].from_dtype: Invalid cce desc ap without dtype"
    );
    // Each source follows the from side's rules.
    let zero = good_src.replace("[4,2]", "[4,0]");
    assert_eq!(
        msg(&cce_with(1, &zero, r#","to_dtype":"float32""#).unwrap_err()),
        "dma[0].desc[0].from_arr[0].from_sizes: Size cannot be 0"
    );
    let steps = good_src.replace("[1,4]", "[1]");
    assert_eq!(
        msg(&cce_with(1, &steps, r#","to_dtype":"float32""#).unwrap_err()),
        "dma[0].desc[0].from_arr[0].from_steps: descriptor steps have 1 entries but sizes have 2: they must match"
    );
    // §11.2 gives no refusal for an unknown dtype string: accepted, with a warning naming it.
    let odd = good.replace(r#""to":"b","from_off":0"#, r#""to":"b","to_dtype":"float99","from_off":0"#);
    let parsed = parse::<EngineJson>(odd.as_bytes(), "sg00/PE.json").unwrap();
    let warnings: Vec<String> = parsed.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        ["sg00/PE.json: dma[0].desc[0].to_dtype: unknown to_dtype 'float99': accepted (the spec does not say to refuse it)"]
    );
    let tail = r#""float99","from_off":0,"to_off":0}"#;
    let desc_close = odd.find(tail).unwrap() + tail.len() - 1;
    assert_eq!(parsed.warnings[0].offset, desc_close as u64, "at the descriptor");
    let consts = good.replace(r#""scale":0.5"#, r#""scale":0.5,"scale_dtype":"float32","constant_dtype":"int8""#);
    let parsed = parse::<EngineJson>(consts.as_bytes(), "sg00/PE.json").unwrap();
    let warnings: Vec<String> = parsed.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        ["sg00/PE.json: dma[0].desc[1].constant_dtype: unknown constant_dtype 'int8': accepted (the spec does not say to refuse it)"]
    );
    let cce_odd = cce_with(1, &good_src.replace("bfloat16", "bfloat17"), r#","to_dtype":"float32""#).unwrap();
    assert_eq!(cce_odd.dma_block_count(), 2, "accepted");
    // A non-CCE descriptor's dtypes may be absent (the runtime reads uint8); absence is kept.
    let plain = parse::<EngineJson>(good.as_bytes(), "sg00/PE.json").unwrap();
    assert_eq!(plain.entries.descs[0].to_kbin_dtype(), None, "absent, not defaulted in the struct");
}

/// The runtime parses a whole document (simdjson) before it reads a key: a document that is
/// not valid JSON gets the syntax error, wherever it is, never the schema error met first.
#[test]
fn integer_arrays_read_whole_or_token_by_token_alike() {
    // A host reads an array of integers that lies whole in the chunk the source shows in one
    // scan (`Tokenizer::integer_array`, through `JsonValue::quick_body`); shown a byte at a
    // time, the same array is read token by token. Valid or not, each gives the same
    // descriptor, or the same error (kind, key path, offset), both ways.
    let arrays = [
        "[128,1]",
        "[ 128 ,\n 1 ]",
        "[]",
        "[ ]",
        "[0]",
        "[-0,1]",
        "[128,-1]",
        "[128,0]",
        "[1.5,2]",
        "[1e3]",
        "[01]",
        "[1,]",
        "[,1]",
        "[1 2]",
        "[1,,2]",
        "[18446744073709551615]",
        "[18446744073709551616]",
        "[9223372036854775808]",
        "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]",
        "[[1]]",
        "[\"1\"]",
        "[null]",
        "[1,2",
    ];
    for array in arrays {
        for (key, other) in [("from_sizes", "from_steps"), ("to_steps", "to_sizes")] {
            for partner in ["", ",\"PARTNER\":[1,128]"] {
                let partner = partner.replace("PARTNER", other);
                let doc = format!(
                    r#"{{"dma":[{{"id":0,"queue":"q","desc":[{{"from":"a","to":"b","from_off":0,"to_off":0,"{key}":{array}{partner}}}]}}]}}"#
                );
                let whole = format!("{:?}", parse::<EngineJson>(doc.as_bytes(), "sg00/SP.json"));
                let by_byte = format!("{:?}", parse_chunked::<EngineJson>(doc.as_bytes(), "sg00/SP.json", 1));
                assert_eq!(whole, by_byte, "{doc}");
            }
        }
    }
}

#[test]
fn members_read_whole_or_token_by_token_alike() {
    // A host reads a known key and its scalar value that lie whole in the chunk in one call
    // (`Tokenizer::quick_member`); shown a byte at a time, token by token. Each descriptor
    // below, valid or not, gives the same descriptor, or the same error (kind, key path,
    // offset), both ways: duplicate keys (the error at the second key), `strict` values,
    // wrong types, numbers out of range, literals, unknown keys, spacing, containers.
    let members = [
        r#""op":"copy""#,
        r#""op":"xor""#,
        r#""op":"cast","from_dtype":"int8","to_dtype":"float32""#,
        r#""to_off":1"#,
        r#""from_off":"0""#,
        r#""from_off":-1"#,
        r#""from_off":1.0"#,
        r#""from_off":18446744073709551616"#,
        r#""from_off":null"#,
        r#""from_off":true"#,
        r#""num_tiling_dimensions":4294967296"#,
        r#""num_tiling_dimensions":2"#,
        r#""from":"a""#,
        r#""from":"a""#,
        r#""from":7"#,
        r##""comment":"x","#comment":false,"x":null"##,
        r#""scale":2,"scale_dtype":"float32""#,
        r#""to_dtype" : "bfloat16" , "from_dtype":"float99""#,
        // A container opened whole with its key: an array twice, one of the wrong type, an
        // object where an array goes, an array nested where integers go.
        r#""from_sizes":[1,2],"from_steps":[1,2],"from_sizes":[3,4]"#,
        r#""from_sizes":{},"to_sizes":[1]"#,
        r#""to_steps" : [ [1] ]"#,
        r#""from":[],"to_sizes":[1,2]"#,
    ];
    for member in members {
        let doc = format!(
            r#"{{"dma":[{{"id":0,"queue":"q","desc":[{{"from":"a","to":"b","from_off":0,"to_off":0,{member}}}]}}]}}"#
        );
        let whole = format!("{:?}", parse::<EngineJson>(doc.as_bytes(), "sg00/SP.json"));
        let by_byte = format!("{:?}", parse_chunked::<EngineJson>(doc.as_bytes(), "sg00/SP.json", 1));
        assert_eq!(whole, by_byte, "{doc}");
    }
}

#[test]
fn a_schema_error_does_not_hide_a_syntax_error() {
    let json = |e: &Error| match e.kind {
        ErrorKind::Json(j) => j,
        other => panic!("expected a JSON syntax error, got {other:?} ({e})"),
    };
    // A def.json that is an array cut short: the schema refuses `[` first.
    let e = def("[1,").0.unwrap_err();
    assert_eq!((json(&e), e.offset), (neff::json::JsonError::UnexpectedEnd, 3), "{e}");
    // Trailing garbage after the closing brace of a document with a schema error inside.
    let e = kelf(r#"{"nodes": 5} x"#).unwrap_err();
    assert_eq!((json(&e), e.offset, e.key_path.as_str()), (neff::json::JsonError::TrailingData, 13, ""), "{e}");
    // Trailing data: a second value after the document.
    let e = kelf(r#"{"nodes": 5} {}"#).unwrap_err();
    assert_eq!((json(&e), e.offset), (neff::json::JsonError::TrailingData, 13), "{e}");
    // A syntax error deep inside the rest of the document, past the schema error.
    let e = kelf(r#"{"nodes": 5, "x": [{"a": [1, 2,]}]}"#).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Json(_)), "{e}");
    assert_eq!(e.offset, 31, "{e}");
    // Valid JSON with the same schema error: the schema error, unchanged (offset, key path).
    let valid = r#"{"nodes": 5, "x": [{"a": [1, 2]}]}"#;
    let e = kelf(valid).unwrap_err();
    assert!(!matches!(e.kind, ErrorKind::Json(_)), "{e}");
    // (the missing `version`, found at the closing brace)
    assert_eq!((e.offset, e.key_path.as_str()), (valid.len() as u64 - 1, "version"), "{e}");
    // Also when the schema error comes mid-document, inside containers.
    let e = neff(&NEFF.replace(r#""arg_nodes":[0]"#, r#""arg_nodes":[-1]"#)).0.unwrap_err();
    assert_eq!(msg(&e), "arg_nodes[0]: expected an unsigned integer, found negative integer");
    let e = neff(&NEFF.replace(r#""arg_nodes":[0]"#, r#""arg_nodes":[-1, [}]"#)).0.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Json(_)), "{e}");
}

/// libnrt demuxes `def.json` in a fixed key order (`var`, `check_var_ids`, `dma_queue`, ...,
/// the engines; seed §5), so of two faults it reports the earlier stage's, whatever the file
/// order. Each case is a document with two faults, written in both file orders.
#[test]
fn def_json_reports_the_fault_libnrt_meets_first() {
    // Two faults: a var's alignment (stage var) and a queue's owner (stage dma_queue).
    let var = r#""var":{"o":{"type":"output","var_id":0,"size":4,"alignment":3}}"#;
    let queue = r#""dma_queue":{"q":{"type":"in","owner":"nobody"}}"#;
    for doc in [format!("{{{queue},{var}}}"), format!("{{{var},{queue}}}")] {
        let e = def(&doc).0.unwrap_err();
        assert_eq!(
            (msg(&e).as_str(), e.kind.code()),
            ("var.o.alignment: alignment provided not power of 2. alignment=3", 922),
            "{doc}"
        );
    }
    // The gate after `var` (no output var) comes before a queue fault met earlier in the file.
    let no_output = r#""var":{"i":{"type":"input","var_id":0,"size":4}}"#;
    let e = def(&format!("{{{queue},{no_output}}}")).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("var: Invalid Neff: no Outputs", 925));
    // So do the dense ids of `check_var_ids`.
    let sparse = r#""check_var_ids":true,"var":{"o":{"type":"output","var_id":4,"size":4}}"#;
    let e = def(&format!("{{{queue},{sparse}}}")).0.unwrap_err();
    assert_eq!(e.kind.code(), 923, "{e}");
    // Within a stage, the first in the file: two vars with a fault each.
    let two = r#""var":{"a":{"type":"output","var_id":0,"size":4,"alignment":6},"b":{"type":"input","var_id":1,"alignment":5}}"#;
    let e = def(&format!("{{{queue},{two}}}")).0.unwrap_err();
    assert_eq!(msg(&e), "var.a.alignment: alignment provided not power of 2. alignment=6");
    // A ucode library (stage ucode_lib) against a queue (dma_queue): the queue, in either order.
    let lib = r#""ucode_lib":[{"library":"l.bin","ulib_to_ucode_version":"9.0.0.0"}]"#;
    let ok_var = r#""var":{"o":{"type":"output","var_id":0,"size":4}}"#;
    for doc in [format!("{{{lib},{ok_var},{queue}}}"), format!("{{{ok_var},{queue},{lib}}}")] {
        let e = def(&doc).0.unwrap_err();
        assert_eq!(e.kind.code(), 926, "{doc}: {e}");
    }
    // A fault that cannot wait (a wrong JSON type stops the read) against a kept one: the
    // earlier stage's. The kept var fault wins over a later queue type error ...
    let bad_type = r#""dma_queue":{"q":{"type":"in","num_queues":"x"}}"#;
    let e = def(&format!("{{{var},{bad_type}}}")).0.unwrap_err();
    assert_eq!(e.kind.code(), 922, "{e}");
    // ... and a var type error wins over a kept queue fault.
    let var_type = r#""var":{"o":{"type":"output","var_id":"0","size":4}}"#;
    let e = def(&format!("{{{queue},{var_type}}}")).0.unwrap_err();
    assert_eq!((msg(&e).as_str(), e.kind.code()), ("var.o.var_id: expected an unsigned integer, found string", 902));
    // A JSON syntax fault comes first for libnrt too (simdjson refuses the document before the
    // demux), wherever it is.
    let e = def(&format!("{{{var},{queue},\"x\":[1,]}}")).0.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Json(_)), "{e}");
    // A single fault is reported as before.
    let e = def(&format!("{{{ok_var},{queue}}}")).0.unwrap_err();
    assert_eq!(msg(&e), "dma_queue.q.owner: Invalid owner 'nobody' for DMA queue q");
}
