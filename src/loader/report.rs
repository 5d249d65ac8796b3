//! What a load reports: a fixed-size summary, and a stream of placements.
//!
//! The summary ([`LoadReport`]) has no table: what grows with a model (one line per payload,
//! per subgraph, per I/O tensor) goes to the caller's [`Observer`] as the
//! loader learns it ([`PayloadReport`], [`SubgraphReport`]). A caller that wants JSON uses
//! [`JsonLines`], an observer that writes one JSON object per line to any
//! `embedded_io::Write` (each line serialised with `serde-json-core` into a small buffer),
//! then [`LoadReport::to_json`] for the summary: that is how firmware ships a report.

use core::cell::RefCell;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::archive::Finish;
use crate::hal::{usage_index, RegionId, USAGE_CLASSES, USAGE_CLASS_COUNT};
use crate::header::Integrity;
use crate::manifest::{
    Arch, Entry, Fp8ConversionInfo, IoKind, IoTensor, KbinCcStreams, KbinDmaHeader, KbinMemRefSetHeader,
    MlaResourcesTail, SbCarveout, UsageClass,
};

/// Capacity of the KELF target in the report.
pub const TARGET_TEXT: usize = 32;

/// What became of a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PayloadState {
    /// Streamed into a staging region; its role was not known yet.
    Staged,
    /// In its final region, with its final usage class.
    Placed,
    /// Nothing referenced it: its staging region was released.
    Released,
    /// Checked but not stored (a load onto a [`NullDevice`](crate::hal::NullDevice)).
    Checked,
}

impl PayloadState {
    /// Lowercase name, as printed.
    pub const fn as_str(self) -> &'static str {
        match self {
            PayloadState::Staged => "staged",
            PayloadState::Placed => "placed",
            PayloadState::Released => "released",
            PayloadState::Checked => "checked",
        }
    }

    pub(crate) const fn code(self) -> u8 {
        match self {
            PayloadState::Staged => 0,
            PayloadState::Placed => 1,
            PayloadState::Released => 2,
            PayloadState::Checked => 3,
        }
    }

    pub(crate) const fn from_code(c: u8) -> Self {
        match c {
            1 => PayloadState::Placed,
            2 => PayloadState::Released,
            3 => PayloadState::Checked,
            _ => PayloadState::Staged,
        }
    }
}

/// One payload member, once the chain is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadReport<'a> {
    /// The member's path in the tar.
    pub member: &'a str,
    /// Its position among the archive's payload members, from 1: the reports come weights
    /// last, so a caller that lists them in tar order sorts by it.
    pub seq: u32,
    /// The subgraph (core) it belongs to.
    pub core: Option<u8>,
    /// Its usage class.
    pub usage: UsageClass,
    /// Bytes that landed (a `.npy` member's array data only).
    pub len: u64,
    /// Size of the member in the tar.
    pub member_len: u64,
    /// [`digest64`](crate::digest::digest64) of the bytes that landed.
    pub digest: u64,
    /// The device region.
    pub region: Option<RegionId>,
    /// The region's device address.
    pub address: Option<u64>,
    /// What became of it.
    pub state: PayloadState,
}

/// One regular tar member, as the walk meets it: read or skipped, before its body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberReport<'a> {
    /// Its path in the tar (one leading `./` stripped).
    pub name: &'a str,
    /// Its header's `typeflag` ([`tar::Member::typeflag`](crate::tar::Member::typeflag)).
    pub typeflag: u8,
    /// Its body's size in bytes.
    pub size: u64,
    /// Offset of its (first) header block in the tar stream.
    pub header_offset: u64,
    /// Offset of its first body byte in the tar stream.
    pub data_offset: u64,
}

/// Device accounting of one subgraph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubgraphReport<'a> {
    /// The graph name from the KELF (`sg00`).
    pub name: &'a str,
    /// The core index (the graph's position in the chain's KELFs).
    pub core: u8,
    /// Regions placed for it.
    pub allocations: u32,
    /// Bytes placed for it.
    pub bytes_placed: u64,
    /// Bytes placed by usage class (indexed by [`usage_index`]).
    pub bytes_by_usage: [u64; USAGE_CLASS_COUNT],
}

impl SubgraphReport<'_> {
    /// Accounts one placed region.
    pub fn add(&mut self, usage: UsageClass, len: u64) {
        self.allocations = self.allocations.saturating_add(1);
        self.bytes_placed = self.bytes_placed.saturating_add(len);
        if let Some(slot) = self.bytes_by_usage.get_mut(usage_index(usage)) {
            *slot = slot.saturating_add(len);
        }
    }
}

/// The summary of a load: fixed size, whatever the model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoadReport {
    /// The device's architecture (`None` for a check without a device).
    pub device_arch: Option<Arch>,
    /// The KELF target as written.
    pub target: heapless::String<TARGET_TEXT>,
    /// Subgraphs of the chain.
    pub subgraphs: u32,
    /// Payload members read (every copy counted once, a replaced copy not).
    pub payloads: u32,
    /// Payloads placed (or checked, without a device).
    pub placed: u32,
    /// Bytes placed on the device (or checked).
    pub bytes_placed: u64,
    /// Inputs and outputs of `neff.json`.
    pub inputs: u32,
    /// Outputs of `neff.json` (one per distinct name).
    pub outputs: u32,
    /// Manifests read.
    pub manifests: u32,
    /// Payloads that nothing referenced: their staging regions were released (in a check
    /// without a device, they were read and dropped).
    pub released: u32,
    /// Warnings sent to the sink.
    pub warnings: u32,
    /// Bytes of tar stream inflated.
    pub inflated_bytes: u64,
    /// Bytes of compressed payload read.
    pub compressed_bytes: u64,
    /// Tar members walked (all kinds, skipped ones included).
    pub members: u32,
    /// Zero padding after the gzip stream, inside `data_size`.
    pub padding_bytes: u64,
    /// Bytes after `data_size` (a warning).
    pub trailing_bytes: u64,
    /// The integrity check's outcome.
    pub integrity: Option<Integrity>,
    /// The most bytes of the lent arena's records in use at once; the tokenizer's string
    /// scratch before them ([`STRING_SCRATCH`](crate::manifest::STRING_SCRATCH) bytes, see
    /// [`Storage::arena`](super::Storage::arena)) is not counted.
    pub arena_peak: u64,
}

impl LoadReport {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Clears everything, for reuse.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Records the archive's closing figures.
    pub(crate) fn finish(&mut self, finish: &Finish) {
        self.inflated_bytes = finish.inflated_bytes;
        self.compressed_bytes = finish.compressed_bytes;
        self.members = finish.members;
        self.padding_bytes = finish.padding_bytes;
        self.trailing_bytes = finish.trailing_bytes;
        self.integrity = Some(finish.integrity);
    }

    /// Serialises the summary as JSON into `buf`, returning the bytes written.
    pub fn to_json(&self, buf: &mut [u8]) -> Result<usize, serde_json_core::ser::Error> {
        serde_json_core::to_slice(self, buf)
    }
}

/// A `u64` digest as 16 lowercase hex digits (JSON numbers lose precision past 2^53).
pub struct Hex64(pub u64);

impl Serialize for Hex64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // By hand, not `{:016x}`: no formatting machinery in a defmt firmware image.
        let (mut text, mut rest) = ([0u8; 16], self.0);
        for digit in text.iter_mut().rev() {
            *digit = b"0123456789abcdef".get((rest & 0xf) as usize).copied().unwrap_or(b'0');
            rest >>= 4;
        }
        s.serialize_str(core::str::from_utf8(&text).unwrap_or(""))
    }
}

/// Bytes by usage class, as a map from class name to bytes, nonzero classes only.
struct UsageBytes<'a>(&'a [u64; USAGE_CLASS_COUNT]);

impl Serialize for UsageBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let nonzero = self.0.iter().filter(|b| **b != 0).count();
        let mut map = s.serialize_map(Some(nonzero))?;
        for (class, bytes) in USAGE_CLASSES.iter().zip(self.0.iter()) {
            if *bytes != 0 {
                map.serialize_entry(class.as_str(), bytes)?;
            }
        }
        map.end()
    }
}

impl Serialize for PayloadReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PayloadReport", 8)?;
        st.serialize_field("member", self.member)?;
        st.serialize_field("core", &self.core)?;
        st.serialize_field("usage", self.usage.as_str())?;
        st.serialize_field("len", &self.len)?;
        st.serialize_field("member_len", &self.member_len)?;
        st.serialize_field("digest", &Hex64(self.digest))?;
        st.serialize_field("address", &self.address)?;
        st.serialize_field("state", self.state.as_str())?;
        st.end()
    }
}

impl Serialize for SubgraphReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SubgraphReport", 5)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("core", &self.core)?;
        st.serialize_field("allocations", &self.allocations)?;
        st.serialize_field("bytes_placed", &self.bytes_placed)?;
        st.serialize_field("bytes_by_usage", &UsageBytes(&self.bytes_by_usage))?;
        st.end()
    }
}

/// One I/O tensor, as the report prints it.
pub struct TensorJson<'a>(pub &'a IoTensor<'a>);

impl Serialize for TensorJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut st = s.serialize_struct("IoTensor", 6)?;
        st.serialize_field("kind", if t.kind == IoKind::Input { "input" } else { "output" })?;
        st.serialize_field("name", t.name)?;
        st.serialize_field("dtype", t.dtype)?;
        st.serialize_field("nrt_dtype", &t.nrt_dtype.value())?;
        st.serialize_field("shape", t.shape)?;
        st.serialize_field("size", &t.size)?;
        st.end()
    }
}

impl Serialize for LoadReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let integrity = self.integrity.unwrap_or(Integrity::NotRequested).as_str();
        let mut st = s.serialize_struct("LoadReport", 18)?;
        st.serialize_field("device_arch", &self.device_arch.map(Arch::as_str))?;
        st.serialize_field("target", self.target.as_str())?;
        st.serialize_field("bytes_placed", &self.bytes_placed)?;
        st.serialize_field("subgraphs", &self.subgraphs)?;
        st.serialize_field("payloads", &self.payloads)?;
        st.serialize_field("placed", &self.placed)?;
        st.serialize_field("inputs", &self.inputs)?;
        st.serialize_field("outputs", &self.outputs)?;
        st.serialize_field("released", &self.released)?;
        st.serialize_field("warnings", &self.warnings)?;
        st.serialize_field("inflated_bytes", &self.inflated_bytes)?;
        st.serialize_field("compressed_bytes", &self.compressed_bytes)?;
        st.serialize_field("members", &self.members)?;
        st.serialize_field("padding_bytes", &self.padding_bytes)?;
        st.serialize_field("trailing_bytes", &self.trailing_bytes)?;
        st.serialize_field("integrity", integrity)?;
        st.serialize_field("arena_peak", &self.arena_peak)?;
        st.end()
    }
}

/// An [`Observer`] that writes each placement, subgraph and I/O tensor as
/// one line of JSON (`{"payload": {...}}`, `{"subgraph": {...}}`, `{"tensor": {...}}`) to
/// `W`. A line longer than `LINE` bytes, or a write that fails, is counted in
/// [`JsonLines::failed`] and skipped: the load itself never fails for its report.
pub struct JsonLines<W, const LINE: usize = 512> {
    /// Where the lines go.
    pub out: W,
    /// Lines written.
    pub written: u32,
    /// Lines that did not fit in `LINE` bytes or could not be written.
    pub failed: u32,
}

impl<W: embedded_io::Write, const LINE: usize> JsonLines<W, LINE> {
    /// Lines to `out`.
    pub fn new(out: W) -> Self {
        Self { out, written: 0, failed: 0 }
    }

    fn line<T: Serialize>(&mut self, key: &str, value: &T) {
        struct Tagged<'a, T>(&'a str, &'a T);
        impl<T: Serialize> Serialize for Tagged<'_, T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(self.0, self.1)?;
                map.end()
            }
        }
        let mut buf = [0u8; LINE];
        let ok = match serde_json_core::to_slice(&Tagged(key, value), &mut buf) {
            Ok(n) => {
                let line = buf.get(..n).unwrap_or(&[]);
                self.out.write_all(line).is_ok() && self.out.write_all(b"\n").is_ok()
            }
            Err(_) => false,
        };
        if ok {
            self.written = self.written.saturating_add(1);
        } else {
            self.failed = self.failed.saturating_add(1);
        }
    }
}

impl<W: embedded_io::Write, const LINE: usize> Observer for JsonLines<W, LINE> {
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        self.line("tensor", &TensorJson(tensor));
    }

    fn payload(&mut self, payload: &PayloadReport<'_>) {
        self.line("payload", payload);
    }

    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        self.line("subgraph", subgraph);
    }
}

neff_macros::kinds!("schema/kinds.toml", Manifest);

/// What a caller sees of a load, as it happens. Every method has an empty default.
///
/// A manifest's streamed entries arrive first ([`Observer::entry`]), then the manifest itself
/// ([`Observer::manifest`]). A member read speculatively (before the manifest that names it)
/// is observed like any other; whether the chain reached it is known once the payloads are
/// reported, at the end.
pub trait Observer {
    /// Every regular member of the archive, in tar order, whatever the loader does with it
    /// (members it skips, such as producer metadata and debug data, included), before its body
    /// is read. Return `true` to be shown its body: [`Observer::member_bytes`] then gets each
    /// chunk in order as the loader reads or skips it (the loader's own pass: nothing reads the
    /// tar a second time), and [`Observer::member_end`] follows the last one. Only the
    /// member's bytes are lent, never kept.
    fn member(&mut self, _member: &MemberReport<'_>) -> bool {
        false
    }
    /// The next bytes of the body of the member the observer asked for in [`Observer::member`].
    fn member_bytes(&mut self, _bytes: &[u8]) {}
    /// The body of the member asked for was shown whole (not called when the load fails in it).
    fn member_end(&mut self) {}
    /// A manifest was read (successfully: a failed read is kept for the chain, not observed).
    fn manifest(&mut self, _member: &str, _manifest: Manifest<'_>) {}
    /// One streamed entry of the manifest being read.
    fn entry(&mut self, _member: &str, _entry: &Entry<'_>) {}
    /// One input or output tensor of `neff.json`, derived once the document is read.
    fn io_tensor(&mut self, _tensor: &IoTensor<'_>) {}
    /// A payload, once the chain is bound (in tar order).
    fn payload(&mut self, _payload: &PayloadReport<'_>) {}
    /// A subgraph's device accounting, once the chain is bound (in core order).
    fn subgraph(&mut self, _subgraph: &SubgraphReport<'_>) {}
    /// A DMA queue set of a `def.json` (`member`), named `name`, as the runtime's `kbin_dma_t`
    /// (without its ring-instance pointers), as it is read.
    fn dma_queue(&mut self, _member: &str, _name: &str, _queue: &KbinDmaHeader) {}
    /// A state-buffer carveout of a `def.json` (`member`), the `index`th of
    /// `runtime_statebuffer_reservation`, as the runtime's `sb_carveout`, as it is read.
    fn carveout(&mut self, _member: &str, _index: u16, _carveout: &SbCarveout) {}
    /// A `def.json`'s (`member`) subgraph-wide records, once it is read.
    fn subgraph_tables(&mut self, _member: &str, _tables: &SubgraphTables) {}
    /// One of the runtime's debug log lines, where the loader meets what libnrt logs
    /// (`Found KELF node: %s`): for a firmware's log (defmt) or a command's `-v`.
    fn debug(&mut self, _line: &DebugLine<'_>) {}
}

/// A subgraph's records of the runtime's, filled from its `def.json` (the pointer-free parts of
/// `mla_resources` the loader has the facts for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubgraphTables {
    /// `kbin_mem_ref_set_t` without its `mem` array; `None` when the var count or the shared
    /// scratchpad does not fit its field.
    pub mem_ref_set: Option<KbinMemRefSetHeader>,
    /// `kbin_cc_streams_t` (`num_streams`, 1 when absent).
    pub cc_streams: KbinCcStreams,
    /// `fp8_conversion_info`, with `LoadOptions::fp8`'s overrides applied.
    pub fp8: Fp8ConversionInfo,
    /// The pointer-free tail of `mla_resources` (`CCSTMI`, the fp8 config, the input and
    /// output var counts); `None` when a count does not fit its field.
    pub mla_tail: Option<MlaResourcesTail>,
}

/// A debug line of libnrt's, with its facts; `Display` writes the runtime's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugLine<'a> {
    /// `Found KELF node: %s` (seed §3, `parse_neff_json`): a KELF node of `neff.json` the chain
    /// takes, and the member its `attrs.kelf` names.
    KelfNode {
        /// The KELF member (`kelf-0.json`).
        kelf: &'a str,
    },
}

impl core::fmt::Display for DebugLine<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DebugLine::KelfNode { kelf } => write!(f, "Found KELF node: {kelf}"),
        }
    }
}

/// The caller's observer as the walk shares it between a member's reader, which shows it the
/// member's bytes ([`Observer::member_bytes`]), and the manifest reads, which show it entries:
/// each call borrows it for that call only. Forwards every method, as `&mut O` does.
pub(super) struct Shared<'c, O: ?Sized>(pub &'c RefCell<O>);

impl<O: Observer + ?Sized> Observer for Shared<'_, O> {
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        self.0.try_borrow_mut().is_ok_and(|mut o| o.member(member))
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.member_bytes(bytes);
        }
    }
    fn member_end(&mut self) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.member_end();
        }
    }
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.manifest(member, manifest);
        }
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.entry(member, entry);
        }
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.io_tensor(tensor);
        }
    }
    fn payload(&mut self, payload: &PayloadReport<'_>) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.payload(payload);
        }
    }
    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.subgraph(subgraph);
        }
    }
    fn debug(&mut self, line: &DebugLine<'_>) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.debug(line);
        }
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.dma_queue(member, name, queue);
        }
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.carveout(member, index, carveout);
        }
    }
    fn subgraph_tables(&mut self, member: &str, tables: &SubgraphTables) {
        if let Ok(mut o) = self.0.try_borrow_mut() {
            o.subgraph_tables(member, tables);
        }
    }
}

/// An observer that looks at nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        (**self).member(member)
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        (**self).member_bytes(bytes);
    }
    fn member_end(&mut self) {
        (**self).member_end();
    }
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        (**self).manifest(member, manifest);
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        (**self).entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        (**self).io_tensor(tensor);
    }
    fn payload(&mut self, payload: &PayloadReport<'_>) {
        (**self).payload(payload);
    }
    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        (**self).subgraph(subgraph);
    }
    fn debug(&mut self, line: &DebugLine<'_>) {
        (**self).debug(line);
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        (**self).dma_queue(member, name, queue);
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        (**self).carveout(member, index, carveout);
    }
    fn subgraph_tables(&mut self, member: &str, tables: &SubgraphTables) {
        (**self).subgraph_tables(member, tables);
    }
}
