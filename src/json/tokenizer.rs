//! The pull tokenizer: [`Tokenizer`] and the [`Event`]s it returns.
//!
//! Every public method first consumes whitespace and separators (`,` and `:`), which never
//! show as events, then reads or looks at one token. A token's partial state (half an escape,
//! half a UTF-8 sequence, a number cut by a chunk boundary) lives in locals of the call that
//! reads it: the call keeps pulling chunks until the token is complete, so nothing but the
//! container stack and the grammar state survives between calls.
//!
//! **Arithmetic.** Indices into a chunk stay below its length (at most `isize::MAX`), and byte
//! offsets count bytes the source really delivered (never 2^64): both use saturating adds,
//! which therefore never saturate, and cost one instruction on the hot paths. Numbers are
//! converted with checked arithmetic ([`Number`]).
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use embedded_io::{BufRead, Error as _};

use super::{Expected, Fault, JsonError, JsonType, Number, TokenKind};
use crate::error::{CapacityError, ErrorKind};

/// The largest depth limit a [`Tokenizer`] applies (its container stack is a fixed 256-bit
/// set); [`Tokenizer::new`] clamps a larger one to it.
pub const MAX_DEPTH: u16 = 256;

/// Capacity of the buffer holding a number the caller receives (limit `"JSON number length"`).
/// Skipped numbers may be of any length.
pub const NUMBER_CAPACITY: usize = 48;

/// Bytes of the container stack: one bit per level, set for an object.
const STACK_BYTES: usize = MAX_DEPTH as usize / 8;

/// The limit name reported when a received string does not fit the scratch buffer.
pub const SCRATCH_LIMIT: &str = "JSON string scratch";

/// The limit name reported when a received number is longer than [`NUMBER_CAPACITY`].
pub const NUMBER_LIMIT: &str = "JSON number length";

neff_macros::kinds!("schema/kinds.toml", Event);

/// Where the grammar stands between two tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The top-level value is expected.
    Start,
    /// After `[`: a value or `]`.
    ArrayFirst,
    /// After `,` in an array: a value.
    ArrayNext,
    /// After `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    ObjectNext,
    /// After a key: `:`.
    AfterKey,
    /// After `:`: the member's value.
    MemberValue,
    /// After a complete value: `,`, the container's end, or (at depth 0) the end of input.
    AfterValue,
    /// The top-level value and its trailing whitespace are done.
    Done,
}

/// What comes next once whitespace and separators are consumed; nothing of it is consumed yet.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// A value starting with this byte (already checked to start one).
    Value(u8),
    /// A key (the `"` of an object key).
    Key,
    /// The `}` or `]` closing the innermost container.
    Close,
    /// The end of input after the top-level value.
    End,
}

/// A token read; its text, if any, is in the tokenizer's buffers.
#[derive(Debug, Clone, Copy)]
struct Token {
    kind: TokenKind,
    /// A `Num`: whether it is an integer; a `Bool`: its value.
    flag: bool,
}

impl From<TokenKind> for Token {
    fn from(kind: TokenKind) -> Self {
        Token { kind, flag: false }
    }
}

/// The signal that a step failed; the [`Fault`] itself is recorded in the tokenizer, which
/// keeps the internal results small.
#[derive(Debug, Clone, Copy)]
struct Stop;

/// Inside a string, between two bytes.
#[derive(Debug, Clone, Copy)]
enum StrState {
    /// Plain text.
    Plain,
    /// Inside a UTF-8 sequence: `remaining` continuation bytes, the next in `low..=high`.
    Utf8 { remaining: u8, low: u8, high: u8 },
    /// After `\`.
    Escape,
    /// Inside `\uXXXX`: `digits` read so far; `high` is the high surrogate this one must pair with.
    Hex { digits: u8, value: u32, high: Option<u32> },
    /// After a high surrogate escape: the `\` of its low half.
    LowBackslash { high: u32 },
    /// After a high surrogate escape and `\`: the `u` of its low half.
    LowU { high: u32 },
}

/// Inside a number, between two bytes (RFC 8259 §6).
#[derive(Debug, Clone, Copy)]
enum NumState {
    Start,
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

/// A token's text being scanned, chunk by chunk: what the scan resumes from.
#[derive(Debug, Clone, Copy)]
enum Text {
    /// A string or key (after its opening quote): the string state and where the current
    /// `\u` escape started.
    Str { key: bool, resume: (StrState, u64) },
    /// A number: its state, and (once it ends) whether it is an integer.
    Num { resume: NumState, integer: bool },
    /// `true`, `false` or `null`: `matched` bytes of `word` so far.
    Word { word: &'static [u8], matched: usize, expected: Expected },
}

impl Text {
    /// The token, once its text is complete.
    fn token(&self) -> Token {
        match *self {
            Text::Str { key: true, .. } => TokenKind::Key.into(),
            Text::Str { key: false, .. } => TokenKind::Str.into(),
            Text::Num { integer, .. } => Token { kind: TokenKind::Num, flag: integer },
            Text::Word { word: b"null", .. } => TokenKind::Null.into(),
            Text::Word { word, .. } => Token { kind: TokenKind::Bool, flag: word == b"true" },
        }
    }
}

/// What [`Tokenizer::quick_member`] read (a host's whole-member path).
#[cfg(not(target_os = "none"))]
pub(crate) enum QuickMember<'r, K> {
    /// The object's `}`, consumed.
    End,
    /// A key the reader knows (`K`, what its lookup gave), consumed; its value comes next.
    Key(K),
    /// A key the reader does not know and its value, skipped (consumed, validated, nothing
    /// stored), as [`Tokenizer::skip_value`] skips a member.
    Skipped,
    /// A key the reader knows and its scalar value, or the `{` or `[` that opens its value,
    /// consumed: the value's event, and where the tokenizer stood before the key.
    Member(K, Event<'r>, Rewind),
}

/// Where the tokenizer stood (before a [`QuickMember::Member`], say), to return there.
#[cfg(not(target_os = "none"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rewind {
    state: State,
    depth: u16,
    held: usize,
    token_start: u64,
    scratch_len: usize,
}

/// A streaming, non-recursive JSON pull tokenizer (see the [module docs](super) for the
/// protocol).
///
/// The caller lends the `scratch` buffer that holds one unescaped string or key it receives
/// (a longer one is a capacity error naming [`SCRATCH_LIMIT`], with the lent length as its
/// capacity), and sets the most containers open at once, `depth_limit`. Both are runtime
/// values so that one tokenizer type (and one copy of the generated parsers) serves every
/// buffer size and limit. The tokenizer holds no reference to its source: each call takes
/// the [`BufRead`] to pull from, so one tokenizer can be reused across documents with
/// [`Tokenizer::reset`].
///
/// Size: 200 bytes on 64-bit hosts, whatever the scratch's length or the depth limit
/// (the scratch is borrowed): the scratch reference, the 48-byte number buffer, a 32-byte
/// container bit stack, offsets, lengths, the grammar state and the kept fault.
///
/// After any [`Fault`] the tokenizer is spent: every later call returns the same fault until
/// [`Tokenizer::reset`].
pub struct Tokenizer<'s> {
    /// The lent buffer strings and keys are unescaped into.
    scratch: &'s mut [u8],
    scratch_len: usize,
    number: [u8; NUMBER_CAPACITY],
    number_len: u8,
    /// Bit `d` is set when the container at depth `d + 1` is an object.
    containers: [u8; STACK_BYTES],
    depth: u16,
    /// The most containers open at once; at most [`MAX_DEPTH`].
    depth_limit: u16,
    state: State,
    /// Bytes consumed from the source since the document started, before the `held` ones
    /// (the offset of a byte read is this plus `held` plus its index: see
    /// [`Tokenizer::position`]; a step marks bytes read in `held` alone).
    released: u64,
    /// Where the last token returned (or value skipped) started.
    token_start: u64,
    /// Bytes at the front of the source's current chunk that are read but not consumed yet:
    /// a step scans many tokens in one chunk and consumes them in one run when it ends (or
    /// when it needs the next chunk); with `runs`, they stay held across calls until the chunk
    /// is all read. Zero between calls otherwise.
    held: usize,
    /// The length of the source's chunk when it was last asked for: a call that finds `held`
    /// below it resumes in the same chunk.
    chunk_len: usize,
    /// Whether read bytes stay held across calls ([`Tokenizer::consume_in_runs`]).
    runs: bool,
    fault: Option<Fault>,
}

impl fmt::Debug for Tokenizer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("state", &self.state)
            .field("depth", &self.depth)
            .field("depth_limit", &self.depth_limit)
            .field("scratch", &self.scratch.len())
            .field("pos", &self.position())
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

impl<'s> Tokenizer<'s> {
    /// A tokenizer ready for a document, unescaping received strings and keys into `scratch`
    /// and allowing `depth_limit` containers open at once.
    ///
    /// The container stack is a fixed [`MAX_DEPTH`]-bit set, so a `depth_limit` above
    /// [`MAX_DEPTH`] is clamped to it ([`Tokenizer::depth_limit`] says what applies). A limit
    /// of 0 admits scalars only.
    pub const fn new(scratch: &'s mut [u8], depth_limit: u16) -> Self {
        let depth_limit = if depth_limit > MAX_DEPTH { MAX_DEPTH } else { depth_limit };
        Self {
            scratch,
            scratch_len: 0,
            number: [0; NUMBER_CAPACITY],
            number_len: 0,
            containers: [0; STACK_BYTES],
            depth: 0,
            depth_limit,
            state: State::Start,
            released: 0,
            token_start: 0,
            held: 0,
            chunk_len: 0,
            runs: false,
            fault: None,
        }
    }

    /// The depth limit in force (the one given to [`Tokenizer::new`], clamped to [`MAX_DEPTH`]).
    pub fn depth_limit(&self) -> u16 {
        self.depth_limit
    }

    /// Bytes of the lent scratch: the longest string or key the caller can receive.
    pub fn scratch_capacity(&self) -> usize {
        self.scratch.len()
    }

    /// Forgets the current document (and any fault): ready for a new one, offsets from 0.
    pub fn reset(&mut self) {
        self.scratch_len = 0;
        self.number_len = 0;
        self.depth = 0;
        self.state = State::Start;
        self.released = 0;
        self.token_start = 0;
        self.held = 0;
        self.chunk_len = 0;
        self.fault = None;
    }

    /// The byte offset where the last returned token (or skipped value) started.
    pub fn offset(&self) -> u64 {
        self.token_start
    }

    /// Bytes consumed so far. After [`Tokenizer::peek_kind`] this is where the peeked token
    /// starts (whitespace and separators before it are consumed), which is the offset to put in
    /// an error that refuses the token's type.
    #[inline]
    pub fn position(&self) -> u64 {
        // `held` is below the chunk's length and `released` counts bytes delivered: no overflow.
        self.released.wrapping_add(self.held as u64)
    }

    /// The fault that spent the tokenizer, if any (every later call repeats it).
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// How many containers are open now (1 right after the top-level `BeginObject`).
    pub fn depth(&self) -> u16 {
        self.depth
    }

    /// Reads the next token.
    pub fn next<R: BufRead>(&mut self, src: &mut R) -> Result<Event<'_>, Fault> {
        #[cfg(not(target_os = "none"))]
        if let Some(token) = self.quick(src, Self::quick_value) {
            return self.event(token);
        }
        let token = self.track(src, |t, src| t.step(src, false, |_, _| Ok(true)))?;
        self.event(token.1.unwrap_or(TokenKind::End.into()))
    }

    /// The kind of the next token, consuming only the whitespace and separators before it.
    ///
    /// A byte that cannot start a token here is a fault, as [`Tokenizer::next`] would report it.
    pub fn peek_kind<R: BufRead>(&mut self, src: &mut R) -> Result<TokenKind, Fault> {
        self.track(src, |t, src| {
            let (next, _) = t.step(src, false, |_, _| Ok(false))?;
            Ok(t.kind_of(next))
        })
    }

    /// Skips the next complete value, validating it fully but storing nothing (strings and
    /// numbers of any length are fine). Returns `Ok(true)` when a value was skipped.
    ///
    /// - At a value position (after a [`Event::Key`], an array element position, the top
    ///   level): skips that value, a whole container included.
    /// - At a key position (inside an object, before a key): skips the key and its value.
    /// - When the next token is `]`, `}` or [`Event::End`]: returns `Ok(false)` and consumes
    ///   nothing, so `while tok.skip_value(src)? {}` skips the rest of a container and the
    ///   following [`Tokenizer::next`] returns its `EndArray`/`EndObject`.
    ///
    /// Nesting is tracked by the depth counter and the container bit stack, never by
    /// recursion: a value nested deeper than the depth limit is [`JsonError::DepthLimit`].
    pub fn skip_value<R: BufRead>(&mut self, src: &mut R) -> Result<bool, Fault> {
        #[cfg(not(target_os = "none"))]
        if self.quick(src, Self::quick_skip).is_some() {
            return Ok(true);
        }
        self.track(src, |t, src| {
            let (_, skipped) = t.step(src, true, |_, next| Ok(!matches!(next, Next::Close | Next::End)))?;
            Ok(skipped.is_some())
        })
    }

    /// Inside an object: the next key, or `None` after consuming the object's `}`.
    ///
    /// Call it right after [`Event::BeginObject`] (or [`Tokenizer::begin_object`]) and after
    /// each member's value has been read or skipped. Anywhere else it is
    /// [`JsonError::UnexpectedToken`] (expected [`Expected::KeyOrEndObject`]).
    pub fn next_key<R: BufRead>(&mut self, src: &mut R) -> Result<Option<&str>, Fault> {
        if self.next_key_bytes(src)?.is_none() {
            return Ok(None);
        }
        self.scratch_str().map(Some)
    }

    /// [`Tokenizer::next_key`], the key as its unescaped bytes: valid UTF-8 (the tokenizer
    /// checked every byte as it read them), handed on without a second check, for a caller
    /// that compares keys as bytes.
    pub fn next_key_bytes<R: BufRead>(&mut self, src: &mut R) -> Result<Option<&[u8]>, Fault> {
        #[cfg(not(target_os = "none"))]
        if let Some(found) = self.quick(src, Self::quick_key) {
            return Ok(found.then(|| self.scratch.get(..self.scratch_len).unwrap_or(&[])));
        }
        let found = self.track(src, |t, src| {
            let (next, _) = t.step(src, false, |t, next| match next {
                Next::Key => Ok(true),
                Next::Close if t.top_is_object() => Ok(true),
                other => Err(t.fail_token(other, Expected::KeyOrEndObject)),
            })?;
            Ok(matches!(next, Next::Key))
        })?;
        Ok(found.then(|| self.scratch.get(..self.scratch_len).unwrap_or(&[])))
    }

    /// Inside an array: `true` when another element follows (nothing of it consumed: read it
    /// with [`Tokenizer::next`], [`Tokenizer::skip_value`], ...), `false` after consuming the
    /// array's `]`.
    ///
    /// Call it right after [`Event::BeginArray`] (or [`Tokenizer::begin_array`]) and after each
    /// element. Anywhere else it is [`JsonError::UnexpectedToken`] (expected
    /// [`Expected::ValueOrEndArray`]).
    pub fn next_element<R: BufRead>(&mut self, src: &mut R) -> Result<bool, Fault> {
        #[cfg(not(target_os = "none"))]
        if let Some(another) = self.quick(src, Self::quick_element) {
            return Ok(another);
        }
        self.track(src, |t, src| {
            let (next, _) = t.step(src, false, |t, next| match next {
                Next::Value(_) if matches!(t.state, State::ArrayFirst | State::ArrayNext) => Ok(false),
                Next::Close if !t.top_is_object() => Ok(true),
                other => Err(t.fail_token(other, Expected::ValueOrEndArray)),
            })?;
            Ok(matches!(next, Next::Value(_)))
        })
    }

    /// Consumes the `{` of the next value, or fails with [`JsonError::UnexpectedToken`]
    /// (expected [`JsonType::Object`], found the token's kind) at the token's offset.
    pub fn begin_object<R: BufRead>(&mut self, src: &mut R) -> Result<(), Fault> {
        self.begin(src, b'{', Expected::Type(JsonType::Object))
    }

    /// Consumes the `[` of the next value, or fails with [`JsonError::UnexpectedToken`]
    /// (expected [`JsonType::Array`], found the token's kind) at the token's offset.
    pub fn begin_array<R: BufRead>(&mut self, src: &mut R) -> Result<(), Fault> {
        self.begin(src, b'[', Expected::Type(JsonType::Array))
    }

    /// Reads a string value. Any other token is [`JsonError::UnexpectedToken`] (expected
    /// [`JsonType::String`]) at the token's offset, before anything of it is consumed.
    pub fn read_str<R: BufRead>(&mut self, src: &mut R) -> Result<&str, Fault> {
        self.read_kind(src, TokenKind::Str, Expected::Type(JsonType::String))?;
        self.scratch_str()
    }

    /// Reads a number as a `u64` (see [`Number::as_u64`]). Another token is
    /// [`JsonError::UnexpectedToken`] (expected [`JsonType::UnsignedInteger`]); a number that
    /// does not convert is its [`JsonError`]; either at the token's offset.
    pub fn read_u64<R: BufRead>(&mut self, src: &mut R) -> Result<u64, Fault> {
        self.read_number_as(src, Expected::Type(JsonType::UnsignedInteger), |n| n.as_u64())
    }

    /// Reads a number as an `i64` (see [`Number::as_i64`]); errors as [`Tokenizer::read_u64`],
    /// with [`JsonType::Integer`].
    pub fn read_i64<R: BufRead>(&mut self, src: &mut R) -> Result<i64, Fault> {
        self.read_number_as(src, Expected::Type(JsonType::Integer), |n| n.as_i64())
    }

    /// Reads a number as an `f64` (see [`Number::as_f64`]); errors as [`Tokenizer::read_u64`],
    /// with [`JsonType::Number`].
    pub fn read_f64<R: BufRead>(&mut self, src: &mut R) -> Result<f64, Fault> {
        self.read_number_as(src, Expected::Type(JsonType::Number), |n| n.as_f64())
    }

    /// Reads `true` or `false`. Any other token is [`JsonError::UnexpectedToken`] (expected
    /// [`JsonType::Bool`]) at the token's offset.
    pub fn read_bool<R: BufRead>(&mut self, src: &mut R) -> Result<bool, Fault> {
        let (_, token) = self.read_kind(src, TokenKind::Bool, Expected::Type(JsonType::Bool))?;
        Ok(token.flag)
    }

    fn read_number_as<R: BufRead, T>(
        &mut self,
        src: &mut R,
        expected: Expected,
        convert: impl FnOnce(Number<'_>) -> Result<T, JsonError>,
    ) -> Result<T, Fault> {
        let (at, token) = self.read_kind(src, TokenKind::Num, expected)?;
        let converted = convert(Number::from_ascii(self.number_bytes(), token.flag));
        converted.map_err(|error| self.spend(Fault::json(at, error)))
    }

    /// Reads the next token, which must be of `kind`: another is refused at its offset before
    /// anything of it is consumed (as [`Tokenizer::peek_kind`] then [`Tokenizer::next`] would,
    /// in one step). Returns where the token starts.
    fn read_kind<R: BufRead>(
        &mut self,
        src: &mut R,
        kind: TokenKind,
        expected: Expected,
    ) -> Result<(u64, Token), Fault> {
        self.track(src, |t, src| {
            let (_, token) = t.step(src, false, |t, next| {
                let found = t.kind_of(next);
                if found == kind {
                    Ok(true)
                } else {
                    Err(t.fail_json(t.position(), JsonError::UnexpectedToken { found, expected }))
                }
            })?;
            Ok((t.token_start, token.unwrap_or(kind.into())))
        })
    }

    /// Records a fault found outside a tracked step and returns it.
    fn spend(&mut self, fault: Fault) -> Fault {
        self.fault = Some(fault);
        fault
    }

    fn begin<R: BufRead>(&mut self, src: &mut R, open: u8, expected: Expected) -> Result<(), Fault> {
        self.track(src, |t, src| {
            t.step(src, false, |t, next| match next {
                Next::Value(b) if b == open => Ok(true),
                other => Err(t.fail_token(other, expected)),
            })
            .map(drop)
        })
    }

    /// Runs one step; a fault spends the tokenizer (and a spent tokenizer only repeats it).
    ///
    /// The bytes the step read are consumed from `src` in one run at its end, whatever its
    /// outcome (as many as the step read, so a fault leaves the source where it was found).
    fn track<R: BufRead, T>(
        &mut self,
        src: &mut R,
        step: impl FnOnce(&mut Self, &mut R) -> Result<T, Stop>,
    ) -> Result<T, Fault> {
        if let Some(fault) = self.fault {
            return Err(fault);
        }
        let outcome = step(self, src);
        if !self.runs || outcome.is_err() {
            self.release(src);
        }
        outcome.map_err(|Stop| self.recorded())
    }

    /// Consumes from `src` the bytes read but still held (see
    /// [`Tokenizer::consume_in_runs`]); nothing is held otherwise.
    #[inline]
    pub fn release<R: BufRead>(&mut self, src: &mut R) {
        if self.held != 0 {
            src.consume(self.held);
            self.released = self.released.wrapping_add(self.held as u64);
            self.held = 0;
        }
        self.chunk_len = 0;
    }

    /// With `on`, the bytes a call reads stay held in the source's chunk after it returns,
    /// and are consumed in one run when a later call has read the whole chunk, at the end of
    /// the document ([`Event::End`]), on a fault, or by [`Tokenizer::release`]: a document
    /// costs a `consume` per chunk rather than one per token. The caller then passes the
    /// same source to every call and releases it before reading it otherwise (or abandoning
    /// the document). Off by default: each call consumes what it read before it returns.
    pub fn consume_in_runs(&mut self, on: bool) {
        self.runs = on;
    }

    /// The unread part of the source's chunk for a step that starts: the rest of the chunk
    /// a previous call left held, or else the next chunk.
    #[inline(always)]
    fn resume<'r, R: BufRead>(&mut self, src: &'r mut R) -> Result<&'r [u8], Stop> {
        if self.held != 0 && self.held < self.chunk_len {
            let held = self.held;
            return match src.fill_buf() {
                Ok(chunk) => Ok(chunk.get(held..).unwrap_or(&[])),
                Err(e) => Err(self.fail(Fault { offset: self.position(), kind: ErrorKind::Io(e.kind()) })),
            };
        }
        self.fill(src)
    }

    /// The fault a step recorded before returning [`Stop`].
    #[inline(never)]
    fn recorded(&self) -> Fault {
        // `fail` always records before a `Stop` exists; the fallback only keeps this total.
        self.fault.unwrap_or(Fault::json(self.position(), JsonError::UnexpectedEnd))
    }

    /// Records `fault` (the tokenizer is spent) and returns the signal to unwind the step.
    #[cold]
    fn fail(&mut self, fault: Fault) -> Stop {
        self.fault = Some(fault);
        Stop
    }

    #[cold]
    fn fail_json(&mut self, offset: u64, error: JsonError) -> Stop {
        self.fail(Fault::json(offset, error))
    }

    #[cold]
    fn fail_token(&mut self, next: Next, expected: Expected) -> Stop {
        let fault = self.unexpected_token(next, expected);
        self.fail(fault)
    }

    /// The next chunk of the source, once every byte of the one a step scans is read (the
    /// read bytes are consumed first, in one run). Empty at the end of input. A source failure
    /// is recorded as a fault at the current offset.
    ///
    /// A step asks for a chunk only when it starts (nothing held) and when the one it scans is
    /// all read: tokens in the middle of a chunk cost no call to the source.
    #[inline]
    fn fill<'r, R: BufRead>(&mut self, src: &'r mut R) -> Result<&'r [u8], Stop> {
        self.release(src);
        match src.fill_buf() {
            Ok(chunk) => {
                self.chunk_len = chunk.len();
                Ok(chunk)
            }
            Err(e) => Err(self.fail(Fault { offset: self.position(), kind: ErrorKind::Io(e.kind()) })),
        }
    }

    fn unexpected_token(&self, next: Next, expected: Expected) -> Fault {
        Fault::json(self.position(), JsonError::UnexpectedToken { found: self.kind_of(next), expected })
    }

    fn kind_of(&self, next: Next) -> TokenKind {
        match next {
            Next::End => TokenKind::End,
            Next::Key => TokenKind::Key,
            Next::Close if self.top_is_object() => TokenKind::EndObject,
            Next::Close => TokenKind::EndArray,
            Next::Value(b'{') => TokenKind::BeginObject,
            Next::Value(b'[') => TokenKind::BeginArray,
            Next::Value(b'"') => TokenKind::Str,
            Next::Value(b't' | b'f') => TokenKind::Bool,
            Next::Value(b'n') => TokenKind::Null,
            Next::Value(_) => TokenKind::Num,
        }
    }

    fn event(&self, token: Token) -> Result<Event<'_>, Fault> {
        Ok(match token.kind {
            TokenKind::BeginObject => Event::BeginObject,
            TokenKind::EndObject => Event::EndObject,
            TokenKind::BeginArray => Event::BeginArray,
            TokenKind::EndArray => Event::EndArray,
            TokenKind::Key => Event::Key(self.scratch_str()?),
            TokenKind::Str => Event::Str(self.scratch_str()?),
            TokenKind::Num => Event::Num(Number::from_ascii(self.number_bytes(), token.flag)),
            TokenKind::Bool => Event::Bool(token.flag),
            TokenKind::Null => Event::Null,
            TokenKind::End => Event::End,
        })
    }

    fn scratch_str(&self) -> Result<&str, Fault> {
        let bytes = self.scratch.get(..self.scratch_len).unwrap_or(&[]);
        // Already validated byte by byte; this re-check is what lets us avoid `unsafe`.
        core::str::from_utf8(bytes).map_err(|_| Fault::json(self.token_start, JsonError::InvalidUtf8))
    }

    /// The number's text: bytes the number grammar checked, all ASCII.
    fn number_bytes(&self) -> &[u8] {
        self.number.get(..usize::from(self.number_len)).unwrap_or(&[])
    }

    /// One step over the source: consumes whitespace and separators, shows the token that
    /// comes next to `decide`, and reads it when `decide` says so (with `skip`, the whole
    /// value it starts, storing no text). Returns that token's [`Next`] and, when read, the
    /// token (with `skip`, the last one of the value).
    ///
    /// The step scans its tokens in the chunk the source shows, many per chunk: another chunk
    /// is asked for only when a token or the whitespace before it runs past the end of this
    /// one, and what was read is consumed in one run ([`Tokenizer::track`]).
    fn step<R: BufRead>(
        &mut self,
        src: &mut R,
        skip: bool,
        decide: impl FnOnce(&mut Self, Next) -> Result<bool, Stop>,
    ) -> Result<(Next, Option<Token>), Stop> {
        let mut chunk = self.resume(src)?;
        let mut next = loop {
            match self.prepare_in(chunk)? {
                Some((next, at)) => {
                    chunk = chunk.get(at..).unwrap_or(&[]);
                    break next;
                }
                None => chunk = self.fill(src)?,
            }
        };
        let first = next;
        if !decide(self, next)? {
            return Ok((first, None));
        }
        let skipped_from = self.position();
        let base = self.depth;
        loop {
            self.token_start = self.position();
            let mut text = match next {
                Next::End => {
                    // Nothing follows the document: what it held is consumed.
                    self.release(src);
                    return Ok((first, Some(TokenKind::End.into())));
                }
                Next::Close => {
                    let object = self.top_is_object();
                    self.advance(1);
                    chunk = chunk.get(1..).unwrap_or(&[]);
                    self.depth = self.depth.saturating_sub(1);
                    self.state = State::AfterValue;
                    Ok(if object { TokenKind::EndObject } else { TokenKind::EndArray }.into())
                }
                Next::Value(open @ (b'{' | b'[')) => {
                    let object = open == b'{';
                    self.push(object)?;
                    self.advance(1);
                    chunk = chunk.get(1..).unwrap_or(&[]);
                    self.state = if object { State::ObjectFirst } else { State::ArrayFirst };
                    Ok(if object { TokenKind::BeginObject } else { TokenKind::BeginArray }.into())
                }
                Next::Key | Next::Value(b'"') => {
                    // The opening quote.
                    self.advance(1);
                    chunk = chunk.get(1..).unwrap_or(&[]);
                    self.scratch_len = 0;
                    Err(Text::Str { key: matches!(next, Next::Key), resume: (StrState::Plain, self.position()) })
                }
                Next::Value(b't') => Err(Text::Word { word: b"true", matched: 0, expected: Expected::True }),
                Next::Value(b'f') => Err(Text::Word { word: b"false", matched: 0, expected: Expected::False }),
                Next::Value(b'n') => Err(Text::Word { word: b"null", matched: 0, expected: Expected::Null }),
                Next::Value(_) => {
                    self.number_len = 0;
                    Err(Text::Num { resume: NumState::Start, integer: false })
                }
            };
            let token = loop {
                let Err(pending) = &mut text else { break text.unwrap_or(TokenKind::End.into()) };
                if chunk.is_empty() {
                    chunk = self.fill(src)?;
                }
                match self.text_in(pending, chunk, !skip)? {
                    Some(used) => {
                        chunk = chunk.get(used..).unwrap_or(&[]);
                        text = Ok(pending.token());
                    }
                    None => chunk = &[],
                }
            };
            self.state = match token.kind {
                TokenKind::Key => State::AfterKey,
                TokenKind::BeginObject | TokenKind::BeginArray => self.state,
                _ => State::AfterValue,
            };
            if !skip {
                return Ok((first, Some(token)));
            }
            if self.depth == base && self.state == State::AfterValue {
                self.token_start = skipped_from;
                return Ok((first, Some(token)));
            }
            if chunk.is_empty() {
                chunk = self.fill(src)?;
            }
            next = loop {
                match self.prepare_in(chunk)? {
                    Some((next, at)) => {
                        chunk = chunk.get(at..).unwrap_or(&[]);
                        break next;
                    }
                    None => chunk = self.fill(src)?,
                }
            };
        }
    }

    /// A host's whole-array path, right after an array's [`Event::BeginArray`]: when the array
    /// is integers alone (each as [`Tokenizer::next`] would give it: `-? (0 | [1-9][0-9]*)`,
    /// at most [`NUMBER_CAPACITY`] bytes) and lies whole in the rest of the chunk with its `]`,
    /// each element goes to `each` in order, then the array is consumed: the state, depth,
    /// offsets and number text as the byte machines leave them after its `EndArray`. Returns
    /// the elements' count. `None`, with nothing consumed, when the array is of another shape,
    /// runs past the chunk, or `each` refuses an element (returns `false`): the caller then
    /// discards what `each` was given and reads the array token by token, where any fault is
    /// reported at its offset. Only when consuming in runs ([`Tokenizer::consume_in_runs`]),
    /// with no fault, inside a chunk a previous call left held.
    #[cfg(not(target_os = "none"))]
    pub fn integer_array<R: BufRead>(
        &mut self,
        src: &mut R,
        each: &mut dyn FnMut(Number<'_>) -> bool,
    ) -> Option<usize> {
        if self.state != State::ArrayFirst {
            return None;
        }
        self.quick(src, |t, rest| {
            let mut i = whitespace_len(rest);
            let mut count = 0usize;
            let mut last: &[u8] = &[];
            if rest.get(i) != Some(&b']') {
                loop {
                    let text = rest.get(i..)?;
                    let used = stored_integer_len(text)?;
                    last = text.get(..used)?;
                    if !each(Number::from_ascii(last, true)) {
                        return None;
                    }
                    count = count.saturating_add(1);
                    i = i.saturating_add(used);
                    i = i.saturating_add(whitespace_len(rest.get(i..)?));
                    match *rest.get(i)? {
                        b',' => {
                            i = i.saturating_add(1);
                            i = i.saturating_add(whitespace_len(rest.get(i..)?));
                        }
                        b']' => break,
                        _ => return None,
                    }
                }
            }
            if !last.is_empty() {
                crate::copy_bytes(t.number.get_mut(..last.len())?, last);
                t.number_len = u8::try_from(last.len()).ok()?;
            }
            t.token_start = t.position().saturating_add(i as u64);
            t.advance(i.saturating_add(1));
            t.depth = t.depth.saturating_sub(1);
            t.state = State::AfterValue;
            Some(count)
        })
    }

    /// A host's whole-token path: `read` takes the next token from the rest of the chunk a
    /// previous call left held, when it lies there whole with its separators and is of the
    /// common shapes (see [`Tokenizer::quick_value`]); `None` leaves the tokenizer as it was,
    /// for the byte machines of [`Tokenizer::step`] to read the token (and report any fault,
    /// at its offset). Only when consuming in runs, with no fault, inside a chunk: where
    /// [`Tokenizer::resume`] would go on in the same chunk. A controller keeps the byte
    /// machines alone (its flash is measured).
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn quick<R: BufRead, T>(&mut self, src: &mut R, read: impl FnOnce(&mut Self, &[u8]) -> Option<T>) -> Option<T> {
        if self.fault.is_some() || !self.runs || self.held == 0 || self.held >= self.chunk_len {
            return None;
        }
        let rest = src.fill_buf().ok()?.get(self.held..)?;
        read(self, rest)
    }

    /// [`Tokenizer::next`]'s whole-token path over `rest`: whitespace, the separator the
    /// state asks for (`:` after a key, `,` between array elements), whitespace again, then a
    /// value that ends in `rest`: `{`, `[`, an integer with the byte that ends it, a string of
    /// plain text (printable ASCII, no escape) with its closing quote, `true`, `false` or
    /// `null`; or the `]` that closes the array; at a key position, what
    /// [`Tokenizer::quick_key`] takes (a key, or the object's `}`). The token, with the state,
    /// depth, offsets and text exactly as the byte machines leave them; `None`, with nothing
    /// changed, for anything else (a fraction, an escape, a capacity or depth limit reached,
    /// a fault).
    #[cfg(not(target_os = "none"))]
    fn quick_value(&mut self, rest: &[u8]) -> Option<Token> {
        let mut i = whitespace_len(rest);
        // Whether a `,` was taken (between array elements).
        let mut separated = false;
        match self.state {
            State::AfterKey => i = value_position(rest)?,
            State::MemberValue | State::ArrayNext | State::ArrayFirst => {}
            // A key position (or the object's close): what the readers' key calls take.
            State::ObjectFirst | State::ObjectNext => return self.quick_key_event(rest),
            State::AfterValue if self.top_is_object() => return self.quick_key_event(rest),
            State::AfterValue if self.depth > 0 => {
                if rest.get(i) == Some(&b',') {
                    i = i.saturating_add(1);
                    i = i.saturating_add(whitespace_len(rest.get(i..)?));
                    separated = true;
                }
            }
            _ => return None,
        }
        let byte = *rest.get(i)?;
        // From here the container, if any, is an array or the object whose member this is. Its
        // `]`: after `[`, or after an element with no separator.
        let closes =
            byte == b']' && (self.state == State::ArrayFirst || (self.state == State::AfterValue && !separated));
        if closes {
            self.token_start = self.position().saturating_add(i as u64);
            self.advance(i.saturating_add(1));
            self.depth = self.depth.saturating_sub(1);
            self.state = State::AfterValue;
            return Some(TokenKind::EndArray.into());
        }
        // After a value, only a separator (taken above) or a close.
        if self.state == State::AfterValue && !separated {
            return None;
        }
        let text = rest.get(i..)?;
        let (token, used) = match byte {
            b'{' | b'[' => {
                let object = byte == b'{';
                self.quick_open(object)?;
                (if object { TokenKind::BeginObject } else { TokenKind::BeginArray }.into(), 1)
            }
            _ => {
                // A scalar: its text into the scratch or the number buffer, as the byte
                // machines store it.
                let (token, (at, len), used) = scalar_at(text, self.scratch.len())?;
                let stored = text.get(at..)?.get(..len)?;
                match token.kind {
                    TokenKind::Str => {
                        crate::copy_bytes(self.scratch.get_mut(..len)?, stored);
                        self.scratch_len = len;
                    }
                    TokenKind::Num => {
                        crate::copy_bytes(self.number.get_mut(..len)?, stored);
                        self.number_len = u8::try_from(len).ok()?;
                    }
                    _ => {}
                }
                (token, used)
            }
        };
        if !matches!(token.kind, TokenKind::BeginObject | TokenKind::BeginArray) {
            self.state = State::AfterValue;
        }
        self.token_start = self.position().saturating_add(i as u64);
        self.advance(i.saturating_add(used));
        Some(token)
    }

    /// [`Tokenizer::skip_value`]'s whole-token path over `rest`: a value that lies whole in
    /// `rest` and is made of tokens [`Tokenizer::quick_value`] takes (a plain string, an
    /// integer, a literal, or a container of such tokens), skipped token by token (a scalar
    /// after a key in one step); the text
    /// stored on the way is forgotten, as the byte machines store none when they skip. `None`,
    /// with nothing changed, for anything else (a key position, the container's end, a token
    /// the byte machines must read, a container that runs past `rest`).
    #[cfg(not(target_os = "none"))]
    fn quick_skip(&mut self, rest: &[u8]) -> Option<()> {
        // A scalar after a key (most skipped values: a DMA block's `#comment`) is stepped over
        // where it lies, leaving what the token-by-token pass below leaves.
        if self.state == State::AfterKey {
            if let Some((at, used)) = self.scalar_after_key(rest) {
                self.token_start = self.position().saturating_add(at as u64);
                self.advance(used);
                self.state = State::AfterValue;
                self.scratch_len = 0;
                self.number_len = 0;
                return Some(());
            }
        }
        let before = self.mark();
        let skipped = self.quick_skip_tokens(rest);
        if skipped.is_none() {
            self.rewind(before);
        }
        skipped
    }

    /// [`Tokenizer::quick_skip`]'s scan: the value's tokens, each by [`Tokenizer::quick_value`]
    /// (which leaves nothing changed when it cannot take one), until the value is complete.
    #[cfg(not(target_os = "none"))]
    fn quick_skip_tokens(&mut self, rest: &[u8]) -> Option<()> {
        let (from, base) = (self.held, self.depth);
        let first = self.quick_value(rest)?;
        let value_start = self.token_start;
        match first.kind {
            TokenKind::Str | TokenKind::Num | TokenKind::Bool | TokenKind::Null => {}
            TokenKind::BeginObject | TokenKind::BeginArray => {
                while self.depth > base {
                    let read = self.held.checked_sub(from)?;
                    self.quick_value(rest.get(read..)?)?;
                }
            }
            _ => return None,
        }
        self.token_start = value_start;
        self.scratch_len = 0;
        self.number_len = 0;
        Some(())
    }

    /// [`Tokenizer::next_element`]'s whole-token path over `rest`, inside an array: whitespace,
    /// the `,` after an element, whitespace, then the first byte of a value (`true`, the value
    /// left unread), or the `]` that closes the array (`false`, consumed; not after a `,`).
    /// The state and offsets as the byte machines leave them; `None`, with nothing changed,
    /// for anything else.
    #[cfg(not(target_os = "none"))]
    fn quick_element(&mut self, rest: &[u8]) -> Option<bool> {
        if self.depth == 0 || self.top_is_object() {
            return None;
        }
        let mut i = whitespace_len(rest);
        let (may_close, state) = match self.state {
            State::ArrayFirst => (true, State::ArrayFirst),
            State::ArrayNext => (false, State::ArrayNext),
            State::AfterValue if rest.get(i) == Some(&b',') => {
                i = i.saturating_add(1);
                i = i.saturating_add(whitespace_len(rest.get(i..)?));
                (false, State::ArrayNext)
            }
            State::AfterValue => (true, State::AfterValue),
            _ => return None,
        };
        match *rest.get(i)? {
            b']' if may_close => {
                self.token_start = self.position().saturating_add(i as u64);
                self.advance(i.saturating_add(1));
                self.depth = self.depth.saturating_sub(1);
                self.state = State::AfterValue;
                Some(false)
            }
            // After an element, a value needs its `,` (the byte machines report the fault).
            byte if starts_value(byte) && state != State::AfterValue => {
                self.advance(i);
                self.state = state;
                Some(true)
            }
            _ => None,
        }
    }

    /// [`Tokenizer::quick_key`] as [`Tokenizer::next`]'s token: a `Key`, or the `EndObject`.
    #[cfg(not(target_os = "none"))]
    fn quick_key_event(&mut self, rest: &[u8]) -> Option<Token> {
        let kind = if self.quick_key(rest)? { TokenKind::Key } else { TokenKind::EndObject };
        Some(kind.into())
    }

    /// [`Tokenizer::next_key_bytes`]'s whole-token path over `rest`: whitespace, the `,` after
    /// a member, whitespace, then a key of plain text with its closing quote, or the `}` that
    /// closes the object (not after a `,`). As [`Tokenizer::quick_value`]: the key in the
    /// scratch and the state as the byte machines leave them (`Some(true)`; `Some(false)`
    /// for the close), or `None` with nothing changed.
    #[cfg(not(target_os = "none"))]
    fn quick_key(&mut self, rest: &[u8]) -> Option<bool> {
        let (i, may_close) = self.key_position(rest)?;
        match *rest.get(i)? {
            b'"' => {
                let used = self.quick_string(rest.get(i..)?)?;
                self.token_start = self.position().saturating_add(i as u64);
                self.advance(i.saturating_add(used));
                self.state = State::AfterKey;
                Some(true)
            }
            b'}' if may_close => {
                self.close_object_at(i);
                Some(false)
            }
            _ => None,
        }
    }

    /// Where in `rest` the next key (or the object's `}`) starts, past whitespace and the `,`
    /// after a member, and whether a `}` may close the object there (not after a `,`); `None`
    /// outside a key position, or for anything else after a member.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn key_position(&self, rest: &[u8]) -> Option<(usize, bool)> {
        let mut i = whitespace_len(rest);
        let may_close = match self.state {
            State::ObjectFirst => true,
            State::ObjectNext => false,
            State::AfterValue if self.depth > 0 && self.top_is_object() => {
                if rest.get(i) == Some(&b',') {
                    i = i.saturating_add(1);
                    i = i.saturating_add(whitespace_len(rest.get(i..)?));
                    false
                } else if rest.get(i) == Some(&b'}') {
                    true
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        Some((i, may_close))
    }

    /// Consumes the object's `}` at `i` in the rest of the chunk, as the byte machines do.
    #[cfg(not(target_os = "none"))]
    fn close_object_at(&mut self, i: usize) {
        self.token_start = self.position().saturating_add(i as u64);
        self.advance(i.saturating_add(1));
        self.depth = self.depth.saturating_sub(1);
        self.state = State::AfterValue;
    }

    /// A host's whole-member path, for the manifest readers, at a key position: the object's
    /// `}`, or a key of plain text that `lookup` knows (its slot, say) and, when a scalar value
    /// that [`Tokenizer::quick_value`] takes follows it in the chunk, that value, its event's
    /// text in the source's chunk; when a `{` or `[` follows, that opening token (below the
    /// depth limit), the container's body left to the reader; a key `lookup` does not know,
    /// with its value skipped whole. What it reads is consumed, with the state, depth and
    /// offsets as [`Tokenizer::next_key_bytes`] and [`Tokenizer::next`] leave them (the key and the
    /// string are not copied to the scratch, whose text only an event shows); a member comes
    /// with where the tokenizer stood before its key, to return there ([`Tokenizer::rewind`])
    /// when the reader must read it again token by token. `None`, with nothing changed, for a
    /// key `lookup` does not know whose value [`Tokenizer::quick_skip`] cannot skip whole, and
    /// where [`Tokenizer::quick_key`] gives up.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    pub(crate) fn quick_member<'r, R: BufRead, K>(
        &mut self,
        src: &'r mut R,
        lookup: impl FnOnce(&[u8]) -> Option<K>,
    ) -> Option<QuickMember<'r, K>> {
        if self.fault.is_some() || !self.runs || self.held == 0 || self.held >= self.chunk_len {
            return None;
        }
        let rest: &'r [u8] = src.fill_buf().ok()?.get(self.held..)?;
        let (i, may_close) = self.key_position(rest)?;
        match *rest.get(i)? {
            b'"' => {}
            b'}' if may_close => {
                self.close_object_at(i);
                return Some(QuickMember::End);
            }
            _ => return None,
        }
        // A key the scratch would not hold is the byte machines' capacity fault.
        let len = plain_string(rest.get(i..)?, self.scratch.len())?;
        let found = lookup(rest.get(i.checked_add(1)?..)?.get(..len)?);
        let before = self.mark();
        self.token_start = self.position().saturating_add(i as u64);
        let key_end = i.saturating_add(len).saturating_add(2);
        self.advance(key_end);
        self.state = State::AfterKey;
        let Some(found) = found else {
            // A key the reader does not consume: its value skipped whole, or nothing changed.
            if rest.get(key_end..).and_then(|after| self.quick_skip(after)).is_some() {
                return Some(QuickMember::Skipped);
            }
            self.rewind(before);
            return None;
        };
        let Some((event, value_at, used)) = rest.get(key_end..).and_then(|after| self.value_after_key(after)) else {
            return Some(QuickMember::Key(found));
        };
        match event {
            Event::BeginObject | Event::BeginArray => {
                if self.quick_open(matches!(event, Event::BeginObject)).is_none() {
                    return Some(QuickMember::Key(found));
                }
            }
            _ => self.state = State::AfterValue,
        }
        self.token_start = self.position().saturating_add(value_at as u64);
        self.advance(used);
        Some(QuickMember::Member(found, event, before))
    }

    /// After a key, in `after`: whitespace, `:`, whitespace and a scalar value that
    /// [`Tokenizer::quick_value`] would take (a plain string the scratch holds, an integer of
    /// at most [`NUMBER_CAPACITY`] bytes ended in `after`, a literal), or a `{` or `[`: its
    /// event, where it starts and the bytes up to its end. Reads `after` only.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn value_after_key<'r>(&self, after: &'r [u8]) -> Option<(Event<'r>, usize, usize)> {
        let j = value_position(after)?;
        let text = after.get(j..)?;
        match text.first() {
            Some(b'{') => return Some((Event::BeginObject, j, j.saturating_add(1))),
            Some(b'[') => return Some((Event::BeginArray, j, j.saturating_add(1))),
            _ => {}
        }
        let (token, (at, len), used) = scalar_at(text, self.scratch.len())?;
        let stored = text.get(at..)?.get(..len)?;
        let event = match token.kind {
            TokenKind::Str => Event::Str(core::str::from_utf8(stored).ok()?),
            TokenKind::Num => Event::Num(Number::from_ascii(stored, true)),
            TokenKind::Bool => Event::Bool(token.flag),
            _ => Event::Null,
        };
        Some((event, j, j.saturating_add(used)))
    }

    /// After a key, in `after`: a scalar value that [`Tokenizer::quick_value`] would take,
    /// where it starts and the bytes up to its end. Reads `after` only.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn scalar_after_key(&self, after: &[u8]) -> Option<(usize, usize)> {
        let j = value_position(after)?;
        let (_, _, used) = scalar_at(after.get(j..)?, self.scratch.len())?;
        Some((j, j.saturating_add(used)))
    }

    /// A whole-token path's `{` (`object`) or `[`: its container bit, the depth and the state
    /// as the byte machines leave them. `None`, nothing changed, at the depth limit, whose
    /// fault the byte machines report at the bracket.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn quick_open(&mut self, object: bool) -> Option<()> {
        if self.depth >= self.depth_limit {
            return None;
        }
        self.push(object).ok()?;
        self.state = if object { State::ObjectFirst } else { State::ArrayFirst };
        Some(())
    }

    /// Where the tokenizer stands, for a whole-token path that may have to return there.
    #[cfg(not(target_os = "none"))]
    fn mark(&self) -> Rewind {
        Rewind {
            state: self.state,
            depth: self.depth,
            held: self.held,
            token_start: self.token_start,
            scratch_len: self.scratch_len,
        }
    }

    /// Returns to `to` ([`Tokenizer::quick_member`] gives it with a member): what was consumed
    /// since is read again by the next call. Container bits set since are above the depth
    /// restored: never read.
    #[cfg(not(target_os = "none"))]
    pub(crate) fn rewind(&mut self, to: Rewind) {
        self.state = to.state;
        self.depth = to.depth;
        self.held = to.held;
        self.token_start = to.token_start;
        self.scratch_len = to.scratch_len;
    }

    /// A string of plain text closed in `text` (which starts at its opening quote) into the
    /// scratch: the bytes it takes with both quotes; `None`, the scratch's length unchanged,
    /// when it is not plain, not closed there, or does not fit.
    #[cfg(not(target_os = "none"))]
    fn quick_string(&mut self, text: &[u8]) -> Option<usize> {
        let plain = plain_string(text, self.scratch.len())?;
        crate::copy_bytes(self.scratch.get_mut(..plain)?, text.get(1..)?.get(..plain)?);
        self.scratch_len = plain;
        Some(plain.saturating_add(2))
    }

    /// Scans the text of a string, key, number or literal in `chunk`: the bytes that complete
    /// it, or `None` when it goes on past the chunk (all of it read).
    fn text_in(&mut self, text: &mut Text, chunk: &[u8], store: bool) -> Result<Option<usize>, Stop> {
        match text {
            Text::Str { resume, .. } => self.string_in(chunk, resume, store),
            Text::Num { resume, integer } => Ok(self.number_in(chunk, resume, store)?.map(|(used, int)| {
                *integer = int;
                used
            })),
            Text::Word { word, matched, expected } => self.literal_in(chunk, word, matched, *expected),
        }
    }

    /// Consumes the whitespace and separators at the front of `chunk` and says what comes
    /// next and where in `chunk` it starts, checking that its first byte is allowed here; the
    /// state is left at the position of that token. `None` when the whitespace runs to the end
    /// of `chunk` (all of it read). An empty chunk is the end of input.
    fn prepare_in(&mut self, chunk: &[u8]) -> Result<Option<(Next, usize)>, Stop> {
        let end = chunk.is_empty();
        let mut i = 0usize;
        loop {
            let skipped = whitespace_len(chunk.get(i..).unwrap_or(&[]));
            self.advance(skipped);
            i = i.saturating_add(skipped);
            let byte = chunk.get(i).copied();
            if byte.is_none() && !end {
                return Ok(None);
            }
            let at = self.position();
            let unexpected = |expected| match byte {
                Some(found) => Fault::json(at, JsonError::UnexpectedByte { found, expected }),
                None => Fault::json(at, JsonError::UnexpectedEnd),
            };
            let next = match self.state {
                State::Start | State::MemberValue | State::ArrayNext => match byte {
                    Some(b) if starts_value(b) => Next::Value(b),
                    Some(b']') if self.state == State::ArrayNext => {
                        return Err(self.fail_json(at, JsonError::TrailingComma))
                    }
                    _ => return Err(self.fail(unexpected(Expected::Value))),
                },
                State::ArrayFirst => match byte {
                    Some(b']') => Next::Close,
                    Some(b) if starts_value(b) => Next::Value(b),
                    _ => return Err(self.fail(unexpected(Expected::ValueOrEndArray))),
                },
                State::ObjectFirst => match byte {
                    Some(b'"') => Next::Key,
                    Some(b'}') => Next::Close,
                    _ => return Err(self.fail(unexpected(Expected::KeyOrEndObject))),
                },
                State::ObjectNext => match byte {
                    Some(b'"') => Next::Key,
                    Some(b'}') => return Err(self.fail_json(at, JsonError::TrailingComma)),
                    _ => return Err(self.fail(unexpected(Expected::Key))),
                },
                State::AfterKey => match byte {
                    Some(b':') => {
                        self.advance(1);
                        i = i.saturating_add(1);
                        self.state = State::MemberValue;
                        // The value right after the separator (compact JSON): what the next
                        // round would find, without its whitespace scan.
                        if let Some(&b) = chunk.get(i).filter(|&&b| starts_value(b)) {
                            return Ok(Some((Next::Value(b), i)));
                        }
                        continue;
                    }
                    _ => return Err(self.fail(unexpected(Expected::Colon))),
                },
                State::AfterValue if self.depth == 0 => {
                    self.state = State::Done;
                    continue;
                }
                State::AfterValue => {
                    let object = self.top_is_object();
                    match (byte, object) {
                        (Some(b','), true) => {
                            self.advance(1);
                            i = i.saturating_add(1);
                            self.state = State::ObjectNext;
                            // A key right after the comma, as for `:` above.
                            if chunk.get(i) == Some(&b'"') {
                                return Ok(Some((Next::Key, i)));
                            }
                            continue;
                        }
                        (Some(b','), false) => {
                            self.advance(1);
                            i = i.saturating_add(1);
                            self.state = State::ArrayNext;
                            if let Some(&b) = chunk.get(i).filter(|&&b| starts_value(b)) {
                                return Ok(Some((Next::Value(b), i)));
                            }
                            continue;
                        }
                        (Some(b'}'), true) | (Some(b']'), false) => Next::Close,
                        (_, true) => return Err(self.fail(unexpected(Expected::CommaOrEndObject))),
                        (_, false) => return Err(self.fail(unexpected(Expected::CommaOrEndArray))),
                    }
                }
                State::Done => match byte {
                    None => Next::End,
                    Some(_) => return Err(self.fail_json(at, JsonError::TrailingData)),
                },
            };
            return Ok(Some((next, i)));
        }
    }

    /// Marks `amount` more bytes of the chunk [`Tokenizer::fill`] showed as read (consumed
    /// from the source when the step ends or needs the next chunk).
    fn advance(&mut self, amount: usize) {
        // Within the chunk read: below its length.
        self.held = self.held.wrapping_add(amount);
    }

    fn top_is_object(&self) -> bool {
        let Some(level) = self.depth.checked_sub(1).map(usize::from) else {
            return false;
        };
        self.containers.get(level / 8).is_some_and(|bits| bits & (1 << (level % 8)) != 0)
    }

    // Inlined on a host, where the whole-token path calls it too.
    #[cfg_attr(not(target_os = "none"), inline(always))]
    fn push(&mut self, object: bool) -> Result<(), Stop> {
        if self.depth >= self.depth_limit {
            return Err(self.fail_json(self.position(), JsonError::DepthLimit { limit: self.depth_limit }));
        }
        let level = usize::from(self.depth);
        if let Some(bits) = self.containers.get_mut(level / 8) {
            let mask = 1u8 << (level % 8);
            if object {
                *bits |= mask;
            } else {
                *bits &= !mask;
            }
        }
        // Below the limit (checked above), which is at most MAX_DEPTH: at most MAX_DEPTH after this.
        self.depth = self.depth.saturating_add(1);
        Ok(())
    }

    /// Reads a string from its opening quote to its closing quote, checking UTF-8, control
    /// characters and escapes; with `store`, the unescaped text goes to the scratch buffer.
    /// Scans string text in `chunk` (after the opening quote, or resuming where the last
    /// chunk ended, as `resume` says: the state and where the current `\u` escape started),
    /// checking UTF-8, control characters and escapes; with `store`, the unescaped text goes to
    /// the scratch buffer. Returns the bytes up to and with the closing quote, or `None` when
    /// the string goes on past the chunk (all of it read). An empty chunk is the end of input.
    fn string_in(&mut self, chunk: &[u8], resume: &mut (StrState, u64), store: bool) -> Result<Option<usize>, Stop> {
        if chunk.is_empty() {
            return Err(self.fail_json(self.position(), JsonError::UnexpectedEnd));
        }
        let (mut state, mut escape_at) = *resume;
        if let StrState::Plain = state {
            // Most strings and keys are plain text closed in this chunk: one scan, one store.
            let plain = plain_len(chunk);
            if chunk.get(plain) == Some(&b'"') {
                self.store_text(store, chunk.get(..plain))?;
                let used = plain.saturating_add(1);
                self.advance(used);
                return Ok(Some(used));
            }
        }
        let base = self.position();
        let at = |i: usize| base.saturating_add(i as u64);
        let mut i = 0;
        // Start of the raw bytes not yet stored: plain text is copied in runs.
        let mut run = 0;
        let mut closed = false;
        while let Some(&b) = chunk.get(i) {
            match state {
                StrState::Plain => {
                    if (0x20..0x80).contains(&b) && b != b'"' && b != b'\\' {
                        let next = i.saturating_add(1);
                        i = next.saturating_add(plain_len(chunk.get(next..).unwrap_or(&[])));
                        continue;
                    }
                    match b {
                        b'"' => {
                            self.store_text(store, chunk.get(run..i))?;
                            i = i.saturating_add(1);
                            run = i;
                            closed = true;
                            break;
                        }
                        b'\\' => {
                            self.store_text(store, chunk.get(run..i))?;
                            escape_at = at(i);
                            state = StrState::Escape;
                            i = i.saturating_add(1);
                            run = i;
                        }
                        0..=0x1F => {
                            let pending = chunk.get(run..i);
                            return Err(self.fail_string(store, pending, at(i), JsonError::ControlCharInString));
                        }
                        _ => {
                            state = match utf8_lead(b) {
                                Some(state) => state,
                                None => {
                                    let pending = chunk.get(run..i);
                                    return Err(self.fail_string(store, pending, at(i), JsonError::InvalidUtf8));
                                }
                            };
                            i = i.saturating_add(1);
                        }
                    }
                }
                StrState::Utf8 { remaining, low, high } => {
                    if !(low..=high).contains(&b) {
                        let pending = chunk.get(run..i);
                        return Err(self.fail_string(store, pending, at(i), JsonError::InvalidUtf8));
                    }
                    state = match remaining {
                        1 => StrState::Plain,
                        _ => StrState::Utf8 { remaining: remaining.saturating_sub(1), low: 0x80, high: 0xBF },
                    };
                    i = i.saturating_add(1);
                }
                StrState::Escape => {
                    let decoded = match b {
                        b'"' | b'\\' | b'/' => b,
                        b'b' => 0x08,
                        b'f' => 0x0C,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            state = StrState::Hex { digits: 0, value: 0, high: None };
                            i = i.saturating_add(1);
                            run = i;
                            continue;
                        }
                        _ => return Err(self.fail_json(at(i), JsonError::InvalidEscape)),
                    };
                    self.store_text(store, Some(&[decoded]))?;
                    state = StrState::Plain;
                    i = i.saturating_add(1);
                    run = i;
                }
                StrState::Hex { digits, value, high } => {
                    let Some(digit) = hex_value(b) else {
                        return Err(self.fail_json(at(i), JsonError::InvalidEscape));
                    };
                    let value = value << 4 | digit;
                    i = i.saturating_add(1);
                    run = i;
                    if digits < 3 {
                        state = StrState::Hex { digits: digits.saturating_add(1), value, high };
                        continue;
                    }
                    let code_point = match (high, value) {
                        (None, 0xD800..=0xDBFF) => {
                            state = StrState::LowBackslash { high: value };
                            continue;
                        }
                        (None, 0xDC00..=0xDFFF) | (Some(_), 0..=0xDBFF | 0xE000..) => {
                            return Err(self.fail_json(escape_at, JsonError::LoneSurrogate));
                        }
                        (None, value) => value,
                        // Both halves are in their ranges (the arms above): at most 0x10FFFF.
                        (Some(high), low) => {
                            let pair = (high.saturating_sub(0xD800) << 10) | low.saturating_sub(0xDC00);
                            pair.saturating_add(0x10000)
                        }
                    };
                    let Some(c) = char::from_u32(code_point) else {
                        return Err(self.fail_json(escape_at, JsonError::LoneSurrogate));
                    };
                    self.store_text(store, Some(c.encode_utf8(&mut [0; 4]).as_bytes()))?;
                    state = StrState::Plain;
                }
                StrState::LowBackslash { high } => {
                    if b != b'\\' {
                        return Err(self.fail_json(escape_at, JsonError::LoneSurrogate));
                    }
                    state = StrState::LowU { high };
                    i = i.saturating_add(1);
                    run = i;
                }
                StrState::LowU { high } => {
                    if b != b'u' {
                        return Err(self.fail_json(escape_at, JsonError::LoneSurrogate));
                    }
                    state = StrState::Hex { digits: 0, value: 0, high: Some(high) };
                    i = i.saturating_add(1);
                    run = i;
                }
            }
        }
        self.store_text(store, chunk.get(run..i))?;
        self.advance(i);
        *resume = (state, escape_at);
        Ok(closed.then_some(i))
    }

    fn store_text(&mut self, store: bool, bytes: Option<&[u8]>) -> Result<(), Stop> {
        let bytes = bytes.unwrap_or(&[]);
        if !store || bytes.is_empty() {
            return Ok(());
        }
        // Past the scratch's length, `get_mut` fails: a capacity error, not a wrap.
        let end = self.scratch_len.checked_add(bytes.len());
        match end.and_then(|end| Some((end, self.scratch.get_mut(self.scratch_len..end)?))) {
            Some((end, dst)) => {
                crate::copy_bytes(dst, bytes);
                self.scratch_len = end;
                Ok(())
            }
            None => Err(self.capacity(SCRATCH_LIMIT, self.scratch.len())),
        }
    }

    /// Fails a string at `offset`, unless the text before it that is not stored yet
    /// (`pending`) overflows the scratch: that overflow comes first in the document. Storing
    /// `pending` first makes the fault the same whatever the chunk boundaries (a chunk's text
    /// is stored at its end, so a split string would report the overflow).
    #[cold]
    fn fail_string(&mut self, store: bool, pending: Option<&[u8]>, offset: u64, error: JsonError) -> Stop {
        match self.store_text(store, pending) {
            Ok(()) => self.fail_json(offset, error),
            Err(stop) => stop,
        }
    }

    /// [`Tokenizer::fail_string`] for a number: `pending` is the number's text in this chunk.
    #[cold]
    fn fail_number(&mut self, store: bool, pending: &[u8], offset: u64) -> Stop {
        if store {
            if let Err(stop) = self.store_number(pending) {
                return stop;
            }
        }
        self.fail_json(offset, JsonError::InvalidNumber)
    }

    fn capacity(&mut self, limit: &'static str, capacity: usize) -> Stop {
        self.fail(Fault {
            offset: self.token_start,
            kind: ErrorKind::Capacity(CapacityError { limit, capacity: capacity as u64 }),
        })
    }

    /// Scans number text in `chunk` (from the number's first byte, `-` or a digit, or resuming
    /// in the state `resume` where the last chunk ended). Returns the bytes of the number and
    /// whether it is an integer once a byte that cannot continue it (not consumed) or the end
    /// of input (an empty chunk) ends it; `None` when it may go on past the chunk.
    fn number_in(&mut self, chunk: &[u8], resume: &mut NumState, store: bool) -> Result<Option<(usize, bool)>, Stop> {
        if let NumState::Start = *resume {
            if let Some(used) = integer_len(chunk) {
                // Most numbers are integers ended in this chunk: one scan, one store.
                if store {
                    self.store_number(chunk.get(..used).unwrap_or(&[]))?;
                }
                self.advance(used);
                return Ok(Some((used, true)));
            }
        }
        let mut state = *resume;
        let mut ended = chunk.is_empty();
        let mut i = 0;
        while let Some(&b) = chunk.get(i) {
            state = match (state, b) {
                (NumState::Start, b'-') => NumState::Minus,
                (NumState::Start | NumState::Minus, b'0') => NumState::Zero,
                (NumState::Start | NumState::Minus | NumState::Int, b'0'..=b'9') => NumState::Int,
                (NumState::Zero | NumState::Int, b'.') => NumState::Dot,
                (NumState::Dot | NumState::Frac, b'0'..=b'9') => NumState::Frac,
                (NumState::Zero | NumState::Int | NumState::Frac, b'e' | b'E') => NumState::Exp,
                (NumState::Exp, b'+' | b'-') => NumState::ExpSign,
                (NumState::Exp | NumState::ExpSign | NumState::ExpDigits, b'0'..=b'9') => NumState::ExpDigits,
                // A digit after a leading zero is the one case where the number cannot
                // simply end here.
                (NumState::Zero, b'0'..=b'9') => {
                    let at = self.position().saturating_add(i as u64);
                    return Err(self.fail_number(store, chunk.get(..i).unwrap_or(&[]), at));
                }
                (NumState::Zero | NumState::Int | NumState::Frac | NumState::ExpDigits, _) => {
                    ended = true;
                    break;
                }
                _ => {
                    let at = self.position().saturating_add(i as u64);
                    return Err(self.fail_number(store, chunk.get(..i).unwrap_or(&[]), at));
                }
            };
            i = i.saturating_add(1);
            if matches!(state, NumState::Int | NumState::Frac | NumState::ExpDigits) {
                // Runs of digits leave the state as it is.
                let digits = chunk.get(i..).unwrap_or(&[]).iter().take_while(|b| b.is_ascii_digit()).count();
                i = i.saturating_add(digits);
            }
        }
        if store {
            self.store_number(chunk.get(..i).unwrap_or(&[]))?;
        }
        self.advance(i);
        *resume = state;
        if !ended {
            return Ok(None);
        }
        match state {
            NumState::Zero | NumState::Int => Ok(Some((i, true))),
            NumState::Frac | NumState::ExpDigits => Ok(Some((i, false))),
            _ => Err(self.fail_json(self.position(), JsonError::UnexpectedEnd)),
        }
    }

    fn store_number(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        let start = usize::from(self.number_len);
        let end = start.saturating_add(bytes.len());
        match (self.number.get_mut(start..end), u8::try_from(end)) {
            (Some(dst), Ok(len)) => {
                crate::copy_bytes(dst, bytes);
                self.number_len = len;
                Ok(())
            }
            _ => Err(self.capacity(NUMBER_LIMIT, NUMBER_CAPACITY)),
        }
    }

    /// Matches `true`, `false` or `null` in `chunk`, `matched` bytes of `word` being matched
    /// already. Returns the bytes of `chunk` that complete it, or `None` when it goes on past
    /// the chunk. An empty chunk is the end of input.
    fn literal_in(
        &mut self,
        chunk: &[u8],
        word: &'static [u8],
        matched: &mut usize,
        expected: Expected,
    ) -> Result<Option<usize>, Stop> {
        let rest = word.get(*matched..).unwrap_or(&[]);
        if chunk.is_empty() {
            return Err(self.fail_json(self.position(), JsonError::UnexpectedEnd));
        }
        if let Some(i) = chunk.iter().zip(rest).position(|(got, want)| got != want) {
            let found = chunk.get(i).copied().unwrap_or(0);
            return Err(
                self.fail_json(self.position().saturating_add(i as u64), JsonError::UnexpectedByte { found, expected })
            );
        }
        let n = rest.len().min(chunk.len());
        self.advance(n);
        *matched = matched.saturating_add(n);
        Ok((*matched >= word.len()).then_some(n))
    }
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Eight copies of `b`, for the word-at-a-time scans.
#[cfg(any(target_os = "none", test))]
const fn splat(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

/// The first eight bytes of `bytes` as a little-endian word (byte 0 lowest), if there are eight.
#[cfg(any(target_os = "none", test))]
fn word(bytes: &[u8]) -> Option<u64> {
    bytes.first_chunk::<8>().map(|w| u64::from_le_bytes(*w))
}

/// The top bit of each byte of `x` that is zero, and no other bit. Exact per byte: no carry
/// crosses bytes, since `(x & 0x7F) + 0x7F` stays below 0x100.
#[cfg(any(target_os = "none", test))]
const fn zero_bytes(x: u64) -> u64 {
    !((x & splat(0x7F)).wrapping_add(splat(0x7F)) | x) & splat(0x80)
}

/// The index of the first byte whose top bit is set in `mask`.
#[cfg(any(target_os = "none", test))]
fn first_flagged(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// How many bytes at the start of `bytes` are whitespace.
#[inline]
fn whitespace_len(bytes: &[u8]) -> usize {
    // Most tokens follow no whitespace or the one space after `:`.
    match bytes {
        [first, ..] if !is_whitespace(*first) => 0,
        [b' ', second, ..] if !is_whitespace(*second) => 1,
        _ => whitespace_run(bytes),
    }
}

/// [`whitespace_len`] for longer runs (pretty-printed manifests are mostly indentation).
#[cfg(not(target_os = "none"))]
fn whitespace_run(bytes: &[u8]) -> usize {
    unflagged_len(bytes, b'x', |b| !((b == b' ') | (b == b'\n') | (b == b'\r') | (b == b'\t')))
}

/// How many bytes at the start of `bytes` are plain string text (printable ASCII other than
/// `"` and `\`).
// Inlined on a host, where the whole-token paths call it for every key and string.
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn plain_len(bytes: &[u8]) -> usize {
    // As a signed byte, below 0x20: a control byte or one of 0x80 and above.
    unflagged_len(bytes, b'"', |b| (b == b'"') | (b == b'\\') | (i8::from_ne_bytes([b]) < 0x20))
}

/// How many bytes at the start of `bytes` are ASCII digits.
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn digits_len(bytes: &[u8]) -> usize {
    unflagged_len(bytes, b'x', |b| b.wrapping_sub(b'0') >= 10)
}

/// How many bytes at the start of `bytes` `flagged` does not hold for, sixteen at a time: the
/// host's scans for the end of a string, a number or whitespace. Each block's bytes are
/// tested without a branch between them, which the compiler makes a few vector compares;
/// a last block shorter than sixteen is padded with `pad`, a byte `flagged` holds for.
/// (A controller keeps the word-at-a-time scans below: no vector unit, and its flash.)
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn unflagged_len(bytes: &[u8], pad: u8, flagged: impl Fn(u8) -> bool + Copy) -> usize {
    let mut blocks = bytes.chunks_exact(16);
    let mut i = 0usize;
    for block in &mut blocks {
        let flags = block.first_chunk::<16>().map_or(0, |block| block_flags(block, flagged));
        if flags != 0 {
            return i.saturating_add((flags.trailing_zeros() / 8) as usize);
        }
        i = i.saturating_add(16);
    }
    let rest = blocks.remainder();
    let mut block = [pad; 16];
    crate::copy_bytes(block.get_mut(..rest.len()).unwrap_or(&mut []), rest);
    let flags = block_flags(&block, flagged);
    i.saturating_add((flags.trailing_zeros() / 8) as usize)
}

/// Per byte of `block`, 0xFF where `flagged` holds and 0 elsewhere, as one little-endian
/// number (byte 0 lowest).
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn block_flags(block: &[u8; 16], flagged: impl Fn(u8) -> bool) -> u128 {
    let mut flags = [0u8; 16];
    for (flag, &b) in flags.iter_mut().zip(block) {
        *flag = if flagged(b) { 0xFF } else { 0 };
    }
    u128::from_le_bytes(flags)
}

/// [`whitespace_len`] for longer runs, eight bytes at a time (pretty-printed manifests are
/// mostly indentation).
#[cfg(any(target_os = "none", test))]
fn whitespace_run_words(bytes: &[u8]) -> usize {
    let mut i = 0;
    while let Some(x) = word(bytes.get(i..).unwrap_or(&[])) {
        let blank = zero_bytes(x ^ splat(b' '))
            | zero_bytes(x ^ splat(b'\n'))
            | zero_bytes(x ^ splat(b'\r'))
            | zero_bytes(x ^ splat(b'\t'));
        let other = !blank & splat(0x80);
        if other != 0 {
            return i.saturating_add(first_flagged(other));
        }
        i = i.saturating_add(8);
    }
    i.saturating_add(bytes.get(i..).unwrap_or(&[]).iter().take_while(|&&b| is_whitespace(b)).count())
}

/// How many bytes at the start of `bytes` are plain string text (printable ASCII other than
/// `"` and `\`), eight at a time.
#[cfg(any(target_os = "none", test))]
fn plain_len_words(bytes: &[u8]) -> usize {
    let mut i = 0;
    while let Some(x) = word(bytes.get(i..).unwrap_or(&[])) {
        // Per byte: the top bit set (>= 0x80); `(b | 0x80) - 0x20` without its top bit
        // (b < 0x20, or 0x80..0xA0, already flagged); `"`; `\`.
        let special = (x & splat(0x80))
            | (!((x | splat(0x80)).wrapping_sub(splat(0x20))) & splat(0x80))
            | zero_bytes(x ^ splat(b'"'))
            | zero_bytes(x ^ splat(b'\\'));
        if special != 0 {
            return i.saturating_add(first_flagged(special));
        }
        i = i.saturating_add(8);
    }
    let tail = bytes.get(i..).unwrap_or(&[]);
    i.saturating_add(tail.iter().take_while(|&&b| (0x20..0x80).contains(&b) && b != b'"' && b != b'\\').count())
}

// The controller's scans: a word at a time.
#[cfg(target_os = "none")]
use self::{plain_len_words as plain_len, whitespace_run_words as whitespace_run};

#[cfg(target_os = "none")]
fn digits_len(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// The length of the text of a plain string (printable ASCII, no escape) whose quotes are both
/// in `text` (which starts at its opening one), when a scratch of `capacity` bytes holds it (a
/// longer one is the byte machines' capacity fault).
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn plain_string(text: &[u8], capacity: usize) -> Option<usize> {
    let body = text.get(1..)?;
    let len = plain_len(body);
    (body.get(len) == Some(&b'"') && len <= capacity).then_some(len)
}

/// [`integer_len`] for an integer the number buffer holds ([`NUMBER_CAPACITY`] bytes; a
/// longer one is the byte machines' capacity fault).
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn stored_integer_len(text: &[u8]) -> Option<usize> {
    integer_len(text).filter(|&len| len <= NUMBER_CAPACITY)
}

/// Where the value after a key starts in `after`: past whitespace, the `:` and whitespace;
/// `None` without the `:`.
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn value_position(after: &[u8]) -> Option<usize> {
    let j = whitespace_len(after);
    if after.get(j) != Some(&b':') {
        return None;
    }
    let j = j.saturating_add(1);
    Some(j.saturating_add(whitespace_len(after.get(j..)?)))
}

/// The scalar the whole-token paths take at the start of `text`, whole there: a plain string
/// that a scratch of `capacity` bytes holds ([`plain_string`]), an integer the number buffer
/// holds ([`stored_integer_len`]), `true`, `false` or `null`. Its token, where its text lies
/// in `text` (start, length: a string's without its quotes, empty for a literal) and the bytes
/// it takes.
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn scalar_at(text: &[u8], capacity: usize) -> Option<(Token, (usize, usize), usize)> {
    match *text.first()? {
        b'"' => {
            let len = plain_string(text, capacity)?;
            Some((TokenKind::Str.into(), (1, len), len.saturating_add(2)))
        }
        b'-' | b'0'..=b'9' => {
            let len = stored_integer_len(text)?;
            Some((Token { kind: TokenKind::Num, flag: true }, (0, len), len))
        }
        b't' if text.starts_with(b"true") => Some((Token { kind: TokenKind::Bool, flag: true }, (0, 0), 4)),
        b'f' if text.starts_with(b"false") => Some((Token { kind: TokenKind::Bool, flag: false }, (0, 0), 5)),
        b'n' if text.starts_with(b"null") => Some((TokenKind::Null.into(), (0, 0), 4)),
        _ => None,
    }
}

/// The length of the integer (`-? (0 | [1-9][0-9]*)`) at the start of `bytes` when a byte
/// that ends it (neither a digit nor `.`, `e`, `E`) follows it there; `None` otherwise (not an
/// integer, or one the number's state machine must finish: a fraction, an exponent, a leading
/// zero, the chunk's end).
// Inlined on a host, where the whole-token path calls it too (see `Tokenizer::quick_value`).
#[cfg_attr(not(target_os = "none"), inline(always))]
fn integer_len(bytes: &[u8]) -> Option<usize> {
    let sign = usize::from(bytes.first() == Some(&b'-'));
    let body = bytes.get(sign..).unwrap_or(&[]);
    let digits = digits_len(body);
    let single_zero_or_none = body.first() != Some(&b'0') || digits == 1;
    let ends = body.get(digits).is_some_and(|b| !matches!(b, b'.' | b'e' | b'E'));
    (digits > 0 && single_zero_or_none && ends).then_some(sign.saturating_add(digits))
}

fn starts_value(b: u8) -> bool {
    matches!(b, b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n')
}

fn hex_value(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

/// The state after a UTF-8 lead byte (RFC 3629 table: no overlong forms, no surrogates, nothing
/// above U+10FFFF), or `None` when `b` cannot lead a sequence.
fn utf8_lead(b: u8) -> Option<StrState> {
    let (remaining, low, high) = match b {
        0xC2..=0xDF => (1, 0x80, 0xBF),
        0xE0 => (2, 0xA0, 0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
        0xED => (2, 0x80, 0x9F),
        0xF0 => (3, 0x90, 0xBF),
        0xF1..=0xF3 => (3, 0x80, 0xBF),
        0xF4 => (3, 0x80, 0x8F),
        _ => return None,
    };
    Some(StrState::Utf8 { remaining, low, high })
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
mod tests {
    extern crate std;

    use std::string::{String, ToString};
    use std::vec::Vec;
    use std::{format, vec};

    use super::*;

    /// A `BufRead` over a slice that hands out at most `chunk` bytes at a time, on fixed
    /// boundaries (multiples of `chunk`) like a ring buffer, and fails from `fail_at` on.
    struct ChunkedReader<'a> {
        data: &'a [u8],
        pos: usize,
        chunk: usize,
        fail_at: Option<usize>,
    }

    impl<'a> ChunkedReader<'a> {
        fn new(data: &'a [u8], chunk: usize) -> Self {
            Self { data, pos: 0, chunk, fail_at: None }
        }
    }

    impl embedded_io::ErrorType for ChunkedReader<'_> {
        type Error = embedded_io::ErrorKind;
    }

    impl embedded_io::Read for ChunkedReader<'_> {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
            let chunk = self.fill_buf()?;
            let n = chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&chunk[..n]);
            self.consume(n);
            Ok(n)
        }
    }

    impl BufRead for ChunkedReader<'_> {
        fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
            if self.fail_at.is_some_and(|at| self.pos >= at) {
                return Err(embedded_io::ErrorKind::Interrupted);
            }
            let mut end = ((self.pos / self.chunk + 1) * self.chunk).min(self.data.len());
            if let Some(at) = self.fail_at {
                end = end.min(at);
            }
            Ok(&self.data[self.pos..end])
        }

        fn consume(&mut self, amount: usize) {
            self.pos += amount;
            assert!(self.pos <= self.data.len(), "consumed past the end");
        }
    }

    /// An event with its text owned, so that a whole stream can be kept and compared.
    #[derive(Debug, Clone, PartialEq)]
    enum Owned {
        BeginObject,
        EndObject,
        BeginArray,
        EndArray,
        Key(String),
        Str(String),
        Num(String, bool),
        Bool(bool),
        Null,
        End,
        /// A value passed over by [`Tokenizer::skip_value`].
        Skipped,
    }

    fn own(event: Event<'_>) -> Owned {
        match event {
            Event::BeginObject => Owned::BeginObject,
            Event::EndObject => Owned::EndObject,
            Event::BeginArray => Owned::BeginArray,
            Event::EndArray => Owned::EndArray,
            Event::Key(k) => Owned::Key(k.to_string()),
            Event::Str(s) => Owned::Str(s.to_string()),
            Event::Num(n) => Owned::Num(n.text().to_string(), n.is_integer()),
            Event::Bool(b) => Owned::Bool(b),
            Event::Null => Owned::Null,
            Event::End => Owned::End,
        }
    }

    type Stream = (Vec<(u64, Owned)>, Option<Fault>);

    /// All events (with their offsets) up to `End` or the first fault, in `chunk`-byte chunks.
    fn stream_chunked(scratch: usize, depth: u16, doc: &[u8], chunk: usize) -> Stream {
        stream_chunked_runs(scratch, depth, doc, chunk, false)
    }

    /// [`stream_chunked`], with the tokenizer consuming in runs when `runs` is set.
    fn stream_chunked_runs(scratch: usize, depth: u16, doc: &[u8], chunk: usize, runs: bool) -> Stream {
        let mut buf = vec![0; scratch];
        let mut tok = Tokenizer::new(&mut buf, depth);
        tok.consume_in_runs(runs);
        let mut src = ChunkedReader::new(doc, chunk);
        let mut out = Vec::new();
        loop {
            match tok.next(&mut src) {
                Ok(event) => {
                    let event = own(event);
                    out.push((tok.offset(), event.clone()));
                    if event == Owned::End {
                        assert_eq!(src.pos, doc.len(), "End before the end of input");
                        return (out, None);
                    }
                }
                Err(fault) => {
                    // A spent tokenizer repeats its fault.
                    assert_eq!(tok.next(&mut src), Err(fault));
                    assert_eq!(tok.skip_value(&mut src), Err(fault));
                    return (out, Some(fault));
                }
            }
        }
    }

    /// What the stream readers below share: the events read so far, with their offsets, and
    /// the containers open.
    #[derive(Default)]
    struct Recorded {
        out: Vec<(u64, Owned)>,
        /// Per open container, whether it is an object.
        objects: Vec<bool>,
    }

    impl Recorded {
        /// Records `event` at `offset`, opening or closing its container; `true` at `End`.
        fn push(&mut self, offset: u64, event: Owned) -> bool {
            self.out.push((offset, event.clone()));
            match event {
                Owned::BeginObject => self.objects.push(true),
                Owned::BeginArray => self.objects.push(false),
                Owned::EndObject | Owned::EndArray => drop(self.objects.pop()),
                Owned::End => return true,
                _ => {}
            }
            false
        }

        /// Whether the innermost open container is an object (`Some(false)`: an array).
        fn in_object(&self) -> Option<bool> {
            self.objects.last().copied()
        }

        /// The stream once `End` is read: the whole input consumed.
        fn ended(self, src: &ChunkedReader<'_>, doc: &[u8]) -> Stream {
            assert_eq!(src.pos, doc.len(), "End before the end of input");
            (self.out, None)
        }
    }

    /// Runs `read` on a tokenizer of `scratch` bytes and `depth` levels (consuming in runs
    /// when `runs` is set) over `doc` shown `chunk` bytes at a time.
    fn reading(
        scratch: usize,
        depth: u16,
        doc: &[u8],
        chunk: usize,
        runs: bool,
        read: impl FnOnce(&mut Tokenizer<'_>, &mut ChunkedReader<'_>) -> Stream,
    ) -> Stream {
        let mut buf = vec![0; scratch];
        let mut tok = Tokenizer::new(&mut buf, depth);
        tok.consume_in_runs(runs);
        read(&mut tok, &mut ChunkedReader::new(doc, chunk))
    }

    /// A key as the readers' key calls give it.
    fn owned_key(key: &[u8]) -> Owned {
        Owned::Key(String::from_utf8(key.to_vec()).unwrap())
    }

    /// [`stream_chunked_runs`], with each key and each object's `}` read by
    /// [`Tokenizer::next_key_bytes`], as the manifest readers read them (a key shows as `Key`,
    /// the close as `EndObject`); every other token by [`Tokenizer::next`].
    fn stream_keyed(scratch: usize, depth: u16, doc: &[u8], chunk: usize, runs: bool) -> Stream {
        reading(scratch, depth, doc, chunk, runs, |tok, src| {
            let mut seen = Recorded::default();
            let mut key_next = false;
            loop {
                let step = if key_next {
                    tok.next_key_bytes(src).map(|key| key.map_or(Owned::EndObject, owned_key))
                } else {
                    tok.next(src).map(own)
                };
                match step {
                    Ok(event) => {
                        if seen.push(tok.offset(), event.clone()) {
                            return seen.ended(src, doc);
                        }
                        // A key comes after `{` and after each member's whole value.
                        key_next = !matches!(event, Owned::Key(_)) && seen.in_object() == Some(true);
                    }
                    Err(fault) => {
                        assert_eq!(tok.next(src), Err(fault), "a spent tokenizer repeats its fault");
                        return (seen.out, Some(fault));
                    }
                }
            }
        })
    }

    /// [`stream_chunked_runs`] as the manifest readers' other calls read: each object's keys
    /// and `}` by [`Tokenizer::next_key_bytes`], each array's elements and `]` by
    /// [`Tokenizer::next_element`], and every third value passed over by
    /// [`Tokenizer::skip_value`] (shown as `Skipped` at its offset); the rest by
    /// [`Tokenizer::next`]. Each array is first offered to [`Tokenizer::integer_array`] (which
    /// only a host in runs takes), every other one refusing its elements that end in `1`; an
    /// array's numbers and skipped elements show at offset 0, since that path has no offset
    /// per element.
    fn stream_skipping(scratch: usize, depth: u16, doc: &[u8], chunk: usize, runs: bool) -> Stream {
        reading(scratch, depth, doc, chunk, runs, |tok, src| {
            let mut seen = Recorded::default();
            let mut value_next = true;
            let mut turn = 0u32;
            loop {
                let step = match (seen.in_object(), value_next) {
                    (Some(true), false) => {
                        tok.next_key_bytes(src).map(|key| Some(key.map_or(Owned::EndObject, owned_key)))
                    }
                    (Some(false), false) => tok.next_element(src).map(|more| (!more).then_some(Owned::EndArray)),
                    (_, true) => {
                        turn += 1;
                        if turn % 3 == 0 {
                            tok.skip_value(src).map(|skipped| {
                                assert!(skipped, "a value position");
                                Some(Owned::Skipped)
                            })
                        } else {
                            tok.next(src).map(|event| Some(own(event)))
                        }
                    }
                    (None, false) => tok.next(src).map(|event| Some(own(event))),
                };
                let event = match step {
                    Ok(None) => {
                        value_next = true;
                        continue;
                    }
                    Ok(Some(event)) => event,
                    Err(fault) => {
                        assert_eq!(tok.skip_value(src), Err(fault), "a spent tokenizer repeats its fault");
                        assert_eq!(tok.next_element(src), Err(fault), "a spent tokenizer repeats its fault");
                        return (seen.out, Some(fault));
                    }
                };
                let in_array = seen.in_object() == Some(false);
                let offset =
                    if in_array && matches!(event, Owned::Num(..) | Owned::Skipped) { 0 } else { tok.offset() };
                if seen.push(offset, event.clone()) {
                    return seen.ended(src, doc);
                }
                value_next = matches!(event, Owned::Key(_));
                if event != Owned::BeginArray {
                    continue;
                }
                let mut taken = Vec::new();
                let refuse = turn % 2 == 0;
                let mut take = |n: Number<'_>| {
                    if refuse && n.text().ends_with('1') {
                        return false;
                    }
                    taken.push(Owned::Num(n.text().to_string(), n.is_integer()));
                    true
                };
                if let Some(count) = tok.integer_array(src, &mut take) {
                    assert_eq!(count, taken.len());
                    // Every third value skipped, as the element by element reading does.
                    for number in taken {
                        turn += 1;
                        seen.out.push((0, if turn % 3 == 0 { Owned::Skipped } else { number }));
                    }
                    seen.push(tok.offset(), Owned::EndArray);
                }
            }
        })
    }

    /// [`stream_keyed`], with each key position first offered to [`Tokenizer::quick_member`]
    /// (which only a host in runs takes), whose lookup knows the keys of odd length: a member
    /// it reads whole is its key and value events, and every third is returned
    /// ([`Tokenizer::rewind`]) and read again token by token. Keys show at offset 0, since a
    /// member read whole keeps no offset for its key.
    fn stream_members(scratch: usize, depth: u16, doc: &[u8], chunk: usize, runs: bool) -> Stream {
        reading(scratch, depth, doc, chunk, runs, |tok, src| {
            let mut seen = Recorded::default();
            let mut key_next = false;
            let mut members = 0u32;
            loop {
                let mut quick = None;
                if key_next {
                    match tok.quick_member(src, |key| (key.len() % 2 == 1).then(|| key.to_vec())) {
                        None => {}
                        Some(QuickMember::End) => quick = Some(vec![(tok.offset(), Owned::EndObject)]),
                        Some(QuickMember::Key(key)) => quick = Some(vec![(0, owned_key(&key))]),
                        Some(QuickMember::Skipped) => quick = Some(vec![(tok.offset(), Owned::Skipped)]),
                        Some(QuickMember::Member(key, event, before)) => {
                            members += 1;
                            if members % 3 == 0 {
                                tok.rewind(before);
                            } else {
                                let event = own(event);
                                quick = Some(vec![(0, owned_key(&key)), (tok.offset(), event)]);
                            }
                        }
                    }
                }
                let step = match quick {
                    Some(events) => Ok(events),
                    // A key of even length is one the reader does not know: its value skipped.
                    None if key_next => match tok.next_key_bytes(src) {
                        Ok(Some(key)) if key.len() % 2 == 0 => match tok.skip_value(src) {
                            Ok(skipped) => {
                                assert!(skipped, "a value position");
                                Ok(vec![(tok.offset(), Owned::Skipped)])
                            }
                            Err(fault) => Err(fault),
                        },
                        Ok(Some(key)) => Ok(vec![(0, owned_key(key))]),
                        Ok(None) => Ok(vec![(tok.offset(), Owned::EndObject)]),
                        Err(fault) => Err(fault),
                    },
                    None => match tok.next(src).map(own) {
                        Ok(event) => Ok(vec![(tok.offset(), event)]),
                        Err(fault) => Err(fault),
                    },
                };
                let events = match step {
                    Ok(events) => events,
                    Err(fault) => {
                        assert_eq!(tok.next(src), Err(fault), "a spent tokenizer repeats its fault");
                        return (seen.out, Some(fault));
                    }
                };
                for (offset, event) in events {
                    if seen.push(offset, event.clone()) {
                        return seen.ended(src, doc);
                    }
                    key_next = !matches!(event, Owned::Key(_)) && seen.in_object() == Some(true);
                }
            }
        })
    }

    /// The stream of `doc`, checked identical for chunks of 1, 7 and 4096 bytes.
    /// The stream of `doc`, checked identical for chunks of 1, 7 and 4096 bytes, consuming
    /// at the end of each call or in runs (where the source is all consumed at the end or a
    /// fault too: `stream_chunked_runs` checks it).
    fn stream_with(scratch: usize, depth: u16, doc: &[u8]) -> Stream {
        let whole = stream_chunked(scratch, depth, doc, 4096);
        for (chunk, runs) in [(1, false), (7, false), (1, true), (7, true), (4096, true)] {
            assert_eq!(
                stream_chunked_runs(scratch, depth, doc, chunk, runs),
                whole,
                "chunk {chunk}, runs {runs}: {:?}",
                String::from_utf8_lossy(doc)
            );
        }
        whole
    }

    fn stream(doc: &[u8]) -> Stream {
        stream_with(256, 32, doc)
    }

    fn events(doc: &[u8]) -> Vec<Owned> {
        let (events, fault) = stream(doc);
        assert_eq!(fault, None, "{:?}", String::from_utf8_lossy(doc));
        events.into_iter().map(|(_, e)| e).collect()
    }

    fn fault(doc: &[u8]) -> (u64, ErrorKind) {
        let (_, fault) = stream(doc);
        let fault = fault.unwrap_or_else(|| panic!("accepted {:?}", String::from_utf8_lossy(doc)));
        (fault.offset, fault.kind)
    }

    /// Regression (found by the `json` fuzz target): a received string or number longer than
    /// its buffer, with a syntax error after the overflow, gave the syntax error when the text
    /// came in one chunk and the capacity error when chunks split it. The overflow comes first
    /// in the document, so it is the fault, whatever the chunking (`stream_with` checks 1, 7
    /// and 4096-byte chunks).
    #[test]
    fn an_overflow_before_a_syntax_error_is_the_fault_whatever_the_chunking() {
        let scratch = ErrorKind::Capacity(CapacityError { limit: SCRATCH_LIMIT, capacity: 8 });
        for doc in [&b"{\"0123456789\x9b\":1}"[..], b"[\"0123456789\x01\"]", b"[\"0123456789\xc3\x28\"]"] {
            let (_, fault) = stream_with(8, 4, doc);
            assert_eq!(fault.map(|f| (f.offset, f.kind)), Some((1, scratch)), "{doc:?}");
        }
        let number = ErrorKind::Capacity(CapacityError { limit: NUMBER_LIMIT, capacity: NUMBER_CAPACITY as u64 });
        for tail in [&b".e]"[..], b"-]", b"e+]"] {
            let doc = [&b"[1"[..], &[b'2'; 60], tail].concat();
            let (_, fault) = stream_with(8, 4, &doc);
            assert_eq!(fault.map(|f| (f.offset, f.kind)), Some((1, number)), "{tail:?}");
        }
        // Before the buffer is full, the syntax error is the fault.
        let (_, fault) = stream_with(8, 4, b"[\"0123\x01\"]");
        assert_eq!(fault.map(|f| (f.offset, f.kind)), Some(json(6, JsonError::ControlCharInString)));
        let (_, fault) = stream_with(8, 4, b"[12.e]");
        assert_eq!(fault.map(|f| (f.offset, f.kind)), Some(json(4, JsonError::InvalidNumber)));
    }

    fn json(offset: u64, e: JsonError) -> (u64, ErrorKind) {
        (offset, ErrorKind::Json(e))
    }

    fn byte(offset: u64, found: u8, expected: Expected) -> (u64, ErrorKind) {
        json(offset, JsonError::UnexpectedByte { found, expected })
    }

    fn num(text: &str, integer: bool) -> Owned {
        Owned::Num(text.to_string(), integer)
    }

    fn s(text: &str) -> Owned {
        Owned::Str(text.to_string())
    }

    fn key(text: &str) -> Owned {
        Owned::Key(text.to_string())
    }

    use Owned::{BeginArray as BA, BeginObject as BO, End, EndArray as EA, EndObject as EO};

    #[test]
    fn a_nested_document_gives_its_events_and_offsets() {
        let doc = br#" {"a": [1, -2.5e3, true, false, null], "b": {"c": "d"}, "e": []} "#;
        let (events, fault) = stream(doc);
        assert_eq!(fault, None);
        let expected = vec![
            (1, BO),
            (2, key("a")),
            (7, BA),
            (8, num("1", true)),
            (11, num("-2.5e3", false)),
            (19, Owned::Bool(true)),
            (25, Owned::Bool(false)),
            (32, Owned::Null),
            (36, EA),
            (39, key("b")),
            (44, BO),
            (45, key("c")),
            (50, s("d")),
            (53, EO),
            (56, key("e")),
            (61, BA),
            (62, EA),
            (63, EO),
            (65, End),
        ];
        assert_eq!(events, expected);
    }

    #[test]
    fn scalars_stand_alone_at_the_top_level() {
        assert_eq!(events(b"0"), vec![num("0", true), End]);
        assert_eq!(events(b" \t\r\n42\n"), vec![num("42", true), End]);
        assert_eq!(events(b"\"x\""), vec![s("x"), End]);
        assert_eq!(events(b"null"), vec![Owned::Null, End]);
        assert_eq!(events(b"true "), vec![Owned::Bool(true), End]);
    }

    #[test]
    fn rfc_number_shapes_are_accepted() {
        for (text, integer) in [
            ("-0", true),
            ("0", true),
            ("-0.0", false),
            ("0.5e-3", false),
            ("1E+2", false),
            ("1e5", false),
            ("123.456e-789", false),
            ("18446744073709551615", true),
            ("-9223372036854775808", true),
        ] {
            let doc = format!("[{text}]");
            assert_eq!(events(doc.as_bytes()), vec![BA, num(text, integer), EA, End], "{text}");
        }
    }

    #[test]
    fn number_grammar_errors_point_at_the_offending_byte() {
        assert_eq!(fault(b"01"), json(1, JsonError::InvalidNumber));
        assert_eq!(fault(b"[-01]"), json(3, JsonError::InvalidNumber));
        assert_eq!(fault(b"[1.]"), json(3, JsonError::InvalidNumber));
        assert_eq!(fault(b"[1.e5]"), json(3, JsonError::InvalidNumber));
        assert_eq!(fault(b"[1e]"), json(3, JsonError::InvalidNumber));
        assert_eq!(fault(b"[1e+]"), json(4, JsonError::InvalidNumber));
        assert_eq!(fault(b"[-]"), json(2, JsonError::InvalidNumber));
        assert_eq!(fault(b"-x"), json(1, JsonError::InvalidNumber));
        assert_eq!(fault(b".5"), byte(0, b'.', Expected::Value));
        assert_eq!(fault(b"+1"), byte(0, b'+', Expected::Value));
        assert_eq!(fault(b"[1.5.3]"), byte(4, b'.', Expected::CommaOrEndArray));
        // At the end of input a number that is not complete is a truncation.
        assert_eq!(fault(b"1."), json(2, JsonError::UnexpectedEnd));
        assert_eq!(fault(b"-"), json(1, JsonError::UnexpectedEnd));
        assert_eq!(fault(b"1e"), json(2, JsonError::UnexpectedEnd));
    }

    #[test]
    fn every_escape_is_decoded() {
        let doc = br#"["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20AC", "\uD83D\uDE00", "a\u0000b"]"#;
        assert_eq!(events(doc), vec![BA, s("\"\\/\u{8}\u{c}\n\r\t"), s("Aé€"), s("😀"), s("a\0b"), EA, End]);
    }

    #[test]
    fn raw_utf8_passes_through() {
        let doc = "{\"ключ\": \"€ 😀 é\"}".as_bytes();
        assert_eq!(events(doc), vec![BO, key("ключ"), s("€ 😀 é"), EO, End]);
    }

    #[test]
    fn bad_escapes_are_refused() {
        assert_eq!(fault(br#""\x""#), json(2, JsonError::InvalidEscape));
        assert_eq!(fault(br#""\u12G4""#), json(5, JsonError::InvalidEscape));
        assert_eq!(fault(br#""\u12""#), json(5, JsonError::InvalidEscape));
        assert_eq!(fault(br#""\U0041""#), json(2, JsonError::InvalidEscape));
    }

    #[test]
    fn lone_surrogates_are_refused_at_their_escape() {
        assert_eq!(fault(br#""\uD800""#), json(1, JsonError::LoneSurrogate));
        assert_eq!(fault(br#""\uDC00""#), json(1, JsonError::LoneSurrogate));
        assert_eq!(fault(br#""a\uD800x""#), json(2, JsonError::LoneSurrogate));
        assert_eq!(fault(br#""\uD800\u0041""#), json(1, JsonError::LoneSurrogate));
        assert_eq!(fault(br#""\uD800\n""#), json(1, JsonError::LoneSurrogate));
        assert_eq!(fault(br#""\uDBFF\uDBFF""#), json(1, JsonError::LoneSurrogate));
    }

    #[test]
    fn invalid_utf8_is_refused_at_the_bad_byte() {
        let cases: &[(&[u8], u64)] = &[
            (b"\"\xC0\x80\"", 1),         // overlong NUL
            (b"\"\xC1\xBF\"", 1),         // overlong
            (b"\"\xE0\x80\xAF\"", 2),     // overlong 3-byte
            (b"\"\xF0\x80\x80\xAF\"", 2), // overlong 4-byte
            (b"\"\xED\xA0\x80\"", 2),     // encoded surrogate U+D800
            (b"\"\xF4\x90\x80\x80\"", 2), // above U+10FFFF
            (b"\"\xF5\x80\x80\x80\"", 1),
            (b"\"\xFF\"", 1),
            (b"\"a\x80\"", 2),    // stray continuation byte
            (b"\"\xE2\x82\"", 3), // truncated sequence
            (b"\"\xE2\x82", 3),   // truncated at the end of a key-less string
        ];
        for &(doc, offset) in cases {
            let got = fault(doc);
            if doc.last() == Some(&b'"') {
                assert_eq!(got, json(offset, JsonError::InvalidUtf8), "{doc:?}");
            } else {
                assert_eq!(got, json(offset, JsonError::UnexpectedEnd), "{doc:?}");
            }
        }
    }

    #[test]
    fn raw_control_characters_are_refused() {
        assert_eq!(fault(b"\"a\tb\""), json(2, JsonError::ControlCharInString));
        assert_eq!(fault(b"{\"k\x00\":1}"), json(3, JsonError::ControlCharInString));
        assert_eq!(fault(b"[\"\n\"]"), json(2, JsonError::ControlCharInString));
        // DEL (0x7F) is not a control character in JSON's sense.
        assert_eq!(events(b"\"\x7F\""), vec![s("\u{7F}"), End]);
    }

    #[test]
    fn truncated_literals_and_documents_end_unexpectedly() {
        for (doc, offset) in [
            (&b""[..], 0),
            (b"   ", 3),
            (b"tru", 3),
            (b"nul", 3),
            (b"fals", 4),
            (b"{", 1),
            (b"{\"a\"", 4),
            (b"{\"a\":", 5),
            (b"[1,", 3),
            (b"[1", 2),
            (b"\"abc", 4),
            (b"\"\\u00", 5),
        ] {
            assert_eq!(fault(doc), json(offset, JsonError::UnexpectedEnd), "{doc:?}");
        }
    }

    #[test]
    fn misspelt_literals_name_the_literal() {
        assert_eq!(fault(b"trux"), byte(3, b'x', Expected::True));
        assert_eq!(fault(b"[nul!]"), byte(4, b'!', Expected::Null));
        assert_eq!(fault(b"falsy"), byte(4, b'y', Expected::False));
        assert_eq!(fault(b"True"), byte(0, b'T', Expected::Value));
        assert_eq!(fault(b"truex"), json(4, JsonError::TrailingData));
    }

    #[test]
    fn structural_errors_say_what_was_expected() {
        assert_eq!(fault(br#"{"a" 1}"#), byte(5, b'1', Expected::Colon));
        assert_eq!(fault(b"[1 2]"), byte(3, b'2', Expected::CommaOrEndArray));
        assert_eq!(fault(br#"{"a":1 "b":2}"#), byte(7, b'"', Expected::CommaOrEndObject));
        assert_eq!(fault(b"{1:2}"), byte(1, b'1', Expected::KeyOrEndObject));
        assert_eq!(fault(br#"{"a":1,2}"#), byte(7, b'2', Expected::Key));
        assert_eq!(fault(b"[,1]"), byte(1, b',', Expected::ValueOrEndArray));
        assert_eq!(fault(b"[1}"), byte(2, b'}', Expected::CommaOrEndArray));
        assert_eq!(fault(br#"{"a":1]"#), byte(6, b']', Expected::CommaOrEndObject));
        assert_eq!(fault(b"{\"a\":}"), byte(5, b'}', Expected::Value));
        assert_eq!(fault(b"\xEF\xBB\xBF{}"), byte(0, 0xEF, Expected::Value));
    }

    #[test]
    fn trailing_commas_are_refused() {
        assert_eq!(fault(b"[1,]"), json(3, JsonError::TrailingComma));
        assert_eq!(fault(br#"{"a":1,}"#), json(7, JsonError::TrailingComma));
        assert_eq!(fault(b"[1, \n ]"), json(6, JsonError::TrailingComma));
    }

    #[test]
    fn only_whitespace_may_follow_the_top_level_value() {
        assert_eq!(fault(b"1 2"), json(2, JsonError::TrailingData));
        assert_eq!(fault(b"{} x"), json(3, JsonError::TrailingData));
        assert_eq!(fault(b"[]]"), json(2, JsonError::TrailingData));
        assert_eq!(fault(b"\"a\"\"b\""), json(3, JsonError::TrailingData));
    }

    #[test]
    fn depth_beyond_the_limit_is_refused_at_the_opening_bracket() {
        let (_, fault) = stream_with(16, 4, b"[[[[1]]]]");
        assert_eq!(fault, None);
        let (events, fault) = stream_with(16, 4, b"[[{\"a\":[[1]]}]]");
        assert_eq!(events.len(), 5);
        assert_eq!(fault, Some(Fault::json(8, JsonError::DepthLimit { limit: 4 })));
    }

    #[test]
    fn skip_value_tracks_depth_without_recursion() {
        let mut doc = Vec::new();
        doc.extend_from_slice(b"{\"deep\":");
        doc.extend(core::iter::repeat_n(b'[', 100_000));
        let mut scratch = [0; 16];
        let mut tok = Tokenizer::new(&mut scratch, 128);
        let mut src = &doc[..];
        assert_eq!(tok.next(&mut src), Ok(Event::BeginObject));
        assert_eq!(tok.next(&mut src), Ok(Event::Key("deep")));
        let fault = tok.skip_value(&mut src).unwrap_err();
        // The object is level 1, so the 128th `[` (offset 8 + 127) is one level too many.
        assert_eq!(fault, Fault::json(8 + 127, JsonError::DepthLimit { limit: 128 }));
    }

    #[test]
    fn capacities_apply_to_received_text_only() {
        let doc = br#"["abcd", "abcde", 123456789012345678901234567890123456789012345678, 1234567890123456789012345678901234567890123456789]"#;
        // Skipping validates but stores nothing: any length is fine.
        let mut scratch = [0; 4];
        let mut tok = Tokenizer::new(&mut scratch, 4);
        let mut src = ChunkedReader::new(doc, 3);
        assert_eq!(tok.skip_value(&mut src), Ok(true));
        assert_eq!(tok.next(&mut src), Ok(Event::End));

        let mut scratch = [0; 4];

        let mut tok = Tokenizer::new(&mut scratch, 4);
        let mut src = ChunkedReader::new(doc, 3);
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.next(&mut src), Ok(Event::Str("abcd")));
        let fault = tok.next(&mut src).unwrap_err();
        let scratch = CapacityError { limit: SCRATCH_LIMIT, capacity: 4 };
        assert_eq!(fault, Fault { offset: 9, kind: ErrorKind::Capacity(scratch) });

        let mut scratch = [0; 4];

        let mut tok = Tokenizer::new(&mut scratch, 4);
        let mut src = ChunkedReader::new(doc, 3);
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.skip_value(&mut src), Ok(true));
        assert_eq!(tok.skip_value(&mut src), Ok(true));
        let text = "123456789012345678901234567890123456789012345678";
        assert_eq!(tok.next(&mut src), Ok(Event::Num(Number::from_ascii(text.as_bytes(), true))));
        let fault = tok.next(&mut src).unwrap_err();
        let number = CapacityError { limit: NUMBER_LIMIT, capacity: NUMBER_CAPACITY as u64 };
        assert_eq!(fault, Fault { offset: 68, kind: ErrorKind::Capacity(number) });
    }

    #[test]
    fn numbers_convert_through_events() {
        let mut scratch = [0; 16];
        let mut tok = Tokenizer::new(&mut scratch, 4);
        let mut src: &[u8] = b"[18446744073709551616, -1, 2.5]";
        tok.begin_array(&mut src).unwrap();
        let Ok(Event::Num(n)) = tok.next(&mut src) else { panic!("not a number") };
        assert_eq!(n.as_u64(), Err(JsonError::NumberOutOfRange));
        let Ok(Event::Num(n)) = tok.next(&mut src) else { panic!("not a number") };
        assert_eq!((n.as_u64(), n.as_i64()), (Err(JsonError::NumberOutOfRange), Ok(-1)));
        let Ok(Event::Num(n)) = tok.next(&mut src) else { panic!("not a number") };
        assert_eq!((n.as_i64(), n.as_f64()), (Err(JsonError::NotAnInteger), Ok(2.5)));
    }

    #[test]
    fn source_failures_carry_their_kind_and_offset() {
        let doc = br#"{"key": "a long string value"}"#;
        for fail_at in [0, 3, 12, 29] {
            let mut scratch = [0; 64];
            let mut tok = Tokenizer::new(&mut scratch, 4);
            let mut src = ChunkedReader { fail_at: Some(fail_at), ..ChunkedReader::new(doc, 5) };
            let fault = loop {
                match tok.next(&mut src) {
                    Ok(Event::End) => panic!("reached the end despite the failure"),
                    Ok(_) => {}
                    Err(fault) => break fault,
                }
            };
            assert_eq!(fault.offset, fail_at as u64);
            assert_eq!(fault.kind, ErrorKind::Io(embedded_io::ErrorKind::Interrupted));
        }
    }

    #[test]
    fn skip_value_stops_before_the_end_of_a_container() {
        let doc = br#"{"a": [1, {"x": [2, "y"]}, []], "b": 5, "c": {"d": null}}"#;
        for chunk in [1, 7, 4096] {
            let mut scratch = [0; 8];
            let mut tok = Tokenizer::new(&mut scratch, 8);
            let mut src = ChunkedReader::new(doc, chunk);
            assert_eq!(tok.next(&mut src), Ok(Event::BeginObject));
            assert_eq!(tok.next(&mut src), Ok(Event::Key("a")));
            assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
            // The elements one by one, then the array's end, which skip_value leaves alone.
            assert_eq!(tok.skip_value(&mut src), Ok(true));
            assert_eq!(tok.offset(), 7);
            assert_eq!(tok.skip_value(&mut src), Ok(true));
            assert_eq!(tok.offset(), 10);
            assert_eq!(tok.depth(), 2);
            assert_eq!(tok.skip_value(&mut src), Ok(true));
            assert_eq!(tok.skip_value(&mut src), Ok(false));
            assert_eq!(tok.skip_value(&mut src), Ok(false));
            assert_eq!(tok.next(&mut src), Ok(Event::EndArray));
            // At a key position a whole member goes.
            assert_eq!(tok.skip_value(&mut src), Ok(true));
            assert_eq!(tok.next(&mut src), Ok(Event::Key("c")));
            assert_eq!(tok.skip_value(&mut src), Ok(true));
            assert_eq!(tok.skip_value(&mut src), Ok(false));
            assert_eq!(tok.next(&mut src), Ok(Event::EndObject));
            assert_eq!(tok.skip_value(&mut src), Ok(false));
            assert_eq!(tok.next(&mut src), Ok(Event::End));
            assert_eq!(tok.next(&mut src), Ok(Event::End));
        }
    }

    #[test]
    fn skipped_values_are_fully_validated() {
        for (doc, expected) in [
            (&br#"{"skip": [1, 2,], "k": 1}"#[..], json(15, JsonError::TrailingComma)),
            (br#"{"skip": {"a": "\q"}, "k": 1}"#, json(17, JsonError::InvalidEscape)),
            (b"{\"skip\": [\"\xC0\x80\"], \"k\": 1}", json(11, JsonError::InvalidUtf8)),
            (br#"{"skip": [01], "k": 1}"#, json(11, JsonError::InvalidNumber)),
            (br#"{"skip": [1}, "k": 1}"#, byte(11, b'}', Expected::CommaOrEndArray)),
            (br#"{"skip": tru, "k": 1}"#, byte(12, b',', Expected::True)),
            (br#"{"skip": "\uDD00", "k": 1}"#, json(10, JsonError::LoneSurrogate)),
        ] {
            for chunk in [1, 7, 4096] {
                let mut scratch = [0; 8];
                let mut tok = Tokenizer::new(&mut scratch, 8);
                let mut src = ChunkedReader::new(doc, chunk);
                assert_eq!(tok.next(&mut src), Ok(Event::BeginObject));
                assert_eq!(tok.next(&mut src), Ok(Event::Key("skip")));
                let fault = tok.skip_value(&mut src).unwrap_err();
                assert_eq!((fault.offset, fault.kind), expected, "{:?}", String::from_utf8_lossy(doc));
            }
        }
    }

    #[test]
    fn in_runs_a_chunk_is_consumed_once_all_read_at_the_end_or_on_release() {
        let doc = br#"[1, "two", 3] "#;
        let mut scratch = [0; 8];
        let mut tok = Tokenizer::new(&mut scratch, 8);
        // One call consumes what it read.
        let mut src = ChunkedReader::new(doc, 4096);
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(src.pos, 1);
        // In runs, the bytes stay held in the chunk: no consume until it is all read.
        tok.reset();
        tok.consume_in_runs(true);
        let mut src = ChunkedReader::new(doc, 4096);
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.read_u64(&mut src), Ok(1));
        assert_eq!(tok.read_str(&mut src), Ok("two"));
        assert_eq!((src.pos, tok.position()), (0, 9));
        tok.release(&mut src);
        assert_eq!(src.pos, 9);
        assert_eq!(tok.read_u64(&mut src), Ok(3));
        assert_eq!(src.pos, 9);
        assert_eq!(tok.next(&mut src), Ok(Event::EndArray));
        assert_eq!(tok.next(&mut src), Ok(Event::End));
        assert_eq!(src.pos, doc.len(), "the end consumes all");
        // A chunk all read is consumed before the next one is asked for.
        tok.reset();
        let mut src = ChunkedReader::new(doc, 4);
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.read_u64(&mut src), Ok(1));
        assert_eq!(src.pos, 0);
        assert_eq!(tok.read_str(&mut src), Ok("two"));
        assert_eq!(src.pos, 8, "two chunks read whole, the third held");
        // A fault consumes what was read up to it.
        tok.reset();
        let mut src = ChunkedReader::new(br#"[1, x]"#, 4096);
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.read_u64(&mut src), Ok(1));
        assert_eq!(tok.next(&mut src).map_err(|f| f.offset), Err(4));
        assert_eq!(src.pos, 4);
    }

    #[test]
    fn peek_kind_consumes_nothing_of_the_token() {
        let doc = br#"[{}, [], "s", 1, true, null] "#;
        let mut scratch = [0; 8];
        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src = ChunkedReader::new(doc, 1);
        let mut kinds = Vec::new();
        loop {
            let kind = tok.peek_kind(&mut src).unwrap();
            assert_eq!(tok.peek_kind(&mut src), Ok(kind));
            let event = tok.next(&mut src).unwrap();
            assert_eq!(event.kind(), kind);
            kinds.push(kind);
            if kind == TokenKind::End {
                break;
            }
        }
        use TokenKind::*;
        assert_eq!(
            kinds,
            vec![BeginArray, BeginObject, EndObject, BeginArray, EndArray, Str, Num, Bool, Null, EndArray, End]
        );
        let mut scratch = [0; 8];
        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = br#"{"k": 1}"#;
        tok.begin_object(&mut src).unwrap();
        assert_eq!(tok.peek_kind(&mut src), Ok(Key));
        assert_eq!(tok.position(), 1);
        assert_eq!(tok.next(&mut src), Ok(Event::Key("k")));
        assert_eq!(tok.peek_kind(&mut src), Ok(Num));
        assert_eq!((tok.offset(), tok.position()), (1, 6));
        let bad = Fault::json(1, JsonError::UnexpectedByte { found: b'x', expected: Expected::Value });
        assert_eq!(Tokenizer::new(&mut [0; 8], 8).peek_kind(&mut &b" x"[..]), Err(bad));
    }

    #[test]
    fn helpers_iterate_objects_and_arrays() {
        let doc = br#"{"a": [10, {"skip": 1}, 20], "b": "x", "c": {}}"#;
        for chunk in [1, 7, 4096] {
            let mut scratch = [0; 8];
            let mut tok = Tokenizer::new(&mut scratch, 8);
            let mut src = ChunkedReader::new(doc, chunk);
            let mut keys = Vec::new();
            let mut numbers = Vec::new();
            tok.begin_object(&mut src).unwrap();
            while let Some(k) = tok.next_key(&mut src).unwrap() {
                keys.push(k.to_string());
                match k {
                    "a" => {
                        tok.begin_array(&mut src).unwrap();
                        while tok.next_element(&mut src).unwrap() {
                            if tok.peek_kind(&mut src) == Ok(TokenKind::Num) {
                                let Ok(Event::Num(n)) = tok.next(&mut src) else { panic!("peeked a number") };
                                numbers.push(n.as_u64().unwrap());
                            } else {
                                assert_eq!(tok.skip_value(&mut src), Ok(true));
                            }
                        }
                    }
                    "c" => {
                        tok.begin_object(&mut src).unwrap();
                        assert_eq!(tok.next_key(&mut src), Ok(None));
                    }
                    _ => assert_eq!(tok.skip_value(&mut src), Ok(true)),
                }
            }
            assert_eq!(tok.depth(), 0);
            assert_eq!(tok.next(&mut src), Ok(Event::End));
            assert_eq!(keys, ["a", "b", "c"]);
            assert_eq!(numbers, [10, 20]);
        }
    }

    #[test]
    fn key_bytes_are_the_keys_unescaped_and_end_at_the_close() {
        // Plain, escaped, astral (a surrogate pair) and raw UTF-8 keys, of lengths about the
        // short copies' edges (3, 4, 8, 16, 17 bytes).
        let doc = "{\"abc\": 1, \"a\\\"b\\u00e9\": 2, \"\\ud83d\\ude00x\": 3, \"é1234567\": 4, \
                   \"0123456789abcdef\": 5, \"0123456789abcdefg\": 6}"
            .as_bytes();
        let expected = ["abc", "a\"bé", "😀x", "é1234567", "0123456789abcdef", "0123456789abcdefg"];
        for chunk in [1, 3, 4096] {
            let mut scratch = [0; 32];
            let mut tok = Tokenizer::new(&mut scratch, 8);
            let mut src = ChunkedReader::new(doc, chunk);
            tok.begin_object(&mut src).unwrap();
            let mut keys = Vec::new();
            while let Some(key) = tok.next_key_bytes(&mut src).unwrap() {
                keys.push(String::from_utf8(key.to_vec()).unwrap());
                assert!(tok.skip_value(&mut src).unwrap());
            }
            assert_eq!(keys, expected, "chunk {chunk}");
            assert_eq!(tok.next(&mut src), Ok(Event::End));
        }
        // A key position is required, as for `next_key`.
        let mut scratch = [0; 8];
        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = b"[1]";
        tok.begin_array(&mut src).unwrap();
        let fault = tok.next_key_bytes(&mut src).unwrap_err();
        assert_eq!(
            fault,
            Fault::json(1, JsonError::UnexpectedToken { found: TokenKind::Num, expected: Expected::KeyOrEndObject })
        );
    }

    #[test]
    fn helpers_refuse_the_wrong_token_without_guessing() {
        fn unexpected<T>(offset: u64, found: TokenKind, expected: Expected) -> Result<T, Fault> {
            Err(Fault::json(offset, JsonError::UnexpectedToken { found, expected }))
        }
        let mut scratch = [0; 8];
        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = br#"  "text""#;
        assert_eq!(tok.begin_object(&mut src), unexpected(2, TokenKind::Str, Expected::Type(JsonType::Object)));
        assert_eq!(
            tok.next(&mut src),
            unexpected(2, TokenKind::Str, Expected::Type(JsonType::Object)).map(|()| Event::End)
        );

        let mut scratch = [0; 8];

        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = br#"{"k": [1]}"#;
        assert_eq!(tok.begin_array(&mut src), unexpected(0, TokenKind::BeginObject, Expected::Type(JsonType::Array)));

        let mut scratch = [0; 8];

        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = br#"{"k": [1]}"#;
        tok.begin_object(&mut src).unwrap();
        assert_eq!(tok.next_element(&mut src), unexpected(1, TokenKind::Key, Expected::ValueOrEndArray));

        let mut scratch = [0; 8];

        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = br#"{"k": [1]}"#;
        tok.begin_object(&mut src).unwrap();
        assert_eq!(tok.next_key(&mut src).map(|k| k.map(str::len)), Ok(Some(1)));
        assert_eq!(tok.next_key(&mut src).map(|_| ()), unexpected(6, TokenKind::BeginArray, Expected::KeyOrEndObject));
    }

    #[test]
    fn typed_readers_refuse_the_wrong_type_before_consuming_it() {
        let doc = br#"{"s": "text", "u": 18446744073709551615, "i": -9223372036854775808, "f": 2.5e-1, "b": false}"#;
        for chunk in [1, 7, 4096] {
            let mut scratch = [0; 8];
            let mut tok = Tokenizer::new(&mut scratch, 8);
            let mut src = ChunkedReader::new(doc, chunk);
            tok.begin_object(&mut src).unwrap();
            assert_eq!(tok.next_key(&mut src), Ok(Some("s")));
            assert_eq!(tok.read_str(&mut src), Ok("text"));
            assert_eq!(tok.next_key(&mut src), Ok(Some("u")));
            assert_eq!(tok.read_u64(&mut src), Ok(u64::MAX));
            assert_eq!(tok.next_key(&mut src), Ok(Some("i")));
            assert_eq!(tok.read_i64(&mut src), Ok(i64::MIN));
            assert_eq!(tok.next_key(&mut src), Ok(Some("f")));
            assert_eq!(tok.read_f64(&mut src), Ok(0.25));
            assert_eq!(tok.next_key(&mut src), Ok(Some("b")));
            assert_eq!(tok.read_bool(&mut src), Ok(false));
            assert_eq!(tok.next_key(&mut src), Ok(None));
            assert_eq!(tok.next(&mut src), Ok(Event::End));
        }

        let refused = |doc: &[u8], read: &dyn Fn(&mut Tokenizer<'_>, &mut &[u8]) -> Option<Fault>| {
            let mut scratch = [0; 8];
            let mut tok = Tokenizer::new(&mut scratch, 8);
            let mut src = doc;
            tok.begin_array(&mut src).unwrap();
            let fault = read(&mut tok, &mut src).expect("refused");
            // Spent: the same fault again.
            assert_eq!(tok.next(&mut src), Err(fault));
            fault
        };
        let wrong = |offset, found, expected| Fault::json(offset, JsonError::UnexpectedToken { found, expected });
        let fault = refused(b"[ \"12\"]", &|t, s| t.read_u64(s).err());
        assert_eq!(fault, wrong(2, TokenKind::Str, Expected::Type(JsonType::UnsignedInteger)));
        assert_eq!(fault.to_string(), "expected an unsigned integer, found string (byte 2)");
        assert_eq!(
            refused(b"[ 12]", &|t, s| t.read_str(s).err()),
            wrong(2, TokenKind::Num, Expected::Type(JsonType::String))
        );
        let fault = refused(b"[{}]", &|t, s| t.read_bool(s).err());
        assert_eq!(fault, wrong(1, TokenKind::BeginObject, Expected::Type(JsonType::Bool)));
        // A typed read names the type as a manifest's type error does (one list, kinds.toml).
        assert_eq!(fault.to_string(), "expected a bool, found object (byte 1)");
        assert_eq!(
            refused(b"[null]", &|t, s| t.read_f64(s).err()),
            wrong(1, TokenKind::Null, Expected::Type(JsonType::Number))
        );
        assert_eq!(
            refused(b"[]", &|t, s| t.read_i64(s).err()),
            wrong(1, TokenKind::EndArray, Expected::Type(JsonType::Integer))
        );
        assert_eq!(refused(b"[ -1]", &|t, s| t.read_u64(s).err()), Fault::json(2, JsonError::NumberOutOfRange));
        assert_eq!(refused(b"[1.5]", &|t, s| t.read_i64(s).err()), Fault::json(1, JsonError::NotAnInteger));
        assert_eq!(refused(b"[1e999]", &|t, s| t.read_f64(s).err()), Fault::json(1, JsonError::NumberOutOfRange));
        assert_eq!(refused(b"[01]", &|t, s| t.read_u64(s).err()), Fault::json(2, JsonError::InvalidNumber));
    }

    #[test]
    fn reset_starts_a_new_document_after_a_fault() {
        let mut scratch = [0; 8];
        let mut tok = Tokenizer::new(&mut scratch, 8);
        let mut src: &[u8] = b"[1,]";
        assert_eq!(tok.skip_value(&mut src), Err(Fault::json(3, JsonError::TrailingComma)));
        assert_eq!(tok.peek_kind(&mut src), Err(Fault::json(3, JsonError::TrailingComma)));
        tok.reset();
        let mut src: &[u8] = b" [2]";
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.offset(), 1);
        assert_eq!(tok.depth(), 1);
    }

    #[test]
    fn block_and_word_scans_agree_with_byte_scans() {
        let naive_plain =
            |bytes: &[u8]| bytes.iter().take_while(|&&b| (0x20..0x80).contains(&b) && b != b'"' && b != b'\\').count();
        let naive_space = |bytes: &[u8]| bytes.iter().take_while(|&&b| is_whitespace(b)).count();
        let naive_digits = |bytes: &[u8]| bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 47] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[at] = b;
                    assert_eq!(plain_len(&text), naive_plain(&text), "{b:#x} at {at} of {len}");
                    assert_eq!(plain_len_words(&text), naive_plain(&text), "words: {b:#x} at {at} of {len}");
                    let mut blank = vec![b' '; len];
                    blank[at] = b;
                    assert_eq!(whitespace_len(&blank), naive_space(&blank), "{b:#x} at {at} of {len}");
                    assert_eq!(whitespace_run_words(&blank), naive_space(&blank), "words: {b:#x} at {at} of {len}");
                    let mut number = vec![b'7'; len];
                    number[at] = b;
                    assert_eq!(digits_len(&number), naive_digits(&number), "{b:#x} at {at} of {len}");
                }
            }
            // Nothing flagged: the whole slice, however it ends.
            assert_eq!(plain_len(&vec![b'a'; len]), len);
            assert_eq!(whitespace_run(&vec![b'\t'; len]), len);
            assert_eq!(digits_len(&vec![b'0'; len]), len);
        }
        // Pairs of boundary bytes, where a borrow or carry between bytes would show.
        let edges = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x5C, 0x7F, 0x80, 0x9F, 0xA0, 0xFF];
        for first in 0..16 {
            for second in first + 1..16 {
                for &x in &edges {
                    for &y in &edges {
                        for fill in [b'a', b' '] {
                            let mut buf = [fill; 16];
                            buf[first] = x;
                            buf[second] = y;
                            assert_eq!(plain_len(&buf), naive_plain(&buf), "{buf:x?}");
                            assert_eq!(plain_len_words(&buf), naive_plain(&buf), "words: {buf:x?}");
                            assert_eq!(whitespace_len(&buf), naive_space(&buf), "{buf:x?}");
                            assert_eq!(whitespace_run_words(&buf), naive_space(&buf), "words: {buf:x?}");
                        }
                    }
                }
            }
        }
    }

    /// Every text of one to four bytes of `alphabet`, between each `(head, tail)` of
    /// `contexts`, streams to the same events, offsets and faults in one chunk as a byte at a
    /// time, with a scratch that holds three bytes (so capacity faults show).
    fn whole_and_byte_at_a_time_agree(alphabet: &[u8], contexts: &[(&[u8], &[u8])]) {
        let mut text = Vec::new();
        for len in 1..=4u32 {
            for mut code in 0..alphabet.len().pow(len) {
                text.clear();
                for _ in 0..len {
                    text.push(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                for &(head, tail) in contexts {
                    let doc = [head, &text, tail].concat();
                    let whole = stream_chunked(3, 8, &doc, 4096);
                    let shown = String::from_utf8_lossy(&doc);
                    assert_eq!(stream_chunked(3, 8, &doc, 1), whole, "{shown:?}");
                    // In runs, one chunk: a host's whole-token paths, read with `next` and
                    // with the readers' key calls.
                    assert_eq!(stream_chunked_runs(3, 8, &doc, 4096, true), whole, "runs: {shown:?}");
                    assert_eq!(stream_keyed(3, 8, &doc, 4096, true), whole, "keyed, runs: {shown:?}");
                    assert_eq!(stream_keyed(3, 8, &doc, 1, false), whole, "keyed, bytes: {shown:?}");
                    assert_eq!(
                        stream_skipping(3, 8, &doc, 4096, true),
                        stream_skipping(3, 8, &doc, 1, false),
                        "skipping: {shown:?}"
                    );
                    assert_eq!(
                        stream_members(3, 8, &doc, 4096, true),
                        stream_members(3, 8, &doc, 1, false),
                        "members: {shown:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn whole_token_fast_paths_agree_with_the_byte_machines() {
        // Every text of up to four bytes from an alphabet of number, string and structure bytes,
        // as a value on its own, in an array and as a member: in one chunk (where an integer or
        // a plain string ended in the chunk takes the fast path) and a byte at a time (where
        // no integer does), with a scratch that holds three bytes (so capacity faults show).
        // The events, offsets and faults are the same.
        let alphabet = [b'-', b'0', b'1', b'.', b'e', b'+', b',', b']', b' ', b'"', b'\\', b'a', 0xC3, 0xA9, 0x01];
        let contexts: [(&[u8], &[u8]); 4] = [(b"", b""), (b"[", b"]"), (b"{\"k\":", b"}"), (b"[\"", b"\"]")];
        whole_and_byte_at_a_time_agree(&alphabet, &contexts);
        assert_eq!(integer_len(b"12,"), Some(2));
        assert_eq!(integer_len(b"-0]"), Some(2));
        assert_eq!(integer_len(b"12"), None, "the end of the chunk is not the end of the number");
        assert_eq!(integer_len(b"01,"), None);
        assert_eq!(integer_len(b"1.5,"), None);
        assert_eq!(integer_len(b"1e5,"), None);
        assert_eq!(integer_len(b"-,"), None);
    }

    #[test]
    fn separator_fast_paths_agree_with_the_byte_machines() {
        // A `,` or `:` followed in its chunk by a key or a value is taken in the same round (no
        // second whitespace scan): every text of up to four separator, structure and value
        // bytes after an object member, an array element and a key, in one chunk and a byte at
        // a time (where a separator is never followed in its chunk). The events, offsets and
        // faults are the same.
        let alphabet = [b',', b':', b'"', b'k', b'1', b'{', b'}', b'[', b']', b' ', b'n', b'-'];
        let contexts: [(&[u8], &[u8]); 4] =
            [(b"{\"a\":1", b"}"), (b"[1", b"]"), (b"{\"a\"", b"}"), (b"[{\"a\":[1", b"]}]")];
        whole_and_byte_at_a_time_agree(&alphabet, &contexts);
    }

    #[test]
    fn whole_token_host_paths_agree_with_the_byte_machines() {
        // A host takes a token that lies whole in the chunk, with its separators, in one
        // scan (`quick_value`, `quick_key`), when consuming in runs: every text of up to four
        // separator, structure, literal, string and number bytes after `[`, after a key, after
        // an array element and an object member, and one level below the depth limit; the
        // events, offsets and faults are those of the byte machines (`whole_and_byte_at_a_time_agree`
        // compares one chunk in runs, read with `next` and with `next_key_bytes`, against a
        // byte at a time without runs, where the whole-token paths never run).
        let alphabet = [b',', b':', b'"', b'a', b'1', b'{', b'}', b'[', b']', b' ', b't', b'\\'];
        let contexts: [(&[u8], &[u8]); 5] = [
            (b"{\"a\":[", b"]}"),
            (b"{\"k\":{\"a\":1", b"}}"),
            (b"[[[[[[[", b"]]]]]]]"),
            (b"{\"a\":", b"}"),
            (b"[true", b"]"),
        ];
        whole_and_byte_at_a_time_agree(&alphabet, &contexts);
    }

    /// A DMA-shaped manifest (an engine JSON's `dma` blocks of `desc` objects) of `blocks`
    /// blocks, its spacing, numbers and strings drawn from `seed`: compact or indented,
    /// integers, negatives, fractions and exponents, plain strings, escapes, UTF-8 and a
    /// string longer than a 32-byte scratch, literals and nested arrays.
    fn dma_shaped(seed: u64, blocks: usize) -> Vec<u8> {
        let mut state = seed;
        let mut draw = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut out = Vec::new();
        let space = |out: &mut Vec<u8>, pick: u64| match pick {
            0 => {}
            1 => out.push(b' '),
            2 => out.extend_from_slice(b"\n    "),
            _ => out.extend_from_slice(b"\t\r\n"),
        };
        out.extend_from_slice(b"{\"dma\": [");
        for b in 0..blocks {
            if b > 0 {
                out.push(b',');
            }
            space(&mut out, draw(4));
            out.extend_from_slice(b"{\"queue\":\"q");
            out.extend_from_slice(b.to_string().as_bytes());
            out.extend_from_slice(b"\",\"desc\":[");
            for d in 0..draw(6) {
                if d > 0 {
                    out.push(b',');
                    space(&mut out, draw(3));
                }
                out.push(b'{');
                let keys = ["from", "from_off", "from_sizes", "op", "to_steps", "num", "to"];
                for (k, key) in keys.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    space(&mut out, draw(3));
                    out.extend_from_slice(format!("\"{key}\":").as_bytes());
                    space(&mut out, draw(3));
                    let value = match draw(12) {
                        0 => format!("{}", draw(1 << 30)),
                        1 => format!("-{}", draw(1000)),
                        2 => "0.5e-3".to_string(),
                        3 => "1E+2".to_string(),
                        4 => "\"plain text\"".to_string(),
                        5 => "\"esc\\n\\u00e9\"".to_string(),
                        6 => "\"caf\u{e9}\"".to_string(),
                        7 => format!("\"{}\"", "w".repeat(40)),
                        8 => "[2, 3 ,[4]]".to_string(),
                        9 => "true".to_string(),
                        10 => "null".to_string(),
                        _ => "[]".to_string(),
                    };
                    out.extend_from_slice(value.as_bytes());
                }
                space(&mut out, draw(2));
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(b"]}\n");
        out
    }

    #[test]
    fn members_read_whole_meet_the_limits_of_the_byte_machines() {
        // A key or string the 3-byte scratch does not hold, a number past its buffer: the
        // whole-member path leaves them to the byte machines, whose capacity faults they are.
        let long_number = format!("{{\"a\":{}}}", "1".repeat(NUMBER_CAPACITY + 1));
        let docs: [&[u8]; 5] = [
            b"{\"abcde\":1}",
            b"{\"abc\":1,\"defgh\":2}",
            b"{\"a\":\"defgh\"}",
            b"{\"a\":\"def\",\"b\":[1]}",
            long_number.as_bytes(),
        ];
        for doc in docs {
            let (_, fault) = stream_members(3, 8, doc, 1, false);
            assert!(fault.is_some() || doc.ends_with(b"[1]}"), "{:?}", String::from_utf8_lossy(doc));
            assert_eq!(stream_members(3, 8, doc, 4096, true), stream_members(3, 8, doc, 1, false));
        }
    }

    #[test]
    fn members_the_reader_does_not_know_are_skipped_as_the_byte_machines_skip_them() {
        // Keys of even length are unknown to `stream_members`' reader: each value shape after
        // one, then a member it knows, read whole and a byte at a time.
        let values = ["\"xyz\"", "12", "-0", "true", "null", "1.5", "\"a\\\"b\"", "[1,2]", "{\"c\":3}", "\"\"", "01"];
        for value in values {
            for space in ["", " ", "\n  "] {
                let doc = format!("{{\"ab\":{space}{value},\"c\":1,\"de\"{space}:{value}{space}}}");
                let whole = stream_members(32, 16, doc.as_bytes(), 4096, true);
                assert_eq!(whole, stream_members(32, 16, doc.as_bytes(), 1, false), "{doc}");
                // A valid document: its unknown members were skipped (the invalid number's
                // fault is the byte machines', at its offset, as compared above).
                assert!(whole.1.is_some() || whole.0.iter().any(|(_, e)| *e == Owned::Skipped), "{doc}: {whole:?}");
            }
        }
    }

    #[test]
    fn whole_token_host_paths_agree_on_generated_manifests() {
        // DMA-shaped documents, whole and cut short (a fault at the end of input), in chunks
        // that split tokens anywhere: read in runs with `next` and with `next_key_bytes` (the
        // whole-token paths for every token whole in its chunk), the same events, offsets and
        // faults as a byte at a time without runs.
        for seed in 0..40u64 {
            let doc = dma_shaped(seed, 12);
            for cut in [doc.len(), doc.len() * 2 / 3, doc.len() / 3 + 1] {
                let doc = &doc[..cut];
                let bytes = stream_chunked(32, 16, doc, 1);
                let skipped = stream_skipping(32, 16, doc, 1, false);
                let members = stream_members(32, 16, doc, 1, false);
                for chunk in [3, 17, 64, 512, 4096] {
                    assert_eq!(
                        stream_members(32, 16, doc, chunk, true),
                        members,
                        "members: seed {seed}, cut {cut}, chunk {chunk}"
                    );
                    assert_eq!(
                        stream_skipping(32, 16, doc, chunk, true),
                        skipped,
                        "skipping: seed {seed}, cut {cut}, chunk {chunk}"
                    );
                    assert_eq!(
                        stream_chunked_runs(32, 16, doc, chunk, true),
                        bytes,
                        "seed {seed}, cut {cut}, chunk {chunk}"
                    );
                    assert_eq!(stream_keyed(32, 16, doc, chunk, true), bytes, "seed {seed}, cut {cut}, chunk {chunk}");
                }
            }
        }
    }

    #[test]
    fn tokenizer_stays_small() {
        // The scratch reference (16) + number buffer (48) + container bits (32) + offsets,
        // lengths, limit, state and the kept fault (an `ErrorKind`, 48 bytes on 64-bit
        // hosts). The bound is documented on `Tokenizer`; the scratch is lent, so no size
        // depends on it.
        assert!(core::mem::size_of::<Tokenizer<'_>>() <= 200, "{}", core::mem::size_of::<Tokenizer<'_>>());
    }

    #[test]
    fn the_depth_limit_is_clamped_to_the_bit_stack() {
        let mut scratch = [0; 8];
        assert_eq!(Tokenizer::new(&mut scratch, 300).depth_limit(), MAX_DEPTH);
        assert_eq!(Tokenizer::new(&mut scratch, 7).depth_limit(), 7);
        // A clamped limit refuses the level past MAX_DEPTH, reporting the limit applied.
        let mut doc = vec![b'['; 300];
        doc.extend(core::iter::repeat_n(b']', 300));
        let mut tok = Tokenizer::new(&mut scratch, u16::MAX);
        let fault = tok.skip_value(&mut &doc[..]).unwrap_err();
        assert_eq!(fault, Fault::json(256, JsonError::DepthLimit { limit: MAX_DEPTH }));
        // Exactly MAX_DEPTH levels fit.
        let mut doc = vec![b'['; 256];
        doc.extend(core::iter::repeat_n(b']', 256));
        tok.reset();
        assert_eq!(tok.skip_value(&mut &doc[..]), Ok(true));
        // Limit 0: scalars only.
        let mut tok = Tokenizer::new(&mut scratch, 0);
        assert_eq!(tok.next(&mut &b"[]"[..]), Err(Fault::json(0, JsonError::DepthLimit { limit: 0 })));
        tok.reset();
        assert_eq!(tok.read_u64(&mut &b"7"[..]), Ok(7));
    }

    #[test]
    fn an_empty_scratch_receives_only_empty_strings() {
        let mut tok = Tokenizer::new(&mut [], 4);
        assert_eq!(tok.scratch_capacity(), 0);
        let mut src: &[u8] = br#"["", "a"]"#;
        assert_eq!(tok.next(&mut src), Ok(Event::BeginArray));
        assert_eq!(tok.next(&mut src), Ok(Event::Str("")));
        let scratch = CapacityError { limit: SCRATCH_LIMIT, capacity: 0 };
        assert_eq!(tok.next(&mut src), Err(Fault { offset: 5, kind: ErrorKind::Capacity(scratch) }));
    }
}
