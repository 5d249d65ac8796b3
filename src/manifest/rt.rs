//! Reader support for the generated consumed-key parsers.
//!
//! The parsers generated from `schema/` are thin: per object a `match` from key to slot and
//! one call per slot into this module. Here live the pieces they share: the [`Cx`] that
//! carries the tokenizer, the byte source and the error context (stage, member, bounded key
//! path); the [`JsonValue`] trait implemented by every storable type (integers, bools, `f64`,
//! `heapless::String`, `heapless::Vec`, [`Map`], [`Each`], [`ArrayLen`], `Option` and the
//! generated objects); and the key loop helpers (duplicate and required-key checks).
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

use super::{Entry, EntryAt, JsonType, ManifestError, Visitor};
use crate::error::{CapacityError, Error, ErrorKind, Stage, Text, KEY_PATH_TEXT};
use crate::json::{Event, Fault, JsonError, Tokenizer};

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
    pub fn mark(&self) -> PathMark {
        PathMark { len: self.len, depth: self.depth, key_at: self.key_at }
    }

    /// Returns to `mark`.
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

    fn append(&mut self, parts: &[&[u8]]) {
        self.depth = self.depth.saturating_add(1);
        let end = parts.iter().try_fold(self.len, |end, p| end.checked_add(p.len()));
        if self.shown_cut_at == u16::MAX && end.is_none_or(|end| end > KEY_PATH_TEXT) {
            self.shown_cut_at = self.depth;
            self.shown_len = self.len;
        }
        let rest = end.and_then(|end| Some((self.buf.get_mut(self.len..end)?, end)));
        let (Some((mut rest, end)), u16::MAX) = (rest, self.cut_at) else {
            self.cut_at = self.cut_at.min(self.depth);
            return;
        };
        for p in parts {
            if let Some((dst, tail)) = core::mem::take(&mut rest).split_at_mut_checked(p.len()) {
                dst.copy_from_slice(p);
                rest = tail;
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
        let before = self.len;
        if self.len == 0 && self.cut_at == u16::MAX {
            self.append(&[key.as_bytes()]);
        } else {
            self.append(&[b".", key.as_bytes()]);
        }
        if self.len != before && self.shown_cut_at == u16::MAX {
            self.key_at = self.len.saturating_sub(key.len());
        }
    }

    /// Appends `[index]`.
    pub fn push_index(&mut self, index: usize) {
        let mut digits = [0u8; 20];
        let digits = decimal(index, &mut digits);
        self.append(&[b"[", digits, b"]"]);
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
        let bytes = self.buf.get(self.key_at..self.shown()).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or("")
    }

    /// True when a segment was dropped from what messages show.
    pub fn is_cut(&self) -> bool {
        self.shown_cut_at != u16::MAX
    }
}

/// `n` in decimal, written at the end of `buf`.
// Bounded: a `usize` has at most 20 digits, `at` stops at 0, and a digit is below 10.
#[allow(clippy::arithmetic_side_effects)]
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        if let Some(d) = buf.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    buf.get(at..).unwrap_or(&[])
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
        let e = Error::in_member(self.stage, self.member, offset, kind);
        if self.path.is_cut() {
            let mut text: heapless::String<KEY_PATH_TEXT> = heapless::String::new();
            let keep = KEY_PATH_TEXT.saturating_sub(3);
            let s = self.path.as_str();
            let end = (0..=s.len().min(keep)).rev().find(|&end| s.is_char_boundary(end)).unwrap_or(0);
            let _ = text.push_str(s.get(..end).unwrap_or(""));
            let _ = text.push('…');
            e.with_key_path(&text)
        } else {
            e.with_key_path(self.path.as_str())
        }
    }

    /// The crate error for `f`, a failure of this read: the stage, member and key path (with
    /// the fault's own key, if it names one) added once.
    #[cold]
    #[inline(never)]
    pub fn attach(&self, f: DocFault) -> Error {
        match f.key {
            None => self.error(f.offset, f.kind),
            Some(key) => Error::in_member(self.stage, self.member, f.offset, f.kind)
                .with_key_path(&child_path(self.path.as_str(), key)),
        }
    }
}

/// `path.key`: the key path of key `key` of the element at `path`.
pub(crate) fn child_path(path: &str, key: &str) -> heapless::String<KEY_PATH_TEXT> {
    let mut out = heapless::String::new();
    let _ = core::fmt::write(&mut out, format_args!("{path}.{key}"));
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

/// A read in progress: the tokenizer, the source, the error context and the visitor that
/// streamed elements go to.
///
/// `'a` is the read's borrows; `'t` is the tokenizer's lent scratch, a lifetime of its own
/// because the tokenizer is reborrowed for each document (`&mut` cannot shorten it).
pub struct Cx<'a, 't, R> {
    /// The tokenizer.
    pub tok: &'a mut Tokenizer<'t>,
    /// The byte source.
    pub src: &'a mut R,
    /// Stage, member and key path.
    pub ctx: ErrCtx<'a>,
    /// Where each element of an `each<..>` / `each_map<..>` key goes.
    pub visitor: &'a mut dyn Visitor,
}

impl<'a, 't, R: BufRead> Cx<'a, 't, R> {
    /// A read of `member` at the start of its document.
    pub fn new(
        tok: &'a mut Tokenizer<'t>,
        src: &'a mut R,
        stage: Stage,
        member: &'a str,
        visitor: &'a mut dyn Visitor,
    ) -> Self {
        tok.reset();
        Self { tok, src, ctx: ErrCtx { stage, member, path: KeyPath::new() }, visitor }
    }

    /// Hands `value`, the element just read, to the visitor when `lim` is a streamed key's.
    fn emit(&mut self, value: &dyn core::any::Any, lim: Lim) -> Result<(), DocFault> {
        let Some(entry) = lim.rules.entry.and_then(|f| f(value)) else { return Ok(()) };
        let at = EntryAt { ctx: &self.ctx, offset: self.tok.offset() };
        self.visitor.entry(entry, &at)
    }

    /// An error of `kind` at the tokenizer's current offset.
    #[cold]
    #[inline(never)]
    pub fn error(&self, kind: ErrorKind) -> DocFault {
        DocFault::new(self.tok.offset(), kind)
    }

    /// A manifest error at the tokenizer's current offset.
    #[cold]
    #[inline(never)]
    pub fn manifest_error(&self, e: ManifestError) -> DocFault {
        self.error(ErrorKind::Manifest(e))
    }

    #[cold]
    #[inline(never)]
    fn issue(&self, issue: Issue, lim: Lim) -> DocFault {
        let kind = match issue {
            Issue::WrongType { expected, found } => {
                ErrorKind::Manifest(ManifestError::WrongType { expected, found, message: lim.rules.type_error })
            }
            Issue::Capacity(c) => ErrorKind::Capacity(c),
            Issue::Json(e) => ErrorKind::Json(e),
            Issue::Manifest(e) => ErrorKind::Manifest(e),
        };
        self.error(kind)
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
    /// A manifest rule was broken.
    Manifest(ManifestError),
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
    /// For a streamed key: its element as an [`Entry`] (`None` for another type).
    pub entry: Option<EntryFn>,
}

/// Turns a streamed key's element into its [`Entry`] variant (generated per key).
pub type EntryFn = fn(&dyn core::any::Any) -> Option<Entry<'_>>;

/// Rules of a key without any.
pub static NO_RULES: Rules =
    Rules { type_error: "", format_error: "", overflow_limit: "", runtime_max: 0, overflow: None, entry: None };

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
        Event::Num(n) if n.text().starts_with('-') => JsonType::Integer,
        Event::Num(_) => JsonType::UnsignedInteger,
        Event::Bool(_) => JsonType::Bool,
        Event::Null => JsonType::Null,
        Event::End => JsonType::Nothing,
    }
}

fn wrong(expected: JsonType, ev: &Event<'_>) -> Issue {
    Issue::WrongType { expected, found: found_type(ev) }
}

/// A value the generated parsers can store.
pub trait JsonValue: Default {
    /// The JSON type it reads.
    const EXPECTED: JsonType;

    /// Takes the value's first event.
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue>;

    /// Reads the rest of a container opened by [`JsonValue::start`].
    fn body<R: BufRead>(&mut self, _cx: &mut Cx<'_, '_, R>, _lim: Lim) -> Result<(), DocFault> {
        Ok(())
    }

    /// Back to the state of a document without this key (defaults are set by the owner).
    fn clear(&mut self);
}

fn as_u64(ev: &Event<'_>, expected: JsonType) -> Result<u64, Issue> {
    match ev {
        Event::Num(n) if n.is_integer() && !n.text().starts_with('-') => n.as_u64().map_err(Issue::Json),
        Event::Num(n) if n.text() == "-0" => Ok(0),
        other => Err(wrong(expected, other)),
    }
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl JsonValue for $t {
            const EXPECTED: JsonType = JsonType::UnsignedInteger;
            fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
                let v = as_u64(ev, Self::EXPECTED)?;
                *self = <$t>::try_from(v).map_err(|_| Issue::Manifest(ManifestError::OutOfRange { max: <$t>::MAX as u64 }))?;
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
    const EXPECTED: JsonType = JsonType::Integer;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Num(n) if n.is_integer() => *self = n.as_i64().map_err(Issue::Json)?,
            other => return Err(wrong(Self::EXPECTED, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        *self = 0;
    }
}

impl JsonValue for f64 {
    const EXPECTED: JsonType = JsonType::Number;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Num(n) => *self = n.as_f64().map_err(Issue::Json)?,
            other => return Err(wrong(Self::EXPECTED, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        *self = 0.0;
    }
}

impl JsonValue for bool {
    const EXPECTED: JsonType = JsonType::Bool;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Bool(b) => *self = *b,
            other => return Err(wrong(Self::EXPECTED, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        *self = false;
    }
}

/// Copies `s` into `dst`; a string longer than `N` bytes is a capacity error named `limit`.
pub fn copy_str<const N: usize>(dst: &mut heapless::String<N>, s: &str, limit: &'static str) -> Result<(), Issue> {
    dst.clear();
    dst.push_str(s).map_err(|_| Issue::Capacity(CapacityError { limit, capacity: N as u64 }))
}

/// A string default from the schema (cut to the capacity if it does not fit, which the
/// default capacities never do).
pub fn str_default<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

impl<const N: usize> JsonValue for heapless::String<N> {
    const EXPECTED: JsonType = JsonType::String;
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::Str(s) => copy_str(self, s, lim.first())?,
            other => return Err(wrong(Self::EXPECTED, other)),
        }
        Ok(Flow::Done)
    }
    fn clear(&mut self) {
        heapless::String::clear(self);
    }
}

impl<T: JsonValue> JsonValue for Option<T> {
    const EXPECTED: JsonType = T::EXPECTED;
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        let v = self.get_or_insert_with(T::default);
        v.clear();
        v.start(ev, lim)
    }
    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, lim: Lim) -> Result<(), DocFault> {
        match self {
            Some(v) => v.body(cx, lim),
            None => Ok(()),
        }
    }
    fn clear(&mut self) {
        *self = None;
    }
}

/// Reads the next value into `value`.
pub fn read<T: JsonValue, R: BufRead>(cx: &mut Cx<'_, '_, R>, value: &mut T, lim: Lim) -> Result<(), DocFault> {
    let flow = match cx.tok.next(cx.src) {
        Ok(ev) => value.start(&ev, lim),
        Err(f) => return Err(DocFault::from(f)),
    };
    match flow {
        Ok(Flow::Done) => Ok(()),
        Ok(Flow::Body) => value.body(cx, lim),
        Err(issue) => Err(cx.issue(issue, lim)),
    }
}

/// Reads a TVM typed list `["tag", value]` into `value`; any other shape is the key's
/// `format_error`.
pub fn read_tagged<T: JsonValue, R: BufRead>(
    cx: &mut Cx<'_, '_, R>,
    value: &mut T,
    tag: &str,
    lim: Lim,
) -> Result<(), DocFault> {
    let message = if lim.rules.format_error.is_empty() { "malformed typed list" } else { lim.rules.format_error };
    let bad = |cx: &Cx<'_, '_, R>| cx.manifest_error(ManifestError::BadFormat { message });
    match cx.tok.next(cx.src) {
        Ok(Event::BeginArray) => {}
        Ok(_) => return Err(bad(cx)),
        Err(f) => return Err(DocFault::from(f)),
    }
    match cx.tok.next(cx.src) {
        Ok(Event::Str(s)) if s == tag => {}
        Ok(_) => return Err(bad(cx)),
        Err(f) => return Err(DocFault::from(f)),
    }
    let mark = cx.ctx.path.mark();
    cx.ctx.path.push_index(1);
    read(cx, value, lim)?;
    cx.ctx.path.reset(mark);
    match cx.tok.next(cx.src) {
        Ok(Event::EndArray) => Ok(()),
        Ok(_) => Err(bad(cx)),
        Err(f) => Err(DocFault::from(f)),
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
pub fn read_document<T: JsonValue, R: BufRead>(cx: &mut Cx<'_, '_, R>, value: &mut T) -> Result<(), Error> {
    read_whole(cx, value).map_err(|f| {
        cx.visitor.failed(cx.ctx.member, cx.ctx.path.whole(), f.key);
        cx.ctx.attach(f)
    })
}

/// [`read_document`] before the context is added.
fn read_whole<T: JsonValue, R: BufRead>(cx: &mut Cx<'_, '_, R>, value: &mut T) -> Result<(), DocFault> {
    if let Err(schema) = read(cx, value, Lim::NONE) {
        if cx.tok.fault().is_some() {
            return Err(schema);
        }
        return Err(match skip_rest(cx) {
            Some(fault) => {
                // The skip keeps no key path: the syntax error's is the document's root.
                cx.ctx.path = KeyPath::new();
                DocFault::from(fault)
            }
            None => schema,
        });
    }
    match cx.tok.next(cx.src) {
        Ok(Event::End) => Ok(()),
        Ok(_) => Err(cx.error(ErrorKind::Json(JsonError::TrailingData))),
        Err(f) => Err(DocFault::from(f)),
    }
}

/// Skips the rest of the document from wherever reading stopped (maybe inside containers:
/// the tokenizer's depth says how many are open) and checks that nothing follows it.
/// Returns the JSON syntax fault found, if any; a fault of another kind (the stream) is no
/// verdict on the document's syntax and gives `None`.
fn skip_rest<R: BufRead>(cx: &mut Cx<'_, '_, R>) -> Option<Fault> {
    let outcome = (|| -> Result<Option<JsonError>, Fault> {
        // Each round either skips one value or closes one container: the document is finite.
        while cx.tok.depth() > 0 {
            if !cx.tok.skip_value(cx.src)? {
                cx.tok.next(cx.src)?;
            }
        }
        match cx.tok.next(cx.src)? {
            Event::End => Ok(None),
            _ => Ok(Some(JsonError::TrailingData)),
        }
    })();
    match outcome {
        Ok(None) => None,
        Ok(Some(trailing)) => Some(Fault::json(cx.tok.offset(), trailing)),
        Err(f) if matches!(f.kind, ErrorKind::Json(_)) => Some(f),
        Err(_) => None,
    }
}

impl<T: JsonValue, const N: usize> JsonValue for heapless::Vec<T, N> {
    const EXPECTED: JsonType = JsonType::Array;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        match ev {
            Event::BeginArray => {
                heapless::Vec::clear(self);
                Ok(Flow::Body)
            }
            other => Err(wrong(Self::EXPECTED, other)),
        }
    }

    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, lim: Lim) -> Result<(), DocFault> {
        let limit = lim.first();
        let inner = lim.rest();
        let checks_runtime_max = lim.rules.overflow.is_some() && lim.rules.overflow_limit == limit;
        let mut count: u64 = 0;
        let mut spare: Option<T> = None;
        loop {
            let mark = cx.ctx.path.mark();
            cx.ctx.path.push_index(count as usize);
            let flow = match cx.tok.next(cx.src) {
                Ok(Event::EndArray) => {
                    cx.ctx.path.reset(mark);
                    break;
                }
                Ok(ev) => {
                    if self.is_full() {
                        if !checks_runtime_max {
                            let capacity = CapacityError { limit, capacity: N as u64 };
                            return Err(DocFault::new(cx.tok.offset(), ErrorKind::Capacity(capacity)));
                        }
                        // Keep reading into a spare slot: the runtime's own message needs the count.
                        let slot = spare.get_or_insert_with(T::default);
                        slot.clear();
                        slot.start(&ev, inner)
                    } else {
                        // Full was checked just above, so the push cannot fail.
                        let _ = self.push(T::default());
                        match self.last_mut() {
                            Some(slot) => slot.start(&ev, inner),
                            None => Ok(Flow::Done),
                        }
                    }
                }
                Err(f) => return Err(DocFault::from(f)),
            };
            match flow {
                Ok(Flow::Done) => {}
                Ok(Flow::Body) => {
                    let slot = if let Some(s) = spare.as_mut() { Some(s) } else { self.last_mut() };
                    if let Some(slot) = slot {
                        slot.body(cx, inner)?;
                    }
                }
                Err(issue) => return Err(cx.issue(issue, inner)),
            }
            count = count.saturating_add(1);
            cx.ctx.path.reset(mark);
        }
        if count > N as u64 {
            if let (true, Some(overflow)) = (count > lim.rules.runtime_max, lim.rules.overflow) {
                return Err(cx.manifest_error(overflow(count)));
            }
            return Err(cx.error(ErrorKind::Capacity(CapacityError { limit, capacity: N as u64 })));
        }
        Ok(())
    }

    fn clear(&mut self) {
        heapless::Vec::clear(self);
    }
}

/// An object that can be an entry of a [`Map`]: it stores its JSON key.
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

impl<T: MapEntry, const N: usize> JsonValue for Map<T, N> {
    const EXPECTED: JsonType = JsonType::Object;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.0.clear();
        start_object(ev)
    }

    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, lim: Lim) -> Result<(), DocFault> {
        let limit = lim.first();
        let key_limit = lim.rest().first();
        let value_lim = lim.rest().rest();
        loop {
            let mark = cx.ctx.path.mark();
            let step = match cx.tok.next_key(cx.src) {
                Ok(None) => break,
                Ok(Some(key)) => {
                    cx.ctx.path.push_key(key);
                    if self.0.is_full() {
                        Err(Issue::Capacity(CapacityError { limit, capacity: N as u64 }))
                    } else {
                        let _ = self.0.push(T::default());
                        match self.0.last_mut() {
                            Some(entry) => entry.set_key(key, key_limit),
                            None => Ok(()),
                        }
                    }
                }
                Err(f) => return Err(DocFault::from(f)),
            };
            if let Err(issue) = step {
                return Err(cx.issue(issue, lim));
            }
            if let Some(entry) = self.0.last_mut() {
                read(cx, entry, value_lim)?;
            }
            cx.ctx.path.reset(mark);
        }
        Ok(())
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// An array of any length, read one element at a time into one slot: every element is
/// validated, handed to the visitor as the key's [`Entry`] and counted. Memory does not grow
/// with the array.
///
/// The slot is a local of the reading frame, not a field: a document holds only the count, so
/// the slots of its streamed keys (a `def.json` var is 1 KiB) take stack one at a time, while
/// their key is read, rather than all the time the document is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Each<T> {
    /// Elements read.
    pub count: u64,
    _slot: core::marker::PhantomData<fn() -> T>,
}

impl<T: JsonValue + Default + core::any::Any> JsonValue for Each<T> {
    const EXPECTED: JsonType = JsonType::Array;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        match ev {
            Event::BeginArray => Ok(Flow::Body),
            other => Err(wrong(Self::EXPECTED, other)),
        }
    }

    // A frame of its own: the slot's stack is taken only while this key is read.
    #[inline(never)]
    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, lim: Lim) -> Result<(), DocFault> {
        let mut slot = T::default();
        loop {
            let mark = cx.ctx.path.mark();
            cx.ctx.path.push_index(usize::try_from(self.count).unwrap_or(usize::MAX));
            match cx.tok.next_element(cx.src) {
                Ok(false) => {
                    cx.ctx.path.reset(mark);
                    return Ok(());
                }
                Ok(true) => {}
                Err(f) => return Err(DocFault::from(f)),
            }
            slot.clear();
            read(cx, &mut slot, lim)?;
            cx.emit(&slot, lim)?;
            self.count = self.count.saturating_add(1);
            cx.ctx.path.reset(mark);
        }
    }

    fn clear(&mut self) {
        self.count = 0;
    }
}

/// A JSON object keyed by name of any size (`def.json` `var`, `dma_queue`), read one entry at a
/// time into one slot: every entry is validated, handed to the visitor as the key's [`Entry`]
/// and counted. Memory does not grow with the object. The slot is a local, as [`Each`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EachMap<T> {
    /// Entries read.
    pub count: u64,
    _slot: core::marker::PhantomData<fn() -> T>,
}

impl<T: MapEntry + Default + core::any::Any> JsonValue for EachMap<T> {
    const EXPECTED: JsonType = JsonType::Object;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        start_object(ev)
    }

    // A frame of its own: the slot's stack is taken only while this key is read.
    #[inline(never)]
    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, lim: Lim) -> Result<(), DocFault> {
        let key_limit = lim.first();
        let value_lim = lim.rest();
        let mut slot = T::default();
        loop {
            let mark = cx.ctx.path.mark();
            let step = match cx.tok.next_key(cx.src) {
                Ok(None) => break,
                Ok(Some(key)) => {
                    cx.ctx.path.push_key(key);
                    slot.clear();
                    slot.set_key(key, key_limit)
                }
                Err(f) => return Err(DocFault::from(f)),
            };
            if let Err(issue) = step {
                return Err(cx.issue(issue, lim));
            }
            read(cx, &mut slot, value_lim)?;
            cx.emit(&slot, lim)?;
            self.count = self.count.saturating_add(1);
            cx.ctx.path.reset(mark);
        }
        Ok(())
    }

    fn clear(&mut self) {
        self.count = 0;
    }
}

/// An array whose elements are validated and counted, not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArrayLen(pub u64);

impl JsonValue for ArrayLen {
    const EXPECTED: JsonType = JsonType::Array;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.0 = 0;
        match ev {
            Event::BeginArray => Ok(Flow::Body),
            other => Err(wrong(Self::EXPECTED, other)),
        }
    }

    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, _lim: Lim) -> Result<(), DocFault> {
        loop {
            match cx.tok.skip_value(cx.src) {
                Ok(true) => self.0 = self.0.saturating_add(1),
                Ok(false) => break,
                Err(f) => return Err(DocFault::from(f)),
            }
        }
        match cx.tok.next(cx.src) {
            Ok(_) => Ok(()),
            Err(f) => Err(DocFault::from(f)),
        }
    }

    fn clear(&mut self) {
        self.0 = 0;
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
    const EXPECTED: JsonType = JsonType::Nothing;
    fn start(&mut self, ev: &Event<'_>, _lim: Lim) -> Result<Flow, Issue> {
        self.is_false = matches!(ev, Event::Bool(false));
        match ev {
            Event::BeginArray | Event::BeginObject => Ok(Flow::Body),
            _ => Ok(Flow::Done),
        }
    }

    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, _lim: Lim) -> Result<(), DocFault> {
        loop {
            match cx.tok.skip_value(cx.src) {
                Ok(true) => {}
                Ok(false) => break,
                Err(f) => return Err(DocFault::from(f)),
            }
        }
        match cx.tok.next(cx.src) {
            Ok(_) => Ok(()),
            Err(f) => Err(DocFault::from(f)),
        }
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
    const EXPECTED: JsonType = JsonType::String;
    fn start(&mut self, ev: &Event<'_>, lim: Lim) -> Result<Flow, Issue> {
        self.clear();
        match ev {
            Event::Str(s) => {
                let mut text = heapless::String::new();
                copy_str(&mut text, s, lim.first())?;
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

    fn body<R: BufRead>(&mut self, cx: &mut Cx<'_, '_, R>, lim: Lim) -> Result<(), DocFault> {
        Present::default().body(cx, lim)
    }

    fn clear(&mut self) {
        self.text = None;
        self.other = None;
    }
}

/// The first event of an object value.
pub fn start_object(ev: &Event<'_>) -> Result<Flow, Issue> {
    match ev {
        Event::BeginObject => Ok(Flow::Body),
        other => Err(wrong(JsonType::Object, other)),
    }
}

/// One step of an object's key loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStep {
    /// The object ended.
    End,
    /// A key no schema entry consumes.
    Unknown,
    /// A consumed key, by slot.
    Known(u8),
}

/// Reads the next key of an object (pushing it on the key path) and looks up its slot.
pub fn next_key<R: BufRead>(cx: &mut Cx<'_, '_, R>, slot_of: fn(&str) -> Option<u8>) -> Result<KeyStep, DocFault> {
    match cx.tok.next_key(cx.src) {
        Ok(None) => Ok(KeyStep::End),
        Ok(Some(key)) => {
            cx.ctx.path.push_key(key);
            Ok(slot_of(key).map_or(KeyStep::Unknown, KeyStep::Known))
        }
        Err(f) => Err(DocFault::from(f)),
    }
}

/// Skips (and validates) the value of an unconsumed key.
pub fn skip<R: BufRead>(cx: &mut Cx<'_, '_, R>) -> Result<(), DocFault> {
    match cx.tok.skip_value(cx.src) {
        Ok(_) => Ok(()),
        Err(f) => Err(DocFault::from(f)),
    }
}

/// Records that `slot` was seen; a second time is a duplicate-key error.
pub fn mark_seen<R: BufRead>(
    cx: &Cx<'_, '_, R>,
    seen: &mut u64,
    slot: u8,
    keys: &[&'static str],
) -> Result<(), DocFault> {
    let bit = 1u64 << (slot & 63);
    if *seen & bit != 0 {
        let key = keys.get(usize::from(slot)).copied().unwrap_or("");
        return Err(cx.manifest_error(ManifestError::DuplicateKey { key }));
    }
    *seen |= bit;
    Ok(())
}

/// At the end of an object: the first required key not seen is an error (with the runtime's
/// message where the schema gives one).
pub fn check_required<R: BufRead>(
    cx: &mut Cx<'_, '_, R>,
    seen: u64,
    required: u64,
    keys: &'static [super::RequiredKey],
) -> Result<(), DocFault> {
    let absent = required & !seen;
    if absent == 0 {
        return Ok(());
    }
    match keys.get(absent.trailing_zeros() as usize) {
        Some(key) => {
            // The object's own segment: its name in a keyed map, or its key or index.
            let within = super::Name::new(cx.ctx.path.last_key());
            cx.ctx.path.push_key(key.key);
            Err(cx.manifest_error(ManifestError::MissingKey { key, within }))
        }
        None => Ok(()),
    }
}

/// A string a `strict` discriminator map does not know is the schema's error variant.
pub fn check_known<R: BufRead>(
    cx: &Cx<'_, '_, R>,
    value: &str,
    known: bool,
    error: fn(super::Name) -> ManifestError,
) -> Result<(), DocFault> {
    if known {
        Ok(())
    } else {
        Err(cx.manifest_error(error(Text::new(value))))
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    extern crate std;
    use std::format;

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
