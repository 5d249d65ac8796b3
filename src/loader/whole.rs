//! Whole member names and key paths for error messages.
//!
//! An [`Error`] keeps the tail of its member name and the head of its key path in fixed
//! texts (128 and 96 bytes), so that it stays small: it is the `Result` of every byte source
//! and of every stage. A member path can run to thousands of bytes (a PAX name, spec §15.20),
//! and a key path holds a var's name. A host that wants the whole names lends a buffer
//! ([`Storage::whole_names`](super::Storage::whole_names)): while it loads, the loader notes
//! there the whole member name and key path of each failure it sees, and
//! [`Loader::whole_names`](super::Loader::whole_names) gives them back for the error the load
//! returned. A failure noted before the buffer is full is kept; one that does not fit is not,
//! and that error prints its fixed texts as it would without the buffer.
//!
//! Each note is `member length (u32 LE), key path length (u32 LE), member, key path`.
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use crate::error::Error;

/// Bytes of a note's two lengths.
const NOTE_HEAD: usize = 8;

/// The notes of one load, in a lent buffer.
#[derive(Debug)]
pub(crate) struct WholeNames<'a> {
    buf: &'a mut [u8],
    used: usize,
}

impl<'a> WholeNames<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, used: 0 }
    }

    /// Forgets every note (a new load).
    pub(crate) fn clear(&mut self) {
        self.used = 0;
    }

    /// Notes a failure in `member` at key path `path` followed by `.key` (where there is a
    /// key; `None`: no path, or one too long to hold, and then no key either). Only names an
    /// [`Error`] cannot hold whole are worth the room; the rest are skipped.
    #[cold]
    #[inline(never)]
    pub(crate) fn note(&mut self, member: &str, path: Option<&str>, key: Option<&str>) {
        if !cfg!(feature = "whole-names") {
            return;
        }
        let (path, key) = match path {
            Some(path) => (path, key),
            None => ("", None),
        };
        let key_len = key.map_or(0, |k| k.len().saturating_add(1));
        let path_len = path.len().saturating_add(key_len);
        if member.len() <= crate::error::MEMBER_TEXT && path_len <= crate::error::KEY_PATH_TEXT {
            return;
        }
        let (Ok(m), Ok(p)) = (u32::try_from(member.len()), u32::try_from(path_len)) else { return };
        let Some(end) = NOTE_HEAD.checked_add(member.len()).and_then(|n| n.checked_add(path_len)) else { return };
        let Some(end) = self.used.checked_add(end) else { return };
        let Some(mut rest) = self.buf.get_mut(self.used..end) else { return };
        let key_parts: [&[u8]; 2] = match key {
            Some(k) => [b".", k.as_bytes()],
            None => [b"", b""],
        };
        let parts: [&[u8]; 6] =
            [&m.to_le_bytes(), &p.to_le_bytes(), member.as_bytes(), path.as_bytes(), key_parts[0], key_parts[1]];
        for part in parts {
            let Some((dst, tail)) = rest.split_at_mut_checked(part.len()) else { return };
            dst.copy_from_slice(part);
            rest = tail;
        }
        self.used = end;
    }

    /// Each note, oldest first.
    fn notes(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut rest = self.buf.get(..self.used).unwrap_or(&[]);
        core::iter::from_fn(move || {
            let (head, tail) = rest.split_at_checked(NOTE_HEAD)?;
            let len = |at: usize| -> Option<usize> {
                let b = head.get(at..at.checked_add(4)?)?;
                usize::try_from(u32::from_le_bytes(b.try_into().ok()?)).ok()
            };
            let (member, tail) = tail.split_at_checked(len(0)?)?;
            let (path, tail) = tail.split_at_checked(len(4)?)?;
            rest = tail;
            Some((core::str::from_utf8(member).ok()?, core::str::from_utf8(path).ok()?))
        })
    }

    /// The whole names of `e`: from the last note whose names `e`'s texts are a part of, else
    /// `e`'s own texts.
    pub(crate) fn of<'e>(&'e self, e: &'e Error) -> Whole<'e> {
        let member_agrees = |whole: &str| {
            let kept = e.member.as_str();
            if e.member.is_elided() {
                whole.ends_with(kept)
            } else {
                whole == kept
            }
        };
        // A key path that did not fit keeps its head and ends in `…`; one cut by `Text` keeps
        // its tail.
        let path_agrees = |whole: &str| {
            let kept = e.key_path.as_str();
            match kept.strip_suffix('…') {
                Some(head) => whole.starts_with(head),
                None if e.key_path.is_elided() => whole.ends_with(kept),
                None => whole == kept,
            }
        };
        // An error keeps only a tail of its member: when notes of two members agree with it
        // (`sg00_…/def.json` and `sg01_…/def.json` share their last 128 bytes), neither is
        // taken, and the error prints its own texts. Likewise for two paths.
        let mut found = Whole { error: e, member: None, key_path: None };
        let (mut members_differ, mut paths_differ) = (false, false);
        for (member, path) in self.notes() {
            if !member_agrees(member) {
                continue;
            }
            members_differ |= found.member.is_some_and(|m| m != member);
            found.member = Some(member);
            if !e.key_path.is_empty() && !path.is_empty() && path_agrees(path) {
                paths_differ |= found.key_path.is_some_and(|p| p != path);
                found.key_path = Some(path);
            }
        }
        if members_differ {
            found.member = None;
        }
        if members_differ || paths_differ {
            found.key_path = None;
        }
        found
    }
}

/// An [`Error`] with the whole member name and key path the loader saw, where it saw them:
/// its `Display` is the error's, with those names whole.
#[derive(Debug, Clone, Copy)]
pub struct Whole<'e> {
    error: &'e Error,
    member: Option<&'e str>,
    key_path: Option<&'e str>,
}

impl<'e> Whole<'e> {
    /// The error's member name whole, where the loader noted it (else the error's own text,
    /// [`Error::member`], is all there is).
    pub fn member(&self) -> Option<&'e str> {
        self.member
    }

    /// The error's key path whole, where the loader noted it.
    pub fn key_path(&self) -> Option<&'e str> {
        self.key_path
    }
}

impl fmt::Display for Whole<'_> {
    /// As the error's `Display`, with the whole names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let member: &dyn fmt::Display = match &self.member {
            Some(whole) => whole,
            None => &self.error.member,
        };
        let key_path: &dyn fmt::Display = match &self.key_path {
            Some(whole) => whole,
            None => &self.error.key_path,
        };
        self.error.write_with(f, member, key_path)
    }
}

// Without the feature nothing is noted.
#[cfg(feature = "whole-names")]
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::arithmetic_side_effects)]

    extern crate std;
    use std::string::{String, ToString};

    use super::*;
    use crate::error::{ErrorKind, Stage, KEY_PATH_TEXT, MEMBER_TEXT};

    /// `prefix` padded to `len` bytes with its last character.
    fn long(prefix: &str, len: usize) -> String {
        let mut s = String::from(prefix);
        let fill = prefix.chars().last().unwrap_or('x');
        while s.len() < len {
            s.push(fill);
        }
        s
    }

    /// An error as the readers make one: the member's tail, the path's head ending in `…`.
    fn error(member: &str, path: &str) -> Error {
        let head: String = path.chars().take(KEY_PATH_TEXT - 3).collect();
        Error::in_member(Stage::DefJson, member, 7, ErrorKind::Truncated).with_key_path(&(head + "…"))
    }

    #[test]
    fn a_long_member_and_path_print_whole() {
        let member = long("sg00_", 300) + "/def.json";
        let path = long("var.w_", 200) + ".size";
        let mut buf = [0u8; 1024];
        let mut names = WholeNames::new(&mut buf);
        names.note("other/def.json", Some("var.a"), None);
        names.note(&member, Some(&long("var.w_", 200)), Some("size"));
        let e = error(&member, &path);
        assert!(e.member.is_elided());
        let whole = names.of(&e);
        assert_eq!(whole.member(), Some(member.as_str()));
        assert_eq!(whole.key_path(), Some(path.as_str()));
        assert_eq!(whole.to_string(), std::format!("{member}: {path}: unexpected end of input (byte 7)"));
        // Without a note, the error's own texts.
        let bare = WholeNames::new(&mut []).of(&e).to_string();
        assert_eq!(bare, e.to_string());
        assert!(bare.contains('…'));
    }

    #[test]
    fn two_members_sharing_the_kept_tail_are_not_guessed() {
        let a = long("sg00_d", 300) + "/def.json";
        let b = long("sg01_d", 300) + "/def.json";
        let path = long("var.w", 200);
        let mut buf = [0u8; 4096];
        let mut names = WholeNames::new(&mut buf);
        names.note(&a, Some(&path), None);
        names.note(&b, Some(&long("var.v", 200)), None);
        let e = error(&a, &path);
        assert_eq!(e.member.as_str(), Error::in_member(Stage::DefJson, &b, 0, ErrorKind::Truncated).member.as_str());
        let whole = names.of(&e);
        assert_eq!((whole.member(), whole.key_path()), (None, None), "either could be the error's");
        assert_eq!(whole.to_string(), e.to_string());
    }

    #[test]
    fn names_an_error_holds_whole_take_no_room() {
        let mut buf = [0u8; 64];
        let mut names = WholeNames::new(&mut buf);
        names.note("sg00/def.json", Some("var.x"), Some("size"));
        assert_eq!(names.used, 0);
        let member = long("d", MEMBER_TEXT + 1);
        names.note(&member, None, None);
        assert_eq!(names.used, 0, "a note that does not fit is not kept");
        let e = Error::about_member(Stage::Payload, &member, ErrorKind::Truncated);
        assert_eq!(names.of(&e).member(), None);
        assert_eq!(names.of(&e).to_string(), e.to_string());
    }

    #[test]
    fn a_note_of_another_member_or_path_is_not_taken() {
        let member = long("a", 200);
        let other = long("b", 200);
        let mut buf = [0u8; 4096];
        let mut names = WholeNames::new(&mut buf);
        names.note(&other, Some(&long("var.p", 150)), None);
        names.note(&member, Some(&long("var.q", 150)), None);
        // The member's own later note without a path keeps the earlier path.
        names.note(&member, None, None);
        let e = error(&member, &long("var.p", 150));
        let whole = names.of(&e);
        assert_eq!(whole.member(), Some(member.as_str()));
        assert_eq!(whole.key_path(), None, "the noted path is another one");
        let e = error(&member, &long("var.q", 150));
        assert_eq!(names.of(&e).key_path(), Some(long("var.q", 150).as_str()));
        names.clear();
        assert_eq!(names.of(&e).member(), None);
    }
}
