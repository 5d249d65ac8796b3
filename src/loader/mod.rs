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
//! The loader's state is three values, each owned by the stage that changes it and lent to
//! the others by argument, so a signature says what a stage touches:
//!
//! - `Reader` (`read`): the tokenizer and the document being read;
//! - `Book` (`book`): what binding must remember — the records in the lent arena and the
//!   index over them, the errors kept for the chain, the chain's marks. `place` and `bind`
//!   are what the book does with the device;
//! - `Replays` (`replay`): the bytes of members read before anything named them.
//!
//! [`Loader::load`] reads top-down: the walk (`Walk`, the one place the three meet, lent them
//! for the pass), the archive's closing checks, then `Book::bind`.
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
mod book;
pub mod chain;
mod dma;
mod index;
mod pass;
pub mod place;
mod read;
mod replay;
pub mod report;
mod walk;
mod whole;

use embedded_io::BufRead;

pub use chain::{ChainError, ChainWarning};
pub use index::{
    dir_of, dir_of_bytes, is_joined_bytes, named_by, ManifestKind, Names, Tier, INSTR_ALIGN, KELF_FALLBACK_NAMES,
};
pub use report::{
    DebugLine, JsonLines, LoadReport, Manifest, MemberReport, NoObserver, Observer, PayloadReport, PayloadState,
    SubgraphReport, SubgraphTables,
};

use crate::archive::Archive;
use crate::error::WarningSink;
use crate::hal::{Hal, NullDevice};
use crate::json::Tokenizer;
use crate::manifest::{Arch, STRING_SCRATCH};
use crate::Error;
use book::Book;
pub use book::{LoadOptions, DEFERRED_ERRORS};
use pass::Counting;
pub use pass::MEMBER_PATH;
use read::Reader;
use replay::Replays;
use walk::Walk;
pub use whole::Whole;

/// What one load needed of each buffer a caller lends ([`Loader::needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Needs {
    /// Bytes of [`Storage::arena`]: the tokenizer's string scratch plus the records' peak.
    pub arena: u64,
    /// Bytes of [`Storage::replay`] in use at once (0: a load without a replay store reads
    /// every member once).
    pub replay: u64,
    /// Members the chain names as another kind than they were read as, whose bytes the replay
    /// store did not hold for a second reading: each is refused where the chain reaches it.
    /// 0 means the store lent changed nothing: a load lent more would have gone as this one
    /// did. So a host may lend none first (no copy of the members read before the manifest
    /// naming them), and load again with a store only when this is not 0. `None` where not
    /// counted: a bare-metal build (`target_os = "none"`), whose flash has no room for the
    /// scan (192 bytes of the C image's).
    pub replay_missed: Option<u32>,
    /// Bytes of the device's notebook ([`Hal::notebook_len`]) used: landings from its start
    /// plus pending DMA references from its end, each at its peak (what did not fit went to
    /// the arena, and is counted there).
    pub notebook: u64,
    /// Deferred-error slots in use at once, the loader's own [`DEFERRED_ERRORS`] included
    /// ([`Storage::deferred`] lends the rest).
    pub deferred: u32,
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
    /// and refused only if the chain names it as another kind (`ChainError::ReadAsOther`,
    /// counted in [`Needs::replay_missed`]). Its bytes
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
    /// The manifest reader: the tokenizer and the document being read.
    reader: Reader<'a>,
    /// What binding must remember: the records and the chain's marks.
    book: Book<'a>,
    /// The bytes of members read before anything named them.
    replays: Replays<'a>,
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
            reader: Reader::new(Tokenizer::new(scratch, crate::manifest::DEPTH_LIMIT)),
            book: Book::new(options, arena, deferred, whole_names),
            replays: Replays::new(replay),
        }
    }

    /// `e` (an error the last load returned) with its member name and key path whole where the
    /// loader noted them in [`Storage::whole_names`]; its `Display` is the error's own, with
    /// those names in place of the error's fixed texts.
    pub fn whole_names<'e>(&'e self, e: &'e Error) -> Whole<'e> {
        self.book.whole.of(e)
    }

    /// The directories of the definitions read in the last load that name engine JSON
    /// `member`: the directory the engine JSON's own names are resolved in (spec §4), which is
    /// not its own when it sits below it. For a host that reads a refusal's names again.
    #[cfg(feature = "whole-names")]
    pub fn definition_dirs_of<'s>(&'s self, member: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.book.index.def_dirs_of(&self.book.arena, member)
    }

    /// Bytes of the lent arena left for the records, after the tokenizer's string scratch.
    pub fn arena_capacity(&self) -> usize {
        self.book.arena.capacity()
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
        self.book.reset(hal.device_arch(), archive.header().lnc_size);
        self.replays.reset();
        // Landings take the notebook from its start, pending DMA references from its end.
        self.book.index.landings = index::Landings::new(hal.notebook_len());
        self.book.index.pending = dma::Pending::new(hal.notebook_len());
        self.book.neff_name = chain::MemberText::from_bytes_lossy(archive.header().name().0);
        report.clear();
        let mut sink = Counting { sink, count: 0 };
        // One result slot for the three stages (an `Error` is ~300 bytes a slot).
        let walk = Walk { reader: &mut self.reader, book: &mut self.book, replays: &mut self.replays };
        let mut result = walk.run(archive, hal, report, observer, &mut sink);
        if result.is_ok() {
            result = finish_archive(archive, report, &mut sink);
        }
        if result.is_ok() {
            result = self.book.bind(hal, report, observer, &mut sink);
        }
        let book = &mut self.book;
        report.device_arch = book.device_arch;
        report.warnings = sink.count;
        (report.inputs, report.outputs) = book.io_counts;
        report.arena_peak = book.arena.peak() as u64;
        self.reader.clear();
        if let Err(e) = &result {
            book.note_kept_name(e, archive.last_member_name());
            book.release_all(hal);
        }
        result
    }

    /// The arena's reads during the last load ([`Arena::reads`](crate::arena::Arena::reads)):
    /// its lookups' cost, the same on any machine.
    #[cfg(feature = "read-count")]
    pub fn arena_reads(&self) -> u64 {
        self.book.arena.reads()
    }

    /// What the last load needed of each buffer the caller lends, measured as it ran: lend
    /// these and the same NEFF loads again (the stack it needs is apart: see the firmware and
    /// the C ABI's stack figures). A measuring pass lends generous buffers (a host's virtual
    /// memory is touched only as far as it is used) and reads this afterwards; a load that
    /// stopped early needed at least these.
    pub fn needs(&self) -> Needs {
        Needs {
            arena: (STRING_SCRATCH as u64).saturating_add(self.book.arena.peak() as u64),
            replay: self.replays.peak() as u64,
            #[cfg(not(target_os = "none"))]
            replay_missed: Some(self.book.index.read_as_other(&self.book.arena)),
            #[cfg(target_os = "none")]
            replay_missed: None,
            notebook: self.book.index.landings.floor().saturating_add(self.book.index.pending.far_peak()),
            deferred: u32::try_from(self.book.deferred.peak()).unwrap_or(u32::MAX),
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

    /// Gives back every device region the last [`load`](Self::load) left live, as its failure
    /// would have: for a caller that refuses a load after it succeeded (the C ABI, when the
    /// report it was asked for does not fit its buffer). Call it before the next load, once.
    pub fn unload<H: Hal>(&mut self, hal: &mut H) {
        self.book.release_all(hal);
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
