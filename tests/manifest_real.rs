//! Every manifest tier of both real NEFFs (extracted members) parses to the values of
//! neff-format.md §14.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod common;

use common::docs::{neff_io, parse, Parsed};
use neff::manifest::{
    Arch, CarveoutType, DefFacts, DefJson, DmaRingType, EngineJson, EngineType, IoKind, Kelf, KelfTarget,
    ManifestError, MrType, NrtDtype, TargetCheck,
};

fn read(rel: &str) -> Option<Vec<u8>> {
    common::fixture_bytes(&format!("public/nkipy/{rel}"))
}

#[test]
fn neff_json_io_tables_of_both_neffs() {
    for (neff, x, y, out) in [
        ("matmul_small", [128u32, 256], [256u32, 128], [128u32, 128]),
        ("matmul_large", [128, 32768], [32768, 65536], [128, 65536]),
    ] {
        let Some(bytes) = read(&format!("{neff}.extracted/neff.json")) else { return };
        let (io, warnings) = neff_io(&bytes);
        let (io, kelfs) = io.unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(kelfs, ["kelf-0.json"]);
        let inputs: Vec<_> = io.iter().filter(|t| t.kind == IoKind::Input).collect();
        let outputs: Vec<_> = io.iter().filter(|t| t.kind == IoKind::Output).collect();
        let names: Vec<_> = inputs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(inputs[0].shape.as_slice(), x);
        assert_eq!(inputs[1].shape.as_slice(), y);
        for t in &io {
            assert_eq!(t.dtype.as_str(), "float16");
            assert_eq!(t.nrt_dtype, NrtDtype::Float16);
            assert_eq!(t.nrt_dtype.value(), 7);
            assert_eq!(t.size, t.shape.iter().map(|&d| u64::from(d)).product::<u64>() * 2);
        }
        assert_eq!(outputs.len(), 1, "two heads named output0 collapse");
        assert_eq!(outputs[0].name.as_str(), "output0");
        assert_eq!(outputs[0].shape.as_slice(), out);
        if neff == "matmul_small" {
            assert_eq!(inputs[0].size, 65536);
            assert_eq!(outputs[0].size, 32768);
        } else {
            assert_eq!(inputs[1].size, 4_294_967_296);
        }
    }
}

#[test]
fn kelf_of_both_neffs() {
    for neff in ["matmul_small", "matmul_large"] {
        let Some(bytes) = read(&format!("{neff}.extracted/kelf-0.json")) else { return };
        let Parsed { doc: k, facts: graph_count, entries, .. } = parse::<Kelf>(&bytes, "kelf-0.json").unwrap();
        assert_eq!(k.version.as_str(), "0.5");
        assert_eq!(k.version_parts(), Some((0, 5, "")));
        assert_eq!(k.target.as_deref(), Some("cayman"));
        assert_eq!(k.target_kind(), Ok(KelfTarget::Arch(Arch::Cayman)));
        assert_eq!(k.arch_value().map(Arch::value), Some(3));
        assert_eq!(graph_count, 2);
        let graphs: Vec<_> = entries.graphs.iter().map(|g| (g.name.as_str(), g.definition.as_str())).collect();
        assert_eq!(graphs, [("sg00", "sg00/def.json"), ("sg01", "sg01/def.json")]);
        assert_eq!(k.check_device(Arch::Cayman, false), Ok(()));
        // Another device: refused, with both arch values; an older NEFF on a newer device
        // only with allow_legacy.
        assert_eq!(k.check_device(Arch::Sunda, false), Err(ManifestError::ArchMismatch { neff: 3, device: 2 }));
        assert_eq!(k.check_device(Arch::Sunda, true), Err(ManifestError::ArchMismatch { neff: 3, device: 2 }));
        assert_eq!(k.check_device(Arch::Mariana, false), Err(ManifestError::ArchMismatch { neff: 3, device: 4 }));
        assert_eq!(k.check_device(Arch::Mariana, true), Ok(()));
    }
}

fn def(neff: &str, sg: &str) -> Option<Parsed<DefJson>> {
    let bytes = read(&format!("{neff}.extracted/{sg}/def.json"))?;
    let p = parse::<DefJson>(&bytes, "sg00/def.json").unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    Some(p)
}

#[test]
fn def_json_small() {
    for sg in ["sg00", "sg01"] {
        let Some(Parsed { doc: d, facts, entries: e, .. }) = def("matmul_small", sg) else { return };
        assert_eq!(d.name.as_deref(), Some("definition"));
        assert_eq!(d.version.as_deref(), Some("0.6"));
        // Streamed in document order (the file's keys are sorted by name); by var_id here.
        let mut vars: Vec<_> =
            e.vars.iter().map(|v| (v.name.as_str(), v.var_type.as_str(), v.var_id, v.size)).collect();
        vars.sort_by_key(|v| v.2);
        assert_eq!(
            vars,
            [
                ("SB", "state-buffer", 0, None),
                ("x", "input", 1, Some(65536)),
                ("y", "input", 2, Some(65536)),
                ("output0", "output", 3, Some(32768)),
                ("identity_82_sg0000", "file", 4, Some(32768)),
                ("DGETable0", "dge-table", 5, None),
            ]
        );
        assert_eq!((facts.vars, facts.outputs, facts.max_var_id, facts.file_vars), (6, 1, Some(5), 1));
        let file = e.var("identity_82_sg0000").unwrap();
        assert_eq!(file.alignment, Some(32768));
        assert_eq!(file.file_name.as_deref(), Some("value_sg0000_identity_82_CRSM.npy"));
        assert_eq!(file.fabric_path.as_deref(), Some("main"));
        assert_eq!(file.mr_type(), Some(MrType::Buffer));
        assert_eq!(e.var("output0").unwrap().mr_type_value(), Some(6));
        assert_eq!(e.var_lists, [("DGETable0".to_string(), vec![1u32, 2, 3])]);
        assert_eq!(e.var("DGETable0").unwrap().mr_type(), None);

        let queues = &e.queues;
        let q: Vec<_> =
            queues.iter().map(|q| (q.name.as_str(), q.queue_type.as_str(), q.owner.as_deref(), q.num_queues)).collect();
        assert_eq!(q, [("qPoolDynamic", "dynamic", Some("pool"), 16), ("qSPDynamicHW", "dynamic", Some("sp"), 16)]);
        assert_eq!(queues[0].semaphores(), (24..=39).collect::<Vec<u32>>());
        assert_eq!(queues[1].semaphores(), (8..=23).collect::<Vec<u32>>());
        assert_eq!(queues[0].ring_type(), None, "dynamic has no published ring type");
        assert_eq!(queues[0].owner_engine(), Some(EngineType::Pool));
        let dd = queues[0].dynamic_dma.as_ref().unwrap();
        assert_eq!((dd.sb_scratch_partition_offset, dd.sb_scratch_partition_size), (Some(0), Some(16384)));

        let engines: Vec<_> =
            neff::manifest::def::ENGINES.iter().map(|&e| (d.engine_json(e), d.engine_instr(e))).collect();
        assert_eq!(
            engines,
            [
                (Some("PE.json"), Some("PE.bin")),
                (Some("Activation.json"), Some("Activation.bin")),
                (Some("Pool.json"), Some("Pool.bin")),
                (Some("DVE.json"), Some("DVE.bin")),
                (Some("SP.json"), Some("SP.bin")),
            ]
        );
        let carve = &e.carveouts;
        assert_eq!(carve.len(), 1);
        assert_eq!(carve[0].kind(), Some(CarveoutType::Evtaccel));
        let l = carve[0].layout();
        assert_eq!((l.carveout_type, l.offset, l.size, l.start_partition, l.num_partitions), (1, 229368, 8, 0, 128));
        assert_eq!(facts.check_carveouts(TargetCheck::Device(Arch::Cayman), false), Ok(()));
        let fp8 = d.fp8_info();
        assert!(fp8.initialized);
        assert!(fp8.cfg.fp8_range_extension && fp8.cfg.ocp_sat && !fp8.cfg.fp8_sis && !fp8.cfg.fp8_sns);
        assert_eq!((fp8.cfg.emax_fp8_e4m3, fp8.cfg.emax_fp8_e5m2), (8, 15));
        assert_eq!(d.num_streams(), Some(0));
        assert_eq!(facts.shared_scratchpad, Some(0));
    }
}

#[test]
fn def_json_large() {
    let Some(Parsed { facts, entries: e, .. }) = def("matmul_large", "sg00") else { return };
    assert_eq!(e.vars.len(), 22);
    let y = e.var("y").unwrap();
    assert_eq!((y.var_id, y.size), (2, Some(4_294_967_296)));
    assert_eq!(e.var("output0").unwrap().size, Some(16_777_216));
    let spill = e.var("-t125_i0_RematSpillSave0_sg0000").unwrap();
    assert_eq!((spill.var_id, spill.backing_variable_off, spill.size), (5, Some(7_864_320), Some(524_288)));
    assert_eq!(spill.mr_type(), Some(MrType::VirtualTmpBuf));
    assert_eq!(facts.shared_scratchpad, Some(16 * 524_288));
    let act = e.queues.iter().find(|q| q.name == "qActDynamicHW").unwrap();
    assert_eq!(act.owner_engine(), Some(EngineType::Act));
    assert_eq!(act.semaphores(), (40..=55).collect::<Vec<u32>>());
    let Some(d1) = def("matmul_large", "sg01") else { return };
    assert_eq!(d1.entries.vars.len(), 22);
    let _: DefFacts = d1.facts;
}

#[test]
fn engine_jsons_of_small() {
    let parse = |name: &str| {
        let bytes = read(&format!("matmul_small.extracted/sg00/{name}")).unwrap();
        parse::<EngineJson>(&bytes, name).unwrap()
    };
    if read("matmul_small.extracted/sg00/PE.json").is_none() {
        return;
    }
    let pe = parse("PE.json").doc;
    assert_eq!((pe.instr.as_deref(), pe.name.as_deref(), pe.dma_block_count()), (Some("PE.bin"), Some("PE.json"), 0));
    let act = parse("Activation.json");
    assert_eq!(act.doc.act_info.as_deref(), Some("act_info.json"));
    assert_eq!(act.doc.act_semaphore, Some(12));
    assert_eq!(act.entries.act_sets, ["exp_and_others"]);
    let dve = parse("DVE.json");
    let t = &dve.entries.dve_tables[0];
    assert_eq!(t.opcode_table.as_deref(), Some("default_opcode_table.bin"));
    assert_eq!(t.datapath_table.as_deref(), Some("default_datapath_table.bin"));
    assert_eq!(t.control_fast_table.as_deref(), Some("default_control_fast_table.bin"));
    assert_eq!(t.control_slow_table.as_deref(), Some("default_control_slow_table.bin"));
    assert_eq!(t.control_table, None);
    for name in ["Pool.json", "SP.json"] {
        assert!(parse(name).doc.instr.is_some());
    }

    let d = def("matmul_small", "sg00").unwrap().doc;
    let mut warnings = Vec::new();
    let instr =
        neff::manifest::engine::engine_instr(&d, &pe, EngineType::Pe, "sg00/PE.json", &mut |w: &neff::Warning| {
            warnings.push(*w)
        });
    assert_eq!(instr, Some("PE.bin"));
    assert!(warnings.is_empty());

    let bytes = read("matmul_small.extracted/sg00/exp_and_others.json").unwrap();
    let set = common::docs::parse::<EngineJson>(&bytes, "sg00/exp_and_others.json").unwrap().doc;
    assert_eq!(set.bkt_bin.as_deref(), Some("exp_and_others_bkt.bin"));
    assert_eq!(set.ctl_bin.as_deref(), Some("exp_and_others_ctrl.bin"));
    assert!(set.profile_meta_data.unwrap().0 > 0);
    let _ = DmaRingType::Data;
}

#[test]
fn manifest_slots_are_small_whatever_the_model() {
    use std::mem::size_of;
    // One slot per document and per streamed key: no count of vars, queues or nodes changes
    // these sizes, only the capacities of single values. On the firmware's (256-byte names)
    // that is under 8 KiB, beside the 32 KiB inflate window (the firmware build asserts the
    // whole `LOAD_FOOTPRINT`); hosted targets read names into slots 16 times as large.
    let bound = 8 * 1024 * (neff::manifest::cap::FILE_NAME / 256);
    for (name, size) in [
        ("NeffJson", size_of::<neff::manifest::NeffJson>()),
        ("Kelf", size_of::<Kelf>()),
        ("DefJson", size_of::<DefJson>()),
        ("EngineJson", size_of::<EngineJson>()),
    ] {
        println!("{name} {size}");
        assert!(size < bound, "{name} is {size} bytes");
    }
}
