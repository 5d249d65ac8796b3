//! The manifest chain: `neff.json` -> `kelf-<i>.json` -> `sgNN/def.json` -> engine JSONs.
//!
//! # Wire format
//!
//! Every manifest is one JSON document (RFC 8259). The runtime reads a small set of keys from
//! each and ignores the rest; that set — per object the key, its JSON type, whether it is
//! required, its default, the field it lands in and the discriminator map that turns a string
//! into a number — is declared once in the TOML files of `schema/`. The `schema!` proc-macro
//! expands them here into:
//!
//! - one fixed-capacity struct per JSON object ([`NeffJson`], [`Kelf`], [`DefJson`], [`Var`],
//!   [`DmaQueue`], [`EngineJson`], ...), whose capacities are the constants of [`cap`] and
//!   bound one value each (a name's bytes, a shape's dimensions); exceeding one is an
//!   [`ErrorKind::Capacity`](crate::ErrorKind::Capacity) naming it;
//! - a consumed-key parser per object over the streaming [`Tokenizer`](crate::json::Tokenizer):
//!   unknown keys are skipped but validated, a consumed key given twice, a missing required key
//!   and a value of the wrong JSON type are errors with the key path (`var.x.size: expected an
//!   unsigned integer, found string`);
//! - the discriminator enums ([`NrtDtype`], [`KbinDtype`], [`Arch`], [`MrType`], [`DmaRingType`],
//!   [`EngineType`], [`DescOp`], [`CarveoutType`], [`UsageClass`], ...) with `from_json`,
//!   `as_str`, `value` and, for dtypes, `element_size`;
//! - the runtime's published `#[repr(C)]` layouts ([`IoNodeInfo`], [`SbCarveout`],
//!   [`KbinFp8ConvCfg`], [`Fp8ConversionInfo`], ...) with compile-time size and offset checks;
//! - a value visitor per object (`visit_fields`, and [`Entry::visit`] for a streamed element):
//!   every consumed value typed, by its JSON key, for a [`FieldVisitor`] (`neff diff`);
//! - [`CONSUMED_KEYS`] and [`LAYOUTS`], the tables `neff schema` prints.
//!
//! The checks the runtime makes beyond the shape of the JSON (EID bounds, dense var ids, queue
//! owners, carveout values, ...) are written by hand in the tier modules [`neff`], [`kelf`],
//! [`def`] and [`engine`], which also hold the parse entry points. No JSON key appears outside
//! the generated code.
//!
//! Every manifest module (the tier modules and the generated parsers' support, [`rt`])
//! denies `clippy::arithmetic_side_effects`: a size, index or count from a document goes
//! through checked arithmetic ending in a [`ManifestError`] or a capacity error.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

pub mod def;
pub mod doc;
pub mod document;
pub mod engine;
pub mod fields;
pub mod kelf;
pub mod neff;
pub mod rt;

pub use crate::error::{JsonType, ManifestError, ManifestWarning, Name, QueueKind, RequiredKey};
pub use def::DefFacts;
pub use def::TargetCheck;
pub use document::Document;
pub use fields::{FieldValue, FieldVisitor, VisitValue};
pub use kelf::KelfTarget;
pub use neff::{IoJoin, IoKind, IoTensor, KelfMark, NeffFacts};
pub use rt::DocFault;

pub use crate::vocab::*;

neff_macros::schema!("schema");

/// Bytes of the tokenizer's string scratch a manifest reader needs: the longest string any
/// schema capacity holds (a key is read through the same scratch).
pub const STRING_SCRATCH: usize = cap::GRAPH_PATH;

/// [`STRING_SCRATCH`] on a bare-metal target (the firmware profile), on any target: the part
/// of a controller's arena a host's measure of a NEFF does not count in its records.
pub const BARE_METAL_STRING_SCRATCH: usize = cap::bare_metal::GRAPH_PATH;

/// The most JSON containers a manifest reader allows open at once (the tokenizer's depth
/// limit): the manifests nest a few levels, so only a hostile document reaches it, and it ends
/// that read with [`JsonError::DepthLimit`](crate::json::JsonError::DepthLimit).
pub const DEPTH_LIMIT: u16 = 128;

// Every string capacity fits the scratch: a string too long for its capacity is then always
// reported against that capacity, by name.
const _: () = {
    let caps = [
        cap::NODE_NAME,
        cap::DTYPE_NAME,
        cap::GRAPH_NAME,
        cap::GRAPH_PATH,
        cap::KELF_TEXT,
        cap::VAR_NAME,
        cap::FILE_NAME,
        cap::QUEUE_NAME,
        cap::SHORT_TEXT,
    ];
    let mut rest: &[usize] = &caps;
    while let [first, tail @ ..] = rest {
        assert!(*first <= STRING_SCRATCH);
        rest = tail;
    }
};

/// Where a streamed element was read: its member, key path (`var.x`, `nodes[3]`) and the byte
/// offset of its last byte, for errors a visitor raises about it.
pub struct EntryAt<'a> {
    pub(crate) ctx: &'a rt::ErrCtx<'a>,
    pub(crate) offset: u64,
}

impl EntryAt<'_> {
    /// The member being read.
    pub fn member(&self) -> &str {
        self.ctx.member
    }

    /// The element's key path.
    pub fn key_path(&self) -> &str {
        self.ctx.path.as_str()
    }

    /// The element's own segment of the key path: its name in a keyed map (dots included),
    /// else its key and index (`desc[1]`).
    pub fn name(&self) -> &str {
        self.ctx.path.last_key()
    }

    /// [`EntryAt::name`] as bytes, for a caller that parses it as bytes (no UTF-8 check).
    pub fn name_bytes(&self) -> &[u8] {
        self.ctx.path.last_key_bytes()
    }

    /// The byte offset of the element's last byte (the closing bracket of an object).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// An error about this element (its stage, member, key path and offset).
    #[cold]
    #[inline(never)]
    pub fn error(&self, kind: crate::ErrorKind) -> DocFault {
        DocFault::new(self.offset, kind)
    }

    /// An error about key `key` of this element (`var.x` and `size`: `var.x.size`).
    #[cold]
    #[inline(never)]
    pub fn key_error(&self, key: &'static str, e: ManifestError) -> DocFault {
        self.error(crate::ErrorKind::Manifest(e)).about(key)
    }

    /// Warns of `value`, which the spec's lists for key `key` of this element do not have,
    /// naming it: accepted, as the spec does not say to refuse it.
    pub fn warn_unknown(&self, sink: &mut dyn crate::WarningSink, key: &'static str, value: &str) {
        let w = ManifestWarning::UnknownValue { key, value: crate::error::Text::new(value) };
        let path = rt::shown_path(self.key_path(), self.ctx.path.is_cut(), Some(key));
        sink.warn(&self.warning(crate::WarningKind::Manifest(w)).with_key_path(&path));
    }

    /// A warning about this element.
    pub fn warning(&self, kind: crate::WarningKind) -> crate::Warning {
        let path = rt::shown_path(self.key_path(), self.ctx.path.is_cut(), None);
        crate::Warning::in_member(self.ctx.stage, self.ctx.member, self.offset, kind).with_key_path(&path)
    }
}

/// Receives each element of a streamed key as it is read (a `def.json` var, a DMA queue set, a
/// `neff.json` node, ...). What grows with a model reaches the caller this way and is never
/// tabulated; an error returned here ends the read.
pub trait Visitor {
    /// One element; `at` says where it was read.
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault>;

    /// The read of `member` failed at key path `path` (whole; `None` when too long to hold),
    /// below it at `key` where the failure names one. The error returned keeps only a tail of
    /// the member name and a head of the path; a host that wants them whole keeps them here.
    fn failed(&mut self, _member: &str, _path: Option<&str>, _key: Option<&'static str>) {}
}

/// A visitor that looks at nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoVisitor;

impl Visitor for NoVisitor {
    fn entry(&mut self, _entry: Entry<'_>, _at: &EntryAt<'_>) -> Result<(), DocFault> {
        Ok(())
    }
}

impl<F: FnMut(Entry<'_>, &EntryAt<'_>) -> Result<(), DocFault>> Visitor for F {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        self(entry, at)
    }
}

/// One row of [`CONSUMED_KEYS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumedKey {
    /// `neff.json`, `kelf`, `def.json` or `engine`.
    pub tier: &'static str,
    /// Key path from the document root (`var.<name>.size`, `nodes[].attrs.kelf`).
    pub path: &'static str,
    /// Other accepted spellings of the last key.
    pub aliases: &'static [&'static str],
    /// JSON type (`unsigned integer`, `array of string`, ...).
    pub json_type: &'static str,
    /// Absent is an error.
    pub required: bool,
    /// The value used when absent, as TOML (empty: none, the field is an `Option`).
    pub default: &'static str,
    /// Destination: `Type.field`.
    pub field: &'static str,
    /// The discriminator enum a string selects (empty: none).
    pub map: &'static str,
    /// The runtime's message when a required key is absent.
    pub missing: &'static str,
    /// What the key means.
    pub doc: &'static str,
    /// Sources and resolved conflicts.
    pub notes: &'static str,
}

/// One field of a [`LayoutInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutField {
    /// Field name.
    pub name: &'static str,
    /// Rust type as written in the schema.
    pub ty: &'static str,
    /// Offset in bytes.
    pub offset: usize,
}

/// One row of [`LAYOUTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutInfo {
    /// Rust type name.
    pub name: &'static str,
    /// The runtime's C struct name.
    pub c_name: &'static str,
    /// Size in bytes.
    pub size: usize,
    /// Fields.
    pub fields: &'static [LayoutField],
}

/// The event-accelerator carveout offset the runtime requires on cayman.
pub const EVTACCEL_OFFSET: u64 = 0x37FF8;
/// The event-accelerator carveout partition count the runtime requires on cayman.
pub const EVTACCEL_PARTITIONS: u64 = 128;
/// The runtime's semaphores-per-queue-set limit.
pub const MAX_QUEUE_SEMAPHORES: u64 = 32;
/// The most queues of one queue set (`num_queues`, DOC-NEFF: "16 or less").
pub const MAX_QUEUES_PER_SET: u32 = 16;
/// The GPSIMD library major version the runtime (libnrt 2.31) accepts (`ulib_to_ucode_version`
/// `"1.21.1.0"` is major 1, spec §7.6).
pub const UCODE_MAJOR: u32 = 1;
/// Bytes of a `pointer` var (spec §7.3).
pub const POINTER_SIZE: u64 = 8;
/// The runtime's dimensions-per-shape limit.
pub const MAX_DIMS: u64 = 32;

/// Ops an `ext_isa_ucode_lib_def` may define (spec §7.1).
pub const MAX_EXT_ISA_OPS: u64 = 18;

/// Sources (`from_arr`) a CCE DMA descriptor may have (spec §8.2).
pub const MAX_CCE_SOURCES: u64 = 16;

/// Sends a manifest warning to `sink`.
// A `dyn` sink: one copy for every sink type (flash on a controller).
pub(crate) fn warn(
    sink: &mut dyn crate::WarningSink,
    stage: crate::Stage,
    member: &str,
    offset: u64,
    path: &str,
    w: ManifestWarning,
) {
    let warning = crate::Warning::in_member(stage, member, offset, crate::WarningKind::Manifest(w)).with_key_path(path);
    sink.warn(&warning);
}

/// A semantic error after a document was read (offset: the end of the document).
#[cold]
#[inline(never)]
pub(crate) fn semantic(stage: crate::Stage, member: &str, offset: u64, path: &str, e: ManifestError) -> crate::Error {
    crate::Error::in_member(stage, member, offset, crate::ErrorKind::Manifest(e)).with_key_path(path)
}

/// A runtime message split around its `%s` (by bytes: `str::split_once`'s searcher carries a
/// bounds check the compiler keeps, a panic path in the image).
fn split_at_placeholder(message: &str) -> Option<(&str, &str)> {
    let at = message.as_bytes().windows(2).position(|w| w == b"%s")?;
    Some((message.get(..at)?, message.get(at.checked_add(2)?..)?))
}

neff_macros::refusal_messages!("schema/errors.toml", Manifest);

/// `MissingKey`'s message: the runtime's own for the key (its `%s` the object's name), or ours.
fn missing_key(f: &mut fmt::Formatter<'_>, key: &RequiredKey, within: &Name) -> fmt::Result {
    match split_at_placeholder(key.message) {
        _ if key.message.is_empty() => write!(f, "missing required key \"{}\"", key.key),
        Some((head, tail)) => write!(f, "{head}{within}{tail}"),
        None => f.write_str(key.message),
    }
}

/// The JSON name of an engine kept in a warning by its `EngineType` value.
fn engine_name(value: u32) -> &'static str {
    EngineType::from_value(value).map_or("?", EngineType::as_str)
}
