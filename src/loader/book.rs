//! What binding must remember, in one value: the records in the lent arena and the index
//! over them, the errors kept for the chain, the whole names of failures, and the chain's
//! marks as the manifests give them. The stages share it: the manifest reader
//! ([`super::read`]) records into it, payloads are placed from it ([`super::place`]), the
//! replay store settles against it ([`super::replay`]), and binding ([`super::bind`]) walks
//! the chain in it once the archive is finished.

use super::chain::MemberText;
use super::index::{self, Index};
use super::whole::WholeNames;
use super::{LoadOptions, DEFERRED_ERRORS};
use crate::arena::{Arena, NIL};
use crate::error::Error;
use crate::hal::{Hal, RegionId};
use crate::manifest::neff::KelfMark;
use crate::manifest::Arch;

/// The records of one load and what the chain has said so far. See the module docs.
pub(super) struct Book<'a> {
    pub(super) options: LoadOptions,
    pub(super) arena: Arena<'a>,
    pub(super) index: Index,
    pub(super) deferred: Deferred<'a>,
    /// How `neff.json` marks its KELF nodes (`None` before it is read).
    pub(super) kelf_mark: Option<KelfMark>,
    /// Without `neff.json`: the KELF found by its conventional name.
    pub(super) fallback_kelf: Option<u32>,
    pub(super) device_arch: Option<Arch>,
    pub(super) lnc_size: u32,
    /// Inputs and outputs of the last `neff.json`.
    pub(super) io_counts: (u32, u32),
    /// The NEFF's name, from its header (the runtime's messages name it).
    pub(super) neff_name: MemberText,
    /// Whole names of the failures seen ([`Storage::whole_names`](super::Storage)).
    pub(super) whole: WholeNames<'a>,
}

/// The deferred errors: the loader's own slots, then the lent ones. A slot id is a `u16`.
pub(super) struct Deferred<'a> {
    own: [Option<Error>; DEFERRED_ERRORS],
    lent: &'a mut [Option<Error>],
    /// Errors kept now (or that would be, had there been a slot), and the most at once.
    in_use: usize,
    peak: usize,
}

impl Deferred<'_> {
    /// Keeps `e`, returning its slot, or [`index::NO_SLOT`] when every slot is taken.
    pub(super) fn keep(&mut self, e: Error) -> u16 {
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

    /// The error kept in `slot`.
    pub(super) fn get(&self, slot: u16) -> Option<&Error> {
        self.own.iter().chain(self.lent.iter()).nth(usize::from(slot))?.as_ref()
    }

    /// Frees a slot whose member the chain has settled.
    pub(super) fn free(&mut self, slot: u16) {
        if let Some(s) = self.own.iter_mut().chain(self.lent.iter_mut()).nth(usize::from(slot)) {
            if s.take().is_some() {
                self.in_use = self.in_use.saturating_sub(1);
            }
        }
    }

    /// The most slots in use at once.
    pub(super) fn peak(&self) -> usize {
        self.peak
    }

    /// Slots in all.
    pub(super) fn capacity(&self) -> usize {
        DEFERRED_ERRORS.saturating_add(self.lent.len())
    }

    /// Frees every slot.
    pub(super) fn clear(&mut self) {
        self.own.iter_mut().chain(self.lent.iter_mut()).for_each(|s| *s = None);
        (self.in_use, self.peak) = (0, 0);
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

impl<'a> Book<'a> {
    /// An empty book over the lent `arena`, `deferred` slots and `whole_names` room.
    pub(super) fn new(
        options: LoadOptions,
        arena: &'a mut [u8],
        deferred: &'a mut [Option<Error>],
        whole_names: &'a mut [u8],
    ) -> Self {
        Self {
            options,
            arena: Arena::new(arena),
            index: Index::default(),
            deferred: Deferred { own: [None; DEFERRED_ERRORS], lent: deferred, in_use: 0, peak: 0 },
            kelf_mark: None,
            fallback_kelf: None,
            device_arch: None,
            lnc_size: 1,
            io_counts: (0, 0),
            neff_name: MemberText::EMPTY,
            whole: WholeNames::new(whole_names),
        }
    }

    /// Empties the book for a load onto a device of `device_arch`, of a NEFF whose header
    /// says `lnc_size`.
    pub(super) fn reset(&mut self, device_arch: Option<Arch>, lnc_size: u32) {
        self.arena.clear();
        self.index = Index::default();
        self.deferred.clear();
        self.kelf_mark = None;
        self.fallback_kelf = None;
        self.device_arch = device_arch;
        self.lnc_size = lnc_size.max(1);
        self.io_counts = (0, 0);
        self.whole.clear();
    }

    /// [`Index::role_of`] for the chain this load selected. Not inlined: one copy of the
    /// five-argument call for the five places that ask (flash on a controller).
    #[inline(never)]
    pub(super) fn role_of(&self, member: &str) -> Option<index::Role> {
        self.index.role_of(&self.arena, member, self.kelf_mark, self.fallback_kelf)
    }

    /// Notes the whole name of the member `e` is about, where nothing noted it while it was
    /// read: the archive's last member (`last`), or a member the index keeps (a manifest, a
    /// payload) for an error found once the chain was bound.
    #[cold]
    #[inline(never)]
    pub(super) fn note_kept_name(&mut self, e: &Error, last: &str) {
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

    /// Marks the current record of `name` replaced, freeing its deferred error's slot.
    pub(super) fn supersede(&mut self, name: &str) -> bool {
        if let Some(slot) = self.index.manifest(&self.arena, name).and_then(|(_, r)| r.failed) {
            self.deferred.free(slot);
        }
        self.index.supersede_manifest(&mut self.arena, name)
    }

    /// Marks the manifest read at record `pos` as failed with `e` (found after its read).
    pub(super) fn fail_manifest(&mut self, pos: u32, e: Error) {
        let mut rec = self.index.manifests.get(&self.arena, pos);
        rec.failed = Some(self.deferred.keep(e));
        self.index.manifests.set(&mut self.arena, pos, &rec);
    }

    /// Leaves the device as it was: releases every region this load still holds. (A landing
    /// the device's notebook cannot give back is skipped: its region, if any, stays.)
    pub(super) fn release_all<H: Hal>(&mut self, hal: &mut H) {
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
