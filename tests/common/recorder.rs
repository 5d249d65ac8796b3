//! A test observer that keeps every placement, subgraph and I/O tensor a load reports, owned,
//! beside the core's summary; and a one-call load with a generous arena.
#![allow(clippy::result_large_err, clippy::type_complexity)]

use neff::archive::Archive;
use neff::hal::{Hal, RegionId, USAGE_CLASS_COUNT};
use neff::loader::{
    DebugLine, LoadOptions, LoadReport, Loader, Observer, PayloadReport, PayloadState, Storage, SubgraphReport,
};
use neff::manifest::{Arch, IoKind, IoTensor, UsageClass};
use neff::{Error, Warning};

/// Bytes of arena the tests lend (the real NEFFs need a few KiB).
pub const TEST_ARENA: usize = 1 << 20;

/// Bytes of replay store the tests lend (the JSON members of the real NEFFs fit).
pub const TEST_REPLAY: usize = 1 << 20;

/// One payload, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub member: String,
    pub seq: u32,
    pub core: Option<u8>,
    pub usage: UsageClass,
    pub len: u64,
    pub member_len: u64,
    pub digest: u64,
    pub region: Option<RegionId>,
    pub address: Option<u64>,
    pub state: PayloadState,
}

/// One subgraph's accounting, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subgraph {
    pub name: String,
    pub core: u8,
    pub allocations: u32,
    pub bytes_placed: u64,
    pub bytes_by_usage: [u64; USAGE_CLASS_COUNT],
}

/// One I/O tensor, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u32>,
    pub size: u64,
}

/// The I/O tensors.
#[derive(Debug, Clone, Default)]
pub struct Io {
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
}

/// What a load reported: the summary and everything streamed to the observer.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub summary: LoadReport,
    pub payloads: Vec<Payload>,
    pub subgraphs: Vec<Subgraph>,
    pub io: Io,
    /// The runtime's debug lines, as the observer got them.
    pub debug: Vec<String>,
}

impl std::ops::Deref for Report {
    type Target = LoadReport;
    fn deref(&self) -> &LoadReport {
        &self.summary
    }
}

impl Report {
    /// Bytes placed, summed over the subgraphs.
    pub fn bytes_placed(&self) -> u64 {
        self.subgraphs.iter().map(|s| s.bytes_placed).sum()
    }
}

/// The observer half of [`Report`].
#[derive(Debug, Default)]
pub struct Recorder {
    pub payloads: Vec<Payload>,
    pub subgraphs: Vec<Subgraph>,
    pub io: Io,
    pub debug: Vec<String>,
}

impl Observer for Recorder {
    fn debug(&mut self, line: &DebugLine<'_>) {
        self.debug.push(line.to_string());
    }

    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        let owned =
            Tensor { name: t.name.to_owned(), dtype: t.dtype.to_owned(), shape: t.shape.to_vec(), size: t.size };
        match t.kind {
            IoKind::Input => self.io.inputs.push(owned),
            IoKind::Output => self.io.outputs.push(owned),
        }
    }

    fn payload(&mut self, p: &PayloadReport<'_>) {
        self.payloads.push(Payload {
            member: p.member.to_owned(),
            seq: p.seq,
            core: p.core,
            usage: p.usage,
            len: p.len,
            member_len: p.member_len,
            digest: p.digest,
            region: p.region,
            address: p.address,
            state: p.state,
        });
    }

    fn subgraph(&mut self, s: &SubgraphReport<'_>) {
        self.subgraphs.push(Subgraph {
            name: s.name.to_owned(),
            core: s.core,
            allocations: s.allocations,
            bytes_placed: s.bytes_placed,
            bytes_by_usage: s.bytes_by_usage,
        });
    }
}

/// Loads `archive` onto `hal` (or checks it, with `check: Some(arch)` or `Some(None)`) with
/// an arena of `arena` bytes, recording everything.
pub fn run<R: embedded_io::BufRead, H: Hal>(
    archive: &mut Archive<R>,
    hal: Option<&mut H>,
    check: Option<Option<Arch>>,
    options: LoadOptions,
    arena: usize,
    sink: &mut impl FnMut(&Warning),
) -> (Result<(), Error>, Report) {
    let mut buf = vec![0u8; arena];
    let mut replay = vec![0u8; TEST_REPLAY];
    let mut deferred = vec![None; 64];
    let storage = Storage { arena: &mut buf, replay: &mut replay, deferred: &mut deferred, whole_names: &mut [] };
    let mut loader = Box::new(Loader::with_storage(storage, options));
    let mut summary = LoadReport::new();
    let mut rec = Recorder::default();
    let result = match (hal, check) {
        (Some(hal), _) => loader.load(archive, hal, &mut summary, &mut rec, sink),
        (None, arch) => loader.check(archive, arch.flatten(), &mut summary, &mut rec, sink),
    };
    (result, Report { summary, payloads: rec.payloads, subgraphs: rec.subgraphs, io: rec.io, debug: rec.debug })
}
