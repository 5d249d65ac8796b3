//! The load report: what landed where, with no heap.
//!
//! A [`LoadReport`] is caller-owned output memory: the loader fills it as members pass (its
//! payload table is also the binder's index of what has been seen) and the caller keeps it
//! after the load. It serialises to JSON with `serde-json-core` into a caller buffer
//! ([`LoadReport::to_json`]), which is how firmware ships it to a host.

use core::fmt;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::archive::Finish;
use crate::hal::{usage_index, RegionId, USAGE_CLASSES, USAGE_CLASS_COUNT};
use crate::header::Integrity;
use crate::manifest::{Arch, IoTable, UsageClass};

/// Capacity of a subgraph name or of the KELF target in the report (the host profile's
/// graph names are up to 32 bytes).
pub const SUBGRAPH_NAME: usize = 32;

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
    /// Checked but not stored (a load without a device).
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
}

/// One payload member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadReport<const NAME: usize = 48> {
    /// The member's path in the tar.
    pub member: heapless::String<NAME>,
    /// The subgraph (core) it belongs to, once bound.
    pub core: Option<u8>,
    /// Its usage class (`Generic` while staged).
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

/// Device accounting of one subgraph.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubgraphReport {
    /// The graph name from the KELF (`sg00`).
    pub name: heapless::String<SUBGRAPH_NAME>,
    /// The core index (the graph's position in the KELF).
    pub core: u8,
    /// Regions placed for it.
    pub allocations: u32,
    /// Bytes placed for it.
    pub bytes_placed: u64,
    /// Bytes placed by usage class (indexed by [`usage_index`]).
    pub bytes_by_usage: [u64; USAGE_CLASS_COUNT],
}

impl SubgraphReport {
    /// Accounts one placed region.
    pub fn add(&mut self, usage: UsageClass, len: u64) {
        self.allocations += 1;
        self.bytes_placed = self.bytes_placed.saturating_add(len);
        if let Some(slot) = self.bytes_by_usage.get_mut(usage_index(usage)) {
            *slot = slot.saturating_add(len);
        }
    }
}

/// The whole report. `SG`: subgraphs; `PAYLOADS`: payload members; `IO`: I/O tensors;
/// `NAME`: a member path or tensor name (the loader's `PATH`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadReport<const SG: usize = 4, const PAYLOADS: usize = 48, const IO: usize = 8, const NAME: usize = 48> {
    /// The device's architecture (`None` for a check without a device).
    pub device_arch: Option<Arch>,
    /// The KELF target as written.
    pub target: heapless::String<SUBGRAPH_NAME>,
    /// Subgraphs, in KELF graph order.
    pub subgraphs: heapless::Vec<SubgraphReport, SG>,
    /// Payload members, in tar order.
    pub payloads: heapless::Vec<PayloadReport<NAME>, PAYLOADS>,
    /// The I/O tensors of `neff.json` (empty when it is absent).
    pub io: IoTable<IO, NAME>,
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
}

impl<const SG: usize, const PAYLOADS: usize, const IO: usize, const NAME: usize> LoadReport<SG, PAYLOADS, IO, NAME> {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Clears everything, for reuse.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Total bytes placed on the device.
    pub fn bytes_placed(&self) -> u64 {
        self.subgraphs.iter().map(|s| s.bytes_placed).sum()
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

    /// Serialises the report as JSON into `buf`, returning the bytes written.
    pub fn to_json(&self, buf: &mut [u8]) -> Result<usize, serde_json_core::ser::Error> {
        serde_json_core::to_slice(self, buf)
    }
}

/// A `u64` digest as 16 lowercase hex digits (JSON numbers lose precision past 2^53).
struct Hex64(u64);

impl Serialize for Hex64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut text: heapless::String<16> = heapless::String::new();
        let _ = fmt::write(&mut text, format_args!("{:016x}", self.0));
        s.serialize_str(&text)
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

impl<const NAME: usize> Serialize for PayloadReport<NAME> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PayloadReport", 8)?;
        st.serialize_field("member", self.member.as_str())?;
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

impl Serialize for SubgraphReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SubgraphReport", 5)?;
        st.serialize_field("name", self.name.as_str())?;
        st.serialize_field("core", &self.core)?;
        st.serialize_field("allocations", &self.allocations)?;
        st.serialize_field("bytes_placed", &self.bytes_placed)?;
        st.serialize_field("bytes_by_usage", &UsageBytes(&self.bytes_by_usage))?;
        st.end()
    }
}

/// One I/O tensor, as the report prints it.
struct Tensor<'a, const NAME: usize>(&'a crate::manifest::IoTensor<NAME>);

impl<const NAME: usize> Serialize for Tensor<'_, NAME> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut st = s.serialize_struct("IoTensor", 5)?;
        st.serialize_field("name", t.name.as_str())?;
        st.serialize_field("dtype", t.dtype.as_str())?;
        st.serialize_field("nrt_dtype", &t.nrt_dtype.value())?;
        st.serialize_field("shape", t.shape.as_slice())?;
        st.serialize_field("size", &t.size)?;
        st.end()
    }
}

struct Tensors<'a, const NAME: usize>(&'a [crate::manifest::IoTensor<NAME>]);

impl<const NAME: usize> Serialize for Tensors<'_, NAME> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Tensor))
    }
}

impl<const SG: usize, const PAYLOADS: usize, const IO: usize, const NAME: usize> Serialize
    for LoadReport<SG, PAYLOADS, IO, NAME>
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let integrity = match self.integrity {
            None | Some(Integrity::NotRequested) => "not-requested",
            Some(Integrity::Match(_)) => "match",
            Some(Integrity::Mismatch(_)) => "mismatch",
            Some(Integrity::NotApplicable) => "not-applicable",
        };
        let mut st = s.serialize_struct("LoadReport", 15)?;
        st.serialize_field("device_arch", &self.device_arch.map(Arch::as_str))?;
        st.serialize_field("target", self.target.as_str())?;
        st.serialize_field("bytes_placed", &self.bytes_placed())?;
        st.serialize_field("subgraphs", self.subgraphs.as_slice())?;
        st.serialize_field("payloads", self.payloads.as_slice())?;
        st.serialize_field("inputs", &Tensors(&self.io.inputs))?;
        st.serialize_field("outputs", &Tensors(&self.io.outputs))?;
        st.serialize_field("released", &self.released)?;
        st.serialize_field("warnings", &self.warnings)?;
        st.serialize_field("inflated_bytes", &self.inflated_bytes)?;
        st.serialize_field("compressed_bytes", &self.compressed_bytes)?;
        st.serialize_field("members", &self.members)?;
        st.serialize_field("padding_bytes", &self.padding_bytes)?;
        st.serialize_field("trailing_bytes", &self.trailing_bytes)?;
        st.serialize_field("integrity", integrity)?;
        st.end()
    }
}
