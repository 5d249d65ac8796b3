//! The accelerator behind a trait.
//!
//! The loader never touches device memory itself: it asks a [`Hal`] for regions of device
//! memory, streams bytes into them in chunks, and turns *staged* regions into their final
//! role. A region is described by an [`AllocRequest`]: a size in bytes, a power-of-two
//! alignment, a usage class (`docs/format.md` §11.8, for accounting) and the index of
//! the core (the subgraph's physical NeuronCore) that owns it.
//!
//! # Why staging and adoption
//!
//! In a real NEFF the tar order is alphabetical-ish: `sg00/PE.bin` arrives before
//! `sg00/def.json` says what it is. The loader does not hold payloads in host RAM; it
//! streams each payload whose role is not yet known into a staging region
//! ([`UsageClass::Generic`]) as it passes, then calls [`Hal::adopt`] once the manifest names
//! its role, and [`Hal::release`]s the staged regions that nothing references.
//!
//! # Contract
//!
//! * [`RegionId`]s are handles issued by one `Hal`; an id is never reused by the same `Hal`,
//!   so a stale id is always an error ([`HalError::UnknownRegion`]), never another region.
//! * [`Hal::write`] bounds-checks every chunk: bytes past a region's end are refused
//!   ([`HalError::OutOfBounds`]), nothing is written in that case.
//! * [`Hal::adopt`] is all or nothing. On success the staged id is consumed (it behaves as
//!   released) and the returned id is the only handle to the bytes; on error the staged
//!   region is untouched and still live, so the caller may release it.
//! * A failed call leaves the device as it was before the call.
//!
//! Sizes and alignments of requests come from the NEFF: this module does no unchecked
//! arithmetic on them (`clippy::arithmetic_side_effects` is denied).
#![deny(clippy::arithmetic_side_effects)]

pub use crate::error::{HalError, RegionId};
use crate::vocab::{Arch, UsageClass};

/// What a region is for and how it must be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AllocRequest {
    /// Size in bytes; must be non-zero.
    pub size: u64,
    /// Alignment of the device address in bytes; must be a power of two (1 means none).
    pub align: u64,
    /// What the region holds (§11.8); staged payloads use [`UsageClass::Generic`].
    pub usage: UsageClass,
    /// The core (subgraph / physical NeuronCore index) that owns the region.
    pub core: u8,
}

impl AllocRequest {
    /// A staging request: `size` bytes, no alignment, [`UsageClass::Generic`], on `core`.
    pub const fn staging(size: u64, core: u8) -> Self {
        Self { size, align: 1, usage: UsageClass::Generic, core }
    }

    /// Checks the request's own fields (non-zero size, power-of-two alignment).
    pub fn validate(&self) -> Result<(), HalError> {
        if self.size == 0 {
            return Err(HalError::ZeroSize);
        }
        if !self.align.is_power_of_two() {
            return Err(HalError::BadAlignment { align: self.align });
        }
        Ok(())
    }
}

/// The number of usage classes of §11.8 (`GENERIC` 0 ..= `DMA_RING_COLLECTIVES` 21).
pub const USAGE_CLASS_COUNT: usize = 22;

/// Every usage class, in numeric order: `USAGE_CLASSES[usage_index(c)] == c`.
pub const USAGE_CLASSES: [UsageClass; USAGE_CLASS_COUNT] = [
    UsageClass::Generic,
    UsageClass::InstrPe,
    UsageClass::InstrAct,
    UsageClass::InstrPool,
    UsageClass::Io,
    UsageClass::DramSpill,
    UsageClass::Weight,
    UsageClass::Notification,
    UsageClass::ActTable,
    UsageClass::InstrDve,
    UsageClass::InstrSp,
    UsageClass::Scratchpad,
    UsageClass::Tensor,
    UsageClass::UcodeLib,
    UsageClass::PoolStdio,
    UsageClass::Cc,
    UsageClass::ScratchpadNotShared,
    UsageClass::XtCc,
    UsageClass::DmaRing,
    UsageClass::DmaRingSpill,
    UsageClass::DmaRingIo,
    UsageClass::DmaRingCollectives,
];

/// The index of `usage` in per-class arrays (its §11.8 number).
///
/// Spelled as a match, not an `as` cast, so that a change in the generated enum is a
/// compile error here rather than a silent shift of the accounting arrays.
pub const fn usage_index(usage: UsageClass) -> usize {
    match usage {
        UsageClass::Generic => 0,
        UsageClass::InstrPe => 1,
        UsageClass::InstrAct => 2,
        UsageClass::InstrPool => 3,
        UsageClass::Io => 4,
        UsageClass::DramSpill => 5,
        UsageClass::Weight => 6,
        UsageClass::Notification => 7,
        UsageClass::ActTable => 8,
        UsageClass::InstrDve => 9,
        UsageClass::InstrSp => 10,
        UsageClass::Scratchpad => 11,
        UsageClass::Tensor => 12,
        UsageClass::UcodeLib => 13,
        UsageClass::PoolStdio => 14,
        UsageClass::Cc => 15,
        UsageClass::ScratchpadNotShared => 16,
        UsageClass::XtCc => 17,
        UsageClass::DmaRing => 18,
        UsageClass::DmaRingSpill => 19,
        UsageClass::DmaRingIo => 20,
        UsageClass::DmaRingCollectives => 21,
    }
}

/// What a device's own error tells the loader: the kind of refusal it stands for, which the
/// loader reports (with its runtime status), as embedded-hal's `Error::kind` does. A backend
/// keeps whatever detail it likes in its own type; [`HalError`] is its own kind.
pub trait DeviceError: core::fmt::Debug {
    /// The kind of refusal.
    fn kind(&self) -> HalError;
}

impl DeviceError for HalError {
    fn kind(&self) -> HalError {
        *self
    }
}

/// The accelerator, as the loader sees it.
///
/// See the [module documentation](self) for the contract shared by every method.
pub trait Hal {
    /// The device's own error; the loader reports its [`DeviceError::kind`].
    type Error: DeviceError;

    /// The device architecture, compared with the `kelf` target.
    fn arch(&self) -> Arch;

    /// Allocates a region as described by `req`.
    ///
    /// Errors: [`HalError::ZeroSize`], [`HalError::BadAlignment`], [`HalError::OutOfMemory`],
    /// or a backend limit such as [`HalError::RegionTableFull`].
    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, Self::Error>;

    /// Writes `bytes` at `offset` bytes into `region`.
    ///
    /// Loaders write each region in order, chunk after chunk; a backend may require it
    /// ([`HalError::OutOfOrderWrite`]). A chunk that would end past the region is refused
    /// whole ([`HalError::OutOfBounds`]).
    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), Self::Error>;

    /// Gives the whole `staged` region the role described by `req`, and returns its new id.
    ///
    /// The backend re-labels the region in place when it can (same size, and the staged
    /// address satisfies `req.align`), and otherwise allocates a fresh region and copies the
    /// staged bytes device-side to its start. `req.size` must be at least the staged size
    /// ([`HalError::AdoptTooSmall`]); bytes past the staged size are zero.
    ///
    /// On success `staged` is consumed: it behaves as released. On error it is untouched.
    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, Self::Error>;

    /// Frees `region`. Its id is never valid again.
    fn release(&mut self, region: RegionId) -> Result<(), Self::Error>;

    /// The device address of `region` (for the load report and descriptors).
    fn address(&self, region: RegionId) -> Result<u64, Self::Error>;

    /// The architecture the load's target gate compares with: [`Hal::arch`], or `None` for a
    /// device that stands for no hardware ([`NullDevice`] without an arch).
    ///
    /// The loader asks when it binds, once the archive is read: the target gate and the
    /// target's rules apply there, and nothing before needs the arch. So a device may learn
    /// its arch while the NEFF streams past (the host's `neff load` without `--arch` takes the
    /// KELF target as it is read).
    fn device_arch(&self) -> Option<Arch> {
        Some(self.arch())
    }

    /// True for a device that keeps nothing ([`NullDevice`]): the loader reports payloads as
    /// checked rather than placed.
    fn keeps_nothing(&self) -> bool {
        false
    }

    /// Bytes of device memory the loader may keep its own notes in: its *notebook*. `0` (the
    /// default) for none.
    ///
    /// What binding must remember of each payload that landed (region, length, digest, core,
    /// class: a [`LANDING_NOTE`]-byte note) then lives on the device, which has gigabytes,
    /// instead of in the arena the controller lends, which has kilobytes: the controller keeps
    /// a 4-byte slot number per payload. Notes go to `slot * LANDING_NOTE`, and the loader
    /// reads them back when it binds and reports. Once the notebook is full, further notes go
    /// to the arena, so a small notebook is never an error.
    ///
    /// [`Hal::note`] and [`Hal::recall`] are called only inside `0..notebook_len()`.
    fn notebook_len(&self) -> u64 {
        0
    }

    /// Writes `bytes` at byte `at` of the notebook ([`Hal::notebook_len`]). Not called when
    /// the notebook is empty; the default does nothing.
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), Self::Error> {
        let _ = (at, bytes);
        Ok(())
    }

    /// Reads `out.len()` bytes at byte `at` of the notebook back into `out`: what
    /// [`Hal::note`] wrote there. Not called when the notebook is empty; the default reads
    /// zeros.
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        let _ = at;
        out.fill(0);
        Ok(())
    }
}

/// Bytes of one payload's note in a device's notebook ([`Hal::notebook_len`]).
pub const LANDING_NOTE: usize = 28;

/// A device that accepts every request and stores nothing: a check runs every step of a load
/// (payloads read, `.npy` headers parsed, digests computed) with this in place of hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NullDevice {
    arch: Option<Arch>,
    next: u32,
}

impl NullDevice {
    /// A null device standing for `arch` (`None`: no device, so no target gate applies).
    pub const fn new(arch: Option<Arch>) -> Self {
        Self { arch, next: 0 }
    }
}

impl Hal for NullDevice {
    type Error = HalError;

    fn arch(&self) -> Arch {
        // Only reached through `device_arch`, which this device overrides; any value serves.
        self.arch.unwrap_or(Arch::Cayman)
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        req.validate()?;
        // Never reused, as the contract asks: like `SimDevice`'s, the ids end at u32::MAX - 1.
        self.next = self.next.checked_add(1).filter(|&id| id != u32::MAX).ok_or(HalError::IdsExhausted)?;
        Ok(RegionId(self.next))
    }

    fn write(&mut self, _region: RegionId, _offset: u64, _bytes: &[u8]) -> Result<(), HalError> {
        Ok(())
    }

    fn adopt(&mut self, staged: RegionId, _req: &AllocRequest) -> Result<RegionId, HalError> {
        Ok(staged)
    }

    fn release(&mut self, _region: RegionId) -> Result<(), HalError> {
        Ok(())
    }

    fn address(&self, _region: RegionId) -> Result<u64, HalError> {
        Ok(0)
    }

    fn device_arch(&self) -> Option<Arch> {
        self.arch
    }

    fn keeps_nothing(&self) -> bool {
        true
    }
}

impl<H: Hal + ?Sized> Hal for &mut H {
    type Error = H::Error;

    fn arch(&self) -> Arch {
        (**self).arch()
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, H::Error> {
        (**self).alloc(req)
    }

    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), H::Error> {
        (**self).write(region, offset, bytes)
    }

    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, H::Error> {
        (**self).adopt(staged, req)
    }

    fn release(&mut self, region: RegionId) -> Result<(), H::Error> {
        (**self).release(region)
    }

    fn address(&self, region: RegionId) -> Result<u64, H::Error> {
        (**self).address(region)
    }

    fn device_arch(&self) -> Option<Arch> {
        (**self).device_arch()
    }

    fn keeps_nothing(&self) -> bool {
        (**self).keeps_nothing()
    }

    fn notebook_len(&self) -> u64 {
        (**self).notebook_len()
    }

    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), H::Error> {
        (**self).note(at, bytes)
    }

    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), H::Error> {
        (**self).recall(at, out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn usage_index_matches_the_table_and_the_spec_numbers() {
        for (i, class) in USAGE_CLASSES.iter().enumerate() {
            assert_eq!(usage_index(*class), i);
            // The spec numbers are the enum's discriminants.
            assert_eq!(*class as u8 as usize, i, "{}", class.as_str());
        }
    }

    #[test]
    fn the_null_device_never_reuses_an_id() {
        let req = AllocRequest::staging(1, 0);
        let mut dev = NullDevice::new(None);
        assert_eq!(dev.alloc(&req), Ok(RegionId(1)));
        let mut dev = NullDevice { next: u32::MAX - 2, ..dev };
        assert_eq!(dev.alloc(&req), Ok(RegionId(u32::MAX - 1)));
        assert_eq!(dev.alloc(&req), Err(HalError::IdsExhausted));
        assert_eq!(dev.alloc(&req), Err(HalError::IdsExhausted));
    }

    #[test]
    fn validate_refuses_zero_size_and_odd_alignment() {
        assert_eq!(AllocRequest::staging(0, 0).validate(), Err(HalError::ZeroSize));
        let req = AllocRequest { size: 8, align: 24, usage: UsageClass::Weight, core: 0 };
        assert_eq!(req.validate(), Err(HalError::BadAlignment { align: 24 }));
        let req = AllocRequest { align: 0, ..req };
        assert_eq!(req.validate(), Err(HalError::BadAlignment { align: 0 }));
        assert_eq!(AllocRequest { align: 64, ..req }.validate(), Ok(()));
    }

    #[test]
    fn statuses_follow_the_runtime() {
        use crate::Status;
        let oom = HalError::OutOfMemory { requested: 1, align: 1, free: 0, largest_free: 0 };
        assert_eq!(oom.status(), Status::Resource);
        assert_eq!(HalError::BadAlignment { align: 3 }.status(), Status::Invalid);
        assert_eq!(HalError::UnknownRegion { region: RegionId(1) }.status(), Status::Failure);
    }

    #[test]
    fn display_names_sizes() {
        let mut s = heapless::String::<160>::new();
        let oom = HalError::OutOfMemory { requested: 4096, align: 64, free: 100, largest_free: 60 };
        core::fmt::write(&mut s, format_args!("{oom}")).ok();
        assert!(s.contains("4096") && s.contains("100 bytes free"), "{s}");
        s.clear();
        core::fmt::write(&mut s, format_args!("{}", HalError::BadAlignment { align: 3 })).ok();
        assert_eq!(s.as_str(), "alignment provided not power of 2. alignment=3");
    }
}
