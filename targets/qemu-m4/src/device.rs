//! The accelerator model, and the checker's table: what is not controller RAM.
//!
//! [`DigestDevice`] is the image's HAL: a device with a 64 GiB address space that stores no
//! byte, only the digest of what each region received, as a management controller would see
//! an accelerator far larger than its own RAM. Its region table stands for the device's own
//! bookkeeping, and the checker's table (which payload landed in which region) is test
//! instrumentation; both grow with the model (one record per payload: hundreds for the
//! generated big model), so neither belongs in the controller's budget. They live in the
//! `.device` section (`memory.x`: board RAM past the 128 KiB budget), and the firmware prints
//! their size apart from it. So does the device's running digest of the region being
//! written: hashing what it received is the device's work, not the controller's.
//!
//! The device is written for this image rather than taken from `neff::sim`: a firmware team
//! writes its own [`Hal`] for its accelerator, and this one shows how little that takes. It
//! allocates by bumping an address (a load's regions are few and short-lived next to 64 GiB).
//!
//! It also lends the loader a *notebook* ([`Hal::notebook_len`]): device memory where the
//! loader keeps what it must remember of each payload that landed (region, length, digest:
//! 28 bytes), so that the controller keeps 4 bytes a payload instead. One note per region
//! record: the loader gives a note back when its payload leaves (a replaced copy, a staged copy
//! that was a manifest), so the notes in use are about the payloads held; past the notebook,
//! the loader's notes go to its arena.
//!
//! Placing the tables in a named section (`#[link_section]`, which the lint counts as unsafe
//! code) and lending them out once take `unsafe` code: confined to [`take`]. Every other line
//! is safe.

use core::mem::MaybeUninit;
use core::ptr::{addr_of, addr_of_mut};
use core::sync::atomic::{AtomicBool, Ordering};

use neff::digest::Digest64;
use neff::hal::{AllocRequest, Hal, HalError, RegionId, LANDING_NOTE};
use neff::manifest::Arch;

/// Region records (never reused): one per payload of the generated big model (572), with room
/// for staging, the staged copies of its 57 JSON members met before the manifest naming them
/// included (a load that needs more fails with `RegionTableFull`, naming this limit).
pub const REGIONS: usize = 704;
/// Bytes of the loader's notebook: a note for each region record.
pub const NOTEBOOK: usize = 1 << 20;
// A note for every region still fits beside the pending DMA references of the largest real
// NEFF here (410,787 bytes: `tests/controller_budget.rs`).
const _: () = assert!(NOTEBOOK >= REGIONS * LANDING_NOTE + 512 * 1024);
/// Payloads the checker can follow (the generated big model has 572).
pub const CHECKED_PAYLOADS: usize = 640;
/// The device's address space.
const CAPACITY: u64 = 64 << 30;

/// One region: plain integers, so that all-zero bytes are an empty record.
#[derive(Debug, Clone, Copy, Default)]
pub struct Region {
    address: u64,
    size: u64,
    /// Bytes received so far (writes are sequential).
    written: u64,
    /// Digest of the bytes received, kept current.
    digest: u64,
    live: bool,
}

/// The checker's table, by expected payload: `0` not reported yet, `u32::MAX` reported with
/// no region (an empty payload), else the region id plus one. All-zero bytes: nothing seen.
pub type SeenTable = [u32; CHECKED_PAYLOADS];

#[link_section = ".device.neff_qemu_m4.REGION_TABLE"]
#[allow(unsafe_code)]
static mut REGION_TABLE: MaybeUninit<[Region; REGIONS]> = MaybeUninit::uninit();

#[link_section = ".device.neff_qemu_m4.SEEN_TABLE"]
#[allow(unsafe_code)]
static mut SEEN_TABLE: MaybeUninit<SeenTable> = MaybeUninit::uninit();

#[link_section = ".device.neff_qemu_m4.NOTEBOOK"]
#[allow(unsafe_code)]
static mut NOTEBOOK_BYTES: MaybeUninit<[u8; NOTEBOOK]> = MaybeUninit::uninit();

#[link_section = ".device.neff_qemu_m4.STREAM"]
#[allow(unsafe_code)]
static mut STREAM: MaybeUninit<Digest64> = MaybeUninit::uninit();

/// Set once [`take`] has lent the tables out (in `.bss`: false at reset).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The tables of the `.device` section.
pub struct Tables {
    /// The device's region table.
    pub regions: &'static mut [Region; REGIONS],
    /// The checker's table.
    pub seen: &'static mut SeenTable,
    /// The device's running digest of the region being written: the accelerator's work (it
    /// keeps the digest of what it received), not the controller's.
    pub stream: &'static mut Digest64,
    /// The loader's notebook on the device ([`Hal::notebook_len`]).
    pub notebook: &'static mut [u8; NOTEBOOK],
}

/// The tables, zeroed in place (the section is NOLOAD: nothing initialises it at reset, and a
/// value built on the stack and moved in would cost the stack its size), and the device's
/// digest state (written once, before any load); `None` after the first call.
// Out of line: the digest state is built on the stack before it is written, and that frame
// must be gone before the loads (inlined into `main`, it would stay under all of them).
#[inline(never)]
#[allow(unsafe_code)]
pub fn take() -> Option<Tables> {
    if TAKEN.swap(true, Ordering::AcqRel) {
        return None;
    }
    // SAFETY: `TAKEN` lets this run once, so these are the only references ever made to the four
    // statics, and nothing else names them. The two tables and the notebook are plain integers
    // (and `bool`), for which all-zero bytes are valid values, so zeroing makes them
    // initialised; the digest is initialised by `write`.
    unsafe {
        let regions = &mut *addr_of_mut!(REGION_TABLE);
        let seen = &mut *addr_of_mut!(SEEN_TABLE);
        let notebook = &mut *addr_of_mut!(NOTEBOOK_BYTES);
        let stream = &mut *addr_of_mut!(STREAM);
        regions.as_mut_ptr().write_bytes(0, 1);
        seen.as_mut_ptr().write_bytes(0, 1);
        notebook.as_mut_ptr().write_bytes(0, 1);
        let stream = stream.write(Digest64::new());
        Some(Tables {
            regions: regions.assume_init_mut(),
            seen: seen.assume_init_mut(),
            stream,
            notebook: notebook.assume_init_mut(),
        })
    }
}

extern "C" {
    /// Start of the `.device` section, from `memory.x`.
    static __sdevice: u32;
    /// End of the `.device` section, from `memory.x`.
    static __edevice: u32;
}

/// Bytes of the `.device` section.
pub fn section_size() -> usize {
    // Addresses only: nothing is read.
    addr_of!(__edevice) as usize - addr_of!(__sdevice) as usize
}

/// A digest-only accelerator over a region table lent by the caller: see the module docs.
pub struct DigestDevice<'t> {
    regions: &'t mut [Region; REGIONS],
    /// Records used: region ids are their indices, never reused within a load.
    count: usize,
    next_address: u64,
    arch: Arch,
    /// The running digest of the region being written, lent as the region table is: the
    /// device's state, kept on the device side.
    stream: &'t mut Digest64,
    streaming: Option<usize>,
    /// The loader's notebook, lent as the region table is.
    notebook: &'t mut [u8; NOTEBOOK],
}

impl<'t> DigestDevice<'t> {
    /// An empty device of architecture `arch` keeping its regions in `regions`, its running
    /// digest in `stream` and the loader's notes in `notebook`.
    pub fn new(
        regions: &'t mut [Region; REGIONS],
        stream: &'t mut Digest64,
        notebook: &'t mut [u8; NOTEBOOK],
        arch: Arch,
    ) -> Self {
        regions.fill(Region::default());
        stream.reset();
        Self { regions, count: 0, next_address: 0, arch, stream, streaming: None, notebook }
    }

    /// The notebook bytes at `at`, `len` of them (the loader stays inside
    /// [`Hal::notebook_len`]; a call past it is refused).
    fn notes(&self, at: u64, len: usize) -> Result<core::ops::Range<usize>, HalError> {
        let start = usize::try_from(at).ok();
        let range = start.and_then(|s| Some(s..s.checked_add(len)?)).filter(|r| r.end <= NOTEBOOK);
        range.ok_or(HalError::OutOfBounds {
            region: RegionId(u32::MAX),
            offset: at,
            len: len as u64,
            size: NOTEBOOK as u64,
        })
    }

    /// The digest of what live region `id` received.
    pub fn digest(&self, id: RegionId) -> Option<u64> {
        self.live(id).ok().map(|i| self.regions[i].digest)
    }

    fn live(&self, id: RegionId) -> Result<usize, HalError> {
        let i = id.0 as usize;
        match self.regions.get(..self.count).and_then(|r| r.get(i)) {
            Some(r) if r.live => Ok(i),
            _ => Err(HalError::UnknownRegion { region: id }),
        }
    }

    /// A new record holding `req.size` bytes at `at`, or at the next address `req.align`
    /// allows.
    fn record(&mut self, req: &AllocRequest, at: Option<u64>) -> Result<usize, HalError> {
        req.validate()?;
        let i = self.count;
        if i == REGIONS {
            return Err(HalError::RegionTableFull { limit: "REGIONS", capacity: REGIONS as u32 });
        }
        let address = match at {
            Some(address) => address,
            None => {
                let address = self.next_address.checked_next_multiple_of(req.align);
                let end = address.and_then(|a| a.checked_add(req.size)).filter(|&e| e <= CAPACITY);
                let (Some(address), Some(end)) = (address, end) else {
                    let free = CAPACITY.saturating_sub(self.next_address);
                    return Err(HalError::OutOfMemory {
                        requested: req.size,
                        align: req.align,
                        free,
                        largest_free: free,
                    });
                };
                self.next_address = end;
                address
            }
        };
        self.regions[i] = Region { address, size: req.size, written: 0, digest: 0, live: true };
        self.count += 1;
        Ok(i)
    }
}

impl Hal for DigestDevice<'_> {
    type Error = neff::hal::HalError;

    fn arch(&self) -> Arch {
        self.arch
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        self.record(req, None).map(|i| RegionId(i as u32))
    }

    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), HalError> {
        let i = self.live(region)?;
        let r = self.regions[i];
        if offset != r.written {
            return Err(HalError::OutOfOrderWrite { region, expected: r.written, offset });
        }
        let len = bytes.len() as u64;
        if offset.checked_add(len).is_none_or(|end| end > r.size) {
            return Err(HalError::OutOfBounds { region, offset, len, size: r.size });
        }
        if self.streaming != Some(i) {
            // Writes are sequential per region, so a region's first write starts its digest.
            if offset != 0 {
                return Err(HalError::OutOfOrderWrite { region, expected: 0, offset });
            }
            self.stream.reset();
            self.streaming = Some(i);
        }
        self.stream.update(bytes);
        let digest = self.stream.finish();
        let r = &mut self.regions[i];
        r.written += len;
        r.digest = digest;
        Ok(())
    }

    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, HalError> {
        req.validate()?;
        let old = self.regions[self.live(staged)?];
        if req.size < old.size {
            return Err(HalError::AdoptTooSmall { region: staged, staged: old.size, requested: req.size });
        }
        // Re-labelled in place when it can be (the same bytes at the same address, under a new
        // id), else copied device-side to a new region (its zero tail is not digested).
        let in_place = req.size == old.size && old.address.is_multiple_of(req.align);
        let i = self.record(req, in_place.then_some(old.address))?;
        // `get_mut`, not indexing: this is inlined into the core, whose image keeps no panic
        // path (scripts/panic-paths.sh); both ids were checked above.
        if let Some(new) = self.regions.get_mut(i) {
            new.written = old.written;
            new.digest = old.digest;
        }
        if let Some(staged) = self.regions.get_mut(staged.0 as usize) {
            staged.live = false;
        }
        if self.streaming == Some(staged.0 as usize) {
            self.streaming = None;
        }
        Ok(RegionId(i as u32))
    }

    // Not inlined into the loader's dozen release paths.
    #[inline(never)]
    fn release(&mut self, region: RegionId) -> Result<(), HalError> {
        let i = self.live(region)?;
        self.regions[i].live = false;
        if self.streaming == Some(i) {
            self.streaming = None;
        }
        Ok(())
    }

    fn address(&self, region: RegionId) -> Result<u64, HalError> {
        self.live(region).map(|i| self.regions[i].address)
    }

    fn notebook_len(&self) -> u64 {
        NOTEBOOK as u64
    }

    // Byte loops, not `copy_from_slice`: these are inlined into the core, whose image keeps no
    // panic path (scripts/panic-paths.sh), and the lengths are equal only by construction.
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), HalError> {
        let range = self.notes(at, bytes.len())?;
        for (dst, src) in self.notebook.get_mut(range).unwrap_or_default().iter_mut().zip(bytes) {
            *dst = *src;
        }
        Ok(())
    }

    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), HalError> {
        let range = self.notes(at, out.len())?;
        for (dst, src) in out.iter_mut().zip(self.notebook.get(range).unwrap_or_default()) {
            *dst = *src;
        }
        Ok(())
    }
}
