//! Running the core loader on the host: one streaming pass over a NEFF, with or without the
//! simulated device, collecting what `info` prints from the parsed manifests as they pass.
//!
//! The core's [`neff::loader::Loader`] keeps what binding needs in an arena this module lends
//! ([`ARENA_BYTES`] of address space, allocated zeroed, so only the pages a load touches cost
//! memory: spec §15.20 wants no valid NEFF refused for its size on a host, and this is room
//! for millions of weights). Everything else the core streams: the observer here collects
//! what `info` prints. The input streams through the source's fixed buffer and is inflated by
//! zlib-rs, in a thread of its own on a host with two cores or more ([`crate::inflate`]); what
//! grows with the NEFF is the simulated device's memory and, for `info`, the collected tables.
//!
//! The simulated device of a `load` has the arch `--arch` pins, or else the NEFF's own: the
//! target of the chain's first KELF ([`DeviceArch::NeffTarget`]). That target is known only
//! once the KELF has streamed past, and the loader needs the device's arch only when it binds,
//! after the archive (the target gate and the target's rules apply there; see
//! [`neff::hal::Hal::device_arch`]). So the arch is learnt on the way, in the one pass: the
//! observer notes the chain's first KELF target as `neff.json` and the KELFs are read
//! ([`Collected::neff_target`]), and the device (`device.rs`) answers with it when asked.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use neff::archive::OpenOptions;

use neff::header::HeaderWarning;
use neff::info::{InfoLog, LogBuffer};
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver, Observer};
use neff::manifest::Arch;
use neff::{Stage, WarningKind};

use crate::consumed::ConsumedValues;
use crate::error::{print_warning, CliError};
use crate::header_view::HeaderView;
use crate::inflate::{open_archive, Inflation};
use crate::members::{MemberLog, MemberLogger, MemberOptions, Tee};
use crate::source::{Again, InputSource};

mod collected;
mod device;
mod lent;
mod whole;

pub use collected::*;
use device::load_onto;
pub use device::*;
use lent::Lent;
pub use lent::{ARENA_BYTES, DEFERRED_SLOTS, REPLAY_BYTES, WHOLE_NAMES_BYTES};
use whole::{whole, whole_line};

/// Stack of the thread the loader runs on (the manifest slots and the archive reader live in
/// the loader's frames).
pub const LOADER_STACK: usize = 64 << 20;
/// What one pass produced.
pub struct Pass {
    /// The header.
    pub header: HeaderView,
    /// The load report.
    pub report: Box<HostReport>,
    /// What the observer collected.
    pub collected: Collected,
    /// The simulated device at the end (`None` for a check).
    pub device: Option<DeviceSummary>,
    /// The archive's closing figures (members, stream, padding).
    pub finish: neff::archive::Finish,
    /// Time from opening the archive to the end of the load.
    pub elapsed: Duration,
    /// Warnings, as printed.
    pub warnings: Vec<String>,
    /// The same warnings field by field (for bindings: code, stage, member, key path), when
    /// [`PassOptions::keep_warning_records`] asked for them.
    pub warning_records: Vec<neff::Warning>,
    /// What the pass showed of its members (`None` unless asked for; see [`crate::members`]).
    pub members: Option<MemberLog>,
    /// The refusal a [`PassOptions::keep_going`] check went on after, as printed.
    pub refusal: Option<String>,
    /// What the pass needed of each buffer it lent the loader ([`neff::loader::Loader::needs`]).
    pub needs: neff::loader::Needs,
    /// The core's log of the `info --json` document, when [`Request::details`] asked for it
    /// ([`crate::info::info_json`] writes the document from it).
    pub info: Option<InfoLogged>,
}

/// What an info pass logged of the document ([`neff::info`]), in a buffer that grows: on a
/// host no valid NEFF is refused for its size (spec §15.20).
pub struct InfoLogged {
    /// The core's record log.
    pub log: InfoLog<GrowingLog>,
    /// The header the document shows.
    pub header: neff::header::NeffHeader,
}

/// A [`LogBuffer`] that grows: the host lends the info log as much as it asks for.
#[derive(Debug, Default)]
pub struct GrowingLog(Vec<u8>);

impl LogBuffer for GrowingLog {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
    fn grow(&mut self, len: usize) -> bool {
        if len > self.0.len() {
            self.0.resize(len, 0);
        }
        true
    }
}

/// Whether passes print what [`Verbose`] prints (`neff -v`); off by default.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Makes every pass from now on print what [`Verbose`] prints, on stderr (`neff -v`).
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// What a pass prints on stderr with `neff -v`, as the loader meets it: the runtime's debug
/// lines in libnrt's words (`Found KELF node: kelf-0.json`), and each `def.json`'s
/// `fp8_conversion_info` as the loader fills it, the `NEURON_RT_DBG_FP8_*` overrides applied
/// (`fp8_conversion_info sg00/def.json: initialized 1, fp8_range_extension 0, ...`).
struct Verbose;

impl Observer for Verbose {
    fn debug(&mut self, line: &neff::loader::DebugLine<'_>) {
        eprintln!("{line}");
    }
    fn subgraph_tables(&mut self, member: &str, tables: &neff::loader::SubgraphTables) {
        let (on, c) = (tables.fp8.initialized, tables.fp8.cfg);
        eprintln!(
            "fp8_conversion_info {member}: initialized {}, fp8_range_extension {}, emax_fp8_e4m3 {}, \
             emax_fp8_e5m2 {}, ocp_sat {}, fp8_sis {}, fp8_sns {}",
            u8::from(on),
            u8::from(c.fp8_range_extension),
            c.emax_fp8_e4m3,
            c.emax_fp8_e5m2,
            u8::from(c.ocp_sat),
            u8::from(c.fp8_sis),
            u8::from(c.fp8_sns),
        );
    }
}

/// The runtime's debug overrides of the fp8 conversion config, read from its own environment
/// variables (`NEURON_RT_DBG_FP8_RANGE_EXT`, `..._EMAX_E4M3`, `..._EMAX_E5M2`,
/// `NEURON_RT_DBG_OCP_FP8_SAT`, `NEURON_RT_DBG_FP8_SIS`, `NEURON_RT_DBG_FP8_SNS`), as libnrt
/// reads them. A value the variable cannot take is a usage error naming it.
pub fn fp8_overrides() -> Result<neff::manifest::def::Fp8Overrides, CliError> {
    let mut overrides = neff::manifest::def::Fp8Overrides::default();
    for name in neff::manifest::def::Fp8Overrides::VARIABLES {
        if let Some(value) = std::env::var_os(name) {
            let value = value.to_string_lossy();
            overrides.set(name, &value).map_err(|e| CliError::Usage { message: format!("{name}={value}: {e}") })?;
        }
    }
    Ok(overrides)
}

/// What a pass is asked for besides its target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// Accept what `NEURON_RT_ALLOW_LEGACY_NEFF=1` accepts (`--allow-legacy`).
    pub allow_legacy: bool,
    /// Verify the header hash while the payload streams (`--verify`): the outcome is in
    /// [`Pass::finish`], and a mismatch ends the pass with the rejection of
    /// [`crate::integrity::mismatch_error`] instead of a warning.
    pub verify: bool,
    /// A check that the manifests refuse (the archive itself sound: header, gzip and tar read
    /// to the end) is not the pass's error: the refusal is printed as a warning, kept in
    /// [`Pass::refusal`], and the pass ends with what was read (the tools that show *why* a
    /// NEFF is refused: `ls`, `diff`).
    pub keep_going: bool,
    /// Keep each warning field by field as well as printed ([`Pass::warning_records`], and
    /// a refusal's [`Fault`](crate::error::Fault)): for bindings, which hand warnings on as
    /// objects. Off, a NEFF with many warnings (15,312 for a member added twice, 320 times)
    /// costs no memory for them beyond their lines.
    pub keep_warning_records: bool,
    /// Lend the replay store from the start, so that [`Pass::needs`] says how much of it the
    /// load used (`--budget`). Otherwise a pass over an input that can be read again lends
    /// none first, and a second pass with it follows only if the first needed it.
    pub measure_replay: bool,
}

/// One pass, asked for: what it loads onto, what it keeps, how it inflates. Every pass of the
/// command, the Python package and the tests is one of these given to [`run`] or
/// [`run_observed`].
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Where the payloads go (a check by default).
    pub target: Target,
    /// What the pass accepts and keeps besides its target.
    pub options: PassOptions,
    /// Keep the manifests' entries in [`Collected`] as `info` prints them, and the core's log
    /// of the `info --json` document ([`Pass::info`]) (an observer that keeps only what it
    /// needs keeps memory flat without them).
    pub details: bool,
    /// The member log and the captured members ([`Pass::members`]).
    pub members: Option<MemberOptions>,
    /// Keep inflate checkpoints for a member index ([`crate::index::MemberIndex`], built from
    /// this recorder and the pass's member list): the pass inflates with miniz_oxide.
    pub index: Option<crate::index::Recorder>,
    /// How the input is inflated; `None` chooses for this host and the input's size
    /// ([`Inflation::for_this_host`]). Tests compare the ways.
    pub inflation: Option<Inflation>,
}

impl Request {
    /// A check: everything a load validates, no device.
    pub fn check() -> Self {
        Self::default()
    }

    /// `neff info`'s pass: a check that keeps every manifest entry `info` prints, and
    /// `info.json` (the compiler's version), which the loader shows its observer.
    pub fn info() -> Self {
        Self { details: true, members: Some(MemberOptions::producer()), ..Self::default() }
    }

    /// What `ls`, `diff` and the bindings read of a NEFF: a check that goes on past a refusal
    /// of the manifests ([`PassOptions::keep_going`]) and lists every member.
    pub fn consumed() -> Self {
        Self {
            members: Some(MemberOptions::members()),
            options: PassOptions { keep_going: true, ..PassOptions::default() },
            ..Self::default()
        }
    }

    /// This request onto `target`.
    pub fn onto(self, target: Target) -> Self {
        Self { target, ..self }
    }

    /// This request with `options`.
    pub fn with(self, options: PassOptions) -> Self {
        Self { options, ..self }
    }

    /// The inflation a source of `size` bytes gets.
    fn inflation_for(&self, size: u64) -> Inflation {
        match (&self.index, &self.inflation) {
            (Some(recorder), _) => Inflation::Indexing {
                recorder: recorder.clone(),
                threaded: !matches!(Inflation::for_this_host(size), Inflation::Inline),
            },
            (None, Some(inflation)) => inflation.clone(),
            (None, None) => Inflation::for_this_host(size),
        }
    }
}

/// Runs the loader over `source` as `request` asks, on a thread with a large stack.
pub fn run(source: InputSource, request: Request) -> Result<Pass, CliError> {
    // Nothing outside the pass observes it: a second pass, should one be needed, repeats
    // nothing anyone saw.
    run_spawned(source, request, NoObserver, true).map(|(pass, _)| pass)
}

/// [`run`], its observations also going to `extra` (after the pass's own collection), which
/// is handed back with the pass.
pub fn run_observed<O: Observer + Send + 'static>(
    source: InputSource,
    request: Request,
    extra: O,
) -> Result<(Pass, O), CliError> {
    run_spawned(source, request, extra, false)
}

/// [`run_observed`]; `replay_on_demand`: whether the pass may first go without a replay store
/// (`extra` observes nothing a second pass would repeat).
fn run_spawned<O: Observer + Send + 'static>(
    source: InputSource,
    request: Request,
    mut extra: O,
    replay_on_demand: bool,
) -> Result<(Pass, O), CliError> {
    let size = source.size();
    let inflation = request.inflation_for(size);
    let Request { target, options, details, members, .. } = request;
    // An indexing pass records the inflate as it runs, and `-v` prints the runtime's debug
    // lines as they come: each runs once.
    let replay_on_demand = replay_on_demand
        && !options.measure_replay
        && !VERBOSE.load(Ordering::Relaxed)
        && !matches!(inflation, Inflation::Indexing { .. });
    spawn(move || {
        let work = Work { target, options, details, members, replay_on_demand };
        let pass = run_here(source, size, work, inflation, &mut extra)?;
        Ok((pass, extra))
    })
}

/// What a pass is to do, as [`run_here`] takes it.
struct Work {
    target: Target,
    options: PassOptions,
    details: bool,
    members: Option<MemberOptions>,
    /// Whether the first pass may go without a replay store (see [`run_here`]).
    replay_on_demand: bool,
}

/// One check pass over `path` that keeps the consumed manifest values and the member log:
/// what `ls` and `diff` read of a NEFF ([`Request::consumed`]). A refusal of the manifests
/// does not end it (the archive itself sound): it is printed as a warning
/// ([`Pass::refusal`]), and what was read before it is shown.
pub fn consumed_pass(path: &std::path::Path, what: &str) -> Result<(Pass, ConsumedValues), CliError> {
    consumed_pass_of(crate::source::open_input(path, what)?)
}

/// [`consumed_pass`] over any input.
pub fn consumed_pass_of(source: InputSource) -> Result<(Pass, ConsumedValues), CliError> {
    run_observed(source, Request::consumed(), ConsumedValues::new())
}

/// Two observers as one, owned: each call goes to both, in order.
#[derive(Debug, Default)]
pub struct Both<A, B>(pub A, pub B);

impl<A: Observer, B: Observer> Observer for Both<A, B> {
    fn manifest(&mut self, member: &str, manifest: neff::loader::Manifest<'_>) {
        self.0.manifest(member, manifest);
        self.1.manifest(member, manifest);
    }
    fn entry(&mut self, member: &str, entry: &neff::manifest::Entry<'_>) {
        self.0.entry(member, entry);
        self.1.entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &neff::manifest::IoTensor<'_>) {
        self.0.io_tensor(tensor);
        self.1.io_tensor(tensor);
    }
    fn payload(&mut self, payload: &neff::loader::PayloadReport<'_>) {
        self.0.payload(payload);
        self.1.payload(payload);
    }
    fn subgraph(&mut self, subgraph: &neff::loader::SubgraphReport<'_>) {
        self.0.subgraph(subgraph);
        self.1.subgraph(subgraph);
    }
    fn member(&mut self, member: &neff::loader::MemberReport<'_>) -> bool {
        // Both are asked; the body goes to both when either asked (each ignores what it did
        // not ask for: the observers here ask for none).
        let first = self.0.member(member);
        self.1.member(member) | first
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        self.0.member_bytes(bytes);
        self.1.member_bytes(bytes);
    }
    fn member_end(&mut self) {
        self.0.member_end();
        self.1.member_end();
    }
    fn debug(&mut self, line: &neff::loader::DebugLine<'_>) {
        self.0.debug(line);
        self.1.debug(line);
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &neff::manifest::KbinDmaHeader) {
        self.0.dma_queue(member, name, queue);
        self.1.dma_queue(member, name, queue);
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &neff::manifest::SbCarveout) {
        self.0.carveout(member, index, carveout);
        self.1.carveout(member, index, carveout);
    }
    fn subgraph_tables(&mut self, member: &str, tables: &neff::loader::SubgraphTables) {
        self.0.subgraph_tables(member, tables);
        self.1.subgraph_tables(member, tables);
    }
}

/// Runs `pass` on a thread with a large stack ([`LOADER_STACK`]).
///
/// A caller that keeps its warnings ([`crate::error::capture_warnings`]: one of several files
/// checked at once) gets the pass's warnings kept too, in the order they were raised.
fn spawn<T: Send + 'static>(pass: impl FnOnce() -> Result<T, CliError> + Send + 'static) -> Result<T, CliError> {
    let keep = crate::error::capturing_warnings();
    let worker = std::thread::Builder::new()
        .name("neff-loader".into())
        .stack_size(LOADER_STACK)
        .spawn(move || if keep { crate::error::capture_warnings(pass) } else { (pass(), Vec::new()) })
        .map_err(|e| CliError::usage(format!("cannot start the loader thread: {e}")))?;
    match worker.join() {
        Ok((result, warnings)) => {
            crate::error::keep_warnings(warnings);
            result
        }
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// [`run_pass`], with the warnings raised before a refusal kept in its [`Fault`](crate::error::Fault).
///
/// A pass the caller lets ([`Work::replay_on_demand`]) over an input that can be read again
/// lends the loader no replay store: the members read before the manifest naming them (the
/// real training NEFFs' engine JSONs, megabytes) are read once and not copied, which spares
/// the walk the copy and a page fault per 4 KiB of it. Only when the chain named one of them
/// as another kind than it was read as (`Needs::replay_missed`; no real NEFF here does) does
/// a second pass read the input again with the store, and that pass's outcome stands; it
/// prints only the warnings the first did not.
fn run_here(
    source: InputSource,
    size: u64,
    work: Work,
    inflation: Inflation,
    extra: &mut dyn Observer,
) -> Result<Pass, CliError> {
    let mut warning_records = Vec::new();
    // An earlier pass's buffers, their pages mapped already, or new ones; kept again after a
    // pass that ended well.
    let mut lent = Lent::take();
    let records = &mut warning_records;
    let again = if work.replay_on_demand { source.again() } else { None };
    let shown = RefCell::new(Shown { keep: again.is_some(), ..Shown::default() });
    let mut missed = 0;
    let first = run_pass(
        source,
        size,
        &work,
        inflation.clone(),
        extra,
        &mut lent,
        again.is_none(),
        &shown,
        &mut missed,
        records,
    );
    let pass = match again {
        Some(again) if missed > 0 => {
            // The first pass's device and report go before the second's come.
            drop(first);
            records.clear();
            lent.empty_slots();
            shown.borrow_mut().again = true;
            let source = again.open().map_err(|e| {
                let path = match &again {
                    Again::File(path) => path.display().to_string(),
                    Again::Sample(_) => "the built-in sample".to_owned(),
                };
                CliError::Path { path, message: format!("cannot read it again: {e}") }
            })?;
            run_pass(source, size, &work, inflation, extra, &mut lent, true, &shown, &mut missed, records)
        }
        _ => first,
    };
    match pass {
        Ok(pass) => {
            lent.give_back(&pass.needs);
            Ok(pass)
        }
        Err(mut e) => {
            if let CliError::Rejected { fault: Some(fault), .. } = &mut e {
                fault.warnings = warning_records;
            }
            Err(e)
        }
    }
}

/// The warning lines a pass prints, each once over a first pass and a second one over the
/// same input: the first keeps what it printed only when a second may follow.
#[derive(Default)]
struct Shown {
    /// What the first pass printed, by line, with how many times.
    printed: HashMap<String, u32>,
    /// This is a first pass that a second may follow: it keeps what it prints.
    keep: bool,
    /// This is the second pass: what the first printed is not printed again.
    again: bool,
}

impl Shown {
    /// Prints `text` unless a first pass printed it already.
    fn print(&mut self, text: &str) {
        if self.again {
            if let Some(times) = self.printed.get_mut(text).filter(|times| **times > 0) {
                *times -= 1;
                return;
            }
        } else if self.keep {
            *self.printed.entry(text.to_owned()).or_default() += 1;
        }
        print_warning(text);
    }
}

/// One pass of the loader over `source`; `replay`: whether it is lent the replay store.
/// `missed` is set to the members the chain named as another kind whose bytes were not kept
/// (`Needs::replay_missed`), whatever the outcome.
#[allow(clippy::too_many_arguments)]
fn run_pass(
    source: InputSource,
    size: u64,
    work: &Work,
    inflation: Inflation,
    extra: &mut dyn Observer,
    lent: &mut Lent,
    replay: bool,
    shown: &RefCell<Shown>,
    missed: &mut u32,
    warning_records: &mut Vec<neff::Warning>,
) -> Result<Pass, CliError> {
    let Work { target, options, details, ref members, .. } = *work;
    let members = members.clone();
    let PassOptions { allow_legacy, verify, keep_going, keep_warning_records, .. } = options;
    let again = source.again();
    let mut warnings = Vec::new();
    let mut sink = |w: &neff::Warning| {
        // Asked for, a mismatch is the pass's error (with both values), not also a warning.
        if verify && matches!(w.kind, WarningKind::Header(HeaderWarning::IntegrityMismatch { .. })) {
            return;
        }
        let text = w.to_string();
        shown.borrow_mut().print(&text);
        warnings.push(text);
        if keep_warning_records {
            warning_records.push(*w);
        }
    };
    // The device memory is set up before the clock starts: the time is the load's.
    let mut memory = match target {
        Target::Memory { bytes, .. } => {
            let len = usize::try_from(bytes).map_err(|_| {
                CliError::usage(format!("--device-mem {bytes} does not fit in this host's address space"))
            })?;
            // Zeroed pages from the allocator: untouched pages cost no host memory.
            vec![0u8; len]
        }
        _ => Vec::new(),
    };
    // Zeroed pages too: a notebook is touched only as far as the load notes.
    let mut notebook = match target {
        Target::DigestOnly { notebook, .. } => vec![0u8; usize::try_from(notebook).unwrap_or(usize::MAX)],
        _ => Vec::new(),
    };
    let started = Instant::now();
    let open = OpenOptions { verify_integrity: verify, ..OpenOptions::default() };
    let mut archive = open_archive(source, size, &open, inflation, &mut sink)?;
    let header = HeaderView::from(archive.header());
    let core_header = *archive.header();
    let options = LoadOptions { allow_legacy, fp8: fp8_overrides()? };
    let mut loader = Box::new(Loader::with_storage(lent.storage(replay), options));
    let mut summary = LoadReport::new();
    let mut collected = Collected::new();
    // Every member's record and the captured ones, from the loader's own pass.
    let mut logger = members.map(MemberLogger::new);
    let mut no_log = neff::loader::NoObserver;
    let logging: &mut dyn Observer = match logger.as_mut() {
        Some(logger) => logger,
        None => &mut no_log,
    };
    let mut verbose = Verbose;
    let mut quiet = NoObserver;
    let verbosity: &mut dyn Observer = if VERBOSE.load(Ordering::Relaxed) { &mut verbose } else { &mut quiet };
    // `info`'s document, logged by the core as the C ABI's is.
    let mut info_log = details.then(|| InfoLog::new(GrowingLog::default()));
    let mut no_info = NoObserver;
    let info_observer: &mut dyn Observer = match info_log.as_mut() {
        Some(log) => log,
        None => &mut no_info,
    };
    let mut with_extra = Tee::new(info_observer, extra);
    let mut extras = Tee::new(verbosity, &mut with_extra);
    let mut others = Tee::new(logging, &mut extras);
    let mut observer = Tee::new(&mut collected, &mut others);
    let mut refusal = None;
    let device = match target {
        Target::Check(arch) => match loader.check(&mut *archive, arch, &mut summary, &mut observer, &mut sink) {
            Ok(()) => Ok(None),
            // The archive is sound: what the manifests refuse is shown, and the walk goes on.
            Err(e) if keep_going && !matches!(e.stage, Stage::Io | Stage::Header | Stage::Gzip | Stage::Tar) => {
                let (line, _) = whole_line(&loader, &e, again.as_ref());
                shown.borrow_mut().print(&format!("refused: {line}"));
                refusal = Some(line);
                Ok(None)
            }
            Err(e) => Err(whole(&loader, e, again.as_ref())),
        },
        // The device's own arch field is the pinned one or the default; what the loader sees
        // is the wrapper's (`LearntArch`), which may learn the NEFF's target.
        Target::Memory { arch, .. } => {
            let (l, a, backing) = (&mut *loader, &mut *archive, DeviceBacking::Memory(&mut memory));
            load_onto(l, a, backing, arch, &mut summary, &mut observer, &mut sink, again.as_ref()).map(Some)
        }
        Target::DigestOnly { arch, capacity, .. } => {
            let backing = DeviceBacking::DigestOnly { capacity, notebook: &mut notebook };
            let (l, a) = (&mut *loader, &mut *archive);
            load_onto(l, a, backing, arch, &mut summary, &mut observer, &mut sink, again.as_ref()).map(Some)
        }
    };
    let elapsed = started.elapsed();
    // Taken whatever the outcome: a failed pass says too whether a store would have changed it.
    let needs = loader.needs();
    *missed = needs.replay_missed.unwrap_or(0);
    let device = device?;
    // The loader finished the archive; asking again returns the same figures.
    let finish = archive.finish(&mut sink)?;
    drop(archive);
    let members = logger.map(MemberLogger::finish);
    if verify {
        if let Some(e) = crate::integrity::mismatch_error(&finish.integrity) {
            return Err(e);
        }
    }
    let report = Box::new(HostReport {
        summary,
        // In tar order, as the core's reports are not (weights come last).
        payloads: {
            let mut payloads = std::mem::take(&mut collected.payloads);
            payloads.sort_by_key(|p| p.seq);
            payloads
        },
        subgraphs: std::mem::take(&mut collected.subgraphs),
    });
    let warning_records = std::mem::take(warning_records);
    let info = info_log.map(|log| InfoLogged { log, header: core_header });
    Ok(Pass {
        header,
        report,
        collected,
        device,
        finish,
        elapsed,
        warnings,
        warning_records,
        members,
        refusal,
        needs,
        info,
    })
}

/// The device arch of a command-line `--arch` (its `From` is beside the flag, so the passes
/// know no command line).
pub fn arch_of(arch: impl Into<Arch>) -> Arch {
    arch.into()
}

/// The names a person gives each arch (`--arch`, Python's `arch=`: codename, version or
/// instance family), one group per arch in schema order: `sunda|v2|trn1|inf2`, ... The names
/// are [`Arch::NAMES`], from `schema/maps.toml`; [`Arch::from_name`] takes each.
pub fn arch_name_groups() -> Vec<String> {
    arch_names().into_iter().map(|names| names.join("|")).collect()
}

/// The core's arch names, one list per arch in `Arch::ALL` order, its codename first.
pub fn arch_names() -> Vec<Vec<&'static str>> {
    Arch::ALL.iter().map(|arch| Arch::NAMES.iter().filter(|(_, a)| a == arch).map(|(n, _)| *n).collect()).collect()
}
