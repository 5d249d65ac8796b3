//! Reader support for the generated consumed-key parsers.
//!
//! The parsers generated from `schema/` are tables: per object its keys ([`ObjectKeys`]: the
//! JSON names, each key's [`Lim`] and rules, the required mask) and a `match` from slot to
//! field ([`Fields`]). The reading itself is here, compiled once: [`read_object`] is the key
//! loop of every object (duplicate and required-key checks included), and every value is read
//! through `&mut dyn` [`JsonValue`] with a byte source behind `&mut dyn` [`ByteSource`], so
//! that neither the value's type nor the source's multiplies the code. The [`Cx`] carries the
//! tokenizer, the byte source and the error context (stage, member, bounded key path);
//! [`JsonValue`] is implemented by every storable type (integers, bools, [`Float`],
//! `heapless::String`, `heapless::Vec`, [`Map`], [`Each`], [`ArrayLen`], `Option` and the
//! generated objects).
//!
//! A value is read in two steps so that nothing borrowed from the tokenizer outlives a call:
//! [`JsonValue::start`] sees the value's first event (a scalar is complete there; a string is
//! copied out), and [`JsonValue::body`] reads the rest of a container with the tokenizer.
//!
//! **Arithmetic.** Element counts saturate: each element takes at least one byte of the input,
//! so a count cannot reach 2^64 and the saturation never happens. The key path's length is
//! checked against its buffer before anything is copied.
#![deny(clippy::arithmetic_side_effects)]

use embedded_io::BufRead;

use super::{Entry, EntryAt, JsonType, ManifestError, RequiredKey, Visitor};
use crate::error::{CapacityError, Error, ErrorKind, Stage, Text, KEY_PATH_TEXT};
#[cfg(not(target_os = "none"))]
use crate::json::QuickMember;
use crate::json::{Event, Fault, Float, JsonError, Tokenizer};

/// Bytes a [`KeyPath`] holds: what an [`Error`] shows ([`KEY_PATH_TEXT`]) on a controller; on a
/// host, more, so that the loader can note a long path whole ([`Visitor::failed`]).
pub const KEY_PATH_BYTES: usize = if cfg!(target_os = "none") { KEY_PATH_TEXT } else { 4096 };

/// The key path of the value being read (`var.x.size`, `nodes[2].attrs.kelf`), bounded.
///
/// A segment that does not fit is dropped (the path then ends with `…`); the path is context for
/// messages only, so this never changes what is parsed. What messages show ([`KeyPath::as_str`])
/// is the part that fits [`KEY_PATH_TEXT`]; [`KeyPath::whole`] is the path as far as
/// [`KEY_PATH_BYTES`] holds it.
#[derive(Clone)]
pub struct KeyPath {
    buf: [u8; KEY_PATH_BYTES],
    len: usize,
    depth: u16,
    /// Depth at which a segment was first dropped from `buf`; `u16::MAX` when none was.
    cut_at: u16,
    /// Depth at which a segment first went past [`KEY_PATH_TEXT`]; `u16::MAX` when none did.
    shown_cut_at: u16,
    /// The length shown once `shown_cut_at` is set (the path before that segment).
    shown_len: usize,
    /// Where the last shown key's text starts (a map entry's name may hold dots of its own).
    key_at: usize,
}

/// A position in a [`KeyPath`] to return to.
#[derive(Debug, Clone, Copy)]
pub struct PathMark {
    len: usize,
    depth: u16,
    key_at: usize,
}

impl KeyPath {
    /// The empty path.
    pub const fn new() -> Self {
        Self {
            buf: [0; KEY_PATH_BYTES],
            len: 0,
            depth: 0,
            cut_at: u16::MAX,
            shown_cut_at: u16::MAX,
            shown_len: 0,
            key_at: 0,
        }
    }

    /// The current position.
    #[inline(never)]
    pub fn mark(&self) -> PathMark {
        PathMark { len: self.len, depth: self.depth, key_at: self.key_at }
    }

    /// Returns to `mark`.
    #[inline(never)]
    pub fn reset(&mut self, mark: PathMark) {
        self.len = mark.len;
        self.depth = mark.depth;
        self.key_at = mark.key_at;
        if mark.depth < self.cut_at {
            self.cut_at = u16::MAX;
        }
        if mark.depth < self.shown_cut_at {
            self.shown_cut_at = u16::MAX;
        }
    }

    /// Appends the segment `open`, `text`, `close` (`.` and a key, or `[`, digits and `]`):
    /// the whole segment or, when it does not fit, nothing (the path then stays cut).
    fn append(&mut self, open: &[u8], text: &[u8], close: &[u8]) {
        self.depth = self.depth.saturating_add(1);
        let end = self.len.checked_add(open.len()).and_then(|end| end.checked_add(text.len()));
        let end = end.and_then(|end| end.checked_add(close.len()));
        if self.shown_cut_at == u16::MAX && end.is_none_or(|end| end > KEY_PATH_TEXT) {
            self.shown_cut_at = self.depth;
            self.shown_len = self.len;
        }
        let dst = end.and_then(|end| Some((self.buf.get_mut(self.len..end)?, end)));
        let (Some((dst, end)), u16::MAX) = (dst, self.cut_at) else {
            self.cut_at = self.cut_at.min(self.depth);
            return;
        };
        // `dst` is exactly the three parts long: every split below succeeds.
        if let Some((d_open, rest)) = dst.split_at_mut_checked(open.len()) {
            crate::copy_bytes(d_open, open);
            if let Some((d_text, d_close)) = rest.split_at_mut_checked(text.len()) {
                crate::copy_bytes(d_text, text);
                crate::copy_bytes(d_close, close);
            }
        }
        self.len = end;
    }

    /// Bytes of the path shown in messages.
    fn shown(&self) -> usize {
        if self.shown_cut_at == u16::MAX {
            self.len
        } else {
            self.shown_len
        }
    }

    /// Appends `.key` (just `key` at the root).
    pub fn push_key(&mut self, key: &str) {
        self.push_key_bytes(key.as_bytes());
    }

    /// [`KeyPath::push_key`] for a key as UTF-8 bytes (what the tokenizer hands a reader that
    /// compares keys as bytes); a segment is kept whole or dropped, so the path stays UTF-8.
    pub fn push_key_bytes(&mut self, key: &[u8]) {
        let before = self.len;
        if self.len == 0 && self.cut_at == u16::MAX {
            self.append(&[], key, &[]);
        } else {
            self.append(b".", key, &[]);
        }
        if self.len != before && self.shown_cut_at == u16::MAX {
            self.key_at = self.len.saturating_sub(key.len());
        }
    }

    /// Appends `[index]`.
    pub fn push_index(&mut self, index: usize) {
        let mut digits = [0u8; 20];
        let digits = crate::error::decimal(index as u64, &mut digits);
        self.append(b"[", digits, b"]");
    }

    /// The path text as messages show it: the segments that fit [`KEY_PATH_TEXT`] (a dropped
    /// tail is not shown).
    pub fn as_str(&self) -> &str {
        let bytes = self.buf.get(..self.shown()).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or("")
    }

    /// The whole path, or `None` when even [`KEY_PATH_BYTES`] did not hold it.
    pub fn whole(&self) -> Option<&str> {
        let bytes = self.buf.get(..self.len).filter(|_| self.cut_at == u16::MAX)?;
        core::str::from_utf8(bytes).ok()
    }

    /// The last key with what follows it (`q.x` of `dma_queue.q.x`, `desc[1]` of
    /// `dma[0].desc[1]`): the segment that names the object being read.
    pub fn last_key(&self) -> &str {
        core::str::from_utf8(self.last_key_bytes()).unwrap_or("")
    }

    /// [`KeyPath::last_key`] as bytes (UTF-8: a segment is kept whole or dropped).
    #[inline(always)]
    pub fn last_key_bytes(&self) -> &[u8] {
        self.buf.get(self.key_at..self.shown()).unwrap_or(&[])
    }

    /// True when a segment was dropped from what messages show.
    pub fn is_cut(&self) -> bool {
        self.shown_cut_at != u16::MAX
    }
}

impl Default for KeyPath {
    fn default() -> Self {
        Self::new()
    }
}

/// Error context of a read: everything but the tokenizer and the source, so that it can be
/// updated while an event borrowed from the tokenizer is alive.
pub struct ErrCtx<'a> {
    /// The stage of errors.
    pub stage: Stage,
    /// The member being read.
    pub member: &'a str,
    /// The key path of the current value.
    pub path: KeyPath,
}

impl ErrCtx<'_> {
    /// A manifest error at `offset`, with the current key path.
    pub fn error(&self, offset: u64, kind: ErrorKind) -> Error {
        let path = shown_path(self.path.as_str(), self.path.is_cut(), None);
        Error::in_member(self.stage, self.member, offset, kind).with_key_path(&path)
    }

    /// The crate error for `f`, a failure of this read: the stage, member and key path (with
    /// the fault's own key, if it names one) added once.
    #[cold]
    #[inline(never)]
    pub fn attach(&self, f: DocFault) -> Error {
        let path = shown_path(self.path.as_str(), self.path.is_cut(), f.key);
        Error::in_member(self.stage, self.member, f.offset, f.kind).with_key_path(&path)
    }
}

/// The key path a message shows for `path` (followed by `.key` where there is one): whole when
/// it fits [`KEY_PATH_TEXT`], else its head and `…`, as when `cut` says a segment of `path` was
/// already dropped. A shown path is thus always the whole path or a marked head of it, never a
/// path with a segment silently missing.
pub(crate) fn shown_path(path: &str, cut: bool, key: Option<&str>) -> heapless::String<KEY_PATH_TEXT> {
    let mut out = heapless::String::new();
    let whole = match key {
        Some(key) => crate::error::push_all(&mut out, &[path, ".", key]),
        None => out.push_str(path).is_ok(),
    };
    if whole && !cut {
        return out;
    }
    out.clear();
    let keep = KEY_PATH_TEXT.saturating_sub('…'.len_utf8());
    let end = (0..=path.len().min(keep)).rev().find(|&end| path.is_char_boundary(end)).unwrap_or(0);
    let _ = out.push_str(path.get(..end).unwrap_or(""));
    let _ = out.push('…');
    out
}

/// A failure inside a document, before the document's context is added: where (bytes into
/// the member's body), what, and the key it concerns below the current key path (an entry's
/// check names the entry's own key: `var.x` and `size`). It is small (tens of bytes, where a
/// crate [`Error`] carries its member and key path inline), so the nested readers' frames do not
/// each hold a full error: [`read_document`] adds the stage, member and key path once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocFault {
    /// Bytes from the start of the member's body.
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
    /// A key below the current path that the failure is about, if any.
    pub key: Option<&'static str>,
}

// The point of a `DocFault`: a fraction of an `Error`, whatever the target.
const _: () = assert!(core::mem::size_of::<DocFault>() <= 80);

impl DocFault {
    /// A failure of `kind` at `offset`, about the current value.
    pub const fn new(offset: u64, kind: ErrorKind) -> Self {
        Self { offset, kind, key: None }
    }

    /// The same failure, about key `key` of the current value.
    pub const fn about(mut self, key: &'static str) -> Self {
        self.key = Some(key);
        self
    }
}

impl From<Fault> for DocFault {
    #[cold]
    #[inline(never)]
    fn from(f: Fault) -> Self {
        Self::new(f.offset, f.kind)
    }
}

/// A byte source as a trait object: the readers are compiled once for every source, and the
/// tokenizer below them once, for [`Src`]. Only the kind of a source's error is kept (the
/// loader keeps the error itself on its side of the call).
pub trait ByteSource {
    /// The next bytes, as [`BufRead::fill_buf`].
    fn fill(&mut self) -> Result<&[u8], embedded_io::ErrorKind>;
    /// Marks `amount` bytes read, as [`BufRead::consume`].
    fn consume(&mut self, amount: usize);
}

impl<R: BufRead> ByteSource for R {
    fn fill(&mut self) -> Result<&[u8], embedded_io::ErrorKind> {
        self.fill_buf().map_err(|e| embedded_io::Error::kind(&e))
    }

    fn consume(&mut self, amount: usize) {
        BufRead::consume(self, amount);
    }
}

/// Bytes a [`Src`] copies from its source at a time, on a host: many DMA descriptors or
/// `def.json` vars, so that most tokens, arrays and skipped values lie whole in the copy, where
/// the tokenizer's whole-token paths take them (a token cut by the copy's end is read by the
/// byte machines). 8 KiB rather than 512 bytes: 333.0 -> 321.5 M instructions on the real
/// training NEFF's walk.
#[cfg(not(target_os = "none"))]
const SRC_COPY: usize = 8192;

/// A `&mut dyn` [`ByteSource`] as the `BufRead` the tokenizer reads.
///
/// On a host it copies the source's bytes 8 KiB at a time (`SRC_COPY`), consuming them from the
/// source as it copies, and hands the tokenizer its copy: a token costs the tokenizer's call
/// to `fill_buf` here, inline, not a walk down the layers under it (the tar member, the gzip
/// window, the tee); those are asked once per copy. Every byte is still consumed from the
/// source once, in order; after a fault the source may stand up to `SRC_COPY` bytes past
/// the fault (the rest of a member is drained by its owner either way). On a controller,
/// whose stack and code are measured to the page, it holds no copy: each call of the
/// tokenizer asks the source itself.
pub struct Src<'a> {
    inner: &'a mut dyn ByteSource,
    #[cfg(not(target_os = "none"))]
    copy: Copied,
}

/// The bytes a host's [`Src`] copied: the unread part of `bytes` is `at..end`.
#[cfg(not(target_os = "none"))]
struct Copied {
    bytes: [u8; SRC_COPY],
    at: usize,
    end: usize,
}

impl<'a> Src<'a> {
    /// Reads `inner`.
    pub fn new(inner: &'a mut dyn ByteSource) -> Self {
        Self {
            inner,
            #[cfg(not(target_os = "none"))]
            copy: Copied { bytes: [0; SRC_COPY], at: 0, end: 0 },
        }
    }

    /// Copies the source's next bytes (empty at its end), consuming them from it.
    #[cfg(not(target_os = "none"))]
    #[inline(never)]
    fn refill(&mut self) -> Result<(), embedded_io::ErrorKind> {
        let chunk = self.inner.fill()?;
        let n = chunk.len().min(SRC_COPY);
        if let (Some(dst), Some(from)) = (self.copy.bytes.get_mut(..n), chunk.get(..n)) {
            dst.copy_from_slice(from);
        }
        self.inner.consume(n);
        self.copy.at = 0;
        self.copy.end = n;
        Ok(())
    }
}

impl embedded_io::ErrorType for Src<'_> {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Read for Src<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, embedded_io::ErrorKind> {
        let chunk = self.fill_buf()?;
        let n = chunk.len().min(buf.len());
        if let (Some(dst), Some(from)) = (buf.get_mut(..n), chunk.get(..n)) {
            dst.copy_from_slice(from);
        }
        BufRead::consume(self, n);
        Ok(n)
    }
}

#[cfg(not(target_os = "none"))]
impl BufRead for Src<'_> {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], embedded_io::ErrorKind> {
        if self.copy.at >= self.copy.end {
            self.refill()?;
        }
        Ok(self.copy.bytes.get(self.copy.at..self.copy.end).unwrap_or(&[]))
    }

    #[inline]
    fn consume(&mut self, amount: usize) {
        self.copy.at = self.copy.at.saturating_add(amount).min(self.copy.end);
    }
}

#[cfg(target_os = "none")]
impl BufRead for Src<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], embedded_io::ErrorKind> {
        self.inner.fill()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }
}

/// A read in progress: the tokenizer, the source, the error context and the visitor that
/// streamed elements go to.
///
/// `'a` is the read's borrows; `'t` is the tokenizer's lent scratch, a lifetime of its own
/// because the tokenizer is reborrowed for each document (`&mut` cannot shorten it).
pub struct Cx<'a, 't> {
    /// The tokenizer and the byte source.
    pub json: JsonIn<'a, 't>,
    /// Stage, member and key path.
    pub ctx: ErrCtx<'a>,
    /// Where each element of an `each<..>` / `each_map<..>` key goes.
    pub visitor: &'a mut dyn Visitor,
}

/// A read stopped; the failure is kept in the [`JsonIn`] (only this module makes a `Stop`).
/// The readers pass this zero-sized marker up rather than the failure itself: every nested
/// reader's frame would otherwise hold room for a [`DocFault`] it only passes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop(());

/// The tokenizer and its byte source, for the readers: a fault is kept here and the readers
/// get a [`Stop`]. The steps are out of line so that the tokenizer's `Result<_, Fault>`
/// takes room in their frames alone, not in every reader's.
pub struct JsonIn<'a, 't> {
    /// The tokenizer.
    pub tok: &'a mut Tokenizer<'t>,
    src: Src<'a>,
    /// Why the read stopped, once it has.
    fault: Option<DocFault>,
}

impl JsonIn<'_, '_> {
    /// [`Tokenizer::next`].
    #[inline(never)]
    pub fn event(&mut self) -> Result<Event<'_>, Stop> {
        match self.tok.next(&mut self.src) {
            Ok(ev) => Ok(ev),
            Err(f) => Err(keep(&mut self.fault, f)),
        }
    }

    /// [`Tokenizer::next_key_bytes`].
    #[inline(never)]
    pub fn next_key_bytes(&mut self) -> Result<Option<&[u8]>, Stop> {
        match self.tok.next_key_bytes(&mut self.src) {
            Ok(key) => Ok(key),
            Err(f) => Err(keep(&mut self.fault, f)),
        }
    }

    /// [`Tokenizer::quick_member`].
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn quick_member<K>(&mut self, lookup: impl FnOnce(&[u8]) -> Option<K>) -> Option<QuickMember<'_, K>> {
        self.tok.quick_member(&mut self.src, lookup)
    }

    /// [`Tokenizer::next_element`].
    #[inline(never)]
    pub fn next_element(&mut self) -> Result<bool, Stop> {
        self.tok.next_element(&mut self.src).map_err(|f| keep(&mut self.fault, f))
    }

    /// [`Tokenizer::skip_value`].
    #[inline(never)]
    pub fn skip_value(&mut self) -> Result<bool, Stop> {
        self.tok.skip_value(&mut self.src).map_err(|f| keep(&mut self.fault, f))
    }
}

/// Keeps the tokenizer's fault `f` in `slot`.
#[cold]
#[inline(never)]
fn keep(slot: &mut Option<DocFault>, f: Fault) -> Stop {
    *slot = Some(DocFault::new(f.offset, f.kind));
    Stop(())
}

impl<'a, 't> Cx<'a, 't> {
    /// A read of `member` at the start of its document.
    #[inline(never)]
    pub fn new(
        tok: &'a mut Tokenizer<'t>,
        src: &'a mut dyn ByteSource,
        stage: Stage,
        member: &'a str,
        visitor: &'a mut dyn Visitor,
    ) -> Self {
        tok.reset();
        // Every read of the document goes through this context's source, which
        // `read_document` releases at the end: the tokenizer consumes a chunk at a time.
        tok.consume_in_runs(true);
        Self {
            json: JsonIn { tok, src: Src::new(src), fault: None },
            ctx: ErrCtx { stage, member, path: KeyPath::new() },
            visitor,
        }
    }

    /// Hands `entry`, the element just read, to the visitor.
    // Out of line: the visitor's failure is only held here.
    #[inline(never)]
    fn emit(&mut self, entry: Entry<'_>) -> Result<(), Stop> {
        let at = EntryAt { ctx: &self.ctx, offset: self.json.tok.offset() };
        let outcome = self.visitor.entry(entry, &at);
        outcome.map_err(|f| self.fail(f))
    }

    // The failures below are built out of line: a reader's frame holds none of them.

    /// Stops the read with `f`.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, f: DocFault) -> Stop {
        self.json.fault = Some(f);
        Stop(())
    }

    /// Stops the read with an error of `kind` at the tokenizer's current offset.
    #[cold]
    #[inline(never)]
    fn fail_at(&mut self, kind: ErrorKind) -> Stop {
        self.fail(DocFault::new(self.json.tok.offset(), kind))
    }

    /// Stops the read with the error for `issue`, a value's.
    #[cold]
    #[inline(never)]
    fn fail_issue(&mut self, issue: Issue, lim: Lim) -> Stop {
        let kind = match issue {
            Issue::WrongType { expected, found } => {
                ErrorKind::Manifest(ManifestError::WrongType { expected, found, message: lim.rules.type_error })
            }
            Issue::Capacity(c) => ErrorKind::Capacity(c),
            Issue::Json(e) => ErrorKind::Json(e),
            Issue::OutOfRange { max } => ErrorKind::Manifest(ManifestError::OutOfRange { max }),
        };
        self.fail_at(kind)
    }

    /// Stops the read: `limit` (of `capacity` elements) was exceeded.
    #[cold]
    #[inline(never)]
    fn fail_capacity(&mut self, limit: &'static str, capacity: u64) -> Stop {
        self.fail_at(ErrorKind::Capacity(CapacityError { limit, capacity }))
    }

    /// Stops the read with the key's error for an array of `count` elements, past the runtime's
    /// limit.
    #[cold]
    #[inline(never)]
    fn fail_overflow(&mut self, overflow: fn(u64) -> ManifestError, count: u64) -> Stop {
        self.fail_at(ErrorKind::Manifest(overflow(count)))
    }

    /// Stops the read: a consumed key is given twice.
    #[cold]
    #[inline(never)]
    fn fail_duplicate(&mut self, key: &'static str) -> Stop {
        self.fail_at(ErrorKind::Manifest(ManifestError::DuplicateKey { key }))
    }

    /// Stops the read: required key `key` is missing from the object just read.
    #[cold]
    #[inline(never)]
    fn fail_missing(&mut self, key: &'static RequiredKey) -> Stop {
        // The object's own segment: its name in a keyed map, or its key or index.
        let within = super::Name::new(self.ctx.path.last_key());
        self.ctx.path.push_key(key.key);
        self.fail_at(ErrorKind::Manifest(ManifestError::missing(key, within)))
    }

    /// Stops the read: `text` is not in the key's `strict` map.
    #[cold]
    #[inline(never)]
    fn fail_unknown(&mut self, strict: Strict, text: &str) -> Stop {
        let e = (strict.error)(Text::new(text));
        self.fail_at(ErrorKind::Manifest(e))
    }

    /// Stops the read: a typed list is malformed (the key's message, or the generic one).
    #[cold]
    #[inline(never)]
    fn fail_format(&mut self, lim: Lim) -> Stop {
        let message = if lim.rules.format_error.is_empty() { "malformed typed list" } else { lim.rules.format_error };
        self.fail_at(ErrorKind::Manifest(ManifestError::bad_format(message)))
    }
}

/// Something wrong with a value, found before the error context is at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issue {
    /// The value has another JSON type.
    WrongType {
        /// What the schema asks for.
        expected: JsonType,
        /// What the document has.
        found: JsonType,
    },
    /// A capacity was exceeded.
    Capacity(CapacityError),
    /// A number does not fit.
    Json(JsonError),
    /// An integer above the field's type's maximum (`ManifestError::OutOfRange`; the error
    /// itself is built only when reported: it is larger).
    OutOfRange {
        /// The maximum.
        max: u64,
    },
}

/// How a value continues after its first event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// The value is complete.
    Done,
    /// A container was opened: call [`JsonValue::body`].
    Body,
}

/// Per-key rules from the schema.
#[derive(Debug)]
pub struct Rules {
    /// The runtime's message for a value of the wrong JSON type (empty: the generic one).
    pub type_error: &'static str,
    /// The runtime's message for a malformed typed list.
    pub format_error: &'static str,
    /// The capacity whose overflow is checked against `runtime_max` first.
    pub overflow_limit: &'static str,
    /// The runtime's own element limit of that array.
    pub runtime_max: u64,
    /// The error for more than `runtime_max` elements.
    pub overflow: Option<fn(u64) -> ManifestError>,
    /// For a TVM typed list (`["list_str", [...]]`): its tag.
    pub tag: Option<&'static str>,
    /// For a string a `strict` discriminator map selects from: the map's check.
    pub strict: Option<Strict>,
}

/// A `strict` discriminator map's check of a string key.
#[derive(Debug, Clone, Copy)]
pub struct Strict {
    /// The map has the string.
    pub known: fn(&str) -> bool,
    /// The schema's error variant for a string it does not have.
    pub error: fn(super::Name) -> ManifestError,
}

/// Rules of a key without any.
pub static NO_RULES: Rules = Rules {
    type_error: "",
    format_error: "",
    overflow_limit: "",
    runtime_max: 0,
    overflow: None,
    tag: None,
    strict: None,
};

/// The capacity names of a key's nested types, outermost first, and its rules.
#[derive(Debug, Clone, Copy)]
pub struct Lim {
    /// Capacity names in nesting order.
    pub names: &'static [&'static str],
    /// The key's rules.
    pub rules: &'static Rules,
}

impl Lim {
    /// No capacities, no rules.
    pub const NONE: Lim = Lim { names: &[], rules: &NO_RULES };

    /// The capacity name of this level.
    pub fn first(self) -> &'static str {
        self.names.first().copied().unwrap_or("capacity")
    }

    /// The limits of the next level down.
    pub fn rest(self) -> Lim {
        Lim { names: self.names.get(1..).unwrap_or(&[]), rules: self.rules }
    }
}

/// The JSON type of an event's value.
pub fn found_type(ev: &Event<'_>) -> JsonType {
    match ev {
        Event::BeginObject | Event::EndObject | Event::Key(_) => JsonType::Object,
        Event::BeginArray | Event::EndArray => JsonType::Array,
        Event::Str(_) => JsonType::String,
        Event::Num(n) if !n.is_integer() => JsonType::Number,
        Event::Num(n) if n.is_negative() => JsonType::Integer,
        Event::Num(_) => JsonType::UnsignedInteger,
        Event::Bool(_) => JsonType::Bool,
        Event::Null => JsonType::Null,
        Event::End => JsonType::Nothing,
    }
}

#[cold]
#[inline(never)]
fn wrong(expected: JsonType, ev: &Event<'_>) -> Issue {
    Issue::WrongType { expected, found: found_type(ev) }
}

/// A value the generated parsers can store. It is read through `&mut dyn JsonValue`: one
/// copy of each reader serves every type.
pub trait JsonValue: 'static {
    /// Takes the value's first event.
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue>;

    /// Reads the rest of a container opened by [`JsonValue::start`].
    fn body(&mut self, _cx: &mut Cx<'_, '_>, _lim: Lim) -> Result<(), Stop> {
        Ok(())
    }

    /// A host's whole-container path: the rest of the container opened by
    /// [`JsonValue::start`] read in one scan of the tokenizer's chunk, when it is of a shape
    /// that scan takes and every part of it is valid (an array of integers:
    /// [`Tokenizer::integer_array`]); `false`, with the value and the tokenizer as they were,
    /// otherwise, for [`JsonValue::body`] to read it (and report any error). The readers try
    /// it first: no key path segment is written for a container read this way.
    #[cfg(not(target_os = "none"))]
    fn quick_body(&mut self, _json: &mut JsonIn<'_, '_>, _lim: Lim) -> bool {
        false
    }

    /// Back to the state of a document without this key (defaults are set by the owner).
    fn clear(&mut self);

    /// The string held, if the value is one (what a `strict` map checks).
    fn text(&self) -> Option<&str> {
        None
    }
}

fn as_u64(ev: &Event<'_>, expected: JsonType) -> Result<u64, Issue> {
    match ev {
        Event::Num(n) if n.is_integer() && !n.is_negative() => n.as_u64().map_err(Issue::Json),
        Event::Num(n) if n.as_bytes() == b"-0" => Ok(0),
        other => Err(wrong(expected, other)),
    }
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl JsonValue for $t {
            fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
                let v = as_u64(ev, JsonType::UnsignedInteger)?;
                *self = <$t>::try_from(v).map_err(|_| Issue::OutOfRange { max: <$t>::MAX as u64 })?;
                Ok(Flow::Done)
            }
            fn clear(&mut self) {
                *self = 0;
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64);

impl JsonValue for i64 {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Num(n) if n.is_integer() => *self = n.as_i64().map_err(Issue::Json)?,
            other => return Err(wrong(JsonType::Integer, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        *self = 0;
    }
}

impl JsonValue for Float {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Num(n) => *self = Float::from_number(n).map_err(Issue::Json)?,
            other => return Err(wrong(JsonType::Number, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        *self = Float::default();
    }
}

impl JsonValue for bool {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Bool(b) => *self = *b,
            other => return Err(wrong(JsonType::Bool, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        *self = false;
    }
}

/// Copies `s` into `dst` (a `heapless::String` of any capacity, as its view: one copy of this
/// serves them all); a string longer than the capacity is a capacity error named `limit`.
#[inline(never)]
pub fn copy_str(dst: &mut heapless::string::StringView, s: &str, limit: &'static str) -> Result<(), Issue> {
    dst.clear();
    dst.push_str(s).map_err(|_| Issue::Capacity(CapacityError { limit, capacity: dst.capacity() as u64 }))
}

/// A string value's first event into `dst`, for every capacity.
#[inline(never)]
fn start_str(dst: &mut heapless::string::StringView, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
    match ev {
        Event::Str(s) => copy_str(dst, s, lim.first())?,
        other => return Err(wrong(JsonType::String, other)),
    }
    Ok(Flow::Done)
}

/// A string default from the schema (cut to the capacity if it does not fit, which the
/// default capacities never do).
pub fn str_default<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    reset_str(&mut out, s);
    out
}

/// Sets `out` to the string default `s` in place ([`str_default`] without building a second
/// string to move in: what a generated `clear` does).
pub fn reset_str<const N: usize>(out: &mut heapless::String<N>, s: &str) {
    out.clear();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
}

impl<const N: usize> JsonValue for heapless::String<N> {
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        start_str(self.as_mut_view(), ev, lim)
    }
    fn clear(&mut self) {
        heapless::String::clear(self);
    }
    fn text(&self) -> Option<&str> {
        Some(self.as_str())
    }
}

impl<T: JsonValue + Default> JsonValue for Option<T> {
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        let v = self.get_or_insert_with(T::default);
        v.clear();
        v.start(ev, lim)
    }
    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        match self {
            Some(v) => v.body(cx, lim),
            None => Ok(()),
        }
    }
    #[cfg(not(target_os = "none"))]
    fn quick_body(&mut self, json: &mut JsonIn<'_, '_>, lim: Lim) -> bool {
        self.as_mut().is_some_and(|v| v.quick_body(json, lim))
    }
    fn clear(&mut self) {
        *self = None;
    }
    fn text(&self) -> Option<&str> {
        self.as_ref().and_then(|v| v.text())
    }
}

/// Reads the next value into `value`.
pub fn read(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue, lim: Lim) -> Result<(), Stop> {
    let flow = match cx.json.event() {
        Ok(ev) => value.start(&ev, lim),
        Err(stop) => return Err(stop),
    };
    match flow {
        Ok(Flow::Done) => Ok(()),
        #[cfg(not(target_os = "none"))]
        Ok(Flow::Body) if value.quick_body(&mut cx.json, lim) => Ok(()),
        Ok(Flow::Body) => value.body(cx, lim),
        Err(issue) => Err(cx.fail_issue(issue, lim)),
    }
}

/// Reads a TVM typed list `["tag", value]` into `value`; any other shape is the key's
/// `format_error`.
fn read_tagged(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue, tag: &str, lim: Lim) -> Result<(), Stop> {
    match cx.json.event() {
        Ok(Event::BeginArray) => {}
        Ok(_) => return Err(cx.fail_format(lim)),
        Err(stop) => return Err(stop),
    }
    match cx.json.event() {
        Ok(Event::Str(s)) if s == tag => {}
        Ok(_) => return Err(cx.fail_format(lim)),
        Err(stop) => return Err(stop),
    }
    let mark = cx.ctx.path.mark();
    cx.ctx.path.push_index(1);
    read(cx, value, lim)?;
    cx.ctx.path.reset(mark);
    match cx.json.event() {
        Ok(Event::EndArray) => Ok(()),
        Ok(_) => Err(cx.fail_format(lim)),
        Err(stop) => Err(stop),
    }
}

/// Reads a whole document into `value` and checks that nothing follows it.
///
/// A schema or semantic error does not hide a syntax error: the runtime parses the whole
/// document (simdjson) before it looks at any key, so for a document that is not valid JSON
/// it reports the syntax error. After such an error the rest of the document is skipped
/// through the tokenizer; a JSON syntax fault anywhere in it (or data after it) is returned
/// instead, at its own offset (with an empty key path: the skip keeps none); otherwise the
/// schema error is returned unchanged. An error of the tokenizer itself (syntax, depth,
/// capacity, the stream) is returned as it is.
pub fn read_document(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue) -> Result<(), Error> {
    let read = read_whole(cx, value);
    // What the tokenizer read and still holds (a read stopped by the schema) is consumed.
    cx.json.tok.release(&mut cx.json.src);
    match read {
        Ok(()) => Ok(()),
        Err(Stop(())) => {
            // Every `Stop` is made with its fault kept: the fallback only keeps this total.
            let offset = cx.json.tok.offset();
            let fault =
                cx.json.fault.take().unwrap_or(DocFault::new(offset, ErrorKind::Json(JsonError::UnexpectedEnd)));
            cx.visitor.failed(cx.ctx.member, cx.ctx.path.whole(), fault.key);
            Err(cx.ctx.attach(fault))
        }
    }
}

/// [`read_document`] before the context is added.
fn read_whole(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue) -> Result<(), Stop> {
    if let Err(schema) = read(cx, value, Lim::NONE) {
        if cx.json.tok.fault().is_some() {
            return Err(schema);
        }
        if let Some(fault) = skip_rest(&mut cx.json) {
            // The skip keeps no key path: the syntax error's is the document's root.
            cx.ctx.path = KeyPath::new();
            return Err(keep(&mut cx.json.fault, fault));
        }
        return Err(schema);
    }
    match cx.json.event() {
        Ok(Event::End) => Ok(()),
        Ok(_) => Err(cx.fail_at(ErrorKind::Json(JsonError::TrailingData))),
        Err(stop) => Err(stop),
    }
}

/// Skips the rest of the document from wherever reading stopped (maybe inside containers:
/// the tokenizer's depth says how many are open) and checks that nothing follows it.
/// Returns the JSON syntax fault found, if any; a fault of another kind (the stream) is no
/// verdict on the document's syntax and gives `None`.
fn skip_rest(json: &mut JsonIn<'_, '_>) -> Option<Fault> {
    let (tok, src) = (&mut *json.tok, &mut json.src);
    let outcome = (|| -> Result<Option<JsonError>, Fault> {
        // Each round either skips one value or closes one container: the document is finite.
        while tok.depth() > 0 {
            if !tok.skip_value(src)? {
                tok.next(src)?;
            }
        }
        match tok.next(src)? {
            Event::End => Ok(None),
            _ => Ok(Some(JsonError::TrailingData)),
        }
    })();
    match outcome {
        Ok(None) => None,
        Ok(Some(trailing)) => Some(Fault::json(tok.offset(), trailing)),
        Err(f) if matches!(f.kind, ErrorKind::Json(_)) => Some(f),
        Err(_) => None,
    }
}

/// The elements of a stored array, for the one reader of them all (`read_elements`).
pub trait Elements {
    /// A new default element at the end; `None` when the array is full.
    fn push_default(&mut self) -> Option<&mut dyn JsonValue>;
    /// How many elements fit.
    fn capacity(&self) -> usize;
    /// How many elements there are (a host's whole-array path returns to it).
    #[cfg(not(target_os = "none"))]
    fn count(&self) -> usize;
    /// Drops the elements after the first `count`.
    #[cfg(not(target_os = "none"))]
    fn cut_to(&mut self, count: usize);
}

impl<T: JsonValue + Default, const N: usize> Elements for heapless::Vec<T, N> {
    fn push_default(&mut self) -> Option<&mut dyn JsonValue> {
        self.push(T::default()).ok()?;
        self.last_mut().map(|v| v as &mut dyn JsonValue)
    }

    fn capacity(&self) -> usize {
        N
    }

    #[cfg(not(target_os = "none"))]
    fn count(&self) -> usize {
        self.len()
    }

    #[cfg(not(target_os = "none"))]
    fn cut_to(&mut self, count: usize) {
        self.truncate(count);
    }
}

impl<T: JsonValue + Default, const N: usize> JsonValue for heapless::Vec<T, N> {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::BeginArray => {
                heapless::Vec::clear(self);
                Ok(Flow::Body)
            }
            other => Err(wrong(JsonType::Array, other)),
        }
    }

    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        // The elements are scalars (a shape's dimensions): a spare one costs a few bytes.
        let mut spare = T::default();
        read_elements(cx, self, &mut spare, lim)
    }

    #[cfg(not(target_os = "none"))]
    fn quick_body(&mut self, json: &mut JsonIn<'_, '_>, lim: Lim) -> bool {
        quick_elements(json, self, lim.rest())
    }

    fn clear(&mut self) {
        heapless::Vec::clear(self);
    }
}

/// [`JsonValue::quick_body`] of a stored array: an array of integers that lies whole in the
/// chunk ([`Tokenizer::integer_array`]: a shape, a DMA descriptor's sizes and steps), each
/// element taken by its [`JsonValue::start`] with the element rules `inner`; `false`, with
/// `elements` as they were, when the scan or an element refuses (past the capacity too).
#[cfg(not(target_os = "none"))]
fn quick_elements(json: &mut JsonIn<'_, '_>, elements: &mut dyn Elements, inner: Lim) -> bool {
    let before = elements.count();
    let JsonIn { tok, src, .. } = json;
    let mut take = |n: crate::json::Number<'_>| match elements.push_default() {
        Some(slot) => matches!(slot.start(&Event::Num(n), inner), Ok(Flow::Done)),
        None => false,
    };
    if tok.integer_array(src, &mut take).is_some() {
        return true;
    }
    elements.cut_to(before);
    false
}

/// Reads the elements of an array into `elements`. Past its capacity, an array whose key
/// checks the runtime's own limit is read on into `spare` (the runtime's message needs the
/// count); any other is a capacity error at once.
// Never inlined: it is the one copy every `heapless::Vec<T, N>` shares.
#[inline(never)]
fn read_elements(
    cx: &mut Cx<'_, '_>,
    elements: &mut dyn Elements,
    spare: &mut dyn JsonValue,
    lim: Lim,
) -> Result<(), Stop> {
    let limit = lim.first();
    let inner = lim.rest();
    let capacity = elements.capacity() as u64;
    let checks_runtime_max = lim.rules.overflow.is_some() && lim.rules.overflow_limit == limit;
    let mut count: u64 = 0;
    // Each element's `[i]` is appended only where the path is read: before a container's
    // body, or at a failure (most elements are scalars: a shape's dimensions).
    let mark = cx.ctx.path.mark();
    loop {
        let ev = match cx.json.event() {
            Ok(Event::EndArray) => break,
            Ok(ev) => ev,
            Err(stop) => {
                Segment::Index(count).push(&mut cx.ctx.path);
                return Err(stop);
            }
        };
        let slot: &mut dyn JsonValue = match elements.push_default() {
            Some(slot) => slot,
            None if checks_runtime_max => {
                spare.clear();
                &mut *spare
            }
            None => {
                Segment::Index(count).push(&mut cx.ctx.path);
                return Err(cx.fail_capacity(limit, capacity));
            }
        };
        match slot.start(&ev, inner) {
            Ok(Flow::Done) => {}
            #[cfg(not(target_os = "none"))]
            Ok(Flow::Body) if slot.quick_body(&mut cx.json, inner) => {}
            Ok(Flow::Body) => {
                Segment::Index(count).push(&mut cx.ctx.path);
                slot.body(cx, inner)?;
                cx.ctx.path.reset(mark);
            }
            Err(issue) => {
                Segment::Index(count).push(&mut cx.ctx.path);
                return Err(cx.fail_issue(issue, inner));
            }
        }
        count = count.saturating_add(1);
    }
    if count > capacity {
        if let (true, Some(overflow)) = (count > lim.rules.runtime_max, lim.rules.overflow) {
            return Err(cx.fail_overflow(overflow, count));
        }
        return Err(cx.fail_capacity(limit, capacity));
    }
    Ok(())
}

/// An object that can be an entry of a [`Map`] or an [`EachMap`]: it stores its JSON key.
pub trait MapEntry: JsonValue {
    /// Stores the entry's name.
    fn set_key(&mut self, key: &str, limit: &'static str) -> Result<(), Issue>;
}

/// A JSON object keyed by name (`def.json` `var`, `dma_queue`), stored in document order.
/// Each entry holds its own name. Duplicate names are not looked for (that would be
/// quadratic); the runtime's map would keep one of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Map<T, const N: usize>(pub heapless::Vec<T, N>);

#[cfg(feature = "defmt")]
impl<T: defmt::Format, const N: usize> defmt::Format for Map<T, N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=[?]}", self.0.as_slice())
    }
}

impl<T, const N: usize> core::ops::Deref for Map<T, N> {
    type Target = heapless::Vec<T, N>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<T, const N: usize> core::ops::DerefMut for Map<T, N> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<T: MapEntry + Default, const N: usize> JsonValue for Map<T, N> {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.0.clear();
        start_object(ev)
    }

    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        let mut stored = Stored { map: &mut self.0, limit: lim.first(), key_limit: lim.rest().first() };
        read_entries(cx, &mut stored, lim, lim.rest().rest())
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// Which [`Entry`] variant an element of one streamed key is: a marker type per key,
/// generated from `schema/` (`crate::manifest::streamed`), so that handing an element on takes
/// no type test.
pub trait EntryOf<T> {
    /// `value` as the key's entry.
    fn entry(value: &T) -> Entry<'_>;
}

/// An array of any length, read one element at a time into one slot: every element is
/// validated, handed to the visitor as the key's [`Entry`] (`K` says which) and counted.
/// Memory does not grow with the array.
///
/// The slot is a local of the reading frame, not a field: a document holds only the count, so
/// the slots of its streamed keys (a `def.json` var is 1 KiB) take stack one at a time, while
/// their key is read, rather than all the time the document is.
#[derive(Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Each<T, K> {
    /// Elements read.
    pub count: u64,
    _slot: core::marker::PhantomData<fn() -> (T, K)>,
}

// By hand: the count and the element type, not the marker (a reader of the values uses the
// generated `visit_fields`, never this text).
impl<T, K> core::fmt::Debug for Each<T, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_streamed::<T>(f, "Each", self.count)
    }
}

/// The `Debug` of [`Each`] and [`EachMap`]: the count and the element type, not the marker.
fn debug_streamed<T>(f: &mut core::fmt::Formatter<'_>, name: &str, count: u64) -> core::fmt::Result {
    let slot = core::marker::PhantomData::<fn() -> T>;
    f.debug_struct(name).field("count", &count).field("_slot", &slot).finish()
}

impl<T: JsonValue + Default, K: EntryOf<T> + 'static> JsonValue for Each<T, K> {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        match ev {
            Event::BeginArray => Ok(Flow::Body),
            other => Err(wrong(JsonType::Array, other)),
        }
    }

    // A frame of its own: the slot's stack is taken only while this key is read.
    #[inline(never)]
    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        let mut slot = Slot::<T, K>(T::default(), core::marker::PhantomData);
        read_each(cx, &mut self.count, &mut slot, lim)
    }

    fn clear(&mut self) {
        self.count = 0;
    }
}

/// An [`Each`] array, or a string naming the member that holds it (`"ucode_lib":
/// "ucode_lib.json"`, neuronx-cc 2.14; spec §7.6): the array is streamed as [`Each`] does,
/// the name is kept for the chain to follow.
#[derive(Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EachOrName<T, K, const N: usize> {
    /// Elements read (0 for a name).
    pub count: u64,
    /// The member name, when the value is a string.
    pub name: Option<heapless::String<N>>,
    _slot: core::marker::PhantomData<fn() -> (T, K)>,
}

impl<T, K, const N: usize> core::fmt::Debug for EachOrName<T, K, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.name {
            Some(name) => core::fmt::Debug::fmt(name.as_str(), f),
            None => debug_streamed::<T>(f, "Each", self.count),
        }
    }
}

impl<T: JsonValue + Default, K: EntryOf<T> + 'static, const N: usize> JsonValue for EachOrName<T, K, N> {
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        match ev {
            Event::BeginArray => Ok(Flow::Body),
            // Into its place, not moved there: the name is a path's size.
            Event::Str(_) => start_str(self.name.insert(heapless::String::new()).as_mut_view(), ev, lim),
            other => Err(wrong(JsonType::Array, other)),
        }
    }

    // A frame of its own, as `Each`'s.
    #[inline(never)]
    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        let mut slot = Slot::<T, K>(T::default(), core::marker::PhantomData);
        read_each(cx, &mut self.count, &mut slot, lim.rest())
    }

    fn clear(&mut self) {
        self.count = 0;
        self.name = None;
    }
}

/// The one element of a streamed key: read as a [`JsonValue`] (a map entry's name first),
/// handed on as its [`Entry`].
trait ElementSlot {
    /// The element, to read.
    fn value(&mut self) -> &mut dyn JsonValue;
    /// The element, to hand on.
    fn entry(&self) -> Entry<'_>;
    /// Stores a map entry's name (an array's element has none).
    fn set_key(&mut self, key: &str, limit: &'static str) -> Result<(), Issue>;
}

/// The [`ElementSlot`] of an [`Each`] or an [`EachMap`] of `T`, handed on as `K` says.
struct Slot<T, K>(T, core::marker::PhantomData<fn() -> K>);

impl<T: JsonValue, K: EntryOf<T>> ElementSlot for Slot<T, K> {
    fn value(&mut self) -> &mut dyn JsonValue {
        &mut self.0
    }

    fn entry(&self) -> Entry<'_> {
        K::entry(&self.0)
    }

    fn set_key(&mut self, _key: &str, _limit: &'static str) -> Result<(), Issue> {
        Ok(())
    }
}

/// The slot of an [`EachMap`]: a [`Slot`] whose element keeps its name.
struct MapSlot<T, K>(Slot<T, K>);

impl<T: MapEntry, K: EntryOf<T>> ElementSlot for MapSlot<T, K> {
    fn value(&mut self) -> &mut dyn JsonValue {
        self.0.value()
    }

    fn entry(&self) -> Entry<'_> {
        self.0.entry()
    }

    fn set_key(&mut self, key: &str, limit: &'static str) -> Result<(), Issue> {
        self.0 .0.set_key(key, limit)
    }
}

/// The elements of a streamed array, each read into `slot`, handed to the visitor and counted.
// Never inlined: it is the one copy every `Each<T, K>` shares.
#[inline(never)]
fn read_each(cx: &mut Cx<'_, '_>, count: &mut u64, slot: &mut dyn ElementSlot, lim: Lim) -> Result<(), Stop> {
    loop {
        let mark = cx.ctx.path.mark();
        cx.ctx.path.push_index(usize::try_from(*count).unwrap_or(usize::MAX));
        match cx.json.next_element() {
            Ok(false) => {
                cx.ctx.path.reset(mark);
                return Ok(());
            }
            Ok(true) => {}
            Err(stop) => return Err(stop),
        }
        slot.value().clear();
        read(cx, slot.value(), lim)?;
        cx.emit(slot.entry())?;
        *count = count.saturating_add(1);
        cx.ctx.path.reset(mark);
    }
}

/// A JSON object keyed by name of any size (`def.json` `var`, `dma_queue`), read one entry at a
/// time into one slot: every entry is validated, handed to the visitor as the key's [`Entry`]
/// (`K` says which) and counted. Memory does not grow with the object. The slot is a local, as
/// [`Each`]'s.
#[derive(Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EachMap<T, K> {
    /// Entries read.
    pub count: u64,
    _slot: core::marker::PhantomData<fn() -> (T, K)>,
}

// By hand, as `Each`'s.
impl<T, K> core::fmt::Debug for EachMap<T, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_streamed::<T>(f, "EachMap", self.count)
    }
}

impl<T: MapEntry + Default, K: EntryOf<T> + 'static> JsonValue for EachMap<T, K> {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        start_object(ev)
    }

    // A frame of its own: the slot's stack is taken only while this key is read.
    #[inline(never)]
    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        let mut slot = MapSlot(Slot::<T, K>(T::default(), core::marker::PhantomData));
        let mut streamed = Streamed { slot: &mut slot, count: &mut self.count, key_limit: lim.first() };
        read_entries(cx, &mut streamed, lim, lim.rest())
    }

    fn clear(&mut self) {
        self.count = 0;
    }
}

/// Where the key loop of an object keyed by name ([`read_entries`]) puts each entry: a
/// [`Map`] stores it ([`Stored`]), an [`EachMap`] hands it on ([`Streamed`]).
trait EntryTarget {
    /// Readies a new entry named `key`.
    fn begin(&mut self, key: &str) -> Result<(), Issue>;
    /// The entry being read (`None` only when `begin` made none).
    fn value(&mut self) -> Option<&mut dyn JsonValue>;
    /// After the entry's value was read.
    fn end(&mut self, cx: &mut Cx<'_, '_>) -> Result<(), Stop>;
}

/// The entries of an object keyed by name, each named (its key path extended by its name),
/// read and finished by `target`.
// Never inlined: it is the one copy every `Map` and `EachMap` shares.
#[inline(never)]
fn read_entries(cx: &mut Cx<'_, '_>, target: &mut dyn EntryTarget, lim: Lim, value_lim: Lim) -> Result<(), Stop> {
    loop {
        let mark = cx.ctx.path.mark();
        let step = match cx.json.next_key_bytes() {
            Ok(None) => break,
            Ok(Some(key)) => match core::str::from_utf8(key) {
                Ok(key) => {
                    cx.ctx.path.push_key(key);
                    target.begin(key)
                }
                // The tokenizer checked every byte of the key: not reached.
                Err(_) => return Err(cx.fail_at(ErrorKind::Json(JsonError::InvalidUtf8))),
            },
            Err(stop) => return Err(stop),
        };
        if let Err(issue) = step {
            return Err(cx.fail_issue(issue, lim));
        }
        if let Some(value) = target.value() {
            read(cx, value, value_lim)?;
        }
        target.end(cx)?;
        cx.ctx.path.reset(mark);
    }
    Ok(())
}

/// A [`Map`]'s entries, stored in document order up to its capacity (`limit` names it).
struct Stored<'m, T, const N: usize> {
    map: &'m mut heapless::Vec<T, N>,
    limit: &'static str,
    key_limit: &'static str,
}

impl<T: MapEntry + Default, const N: usize> EntryTarget for Stored<'_, T, N> {
    fn begin(&mut self, key: &str) -> Result<(), Issue> {
        if self.map.push(T::default()).is_err() {
            return Err(Issue::Capacity(CapacityError { limit: self.limit, capacity: N as u64 }));
        }
        match self.map.last_mut() {
            Some(entry) => entry.set_key(key, self.key_limit),
            None => Ok(()),
        }
    }

    fn value(&mut self) -> Option<&mut dyn JsonValue> {
        self.map.last_mut().map(|e| e as &mut dyn JsonValue)
    }

    fn end(&mut self, _cx: &mut Cx<'_, '_>) -> Result<(), Stop> {
        Ok(())
    }
}

/// An [`EachMap`]'s entries, each read into one slot, handed to the visitor and counted.
struct Streamed<'s> {
    slot: &'s mut dyn ElementSlot,
    count: &'s mut u64,
    key_limit: &'static str,
}

impl EntryTarget for Streamed<'_> {
    fn begin(&mut self, key: &str) -> Result<(), Issue> {
        self.slot.value().clear();
        self.slot.set_key(key, self.key_limit)
    }

    fn value(&mut self) -> Option<&mut dyn JsonValue> {
        Some(self.slot.value())
    }

    fn end(&mut self, cx: &mut Cx<'_, '_>) -> Result<(), Stop> {
        cx.emit(self.slot.entry())?;
        *self.count = self.count.saturating_add(1);
        Ok(())
    }
}

/// An array whose elements are validated and counted, not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArrayLen(pub u64);

impl JsonValue for ArrayLen {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.0 = 0;
        match ev {
            Event::BeginArray => Ok(Flow::Body),
            other => Err(wrong(JsonType::Array, other)),
        }
    }

    fn body(&mut self, cx: &mut Cx<'_, '_>, _lim: Lim) -> Result<(), Stop> {
        self.0 = skip_container(cx)?;
        Ok(())
    }

    fn clear(&mut self) {
        self.0 = 0;
    }
}

/// Skips (and validates) the rest of an opened container, its closing bracket included:
/// how many values it held.
fn skip_container(cx: &mut Cx<'_, '_>) -> Result<u64, Stop> {
    let mut count: u64 = 0;
    loop {
        match cx.json.skip_value() {
            Ok(true) => count = count.saturating_add(1),
            Ok(false) => break,
            Err(stop) => return Err(stop),
        }
    }
    match cx.json.event() {
        Ok(_) => Ok(count),
        Err(stop) => Err(stop),
    }
}

/// Any JSON value, of which only its presence matters (and whether it is `false`): the rest
/// is skipped, but validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Present {
    /// The value is the literal `false`.
    pub is_false: bool,
}

impl JsonValue for Present {
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.is_false = matches!(ev, Event::Bool(false));
        match ev {
            Event::BeginArray | Event::BeginObject => Ok(Flow::Body),
            _ => Ok(Flow::Done),
        }
    }

    fn body(&mut self, cx: &mut Cx<'_, '_>, _lim: Lim) -> Result<(), Stop> {
        skip_container(cx).map(|_| ())
    }

    fn clear(&mut self) {
        self.is_false = false;
    }
}

/// A string, or any other value whose type is kept (the value itself is skipped, but
/// validated): for a key whose type only some elements constrain. Its `Debug` form is the
/// string's (`"kelf-0.json"`), or the other value's type (`<UnsignedInteger>`).
#[derive(Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StrOrOther<const N: usize> {
    /// The string, when the value is one.
    pub text: Option<heapless::String<N>>,
    /// The value's type, when it is not a string.
    pub other: Option<JsonType>,
}

impl<const N: usize> core::fmt::Debug for StrOrOther<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (&self.text, self.other) {
            (Some(text), _) => core::fmt::Debug::fmt(text.as_str(), f),
            (None, Some(other)) => write!(f, "<{other:?}>"),
            (None, None) => f.write_str("<none>"),
        }
    }
}

impl<const N: usize> StrOrOther<N> {
    /// The string, when the value is one.
    pub fn as_str(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

impl<const N: usize> JsonValue for StrOrOther<N> {
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        match ev {
            Event::Str(s) => {
                let mut text = heapless::String::new();
                copy_str(text.as_mut_view(), s, lim.first())?;
                self.text = Some(text);
                Ok(Flow::Done)
            }
            other => {
                self.other = Some(found_type(other));
                match other {
                    Event::BeginArray | Event::BeginObject => Ok(Flow::Body),
                    _ => Ok(Flow::Done),
                }
            }
        }
    }

    fn body(&mut self, cx: &mut Cx<'_, '_>, lim: Lim) -> Result<(), Stop> {
        Present::default().body(cx, lim)
    }

    fn clear(&mut self) {
        self.text = None;
        self.other = None;
    }
}

/// The first event of an object value.
#[inline(never)]
pub fn start_object(ev: &Event<'_>) -> Result<Flow, Issue> {
    match ev {
        Event::BeginObject => Ok(Flow::Body),
        other => Err(wrong(JsonType::Object, other)),
    }
}

/// A generated object's keys: everything [`read_object`] needs but the fields themselves.
#[derive(Debug)]
pub struct ObjectKeys {
    /// Every JSON name the object consumes (aliases too), with the slot it fills.
    pub names: &'static [(&'static str, u8)],
    /// Per slot: the key (its schema name) and the runtime's message when it is missing.
    pub keys: &'static [RequiredKey],
    /// Per slot: the key's capacity names and rules.
    pub lims: &'static [Lim],
    /// Bit `slot` set: the key is required.
    pub required: u64,
}

impl ObjectKeys {
    /// The slot of JSON key `key`, `None` for a key the object does not consume.
    fn slot_of(&self, key: &[u8]) -> Option<(&'static str, u8)> {
        // The length and the first byte before the bytes: most names differ from the key in
        // one or the other, and a `memcmp` call costs more than the compare of a short name.
        let same = |name: &str| {
            name.len() == key.len() && name.as_bytes().first() == key.first() && same_bytes(name.as_bytes(), key)
        };
        self.names.iter().find(|(name, _)| same(name)).copied()
    }
}

/// `a == b` for two slices of one length, eight bytes at a time: a key name is a few words,
/// where a `memcmp` call costs more than the compare.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let (mut a, mut b) = (a, b);
    while let (Some((word_a, rest_a)), Some((word_b, rest_b))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        if u64::from_ne_bytes(*word_a) != u64::from_ne_bytes(*word_b) {
            return false;
        }
        (a, b) = (rest_a, rest_b);
    }
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A generated object's fields, by slot.
pub trait Fields {
    /// The field of slot `slot` (`None` past the last).
    fn field(&mut self, slot: u8) -> Option<&mut dyn JsonValue>;
}

/// Reads the rest of an object opened by `{`: each consumed key into its field (then checked
/// against its `strict` map, if any), every other value skipped but validated; a key given
/// twice, and at the end a required key not given, is an error.
pub fn read_object(cx: &mut Cx<'_, '_>, keys: &'static ObjectKeys, fields: &mut dyn Fields) -> Result<(), Stop> {
    let mut seen: u64 = 0;
    // Every key's segment is dropped after its value: the path is back here for each key.
    let mark = cx.ctx.path.mark();
    loop {
        // A host takes a known key and its scalar value that lie whole in the chunk in one
        // call; any that needs more is read again (or on) token by token below.
        #[cfg(not(target_os = "none"))]
        let quick = match cx.json.quick_member(|key| keys.slot_of(key)) {
            None => None,
            Some(QuickMember::End) => break,
            Some(QuickMember::Skipped) => continue,
            Some(QuickMember::Key(found)) => Some(found),
            Some(QuickMember::Member(found, ev, before)) => match quick_scalar(keys, fields, &mut seen, found, &ev) {
                QuickRead::Done => continue,
                // A container opened: its body as `read_key` reads it after the event.
                QuickRead::Body(value, lim) => {
                    if quick_or_body(cx, value, lim, Segment::Key(found.0))? {
                        cx.ctx.path.reset(mark);
                    }
                    continue;
                }
                QuickRead::Again => {
                    cx.json.tok.rewind(before);
                    None
                }
                QuickRead::Refused(issue, lim) => {
                    cx.ctx.path.push_key(found.0);
                    return Err(cx.fail_issue(issue, lim));
                }
                QuickRead::Unknown(strict, text) => {
                    cx.ctx.path.push_key(found.0);
                    return Err(cx.fail_unknown(strict, text));
                }
            },
        };
        #[cfg(target_os = "none")]
        let quick = None;
        let found = match quick {
            Some(found) => found,
            None => match cx.json.next_key_bytes() {
                Ok(None) => break,
                Ok(Some(key)) => match keys.slot_of(key) {
                    Some(found) => found,
                    None => {
                        // A skipped value's syntax error names its key: the key's bytes are
                        // gone from the tokenizer once the value is read, so the segment is kept.
                        cx.ctx.path.push_key_bytes(key);
                        skip(cx)?;
                        cx.ctx.path.reset(mark);
                        continue;
                    }
                },
                Err(stop) => return Err(stop),
            },
        };
        // A consumed key is the schema's name: its segment is appended only where the path
        // is read (an error, a container's body), not for every scalar.
        let (name, slot) = found;
        if let Err(stop) = mark_seen(cx, &mut seen, slot, keys.keys) {
            cx.ctx.path.push_key(name);
            return Err(stop);
        }
        if let (Some(value), Some(&lim)) = (fields.field(slot), keys.lims.get(usize::from(slot))) {
            if read_key(cx, value, lim, Segment::Key(name))? {
                cx.ctx.path.reset(mark);
            }
        }
    }
    check_required(cx, seen, keys.required, keys.keys)
}

/// What [`quick_scalar`] made of a member the tokenizer read whole.
#[cfg(not(target_os = "none"))]
enum QuickRead<'f> {
    /// Stored (and checked against its `strict` map).
    Done,
    /// A container opened for the field: its body is to be read.
    Body(&'f mut dyn JsonValue, Lim),
    /// To be read again token by token (a duplicate key, whose error is at the key; a typed
    /// list; a value that asks for more).
    Again,
    /// The value's start refused it (with the key's rules).
    Refused(Issue, Lim),
    /// The string (the field's) is not in the key's `strict` map.
    Unknown(Strict, &'f str),
}

/// [`read_object`]'s step for a member read whole ([`QuickMember::Member`]): the scalar `ev`
/// into the field of slot `found.1`, as [`read_key`] stores it; a member whose reading the
/// tokenizer must redo, with `seen` as it was.
#[cfg(not(target_os = "none"))]
fn quick_scalar<'f>(
    keys: &'static ObjectKeys,
    fields: &'f mut dyn Fields,
    seen: &mut u64,
    found: (&'static str, u8),
    ev: &Event<'_>,
) -> QuickRead<'f> {
    let slot = found.1;
    let bit = seen_bit(slot);
    let (Some(value), Some(&lim)) = (fields.field(slot), keys.lims.get(usize::from(slot))) else {
        return QuickRead::Again;
    };
    if *seen & bit != 0 || lim.rules.tag.is_some() {
        return QuickRead::Again;
    }
    match value.start(ev, lim) {
        Ok(Flow::Done) => {}
        Ok(Flow::Body) if matches!(ev, Event::BeginObject | Event::BeginArray) => {
            *seen |= bit;
            return QuickRead::Body(value, lim);
        }
        Ok(Flow::Body) => return QuickRead::Again,
        Err(issue) => {
            *seen |= bit;
            return QuickRead::Refused(issue, lim);
        }
    }
    *seen |= bit;
    match unknown_text(value, lim) {
        Some((strict, text)) => QuickRead::Unknown(strict, text),
        None => QuickRead::Done,
    }
}

/// The key path segment of a value read by [`read_key`] or [`read_elements`], appended only when
/// the path is read: before a container's body, or at a failure.
#[derive(Clone, Copy)]
enum Segment {
    Key(&'static str),
    Index(u64),
}

impl Segment {
    fn push(self, path: &mut KeyPath) {
        match self {
            Segment::Key(name) => path.push_key(name),
            Segment::Index(index) => path.push_index(usize::try_from(index).unwrap_or(usize::MAX)),
        }
    }
}

/// Reads one consumed key's value (a typed list when its rules give a tag) and checks a string
/// against the key's `strict` map. The key's segment `segment` is appended to the key path
/// where the path is read (see [`Segment`]); returns whether it was.
fn read_key(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue, lim: Lim, segment: Segment) -> Result<bool, Stop> {
    if let Some(tag) = lim.rules.tag {
        segment.push(&mut cx.ctx.path);
        read_tagged(cx, value, tag, lim)?;
        check_strict(cx, value, lim)?;
        return Ok(true);
    }
    let pushed = read_as(cx, value, lim, segment)?;
    if let Err(stop) = check_strict(cx, value, lim) {
        if !pushed {
            segment.push(&mut cx.ctx.path);
        }
        return Err(stop);
    }
    Ok(pushed)
}

/// [`read`], with the value's key path segment appended only before a container's body or at a
/// failure; returns whether it was appended.
fn read_as(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue, lim: Lim, segment: Segment) -> Result<bool, Stop> {
    let flow = match cx.json.event() {
        Ok(ev) => value.start(&ev, lim),
        Err(stop) => {
            segment.push(&mut cx.ctx.path);
            return Err(stop);
        }
    };
    match flow {
        Ok(Flow::Done) => Ok(false),
        Ok(Flow::Body) => quick_or_body(cx, value, lim, segment),
        Err(issue) => {
            segment.push(&mut cx.ctx.path);
            Err(cx.fail_issue(issue, lim))
        }
    }
}

/// Reads the body of a container `value` opened: whole where it lies in the chunk
/// ([`JsonValue::quick_body`], a host's), else token by token with its segment `segment` on the
/// key path. Returns whether the segment was appended.
// The image has one caller (`read_as`), whose code this was.
#[cfg_attr(target_os = "none", inline(always))]
fn quick_or_body(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue, lim: Lim, segment: Segment) -> Result<bool, Stop> {
    #[cfg(not(target_os = "none"))]
    if value.quick_body(&mut cx.json, lim) {
        return Ok(false);
    }
    segment.push(&mut cx.ctx.path);
    value.body(cx, lim)?;
    Ok(true)
}

/// Checks a string against the key's `strict` map.
fn check_strict(cx: &mut Cx<'_, '_>, value: &mut dyn JsonValue, lim: Lim) -> Result<(), Stop> {
    match unknown_text(value, lim) {
        Some((strict, text)) => Err(cx.fail_unknown(strict, text)),
        None => Ok(()),
    }
}

/// The key's `strict` map and the value's string, when the map does not know it.
fn unknown_text(value: &dyn JsonValue, lim: Lim) -> Option<(Strict, &str)> {
    // The rule first: most keys have none, and the value's text is a call.
    let strict = lim.rules.strict?;
    value.text().filter(|text| !(strict.known)(text)).map(|text| (strict, text))
}

/// Skips (and validates) the value of an unconsumed key.
fn skip(cx: &mut Cx<'_, '_>) -> Result<(), Stop> {
    match cx.json.skip_value() {
        Ok(_) => Ok(()),
        Err(stop) => Err(stop),
    }
}

/// Records that `slot` was seen; a second time is a duplicate-key error.
fn mark_seen(cx: &mut Cx<'_, '_>, seen: &mut u64, slot: u8, keys: &[RequiredKey]) -> Result<(), Stop> {
    let bit = seen_bit(slot);
    if *seen & bit != 0 {
        let key = keys.get(usize::from(slot)).map_or("", |k| k.key);
        return Err(cx.fail_duplicate(key));
    }
    *seen |= bit;
    Ok(())
}

/// The bit of slot `slot` in an object's keys seen.
fn seen_bit(slot: u8) -> u64 {
    1u64 << (slot & 63)
}

/// At the end of an object: the first required key not seen is an error (with the runtime's
/// message where the schema gives one).
fn check_required(cx: &mut Cx<'_, '_>, seen: u64, required: u64, keys: &'static [RequiredKey]) -> Result<(), Stop> {
    let absent = required & !seen;
    if absent == 0 {
        return Ok(());
    }
    match keys.get(absent.trailing_zeros() as usize) {
        Some(key) => Err(cx.fail_missing(key)),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects, clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    extern crate std;
    use std::format;

    /// A string default set in place is the one built whole, cut where it does not fit.
    #[test]
    fn reset_str_is_str_default_in_place() {
        for s in ["", "copy", "éà", "a longer default than eight", "ab€cd"] {
            let mut out: heapless::String<8> = str_default("previous");
            reset_str(&mut out, s);
            assert_eq!(out, str_default::<8>(s), "{s}");
        }
    }

    /// A generated object's `clear` (string defaults set in place) gives its default, as a
    /// DMA descriptor and block are cleared for each of a real NEFF's tens of thousands.
    #[test]
    fn a_cleared_descriptor_is_the_default_one() {
        let mut desc = crate::manifest::DmaDesc {
            op: str_default("memset"),
            to: str_default("somewhere"),
            from: Some(str_default("elsewhere")),
            to_off: 7,
            ..Default::default()
        };
        assert_ne!(desc, crate::manifest::DmaDesc::default());
        JsonValue::clear(&mut desc);
        assert_eq!(desc, crate::manifest::DmaDesc::default());
        assert_eq!(desc.op.as_str(), "copy");
        let fresh = crate::manifest::DmaBlock::default();
        let mut block = crate::manifest::DmaBlock { queue: Some(str_default("q")), ..Default::default() };
        JsonValue::clear(&mut block);
        assert_eq!(block, fresh);
    }

    /// A byte source over `data` that shows `chunk` bytes at a time and fails once `fail_at`
    /// bytes are consumed.
    struct Chunks<'d> {
        data: &'d [u8],
        at: usize,
        chunk: usize,
        fail_at: Option<usize>,
    }

    impl ByteSource for Chunks<'_> {
        fn fill(&mut self) -> Result<&[u8], embedded_io::ErrorKind> {
            if self.fail_at.is_some_and(|f| self.at >= f) {
                return Err(embedded_io::ErrorKind::Interrupted);
            }
            let end = (self.at + self.chunk).min(self.data.len()).min(self.fail_at.unwrap_or(usize::MAX));
            Ok(&self.data[self.at..end])
        }

        fn consume(&mut self, amount: usize) {
            self.at += amount;
            assert!(self.at <= self.data.len(), "consumed past the end");
        }
    }

    #[test]
    fn src_hands_on_every_byte_once_in_order_and_the_source_error_where_it_stands() {
        let data: std::vec::Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for chunk in [1, 3, 511, 512, 513, 4096, SRC_COPY - 1, SRC_COPY, SRC_COPY + 1] {
            for take in [1, 2, 100, 1000] {
                let mut source = Chunks { data: &data, at: 0, chunk, fail_at: None };
                let mut src = Src::new(&mut source);
                let mut got = std::vec::Vec::new();
                loop {
                    let shown = src.fill_buf().unwrap();
                    if shown.is_empty() {
                        break;
                    }
                    let n = shown.len().min(take);
                    got.extend_from_slice(&shown[..n]);
                    BufRead::consume(&mut src, n);
                }
                assert_eq!(got, data, "chunk {chunk}, take {take}");
                assert_eq!(source.at, data.len());
                // A failing source: every byte before the failure, then its error.
                let mut failing = Chunks { data: &data, at: 0, chunk, fail_at: Some(1234) };
                let mut src = Src::new(&mut failing);
                let mut delivered = 0;
                let error = loop {
                    match src.fill_buf() {
                        Ok(shown) => {
                            let n = shown.len().min(take);
                            assert_eq!(shown[..n], data[delivered..delivered + n]);
                            delivered += n;
                            BufRead::consume(&mut src, n);
                        }
                        Err(e) => break e,
                    }
                };
                assert_eq!((delivered, error), (1234, embedded_io::ErrorKind::Interrupted), "chunk {chunk}");
            }
        }
    }

    #[test]
    fn a_shown_path_is_whole_or_a_marked_head() {
        assert_eq!(shown_path("var.x", false, Some("size")).as_str(), "var.x.size");
        assert_eq!(shown_path("var.x", false, None).as_str(), "var.x");
        // A dropped segment: the key is not appended to what is left, the head is marked.
        assert_eq!(shown_path("var", true, Some("alignment")).as_str(), "var…");
        // The key does not fit: the head of the path, marked, never a trailing `.`.
        let long = format!("var.{}", "w".repeat(KEY_PATH_TEXT - 6));
        let shown = shown_path(&long, false, Some("alignment"));
        assert!(shown.ends_with('…') && long.starts_with(shown.trim_end_matches('…')), "{shown}");
        assert!(shown.len() <= KEY_PATH_TEXT);
    }

    #[test]
    fn messages_show_the_head_that_fits_and_a_host_keeps_the_whole_path() {
        let mut path = KeyPath::new();
        path.push_key("var");
        let name = "w".repeat(KEY_PATH_TEXT);
        let before = path.mark();
        path.push_key(&name);
        path.push_key("size");
        assert_eq!(path.as_str(), "var", "what does not fit the message is dropped");
        assert!(path.is_cut());
        assert_eq!(path.last_key(), "var");
        let whole = format!("var.{name}.size");
        if KEY_PATH_BYTES > KEY_PATH_TEXT {
            assert_eq!(path.whole(), Some(whole.as_str()));
        } else {
            assert_eq!(path.whole(), None);
        }
        path.reset(before);
        assert!(!path.is_cut());
        path.push_key("x");
        assert_eq!((path.as_str(), path.whole()), ("var.x", Some("var.x")));
        let mut full = KeyPath::new();
        full.push_key(&"p".repeat(KEY_PATH_BYTES + 1));
        assert_eq!(full.whole(), None, "past its buffer the path is not whole");
    }

    #[test]
    fn a_streamed_key_shows_as_its_element_type_alone() {
        // A `{:?}` of a document (an error report, a test) shows no marker.
        let each: Each<u64, crate::manifest::streamed::RowPtr> = Each::default();
        assert_eq!(format!("{each:?}"), "Each { count: 0, _slot: PhantomData<fn() -> u64> }");
    }

    #[test]
    fn a_key_path_joins_keys_and_indices() {
        let mut path = KeyPath::new();
        path.push_key("nodes");
        let mark = path.mark();
        path.push_index(2);
        path.push_key("attrs");
        assert_eq!(path.as_str(), "nodes[2].attrs");
        path.reset(mark);
        path.push_index(usize::MAX);
        assert_eq!(path.as_str(), format!("nodes[{}]", usize::MAX));
    }

    #[test]
    fn a_segment_past_the_buffer_is_dropped_until_reset() {
        let mut path = KeyPath::new();
        path.push_key(&"x".repeat(KEY_PATH_TEXT - 1));
        let mark = path.mark();
        path.push_key("y"); // one byte too many with its dot
        assert!(path.is_cut());
        path.push_index(0); // deeper segments are dropped too
        assert_eq!(path.as_str(), "x".repeat(KEY_PATH_TEXT - 1));
        path.reset(mark);
        assert!(!path.is_cut());
        path.push_index(7); // "[7]" does not fit either
        assert!(path.is_cut());
        let mut full = KeyPath::new();
        full.push_key(&"x".repeat(KEY_PATH_TEXT));
        assert!(!full.is_cut());
        assert_eq!(full.as_str().len(), KEY_PATH_TEXT);
    }

    #[test]
    fn a_cut_path_is_shortened_on_a_char_boundary() {
        let mut path = KeyPath::new();
        path.push_key(&"é".repeat(KEY_PATH_TEXT / 2 - 1)); // 2 bytes short of the buffer
        path.push_key("next");
        assert!(path.is_cut());
        let ctx = ErrCtx { stage: Stage::DefJson, member: "sg00/def.json", path };
        let e = ctx.error(5, ErrorKind::Truncated);
        // KEY_PATH_TEXT - 3 bytes are kept at most, down to a char boundary, then the ellipsis.
        assert_eq!(e.key_path.as_str(), format!("{}…", "é".repeat((KEY_PATH_TEXT - 3) / 2)));
        assert!(!e.key_path.is_elided());
    }
}
