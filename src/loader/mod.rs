//! The single-pass loader: routes members, streams payloads to the device, binds the chain.
//!
//! One pass over the archive, in tar order:
//!
//! - manifests go to the generated parsers (`neff.json`, `kelf-*.json`, `sgNN/def.json`, and
//!   every other JSON of a subgraph directory, read as an engine or activation-set JSON);
//!   what the binder needs from them is kept in small fixed tables;
//! - payloads stream to the device as they pass. When the manifests that give a payload its
//!   role have already been read, it goes straight into its final region; otherwise it is
//!   staged in device memory and adopted (or copied device-side) by the binder;
//! - debug and metadata members are skipped without buffering.
//!
//! At the end the binder checks the chain: the KELF target against the device, the graph
//! count against `lnc_size`, every member a manifest names present, instruction sizes,
//! `file` variable sizes, the cayman carveout rules; it places what was staged and releases
//! what nothing references. Host memory does not depend on the NEFF's size or member order:
//! every table has a capacity fixed by the types, and exceeding one is an error naming it.

pub mod chain;
pub mod payload;
pub mod profile;
pub mod report;
pub mod route;

use embedded_io::BufRead;
use heapless::{String, Vec};

pub use chain::{ChainError, ChainWarning};
pub use profile::{Compact, DefDoc, EngineDoc, Host, KelfDoc, NeffDoc, Profile};
pub use report::{LoadReport, PayloadReport, PayloadState, SubgraphReport};

use crate::archive::Archive;
use crate::error::{CapacityError, ErrorKind, Stage, Warning, WarningKind};
use crate::hal::{AllocRequest, Hal, HalError, RegionId};
use crate::json::Tokenizer;
use crate::manifest::def::TargetCheck;
use crate::manifest::{
    Arch, DefJson, Document, EngineJson, EngineType, Graph, Kelf, NeffJson, Node, NodeAttrs, UcodeLib, UsageClass, Var,
};
use crate::{Error, WarningSink};
use payload::{hal_error, stream_to_device};
use route::{route, Route};

/// Default capacity of a member path kept by the loader (`PATH`).
pub const DEFAULT_PATH: usize = 48;
/// Capacity of a subgraph directory name (`sg00`).
pub const SUBGRAPH_DIR: usize = 16;
/// Default capacity of a member name relative to its subgraph directory (`NAME`).
pub const DEFAULT_NAME: usize = 40;
/// Instruction streams and staging regions are aligned to one 64-byte instruction slot.
pub const INSTR_ALIGN: u64 = 64;

/// The engines in the runtime's order.
const ENGINES: [EngineType; 5] = crate::manifest::def::ENGINES;

/// How a load behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoadOptions {
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1`: a NEFF for an older architecture may load, and a
    /// cayman `def.json` may lack its state-buffer carveout.
    pub allow_legacy: bool,
}

/// A payload's role, once the manifests have given it one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Role {
    usage: UsageClass,
    align: u64,
    core: u8,
    /// A `file` variable's declared size, checked against what lands.
    expect_len: Option<u64>,
    /// An instruction stream (size checks apply).
    instr: bool,
}

/// A `file` variable of a subgraph.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileVarRec<const NAME: usize> {
    file: String<NAME>,
    size: Option<u64>,
    align: u64,
}

/// What the binder keeps of one subgraph directory's `def.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Plan<const FILE_VARS: usize, const NAME: usize> {
    dir: String<SUBGRAPH_DIR>,
    engine_json: [Option<String<NAME>>; 5],
    engine_instr: [Option<String<NAME>>; 5],
    file_vars: Vec<FileVarRec<NAME>, FILE_VARS>,
    ucode_libs: Vec<String<NAME>, 2>,
}

/// What a subgraph JSON member names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaimKind {
    /// An activation set (`S` names member `S.json`).
    ActSet,
    /// An activation table (`bkt_bin`, `ctl_bin` of a set JSON).
    ActTable,
    /// A DVE table.
    DveTable,
}

/// A name that a subgraph JSON gives.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim<const NAME: usize> {
    /// Index of the claiming JSON in the JSON table.
    by: u8,
    kind: ClaimKind,
    name: String<NAME>,
}

/// A subgraph JSON member that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JsonRec<const NAME: usize, const PATH: usize> {
    member: String<PATH>,
    instr: Option<String<NAME>>,
}

/// The parse target of the manifest being read: one at a time, so they share memory.
enum Scratch<P: Profile> {
    Empty,
    Def(P::Def),
    Engine(P::Engine),
    Neff(P::Neff),
    Kelf(P::Kelf),
}

/// Hooks for callers that want the parsed manifests (the host `info` command does); the
/// loader keeps only what binding needs. Every method has an empty default.
pub trait Observer<P: Profile> {
    /// `neff.json` was read.
    fn neff_json(&mut self, _member: &str, _doc: &P::Neff) {}
    /// A KELF descriptor was read.
    fn kelf(&mut self, _member: &str, _doc: &P::Kelf) {}
    /// A subgraph's `def.json` was read.
    fn def_json(&mut self, _member: &str, _doc: &P::Def) {}
    /// An engine or activation-set JSON was read.
    fn subgraph_json(&mut self, _member: &str, _doc: &P::Engine) {}
}

/// An observer that looks at nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl<P: Profile> Observer<P> for NoObserver {}

/// The loader's working state. See the module docs for what one load does.
///
/// `SG`: subgraph directories; `JSONS`: subgraph JSON members; `CLAIMS`: table and set names
/// those JSONs give; `KELFS`: KELF descriptors; `FILE_VARS`: `file` variables per subgraph;
/// `NAME`: a member name inside a subgraph directory; `PATH`: a member path (also the name
/// capacity of the [`LoadReport`] it fills).
pub struct Loader<
    P: Profile = Compact,
    const SG: usize = 4,
    const JSONS: usize = 16,
    const CLAIMS: usize = 16,
    const KELFS: usize = 2,
    const FILE_VARS: usize = 4,
    const NAME: usize = DEFAULT_NAME,
    const PATH: usize = DEFAULT_PATH,
> {
    options: LoadOptions,
    tok: Tokenizer,
    scratch: Scratch<P>,
    neff_seen: bool,
    kelf_names: Vec<String<PATH>, KELFS>,
    kelfs: Vec<(String<PATH>, P::Kelf), KELFS>,
    plans: Vec<Plan<FILE_VARS, NAME>, SG>,
    jsons: Vec<JsonRec<NAME, PATH>, JSONS>,
    claims: Vec<Claim<NAME>, CLAIMS>,
    device_arch: Option<Arch>,
    lnc_size: u32,
}

/// A loader for host tools: the [`Host`] profile, 16 subgraphs, 256 subgraph JSONs, 512 table
/// names, 1024 weight files per subgraph, 128-byte names and 192-byte paths. About 2.6 MB: box it.
pub type HostLoader = Loader<Host, 16, 256, 512, 16, 1024, 128, 192>;

/// The report a [`HostLoader`] fills: 16 subgraphs, 4096 payloads, 64 I/O tensors.
pub type HostReport = LoadReport<16, 4096, 64, 192>;

/// Bytes of host memory one load takes with the default capacities: the loader state plus
/// the archive reader (inflate window, decompressor, tar buffers). The load report is the
/// caller's output and is counted separately ([`REPORT_SIZE`]).
pub const LOAD_FOOTPRINT: usize = core::mem::size_of::<Loader>() + core::mem::size_of::<Archive<&[u8]>>();

// One load fits a management controller's budget: a change that breaks this fails the build
// on every target, not a test. (65 416 bytes on x86-64 today: 45 504 of archive reader, of
// which 32 KiB is the inflate window, and 19 912 of loader state.)
const _: () = assert!(LOAD_FOOTPRINT < 64 * 1024);

/// Bytes of a default-capacity [`LoadReport`].
pub const REPORT_SIZE: usize = core::mem::size_of::<LoadReport>();

/// Counts the warnings that pass through to the caller's sink.
struct Counting<'s, S: WarningSink + ?Sized> {
    sink: &'s mut S,
    count: u32,
}

impl<S: WarningSink + ?Sized> WarningSink for Counting<'_, S> {
    fn warn(&mut self, warning: &Warning) {
        self.count += 1;
        self.sink.warn(warning);
    }
}

/// A device that stores nothing: a check runs every step of a load but the placement.
enum Device<'h, H: Hal> {
    Real(&'h mut H),
    None,
}

/// Joins `dir/name` into a member path.
fn join<const N: usize>(dir: &str, name: &str) -> Result<String<N>, ErrorKind> {
    let mut out = String::new();
    let ok = if dir.is_empty() {
        out.push_str(name).is_ok()
    } else {
        out.push_str(dir).is_ok() && out.push('/').is_ok() && out.push_str(name).is_ok()
    };
    if ok {
        Ok(out)
    } else {
        Err(capacity("PATH", N))
    }
}

/// `a.b.c` from generated key names (context for errors).
fn key_path(keys: &[&str]) -> String<64> {
    let mut out = String::new();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            let _ = out.push('.');
        }
        let _ = out.push_str(k);
    }
    out
}

fn split(member: &str) -> (&str, &str) {
    match member.rfind('/') {
        Some(i) => (member.get(..i).unwrap_or(""), member.get(i + 1..).unwrap_or("")),
        None => ("", member),
    }
}

fn capacity(limit: &'static str, capacity: usize) -> ErrorKind {
    ErrorKind::Capacity(CapacityError { limit, capacity: capacity as u64 })
}

fn copy<const N: usize>(s: &str, limit: &'static str) -> Result<String<N>, ErrorKind> {
    let mut out = String::new();
    out.push_str(s).map_err(|_| capacity(limit, N))?;
    Ok(out)
}

fn usage_of(engine: EngineType) -> UsageClass {
    match engine {
        EngineType::Pe => UsageClass::InstrPe,
        EngineType::Act => UsageClass::InstrAct,
        EngineType::Pool => UsageClass::InstrPool,
        EngineType::Dve => UsageClass::InstrDve,
        EngineType::Sp => UsageClass::InstrSp,
    }
}

fn engine_slot(engine: EngineType) -> usize {
    match engine {
        EngineType::Pe => 0,
        EngineType::Act => 1,
        EngineType::Pool => 2,
        EngineType::Dve => 3,
        EngineType::Sp => 4,
    }
}

/// Reads a member body through the JSON tokenizer while keeping the archive's own error:
/// the tokenizer only sees an I/O kind, the caller gets the real gzip/tar error back.
struct Capture<'r, R: BufRead<Error = Error>> {
    inner: &'r mut R,
    error: Option<Error>,
}

impl<R: BufRead<Error = Error>> embedded_io::ErrorType for Capture<'_, R> {
    type Error = Error;
}

impl<R: BufRead<Error = Error>> embedded_io::Read for Capture<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.inner.read(buf).inspect_err(|e| self.error = Some(*e))
    }
}

impl<R: BufRead<Error = Error>> BufRead for Capture<'_, R> {
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        match self.inner.fill_buf() {
            Ok(b) => Ok(b),
            Err(e) => {
                self.error = Some(e);
                Err(e)
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
    }
}

impl<
        P: Profile,
        const SG: usize,
        const JSONS: usize,
        const CLAIMS: usize,
        const KELFS: usize,
        const FILE_VARS: usize,
        const NAME: usize,
        const PATH: usize,
    > Default for Loader<P, SG, JSONS, CLAIMS, KELFS, FILE_VARS, NAME, PATH>
{
    fn default() -> Self {
        Self::new(LoadOptions::default())
    }
}

impl<
        P: Profile,
        const SG: usize,
        const JSONS: usize,
        const CLAIMS: usize,
        const KELFS: usize,
        const FILE_VARS: usize,
        const NAME: usize,
        const PATH: usize,
    > Loader<P, SG, JSONS, CLAIMS, KELFS, FILE_VARS, NAME, PATH>
{
    /// A loader ready for one load.
    pub fn new(options: LoadOptions) -> Self {
        Self {
            options,
            tok: Tokenizer::new(),
            scratch: Scratch::Empty,
            neff_seen: false,
            kelf_names: Vec::new(),
            kelfs: Vec::new(),
            plans: Vec::new(),
            jsons: Vec::new(),
            claims: Vec::new(),
            device_arch: None,
            lnc_size: 1,
        }
    }

    /// Loads the archive onto `hal`: every payload lands in a device region with its usage
    /// class; `report` receives what landed where. On error, every region this load
    /// allocated is released again.
    pub fn load<R: BufRead, H: Hal, const RSG: usize, const RP: usize, const RIO: usize>(
        &mut self,
        archive: &mut Archive<R>,
        hal: &mut H,
        report: &mut LoadReport<RSG, RP, RIO, PATH>,
        observer: &mut impl Observer<P>,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.device_arch = Some(hal.arch());
        let mut device = Device::Real(hal);
        let result = self.run(archive, &mut device, report, observer, sink);
        if result.is_err() {
            if let Device::Real(hal) = &mut device {
                for p in report.payloads.iter_mut() {
                    if let Some(region) = p.region.take() {
                        let _ = hal.release(region);
                        p.state = PayloadState::Released;
                    }
                }
            }
        }
        result
    }

    /// Everything a load checks, with no device: payloads are read, digested and checked
    /// (`.npy` headers, sizes) but stored nowhere. `arch`, when given, applies the target
    /// gate and that architecture's rules.
    pub fn check<R: BufRead, const RSG: usize, const RP: usize, const RIO: usize>(
        &mut self,
        archive: &mut Archive<R>,
        arch: Option<Arch>,
        report: &mut LoadReport<RSG, RP, RIO, PATH>,
        observer: &mut impl Observer<P>,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.device_arch = arch;
        let mut device: Device<'_, crate::sim::SimDevice<'_, 1>> = Device::None;
        self.run(archive, &mut device, report, observer, sink)
    }

    fn run<R: BufRead, H: Hal, const RSG: usize, const RP: usize, const RIO: usize>(
        &mut self,
        archive: &mut Archive<R>,
        device: &mut Device<'_, H>,
        report: &mut LoadReport<RSG, RP, RIO, PATH>,
        observer: &mut impl Observer<P>,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        report.clear();
        report.device_arch = self.device_arch;
        self.lnc_size = archive.header().lnc_size.max(1);
        let mut sink = Counting { sink, count: 0 };
        let result = self.walk(archive, device, report, observer, &mut sink).and_then(|()| {
            let finish = archive.finish(&mut sink)?;
            report.finish(&finish);
            self.bind(device, report, &mut sink)
        });
        report.warnings = sink.count;
        self.scratch = Scratch::Empty;
        result
    }

    /// The pass over the members.
    fn walk<R: BufRead, H: Hal, const RSG: usize, const RP: usize, const RIO: usize>(
        &mut self,
        archive: &mut Archive<R>,
        device: &mut Device<'_, H>,
        report: &mut LoadReport<RSG, RP, RIO, PATH>,
        observer: &mut impl Observer<P>,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        while let Some(mut member) = archive.next_member(sink)? {
            // Debug and metadata members are skipped before anything is kept of them, so a
            // long debug file name never meets the PATH capacity.
            if matches!(route(member.name()), Route::Skip(_)) {
                continue;
            }
            let name: String<PATH> =
                copy(member.name(), "PATH").map_err(|k| Error::in_member(Stage::Tar, member.name(), 0, k))?;
            let size = member.size();
            let fail = |k: ErrorKind| Error::in_member(Stage::Tar, &name, 0, k);
            match route(&name) {
                Route::Skip(_) => {}
                Route::NeffJson => {
                    self.scratch = Scratch::Neff(P::Neff::default());
                    let Scratch::Neff(doc) = &mut self.scratch else { continue };
                    parse_member(&mut self.tok, &mut member, &name, sink, |tok, src, sink| {
                        doc.parse_into(tok, src, &name, sink)
                    })?;
                    let names =
                        kelf_names::<KELFS, PATH>(doc).map_err(|k| Error::in_member(Stage::NeffJson, &name, 0, k))?;
                    report.io = doc.io_table().map_err(|k| Error::in_member(Stage::NeffJson, &name, 0, k))?;
                    observer.neff_json(&name, doc);
                    if self.neff_seen {
                        let w = WarningKind::Chain(ChainWarning::DuplicateMember);
                        sink.warn(&Warning::in_member(Stage::NeffJson, &name, 0, w));
                    }
                    self.kelf_names = names;
                    self.neff_seen = true;
                }
                Route::Kelf => {
                    self.scratch = Scratch::Kelf(P::Kelf::default());
                    let Scratch::Kelf(doc) = &mut self.scratch else { continue };
                    parse_member(&mut self.tok, &mut member, &name, sink, |tok, src, sink| {
                        doc.parse_into(tok, src, &name, sink)
                    })?;
                    observer.kelf(&name, doc);
                    let doc = core::mem::take(doc);
                    if let Some(slot) = self.kelfs.iter_mut().find(|(n, _)| *n == name) {
                        sink.warn(&Warning::in_member(
                            Stage::Kelf,
                            &name,
                            0,
                            WarningKind::Chain(ChainWarning::DuplicateMember),
                        ));
                        slot.1 = doc;
                    } else {
                        self.kelfs.push((name.clone(), doc)).map_err(|_| fail(capacity("KELFS", KELFS)))?;
                    }
                }
                Route::Def { sg_dir } => {
                    self.scratch = Scratch::Def(P::Def::default());
                    let Scratch::Def(doc) = &mut self.scratch else { continue };
                    parse_member(&mut self.tok, &mut member, &name, sink, |tok, src, sink| {
                        doc.parse_into(tok, src, &name, sink)
                    })?;
                    if let Some(arch) = self.device_arch {
                        doc.check_carveouts(TargetCheck::Device(arch), self.options.allow_legacy)
                            .map_err(|e| Error::in_member(Stage::DefJson, &name, 0, ErrorKind::Manifest(e)))?;
                    }
                    let plan = plan_from::<P, FILE_VARS, NAME>(sg_dir, doc)
                        .map_err(|k| Error::in_member(Stage::DefJson, &name, 0, k))?;
                    observer.def_json(&name, doc);
                    match self.plans.iter_mut().find(|p| p.dir == sg_dir) {
                        Some(existing) => {
                            sink.warn(&Warning::in_member(
                                Stage::DefJson,
                                &name,
                                0,
                                WarningKind::Chain(ChainWarning::DuplicateMember),
                            ));
                            *existing = plan;
                        }
                        None => self.plans.push(plan).map_err(|_| fail(capacity("SG", SG)))?,
                    }
                }
                Route::SubgraphJson { .. } => {
                    self.scratch = Scratch::Engine(P::Engine::default());
                    let Scratch::Engine(doc) = &mut self.scratch else { continue };
                    parse_member(&mut self.tok, &mut member, &name, sink, |tok, src, sink| {
                        doc.parse_into(tok, src, &name, sink)
                    })?;
                    record_json::<P, JSONS, CLAIMS, NAME, PATH>(&mut self.jsons, &mut self.claims, &name, doc)
                        .map_err(|k| Error::in_member(Stage::Engine, &name, 0, k))?;
                    observer.subgraph_json(&name, doc);
                }
                Route::Payload { .. } => {
                    if let Some(i) = report.payloads.iter().position(|p| p.member == name) {
                        // Last wins, as the runtime's member map does.
                        sink.warn(&Warning::in_member(
                            Stage::Payload,
                            &name,
                            0,
                            WarningKind::Chain(ChainWarning::DuplicateMember),
                        ));
                        // `remove`, not `swap_remove`: the report keeps tar order.
                        let old = report.payloads.remove(i);
                        if let (Some(region), Device::Real(hal)) = (old.region, &mut *device) {
                            hal.release(region).map_err(|e| hal_error(&name, 0, e))?;
                        }
                    }
                    // Refuse before allocating: a region the report cannot list would leak.
                    if report.payloads.is_full() {
                        return Err(fail(capacity("PAYLOADS", RP)));
                    }
                    let role = self.role_of(&name);
                    let entry = self.place(device, &mut member, &name, size, role)?;
                    report.payloads.push(entry).map_err(|_| fail(capacity("PAYLOADS", RP)))?;
                }
            }
        }
        Ok(())
    }

    /// The core index of a subgraph directory: its graph's position in the KELF.
    fn core_of(&self, dir: &str) -> Option<u8> {
        self.chain_kelfs()
            .flat_map(|k| (0..k.graph_count()).filter_map(move |i| k.graph(i)))
            .position(|(_, definition)| split(definition).0 == dir)
            .and_then(|i| u8::try_from(i).ok())
    }

    /// The KELFs of the chain, in `neff.json` node order (which numbers the cores). Before
    /// `neff.json` is read, only a lone KELF is taken as the chain: with two or more, which
    /// ones count (and so the core numbers) is not known yet, and payloads wait in staging.
    fn chain_kelfs(&self) -> impl Iterator<Item = &P::Kelf> + '_ {
        let lone =
            (!self.neff_seen && self.kelfs.len() == 1).then(|| self.kelfs.iter().map(|(_, k)| k)).into_iter().flatten();
        let named = self
            .kelf_names
            .iter()
            .filter(move |_| self.neff_seen)
            .filter_map(move |name| self.kelfs.iter().find(|(n, _)| n == name).map(|(_, k)| k));
        lone.chain(named)
    }

    fn json(&self, member: &str) -> Option<(usize, &JsonRec<NAME, PATH>)> {
        self.jsons.iter().enumerate().find(|(_, j)| j.member == member)
    }

    /// The JSON that an engine of `plan` uses, when both its name and the member are known.
    fn engine_json_of(
        &self,
        plan: &Plan<FILE_VARS, NAME>,
        engine: EngineType,
    ) -> Option<(usize, &JsonRec<NAME, PATH>)> {
        let name = plan.engine_json.get(engine_slot(engine))?.as_ref()?;
        let path: String<PATH> = join::<PATH>(&plan.dir, name).ok()?;
        self.json(&path)
    }

    /// The instruction stream an engine runs: the engine JSON's `instr`, else `<eng>_instr`.
    fn instr_of<'a>(
        &'a self,
        plan: &'a Plan<FILE_VARS, NAME>,
        engine: EngineType,
        json: Option<&'a JsonRec<NAME, PATH>>,
    ) -> Option<&'a str> {
        json.and_then(|j| j.instr.as_deref())
            .or_else(|| plan.engine_instr.get(engine_slot(engine)).and_then(|i| i.as_deref()))
    }

    /// The role the manifests read so far give `member`, if they give it one.
    fn role_of(&self, member: &str) -> Option<Role> {
        // Names in a def.json are relative to its directory and may have directories of their
        // own (`w/x.npy`), so the plan is found by prefix, not by the member's last `/`.
        let (plan, file) = self.plans.iter().find_map(|p| {
            let rest = member.strip_prefix(p.dir.as_str())?.strip_prefix('/')?;
            Some((p, rest))
        })?;
        let dir = plan.dir.as_str();
        let core = self.core_of(dir)?;
        let role = |usage, align, expect_len, instr| Some(Role { usage, align, core, expect_len, instr });
        for v in plan.file_vars.iter() {
            if v.file == file {
                return role(UsageClass::Weight, v.align.max(1), v.size, false);
            }
        }
        if plan.ucode_libs.iter().any(|l| l == file) {
            return role(UsageClass::UcodeLib, INSTR_ALIGN, None, false);
        }
        for engine in ENGINES {
            let Some((index, json)) = self.engine_json_of(plan, engine) else { continue };
            if json.instr.as_deref() == Some(file) {
                return role(usage_of(engine), INSTR_ALIGN, None, true);
            }
            for claim in self.claims.iter().filter(|c| usize::from(c.by) == index) {
                match claim.kind {
                    ClaimKind::DveTable if engine == EngineType::Dve && claim.name == file => {
                        // §11.8 publishes no DVE-table class.
                        return role(UsageClass::Generic, INSTR_ALIGN, None, false);
                    }
                    ClaimKind::ActSet if engine == EngineType::Act => {
                        let mut set_json: String<PATH> = join::<PATH>(dir, &claim.name).ok()?;
                        set_json.push_str(".json").ok()?;
                        if let Some((set_index, _)) = self.json(&set_json) {
                            let is_table = self.claims.iter().any(|c| {
                                usize::from(c.by) == set_index && c.kind == ClaimKind::ActTable && c.name == file
                            });
                            if is_table {
                                return role(UsageClass::ActTable, INSTR_ALIGN, None, false);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        // An engine whose JSON has no `instr`: def.json's `<eng>_instr` names the stream.
        for engine in ENGINES {
            let json = self.engine_json_of(plan, engine).map(|(_, j)| j);
            if json.is_some() && self.instr_of(plan, engine, json) == Some(file) {
                return role(usage_of(engine), INSTR_ALIGN, None, true);
            }
        }
        None
    }

    /// Streams one payload: into its final region when its role is known, else staged.
    fn place<B: BufRead<Error = Error>, H: Hal>(
        &self,
        device: &mut Device<'_, H>,
        body: &mut B,
        member: &str,
        member_len: u64,
        role: Option<Role>,
    ) -> Result<PayloadReport<PATH>, Error> {
        let req = match role {
            Some(r) => AllocRequest { size: 0, align: r.align, usage: r.usage, core: r.core },
            None => AllocRequest { size: 0, align: INSTR_ALIGN, usage: UsageClass::Generic, core: 0 },
        };
        let placed = match device {
            Device::Real(hal) => stream_to_device(&mut **hal, body, member, member_len, req)?,
            Device::None => {
                let mut sink = CheckOnly::default();
                let mut placed = stream_to_device(&mut sink, body, member, member_len, req)?;
                placed.region = None;
                placed
            }
        };
        let checking = matches!(device, Device::None);
        let address = match (device, placed.region) {
            (Device::Real(hal), Some(region)) => match hal.address(region) {
                Ok(a) => Some(a),
                Err(e) => {
                    let _ = hal.release(region);
                    return Err(hal_error(member, 0, e));
                }
            },
            _ => None,
        };
        // An empty payload has no region (devices refuse empty ones) but is placed all the same.
        let state = match (checking, role) {
            (true, _) => PayloadState::Checked,
            (false, Some(_)) => PayloadState::Placed,
            (false, None) => PayloadState::Staged,
        };
        Ok(PayloadReport {
            member: copy(member, "PATH").map_err(|k| Error::in_member(Stage::Payload, member, 0, k))?,
            core: role.map(|r| r.core),
            usage: role.map_or(UsageClass::Generic, |r| r.usage),
            len: placed.len,
            member_len,
            digest: placed.digest,
            region: placed.region,
            address,
            state,
        })
    }

    /// The chain checks, then placement of what was staged.
    fn bind<H: Hal, const RSG: usize, const RP: usize, const RIO: usize>(
        &mut self,
        device: &mut Device<'_, H>,
        report: &mut LoadReport<RSG, RP, RIO, PATH>,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.choose_kelfs(sink)?;
        // Every payload: give it its role (placing what was staged), check its size.
        for p in report.payloads.iter_mut() {
            let member = p.member.clone();
            let fail = |stage, k| Error::in_member(stage, &member, 0, k);
            match self.role_of(&member) {
                Some(role) => {
                    if role.instr {
                        let warning =
                            chain::check_instr_size(p.len).map_err(|e| fail(Stage::Chain, ErrorKind::Chain(e)))?;
                        if let Some(w) = warning {
                            sink.warn(&Warning::in_member(Stage::Chain, &member, 0, WarningKind::Chain(w)));
                        }
                    }
                    if let Some(declared) = role.expect_len {
                        if declared != p.len {
                            let e = ChainError::VarSizeMismatch { declared, actual: p.len };
                            return Err(fail(Stage::Chain, ErrorKind::Chain(e)));
                        }
                    }
                    // Staged payloads take their role now; a payload placed on arrival is
                    // placed again if the full chain gives it another class, core or alignment
                    // (a later duplicate def.json, say).
                    let misplaced = p.state == PayloadState::Staged
                        || p.usage != role.usage
                        || p.core != Some(role.core)
                        || p.address.is_some_and(|a| a % role.align != 0);
                    if misplaced {
                        if let (Device::Real(hal), Some(staged)) = (&mut *device, p.region) {
                            let req =
                                AllocRequest { size: p.len, align: role.align, usage: role.usage, core: role.core };
                            let region = hal.adopt(staged, &req).map_err(|e| fail(Stage::Hal, ErrorKind::Hal(e)))?;
                            p.region = Some(region);
                            p.address = Some(hal.address(region).map_err(|e| fail(Stage::Hal, ErrorKind::Hal(e)))?);
                            p.state = PayloadState::Placed;
                        }
                    }
                    if p.state == PayloadState::Staged {
                        // An empty payload: nothing to adopt, its role is all it needed.
                        p.state = PayloadState::Placed;
                    }
                    p.usage = role.usage;
                    p.core = Some(role.core);
                }
                None => {
                    if let (Device::Real(hal), Some(region)) = (&mut *device, p.region.take()) {
                        hal.release(region).map_err(|e: HalError| fail(Stage::Hal, ErrorKind::Hal(e)))?;
                    }
                    p.state = PayloadState::Released;
                    p.address = None;
                    report.released += 1;
                    sink.warn(&Warning::in_member(
                        Stage::Chain,
                        &member,
                        0,
                        WarningKind::Chain(ChainWarning::Unreferenced),
                    ));
                }
            }
        }
        self.check_references(report, sink)?;
        // Accounting per subgraph, in KELF graph order.
        for (core, (name, _)) in
            self.chain_kelfs().flat_map(|k| (0..k.graph_count()).filter_map(move |i| k.graph(i))).enumerate()
        {
            let mut sg = SubgraphReport {
                name: copy(name, "SUBGRAPH_NAME").map_err(|k| Error::at_file(Stage::Chain, 0, k))?,
                ..SubgraphReport::default()
            };
            sg.core = u8::try_from(core).unwrap_or(u8::MAX);
            let this_core = sg.core;
            for p in report.payloads.iter().filter(|p| p.core == Some(this_core) && p.state != PayloadState::Released) {
                sg.add(p.usage, p.len);
            }
            report
                .subgraphs
                .push(sg)
                .map_err(|_| Error::at_file(Stage::Chain, 0, capacity("report subgraphs", RSG)))?;
        }
        if let Some(k) = self.chain_kelfs().next() {
            report.target = copy(k.target(), "SUBGRAPH_NAME").map_err(|kind| Error::at_file(Stage::Kelf, 0, kind))?;
        }
        Ok(())
    }

    /// Picks the KELFs of the chain (those `neff.json` names, or the conventional fallback),
    /// then applies the target gate and the graph-count check.
    fn choose_kelfs(&mut self, sink: &mut impl WarningSink) -> Result<(), Error> {
        if !self.neff_seen {
            let fallback = ["kelf-0.json", "kelf-a.json"].into_iter().find(|n| self.kelfs.iter().any(|(k, _)| k == n));
            let Some(name) = fallback else {
                return Err(Error::at_file(Stage::Chain, 0, ErrorKind::Chain(ChainError::NeffJsonMissing)));
            };
            sink.warn(&Warning::in_member(Stage::Chain, name, 0, WarningKind::Chain(ChainWarning::KelfFallback)));
            self.kelf_names.clear();
            let _ = self.kelf_names.push(copy(name, "PATH").map_err(|k| Error::at_file(Stage::Chain, 0, k))?);
            self.neff_seen = true;
        }
        for name in self.kelf_names.iter() {
            if !self.kelfs.iter().any(|(k, _)| k == name) {
                let e = ChainError::MemberMissing { member: chain::MemberText::new(name) };
                return Err(Error::in_member(Stage::NeffJson, "neff.json", 0, ErrorKind::Chain(e))
                    .with_key_path(&key_path(&[<NeffJson>::KEY_NODES, <Node>::KEY_ATTRS, <NodeAttrs>::KEY_KELF])));
            }
        }
        for (name, _) in self.kelfs.iter().filter(|(n, _)| !self.kelf_names.iter().any(|k| k == n)) {
            sink.warn(&Warning::in_member(Stage::Kelf, name, 0, WarningKind::Chain(ChainWarning::KelfNotNamed)));
        }
        let mut dirs: Vec<String<PATH>, SG> = Vec::new();
        for (name, kelf) in self.kelfs.iter().filter(|(n, _)| self.kelf_names.iter().any(|k| k == n)) {
            if let Some(arch) = self.device_arch {
                kelf.check_device(arch, self.options.allow_legacy).map_err(|e| {
                    Error::in_member(Stage::Kelf, name, 0, ErrorKind::Manifest(e)).with_key_path(<Kelf>::KEY_TARGET)
                })?;
            }
            let graphs = kelf.graph_count() as u32;
            if graphs != self.lnc_size {
                let w = ChainWarning::GraphCount { graphs, lnc_size: self.lnc_size };
                sink.warn(
                    &Warning::in_member(Stage::Kelf, name, 0, WarningKind::Chain(w)).with_key_path(<Kelf>::KEY_GRAPHS),
                );
            }
            for (_, definition) in (0..kelf.graph_count()).filter_map(|i| kelf.graph(i)) {
                let (dir, _) = split(definition);
                let fail = |k| {
                    Error::in_member(Stage::Kelf, name, 0, k)
                        .with_key_path(&key_path(&[<Kelf>::KEY_GRAPHS, <Graph>::KEY_DEFINITION]))
                };
                if dirs.iter().any(|d| d == dir) {
                    return Err(fail(ErrorKind::Chain(ChainError::DuplicateSubgraph)));
                }
                dirs.push(copy(dir, "PATH").map_err(fail)?).map_err(|_| fail(capacity("SG", SG)))?;
                let has_def = self.plans.iter().any(|p| p.dir == dir) && split(definition).1 == "def.json";
                if !has_def {
                    return Err(fail(ErrorKind::Chain(ChainError::MemberMissing {
                        member: chain::MemberText::new(definition),
                    })));
                }
            }
        }
        Ok(())
    }

    /// Every member a manifest names must be in the archive.
    fn check_references<const RSG: usize, const RP: usize, const RIO: usize>(
        &self,
        report: &LoadReport<RSG, RP, RIO, PATH>,
        _sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        // Present and given a role by the binder (not released as unreferenced).
        let has_payload =
            |path: &str| report.payloads.iter().any(|p| p.member == path && p.state != PayloadState::Released);
        let missing = |by: &str, key: &str, path: &str| {
            Error::in_member(
                Stage::Chain,
                by,
                0,
                ErrorKind::Chain(ChainError::MemberMissing { member: chain::MemberText::new(path) }),
            )
            .with_key_path(key)
        };
        let kelf_dirs: Vec<String<PATH>, SG> = self
            .chain_kelfs()
            .flat_map(|k| (0..k.graph_count()).filter_map(move |i| k.graph(i)))
            .filter_map(|(_, d)| copy(split(d).0, "PATH").ok())
            .collect();
        for plan in self.plans.iter().filter(|p| kelf_dirs.iter().any(|d| *d == p.dir)) {
            let def = join::<PATH>(&plan.dir, "def.json").map_err(|k| Error::at_file(Stage::Chain, 0, k))?;
            for engine in ENGINES {
                let Some(json_name) = plan.engine_json.get(engine_slot(engine)).and_then(|n| n.as_ref()) else {
                    continue;
                };
                let json_path =
                    join::<PATH>(&plan.dir, json_name).map_err(|k| Error::in_member(Stage::Chain, &def, 0, k))?;
                let Some((index, json)) = self.json(&json_path) else {
                    return Err(missing(&def, engine.as_str(), &json_path));
                };
                if let Some(instr) = self.instr_of(plan, engine, Some(json)) {
                    let path =
                        join::<PATH>(&plan.dir, instr).map_err(|k| Error::in_member(Stage::Chain, &json_path, 0, k))?;
                    if !has_payload(&path) {
                        return Err(missing(&json_path, <EngineJson>::KEY_INSTR, &path));
                    }
                }
                for claim in self.claims.iter().filter(|c| usize::from(c.by) == index) {
                    let path = match claim.kind {
                        // Sets belong to the act engine and tables to the DVE, as role_of reads them.
                        ClaimKind::ActSet if engine != EngineType::Act => continue,
                        ClaimKind::DveTable if engine != EngineType::Dve => continue,
                        ClaimKind::ActSet => {
                            let mut p = join::<PATH>(&plan.dir, &claim.name)
                                .map_err(|k| Error::in_member(Stage::Chain, &json_path, 0, k))?;
                            p.push_str(".json")
                                .map_err(|_| Error::in_member(Stage::Chain, &json_path, 0, capacity("PATH", PATH)))?;
                            let Some((set_index, _)) = self.json(&p) else {
                                return Err(missing(&json_path, <EngineJson>::KEY_ACTIVATION_FUNCTION_SETS, &p));
                            };
                            for table in self
                                .claims
                                .iter()
                                .filter(|c| usize::from(c.by) == set_index && c.kind == ClaimKind::ActTable)
                            {
                                let t = join::<PATH>(&plan.dir, &table.name)
                                    .map_err(|k| Error::in_member(Stage::Chain, &p, 0, k))?;
                                if !has_payload(&t) {
                                    return Err(missing(&p, <EngineJson>::KEY_BKT_BIN, &t));
                                }
                            }
                            continue;
                        }
                        ClaimKind::DveTable => join::<PATH>(&plan.dir, &claim.name)
                            .map_err(|k| Error::in_member(Stage::Chain, &json_path, 0, k))?,
                        ClaimKind::ActTable => continue,
                    };
                    if !has_payload(&path) {
                        return Err(missing(&json_path, <EngineJson>::KEY_DVE_TABLES, &path));
                    }
                }
            }
            for v in plan.file_vars.iter() {
                let path = join::<PATH>(&plan.dir, &v.file).map_err(|k| Error::in_member(Stage::Chain, &def, 0, k))?;
                if !has_payload(&path) {
                    return Err(missing(&def, &key_path(&[<DefJson>::KEY_VARS, <Var>::KEY_FILE_NAME]), &path));
                }
            }
            for lib in plan.ucode_libs.iter() {
                let path = join::<PATH>(&plan.dir, lib).map_err(|k| Error::in_member(Stage::Chain, &def, 0, k))?;
                if !has_payload(&path) {
                    return Err(missing(&def, &key_path(&[<DefJson>::KEY_UCODE_LIBS, <UcodeLib>::KEY_LIBRARY]), &path));
                }
            }
        }
        Ok(())
    }
}

/// Runs one manifest parser over a member body, keeping archive errors intact.
fn parse_member<R: BufRead<Error = Error>, S: WarningSink>(
    tok: &mut Tokenizer,
    body: &mut R,
    member: &str,
    sink: &mut S,
    f: impl FnOnce(&mut Tokenizer, &mut Capture<'_, R>, &mut S) -> Result<(), Error>,
) -> Result<(), Error> {
    tok.reset();
    let mut src = Capture { inner: body, error: None };
    match f(tok, &mut src, sink) {
        Ok(()) => Ok(()),
        Err(e) => match (e.kind, src.error) {
            (ErrorKind::Io(_), Some(inner)) => Err(inner.with_member(member)),
            _ => Err(e),
        },
    }
}

/// The KELF members `neff.json` names.
fn kelf_names<const KELFS: usize, const PATH: usize>(
    doc: &impl NeffDoc,
) -> Result<Vec<String<PATH>, KELFS>, ErrorKind> {
    let mut names = Vec::new();
    let mut err = None;
    doc.for_each_kelf(|k| match copy(k, "PATH") {
        Ok(k) => {
            if names.push(k).is_err() {
                err = err.or(Some(capacity("KELFS", KELFS)));
            }
        }
        Err(e) => err = err.or(Some(e)),
    });
    match err {
        Some(e) => Err(e),
        None => Ok(names),
    }
}

/// What the binder keeps of a `def.json`.
fn plan_from<P: Profile, const FILE_VARS: usize, const NAME: usize>(
    sg_dir: &str,
    doc: &P::Def,
) -> Result<Plan<FILE_VARS, NAME>, ErrorKind> {
    let mut plan = Plan { dir: copy(sg_dir, "SUBGRAPH_DIR")?, ..Plan::default() };
    for engine in ENGINES {
        let slot = engine_slot(engine);
        if let (Some(dst), Some(name)) = (plan.engine_json.get_mut(slot), doc.engine_json(engine)) {
            *dst = Some(copy(name, "NAME")?);
        }
        if let (Some(dst), Some(name)) = (plan.engine_instr.get_mut(slot), doc.engine_instr(engine)) {
            *dst = Some(copy(name, "NAME")?);
        }
    }
    let mut err = None;
    doc.for_each_file_var(|v| {
        let rec = copy(v.file, "NAME").map(|file| FileVarRec { file, size: v.size, align: v.align });
        match rec {
            Ok(rec) => {
                if plan.file_vars.push(rec).is_err() {
                    err = err.or(Some(capacity("FILE_VARS", FILE_VARS)));
                }
            }
            Err(k) => err = err.or(Some(k)),
        }
    });
    doc.for_each_ucode_lib(|lib| match copy(lib, "NAME") {
        Ok(lib) => {
            if plan.ucode_libs.push(lib).is_err() {
                err = err.or(Some(capacity("UCODE_LIBS", 2)));
            }
        }
        Err(k) => err = err.or(Some(k)),
    });
    match err {
        Some(k) => Err(k),
        None => Ok(plan),
    }
}

/// Records what a subgraph JSON names.
fn record_json<P: Profile, const JSONS: usize, const CLAIMS: usize, const NAME: usize, const PATH: usize>(
    jsons: &mut Vec<JsonRec<NAME, PATH>, JSONS>,
    claims: &mut Vec<Claim<NAME>, CLAIMS>,
    member: &str,
    doc: &P::Engine,
) -> Result<(), ErrorKind> {
    let index = match jsons.iter().position(|j| j.member == member) {
        Some(i) => {
            // A later copy of the same member replaces the earlier one and its claims.
            claims.retain(|c| usize::from(c.by) != i);
            i
        }
        None => {
            let rec = JsonRec { member: copy(member, "PATH")?, instr: None };
            jsons.push(rec).map_err(|_| capacity("JSONS", JSONS))?;
            jsons.len() - 1
        }
    };
    let by = u8::try_from(index).map_err(|_| capacity("JSONS", 256))?;
    let instr = doc.instr().map(|i| copy(i, "NAME")).transpose()?;
    if let Some(rec) = jsons.get_mut(index) {
        rec.instr = instr;
    }
    let mut err = None;
    let mut claim = |kind: ClaimKind, name: &str| {
        let c = copy(name, "NAME").map(|name| Claim { by, kind, name });
        match c {
            Ok(c) => {
                if claims.push(c).is_err() {
                    err = err.or(Some(capacity("CLAIMS", CLAIMS)));
                }
            }
            Err(k) => err = err.or(Some(k)),
        }
    };
    doc.for_each_act_set(|s| claim(ClaimKind::ActSet, s));
    doc.for_each_act_table(|t| claim(ClaimKind::ActTable, t));
    doc.for_each_dve_table(|t| claim(ClaimKind::DveTable, t));
    match err {
        Some(k) => Err(k),
        None => Ok(()),
    }
}

/// A [`Hal`] that accepts everything and stores nothing, for checks without a device.
#[derive(Debug, Default)]
struct CheckOnly {
    next: u32,
}

impl Hal for CheckOnly {
    fn arch(&self) -> Arch {
        Arch::Cayman
    }

    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        req.validate()?;
        self.next += 1;
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
}
