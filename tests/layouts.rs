//! The runtime's tables as the loader fills them and hands them to the observer, against
//! ground truth: the I/O tensors (`io_node_info_t`) against the runtime's own profile tables
//! (`profile.json`'s `neff_node` rows, written by neuron-profile from a real run) of the ten
//! `trainium-kernel-fusion` NEFFs, and every filled field of every record (`io_node_info_t`,
//! `kbin_dma_t`, `sb_carveout`, `kbin_mem_ref_set_t`, `kbin_cc_streams_t`,
//! `fp8_conversion_info`, the tail of `mla_resources`) against an independent reading of the manifests with `serde_json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;

use std::collections::BTreeMap;

use common::neff::members;
use neff::archive::{Archive, OpenOptions};
use neff::error::Warning;
use neff::loader::{LoadOptions, LoadReport, Loader, Observer, Storage, SubgraphTables};
use neff::manifest::def::Fp8Overrides;
use neff::manifest::{Arch, IoKind, IoNodeInfo, IoTensor, KbinDmaHeader, SbCarveout};
use neff::sim::SimDevice;
use serde_json::Value;

/// One I/O tensor as observed: `(name, dtype string, shape, size, its io_node_info_t)`.
type Tensor = (String, String, Vec<u32>, u64, IoNodeInfo);

#[derive(Default)]
struct Tables {
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    queues: Vec<(String, String, KbinDmaHeader)>,
    carveouts: Vec<(String, u16, SbCarveout)>,
    subgraphs: Vec<(String, SubgraphTables)>,
}

impl Observer for Tables {
    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        let row = (t.name.to_owned(), t.dtype.to_owned(), t.shape.to_vec(), t.size, t.info());
        match t.kind {
            IoKind::Input => self.inputs.push(row),
            IoKind::Output => self.outputs.push(row),
        }
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        self.queues.push((member.to_owned(), name.to_owned(), *queue));
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        self.carveouts.push((member.to_owned(), index, *carveout));
    }
    fn subgraph_tables(&mut self, member: &str, tables: &SubgraphTables) {
        self.subgraphs.push((member.to_owned(), *tables));
    }
}

fn load(bytes: &[u8], options: LoadOptions) -> Tables {
    let mut arena = vec![0u8; 8 << 20];
    let mut replay = vec![0u8; 8 << 20];
    let mut deferred = vec![None; 256];
    let mut whole = vec![0u8; 1 << 16];
    let mut dev: SimDevice<4096> = SimDevice::digest_only(1 << 40, Arch::Cayman);
    let mut archive =
        Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let storage = Storage { arena: &mut arena, replay: &mut replay, deferred: &mut deferred, whole_names: &mut whole };
    let mut loader = Loader::with_storage(storage, options);
    let mut report = LoadReport::default();
    let mut tables = Tables::default();
    loader.load(&mut archive, &mut dev, &mut report, &mut tables, &mut |_: &Warning| {}).unwrap();
    tables
}

/// `nrt_dtype_t` value and element size of an I/O dtype string (spec §11.1), written out here
/// rather than taken from the crate.
fn nrt_dtype(s: &str) -> (u32, u64) {
    match s {
        "uint64" => (1, 8),
        "int8" => (2, 1),
        "uint8" => (3, 1),
        "int16" => (4, 2),
        "uint16" => (5, 2),
        "bfloat16" => (6, 2),
        "float16" => (7, 2),
        "int32" => (8, 4),
        "uint32" => (9, 4),
        "float32" => (10, 4),
        "int64" => (12, 8),
        _ => (0, 1),
    }
}

/// The I/O tensors of a `neff.json` by the seed's algorithm (§5.4), keyed by name as libnrt's
/// maps are (a later entry replaces an earlier one): `(inputs, outputs)` as
/// `name -> (dtype, shape, size)`.
type Io = BTreeMap<String, (String, Vec<u32>, u64)>;
fn independent_io(neff_json: &Value) -> (Io, Io) {
    let nodes = neff_json["nodes"].as_array().unwrap();
    let rows: Vec<u64> = neff_json["node_row_ptr"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let dltype = neff_json["attrs"]["dltype"][1].as_array().unwrap();
    let shapes = neff_json["attrs"]["shape"][1].as_array().unwrap();
    let tensor = |eid: usize| {
        let dtype = dltype[eid].as_str().unwrap().to_owned();
        let shape: Vec<u32> = shapes[eid].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as u32).collect();
        let size = shape.iter().fold(nrt_dtype(&dtype).1, |a, &d| a * u64::from(d));
        (dtype, shape, size)
    };
    let mut inputs = Io::new();
    for idx in neff_json["arg_nodes"].as_array().unwrap() {
        let idx = idx.as_u64().unwrap() as usize;
        inputs.insert(nodes[idx]["name"].as_str().unwrap().to_owned(), tensor(rows[idx] as usize));
    }
    let mut outputs = Io::new();
    for head in neff_json["heads"].as_array().unwrap() {
        let (node, out) = (head[0].as_u64().unwrap() as usize, head[1].as_u64().unwrap() as usize);
        let name = nodes[node]["output_names"].get(out).and_then(Value::as_str).or(nodes[node]["name"].as_str());
        outputs.insert(name.unwrap().to_owned(), tensor(rows[node] as usize + out));
    }
    (inputs, outputs)
}

fn by_name(rows: &[Tensor]) -> BTreeMap<String, Tensor> {
    rows.iter().map(|r| (r.0.clone(), r.clone())).collect()
}

/// The ten NEFFs with their profile, `(dir, neff bytes, profile)`.
fn kernel_fusion() -> Vec<(String, Vec<u8>, Value)> {
    let Some(root) = common::fixture("public/trainium-kernel-fusion") else { return Vec::new() };
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let neff = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "neff"))
            .unwrap();
        let profile: Value = serde_json::from_slice(&std::fs::read(dir.join("profile.json")).unwrap()).unwrap();
        out.push((dir.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(neff).unwrap(), profile));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn io_tensors_agree_with_the_runtime_s_profile_tables() {
    let neffs = kernel_fusion();
    if neffs.is_empty() {
        return;
    }
    assert_eq!(neffs.len(), 10);
    for (name, bytes, profile) in &neffs {
        let tables = load(bytes, LoadOptions::default());
        for (kind, rows) in [("IN", &tables.inputs), ("OUT", &tables.outputs)] {
            let want: BTreeMap<String, (Vec<u32>, u64)> = profile["neff_node"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["type"] == kind)
                .map(|r| {
                    let shape = r["shape"].as_str().unwrap().trim_matches(['[', ']']);
                    let shape = shape.split_whitespace().map(|d| d.parse().unwrap()).collect();
                    (
                        r["variable_name"].as_str().unwrap().to_owned(),
                        (shape, r["size"].as_str().unwrap().parse().unwrap()),
                    )
                })
                .collect();
            assert!(!want.is_empty(), "{name}: no {kind} rows in the profile");
            let got = by_name(rows);
            assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{name} {kind}: names");
            for (tensor, (shape, size)) in &want {
                let (_, dtype, got_shape, got_size, info) = &got[tensor];
                assert_eq!((got_shape, got_size), (shape, size), "{name} {kind} {tensor}");
                // The profile has no dtype column: its size over the shape is the dtype's width.
                let elements: u64 = shape.iter().map(|&d| u64::from(d)).product();
                assert_eq!(nrt_dtype(dtype).1 * elements, *size, "{name} {kind} {tensor}: {dtype}");
                assert_eq!((info.size, info.dtype, info.ndim), (*size, nrt_dtype(dtype).0, shape.len() as u32));
                assert_eq!(&info.shape[..shape.len()], shape.as_slice(), "{name} {kind} {tensor}");
                assert!(info.shape[shape.len()..].iter().all(|&d| d == 0), "{name} {kind} {tensor}: unused dims");
            }
        }
        println!("{name}: {} inputs, {} outputs as in profile.json", tables.inputs.len(), tables.outputs.len());
    }
}

/// Every public real NEFF: each record the observer got, field by field, against the manifests
/// read with `serde_json`.
#[test]
fn every_filled_record_agrees_with_an_independent_reading() {
    let neffs = common::public_neffs();
    for (name, path) in &neffs {
        let bytes = std::fs::read(path).unwrap();
        let files: BTreeMap<String, Vec<u8>> = members(&bytes).into_iter().collect();
        let json = |m: &str| -> Value { serde_json::from_slice(&files[m]).unwrap() };
        let tables = load(&bytes, LoadOptions::default());
        // io_node_info_t of every tensor.
        let (inputs, outputs) = independent_io(&json("neff.json"));
        for (rows, want) in [(&tables.inputs, &inputs), (&tables.outputs, &outputs)] {
            let got = by_name(rows);
            assert_eq!(got.len(), want.len(), "{name}");
            for (tensor, (dtype, shape, size)) in want {
                let (_, d, s, z, info) = &got[tensor];
                assert_eq!((d, s, z), (dtype, shape, size), "{name} {tensor}");
                let mut dims = [0u32; 32];
                dims[..shape.len()].copy_from_slice(shape);
                let want_info =
                    IoNodeInfo { size: *size, dtype: nrt_dtype(dtype).0, shape: dims, ndim: shape.len() as u32 };
                assert_eq!(*info, want_info, "{name} {tensor}");
            }
        }
        // Per subgraph: kbin_dma_t of each queue set, sb_carveout of each carveout, and the
        // subgraph-wide records.
        assert!(!tables.subgraphs.is_empty(), "{name}");
        for (member, sub) in &tables.subgraphs {
            let def = json(member);
            let vars = def["var"].as_object().unwrap();
            let shared = vars
                .values()
                .filter(|v| v["type"] == "virtual")
                .map(|v| v["backing_variable_off"].as_u64().unwrap_or(0) + v["size"].as_u64().unwrap_or(0))
                .max()
                .unwrap_or(0);
            let set = sub.mem_ref_set.unwrap();
            assert_eq!(
                (set.nmem as usize, set.shared_scratchpad_size, set.local_scratchpad_size),
                (vars.len(), shared, 0)
            );
            let read = def["num_streams"].as_u64().or(def["cc_streams"]["num_streams"].as_u64());
            assert_eq!(u64::from(sub.cc_streams.num_streams), read.unwrap_or(1), "{name} {member}");
            // mla_resources' tail: CCSTMI, the fp8 config, the input and output var counts.
            let tail = sub.mla_tail.unwrap();
            let count = |t: &str| vars.values().filter(|v| v["type"] == t).count() as u32;
            assert_eq!(u64::from(tail.ccstmi), read.unwrap_or(0), "{name} {member}");
            assert_eq!((tail.num_inputs, tail.num_outputs), (count("input"), count("output")), "{name} {member}");
            assert_eq!(tail.fp8_conv_cfg, sub.fp8, "{name} {member}");
            let fp8 = &def["fp8_conversion_config"];
            assert_eq!(sub.fp8.initialized, fp8.is_object(), "{name} {member}");
            if fp8.is_object() {
                let c = sub.fp8.cfg;
                assert_eq!(c.fp8_range_extension, fp8["fp8_range_extension"].as_bool().unwrap_or(false));
                assert_eq!(u64::from(c.emax_fp8_e4m3), fp8["emax_fp8_e4m3"].as_u64().unwrap_or(0));
                assert_eq!(u64::from(c.emax_fp8_e5m2), fp8["emax_fp8_e5m2"].as_u64().unwrap_or(0));
                assert_eq!(c.ocp_sat, fp8["ocp_sat"].as_bool().unwrap_or(false));
                assert_eq!(c.fp8_sis, fp8["fp8_sis"].as_bool().unwrap_or(false));
                assert_eq!(c.fp8_sns, fp8["fp8_sns"].as_bool().unwrap_or(false));
            }
            let queues = def["dma_queue"].as_object().map_or(0, |q| q.len());
            let seen: Vec<_> = tables.queues.iter().filter(|(m, ..)| m == member).collect();
            assert_eq!(seen.len(), queues, "{name} {member}");
            for (_, qname, q) in seen {
                let j = &def["dma_queue"][qname.as_str()];
                let sems: Vec<u32> = match (j["semaphore_set"].as_array(), j["semaphore"].as_u64()) {
                    (Some(set), _) => set.iter().map(|s| s.as_u64().unwrap() as u32).collect(),
                    (None, Some(one)) => vec![one as u32],
                    _ => vec![],
                };
                assert_eq!(q.semaphore_cnt as usize, sems.len(), "{name} {qname}");
                assert_eq!(&q.semaphores[..sems.len()], sems.as_slice(), "{name} {qname}");
                assert!(q.semaphores[sems.len()..].iter().all(|&s| s == 0));
                assert_eq!(u64::from(q.queue_set_cnt), j["num_queues"].as_u64().unwrap_or(1), "{name} {qname}");
                let owner = match j["owner"].as_str() {
                    Some("pe") => 0,
                    Some("act") => 1,
                    Some("pool") => 2,
                    Some("dve") => 3,
                    Some("sp") => 4,
                    _ => 5,
                };
                assert_eq!(q.owner, owner, "{name} {qname}");
                // kbin_dma_ring_type (spec §11.5); `dynamic` has no published value.
                let indirect = j["indirect_memcpy"].as_bool().unwrap_or(false);
                let ring = match j["type"].as_str().unwrap() {
                    "in" => 7,
                    "out" => 8,
                    "data" if indirect => 9,
                    "data" => 6,
                    "act_load" => 11,
                    "embedding_update" => 15,
                    _ => u32::MAX,
                };
                assert_eq!(q.ring_type, ring, "{name} {qname}");
                assert_eq!((q.flags, q.pseudo_serialization_semaphore_cnt), (0, 0), "the runtime's own");
                let dyn_dma = &j["dynamic_dma"];
                assert_eq!(
                    u64::from(q.dge_sb_scratch_addr),
                    dyn_dma["SB_scratch_partition_offset"].as_u64().unwrap_or(0)
                );
                assert_eq!(
                    u64::from(q.dge_sb_scratch_size),
                    dyn_dma["SB_scratch_partition_size"].as_u64().unwrap_or(0)
                );
                let instances = j["queue_instances"].as_array().map_or(0, Vec::len);
                assert_eq!(q.ring_instance_count as usize, instances, "{name} {qname}");
            }
            let carveouts = def["runtime_statebuffer_reservation"].as_array().cloned().unwrap_or_default();
            let seen: Vec<_> = tables.carveouts.iter().filter(|(m, ..)| m == member).collect();
            assert_eq!(seen.len(), carveouts.len(), "{name} {member}");
            for (_, index, c) in seen {
                let j = &carveouts[usize::from(*index)];
                let either = |a: &str, b: &str| j[a].as_u64().or(j[b].as_u64()).unwrap();
                assert_eq!(c.carveout_type, if j["type"] == "evtaccel" { 1 } else { 0 });
                assert_eq!((c.offset, c.size), (j["offset"].as_u64().unwrap(), j["size"].as_u64().unwrap()));
                assert_eq!(c.start_partition, either("base_partition", "start_partition"));
                assert_eq!(c.num_partitions, either("partitions", "num_partitions"));
            }
        }
        println!(
            "{name}: {} tensors, {} queue sets, {} carveouts, {} subgraphs agree",
            tables.inputs.len() + tables.outputs.len(),
            tables.queues.len(),
            tables.carveouts.len(),
            tables.subgraphs.len()
        );
    }
}

/// `LoadOptions::fp8` reaches the config the observer gets, in place of the document's values.
#[test]
fn fp8_overrides_reach_the_observed_config() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let plain = load(&bytes, LoadOptions::default());
    let mut fp8 = Fp8Overrides::default();
    fp8.set("NEURON_RT_DBG_FP8_EMAX_E4M3", "5").unwrap();
    fp8.set("NEURON_RT_DBG_OCP_FP8_SAT", "0").unwrap();
    let overridden = load(&bytes, LoadOptions { fp8, ..LoadOptions::default() });
    assert!(!plain.subgraphs.is_empty());
    for ((_, a), (_, b)) in plain.subgraphs.iter().zip(&overridden.subgraphs) {
        assert!(a.fp8.initialized, "matmul_small has fp8_conversion_config");
        assert_eq!((a.fp8.cfg.emax_fp8_e4m3, a.fp8.cfg.ocp_sat), (8, true), "the document's values");
        assert_eq!((b.fp8.cfg.emax_fp8_e4m3, b.fp8.cfg.ocp_sat), (5, false), "the overrides");
        assert_eq!(b.fp8.cfg.emax_fp8_e5m2, a.fp8.cfg.emax_fp8_e5m2, "the rest stays");
    }
}
