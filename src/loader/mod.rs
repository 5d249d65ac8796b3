//! The single-pass loader: reads every member once, streams payloads to the device, binds the
//! chain.
//!
//! One pass over the archive, in tar order, as stages:
//!
//! - [`walk`](self) dispatches each member: a manifest goes to its generated parser, whose
//!   streamed entries (vars, queues, nodes, ...) go to the caller's [`Observer`] while the few
//!   names binding needs are recorded in the chain's index; a payload streams to the device.
//!   What a member *is* comes from the manifest that names it (spec §15.18); a JSON member met
//!   before that manifest is parsed speculatively by its name and its outcome kept, an error
//!   included, until the chain reaches it (or never reports it, if the chain never does).
//! - `dma` resolves the DMA names of engine JSONs and definitions (spec §8.2) in whichever
//!   order they come, keeping only what that order makes necessary;
//! - [`place`] writes payloads through the [`Hal`]: into their final region
//!   when the manifests read so far give them a role, else into staging, adopted later;
//! - `bind`, once the archive is finished, walks the chain from `neff.json`: the KELF target
//!   gate, the target's architecture rules (§15.19), every named member present and readable,
//!   instruction and weight sizes; it places what was staged, releases what nothing
//!   references, and reports each placement to the observer.
//!
//! What grows with the model lives in the arena the caller lends ([`Loader::new`]), and so
//! does the tokenizer's string scratch (split off its front); the loader's own state is fixed:
//! one manifest's scalar keys, the tokenizer's state, and a few deferred errors. A check
//! without a device is a load onto a [`NullDevice`].
//!
//! Every loader module denies `clippy::arithmetic_side_effects`: sizes, offsets and
//! alignments from the NEFF go through checked arithmetic ending in a typed error, and the
//! byte counts of what a member's reader delivered saturate (they cannot reach 2^64).
#![deny(clippy::arithmetic_side_effects)]

mod bind;
pub mod chain;
mod dma;
mod index;
pub mod place;
mod read;
mod replay;
pub mod report;
mod walk;
mod whole;

use embedded_io::BufRead;

pub use chain::{ChainError, ChainWarning};
use index::Scratch;
pub use index::{
    dir_of, dir_of_bytes, is_joined_bytes, named_by, ManifestKind, Names, Tier, INSTR_ALIGN, KELF_FALLBACK_NAMES,
};
pub use report::{
    DebugLine, JsonLines, LoadReport, Manifest, MemberReport, NoObserver, Observer, PayloadReport, PayloadState,
    SubgraphReport, SubgraphTables,
};

use crate::archive::Archive;
use crate::arena::{Arena, NIL};
use crate::error::{Warning, WarningSink};
use crate::hal::{Hal, NullDevice, RegionId};
use crate::json::Tokenizer;
use crate::manifest::neff::KelfMark;
use crate::manifest::{Arch, STRING_SCRATCH};
use crate::Error;
use index::Index;
pub use whole::Whole;
use whole::WholeNames;

/// Errors of speculative reads kept until the chain reaches their member, in the loader's own
/// slots; a caller may lend more ([`Loader::with_storage`]). A slot is free again once the
/// chain settles what its member is. A failed read past the slots is still refused when
/// reached, with a capacity error naming `DEFERRED_ERRORS`; one never reached costs nothing.
pub const DEFERRED_ERRORS: usize = 4;

/// The deferred errors: the loader's own slots, then the lent ones. A slot id is a `u16`.
struct Deferred<'a> {
    own: [Option<Error>; DEFERRED_ERRORS],
    lent: &'a mut [Option<Error>],
    /// Errors kept now (or that would be, had there been a slot), and the most at once.
    in_use: usize,
    peak: usize,
}

impl Deferred<'_> {
    /// Keeps `e`, returning its slot, or [`index::NO_SLOT`] when every slot is taken.
    fn keep(&mut self, e: Error) -> u16 {
        self.in_use = self.in_use.saturating_add(1);
        self.peak = self.peak.max(self.in_use);
        let free = self.own.iter_mut().chain(self.lent.iter_mut()).enumerate().find(|(_, s)| s.is_none());
        match free {
            Some((i, slot)) if i < usize::from(index::NO_SLOT) => {
                *slot = Some(e);
                u16::try_from(i).unwrap_or(index::NO_SLOT)
            }
            _ => index::NO_SLOT,
        }
    }

    fn get(&self, slot: u16) -> Option<&Error> {
        self.own.iter().chain(self.lent.iter()).nth(usize::from(slot))?.as_ref()
    }

    /// Frees a slot whose member the chain has settled.
    fn free(&mut self, slot: u16) {
        if let Some(s) = self.own.iter_mut().chain(self.lent.iter_mut()).nth(usize::from(slot)) {
            if s.take().is_some() {
                self.in_use = self.in_use.saturating_sub(1);
            }
        }
    }

    /// Slots in all.
    fn capacity(&self) -> usize {
        DEFERRED_ERRORS.saturating_add(self.lent.len())
    }

    fn clear(&mut self) {
        self.own.iter_mut().chain(self.lent.iter_mut()).for_each(|s| *s = None);
        (self.in_use, self.peak) = (0, 0);
    }
}

/// The member being read, as its stages pass it on: the walk fills it from the tar header.
#[derive(Debug, Clone, Copy)]
pub(super) struct MemberAt<'n> {
    /// Its path in the archive.
    pub name: &'n str,
    /// Its size, from its tar header.
    pub len: u64,
    /// Its number among the payload members, were it one (a payload report's `seq`).
    pub seq: u32,
}

/// The longest member path the loader handles: the tar layer's name capacity.
pub const MEMBER_PATH: usize = crate::tar::DEFAULT_NAME_CAPACITY;

/// What one load needed of each buffer a caller lends ([`Loader::needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Needs {
    /// Bytes of [`Storage::arena`]: the tokenizer's string scratch plus the records' peak.
    pub arena: u64,
    /// Bytes of [`Storage::replay`] in use at once (0: a load without a replay store reads
    /// every member once).
    pub replay: u64,
    /// Bytes of the device's notebook ([`Hal::notebook_len`]) used: landings from its start
    /// plus pending DMA references from its end, each at its peak (what did not fit went to
    /// the arena, and is counted there).
    pub notebook: u64,
    /// Deferred-error slots in use at once, the loader's own [`DEFERRED_ERRORS`] included
    /// ([`Storage::deferred`] lends the rest).
    pub deferred: u32,
}

/// How a load behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoadOptions {
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1`: a NEFF for an older architecture may load, and a
    /// cayman `def.json` may lack its state-buffer carveout.
    pub allow_legacy: bool,
    /// The runtime's debug overrides of each subgraph's `fp8_conversion_config`
    /// (`NEURON_RT_DBG_FP8_*`, `NEURON_RT_DBG_OCP_FP8_SAT`), applied to the config handed to the
    /// observer.
    pub fp8: crate::manifest::def::Fp8Overrides,
}

/// What a caller lends a [`Loader`]: the memory that grows with a model, bounded by what
/// the caller gives.
#[derive(Debug)]
pub struct Storage<'a> {
    /// What binding must remember (names, records): 3,035 to 3,435 bytes of records for the
    /// twelve public real NEFFs, up to 36,723 for the real training NEFFs here (the `neff.json`
    /// I/O join of 1,312 tensors), with a notebook on the device; [`LoadReport::arena_peak`]
    /// says what a NEFF took, and [`Loader::needs`] what each lent buffer took.
    ///
    /// Its first [`STRING_SCRATCH`] bytes are the tokenizer's string scratch (the longest
    /// string a manifest value may hold), the rest the records: lend
    /// `STRING_SCRATCH + arena_peak` bytes. A shorter arena is no error by itself: the
    /// tokenizer gets all of it, so the records get nothing ([`ErrorKind::ArenaFull`]
    /// at the first one) and a string longer than the arena is refused as too long for the
    /// scratch.
    ///
    /// [`ErrorKind::ArenaFull`]: crate::ErrorKind::ArenaFull
    pub arena: &'a mut [u8],
    /// The bytes of each member read before the manifest naming it (the tar order need not
    /// be the chain's). Such a member is read at once as the manifest its name suggests; if
    /// the chain then names it as another kind, it is read again from here, so no name
    /// decides what a member is (spec §15.18). A member whose bytes do not fit is read once,
    /// and refused (capacity `REPLAY`) only if the chain names it as another kind. Its bytes
    /// leave as soon as the chain names it. Empty: none kept.
    pub replay: &'a mut [u8],
    /// Slots for errors of reads the chain may still reach, past the loader's own
    /// [`DEFERRED_ERRORS`].
    pub deferred: &'a mut [Option<Error>],
    /// Room for the whole member names and key paths of failures, where an [`Error`] keeps
    /// a 128-byte tail and a 96-byte head ([`Loader::whole_names`]). A few KiB is plenty; a
    /// failure that does not fit prints as it would without it. Empty: none kept (firmware).
    /// Only with the `whole-names` feature (a default; a build without it ignores the buffer).
    pub whole_names: &'a mut [u8],
}

/// The loader: fixed state plus the storage the caller lends. See the module docs.
pub struct Loader<'a> {
    options: LoadOptions,
    tok: Tokenizer<'a>,
    scratch: Scratch,
    arena: Arena<'a>,
    index: Index,
    deferred: Deferred<'a>,
    /// Staged copies of members read both ways ([`walk`]) that still hold a device region.
    either_staged: u32,
    /// The lent replay store: the bytes of members read before anything named them, kept to
    /// read them again if the chain names them as another kind ([`Storage::replay`]).
    replay: &'a mut [u8],
    /// Bytes of `replay` in use.
    replay_used: usize,
    /// The most bytes of `replay` in use at once.
    replay_peak: usize,
    /// How `neff.json` marks its KELF nodes (`None` before it is read).
    kelf_mark: Option<KelfMark>,
    /// Without `neff.json`: the KELF found by its conventional name.
    fallback_kelf: Option<u32>,
    device_arch: Option<Arch>,
    lnc_size: u32,
    /// Inputs and outputs of the last `neff.json`.
    io_counts: (u32, u32),
    /// The NEFF's name, from its header (the runtime's messages name it).
    neff_name: chain::MemberText,
    /// Whole names of the failures seen ([`Storage::whole_names`]).
    whole: WholeNames<'a>,
}

/// Bytes of the loader's own state (without the arena it borrows). One load also needs the
/// archive reader ([`ARCHIVE_SIZE`]); together they are [`LOAD_FOOTPRINT`].
pub const LOADER_SIZE: usize = core::mem::size_of::<Loader<'static>>();

/// Bytes of the archive reader over a byte slice (inflate window, decompressor, tar buffers).
pub const ARCHIVE_SIZE: usize = core::mem::size_of::<Archive<&[u8]>>();

/// Bytes of fixed memory one load takes besides the arena: loader state plus archive reader.
pub const LOAD_FOOTPRINT: usize = LOADER_SIZE + ARCHIVE_SIZE;

// One load fits a management controller's budget whatever the model: what grows is in the
// arena, whose size the caller chooses. A change that breaks this fails the firmware build.
// Hosted targets read single values (names, paths) into larger slots (`manifest::cap`).
#[cfg(target_os = "none")]
const _: () = assert!(LOAD_FOOTPRINT < 64 * 1024);

/// Counts the warnings that pass through to the caller's sink.
struct Counting<'s, S: WarningSink + ?Sized> {
    sink: &'s mut S,
    count: u32,
}

impl<S: WarningSink + ?Sized> WarningSink for Counting<'_, S> {
    #[inline(never)]
    fn warn(&mut self, warning: &Warning) {
        self.count = self.count.saturating_add(1);
        self.sink.warn(warning);
    }
}

/// The names ending with `tail` seen so far: the first, and whether another differs from it.
struct TailMatch<'n> {
    tail: &'n str,
    found: Option<&'n str>,
    shared: bool,
}

impl<'n> TailMatch<'n> {
    fn consider(&mut self, name: &'n str) {
        if name.as_bytes().ends_with(self.tail.as_bytes()) {
            match self.found {
                None => self.found = Some(name),
                Some(first) => self.shared |= first != name,
            }
        }
    }
}

impl<'a> Loader<'a> {
    /// A loader keeping what binding needs in `arena` ([`Storage::arena`] gives figures; see
    /// [`LoadReport::arena_peak`] for what a NEFF took), after the tokenizer's string scratch,
    /// its first [`STRING_SCRATCH`] bytes ([`Storage::arena`]).
    pub fn new(arena: &'a mut [u8], options: LoadOptions) -> Self {
        Self::with_storage(Storage { arena, replay: &mut [], deferred: &mut [], whole_names: &mut [] }, options)
    }

    /// A loader with the storage the caller lends ([`Storage`]).
    pub fn with_storage(storage: Storage<'a>, options: LoadOptions) -> Self {
        let Storage { arena, replay, deferred, whole_names } = storage;
        // The scratch is lent like the records, so the loader's own size does not grow with
        // the longest string; `min` keeps a short arena from panicking (see `Storage::arena`).
        let (scratch, arena) = arena.split_at_mut(arena.len().min(STRING_SCRATCH));
        Self {
            options,
            tok: Tokenizer::new(scratch, crate::manifest::DEPTH_LIMIT),
            scratch: Scratch::Empty,
            arena: Arena::new(arena),
            index: Index::default(),
            deferred: Deferred { own: [None; DEFERRED_ERRORS], lent: deferred, in_use: 0, peak: 0 },
            either_staged: 0,
            replay,
            replay_used: 0,
            replay_peak: 0,
            kelf_mark: None,
            fallback_kelf: None,
            device_arch: None,
            lnc_size: 1,
            io_counts: (0, 0),
            neff_name: chain::MemberText::EMPTY,
            whole: WholeNames::new(whole_names),
        }
    }

    /// `e` (an error the last load returned) with its member name and key path whole where the
    /// loader noted them in [`Storage::whole_names`]; its `Display` is the error's own, with
    /// those names in place of the error's fixed texts.
    pub fn whole_names<'e>(&'e self, e: &'e Error) -> Whole<'e> {
        self.whole.of(e)
    }

    /// The directories of the definitions read in the last load that name engine JSON
    /// `member`: the directory the engine JSON's own names are resolved in (spec §4), which is
    /// not its own when it sits below it. For a host that reads a refusal's names again.
    #[cfg(feature = "whole-names")]
    pub fn definition_dirs_of<'s>(&'s self, member: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.index.def_dirs_of(&self.arena, member)
    }

    /// Bytes of the lent arena left for the records, after the tokenizer's string scratch.
    pub fn arena_capacity(&self) -> usize {
        self.arena.capacity()
    }

    /// Loads the archive onto `hal`: every payload lands in a device region with its usage
    /// class; `report` receives the summary and `observer` every placement. On error, every
    /// region this load allocated is released again.
    pub fn load<R: BufRead, H: Hal>(
        &mut self,
        archive: &mut Archive<R>,
        hal: &mut H,
        report: &mut LoadReport,
        observer: &mut impl Observer,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.reset(hal.device_arch(), archive.header().lnc_size);
        // Landings take the notebook from its start, pending DMA references from its end.
        self.index.landings = index::Landings::new(hal.notebook_len());
        self.index.pending = dma::Pending::new(hal.notebook_len());
        self.neff_name = chain::MemberText::from_bytes_lossy(archive.header().name().0);
        report.clear();
        let mut sink = Counting { sink, count: 0 };
        // One result slot for the three stages (an `Error` is ~300 bytes a slot).
        let mut result = self.walk(archive, hal, report, observer, &mut sink);
        if result.is_ok() {
            result = finish_archive(archive, report, &mut sink);
        }
        if result.is_ok() {
            result = self.bind(hal, report, observer, &mut sink);
        }
        report.device_arch = self.device_arch;
        report.warnings = sink.count;
        (report.inputs, report.outputs) = self.io_counts;
        report.arena_peak = self.arena.peak() as u64;
        self.scratch = Scratch::Empty;
        if let Err(e) = &result {
            self.note_kept_name(e, archive.last_member_name());
            self.release_all(hal);
        }
        result
    }

    /// [`Index::role_of`] for the chain this load selected. Not inlined: one copy of the
    /// five-argument call for the five places that ask (flash on a controller).
    #[inline(never)]
    fn role_of(&self, member: &str) -> Option<index::Role> {
        self.index.role_of(&self.arena, member, self.kelf_mark, self.fallback_kelf)
    }

    /// Notes the whole name of the member `e` is about, where nothing noted it while it was
    /// read: the archive's last member (`last`), or a member the index keeps (a manifest, a
    /// payload) for an error found once the chain was bound.
    #[cold]
    #[inline(never)]
    fn note_kept_name(&mut self, e: &Error, last: &str) {
        if !cfg!(feature = "whole-names") || !e.member.is_elided() || self.whole.of(e).member().is_some() {
            return;
        }
        let (arena, tail) = (&self.arena, e.member.as_str());
        // Only a name no other shares the tail with: two directories can differ in their
        // first bytes alone.
        let mut seen = TailMatch { tail, found: None, shared: false };
        seen.consider(last);
        self.index.manifests.iter(arena).for_each(|(_, m)| seen.consider(arena.str(m.member)));
        self.index.payloads.iter(arena).for_each(|(_, p)| seen.consider(arena.str(p.member)));
        if let TailMatch { found: Some(name), shared: false, .. } = seen {
            self.whole.note(name, None, None);
        }
    }

    /// What the last load needed of each buffer the caller lends, measured as it ran: lend
    /// these and the same NEFF loads again (the stack it needs is apart: see the firmware and
    /// the C ABI's stack figures). A measuring pass lends generous buffers (a host's virtual
    /// memory is touched only as far as it is used) and reads this afterwards; a load that
    /// stopped early needed at least these.
    pub fn needs(&self) -> Needs {
        Needs {
            arena: (STRING_SCRATCH as u64).saturating_add(self.arena.peak() as u64),
            replay: self.replay_peak as u64,
            notebook: self.index.landings.floor().saturating_add(self.index.pending.far_peak()),
            deferred: u32::try_from(self.deferred.peak).unwrap_or(u32::MAX),
        }
    }

    /// Everything a load checks, with no device: payloads are read, digested and checked
    /// (`.npy` headers, sizes) but stored nowhere. `arch`, when given, applies the target
    /// gate; the KELF target's architecture rules apply either way.
    pub fn check<R: BufRead>(
        &mut self,
        archive: &mut Archive<R>,
        arch: Option<Arch>,
        report: &mut LoadReport,
        observer: &mut impl Observer,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.load(archive, &mut NullDevice::new(arch), report, observer, sink)
    }

    fn reset(&mut self, device_arch: Option<Arch>, lnc_size: u32) {
        self.arena.clear();
        self.index = Index::default();
        self.deferred.clear();
        self.either_staged = 0;
        self.replay_used = 0;
        self.replay_peak = 0;
        self.kelf_mark = None;
        self.fallback_kelf = None;
        self.device_arch = device_arch;
        self.lnc_size = lnc_size.max(1);
        self.io_counts = (0, 0);
        self.scratch = Scratch::Empty;
        self.whole.clear();
    }

    /// Gives back every device region the last [`load`](Self::load) left live, as its failure
    /// would have: for a caller that refuses a load after it succeeded (the C ABI, when the
    /// report it was asked for does not fit its buffer). Call it before the next load, once.
    pub fn unload<H: Hal>(&mut self, hal: &mut H) {
        self.release_all(hal);
    }

    /// Leaves the device as it was: releases every region this load still holds. (A landing
    /// the device's notebook cannot give back is skipped: its region, if any, stays.)
    fn release_all<H: Hal>(&mut self, hal: &mut H) {
        // Nothing reads the landings after a failed load: they are left as they are.
        let (arena, index) = (&self.arena, &self.index);
        let mut release = |slot: u32| {
            if let Ok(landing) = index.landings.get(hal, arena, slot) {
                if landing.region != NIL {
                    let _ = hal.release(RegionId(landing.region));
                }
            }
        };
        index.payloads.iter(arena).for_each(|(_, p)| release(p.landed));
        index.find_var(arena, &mut |_, v| {
            if v.has_landed() {
                release(v.landed);
            }
            false
        });
    }
}

/// The archive's closing checks (CRC-32, padding, the integrity digest) into `report`. A frame
/// of its own: the closing figures and their `Result` (an `Error` is ~300 bytes) would
/// otherwise hold stack in the frame that binds the chain, the firmware's deepest.
#[inline(never)]
fn finish_archive<R: BufRead>(
    archive: &mut Archive<R>,
    report: &mut LoadReport,
    sink: &mut impl WarningSink,
) -> Result<(), Error> {
    let finish = archive.finish(sink)?;
    report.finish(&finish);
    Ok(())
}
