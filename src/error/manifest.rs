//! What a manifest refuses and notices once it is valid JSON: the runtime's rules per key,
//! with its wording (docs/format.md §12A), and the JSON types named in type errors.

use super::Text;

/// JSON value types, as named in type errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JsonType {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A non-negative integer.
    UnsignedInteger,
    /// An integer that may be negative.
    Integer,
    /// Any number (with a fraction or an exponent when found).
    Number,
    /// `true` / `false`.
    Bool,
    /// `null`.
    Null,
    /// The end of the document.
    Nothing,
}

impl JsonType {
    /// The name with its article, as expected: `an unsigned integer`.
    pub const fn with_article(self) -> &'static str {
        match self {
            JsonType::Object => "an object",
            JsonType::Array => "an array",
            JsonType::String => "a string",
            JsonType::UnsignedInteger => "an unsigned integer",
            JsonType::Integer => "an integer",
            JsonType::Number => "a number",
            JsonType::Bool => "a bool",
            JsonType::Null => "null",
            JsonType::Nothing => "nothing",
        }
    }

    /// The bare name, as found: `string`.
    pub const fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::UnsignedInteger => "unsigned integer",
            JsonType::Integer => "negative integer",
            JsonType::Number => "fractional number",
            JsonType::Bool => "bool",
            JsonType::Null => "null",
            JsonType::Nothing => "end of input",
        }
    }
}

/// Short context strings kept in errors and warnings (the tail of longer ones). Small on
/// purpose: every `Error`, and the tokenizer's stored fault, holds a `ManifestError`.
pub type Name = Text<16>;

/// A required key and the runtime's message when it is absent (empty: none).
#[derive(Debug, PartialEq, Eq)]
pub struct RequiredKey {
    /// The key.
    pub key: &'static str,
    /// The runtime's message, or empty.
    pub message: &'static str,
}

#[cfg(feature = "defmt")]
impl defmt::Format for RequiredKey {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.key)
    }
}

/// A manifest that is valid JSON but not what the runtime accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestError {
    /// A required key is absent (with the runtime's wording when it has one).
    MissingKey {
        /// The key, with the runtime's message.
        key: &'static RequiredKey,
        /// The object it is missing from: its name in a keyed map (`dma_queue.<name>`), or the
        /// last segment of its path (a message's `%s`).
        within: Name,
    },
    /// A value has the wrong JSON type.
    WrongType {
        /// What the schema asks for.
        expected: JsonType,
        /// What the document has.
        found: JsonType,
        /// The runtime's message, or empty.
        message: &'static str,
    },
    /// A consumed key appears twice in one object.
    DuplicateKey {
        /// The key.
        key: &'static str,
    },
    /// A TVM typed list is malformed (`Invalid dltype data format`).
    BadFormat {
        /// The runtime's message.
        message: &'static str,
    },
    /// A DMA descriptor `op` the runtime does not know.
    UnknownDmaOperation(Name),
    /// A carveout `type` other than `evtaccel`.
    InvalidCarveoutType(Name),
    /// An integer above the type's range.
    OutOfRange {
        /// The largest allowed value.
        max: u64,
    },
    /// `neff.json`: a shape with more than 32 dimensions.
    TooManyDimensions(u64),
    /// `neff.json`: an entry id past `attrs.dltype` / `attrs.shape`.
    EidOutOfBounds(u64),
    /// `neff.json`: a head naming a node that does not exist.
    OutputNodeOutOfBounds(u64),
    /// `neff.json`: an `arg_nodes` entry naming a node that does not exist.
    InputNodeOutOfBounds(u64),
    /// `neff.json`: `node_row_ptr` has no entry for a node.
    RowPtrOutOfBounds(u64),
    /// `neff.json`: a tensor's byte size does not fit in 64 bits.
    SizeOverflow,
    /// `neff.json`: the KELF node has no `attrs.kelf`.
    KelfAttributeMissing,
    /// `neff.json`: an input node (an `arg_nodes` entry) without `name`.
    InputWithoutName(u64),
    /// `neff.json`: no node is a KELF node.
    NoKelfNode,
    /// `kelf`: `version` has no `.` (or no numbers around it).
    InvalidVersion(Name),
    /// `kelf`: an unknown `target`.
    InvalidTarget(Name),
    /// `kelf`: the device has another architecture.
    ArchMismatch {
        /// The NEFF's arch value.
        neff: u32,
        /// The device's arch value.
        device: u32,
    },
    /// `def.json`: a var of a type that occupies device memory without a `size`.
    VarWithoutSize {
        /// The var.
        var: Name,
        /// Its `type`.
        var_type: Text<12>,
    },
    /// `def.json`: a `pointer` var whose `size` is not 8.
    PointerSize {
        /// The var.
        var: Name,
        /// Its `size`.
        size: u64,
    },
    /// `def.json`: an `alignment` that is not a power of two.
    AlignmentNotPowerOfTwo(u64),
    /// `def.json`: var ids are not `0..number of vars`.
    UnexpectedVarIds {
        /// The largest var id.
        max: u32,
        /// The number of vars.
        size: u64,
    },
    /// `def.json`: two vars share an id.
    DuplicateVarId(u32),
    /// `def.json`: no var of type `output`.
    NoOutputs,
    /// `def.json`: a queue `owner` that is not an engine.
    InvalidOwner {
        /// The owner as written.
        owner: Name,
        /// The queue set.
        queue: Name,
    },
    /// `def.json`: `queue_instances` on an input, output or embedding-update queue.
    QueueInstancesNotSupported {
        /// The queue's kind.
        kind: QueueKind,
        /// The queue set.
        queue: Name,
    },
    /// `def.json`: a queue set with more than 32 semaphores.
    TooManySemaphores(u64),
    /// `def.json`: a queue set with more than 16 queues.
    TooManyQueues {
        /// `num_queues`.
        count: u32,
        /// The queue set.
        queue: Name,
    },
    /// `def.json`: an `embedding_update` queue without `embedding_update_sync_semaphore`.
    MissingSyncSemaphore(Name),
    /// `def.json`: a `dynamic_dma` queue without both scratch-partition fields.
    DynamicDmaScratch(Name),
    /// `def.json`: a `ucode_lib` whose version's major is not the runtime's.
    UcodeVersionMismatch(Name),
    /// `def.json`: a `ucode_lib` whose `cpu_id` is not below its `total_cpus`.
    UcodeCpuId {
        /// The library.
        library: Name,
        /// Its `cpu_id`.
        cpu_id: u32,
    },
    /// `def.json`: a `ucode_lib` whose `total_cpus` is not 0, 1 or 8.
    UcodeTotalCpus {
        /// The library.
        library: Name,
        /// Its `total_cpus`.
        total_cpus: u32,
    },
    /// `def.json`: the same `ucode_lib` library twice.
    UcodeLibTwice(Name),
    /// `def.json`: `ext_isa_ucode_lib_def` with more ops than the runtime's 18.
    TooManyExtIsaOps(u64),
    /// A CCE DMA descriptor with more `from_arr` sources than the runtime's 16.
    TooManyCceSources(u64),
    /// A DMA descriptor with neither `from` nor (CCE) `from_arr`.
    DescWithoutSource,
    /// A CCE descriptor (or one of its `from_arr` sources) without its dtype.
    CceWithoutDtype,
    /// A DMA block's `queue` that is no queue set of its subgraph's `def.json` (spec §8.2).
    UnknownDmaQueue(Name),
    /// A DMA descriptor's `from` or `to` that is no variable of its subgraph's `def.json`.
    UnknownDmaVariable {
        /// `to` (true) or `from`.
        to: bool,
        /// The name as written.
        name: Name,
    },
    /// A DMA descriptor with a size of 0 in `from_sizes` or `to_sizes`.
    ZeroDescSize,
    /// A DMA descriptor whose `*_steps` and `*_sizes` have different lengths.
    StepsSizesMismatch {
        /// Entries of the steps.
        steps: u8,
        /// Entries of the sizes.
        sizes: u8,
    },
    /// `def.json`: cayman needs `runtime_statebuffer_reservation`.
    MissingCarveout,
    /// `def.json`: the event-accelerator carveout does not start at partition 0.
    CarveoutStartPartition(u64),
    /// `def.json`: the event-accelerator carveout does not span 128 partitions.
    CarveoutPartitionCount(u64),
    /// `def.json`: the event-accelerator carveout is not at offset 0x37ff8.
    CarveoutOffset(u64),
    /// `def.json`: the event-accelerator carveout is not 8 bytes.
    CarveoutSize(u64),
}

impl ManifestError {
    /// A stable number for this error within its layer, for bindings (C, Python): fixed once
    /// given, never reused, listed in `docs/error-codes.md` ([`ErrorKind::code`](crate::ErrorKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            ManifestError::MissingKey { .. } => 1,
            ManifestError::WrongType { .. } => 2,
            ManifestError::DuplicateKey { .. } => 3,
            ManifestError::BadFormat { .. } => 4,
            ManifestError::UnknownDmaOperation(..) => 5,
            ManifestError::InvalidCarveoutType(..) => 6,
            ManifestError::OutOfRange { .. } => 7,
            ManifestError::TooManyDimensions(..) => 8,
            ManifestError::EidOutOfBounds(..) => 9,
            ManifestError::OutputNodeOutOfBounds(..) => 10,
            ManifestError::InputNodeOutOfBounds(..) => 11,
            ManifestError::RowPtrOutOfBounds(..) => 12,
            ManifestError::SizeOverflow => 13,
            ManifestError::KelfAttributeMissing => 14,
            ManifestError::InputWithoutName(..) => 15,
            ManifestError::NoKelfNode => 16,
            ManifestError::InvalidVersion(..) => 17,
            ManifestError::InvalidTarget(..) => 18,
            ManifestError::ArchMismatch { .. } => 19,
            ManifestError::VarWithoutSize { .. } => 20,
            ManifestError::PointerSize { .. } => 21,
            ManifestError::AlignmentNotPowerOfTwo(..) => 22,
            ManifestError::UnexpectedVarIds { .. } => 23,
            ManifestError::DuplicateVarId(..) => 24,
            ManifestError::NoOutputs => 25,
            ManifestError::InvalidOwner { .. } => 26,
            ManifestError::QueueInstancesNotSupported { .. } => 27,
            ManifestError::TooManySemaphores(..) => 28,
            ManifestError::TooManyQueues { .. } => 29,
            ManifestError::MissingSyncSemaphore(..) => 30,
            ManifestError::DynamicDmaScratch(..) => 31,
            ManifestError::UcodeVersionMismatch(..) => 32,
            ManifestError::UcodeCpuId { .. } => 33,
            ManifestError::UcodeTotalCpus { .. } => 34,
            ManifestError::UcodeLibTwice(..) => 35,
            ManifestError::TooManyExtIsaOps(..) => 36,
            ManifestError::TooManyCceSources(..) => 37,
            ManifestError::DescWithoutSource => 38,
            ManifestError::CceWithoutDtype => 39,
            ManifestError::UnknownDmaQueue(..) => 40,
            ManifestError::UnknownDmaVariable { .. } => 41,
            ManifestError::ZeroDescSize => 42,
            ManifestError::StepsSizesMismatch { .. } => 43,
            ManifestError::MissingCarveout => 44,
            ManifestError::CarveoutStartPartition(..) => 45,
            ManifestError::CarveoutPartitionCount(..) => 46,
            ManifestError::CarveoutOffset(..) => 47,
            ManifestError::CarveoutSize(..) => 48,
        }
    }
}

impl ManifestError {
    /// The runtime status (`NRT_INVALID` for all of them).
    pub fn status(&self) -> crate::Status {
        crate::Status::Invalid
    }
}

/// Something in a manifest worth telling that does not fail a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ManifestWarning {
    /// `neff.json`: a dtype string the runtime does not know; sized 1 byte per element.
    UnknownDtype(Text<16>),
    /// `def.json`: a value the spec's maps do not have (a var `type`, a queue `type`, a var
    /// `dtype`); accepted, as the spec does not say to refuse it.
    UnknownValue {
        /// The key.
        key: &'static str,
        /// The value as written.
        value: Name,
    },
    /// `neff.json`: the KELF node was found by `op == "__kelf"` (no `attrs.func_name`).
    KelfNodeByOp,
    /// `def.json`: an engine key is absent; the runtime uses an empty instruction set.
    EngineMissing {
        /// The engine: its `EngineType` value (`EngineType::from_value`).
        engine: u32,
        /// The NEFF's name (its header's), when the reader knows it (a loader does; a lone
        /// `def.json` parse does not, and leaves it empty).
        neff: Text<24>,
    },
    /// `def.json` `<eng>_instr` differs from the engine JSON's `instr` (which wins).
    InstrMismatch {
        /// The engine: its `EngineType` value (`EngineType::from_value`).
        engine: u32,
        /// `def.json`'s `<eng>_instr`.
        def_instr: Name,
        /// The engine JSON's `instr`.
        engine_instr: Name,
    },
}

impl ManifestWarning {
    /// A stable number for this warning within its layer, for bindings (C, Python): fixed
    /// once given, never reused ([`WarningKind::code`](crate::WarningKind::code)).
    pub const fn code(&self) -> u8 {
        match self {
            ManifestWarning::UnknownDtype(..) => 1,
            ManifestWarning::UnknownValue { .. } => 2,
            ManifestWarning::KelfNodeByOp => 3,
            ManifestWarning::EngineMissing { .. } => 4,
            ManifestWarning::InstrMismatch { .. } => 5,
        }
    }
}

/// Which kind of queue `queue_instances` is refused on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QueueKind {
    /// `in`
    Input,
    /// `out`
    Output,
    /// `embedding_update`
    EmbeddingUpdate,
}

impl QueueKind {
    /// As the runtime writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            QueueKind::Input => "input",
            QueueKind::Output => "output",
            QueueKind::EmbeddingUpdate => "embedding update",
        }
    }
}
