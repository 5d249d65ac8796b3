//! The buffers a pass lends its loader, kept for the next pass of the process.
//!
//! A fresh buffer costs a page fault for each page the load first touches (on the hosts we
//! measured, 3 to 5 µs each: the real training NEFF's replay store alone is 824 pages). The
//! verbs that read many NEFFs (`check FILE...`, `cache`) run one pass per NEFF, so each pass
//! takes the buffers the last one gave back, with their pages already mapped. The core reads
//! nothing it did not write in the same load (a caller may lend any bytes); only the
//! deferred-error slots must start empty, and are emptied when given back.

use std::sync::Mutex;

use neff::loader::{Needs, Storage};

/// The arena lent to the loader: 256 MiB of address space, of which a load touches only what
/// it uses (`LoadReport::arena_peak`: a few KiB for the real NEFFs).
pub const ARENA_BYTES: usize = 256 << 20;
/// The replay store lent to the loader: 256 MiB of address space for the bytes of members met
/// before the manifest naming them, kept until the chain names them (touched only as far as
/// they need: the JSON members of a NEFF, at most).
pub const REPLAY_BYTES: usize = 256 << 20;
/// Error slots lent to the loader for members read before the manifest naming them, whose
/// reading failed (kept until the chain says whether it reaches them; 296 bytes each). Every
/// slot is written when lent (each page a page fault, before the walk starts), and a slot only
/// keeps a failed member's own message: past the slots, a reached failure is still refused,
/// naming `DEFERRED_ERRORS`. The real NEFFs here use none (`neff load --budget`: 0 slots).
pub const DEFERRED_SLOTS: usize = 256;
/// Room for the whole member names and key paths of failures (`Storage::whole_names`): error
/// lines print them whole however long they are (a PAX path can run to thousands of bytes).
pub const WHOLE_NAMES_BYTES: usize = 1 << 20;

/// The most bytes of arena and replay store a pass may have used for its buffers to be kept:
/// a NEFF with more JSON than this gives its pages back to the system rather than holding them
/// for the life of the process (a Python session, say).
pub const KEEP_AT_MOST: u64 = 16 << 20;

/// Buffers kept for later passes: at most one per core, as many passes run at once.
static KEPT: Mutex<Vec<Lent>> = Mutex::new(Vec::new());

/// The buffers of one pass: allocated zeroed (pages never touched cost nothing), or taken
/// from an earlier pass.
pub struct Lent {
    arena: Vec<u8>,
    replay: Vec<u8>,
    deferred: Vec<Option<neff::Error>>,
    whole_names: Vec<u8>,
}

impl Lent {
    /// Buffers an earlier pass gave back, or new ones.
    pub fn take() -> Self {
        let kept = KEPT.lock().ok().and_then(|mut kept| kept.pop());
        kept.unwrap_or_else(Self::take_new)
    }

    /// New buffers, zeroed by the allocator.
    fn take_new() -> Self {
        Self {
            arena: vec![0u8; ARENA_BYTES],
            replay: vec![0u8; REPLAY_BYTES],
            deferred: vec![None; DEFERRED_SLOTS],
            whole_names: vec![0u8; WHOLE_NAMES_BYTES],
        }
    }

    /// The buffers as the loader borrows them; the replay store only when `replay` (a pass
    /// lent none reads each member once, and says whether that changed anything:
    /// `Needs::replay_missed`).
    pub fn storage(&mut self, replay: bool) -> Storage<'_> {
        Storage {
            arena: &mut self.arena,
            replay: if replay { &mut self.replay } else { &mut [] },
            deferred: &mut self.deferred,
            whole_names: &mut self.whole_names,
        }
    }

    /// Keeps these buffers for a later pass, after a pass that `needed` what it says (a pass
    /// that failed gives none: its buffers are dropped), unless it used more than
    /// [`KEEP_AT_MOST`] or as many buffers as cores are kept already.
    pub fn give_back(mut self, needed: &Needs) {
        if !worth_keeping(needed) {
            return;
        }
        self.empty_slots();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Ok(mut kept) = KEPT.lock() {
            if kept.len() < cores {
                kept.push(self);
            }
        }
    }

    /// The deferred-error slots emptied, as a loader must be lent them (the other buffers may
    /// hold anything).
    pub(super) fn empty_slots(&mut self) {
        self.deferred.fill(None);
    }
}

/// Whether a pass that `needed` what it says used little enough of its buffers to keep them.
fn worth_keeping(needed: &Needs) -> bool {
    needed.arena.saturating_add(needed.replay) <= KEEP_AT_MOST
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inflate::Inflation;
    use crate::loading::{run_pass, Pass, PassOptions, Shown, Target, Work, LOADER_STACK};
    use crate::source::InputSource;

    /// Buffers of `bytes` each, every byte `fill`, as a pass leaves them.
    fn dirty(fill: u8, bytes: usize) -> Lent {
        Lent {
            arena: vec![fill; bytes],
            replay: vec![fill; bytes],
            deferred: vec![None; DEFERRED_SLOTS],
            whole_names: vec![fill; WHOLE_NAMES_BYTES],
        }
    }

    /// `info`'s pass over `source` on `lent`, its replay store lent.
    fn pass_on(source: InputSource, lent: &mut Lent) -> Pass {
        let size = source.size();
        let mut records = Vec::new();
        let (target, options) = (Target::Check(None), PassOptions::default());
        let work = Work { target, options, details: true, members: None, replay_on_demand: false };
        let extra = &mut neff::loader::NoObserver;
        let (shown, mut missed) = (std::cell::RefCell::new(Shown::default()), 0);
        let pass =
            run_pass(source, size, &work, Inflation::Inline, extra, lent, true, &shown, &mut missed, &mut records);
        let mut pass = pass.unwrap_or_else(|e| panic!("{e:?}"));
        pass.elapsed = std::time::Duration::ZERO;
        pass
    }

    /// What a pass found, to compare (its time left out, its maps in key order), with the
    /// core's log of `info --json`'s document.
    fn found(pass: Pass) -> String {
        let c = &pass.collected;
        let kelfs: std::collections::BTreeMap<_, _> = c.kelfs.iter().collect();
        let (report, needs, finish) = (&pass.report, &pass.needs, &pass.finish);
        let info = pass.info.map(|i| i.log.into_buffer().0);
        format!("{report:?} {:?} {kelfs:?} {} {needs:?} {finish:?} {:?} {info:?}", c.neff, c.manifests, pass.warnings)
    }

    fn real_training_neff() -> Option<std::path::PathBuf> {
        let rel =
            "fixtures/training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_14041361676943519958+ade7b014/model.neff";
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(rel);
        if path.exists() {
            return Some(path);
        }
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{} is missing under CI=true", path.display());
        None
    }

    #[test]
    fn a_pass_on_buffers_an_earlier_pass_left_finds_what_a_pass_on_new_ones_does() {
        let run = || {
            let sample = || InputSource::Sample(crate::SAMPLE_NEFF);
            // Past 256 vars and payloads, the arena files them in hash tables (empty slots).
            let spec =
                crate::scale::ScaleSpec { weights: 600, vars_per_subgraph: 400, ..crate::scale::ScaleSpec::small() };
            let tables: &'static [u8] = spec.build().unwrap_or_else(|e| panic!("{e}")).leak();
            let tabled = move || InputSource::Sample(tables);
            let mut inputs: Vec<Box<dyn Fn() -> InputSource>> = vec![Box::new(sample), Box::new(tabled)];
            // The real training NEFF keeps 4 MB of engine JSON in the replay store until its
            // def.json, and 36 KB of records in the arena.
            if let Some(path) = real_training_neff() {
                let open = move || crate::source::open_input(&path, "NEFF").unwrap_or_else(|e| panic!("{e:?}"));
                inputs.push(Box::new(open));
            }
            for input in &inputs {
                let fresh = found(pass_on(input(), &mut Lent::take_new()));
                for fill in [0x00, 0xa5, 0xff] {
                    let mut used = dirty(fill, 16 << 20);
                    assert_eq!(found(pass_on(input(), &mut used)), fresh, "buffers filled with {fill:#x}");
                    // Given back and taken again, as the next NEFF of a cache takes them.
                    used.empty_slots();
                    assert_eq!(found(pass_on(input(), &mut used)), fresh, "buffers used once, then {fill:#x}");
                }
            }
        };
        let worker = std::thread::Builder::new().stack_size(LOADER_STACK).spawn(run).unwrap_or_else(|e| panic!("{e}"));
        if let Err(panic) = worker.join() {
            std::panic::resume_unwind(panic);
        }
    }

    #[test]
    fn buffers_are_kept_only_after_a_pass_that_used_little_of_them() {
        let needs = |arena: u64, replay: u64| Needs { arena, replay, ..Needs::default() };
        // The real training NEFF's pass: 37 KB of arena, 4 MB of replay store.
        assert!(worth_keeping(&needs(37 << 10, 4 << 20)));
        assert!(worth_keeping(&needs(0, KEEP_AT_MOST)));
        assert!(!worth_keeping(&needs(1, KEEP_AT_MOST)));
        assert!(!worth_keeping(&needs(u64::MAX, u64::MAX)));
        let mut lent = dirty(0, 4096);
        let failed = neff::Error::at_file(neff::Stage::Io, 0, neff::ErrorKind::Io(embedded_io::ErrorKind::Other));
        lent.deferred[3] = Some(failed);
        lent.empty_slots();
        assert!(lent.deferred.iter().all(Option::is_none));
    }
}
