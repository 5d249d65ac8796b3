//! The device: a vtable of C callbacks behind the core's `Hal` trait.

use core::ffi::c_void;

use neff::hal::{AllocRequest, Hal, HalError, RegionId};
use neff::manifest::Arch;

/// A device refusal, as the HAL callbacks return it: 0 for success, else the HAL layer's own
/// code (the error's code is then `1100 +` it, `NEFF_ERR_HAL_<NAME>` in `neff_codes.h`); a
/// value this version does not know reads as `NEFF_HAL_UNKNOWN_REGION`. The values are ABI:
/// never renumbered.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_hal_result {
    /// Done.
    NEFF_HAL_OK = 0,
    /// No free span of device memory is large enough.
    NEFF_HAL_OUT_OF_MEMORY = 1,
    /// The device's table of regions is full.
    NEFF_HAL_REGION_TABLE_FULL = 2,
    /// Every region id has been issued.
    NEFF_HAL_IDS_EXHAUSTED = 3,
    /// A request for zero bytes.
    NEFF_HAL_ZERO_SIZE = 4,
    /// An alignment that is not a power of two.
    NEFF_HAL_BAD_ALIGNMENT = 5,
    /// The id names no live region.
    NEFF_HAL_UNKNOWN_REGION = 6,
    /// A write would end past its region.
    NEFF_HAL_OUT_OF_BOUNDS = 7,
    /// The device takes sequential writes only, and this one is not at the cursor.
    NEFF_HAL_OUT_OF_ORDER_WRITE = 8,
    /// An adopt request smaller than the staged region.
    NEFF_HAL_ADOPT_TOO_SMALL = 9,
}

/// A `neff_hal_result` as a callback returns it. C sees the enum's type; this side reads the
/// 32 bits as they come (a value the enum does not name is not undefined behaviour here, it
/// reads as `NEFF_HAL_UNKNOWN_REGION`). `targets/c/cbindgen.toml` writes it as `neff_hal_result`.
pub type HalResult = u32;

/// A `neff_arch` (`neff_schema.h`), held as its 32 bits (written `neff_arch` in C).
pub type ArchValue = u32;

/// A `neff_usage_class` (`neff_schema.h`), held as its 32 bits (written `neff_usage_class` in C).
pub type UsageValue = u32;

/// A region request: what the loader asks the device for.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct neff_alloc_request {
    /// Bytes (never 0).
    pub size: u64,
    /// Alignment in bytes (a power of two).
    pub align: u64,
    /// The usage class (the runtime's numbering).
    pub usage: UsageValue,
    /// The NeuronCore (subgraph) it is for.
    pub core: u8,
}

/// The device, as C callbacks. Every callback gets `ctx` as is. `arch`, `alloc`, `write`,
/// `adopt` and `release` are required; `address` may be null (addresses then read as 0).
///
/// The notebook is optional device memory the loader may keep its notes in (what it remembers
/// of each payload that landed, 28 bytes each), which would otherwise take the arena: lend
/// `notebook_len` bytes with `note` and `recall`, or 0 and nulls.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_hal {
    /// Passed to every callback.
    pub ctx: *mut c_void,
    /// The device's architecture (`neff_arch`: 2 sunda, 3 cayman, 4 mariana). Asked once per load.
    pub arch: Option<unsafe extern "C" fn(ctx: *mut c_void) -> ArchValue>,
    /// A new region for `req`: its id into `*region`.
    pub alloc:
        Option<unsafe extern "C" fn(ctx: *mut c_void, req: *const neff_alloc_request, region: *mut u32) -> HalResult>,
    /// `len` bytes at `bytes` into `region` at `offset`.
    pub write: Option<
        unsafe extern "C" fn(ctx: *mut c_void, region: u32, offset: u64, bytes: *const u8, len: usize) -> HalResult,
    >,
    /// The staged region's bytes become a region for `req` (the staged id is consumed): its id
    /// into `*region`.
    pub adopt: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            staged: u32,
            req: *const neff_alloc_request,
            region: *mut u32,
        ) -> HalResult,
    >,
    /// Frees `region`.
    pub release: Option<unsafe extern "C" fn(ctx: *mut c_void, region: u32) -> HalResult>,
    /// The device address of `region` into `*address`.
    pub address: Option<unsafe extern "C" fn(ctx: *mut c_void, region: u32, address: *mut u64) -> HalResult>,
    /// Bytes of the notebook (0: none).
    pub notebook_len: u64,
    /// Stores `len` bytes at `bytes` at notebook offset `at`.
    pub note: Option<unsafe extern "C" fn(ctx: *mut c_void, at: u64, bytes: *const u8, len: usize) -> HalResult>,
    /// Reads `len` bytes at notebook offset `at` into `out`.
    pub recall: Option<unsafe extern "C" fn(ctx: *mut c_void, at: u64, out: *mut u8, len: usize) -> HalResult>,
}

type AllocFn = unsafe extern "C" fn(*mut c_void, *const neff_alloc_request, *mut u32) -> HalResult;
type WriteFn = unsafe extern "C" fn(*mut c_void, u32, u64, *const u8, usize) -> HalResult;
type AdoptFn = unsafe extern "C" fn(*mut c_void, u32, *const neff_alloc_request, *mut u32) -> HalResult;
type ReleaseFn = unsafe extern "C" fn(*mut c_void, u32) -> HalResult;
type AddressFn = unsafe extern "C" fn(*mut c_void, u32, *mut u64) -> HalResult;
type NoteFn = unsafe extern "C" fn(*mut c_void, u64, *const u8, usize) -> HalResult;
type RecallFn = unsafe extern "C" fn(*mut c_void, u64, *mut u8, usize) -> HalResult;

/// A checked `neff_hal`: the required callbacks are present and the architecture is known.
pub(crate) struct CHal {
    ctx: *mut c_void,
    arch: Arch,
    alloc: AllocFn,
    write: WriteFn,
    adopt: AdoptFn,
    release: ReleaseFn,
    address: Option<AddressFn>,
    /// The notebook: its length and callbacks, when all are given.
    notebook: Option<(u64, NoteFn, RecallFn)>,
}

/// Why a `neff_hal` cannot be used.
pub(crate) enum BadHal {
    /// A required callback is null.
    MissingCallback,
    /// `arch` returned no architecture the core knows.
    UnknownArch,
}

impl CHal {
    /// Checks `hal` and asks it its architecture.
    pub(crate) fn new(hal: &neff_hal) -> Result<Self, BadHal> {
        let (Some(arch), Some(alloc), Some(write), Some(adopt), Some(release)) =
            (hal.arch, hal.alloc, hal.write, hal.adopt, hal.release)
        else {
            return Err(BadHal::MissingCallback);
        };
        // SAFETY: a non-null callback of the caller's vtable, called with the caller's own
        // context, as `neff_hal` documents; it takes no pointer from us.
        let value = unsafe { arch(hal.ctx) };
        let arch = Arch::from_value(value).ok_or(BadHal::UnknownArch)?;
        let notebook = match (hal.notebook_len, hal.note, hal.recall) {
            (0, _, _) => None,
            (len, Some(note), Some(recall)) => Some((len, note, recall)),
            _ => return Err(BadHal::MissingCallback),
        };
        Ok(Self { ctx: hal.ctx, arch, alloc, write, adopt, release, address: hal.address, notebook })
    }
}

/// The core's request as C sees it.
fn c_request(req: &AllocRequest) -> neff_alloc_request {
    neff_alloc_request { size: req.size, align: req.align, usage: req.usage as u32, core: req.core }
}

/// A callback's result as the core's error, with what the request tells of it.
fn hal_result(
    code: u32,
    region: Option<u32>,
    req: Option<&AllocRequest>,
    write: Option<(u64, usize)>,
) -> Result<(), HalError> {
    let region = RegionId(region.unwrap_or(0));
    let (size, align) = req.map_or((0, 0), |r| (r.size, r.align));
    let (offset, len) = write.map_or((0, 0), |(o, l)| (o, l as u64));
    Err(match code {
        0 => return Ok(()),
        // The C device reports no free figures: 0 and 0 here, which `neff_error_message`
        // words as unknown instead of printing them.
        1 => HalError::OutOfMemory { requested: size, align, free: 0, largest_free: 0 },
        2 => HalError::RegionTableFull { limit: "the C device's region table", capacity: 0 },
        3 => HalError::IdsExhausted,
        4 => HalError::ZeroSize,
        5 => HalError::BadAlignment { align },
        6 => HalError::UnknownRegion { region },
        7 => HalError::OutOfBounds { region, offset, len, size: 0 },
        8 => HalError::OutOfOrderWrite { region, expected: 0, offset },
        9 => HalError::AdoptTooSmall { region, staged: 0, requested: size },
        // A code this version does not know: the device failed, in the way that names the
        // region involved.
        _ => HalError::UnknownRegion { region },
    })
}

impl Hal for CHal {
    type Error = HalError;

    fn arch(&self) -> Arch {
        self.arch
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        let c = c_request(req);
        let mut region = 0u32;
        // SAFETY: `&c` and `&mut region` are live for the call and point to the types the
        // callback's signature names; the callback is the caller's, checked non-null.
        let code = unsafe { (self.alloc)(self.ctx, &c, &mut region) };
        hal_result(code, None, Some(req), None).map(|()| RegionId(region))
    }

    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), HalError> {
        // SAFETY: `bytes` is a live slice: the callback may read `bytes.len()` bytes at its
        // pointer, and the contract says it reads no more and keeps no pointer.
        let code = unsafe { (self.write)(self.ctx, region.0, offset, bytes.as_ptr(), bytes.len()) };
        hal_result(code, Some(region.0), None, Some((offset, bytes.len())))
    }

    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, HalError> {
        let c = c_request(req);
        let mut region = 0u32;
        // SAFETY: as in `alloc`: both pointers are to live locals of the named types.
        let code = unsafe { (self.adopt)(self.ctx, staged.0, &c, &mut region) };
        hal_result(code, Some(staged.0), Some(req), None).map(|()| RegionId(region))
    }

    fn release(&mut self, region: RegionId) -> Result<(), HalError> {
        // SAFETY: the callback takes no pointer; it is the caller's, checked non-null.
        let code = unsafe { (self.release)(self.ctx, region.0) };
        hal_result(code, Some(region.0), None, None)
    }

    fn address(&self, region: RegionId) -> Result<u64, HalError> {
        let Some(address) = self.address else { return Ok(0) };
        let mut at = 0u64;
        // SAFETY: `&mut at` is a live `u64` for the call; the callback is the caller's.
        let code = unsafe { address(self.ctx, region.0, &mut at) };
        hal_result(code, Some(region.0), None, None).map(|()| at)
    }

    fn notebook_len(&self) -> u64 {
        self.notebook.map_or(0, |(len, _, _)| len)
    }

    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), HalError> {
        let Some((_, note, _)) = self.notebook else { return Ok(()) };
        // SAFETY: `bytes` is a live slice of `bytes.len()` readable bytes for the call; the
        // callback is the caller's, checked non-null.
        let code = unsafe { note(self.ctx, at, bytes.as_ptr(), bytes.len()) };
        hal_result(code, None, None, Some((at, bytes.len())))
    }

    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), HalError> {
        let Some((_, _, recall)) = self.notebook else {
            out.fill(0);
            return Ok(());
        };
        // SAFETY: `out` is a live, exclusive slice of `out.len()` writable bytes for the call.
        let code = unsafe { recall(self.ctx, at, out.as_mut_ptr(), out.len()) };
        hal_result(code, None, None, Some((at, out.len())))
    }
}
