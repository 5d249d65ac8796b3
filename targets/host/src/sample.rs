//! The built-in sample NEFF, and a builder for good and bad variants of it.
//!
//! The sample is made by this project, not copied from anywhere: a small matmul-shaped NEFF
//! for `cayman` (Trn2) with logical-core size 2, laid out like the `neuronx-cc` output in
//! `spec/neff-format.md` §3.4 and §14:
//!
//! * `neff.json` (TVM graph: inputs `x` `[64,128]` and `y` `[128,64]` float16, a `__kelf`
//!   node naming `kelf-0.json`, output `output0` `[64,64]` float16);
//! * `kelf-0.json` (`graphs` `sg00`, `sg01`, version `0.5`, the target);
//! * per subgraph `sgNN/`: `def.json` (vars `SB`, `x`, `y`, `output0`, a `file` var backed by a
//!   NumPy v1 `.npy` weight whose shape matches its size, a `virtual` spill var; three dynamic
//!   DMA queue sets with `semaphore_set`; engines `pe act pool dve sp` with their `_instr`
//!   twins; the cayman event-accelerator carveout; `fp8_conversion_config`; `cc_streams`),
//!   the five engine JSONs, `act_info.json`, the `exp_and_others` activation set JSON with its
//!   bucket and control tables, the four DVE tables, and the five instruction streams (sizes
//!   multiples of 64, deterministic pseudo-random slots with the engine in the opcode byte);
//! * `info.json`, `hlo_stats.json` and a `debug_info/` member that a loader skips.
//!
//! Members are written in the order the real NEFFs use: byte-wise sorted paths (so payloads
//! such as `sg00/PE.bin` come before `sg00/def.json`), with `neff.json` last. Every byte is
//! deterministic. [`SampleBuilder`] has knobs for tests: the target, the number of subgraphs,
//! the packaging version and header fields, dropping, replacing or editing members, and the
//! member order.
//!
//! This module is shared with the build script, so it uses only std and [`crate::writer`].

use std::io;

use crate::writer::{self, HeaderFields};

/// Engines of a subgraph: `def.json` key, file stem, instruction bytes, ISA engine code.
const ENGINES: [(&str, &str, usize, u8); 5] = [
    ("pe", "PE", 768, 0),
    ("act", "Activation", 320, 1),
    ("pool", "Pool", 448, 2),
    ("dve", "DVE", 128, 3),
    ("sp", "SP", 192, 3),
];

/// DVE tables: `DVE.json` key, member file, size (the sizes `neuronx-cc` writes).
const DVE_TABLES: [(&str, &str, usize); 4] = [
    ("control_fast_table", "default_control_fast_table.bin", 4096),
    ("control_slow_table", "default_control_slow_table.bin", 4096),
    ("datapath_table", "default_datapath_table.bin", 16384),
    ("opcode_table", "default_opcode_table.bin", 1024),
];

/// Shapes of the sample's tensors (float16, 2 bytes an element).
const X_SHAPE: [u64; 2] = [64, 128];
const Y_SHAPE: [u64; 2] = [128, 64];
const OUT_SHAPE: [u64; 2] = [64, 64];
/// The weight's NumPy shape (CRSM layout, as the compiler writes constants).
const WEIGHT_SHAPE: [u64; 4] = [64, 64, 1, 1];
/// Size of the virtual (spill) variable in each subgraph.
const SPILL_SIZE: u64 = 16384;

/// In which order members go into the tar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberOrder {
    /// As `neuronx-cc` 2.21 and 2.23 write: byte-wise sorted, `neff.json` last.
    Real,
    /// Byte-wise sorted, `neff.json` among the others (as `neuronx-cc` 2.0 and 2.18 write
    /// for trn1: after `hlo_stats.json`, `info.json`, `kelf-0.json` and `metrics.json`, the
    /// fifth member; spec §15.21).
    Sorted,
    /// Manifests first (`neff.json`, `kelf-*.json`, `def.json`s, engine JSONs), then the rest.
    ManifestsFirst,
    /// The real order reversed (`neff.json` first, payloads after the JSON that names them).
    Reversed,
}

#[derive(Debug, Clone)]
enum Edit {
    Drop(String),
    Replace(String, Vec<u8>),
    ReplaceText { member: String, from: String, to: String },
    Add(String, Vec<u8>),
}

/// Builds the sample NEFF, or a variant of it.
///
/// ```
/// use neff_host::sample::SampleBuilder;
/// # fn main() -> std::io::Result<()> {
/// let good = SampleBuilder::new().build()?;
/// let v2 = SampleBuilder::new().target("sunda").build()?;
/// let no_def = SampleBuilder::new().drop_member("sg01/def.json").build()?;
/// let bad = SampleBuilder::new().replace_text("sg00/def.json", "\"size\":16384", "\"size\":\"big\"").build()?;
/// assert_eq!(good.as_slice(), neff_host::SAMPLE_NEFF);
/// assert!(no_def != good && bad != good && v2 != good);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SampleBuilder {
    target: String,
    subgraphs: usize,
    header: HeaderFields,
    order: MemberOrder,
    edits: Vec<Edit>,
}

impl Default for SampleBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl SampleBuilder {
    /// The sample as the `neff` binary embeds it: `cayman`, LNC 2, pkg 2.
    pub fn new() -> Self {
        let mut header = HeaderFields::new("sample.neff", sample_uuid(), 2);
        // neff_feature_vnc (0x400): the logical core spans two physical cores.
        header.feature_bits = 0x400;
        Self { target: "cayman".into(), subgraphs: 2, header, order: MemberOrder::Real, edits: Vec::new() }
    }

    /// The `kelf-0.json` target, written as given (`"sunda"`, `"v3"`, `"*"`, `""` ...).
    pub fn target(mut self, target: &str) -> Self {
        self.target = target.into();
        self
    }

    /// The number of subgraphs (`sg00` ...); the header's `lnc_size` follows it.
    pub fn subgraphs(mut self, n: usize) -> Self {
        self.subgraphs = n;
        self.header.lnc_size = u32::try_from(n).unwrap_or(u32::MAX);
        self
    }

    /// The packaging version: 2 (gzip, MD5) or 1 (raw tar, SHA-256).
    pub fn pkg_version(mut self, v: u64) -> Self {
        self.header.pkg_version = v;
        self
    }

    /// Changes header fields (applied after [`SampleBuilder::subgraphs`]).
    pub fn header(mut self, edit: impl FnOnce(&mut HeaderFields)) -> Self {
        edit(&mut self.header);
        self
    }

    /// The member order.
    pub fn order(mut self, order: MemberOrder) -> Self {
        self.order = order;
        self
    }

    /// Leaves a member out.
    pub fn drop_member(mut self, name: &str) -> Self {
        self.edits.push(Edit::Drop(name.into()));
        self
    }

    /// Replaces a member's bytes.
    pub fn replace_member(mut self, name: &str, bytes: &[u8]) -> Self {
        self.edits.push(Edit::Replace(name.into(), bytes.to_vec()));
        self
    }

    /// Replaces the first occurrence of `from` by `to` in a member's text (to corrupt a key).
    /// A member that does not contain `from` makes [`SampleBuilder::members`] fail, so a test
    /// never silently builds the good sample.
    pub fn replace_text(mut self, member: &str, from: &str, to: &str) -> Self {
        self.edits.push(Edit::ReplaceText { member: member.into(), from: from.into(), to: to.into() });
        self
    }

    /// Adds a member (placed by the member order like the others).
    pub fn add_member(mut self, name: &str, bytes: &[u8]) -> Self {
        self.edits.push(Edit::Add(name.into(), bytes.to_vec()));
        self
    }

    /// The header fields that [`SampleBuilder::build`] writes.
    pub fn header_fields(&self) -> &HeaderFields {
        &self.header
    }

    /// The members, in tar order.
    pub fn members(&self) -> io::Result<Vec<(String, Vec<u8>)>> {
        let mut members = self.base_members();
        for edit in &self.edits {
            match edit {
                Edit::Drop(name) => {
                    let before = members.len();
                    members.retain(|(n, _)| n != name);
                    if members.len() == before {
                        return Err(missing(name));
                    }
                }
                Edit::Replace(name, bytes) => {
                    let slot = members.iter_mut().find(|(n, _)| n == name).ok_or_else(|| missing(name))?;
                    slot.1 = bytes.clone();
                }
                Edit::ReplaceText { member, from, to } => {
                    let slot = members.iter_mut().find(|(n, _)| n == member).ok_or_else(|| missing(member))?;
                    let text = String::from_utf8_lossy(&slot.1).into_owned();
                    if !text.contains(from.as_str()) {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!("sample member {member} does not contain {from:?}"),
                        ));
                    }
                    slot.1 = text.replacen(from.as_str(), to, 1).into_bytes();
                }
                Edit::Add(name, bytes) => members.push((name.clone(), bytes.clone())),
            }
        }
        sort_members(&mut members, self.order);
        Ok(members)
    }

    /// The whole NEFF file.
    pub fn build(&self) -> io::Result<Vec<u8>> {
        writer::neff_bytes(&self.header, &self.members()?)
    }

    fn base_members(&self) -> Vec<(String, Vec<u8>)> {
        let mut m: Vec<(String, Vec<u8>)> = Vec::new();
        let mut add = |name: String, body: Vec<u8>| m.push((name, body));
        add("debug_info/debug_info_stack_frame_index.dbg".into(), pseudo_random("debug_info", 51, None));
        add("info.json".into(), info_json(&self.header).into_bytes());
        add("hlo_stats.json".into(), HLO_STATS.as_bytes().to_vec());
        add("kelf-0.json".into(), kelf_json(&self.target, self.subgraphs).into_bytes());
        for sg in 0..self.subgraphs {
            let dir = format!("sg{sg:02}");
            for (key, stem, size, engine) in ENGINES {
                add(format!("{dir}/{stem}.bin"), pseudo_random(&format!("{dir}/{stem}"), size, Some(engine)));
                add(format!("{dir}/{stem}.json"), engine_json(key, stem).into_bytes());
            }
            add(format!("{dir}/act_info.json"), ACT_INFO.as_bytes().to_vec());
            add(format!("{dir}/exp_and_others.json"), ACT_SET.as_bytes().to_vec());
            add(format!("{dir}/exp_and_others_bkt.bin"), pseudo_random(&format!("{dir}/bkt"), 4096, None));
            add(format!("{dir}/exp_and_others_ctrl.bin"), pseudo_random(&format!("{dir}/ctrl"), 1024, None));
            for (_, file, size) in DVE_TABLES {
                add(format!("{dir}/{file}"), pseudo_random(&format!("{dir}/{file}"), size, None));
            }
            add(format!("{dir}/{}", weight_file(sg)), npy_f16(&WEIGHT_SHAPE, &format!("{dir}/weight")));
            add(format!("{dir}/def.json"), def_json(sg).into_bytes());
        }
        add("neff.json".into(), neff_json().into_bytes());
        m
    }
}

fn missing(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("sample has no member {name}"))
}

/// Puts members in the requested order (stable for equal keys).
pub fn sort_members(members: &mut [(String, Vec<u8>)], order: MemberOrder) {
    match order {
        MemberOrder::Real => members.sort_by(|a, b| real_order_key(&a.0).cmp(&real_order_key(&b.0))),
        MemberOrder::Sorted => members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes())),
        MemberOrder::Reversed => {
            members.sort_by(|a, b| real_order_key(&a.0).cmp(&real_order_key(&b.0)));
            members.reverse();
        }
        MemberOrder::ManifestsFirst => {
            members.sort_by(|a, b| manifest_rank(&a.0).cmp(&manifest_rank(&b.0)).then_with(|| a.0.cmp(&b.0)))
        }
    }
}

/// Sort key of the real NEFFs' tar order: byte-wise path order, `neff.json` last.
pub fn real_order_key(name: &str) -> (bool, &[u8]) {
    (name == "neff.json", name.as_bytes())
}

fn manifest_rank(name: &str) -> u8 {
    let base = name.rsplit('/').next().unwrap_or(name);
    if name == "neff.json" {
        0
    } else if name.starts_with("kelf-") {
        1
    } else if base == "def.json" {
        2
    } else if base.ends_with(".json") {
        3
    } else {
        4
    }
}

fn weight_file(sg: usize) -> String {
    format!("value_sg{sg:02}00_identity_7_CRSM.npy")
}

/// A fixed UUID (RFC 4122 version 4 bits set) so that the sample's bytes never change.
fn sample_uuid() -> [u8; 16] {
    let mut uuid = [0u8; 16];
    let mut state = seed("neff sample uuid");
    for b in uuid.iter_mut() {
        *b = next(&mut state) as u8;
    }
    uuid[6] = (uuid[6] & 0x0f) | 0x40;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

fn seed(label: &str) -> u64 {
    // FNV-1a over the label: a stable seed per member.
    label.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn next(state: &mut u64) -> u64 {
    // xorshift64*: deterministic filler, no quality needed.
    let mut x = *state | 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// `size` deterministic bytes. With `engine`, every 64-byte slot gets an instruction-like
/// head: byte 0 `opcode | engine << 5`, byte 1 `0x10` (16 words), as in §9.1.
pub fn pseudo_random(label: &str, size: usize, engine: Option<u8>) -> Vec<u8> {
    let mut state = seed(label);
    let mut out: Vec<u8> = (0..size).map(|_| next(&mut state) as u8).collect();
    if let Some(engine) = engine {
        for slot in out.chunks_mut(64) {
            if slot.len() >= 2 {
                slot[0] = (slot[0] & 0x1f) | (engine << 5);
                slot[1] = 0x10;
            }
        }
    }
    out
}

/// A NumPy v1 `.npy` file: the header for `descr` and `shape`, then `data` as given.
pub fn npy(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    // The header (magic 6 + version 2 + length 2 + dict + '\n') is padded with spaces to 64.
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// `count` deterministic small finite float16 values (little-endian).
pub fn f16_values(count: u64, label: &str) -> Vec<u8> {
    let mut state = seed(label);
    let mut out = Vec::new();
    for _ in 0..count {
        // Small finite float16 values: sign, exponent 0b01100..0b01110, random mantissa.
        let r = next(&mut state);
        let exp = 12 + (r % 3) as u16;
        let half = ((r >> 8) as u16 & 0x8000) | (exp << 10) | ((r >> 24) as u16 & 0x03ff);
        out.extend_from_slice(&half.to_le_bytes());
    }
    out
}

/// A NumPy v1 `.npy` file of little-endian float16 values with the given shape.
pub fn npy_f16(shape: &[u64], label: &str) -> Vec<u8> {
    npy("<f2", shape, &f16_values(shape.iter().product(), label))
}

fn list(values: impl IntoIterator<Item = u64>) -> String {
    let v: Vec<String> = values.into_iter().map(|x| x.to_string()).collect();
    format!("[{}]", v.join(","))
}

fn info_json(h: &HeaderFields) -> String {
    format!(
        "{{\"tool_version\":\"neff-cli sample\",\"kelp_version\":\"Dynamic\",\"name\":\"{}\",\"num_tpb\":{},\"num_tpb_requested\":{},\"num_tpb_per_node\":{}}}\n",
        h.name,
        h.num_tpb,
        h.requested_tpb_count,
        list(h.tpb_per_node.iter().map(|&b| u64::from(b)))
    )
}

fn kelf_json(target: &str, subgraphs: usize) -> String {
    let graphs: Vec<String> =
        (0..subgraphs).map(|i| format!("{{\"definition\":\"sg{i:02}/def.json\",\"name\":\"sg{i:02}\"}}")).collect();
    format!("{{\"graphs\":[{}],\"version\":\"0.5\",\"target\":\"{target}\"}}\n", graphs.join(","))
}

fn engine_json(key: &str, stem: &str) -> String {
    match key {
        "act" => format!(
            "{{\"act_info\":\"act_info.json\",\"act_semaphore\":12,\"activation_function_sets\":[\"exp_and_others\"],\"dma\":[],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}"
        ),
        "dve" => {
            let tables: Vec<String> = DVE_TABLES.iter().map(|(k, f, _)| format!("\"{k}\":\"{f}\"")).collect();
            format!(
                "{{\"dma\":[],\"dve_tables\":[{{{}}}],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}",
                tables.join(",")
            )
        }
        _ => format!("{{\"dma\":[],\"instr\":\"{stem}.bin\",\"name\":\"{stem}.json\"}}"),
    }
}

fn bytes_of(shape: &[u64]) -> u64 {
    shape.iter().product::<u64>() * 2
}

fn def_json(sg: usize) -> String {
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut key = |k: &str, v: String| keys.push((k.to_owned(), v));
    key("#rank_world_size", "0".into());
    key("cc_streams", "{\"num_streams\":0}".into());
    key("debug_info", "{}".into());
    let queue = |owner: &str, first: u64, dynamic_dma: bool| {
        let dma = if dynamic_dma {
            "\"dynamic_dma\":{\"SB_scratch_partition_offset\":0,\"SB_scratch_partition_size\":16384},"
        } else {
            ""
        };
        format!(
            "{{{dma}\"fabric_path\":\"main\",\"num_queues\":16,\"owner\":\"{owner}\",\"semaphore_set\":{},\"type\":\"dynamic\"}}",
            list(first..first + 16)
        )
    };
    key(
        "dma_queue",
        format!(
            "{{\"qActDynamicHW\":{},\"qPoolDynamic\":{},\"qSPDynamicHW\":{}}}",
            queue("act", 40, false),
            queue("pool", 24, true),
            queue("sp", 8, false)
        ),
    );
    key(
        "fp8_conversion_config",
        "{\"emax_fp8_e4m3\":8,\"emax_fp8_e5m2\":15,\"fp8_range_extension\":true,\"fp8_sis\":false,\"fp8_sns\":false,\"ocp_sat\":true}".into(),
    );
    key("name", "\"definition\"".into());
    key("neff_features", "[\"neff_feature_vnc\"]".into());
    for (k, stem, _, _) in ENGINES {
        key(k, format!("\"{stem}.json\""));
        key(&format!("{k}_instr"), format!("\"{stem}.bin\""));
    }
    key("runtime_event_count", "12".into());
    key("runtime_semaphore_count", "3".into());
    key(
        "runtime_statebuffer_reservation",
        "[{\"base_partition\":0,\"offset\":229368,\"partitions\":128,\"size\":8,\"type\":\"evtaccel\"}]".into(),
    );
    let weight_bytes = WEIGHT_SHAPE.iter().product::<u64>() * 2;
    key(
        "var",
        format!(
            concat!(
                "{{\"SB\":{{\"type\":\"state-buffer\",\"var_id\":0}},",
                "\"identity_7_sg{sg:02}00\":{{\"alignment\":32768,\"fabric_path\":\"main\",\"file_name\":\"{file}\",\"ops\":[],\"size\":{wsize},\"type\":\"file\",\"var_id\":4}},",
                "\"output0\":{{\"ops\":[],\"size\":{osize},\"type\":\"output\",\"var_id\":3}},",
                "\"spill0_sg{sg:02}00\":{{\"backing_variable_off\":{boff},\"ops\":[],\"size\":{ssize},\"type\":\"virtual\",\"var_id\":5}},",
                "\"x\":{{\"ops\":[],\"size\":{xsize},\"type\":\"input\",\"var_id\":1}},",
                "\"y\":{{\"ops\":[],\"size\":{ysize},\"type\":\"input\",\"var_id\":2}}}}"
            ),
            sg = sg,
            file = weight_file(sg),
            wsize = weight_bytes,
            osize = bytes_of(&OUT_SHAPE),
            boff = sg as u64 * SPILL_SIZE,
            ssize = SPILL_SIZE,
            xsize = bytes_of(&X_SHAPE),
            ysize = bytes_of(&Y_SHAPE),
        ),
    );
    key("version", "\"0.6\"".into());
    keys.sort();
    let body: Vec<String> = keys.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}\n", body.join(","))
}

fn neff_json() -> String {
    let shape = |s: &[u64]| list(s.iter().copied());
    format!(
        concat!(
            "{{\"nodes\":[",
            "{{\"op\":\"null\",\"name\":\"x\",\"inputs\":[],\"output_names\":[\"x\"],\"is_param\":\"0\"}},",
            "{{\"op\":\"null\",\"name\":\"y\",\"inputs\":[],\"output_names\":[\"y\"],\"is_param\":\"0\"}},",
            "{{\"op\":\"tvm_op\",\"name\":\"sg_coreV10\",\"attrs\":{{\"func_name\":\"__kelf\",\"flatten_data\":\"0\",\"num_inputs\":\"2\",\"kelf\":\"kelf-0.json\",\"num_outputs\":\"1\"}},",
            "\"inputs\":[[0,0,0],[1,0,0]],\"output_names\":[\"output0\"]}}],",
            "\"arg_nodes\":[0,1],\"heads\":[[2,0,0]],",
            "\"attrs\":{{\"shape\":[\"list_shape\",[{x},{y},{o}]],\"storage_id\":[\"list_int\",[0,1,2]],",
            "\"dltype\":[\"list_str\",[\"float16\",\"float16\",\"float16\"]]}},",
            "\"node_row_ptr\":[0,1,2,3],",
            "\"metadata\":{{\"signatures\":{{\"default\":{{\"inputs\":{{",
            "\"x\":{{\"id\":0,\"dtype\":\"float16\",\"shape\":{x}}},\"y\":{{\"id\":1,\"dtype\":\"float16\",\"shape\":{y}}}}},",
            "\"outputs\":{{}}}}}}}}}}\n"
        ),
        x = shape(&X_SHAPE),
        y = shape(&Y_SHAPE),
        o = shape(&OUT_SHAPE),
    )
}

const HLO_STATS: &str = "{\"AliasedOutputSize\":0,\"ArithmeticIntensity\":21.3,\"ConstantSize\":8192,\"HloMacCount\":524288,\"Traffic\":49152}\n";

const ACT_INFO: &str = concat!(
    "{\"pwp_file_keys\":[\"bkt_bin\",\"ctrl_bin\",\"profile_json\"],",
    "\"act_func_sets\":[{\"name\":\"exp_and_others\",\"bkt_bin\":\"exp_and_others_bkt.bin\",",
    "\"ctrl_bin\":\"exp_and_others_ctrl.bin\",\"profile_json\":\"exp_and_others.json\",",
    "\"act\":{\"exp\":400,\"identity\":1,\"copy\":1,\"relu\":1,\"tanh\":4}}]}\n"
);

const ACT_SET: &str = concat!(
    "{\"bkt_bin\":\"exp_and_others_bkt.bin\",\"ctl_bin\":\"exp_and_others_ctrl.bin\",",
    "\"profile_meta_data\":[{\"func_name\":\"exp_400p\",\"func_id\":7,\"exp_offset\":-19,\"use_multipass\":false},",
    "{\"func_name\":\"identity_1p\",\"func_id\":1,\"exp_offset\":0,\"use_multipass\":false}]}\n"
);
