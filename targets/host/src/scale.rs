//! Generated NEFFs at the scale of real models: thousands of tensors, vars and weights.
//!
//! The built-in [`sample`](crate::sample) is small on purpose; a loader must also take what
//! production compilers emit: hundreds of I/O tensors, `def.json`s with 100,000 variables,
//! thousands of `.npy` weights each its own member, 16 subgraphs, long directory and member
//! names (a tar path of hundreds of bytes goes through a PAX header), dozens of DMA queue
//! sets, several activation sets. [`ScaleSpec`] says how much of each; [`ScaleSpec::build`]
//! writes the NEFF (every byte deterministic), laid out like the sample: byte-wise sorted
//! members, `neff.json` last, so payloads arrive both before and after the `def.json` that
//! names them.
//!
//! The shapes are those of a compiler generation ([`Generation`]): by default `neuronx-cc`
//! 2.21/2.23 for Trn2 (`cayman`), or with the `trn1` preset those of the fifty trn1 NEFFs of
//! `neuronx-cc` 2.0 and 2.18 that spec §15.21 describes (not copied: no license).
//!
//! `cargo run -p neff-cli --example scale-neff -- <preset> <out.neff>` writes one
//! ([`ScaleSpec::preset`] lists the presets); the tests and the firmware image use it.

use std::io;

use crate::sample::{f16_values, npy, pseudo_random, sort_members, MemberOrder};
use crate::writer::{self, HeaderFields};

/// The compiler generation whose shapes a generated NEFF has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// `neuronx-cc` 2.21 and 2.23 for Trn2: target `cayman`, NEFF version 2.0, `lnc_size` the
    /// subgraph count with the `vnc` feature bit (0x400), the cayman state-buffer carveout,
    /// `dynamic` DMA queue sets, float16 weights, `neff.json` last in the tar.
    Trn2,
    /// `neuronx-cc` 2.0 and 2.18 for Trn1 (spec §15.21): target `sunda`, NEFF version 1.0,
    /// `feature_bits` 0, `lnc_size` the subgraph count (1 in the preset), no
    /// `runtime_statebuffer_reservation`; the tar byte-wise sorted with `neff.json` fifth
    /// (after `hlo_stats.json`, `info.json`, `kelf-0.json`, `metrics.json`); besides the
    /// `dynamic` sets, an `in` queue set `qPoolIO0` of 16 queues with its 16 semaphores and an
    /// `out` set `qSPIO0`; weights cycling through int8, float16, float32 and bfloat16 (a
    /// `.npy` whose `descr` is `<V2`, as ml_dtypes writes it), each moved to the state buffer
    /// by a Pool DMA descriptor on the `in` queue: `"op": "cast"` with `from_dtype` and
    /// `to_dtype` `float32` (a plain copy for the float32 ones).
    Trn1,
}

/// A weight's element type ([`Generation::Trn1`] cycles through them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightDtype {
    /// `int8`, `.npy` `|i1`.
    Int8,
    /// `float16`, `<f2`.
    Float16,
    /// `float32`, `<f4`.
    Float32,
    /// `bfloat16`, `<V2` (ml_dtypes' bfloat16 has no NumPy type code).
    Bfloat16,
}

impl WeightDtype {
    /// The dtype string of `def.json` and DMA descriptors (§11.2).
    pub fn name(self) -> &'static str {
        match self {
            WeightDtype::Int8 => "int8",
            WeightDtype::Float16 => "float16",
            WeightDtype::Float32 => "float32",
            WeightDtype::Bfloat16 => "bfloat16",
        }
    }

    /// The `.npy` `descr`.
    pub fn descr(self) -> &'static str {
        match self {
            WeightDtype::Int8 => "|i1",
            WeightDtype::Float16 => "<f2",
            WeightDtype::Float32 => "<f4",
            WeightDtype::Bfloat16 => "<V2",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            WeightDtype::Int8 => 1,
            WeightDtype::Float16 | WeightDtype::Bfloat16 => 2,
            WeightDtype::Float32 => 4,
        }
    }

    /// `count` deterministic values: random bytes for int8, small finite floats otherwise.
    fn values(self, count: u64, label: &str) -> Vec<u8> {
        if self == WeightDtype::Int8 {
            return pseudo_random(label, count as usize, None);
        }
        let halves = f16_values(count, label);
        if self == WeightDtype::Float16 {
            return halves;
        }
        let mut out = Vec::with_capacity((count * self.size()) as usize);
        for h in halves.chunks_exact(2).map(|b| u32::from(u16::from_le_bytes([b[0], b[1]]))) {
            // The same value widened to float32 (finite, normal: exponent 12..14 of 15).
            let single = (h & 0x8000) << 16 | (((h >> 10) & 0x1f) + 112) << 23 | (h & 0x03ff) << 13;
            match self {
                WeightDtype::Float32 => out.extend_from_slice(&single.to_le_bytes()),
                _ => out.extend_from_slice(&((single >> 16) as u16).to_le_bytes()),
            }
        }
        out
    }
}

/// The `in` and `out` queue sets of a [`Generation::Trn1`] `def.json`: name, type, owner,
/// first semaphore (16 queues, 16 semaphores each).
const TRN1_IO_QUEUES: [(&str, &str, &str, usize); 2] = [("qPoolIO0", "in", "pool", 40), ("qSPIO0", "out", "sp", 56)];

/// How big a generated NEFF is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSpec {
    /// Graph inputs of `neff.json`.
    pub inputs: usize,
    /// Graph outputs (distinct names).
    pub outputs: usize,
    /// The most dimensions of a tensor shape (shapes cycle through 1..=this).
    pub max_dims: usize,
    /// Subgraphs (physical cores of the logical core).
    pub subgraphs: usize,
    /// Vars of each `def.json` besides the weights (`tmp-buf`, inputs, an output).
    pub vars_per_subgraph: usize,
    /// `.npy` weights in all, spread over the subgraphs, each its own member.
    pub weights: usize,
    /// Bytes of a subgraph directory name (at least 4: `sg00`, padded).
    pub dir_name_len: usize,
    /// Bytes of a weight's member name inside its directory (at least 12, padded).
    pub member_name_len: usize,
    /// DMA queue sets per `def.json`.
    pub queue_sets: usize,
    /// Queues per set (`num_queues`, at most 16).
    pub queues_per_set: usize,
    /// Semaphores per set (`semaphore_set`, at most 32).
    pub semaphores: usize,
    /// Activation function sets of each subgraph's activation engine.
    pub act_sets: usize,
    /// Whose shapes: Trn2 (the default) or Trn1.
    pub generation: Generation,
    /// DMA descriptors in each subgraph's engine JSONs besides the weights' (0: none), as a
    /// training NEFF's instruction and DMA manifests hold: half in `SP.json`, a third in
    /// `Activation.json`, the rest in `DVE.json`, one to three per block.
    pub dma_descs: usize,
    /// Distinct vars the DMA descriptors name (the first ones of `def.json`; 64 unless set).
    pub dma_vars: usize,
    /// Bytes of a var name in `def.json` (0: `t000123`); vars from the 64th on are padded to
    /// it, as the compiler's `Coalesced_memloc_...` names are (real ones reach 468 bytes).
    pub var_name_len: usize,
    /// Bytes of each subgraph's instruction streams (`PE.bin`, ...) in all (0: a few hundred
    /// bytes each), shared out as a training NEFF's: PE 70 %, Activation 18 %, DVE 6 %, SP
    /// 6 %, Pool a little. Repetitive, as real instruction streams are (they compress about
    /// 15 to 1).
    pub instr_bytes: usize,
    /// Bytes of debug members that nothing reads (0: none): `debug_info/*.dbg_sg000000` (9 %)
    /// and each subgraph's `debug_info_backend_*.dbg` (76 %) and `debug_info_asm_*.dbg` (15 %),
    /// as in a training NEFF; about 5 to 1 compressible.
    pub debug_bytes: usize,
}

impl ScaleSpec {
    /// Small in every direction: what the built-in sample has.
    pub fn small() -> Self {
        Self {
            inputs: 2,
            outputs: 1,
            max_dims: 2,
            subgraphs: 2,
            vars_per_subgraph: 4,
            weights: 2,
            dir_name_len: 4,
            member_name_len: 12,
            queue_sets: 2,
            queues_per_set: 16,
            semaphores: 16,
            act_sets: 1,
            generation: Generation::Trn2,
            dma_descs: 0,
            dma_vars: 64,
            var_name_len: 0,
            instr_bytes: 0,
            debug_bytes: 0,
        }
    }

    /// A named preset: `small`, one per host bar of the scale issue (`io`, `vars`, `weights`,
    /// `subgraphs`, `names`, `queues`, `act-sets`), `host` (all of them at once),
    /// `firmware` (what the Cortex-M4 image embeds), `trn1` (the shapes of the trn1 NEFFs,
    /// [`Generation::Trn1`]: one subgraph, eight weights, two of each dtype) and `training`
    /// (a training NEFF made mostly of JSON: 3.5 MB of DMA descriptors in the engine JSONs,
    /// written before a 1 MB `def.json`, 10 MB of debug members nothing reads, a `neff.json`
    /// of 399 nodes with the KELF node last, at index 398).
    pub fn preset(name: &str) -> Option<Self> {
        let s = Self::small();
        Some(match name {
            "small" => s,
            "io" => Self { inputs: 2000, outputs: 500, max_dims: 32, ..s },
            "vars" => Self { subgraphs: 1, vars_per_subgraph: 100_000, ..s },
            "weights" => Self { weights: 3000, ..s },
            "subgraphs" => Self { subgraphs: 16, weights: 16, ..s },
            "names" => Self { dir_name_len: 300, member_name_len: 200, ..s },
            "queues" => Self { queue_sets: 64, queues_per_set: 16, semaphores: 32, ..s },
            "act-sets" => Self { act_sets: 8, ..s },
            "host" => Self {
                inputs: 2000,
                outputs: 500,
                max_dims: 32,
                subgraphs: 16,
                vars_per_subgraph: 100_000 / 16,
                weights: 3000,
                dir_name_len: 300,
                member_name_len: 200,
                queue_sets: 64,
                queues_per_set: 16,
                semaphores: 32,
                act_sets: 8,
                generation: Generation::Trn2,
                ..s
            },
            "firmware" => Self {
                inputs: 384,
                outputs: 128,
                max_dims: 4,
                subgraphs: 8,
                vars_per_subgraph: 10_000 / 8,
                weights: 500,
                ..s
            },
            "trn1" => Self { subgraphs: 1, weights: 8, generation: Generation::Trn1, ..s },
            // The big NEFF of a torch-neuronx training cache (neuronx-cc 2.14, trn1): 4.7 MB of
            // JSON in 28 MB of tar, 4 MB of NEFF.
            "training" => Self {
                inputs: 398,
                outputs: 1,
                max_dims: 4,
                subgraphs: 1,
                vars_per_subgraph: 3400,
                weights: 3,
                queue_sets: 4,
                act_sets: 3,
                generation: Generation::Trn1,
                dma_descs: 14_000,
                var_name_len: 240,
                instr_bytes: 12_000_000,
                debug_bytes: 10_000_000,
                ..s
            },
            // The shapes of the real NEFFs a controller's arena once refused: engine JSONs
            // before `def.json` (a byte-wise sorted trn1 tar) with 30,000 DMA references over
            // 300 vars, most of them named 468 bytes long, and 1,300 I/O tensors.
            "controller" => Self {
                inputs: 400,
                outputs: 900,
                max_dims: 4,
                subgraphs: 1,
                vars_per_subgraph: 3500,
                weights: 8,
                queue_sets: 4,
                generation: Generation::Trn1,
                dma_descs: 15_000,
                dma_vars: 300,
                var_name_len: 468,
                ..s
            },
            _ => return None,
        })
    }

    /// The preset names [`ScaleSpec::preset`] knows.
    pub const PRESETS: [&'static str; 13] = [
        "small",
        "io",
        "vars",
        "weights",
        "subgraphs",
        "names",
        "queues",
        "act-sets",
        "host",
        "firmware",
        "trn1",
        "training",
        "controller",
    ];

    /// Changes one field from a `field=value` argument (`weights=2`).
    pub fn set(&mut self, arg: &str) -> Result<(), String> {
        let (field, value) = arg.split_once('=').ok_or("expected field=value")?;
        let value: usize = value.parse().map_err(|e| format!("{value:?} is not a count: {e}"))?;
        let slot = match field {
            "inputs" => &mut self.inputs,
            "outputs" => &mut self.outputs,
            "max_dims" => &mut self.max_dims,
            "subgraphs" => &mut self.subgraphs,
            "vars_per_subgraph" => &mut self.vars_per_subgraph,
            "weights" => &mut self.weights,
            "dir_name_len" => &mut self.dir_name_len,
            "member_name_len" => &mut self.member_name_len,
            "queue_sets" => &mut self.queue_sets,
            "queues_per_set" => &mut self.queues_per_set,
            "semaphores" => &mut self.semaphores,
            "act_sets" => &mut self.act_sets,
            "dma_descs" => &mut self.dma_descs,
            "dma_vars" => &mut self.dma_vars,
            "var_name_len" => &mut self.var_name_len,
            "instr_bytes" => &mut self.instr_bytes,
            "debug_bytes" => &mut self.debug_bytes,
            _ => return Err(format!("no field {field:?}")),
        };
        *slot = value;
        Ok(())
    }

    /// The directory of subgraph `sg`.
    pub fn dir(&self, sg: usize) -> String {
        let base = format!("sg{sg:02}");
        let pad = self.dir_name_len.saturating_sub(base.len() + 1);
        if pad == 0 {
            base
        } else {
            format!("{base}_{}", "d".repeat(pad))
        }
    }

    /// The member name (inside its directory) of weight `w`.
    pub fn weight_file(&self, w: usize) -> String {
        let base = format!("w{w:05}");
        let pad = self.member_name_len.saturating_sub(base.len() + 4 + 1);
        if pad == 0 {
            format!("{base}.npy")
        } else {
            format!("{base}_{}.npy", "n".repeat(pad))
        }
    }

    /// The subgraph weight `w` belongs to.
    fn weight_sg(&self, w: usize) -> usize {
        w % self.subgraphs.max(1)
    }

    /// The element type of weight `w`: float16 for Trn2; for Trn1 int8, float16, float32,
    /// bfloat16 in turn.
    pub fn weight_dtype(&self, w: usize) -> WeightDtype {
        match self.generation {
            Generation::Trn2 => WeightDtype::Float16,
            Generation::Trn1 => {
                [WeightDtype::Int8, WeightDtype::Float16, WeightDtype::Float32, WeightDtype::Bfloat16][w % 4]
            }
        }
    }

    /// The bytes of weight `w`'s array.
    fn weight_bytes(&self, w: usize) -> u64 {
        WEIGHT_SHAPE.iter().product::<u64>() * self.weight_dtype(w).size()
    }

    /// The KELF target.
    fn target(&self) -> &'static str {
        match self.generation {
            Generation::Trn2 => "cayman",
            Generation::Trn1 => "sunda",
        }
    }

    /// The shape of entry `eid`: `1 + eid % max_dims` dimensions of 2.
    fn shape(&self, eid: usize) -> Vec<u64> {
        vec![2; 1 + eid % self.max_dims.max(1)]
    }

    /// Every member, in the real NEFFs' order (that of the generation).
    pub fn members(&self) -> Vec<(String, Vec<u8>)> {
        let mut m: Vec<(String, Vec<u8>)> = Vec::new();
        m.push(("kelf-0.json".into(), self.kelf_json().into_bytes()));
        if self.generation == Generation::Trn1 {
            // What the compiler writes beside the manifests, read by no loader.
            let h = self.header();
            m.push(("hlo_stats.json".into(), TRN1_HLO_STATS.as_bytes().to_vec()));
            m.push((
                "info.json".into(),
                format!(
                    "{{\"kelp_version\":\"Dynamic\",\"name\":\"{}\",\"num_tpb\":{},\"num_tpb_per_node\":[1],\"tool_version\":\"neff-cli scale trn1\"}}\n",
                    h.name, h.num_tpb
                )
                .into_bytes(),
            ));
            m.push(("metrics.json".into(), TRN1_METRICS.as_bytes().to_vec()));
        }
        for sg in 0..self.subgraphs {
            let dir = self.dir(sg);
            for (key, stem, size, engine) in ENGINES {
                let label = format!("scale/{sg}/{stem}");
                let instr = match self.instr_bytes {
                    0 => pseudo_random(&label, size, Some(engine)),
                    // Whole 64-byte instructions.
                    total => instruction_stream(&label, total / 1000 * instr_share(key) / 64 * 64, engine),
                };
                m.push((format!("{dir}/{stem}.bin"), instr));
                m.push((format!("{dir}/{stem}.json"), self.engine_json(sg, key, stem).into_bytes()));
                if self.debug_bytes > 0 {
                    // 91 % of the debug bytes are the subgraphs' (backend 76, asm 15), shared by
                    // the engines as the instructions are.
                    let per_engine = self.debug_bytes / 100 / self.subgraphs.max(1) * instr_share(key) / 1000;
                    let asm = debug_info(&format!("{label}/asm"), per_engine * 15);
                    m.push((format!("{dir}/debug_info_asm_{stem}.dbg"), asm));
                    let backend = debug_info(&format!("{label}/be"), per_engine * 76);
                    m.push((format!("{dir}/debug_info_backend_{stem}.dbg"), backend));
                }
            }
            for a in 0..self.act_sets {
                m.push((format!("{dir}/set{a}.json"), set_json(a).into_bytes()));
                m.push((format!("{dir}/set{a}_bkt.bin"), pseudo_random(&format!("scale/{sg}/bkt{a}"), 1024, None)));
                m.push((format!("{dir}/set{a}_ctrl.bin"), pseudo_random(&format!("scale/{sg}/ctl{a}"), 256, None)));
            }
            for (_, file, size) in DVE_TABLES {
                m.push((format!("{dir}/{file}"), pseudo_random(&format!("scale/{sg}/{file}"), size, None)));
            }
            m.push((format!("{dir}/def.json"), self.def_json(sg).into_bytes()));
        }
        for w in 0..self.weights {
            let dir = self.dir(self.weight_sg(w));
            let dtype = self.weight_dtype(w);
            let data = dtype.values(WEIGHT_SHAPE.iter().product(), &format!("scale/w{w}"));
            m.push((format!("{dir}/{}", self.weight_file(w)), npy(dtype.descr(), &WEIGHT_SHAPE, &data)));
        }
        m.push(("neff.json".into(), self.neff_json().into_bytes()));
        if self.debug_bytes > 0 {
            for (name, share) in [("hlo", 6), ("penguin", 2), ("pttf", 1)] {
                let size = self.debug_bytes / 100 * share;
                m.push((format!("debug_info/debug_info_{name}.dbg_sg000000"), debug_info(name, size)));
            }
        }
        let order = match self.generation {
            Generation::Trn2 => MemberOrder::Real,
            Generation::Trn1 => MemberOrder::Sorted,
        };
        sort_members(&mut m, order);
        m
    }

    /// The header: `lnc_size` the subgraph count; Trn2: version 2.0, the `vnc` feature bit;
    /// Trn1: version 1.0, no feature bit.
    pub fn header(&self) -> HeaderFields {
        let mut h = HeaderFields::new("scale.neff", [0x5c; 16], u32::try_from(self.subgraphs).unwrap_or(u32::MAX));
        match self.generation {
            Generation::Trn2 => h.feature_bits = 0x400,
            Generation::Trn1 => {
                h.name = "scale-trn1.neff".into();
                h.neff_version_major = 1;
            }
        }
        h
    }

    /// The whole NEFF file.
    pub fn build(&self) -> io::Result<Vec<u8>> {
        writer::neff_bytes(&self.header(), &self.members())
    }

    fn kelf_json(&self) -> String {
        let graphs: Vec<String> = (0..self.subgraphs)
            .map(|sg| format!("{{\"definition\":\"{}/def.json\",\"name\":\"sg{sg:02}\"}}", self.dir(sg)))
            .collect();
        format!("{{\"graphs\":[{}],\"target\":\"{}\",\"version\":\"0.5\"}}\n", graphs.join(","), self.target())
    }

    fn engine_json(&self, sg: usize, key: &str, stem: &str) -> String {
        match key {
            "pool" if self.generation == Generation::Trn1 => {
                format!("{{\"dma\":[{}],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}", self.weight_dma(sg))
            }
            "act" => {
                let sets: Vec<String> = (0..self.act_sets).map(|a| format!("\"set{a}\"")).collect();
                format!(
                    "{{\"activation_function_sets\":[{}],\"dma\":[{}],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}",
                    sets.join(","),
                    self.engine_dma(sg, key)
                )
            }
            "dve" => {
                let tables: Vec<String> = DVE_TABLES.iter().map(|(k, f, _)| format!("\"{k}\":\"{f}\"")).collect();
                format!(
                    "{{\"dma\":[{}],\"dve_tables\":[{{{}}}],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}",
                    self.engine_dma(sg, key),
                    tables.join(",")
                )
            }
            _ => {
                format!("{{\"dma\":[{}],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}", self.engine_dma(sg, key))
            }
        }
    }

    /// The DMA blocks of engine `key` in subgraph `sg` ([`ScaleSpec::dma_descs`]): one to three
    /// descriptors each, moving slices of the first [`ScaleSpec::dma_vars`] vars to the state
    /// buffer (two references each, to a var and to `SB`), on a queue
    /// the engine owns, the compiler's `#comment` first (as real ones, keys sorted).
    fn engine_dma(&self, sg: usize, key: &str) -> String {
        let share = match key {
            "sp" => 500,
            "act" => 333,
            "dve" => 167,
            _ => 0,
        };
        let count = self.dma_descs * share / 1000;
        let queue = match key {
            "sp" => "qSPIO0".to_string(),
            "act" => "q001".to_string(),
            _ => "q003".to_string(),
        };
        let tmp_vars = self.vars_per_subgraph.saturating_sub(2).clamp(1, self.dma_vars.max(1));
        let mut blocks = Vec::new();
        let mut d = 0;
        while d < count {
            let id = blocks.len();
            let in_block = (1 + (id * 7 + sg) % 3).min(count - d);
            let descs: Vec<String> = (d..d + in_block)
                .map(|i| {
                    let v = i % tmp_vars;
                    let rows = 1 + i % 4;
                    format!(
                        concat!(
                            "{{\"from\":\"{from}\",\"from_dtype\":\"float32\",\"from_off\":0,\"from_sizes\":[4,{rows}],",
                            "\"from_steps\":[1,4],\"num_tiling_dimensions\":1,\"op\":\"copy\",\"to\":\"SB\",",
                            "\"to_dtype\":\"float32\",\"to_off\":{to_off},\"to_sizes\":[4,{rows}],\"to_steps\":[1,262144]}}"
                        ),
                        from = self.var_name(v),
                        rows = rows,
                        to_off = (i * 4096) % 200_000,
                    )
                })
                .collect();
            blocks.push(format!(
                "{{\"#comment\":\"I-{}-{}-block-1\",\"desc\":[{}],\"id\":{id},\"queue\":\"{queue}\"}}",
                18_000 + d * 3,
                d % 7,
                descs.join(",")
            ));
            d += in_block;
        }
        blocks.join(",")
    }

    /// The name of tmp-buf var `v` of a `def.json`: `t000123`, padded to
    /// [`ScaleSpec::var_name_len`] from the 64th on.
    fn var_name(&self, v: usize) -> String {
        let base = format!("t{v:06}");
        if v < 64 || self.var_name_len <= base.len() + 1 {
            return base;
        }
        let stem = "_Coalesced_memloc_input113_local_16355_i108_SpillSave80";
        let mut name = base;
        while name.len() < self.var_name_len {
            name.push_str(stem);
        }
        name.truncate(self.var_name_len);
        name
    }

    /// The Trn1 Pool engine's DMA block: each weight of subgraph `sg` moved from its file var
    /// to the state buffer on the `in` queue, cast to float32 (copied, when it is float32).
    fn weight_dma(&self, sg: usize) -> String {
        let [rows, cols] = WEIGHT_SHAPE;
        let mut descs = Vec::new();
        for (i, w) in (0..self.weights).filter(|&w| self.weight_sg(w) == sg).enumerate() {
            let dtype = self.weight_dtype(w);
            let op = if dtype == WeightDtype::Float32 { "copy" } else { "cast" };
            let row = cols * dtype.size();
            descs.push(format!(
                concat!(
                    "{{\"from\":\"weight{w:05}\",\"from_dtype\":\"{from}\",\"from_off\":0,\"from_sizes\":[{row},{rows}],",
                    "\"from_steps\":[1,{row}],\"num_tiling_dimensions\":1,\"op\":\"{op}\",\"to\":\"SB\",",
                    "\"to_dtype\":\"float32\",\"to_off\":{to_off},\"to_sizes\":[{to_row},{rows}],\"to_steps\":[1,262144]}}"
                ),
                w = w,
                from = dtype.name(),
                row = row,
                rows = rows,
                op = op,
                to_off = i as u64 * cols * 4,
                to_row = cols * 4,
            ));
        }
        let (queue, ..) = TRN1_IO_QUEUES[0];
        format!("{{\"desc\":[{}],\"id\":0,\"queue\":\"{queue}\"}}", descs.join(","))
    }

    fn def_json(&self, sg: usize) -> String {
        let mut s = String::with_capacity(128 * (self.vars_per_subgraph + self.weights / self.subgraphs.max(1)));
        s.push_str("{\"cc_streams\":{\"num_streams\":0},\"dma_queue\":{");
        for q in 0..self.queue_sets {
            if q > 0 {
                s.push(',');
            }
            let owner = ["pe", "act", "pool", "dve", "sp"][q % 5];
            let first = (q * self.semaphores) % 4096;
            let sems: Vec<String> = (first..first + self.semaphores).map(|x| x.to_string()).collect();
            s.push_str(&format!(
                "\"q{q:03}\":{{\"num_queues\":{},\"owner\":\"{owner}\",\"semaphore_set\":[{}],\"type\":\"dynamic\"}}",
                self.queues_per_set,
                sems.join(",")
            ));
        }
        if self.generation == Generation::Trn1 {
            for (name, kind, owner, first) in TRN1_IO_QUEUES {
                let sems: Vec<String> = (first..first + 16).map(|x| x.to_string()).collect();
                let comma = if self.queue_sets > 0 || name != TRN1_IO_QUEUES[0].0 { "," } else { "" };
                s.push_str(&format!(
                    "{comma}\"{name}\":{{\"fabric_path\":\"main\",\"num_queues\":16,\"owner\":\"{owner}\",\"semaphore_set\":[{}],\"type\":\"{kind}\"}}",
                    sems.join(",")
                ));
            }
        }
        s.push_str("},\"name\":\"definition\"");
        for (key, stem, _, _) in ENGINES {
            s.push_str(&format!(",\"{key}\":\"{stem}.json\",\"{key}_instr\":\"{stem}.bin\""));
        }
        // Trn1 NEFFs have no state-buffer carveout (a cayman rule).
        if self.generation == Generation::Trn2 {
            s.push_str(
                ",\"runtime_statebuffer_reservation\":[{\"base_partition\":0,\"offset\":229368,\"partitions\":128,\"size\":8,\"type\":\"evtaccel\"}]",
            );
        }
        s.push_str(",\"var\":{\"SB\":{\"type\":\"state-buffer\",\"var_id\":0},\"output0\":{\"size\":64,\"type\":\"output\",\"var_id\":1}");
        let mut id = 2usize;
        for v in 0..self.vars_per_subgraph.saturating_sub(2) {
            s.push_str(&format!(
                ",\"{}\":{{\"size\":{},\"type\":\"tmp-buf\",\"var_id\":{id}}}",
                self.var_name(v),
                64 + v % 64
            ));
            id += 1;
        }
        for w in (0..self.weights).filter(|&w| self.weight_sg(w) == sg) {
            s.push_str(&format!(
                ",\"weight{w:05}\":{{\"alignment\":64,\"file_name\":\"{}\",\"size\":{},\"type\":\"file\",\"var_id\":{id}}}",
                self.weight_file(w),
                self.weight_bytes(w)
            ));
            id += 1;
        }
        s.push_str("},\"version\":\"0.6\"}\n");
        s
    }

    fn neff_json(&self) -> String {
        let (i, o) = (self.inputs, self.outputs);
        let mut s = String::with_capacity(64 * (i + o) * (1 + self.max_dims / 4));
        s.push_str("{\"nodes\":[");
        for n in 0..i {
            s.push_str(&format!("{{\"op\":\"null\",\"name\":\"in{n:05}\",\"inputs\":[]}},"));
        }
        let outs: Vec<String> = (0..o).map(|n| format!("\"out{n:05}\"")).collect();
        s.push_str(&format!(
            "{{\"op\":\"tvm_op\",\"name\":\"kernel\",\"attrs\":{{\"func_name\":\"__kelf\",\"kelf\":\"kelf-0.json\"}},\"output_names\":[{}]}}],",
            outs.join(",")
        ));
        let args: Vec<String> = (0..i).map(|n| n.to_string()).collect();
        s.push_str(&format!("\"arg_nodes\":[{}],", args.join(",")));
        let heads: Vec<String> = (0..o).map(|n| format!("[{i},{n},0]")).collect();
        s.push_str(&format!("\"heads\":[{}],", heads.join(",")));
        let rows: Vec<String> = (0..=i).map(|n| n.to_string()).chain(std::iter::once((i + o).to_string())).collect();
        s.push_str(&format!("\"node_row_ptr\":[{}],", rows.join(",")));
        let dtypes: Vec<&str> = (0..i + o).map(|_| "\"float16\"").collect();
        let shapes: Vec<String> = (0..i + o)
            .map(|eid| format!("[{}]", self.shape(eid).iter().map(u64::to_string).collect::<Vec<_>>().join(",")))
            .collect();
        s.push_str(&format!(
            "\"attrs\":{{\"dltype\":[\"list_str\",[{}]],\"shape\":[\"list_shape\",[{}]]}}}}\n",
            dtypes.join(","),
            shapes.join(",")
        ));
        s
    }
}

/// Engines: `def.json` key, file stem, instruction bytes, ISA engine code.
const ENGINES: [(&str, &str, usize, u8); 5] = [
    ("pe", "PE", 256, 0),
    ("act", "Activation", 128, 1),
    ("pool", "Pool", 128, 2),
    ("dve", "DVE", 64, 3),
    ("sp", "SP", 64, 3),
];

/// DVE tables: `DVE.json` key, member, size.
const DVE_TABLES: [(&str, &str, usize); 2] =
    [("datapath_table", "datapath_table.bin", 512), ("opcode_table", "opcode_table.bin", 256)];

/// The share (per mille) of a subgraph's instruction and debug bytes each engine has, as in a
/// training NEFF (`PE.bin` 7.8 MB, `Activation.bin` 2.0, `DVE.bin` 1.8, `SP.bin` 0.65, `Pool.bin`
/// 0.001 of 12.2).
fn instr_share(key: &str) -> usize {
    match key {
        "pe" => 640,
        "act" => 180,
        "dve" => 120,
        "sp" => 59,
        _ => 1,
    }
}

/// `size` bytes of instructions for `engine`: 64-byte words from a few templates, with the
/// operands of a counting loop, which compress about as real streams do.
fn instruction_stream(label: &str, size: usize, engine: u8) -> Vec<u8> {
    let templates = pseudo_random(label, 64 * 16, Some(engine));
    let mut out = Vec::with_capacity(size + 64);
    let mut i = 0u32;
    while out.len() < size {
        let t = (i as usize * 7 / 5) % 16;
        let mut word = templates[t * 64..t * 64 + 64].to_vec();
        word[8..12].copy_from_slice(&(i / 3).to_le_bytes());
        word[16..20].copy_from_slice(&(i.wrapping_mul(64) & 0xf_ffff).to_le_bytes());
        out.extend_from_slice(&word);
        i += 1;
    }
    out.truncate(size);
    out
}

/// `size` bytes of debug records (protobuf-like: a tag, a length, an instruction's name and
/// its source line), about 5 to 1 compressible; nothing reads them.
fn debug_info(label: &str, size: usize) -> Vec<u8> {
    let noise = pseudo_random(label, 4096, None);
    let mut out = Vec::with_capacity(size + 96);
    let mut i = 0usize;
    while out.len() < size {
        let record = format!(
            "I-{}-{}_{:02x}{:02x}{:02x} = fusion.{} line {} col {}",
            18_000 + i,
            i % 13,
            noise[i % 4096],
            noise[(i * 7 + 1) % 4096],
            noise[(i * 13 + 2) % 4096],
            i / 5,
            i * 3 % 977,
            i % 80
        );
        out.push(0x0a);
        out.push(record.len() as u8);
        out.extend_from_slice(record.as_bytes());
        i += 1;
    }
    out.truncate(size);
    out
}

/// Every weight's shape: 32 elements (64 bytes of float16).
const WEIGHT_SHAPE: [u64; 2] = [4, 8];

/// `hlo_stats.json` of a Trn1 NEFF (informational).
const TRN1_HLO_STATS: &str = "{\"HloMacCount\":4096,\"Traffic\":1024}\n";
/// `metrics.json` of a Trn1 NEFF (informational).
const TRN1_METRICS: &str = "{\"compile_time_s\":1.0,\"neff_size\":0}\n";

fn set_json(a: usize) -> String {
    format!("{{\"bkt_bin\":\"set{a}_bkt.bin\",\"ctl_bin\":\"set{a}_ctrl.bin\",\"profile_meta_data\":[]}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_have_the_requested_lengths() {
        let s = ScaleSpec::preset("names").unwrap();
        assert_eq!(s.dir(3).len(), 300);
        assert_eq!(s.weight_file(7).len(), 200);
        assert!(s.weight_file(7).ends_with(".npy"));
        let small = ScaleSpec::small();
        assert_eq!((small.dir(1).as_str(), small.weight_file(2).as_str()), ("sg01", "w00002_n.npy"));
    }

    #[test]
    fn every_preset_has_its_counts() {
        for name in ScaleSpec::PRESETS {
            assert!(ScaleSpec::preset(name).is_some(), "{name}");
        }
        let controller = ScaleSpec::preset("controller").unwrap();
        let engines: String = ["sp", "act", "dve"].iter().map(|k| controller.engine_dma(0, k)).collect();
        assert_eq!(engines.matches("\"from\"").count(), 15_000, "15,000 descriptors, 30,000 references");
        let names: std::collections::BTreeSet<&str> =
            engines.split("\"from\":\"").skip(1).filter_map(|s| s.split('"').next()).collect();
        assert_eq!(names.len(), 300, "over 300 vars");
        assert_eq!(names.iter().map(|n| n.len()).max(), Some(468));
        let def = controller.def_json(0);
        assert!(names.iter().all(|n| def.contains(&format!("\"{n}\":"))), "every name a var of def.json");
        let members: Vec<String> = controller.members().into_iter().map(|(n, _)| n).collect();
        let at = |name: &str| members.iter().position(|m| m == name).unwrap();
        assert!(at("sg00/DVE.json") < at("sg00/def.json") && at("sg00/SP.json") < at("sg00/def.json"));
        let vars = ScaleSpec::preset("vars").unwrap();
        let def = vars.def_json(0);
        assert_eq!(def.matches("\"var_id\"").count(), 100_000 + 2, "100,000 vars and both weights");
        let io = ScaleSpec::preset("io").unwrap();
        let neff = io.neff_json();
        assert_eq!(neff.matches("\"op\":\"null\"").count(), 2000);
        assert!(neff.contains("[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2]"));
        assert!(ScaleSpec::preset("nope").is_none());
    }
}
