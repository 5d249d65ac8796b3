//! A simulated device: a [`Hal`] over caller-provided memory, with an allocation log and
//! a digest of what each region received.
//!
//! [`SimDevice`] runs in two modes:
//!
//! * **memory** ([`SimDevice::new`]): device memory is a caller-provided `&mut [u8]`; a
//!   region's address is its byte offset in that slice, writes land there, adoption by copy
//!   is a real `copy_within`, and [`SimDevice::contents`] shows the bytes.
//! * **digest-only** ([`SimDevice::digest_only`]): for controllers whose RAM is far smaller
//!   than a device's memory. The same allocator runs over a virtual address space of a given
//!   size (say 64 GiB) and no byte is stored: each region keeps only a running digest of
//!   what it received, so writes must arrive in order.
//!
//! # Allocator
//!
//! First fit over a fixed table of `REGIONS` records kept in id order: the lowest address
//! that satisfies the alignment and overlaps no live region wins, so freed space is reused
//! at once. Released records stay in the table as a log until their slot is needed; then
//! the oldest released record is dropped and counted by [`SimDevice::forgotten`] (a live
//! region is never dropped: with every slot live, allocation fails with
//! [`HalError::RegionTableFull`] naming `REGIONS`).
//!
//! # Digest
//!
//! Each region's digest is [`digest64`] (XXH3-64) of bytes
//! `0..written`, the digest the loader computes of what it sends; a record keeps it as a `u64`.
//! A region being written also needs a running [`Digest64`] (384 bytes). Those come from a
//! pool of `STREAMS` (default [`DEFAULT_STREAMS`]): a region takes one at its first write and
//! keeps it until it is released, or until the pool runs dry and the stream of a full region
//! (whose digest its record already holds) is handed on. So writes to up to `STREAMS` regions
//! may interleave. In digest-only mode a write that finds no stream (none free, or its own was
//! handed on and it grew by an adoption since) fails with [`HalError::RegionTableFull`] naming
//! `STREAMS`; in memory mode the region is then digested from memory, as one written out of
//! order is.
//!
//! # Size
//!
//! `size_of::<SimDevice>()` with the defaults (`REGIONS` = [`DEFAULT_REGIONS`] = 128, `STREAMS`
//! = [`DEFAULT_STREAMS`] = 8) is 12 800 bytes on a 64-bit host (asserted in a test): 72 bytes
//! per region record (9 216), 392 per stream (a 384-byte XXH3 state and its owner; 3 136), and
//! 448 bytes of counters, per-class accounting (two arrays of 22 `u64`) and the lent notebook.
//!
//! # Notebook
//!
//! [`SimDevice::with_notebook`] lends the device memory the loader may keep its notes in
//! ([`Hal::notebook_len`]), apart from the regions' address space, as a device's own memory
//! would be. [`SimDevice::noted_bytes`] says how far the loader wrote.
//!
//! # Arithmetic
//!
//! Sizes, offsets and alignments come from the loader, hence from the NEFF: spans and
//! alignment are checked (a span past the address space is [`HalError::OutOfMemory`] or
//! [`HalError::OutOfBounds`], ids past `u32::MAX` [`HalError::IdsExhausted`]), byte accounting
//! saturates, and the table counters are bounded by `REGIONS` (noted where they move).
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use crate::digest::{digest64, Digest64};
use crate::hal::{usage_index, AllocRequest, Hal, HalError, RegionId, USAGE_CLASS_COUNT};
use crate::vocab::{Arch, UsageClass};

/// The region-table capacity of a plain `SimDevice`.
pub const DEFAULT_REGIONS: usize = 128;

/// The digest of no bytes: `digest64(b"")` (a test checks it), usable in a `const`.
const EMPTY_DIGEST: u64 = 0x2d06_8005_38d3_94c2;

/// The running digest of a region that received nothing yet.
const FRESH_STREAM: Digest64 = Digest64::new();

/// The stream-pool size of a plain `SimDevice`: regions being written at once (the loader
/// writes one payload at a time).
pub const DEFAULT_STREAMS: usize = 8;

/// Where a region is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionState {
    /// Allocated and usable.
    Live,
    /// Freed by [`Hal::release`].
    Released,
    /// Consumed by [`Hal::adopt`]; its bytes now belong to `into`.
    Adopted {
        /// The region that took over.
        into: RegionId,
    },
}

/// How a region came from a staged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Adoption {
    /// The staged region.
    pub from: RegionId,
    /// True when re-labelled in place (same address), false when copied device-side.
    pub in_place: bool,
}

/// One entry of the allocation log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegionRecord {
    /// The region's id.
    pub id: RegionId,
    /// Its usage class.
    pub usage: UsageClass,
    /// The core that owns it.
    pub core: u8,
    /// Its device address (byte offset in device memory).
    pub address: u64,
    /// Its size in bytes.
    pub size: u64,
    /// The alignment that was requested.
    pub align: u64,
    /// Live, released or adopted.
    pub state: RegionState,
    /// Set when the region was made by [`Hal::adopt`].
    pub adopted_from: Option<Adoption>,
    /// The high-water mark of bytes written (`max(offset + len)` over writes).
    pub written: u64,
    /// The digest of bytes `0..written` while `in_order`.
    digest: u64,
    // False once a write did not start at `written` (memory mode only): the running digest
    // is stale and is recomputed from memory.
    in_order: bool,
}

impl RegionRecord {
    const EMPTY: Self = Self {
        id: RegionId(0),
        usage: UsageClass::Generic,
        core: 0,
        address: 0,
        size: 0,
        align: 1,
        state: RegionState::Released,
        adopted_from: None,
        written: 0,
        digest: EMPTY_DIGEST,
        in_order: true,
    };

    /// True while the region is allocated.
    pub fn is_live(&self) -> bool {
        self.state == RegionState::Live
    }

    /// One past the region's last byte.
    pub fn end(&self) -> u64 {
        self.address.saturating_add(self.size)
    }

    /// The digest of bytes `0..written`, when known without reading memory (always, except
    /// for a live region written out of order: use [`SimDevice::digest`]).
    pub fn digest(&self) -> Option<u64> {
        self.in_order.then_some(self.digest)
    }
}

enum Backing<'m> {
    Memory(&'m mut [u8]),
    DigestOnly { capacity: u64 },
}

/// A simulated accelerator: see the [module documentation](self).
pub struct SimDevice<'m, const REGIONS: usize = DEFAULT_REGIONS, const STREAMS: usize = DEFAULT_STREAMS> {
    backing: Backing<'m>,
    arch: Arch,
    // Kept in ascending id order: appended on allocation, oldest released dropped first.
    records: [RegionRecord; REGIONS],
    // Running digests of the regions being written, kept apart from the records so that a
    // record stays a small `Copy` value; `stream_owner[i]` is the region using `streams[i]`.
    streams: [Digest64; STREAMS],
    stream_owner: [Option<RegionId>; STREAMS],
    record_count: usize,
    /// Live records in the log (the rest are released or adopted).
    live_count: usize,
    next_id: u32,
    forgotten: u64,
    live_bytes: u64,
    peak_bytes: u64,
    usage_bytes: [u64; USAGE_CLASS_COUNT],
    peak_usage_bytes: [u64; USAGE_CLASS_COUNT],
    /// The loader's notebook ([`Hal::notebook_len`]), empty unless lent.
    notebook: &'m mut [u8],
    /// The end of the furthest note.
    noted: usize,
}

impl<'m, const REGIONS: usize, const STREAMS: usize> SimDevice<'m, REGIONS, STREAMS> {
    /// A device whose memory is `memory` (zeroed region by region as they are allocated).
    pub fn new(memory: &'m mut [u8], arch: Arch) -> Self {
        Self::with_backing(Backing::Memory(memory), arch)
    }

    /// A device with a virtual address space of `capacity` bytes that stores no byte,
    /// only per-region digests. Writes to a region must be sequential.
    pub fn digest_only(capacity: u64, arch: Arch) -> Self {
        Self::with_backing(Backing::DigestOnly { capacity }, arch)
    }

    fn with_backing(backing: Backing<'m>, arch: Arch) -> Self {
        Self {
            backing,
            arch,
            records: [RegionRecord::EMPTY; REGIONS],
            streams: [FRESH_STREAM; STREAMS],
            stream_owner: [None; STREAMS],
            record_count: 0,
            live_count: 0,
            next_id: 1,
            forgotten: 0,
            live_bytes: 0,
            peak_bytes: 0,
            usage_bytes: [0; USAGE_CLASS_COUNT],
            peak_usage_bytes: [0; USAGE_CLASS_COUNT],
            notebook: &mut [],
            noted: 0,
        }
    }

    /// The device with `notebook` as the memory the loader may keep its notes in
    /// ([`Hal::notebook_len`]).
    pub fn with_notebook(self, notebook: &'m mut [u8]) -> Self {
        Self { notebook, noted: 0, ..self }
    }

    /// Bytes of the notebook written so far (the end of the furthest note).
    pub fn noted_bytes(&self) -> usize {
        self.noted
    }

    /// The notebook bytes at `at`, `len` of them; `OutOfBounds` (region 0, which no region
    /// is: ids start at 1) past its end.
    fn notebook_span(&self, at: u64, len: usize) -> Result<core::ops::Range<usize>, HalError> {
        let size = self.notebook.len() as u64;
        let bad = HalError::OutOfBounds { region: RegionId(0), offset: at, len: len as u64, size };
        span(at, len as u64).filter(|r| r.end <= self.notebook.len()).ok_or(bad)
    }

    /// True in digest-only mode.
    pub fn is_digest_only(&self) -> bool {
        matches!(self.backing, Backing::DigestOnly { .. })
    }

    /// The size of the device address space in bytes.
    pub fn capacity(&self) -> u64 {
        match &self.backing {
            Backing::Memory(memory) => memory.len() as u64,
            Backing::DigestOnly { capacity } => *capacity,
        }
    }

    /// Bytes held by live regions.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Bytes not held by live regions (possibly fragmented).
    pub fn free_bytes(&self) -> u64 {
        self.capacity().saturating_sub(self.live_bytes)
    }

    /// The most bytes ever held by live regions at once.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }

    /// Bytes held by live regions, per usage class (indexed by [`usage_index`]).
    pub fn usage_bytes(&self) -> &[u64; USAGE_CLASS_COUNT] {
        &self.usage_bytes
    }

    /// The most bytes each usage class ever held at once (indexed by [`usage_index`]).
    pub fn peak_usage_bytes(&self) -> &[u64; USAGE_CLASS_COUNT] {
        &self.peak_usage_bytes
    }

    /// Bytes held by live regions of `usage`.
    pub fn bytes_in(&self, usage: UsageClass) -> u64 {
        self.usage_bytes.get(usage_index(usage)).copied().unwrap_or(0)
    }

    /// The largest free contiguous span in bytes.
    pub fn largest_free_span(&self) -> u64 {
        let mut largest = 0;
        let mut cursor = 0;
        // Walk the live regions in address order (they never overlap), with the gap before each.
        let after = |cursor: u64, r: &RegionRecord| Some((r.address.checked_sub(cursor)?, r.end()));
        while let Some((gap, end)) = self.live_regions().filter_map(|r| after(cursor, r)).min_by_key(|&(gap, _)| gap) {
            largest = largest.max(gap);
            cursor = end;
        }
        largest.max(self.capacity().saturating_sub(cursor))
    }

    /// Released records dropped from the log to make room for new regions.
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// Every record still in the log (live, released, adopted), oldest first.
    pub fn log(&self) -> impl Iterator<Item = &RegionRecord> + '_ {
        self.records.iter().take(self.record_count)
    }

    /// The live regions, oldest first.
    pub fn live_regions(&self) -> impl Iterator<Item = &RegionRecord> + '_ {
        self.log().filter(|r| r.is_live())
    }

    /// The log record of `id`, live or not, while it is in the log.
    pub fn region(&self, id: RegionId) -> Option<&RegionRecord> {
        self.index_of(id).and_then(|i| self.records.get(i))
    }

    /// The bytes of live region `id` (its whole size), in memory mode.
    pub fn contents(&self, id: RegionId) -> Option<&[u8]> {
        let record = self.region(id).filter(|r| r.is_live())?;
        match &self.backing {
            Backing::Memory(memory) => memory.get(span(record.address, record.size)?),
            Backing::DigestOnly { .. } => None,
        }
    }

    /// The digest of bytes `0..written` of region `id` (see [`RegionRecord::written`]).
    ///
    /// In memory mode a live region written out of order is digested from memory.
    pub fn digest(&self, id: RegionId) -> Option<u64> {
        let record = self.region(id)?;
        if let Some(digest) = record.digest() {
            return Some(digest);
        }
        let written = self.written_bytes(record)?;
        Some(digest64(written))
    }

    fn written_bytes(&self, record: &RegionRecord) -> Option<&[u8]> {
        match &self.backing {
            Backing::Memory(memory) if record.is_live() => memory.get(span(record.address, record.written)?),
            _ => None,
        }
    }

    fn index_of(&self, id: RegionId) -> Option<usize> {
        self.records.get(..self.record_count)?.binary_search_by_key(&id, |r| r.id).ok()
    }

    fn live_index(&self, id: RegionId) -> Result<usize, HalError> {
        self.index_of(id)
            .filter(|&i| self.records.get(i).is_some_and(RegionRecord::is_live))
            .ok_or(HalError::UnknownRegion { region: id })
    }

    /// The live regions, newest first: the scan stops at the last live one, so released
    /// records piled up at the old end of a full log cost nothing.
    fn live_newest_first(&self) -> impl Iterator<Item = &RegionRecord> + '_ {
        self.records.iter().take(self.record_count).rev().filter(|r| r.is_live()).take(self.live_count)
    }

    /// The lowest `req.align`-aligned address where `req.size` bytes overlap no live region.
    ///
    /// The live spans are sorted by address (in a stack array of `REGIONS` entries, no heap)
    /// and swept once: O(n log n) per allocation, so thousands of regions stay fast.
    fn first_fit(&self, req: &AllocRequest) -> Option<u64> {
        let mut spans = [(0u64, 0u64); REGIONS];
        let mut n = 0usize;
        for ((slot, r), count) in spans.iter_mut().zip(self.live_newest_first()).zip(1..) {
            *slot = (r.address, r.end());
            n = count;
        }
        let spans = spans.get_mut(..n).unwrap_or(&mut []);
        spans.sort_unstable();
        let mut candidate = 0u64;
        for &(start, end) in spans.iter() {
            let candidate_end = candidate.checked_add(req.size)?;
            if candidate_end <= start {
                // Every later span starts at or after this one: the gap before it fits.
                break;
            }
            if end > candidate {
                candidate = align_up(end, req.align)?;
            }
        }
        candidate.checked_add(req.size).filter(|&end| end <= self.capacity()).map(|_| candidate)
    }

    /// Makes room for one more record; returns false when every slot holds a live region.
    // The counts stay bounded: a released record was found, so `record_count` is at least 1,
    // and `forgotten` grows by one per allocation, whose ids are a checked `u32`.
    #[allow(clippy::arithmetic_side_effects)]
    fn make_room(&mut self) -> bool {
        if self.record_count < REGIONS {
            return true;
        }
        let Some(oldest_released) = self.log().position(|r| !r.is_live()) else {
            return false;
        };
        if let Some(tail) = self.records.get_mut(oldest_released..self.record_count) {
            tail.rotate_left(1);
        }
        self.record_count -= 1;
        self.forgotten += 1;
        true
    }

    /// Allocates a record and its span; the span is zeroed in memory mode.
    fn allocate(&mut self, req: &AllocRequest, adopted_from: Option<Adoption>) -> Result<RegionId, HalError> {
        req.validate()?;
        // `ok_or_else`: the error's figures walk every region, only worth it on failure.
        let address = self.first_fit(req).ok_or_else(|| HalError::OutOfMemory {
            requested: req.size,
            align: req.align,
            free: self.free_bytes(),
            largest_free: self.largest_free_span(),
        })?;
        if !self.make_room() {
            return Err(HalError::RegionTableFull { limit: "REGIONS", capacity: REGIONS as u32 });
        }
        let id = RegionId(self.next_id);
        self.next_id = self.next_id.checked_add(1).ok_or(HalError::IdsExhausted)?;
        if let Backing::Memory(memory) = &mut self.backing {
            if let Some(bytes) = span(address, req.size).and_then(|s| memory.get_mut(s)) {
                bytes.fill(0);
            }
        }
        let record = RegionRecord {
            id,
            usage: req.usage,
            core: req.core,
            address,
            size: req.size,
            align: req.align,
            state: RegionState::Live,
            adopted_from,
            ..RegionRecord::EMPTY
        };
        self.push_live(record)?;
        Ok(id)
    }

    /// Appends a live record in the next free slot and accounts for its bytes.
    // The counts stay bounded: the slot exists, so `record_count` < `REGIONS` before the
    // increment, and `live_count` <= `record_count`.
    #[allow(clippy::arithmetic_side_effects)]
    fn push_live(&mut self, record: RegionRecord) -> Result<(), HalError> {
        let slot = self
            .records
            .get_mut(self.record_count)
            .ok_or(HalError::RegionTableFull { limit: "REGIONS", capacity: REGIONS as u32 })?;
        *slot = record;
        self.record_count += 1;
        self.live_count += 1;
        self.account_alloc(record.usage, record.size);
        Ok(())
    }

    fn account_alloc(&mut self, usage: UsageClass, size: u64) {
        self.live_bytes = self.live_bytes.saturating_add(size);
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
        let class = usage_index(usage);
        if let (Some(live), Some(peak)) = (self.usage_bytes.get_mut(class), self.peak_usage_bytes.get_mut(class)) {
            *live = live.saturating_add(size);
            *peak = (*peak).max(*live);
        }
    }

    fn account_free(&mut self, usage: UsageClass, size: u64) {
        self.live_bytes = self.live_bytes.saturating_sub(size);
        if let Some(live) = self.usage_bytes.get_mut(usage_index(usage)) {
            *live = live.saturating_sub(size);
        }
    }

    /// The stream `region` is using, if any.
    fn stream_of(&self, region: RegionId) -> Option<usize> {
        self.stream_owner.iter().position(|&owner| owner == Some(region))
    }

    /// A fresh stream for `region`: a free one, else that of a full region.
    fn take_stream(&mut self, region: RegionId) -> Option<usize> {
        let full = |owner: RegionId| self.region(owner).is_none_or(|r| r.written == r.size);
        let free = self
            .stream_owner
            .iter()
            .position(Option::is_none)
            .or_else(|| self.stream_owner.iter().position(|owner| owner.is_some_and(full)))?;
        *self.stream_owner.get_mut(free)? = Some(region);
        *self.streams.get_mut(free)? = FRESH_STREAM;
        Some(free)
    }

    /// Hands `from`'s stream, if it has one, to `to` (an adoption: the bytes moved with it).
    fn hand_stream(&mut self, from: RegionId, to: RegionId) {
        if let Some(owner) = self.stream_of(from).and_then(|i| self.stream_owner.get_mut(i)) {
            *owner = Some(to);
        }
    }

    /// Gives `region`'s stream back to the pool (its record keeps the digest).
    fn drop_stream(&mut self, region: RegionId) {
        if let Some(owner) = self.stream_of(region).and_then(|i| self.stream_owner.get_mut(i)) {
            *owner = None;
        }
    }

    /// Marks the live record at `index` as `state`, freezing its digest first.
    fn retire(&mut self, index: usize, state: RegionState) {
        let Some(record) = self.records.get(index).copied() else { return };
        let mut frozen = record;
        if !record.in_order {
            // Memory mode, written out of order: digest the bytes before they can be reused.
            if let Some(bytes) = self.written_bytes(&record) {
                frozen.digest = digest64(bytes);
                frozen.in_order = true;
            }
        }
        frozen.state = state;
        if let Some(slot) = self.records.get_mut(index) {
            *slot = frozen;
        }
        self.drop_stream(record.id);
        self.live_count = self.live_count.saturating_sub(1);
        self.account_free(record.usage, record.size);
    }
}

impl<const REGIONS: usize, const STREAMS: usize> Hal for SimDevice<'_, REGIONS, STREAMS> {
    type Error = HalError;

    fn arch(&self) -> Arch {
        self.arch
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        self.allocate(req, None)
    }

    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), HalError> {
        let index = self.live_index(region)?;
        let record = self.records.get(index).copied().ok_or(HalError::UnknownRegion { region })?;
        let len = bytes.len() as u64;
        let end = offset.checked_add(len).filter(|&end| end <= record.size).ok_or(HalError::OutOfBounds {
            region,
            offset,
            len,
            size: record.size,
        })?;
        if bytes.is_empty() {
            // Nothing lands: not a write out of order, and the digest is unchanged.
            return Ok(());
        }
        let sequential = offset == record.written;
        let digest_only = self.is_digest_only();
        if digest_only && !sequential {
            return Err(HalError::OutOfOrderWrite { region, expected: record.written, offset });
        }
        // The running digest, for a write that continues an in-order region. A region with
        // bytes in and no stream had its stream handed on: it cannot be resumed.
        let stream = match (sequential && record.in_order).then(|| self.stream_of(region)) {
            Some(Some(held)) => Some(held),
            Some(None) if record.written == 0 => self.take_stream(region),
            Some(None) | None => None,
        };
        if stream.is_none() && sequential && record.in_order && digest_only {
            return Err(HalError::RegionTableFull { limit: "STREAMS", capacity: STREAMS as u32 });
        }
        match &mut self.backing {
            Backing::DigestOnly { .. } => {}
            Backing::Memory(memory) => {
                let start = record.address.checked_add(offset);
                let dst = start.and_then(|s| span(s, len)).and_then(|s| memory.get_mut(s));
                // The record lies inside memory and the write inside the record.
                dst.ok_or(HalError::OutOfBounds { region, offset, len, size: record.size })?.copy_from_slice(bytes);
            }
        }
        let running = stream.and_then(|i| self.streams.get_mut(i));
        if let Some(slot) = self.records.get_mut(index) {
            match running {
                Some(running) => {
                    running.update(bytes);
                    slot.digest = running.finish();
                }
                None => slot.in_order = false,
            }
            slot.written = slot.written.max(end);
        }
        Ok(())
    }

    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, HalError> {
        req.validate()?;
        let index = self.live_index(staged)?;
        let old = self.records.get(index).copied().ok_or(HalError::UnknownRegion { region: staged })?;
        if req.size < old.size {
            return Err(HalError::AdoptTooSmall { region: staged, staged: old.size, requested: req.size });
        }
        let in_place = req.size == old.size && old.address.checked_rem(req.align) == Some(0);
        if in_place {
            if !self.make_room() {
                return Err(HalError::RegionTableFull { limit: "REGIONS", capacity: REGIONS as u32 });
            }
            let id = RegionId(self.next_id);
            self.next_id = self.next_id.checked_add(1).ok_or(HalError::IdsExhausted)?;
            let index = self.live_index(staged)?; // make_room may have shifted the table
            self.hand_stream(staged, id);
            self.retire(index, RegionState::Adopted { into: id });
            let record = RegionRecord {
                id,
                usage: req.usage,
                core: req.core,
                align: req.align,
                state: RegionState::Live,
                adopted_from: Some(Adoption { from: staged, in_place: true }),
                ..old
            };
            self.push_live(record)?;
            return Ok(id);
        }
        let id = self.allocate(req, Some(Adoption { from: staged, in_place: false }))?;
        let new_index = self.live_index(id)?;
        let new_address = self.records.get(new_index).map_or(0, |r| r.address);
        if let Backing::Memory(memory) = &mut self.backing {
            let src = span(old.address, old.size).ok_or(HalError::UnknownRegion { region: staged })?;
            let dst = usize::try_from(new_address).ok();
            // Both spans lie inside memory by construction; checked anyway, since
            // `copy_within` panics on a bad range.
            let fits = dst.and_then(|d| d.checked_add(src.len())).is_some_and(|end| end <= memory.len())
                && src.end <= memory.len();
            if let (true, Some(dst)) = (fits, dst) {
                memory.copy_within(src, dst);
            }
        }
        if let Some(slot) = self.records.get_mut(new_index) {
            slot.written = old.written;
            slot.digest = old.digest;
            slot.in_order = old.in_order;
        }
        let index = self.live_index(staged)?;
        self.hand_stream(staged, id);
        self.retire(index, RegionState::Adopted { into: id });
        Ok(id)
    }

    fn release(&mut self, region: RegionId) -> Result<(), HalError> {
        let index = self.live_index(region)?;
        self.retire(index, RegionState::Released);
        Ok(())
    }

    fn address(&self, region: RegionId) -> Result<u64, HalError> {
        let index = self.live_index(region)?;
        self.records.get(index).map(|r| r.address).ok_or(HalError::UnknownRegion { region })
    }

    fn notebook_len(&self) -> u64 {
        self.notebook.len() as u64
    }

    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), HalError> {
        let range = self.notebook_span(at, bytes.len())?;
        self.noted = self.noted.max(range.end);
        if let Some(dst) = self.notebook.get_mut(range) {
            dst.copy_from_slice(bytes);
        }
        Ok(())
    }

    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), HalError> {
        let range = self.notebook_span(at, out.len())?;
        if let Some(src) = self.notebook.get(range) {
            out.copy_from_slice(src);
        }
        Ok(())
    }
}

impl<const REGIONS: usize, const STREAMS: usize> fmt::Debug for SimDevice<'_, REGIONS, STREAMS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimDevice")
            .field("arch", &self.arch)
            .field("digest_only", &self.is_digest_only())
            .field("capacity", &self.capacity())
            .field("live_regions", &self.live_regions().count())
            .field("live_bytes", &self.live_bytes)
            .field("peak_bytes", &self.peak_bytes)
            .finish()
    }
}

/// `address..address + len` as a slice range, if it fits in `usize`.
fn span(address: u64, len: u64) -> Option<core::ops::Range<usize>> {
    let start = usize::try_from(address).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    Some(start..end)
}

/// `value` rounded up to a multiple of `align` (a power of two).
fn align_up(value: u64, align: u64) -> Option<u64> {
    let mask = align.checked_sub(1)?;
    value.checked_add(mask).map(|v| v & !mask)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    fn req(size: u64, align: u64, usage: UsageClass) -> AllocRequest {
        AllocRequest { size, align, usage, core: 0 }
    }

    #[test]
    fn the_empty_digest_constant_is_that_of_no_bytes() {
        assert_eq!(EMPTY_DIGEST, digest64(b""));
        assert_eq!(RegionRecord::EMPTY.digest(), Some(digest64(b"")));
    }

    #[test]
    fn align_up_rounds_to_power_of_two() {
        assert_eq!(align_up(0, 64), Some(0));
        assert_eq!(align_up(1, 64), Some(64));
        assert_eq!(align_up(64, 64), Some(64));
        assert_eq!(align_up(u64::MAX, 2), None);
    }

    #[test]
    fn first_fit_takes_the_lowest_aligned_gap() {
        let mut memory = [0u8; 1024];
        let mut dev: SimDevice<'_, 8> = SimDevice::new(&mut memory, Arch::Cayman);
        let a = dev.alloc(&req(100, 1, UsageClass::Weight)).unwrap();
        let b = dev.alloc(&req(100, 64, UsageClass::Weight)).unwrap();
        assert_eq!(dev.address(a), Ok(0));
        assert_eq!(dev.address(b), Ok(128));
        dev.release(a).unwrap();
        let c = dev.alloc(&req(64, 32, UsageClass::Io)).unwrap();
        assert_eq!(dev.address(c), Ok(0), "freed space is reused first");
        assert_eq!(dev.largest_free_span(), 1024 - 228);
    }

    #[test]
    fn full_table_of_live_regions_names_the_limit() {
        let mut dev: SimDevice<'_, 2> = SimDevice::digest_only(1 << 20, Arch::Sunda);
        dev.alloc(&req(1, 1, UsageClass::Generic)).unwrap();
        dev.alloc(&req(1, 1, UsageClass::Generic)).unwrap();
        let err = dev.alloc(&req(1, 1, UsageClass::Generic)).unwrap_err();
        assert_eq!(err, HalError::RegionTableFull { limit: "REGIONS", capacity: 2 });
        assert_eq!(err.status(), crate::Status::Resource);
    }

    #[test]
    fn size_is_as_documented() {
        let size = core::mem::size_of::<SimDevice<'_>>();
        assert_eq!(core::mem::size_of::<RegionRecord>(), 72);
        assert_eq!(core::mem::size_of::<Digest64>(), 384);
        assert_eq!(core::mem::size_of::<Option<RegionId>>(), 8);
        assert_eq!(size, 12_800);
        assert_eq!(size - DEFAULT_REGIONS * 72 - DEFAULT_STREAMS * (384 + 8), 448, "counters and accounting");
    }
}
