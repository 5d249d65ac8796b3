//! Capacity profiles: which manifest types (and so which capacities) a loader parses into.
//!
//! The manifest types take their capacities as const parameters. A loader on a management
//! controller wants them small (its whole state must fit beside the 32 KiB inflate window);
//! a host tool wants them large enough for big models. A [`Profile`] names the four manifest
//! types a loader uses, and the traits below are the little the loader needs from each.

use crate::manifest::{
    def::TargetCheck, DefJson, Document, EngineJson, EngineType, IoTable, Kelf, ManifestError, MrType, NeffJson,
};

/// The manifest types a loader parses into.
pub trait Profile {
    /// `sgNN/def.json`.
    type Def: DefDoc;
    /// Engine and activation-set JSONs.
    type Engine: EngineDoc;
    /// `neff.json`.
    type Neff: NeffDoc;
    /// `kelf-<i>.json`.
    type Kelf: KelfDoc;
}

/// The firmware profile: capacities that load both real NEFFs (22 vars, 3 queues of 16
/// semaphores per subgraph) while the whole loader state stays under 64 KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Compact;

impl Profile for Compact {
    //                VARS NAME FILE LIST DIMS QUEUES QNAME SEMS INST CARVE UCODE SHORT DESC
    type Def = DefJson<24, 40, 40, 4, 4, 4, 16, 16, 2, 2, 1, 12, 4>;
    type Engine = EngineJson<40, 40, 16, 12, 2, 1, 4>;
    type Neff = NeffJson;
    type Kelf = Kelf;
}

/// The host profile: room for big models (2048 variables, 64 queues per subgraph, 256 graph
/// nodes). A `Loader<Host>` is about 1.3 MB: keep it on the heap, and run it on a thread with a
/// large stack (a manifest is parsed in place, but `Default` values may pass through the stack).
#[derive(Debug, Clone, Copy, Default)]
pub struct Host;

impl Profile for Host {
    //                VARS  NAME FILE LIST DIMS QUEUES QNAME SEMS INST CARVE UCODE SHORT DESC
    type Def = DefJson<2048, 80, 96, 16, 8, 64, 48, 32, 16, 8, 8, 24, 8>;
    type Engine = EngineJson<96, 96, 64, 32, 16, 4, 8>;
    type Neff = NeffJson<256, 257, 96, 16, 256, 256, 512, 32, 32>;
    type Kelf = Kelf<16, 32, 96, 32>;
}

/// A file variable: a payload member that becomes a weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVar<'a> {
    /// The variable's name.
    pub name: &'a str,
    /// Its member, relative to the subgraph directory.
    pub file: &'a str,
    /// Its declared size, when given.
    pub size: Option<u64>,
    /// Its alignment (1 when not given).
    pub align: u64,
}

/// What the loader reads from a parsed `def.json`.
pub trait DefDoc: Document {
    /// The engine JSON an engine key names.
    fn engine_json(&self, engine: EngineType) -> Option<&str>;
    /// The `<eng>_instr` stream name.
    fn engine_instr(&self, engine: EngineType) -> Option<&str>;
    /// Calls `f` for every `file` variable with a `file_name`.
    fn for_each_file_var(&self, f: impl FnMut(FileVar<'_>));
    /// Calls `f` with every `ucode_lib` library member.
    fn for_each_ucode_lib(&self, f: impl FnMut(&str));
    /// The runtime's carveout rules for a device.
    fn check_carveouts(&self, device: TargetCheck, allow_legacy: bool) -> Result<(), ManifestError>;
}

impl<
        const VARS: usize,
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const VAR_LIST: usize,
        const VAR_DIMS: usize,
        const QUEUES: usize,
        const QUEUE_NAME: usize,
        const SEMAPHORES: usize,
        const QUEUE_INSTANCES: usize,
        const CARVEOUTS: usize,
        const UCODE_LIBS: usize,
        const SHORT_TEXT: usize,
        const DESC_DIMS: usize,
    > DefDoc
    for DefJson<
        VARS,
        VAR_NAME,
        FILE_NAME,
        VAR_LIST,
        VAR_DIMS,
        QUEUES,
        QUEUE_NAME,
        SEMAPHORES,
        QUEUE_INSTANCES,
        CARVEOUTS,
        UCODE_LIBS,
        SHORT_TEXT,
        DESC_DIMS,
    >
{
    fn engine_json(&self, engine: EngineType) -> Option<&str> {
        DefJson::engine_json(self, engine)
    }

    fn engine_instr(&self, engine: EngineType) -> Option<&str> {
        DefJson::engine_instr(self, engine)
    }

    fn for_each_file_var(&self, mut f: impl FnMut(FileVar<'_>)) {
        for v in self.vars.iter().filter(|v| v.mr_type() == Some(MrType::Buffer)) {
            if let Some(file) = &v.file_name {
                f(FileVar { name: &v.name, file, size: v.size, align: v.alignment.unwrap_or(1).max(1) });
            }
        }
    }

    fn for_each_ucode_lib(&self, mut f: impl FnMut(&str)) {
        for lib in self.ucode_libs.iter().flat_map(|l| l.iter()) {
            f(&lib.library);
        }
    }

    fn check_carveouts(&self, device: TargetCheck, allow_legacy: bool) -> Result<(), ManifestError> {
        DefJson::check_carveouts(self, device, allow_legacy)
    }
}

/// What the loader reads from a parsed engine or activation-set JSON.
pub trait EngineDoc: Document {
    /// The engine JSON's `instr`.
    fn instr(&self) -> Option<&str>;
    /// `activation_function_sets`: set `S` is member `S.json`.
    fn for_each_act_set(&self, f: impl FnMut(&str));
    /// Every `dve_tables` member.
    fn for_each_dve_table(&self, f: impl FnMut(&str));
    /// An activation set's `bkt_bin` and `ctl_bin`.
    fn for_each_act_table(&self, f: impl FnMut(&str));
}

impl<
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const QUEUE_NAME: usize,
        const SHORT_TEXT: usize,
        const ACT_SETS: usize,
        const DVE_TABLES: usize,
        const DESC_DIMS: usize,
    > EngineDoc for EngineJson<VAR_NAME, FILE_NAME, QUEUE_NAME, SHORT_TEXT, ACT_SETS, DVE_TABLES, DESC_DIMS>
{
    fn instr(&self) -> Option<&str> {
        self.instr.as_deref()
    }

    fn for_each_act_set(&self, mut f: impl FnMut(&str)) {
        for set in self.activation_function_sets.iter().flat_map(|s| s.iter()) {
            f(set);
        }
    }

    fn for_each_dve_table(&self, mut f: impl FnMut(&str)) {
        for t in self.dve_tables.iter().flat_map(|t| t.iter()) {
            for name in
                [&t.opcode_table, &t.datapath_table, &t.control_table, &t.control_fast_table, &t.control_slow_table]
                    .into_iter()
                    .flatten()
            {
                f(name);
            }
        }
    }

    fn for_each_act_table(&self, mut f: impl FnMut(&str)) {
        for name in [&self.bkt_bin, &self.ctl_bin].into_iter().flatten() {
            f(name);
        }
    }
}

/// What the loader reads from a parsed `neff.json`.
pub trait NeffDoc: Document {
    /// The KELF members, in node order.
    fn for_each_kelf(&self, f: impl FnMut(&str));
    /// The I/O table.
    fn io_table<const IO: usize, const NAME: usize>(&self) -> Result<IoTable<IO, NAME>, crate::ErrorKind>;
}

impl<
        const NODES: usize,
        const NODE_ROWS: usize,
        const NODE_NAME: usize,
        const NODE_OUTPUTS: usize,
        const ARG_NODES: usize,
        const HEADS: usize,
        const EIDS: usize,
        const DTYPE_NAME: usize,
        const DIMS: usize,
    > NeffDoc for NeffJson<NODES, NODE_ROWS, NODE_NAME, NODE_OUTPUTS, ARG_NODES, HEADS, EIDS, DTYPE_NAME, DIMS>
{
    fn for_each_kelf(&self, mut f: impl FnMut(&str)) {
        for k in self.kelf_members() {
            f(k);
        }
    }

    fn io_table<const IO: usize, const NAME: usize>(&self) -> Result<IoTable<IO, NAME>, crate::ErrorKind> {
        // The report keeps default-capacity tensors: a name, dtype or shape that does not fit
        // is a capacity error, never a truncation.
        let wide = NeffJson::io_table::<IO>(self)?;
        let mut table = IoTable::<IO, NAME>::default();
        for (src, dst) in [(&wide.inputs, &mut table.inputs), (&wide.outputs, &mut table.outputs)] {
            for t in src.iter() {
                let narrow = crate::manifest::IoTensor {
                    name: narrow_str(&t.name, "IO tensor name")?,
                    dtype: narrow_str(&t.dtype, "IO tensor dtype")?,
                    nrt_dtype: t.nrt_dtype,
                    shape: heapless::Vec::from_slice(&t.shape)
                        .map_err(|_| capacity("IO tensor dims", crate::manifest::DEFAULT_DIMS))?,
                    size: t.size,
                };
                dst.push(narrow).map_err(|_| capacity("IO_TENSORS", IO))?;
            }
        }
        Ok(table)
    }
}

fn capacity(limit: &'static str, capacity: usize) -> crate::ErrorKind {
    crate::ErrorKind::Capacity(crate::error::CapacityError { limit, capacity: capacity as u64 })
}

fn narrow_str<const N: usize>(s: &str, limit: &'static str) -> Result<heapless::String<N>, crate::ErrorKind> {
    let mut out = heapless::String::new();
    out.push_str(s).map_err(|_| capacity(limit, N))?;
    Ok(out)
}

/// What the loader reads from a parsed `kelf-<i>.json`.
pub trait KelfDoc: Document {
    /// The `target` as written (`""` when absent).
    fn target(&self) -> &str;
    /// The device gate.
    fn check_device(&self, device: crate::manifest::Arch, allow_legacy: bool) -> Result<(), ManifestError>;
    /// Number of graphs.
    fn graph_count(&self) -> usize;
    /// Graph `i`: `(name, definition)`.
    fn graph(&self, i: usize) -> Option<(&str, &str)>;
}

impl<const GRAPHS: usize, const GRAPH_NAME: usize, const GRAPH_PATH: usize, const KELF_TEXT: usize> KelfDoc
    for Kelf<GRAPHS, GRAPH_NAME, GRAPH_PATH, KELF_TEXT>
{
    fn target(&self) -> &str {
        self.target.as_deref().unwrap_or("")
    }

    fn check_device(&self, device: crate::manifest::Arch, allow_legacy: bool) -> Result<(), ManifestError> {
        Kelf::check_device(self, device, allow_legacy)
    }

    fn graph_count(&self) -> usize {
        self.graphs.len()
    }

    fn graph(&self, i: usize) -> Option<(&str, &str)> {
        self.graphs.get(i).map(|g| (g.name.as_str(), g.definition.as_str()))
    }
}
