//! What every stage of one pass is handed besides the state it works on: the member being
//! read, as the walk found it, and the caller's warning sink, counting what passes through.

use crate::error::{Warning, WarningSink};

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

/// Counts the warnings that pass through to the caller's sink.
pub(super) struct Counting<'s, S: WarningSink + ?Sized> {
    pub(super) sink: &'s mut S,
    /// Warnings passed on so far.
    pub(super) count: u32,
}

impl<S: WarningSink + ?Sized> WarningSink for Counting<'_, S> {
    #[inline(never)]
    fn warn(&mut self, warning: &Warning) {
        self.count = self.count.saturating_add(1);
        self.sink.warn(warning);
    }
}
