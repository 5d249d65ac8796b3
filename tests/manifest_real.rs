//! Every manifest tier of both real NEFFs (extracted members) parses to the values of
//! neff-format.md §14.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod common;

use neff::json::Tokenizer;
use neff::manifest::Document;
use neff::manifest::{
    Arch, CarveoutType, DefJson, DmaRingType, EngineJson, EngineType, Kelf, KelfTarget, MrType, NeffJson, NrtDtype,
    TargetCheck,
};
use neff::Warning;

fn read(rel: &str) -> Option<Vec<u8>> {
    common::fixture_bytes(&format!("public/nkipy/{rel}"))
}

fn tok() -> Tokenizer {
    Tokenizer::new()
}

#[test]
fn neff_json_io_tables_of_both_neffs() {
    for (neff, x, y, out) in [
        ("matmul_small", [128u32, 256], [256u32, 128], [128u32, 128]),
        ("matmul_large", [128, 32768], [32768, 65536], [128, 65536]),
    ] {
        let Some(bytes) = read(&format!("{neff}.extracted/neff.json")) else { return };
        let mut warnings = Vec::new();
        let doc =
            <NeffJson>::parse(&mut tok(), &mut bytes.as_slice(), "neff.json", &mut |w: &Warning| warnings.push(*w))
                .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(doc.kelf_members().collect::<Vec<_>>(), ["kelf-0.json"]);
        assert_eq!(doc.kelf_node_index(), Some((2, false)));
        let io = doc.io_table::<4>().unwrap();
        let names: Vec<_> = io.inputs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(io.inputs[0].shape.as_slice(), x);
        assert_eq!(io.inputs[1].shape.as_slice(), y);
        for t in io.inputs.iter().chain(io.outputs.iter()) {
            assert_eq!(t.dtype.as_str(), "float16");
            assert_eq!(t.nrt_dtype, NrtDtype::Float16);
            assert_eq!(t.nrt_dtype.value(), 7);
            assert_eq!(t.size, t.shape.iter().map(|&d| u64::from(d)).product::<u64>() * 2);
        }
        assert_eq!(io.outputs.len(), 1, "two heads named output0 collapse");
        assert_eq!(io.outputs[0].name.as_str(), "output0");
        assert_eq!(io.outputs[0].shape.as_slice(), out);
        let info = io.inputs[0].info();
        assert_eq!((info.size, info.dtype, info.ndim), (io.inputs[0].size, 7, 2));
        if neff == "matmul_small" {
            assert_eq!(io.inputs[0].size, 65536);
            assert_eq!(io.outputs[0].size, 32768);
        } else {
            assert_eq!(io.inputs[1].size, 4_294_967_296);
        }
    }
}

#[test]
fn kelf_of_both_neffs() {
    for neff in ["matmul_small", "matmul_large"] {
        let Some(bytes) = read(&format!("{neff}.extracted/kelf-0.json")) else { return };
        let k =
            <Kelf>::parse(&mut tok(), &mut bytes.as_slice(), "kelf-0.json", &mut neff::error::IgnoreWarnings).unwrap();
        assert_eq!(k.version.as_str(), "0.5");
        assert_eq!(k.version_parts(), Some((0, 5, "")));
        assert_eq!(k.target.as_deref(), Some("cayman"));
        assert_eq!(k.target_kind(), Ok(KelfTarget::Arch(Arch::Cayman)));
        assert_eq!(k.arch_value().map(Arch::value), Some(3));
        let graphs: Vec<_> = k.graphs.iter().map(|g| (g.name.as_str(), g.definition.as_str())).collect();
        assert_eq!(graphs, [("sg00", "sg00/def.json"), ("sg01", "sg01/def.json")]);
        assert!(k.check_device(Arch::Cayman, false).is_ok());
        assert!(k.check_device(Arch::Sunda, false).is_err());
    }
}

fn def(neff: &str, sg: &str) -> Option<DefJson> {
    let bytes = read(&format!("{neff}.extracted/{sg}/def.json"))?;
    let mut warnings = Vec::new();
    let d = <DefJson>::parse(&mut tok(), &mut bytes.as_slice(), "sg00/def.json", &mut |w: &Warning| warnings.push(*w))
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    Some(d)
}

#[test]
fn def_json_small() {
    for sg in ["sg00", "sg01"] {
        let Some(d) = def("matmul_small", sg) else { return };
        assert_eq!(d.name.as_deref(), Some("definition"));
        assert_eq!(d.version.as_deref(), Some("0.6"));
        let vars: Vec<_> = d.vars.iter().map(|v| (v.name.as_str(), v.var_type.as_str(), v.var_id, v.size)).collect();
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
        let file = d.var_by_id(4).unwrap();
        assert_eq!(file.alignment, Some(32768));
        assert_eq!(file.file_name.as_deref(), Some("value_sg0000_identity_82_CRSM.npy"));
        assert_eq!(file.fabric_path.as_deref(), Some("main"));
        assert_eq!(file.mr_type(), Some(MrType::Buffer));
        assert_eq!(d.var("output0").unwrap().mr_type_value(), Some(6));
        assert_eq!(d.var("DGETable0").unwrap().list.as_deref(), Some(&[1u32, 2, 3][..]));
        assert_eq!(d.var("DGETable0").unwrap().mr_type(), None);

        let queues = d.dma_queues.as_ref().unwrap();
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
        let carve = d.carveouts.as_ref().unwrap();
        assert_eq!(carve.len(), 1);
        assert_eq!(carve[0].kind(), Some(CarveoutType::Evtaccel));
        let l = carve[0].layout();
        assert_eq!((l.carveout_type, l.offset, l.size, l.start_partition, l.num_partitions), (1, 229368, 8, 0, 128));
        assert!(d.check_carveouts(TargetCheck::Device(Arch::Cayman), false).is_ok());
        let fp8 = d.fp8_info();
        assert!(fp8.initialized);
        assert!(fp8.cfg.fp8_range_extension && fp8.cfg.ocp_sat && !fp8.cfg.fp8_sis && !fp8.cfg.fp8_sns);
        assert_eq!((fp8.cfg.emax_fp8_e4m3, fp8.cfg.emax_fp8_e5m2), (8, 15));
        assert_eq!(d.num_streams(), Some(0));
        assert_eq!(d.shared_scratchpad_size(), Some(0));
    }
}

#[test]
fn def_json_large() {
    let Some(d) = def("matmul_large", "sg00") else { return };
    assert_eq!(d.vars.len(), 22);
    let y = d.var("y").unwrap();
    assert_eq!((y.var_id, y.size), (2, Some(4_294_967_296)));
    assert_eq!(d.var("output0").unwrap().size, Some(16_777_216));
    let spill = d.var("-t125_i0_RematSpillSave0_sg0000").unwrap();
    assert_eq!((spill.var_id, spill.backing_variable_off, spill.size), (5, Some(7_864_320), Some(524_288)));
    assert_eq!(spill.mr_type(), Some(MrType::VirtualTmpBuf));
    assert_eq!(d.shared_scratchpad_size(), Some(16 * 524_288));
    let queues = d.dma_queues.as_ref().unwrap();
    let act = queues.iter().find(|q| q.name == "qActDynamicHW").unwrap();
    assert_eq!(act.owner_engine(), Some(EngineType::Act));
    assert_eq!(act.semaphores(), (40..=55).collect::<Vec<u32>>());
    assert!(d.vars.iter().enumerate().all(|(i, v)| v.var_id as usize == i), "sorted by var_id");
    let Some(d1) = def("matmul_large", "sg01") else { return };
    assert_eq!(d1.vars.len(), 22);
}

#[test]
fn engine_jsons_of_small() {
    let parse = |name: &str| {
        let bytes = read(&format!("matmul_small.extracted/sg00/{name}")).unwrap();
        <EngineJson>::parse(&mut tok(), &mut bytes.as_slice(), name, &mut neff::error::IgnoreWarnings).unwrap()
    };
    if read("matmul_small.extracted/sg00/PE.json").is_none() {
        return;
    }
    let pe = parse("PE.json");
    assert_eq!((pe.instr.as_deref(), pe.name.as_deref(), pe.dma_block_count()), (Some("PE.bin"), Some("PE.json"), 0));
    let act = parse("Activation.json");
    assert_eq!(act.act_info.as_deref(), Some("act_info.json"));
    assert_eq!(act.act_semaphore, Some(12));
    assert_eq!(
        act.activation_function_sets.as_ref().unwrap().iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        ["exp_and_others"]
    );
    let dve = parse("DVE.json");
    let t = &dve.dve_tables.as_ref().unwrap()[0];
    assert_eq!(t.opcode_table.as_deref(), Some("default_opcode_table.bin"));
    assert_eq!(t.datapath_table.as_deref(), Some("default_datapath_table.bin"));
    assert_eq!(t.control_fast_table.as_deref(), Some("default_control_fast_table.bin"));
    assert_eq!(t.control_slow_table.as_deref(), Some("default_control_slow_table.bin"));
    assert_eq!(t.control_table, None);
    for name in ["Pool.json", "SP.json"] {
        assert!(parse(name).instr.is_some());
    }

    let d = def("matmul_small", "sg00").unwrap();
    let mut warnings = Vec::new();
    let instr = neff::manifest::engine::engine_instr(&d, &pe, EngineType::Pe, "sg00/PE.json", &mut |w: &Warning| {
        warnings.push(*w)
    });
    assert_eq!(instr, Some("PE.bin"));
    assert!(warnings.is_empty());

    let bytes = read("matmul_small.extracted/sg00/exp_and_others.json").unwrap();
    let set = <EngineJson>::parse(
        &mut tok(),
        &mut bytes.as_slice(),
        "sg00/exp_and_others.json",
        &mut neff::error::IgnoreWarnings,
    )
    .unwrap();
    assert_eq!(set.bkt_bin.as_deref(), Some("exp_and_others_bkt.bin"));
    assert_eq!(set.ctl_bin.as_deref(), Some("exp_and_others_ctrl.bin"));
    assert!(set.profile_meta_data.unwrap().0 > 0);
    let _ = DmaRingType::Data;
}

#[test]
fn default_capacity_sizes() {
    use std::mem::size_of;
    println!("NeffJson {}", size_of::<NeffJson>());
    println!("Kelf {}", size_of::<Kelf>());
    println!("DefJson {}", size_of::<DefJson>());
    println!("EngineJson {}", size_of::<EngineJson>());
    println!("Tokenizer {}", size_of::<Tokenizer>());
    // The firmware budget: manifests must leave room next to a 32 KiB inflate window in 64 KiB.
    assert!(size_of::<DefJson>() < 24 * 1024);
}
