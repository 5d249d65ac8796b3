//! The simulated device of a pass: where the payloads go ([`Target`]), and its arch, pinned or
//! learnt from the NEFF's first KELF as it streams ([`LearntArch`], [`Learning`]).

use std::cell::Cell;

use neff::hal::{AllocRequest, Hal, HalError, RegionId};
use neff::loader::{
    DebugLine, LoadReport, Loader, Manifest, MemberReport, Observer, PayloadReport, SubgraphReport, SubgraphTables,
};
use neff::manifest::{Arch, Entry, IoTensor, KbinDmaHeader, SbCarveout};
use neff::sim::SimDevice;

use super::collected::Collected;
use super::whole::whole;
use crate::error::CliError;
use crate::members::Tee;
use crate::source::Again;

/// Regions the simulated device can track (every payload, and staging regions, take one).
pub const DEVICE_REGIONS: usize = 8192;

/// The simulated device on the host.
pub type HostDevice<'m> = SimDevice<'m, DEVICE_REGIONS>;

/// The arch of a simulated device whose NEFF's target is `*` (or which has no KELF): a Trn2.
pub const DEFAULT_ARCH: Arch = Arch::Cayman;

/// Where the payloads go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Nowhere: everything a load checks, no device (`info`, `check`). With an arch, its
    /// target gate and rules apply.
    Check(Option<Arch>),
    /// A simulated device storing every byte in `bytes` of host memory.
    Memory {
        /// The device's arch.
        arch: DeviceArch,
        /// Its memory size.
        bytes: u64,
    },
    /// A simulated device keeping allocation records and digests only.
    DigestOnly {
        /// The device's arch.
        arch: DeviceArch,
        /// Its address-space size.
        capacity: u64,
        /// Bytes of device memory it lends the loader as its notebook (0: none): what a
        /// controller's device would lend (`neff load --budget`).
        notebook: u64,
    },
}

impl Default for Target {
    /// A check with no arch.
    fn default() -> Self {
        Target::Check(None)
    }
}

/// Which arch a simulated device has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceArch {
    /// This one, whatever the NEFF (`--arch`): the KELF target gate applies.
    Pinned(Arch),
    /// The NEFF's own: the target of its chain's first KELF, learnt as the KELF is read
    /// ([`DEFAULT_ARCH`] for a target `*`).
    NeffTarget,
}

/// Where a simulated device's arch came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchSource {
    /// `--arch`.
    Pinned,
    /// The NEFF's KELF target.
    NeffTarget,
    /// [`DEFAULT_ARCH`]: the NEFF's target is `*` (any arch), or it has none.
    Default,
}

impl ArchSource {
    /// The name in `load --json` (`device.arch_source`).
    pub fn as_str(self) -> &'static str {
        match self {
            ArchSource::Pinned => "--arch",
            ArchSource::NeffTarget => "neff-target",
            ArchSource::Default => "default",
        }
    }
}

/// The simulated device after a load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSummary {
    /// `memory` or `digest-only`.
    pub mode: &'static str,
    /// The device's arch.
    pub arch: Arch,
    /// Where it came from.
    pub arch_source: ArchSource,
    /// Its size in bytes.
    pub capacity: u64,
    /// Bytes live at the end.
    pub live_bytes: u64,
    /// The most bytes live at once (staging included).
    pub peak_bytes: u64,
    /// Regions live at the end.
    pub live_regions: usize,
}

impl DeviceArch {
    /// The arch before the NEFF says anything: the pinned one, or [`DEFAULT_ARCH`].
    pub fn initial(self) -> Arch {
        match self {
            DeviceArch::Pinned(arch) => arch,
            DeviceArch::NeffTarget => DEFAULT_ARCH,
        }
    }
}

/// The observer of a load onto a device: [`Collected`], which also notes the NEFF's target
/// in `target` each time `neff.json` or a KELF is read (the device answers with it).
struct Learning<'a, 'b, D: Observer + ?Sized> {
    observer: &'a mut Tee<'b, Collected, D>,
    target: &'a Cell<Option<Arch>>,
}

impl<D: Observer + ?Sized> Observer for Learning<'_, '_, D> {
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.observer.manifest(member, manifest);
        if matches!(manifest, Manifest::Neff(_) | Manifest::Kelf(_)) {
            self.target.set(self.observer.first.neff_target());
        }
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.observer.entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        self.observer.io_tensor(tensor);
    }
    fn payload(&mut self, payload: &PayloadReport<'_>) {
        self.observer.payload(payload);
    }
    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        self.observer.subgraph(subgraph);
    }
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        self.observer.member(member)
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        self.observer.member_bytes(bytes);
    }
    fn member_end(&mut self) {
        self.observer.member_end();
    }
    fn debug(&mut self, line: &DebugLine<'_>) {
        self.observer.debug(line);
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        self.observer.dma_queue(member, name, queue);
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        self.observer.carveout(member, index, carveout);
    }
    fn subgraph_tables(&mut self, member: &str, tables: &SubgraphTables) {
        self.observer.subgraph_tables(member, tables);
    }
}

/// The simulated device with its arch pinned, or learnt from the NEFF as it streams
/// ([`DeviceArch`]): the loader asks for the arch when it binds, after the KELF is read.
struct LearntArch<'d, 'm> {
    dev: &'d mut HostDevice<'m>,
    arch: DeviceArch,
    learnt: &'d Cell<Option<Arch>>,
}

impl LearntArch<'_, '_> {
    /// The arch now, and where it comes from.
    fn current(&self) -> (Arch, ArchSource) {
        match (self.arch, self.learnt.get()) {
            (DeviceArch::Pinned(arch), _) => (arch, ArchSource::Pinned),
            (DeviceArch::NeffTarget, Some(arch)) => (arch, ArchSource::NeffTarget),
            (DeviceArch::NeffTarget, None) => (DEFAULT_ARCH, ArchSource::Default),
        }
    }

    fn summary(&self, mode: &'static str) -> DeviceSummary {
        let (arch, arch_source) = self.current();
        DeviceSummary {
            mode,
            arch,
            arch_source,
            capacity: self.dev.capacity(),
            live_bytes: self.dev.live_bytes(),
            peak_bytes: self.dev.peak_bytes(),
            live_regions: self.dev.live_regions().count(),
        }
    }
}

impl Hal for LearntArch<'_, '_> {
    type Error = neff::hal::HalError;

    fn arch(&self) -> Arch {
        self.current().0
    }
    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        self.dev.alloc(req)
    }
    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), HalError> {
        self.dev.write(region, offset, bytes)
    }
    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, HalError> {
        self.dev.adopt(staged, req)
    }
    fn release(&mut self, region: RegionId) -> Result<(), HalError> {
        self.dev.release(region)
    }
    fn address(&self, region: RegionId) -> Result<u64, HalError> {
        self.dev.address(region)
    }
    fn keeps_nothing(&self) -> bool {
        self.dev.keeps_nothing()
    }
    fn notebook_len(&self) -> u64 {
        self.dev.notebook_len()
    }
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), HalError> {
        self.dev.note(at, bytes)
    }
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), HalError> {
        self.dev.recall(at, out)
    }
}

/// What the simulated device of a load keeps: every byte, or digests (and the loader's notebook).
pub(super) enum DeviceBacking<'m> {
    /// Every byte, in this host memory.
    Memory(&'m mut [u8]),
    /// A virtual address space of `capacity` bytes, with the loader's notebook lent.
    DigestOnly {
        /// The device's memory size.
        capacity: u64,
        /// The notebook the loader keeps pending records in.
        notebook: &'m mut [u8],
    },
}

/// Loads `archive` onto a simulated device backed as `backing` says, its arch as `arch` says;
/// the device's figures after.
///
/// Out of line: the device ([`HostDevice`], 590 KB of region records) is built in this frame,
/// and a frame's stack pages are all touched on entry (the stack probe), so a pass without a
/// device (`check`) must not have it in its own frame (436 pages, each a page fault).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) fn load_onto(
    loader: &mut Loader<'_>,
    archive: &mut neff::archive::Archive<crate::inflate::HostTar>,
    backing: DeviceBacking<'_>,
    arch: DeviceArch,
    summary: &mut LoadReport,
    observer: &mut Tee<'_, Collected, impl Observer + ?Sized>,
    sink: &mut impl neff::error::WarningSink,
    again: Option<&Again>,
) -> Result<DeviceSummary, CliError> {
    let (mut sim, mode): (Box<HostDevice<'_>>, _) = match backing {
        DeviceBacking::Memory(memory) => (Box::new(SimDevice::new(memory, arch.initial())), "memory"),
        DeviceBacking::DigestOnly { capacity, notebook } => {
            (Box::new(SimDevice::digest_only(capacity, arch.initial()).with_notebook(notebook)), "digest-only")
        }
    };
    let learnt = Cell::new(None);
    let mut dev = LearntArch { dev: &mut sim, arch, learnt: &learnt };
    let mut observer = Learning { observer, target: &learnt };
    loader.load(archive, &mut dev, summary, &mut observer, sink).map_err(|e| whole(loader, e, again))?;
    Ok(dev.summary(mode))
}
