//! One error type for the whole core.
//!
//! [`Error`] is `Copy` and holds no heap: the [`Stage`] that failed, the tar member
//! (when there is one), the JSON key path (when there is one), the byte offset and the
//! [`ErrorKind`]. Each layer owns its own kind enum (`header::HeaderError`,
//! `gzip::GzipError`, ...); this module only gathers them, so that a caller matches on one
//! type and a layer can grow its kinds without touching the others.
//!
//! Warnings never fail a load: they go to a caller-supplied [`WarningSink`].
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

mod chain;
pub mod codes;
mod gzip;
mod hal;
mod header;
mod json;
mod manifest;
mod npy;
mod tar;

pub use chain::{ChainError, ChainWarning, ManifestKind, MemberText, ShortText};
pub use gzip::{GzipError, GzipWarning};
pub use hal::{HalError, RegionId};
pub use header::{HashAlgorithm, HeaderError, HeaderWarning};
pub use json::{Expected, JsonError, JsonType, TokenKind};
pub use manifest::{ManifestError, ManifestWarning, Name, QueueKind, RequiredKey};
pub use npy::NpyError;
pub use tar::{TarError, TarWarning};

neff_macros::kinds!("schema/kinds.toml", Stage);

/// What a byte offset is counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OffsetBase {
    /// From the first byte of the NEFF file.
    File,
    /// From the first byte of the inflated tar stream.
    Archive,
    /// From the first byte of the member's body.
    Member,
    /// No byte position: the error is about a member, or the chain, as a whole.
    None,
}

neff_macros::kinds!("schema/kinds.toml", Status);

/// A fixed-capacity limit was reached. The input is refused; nothing is truncated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CapacityError {
    /// The name of the limit, as it appears in the type or option that sets it
    /// (for example `"MAX_VARS"` or `"tar name buffer"`).
    pub limit: &'static str,
    /// The capacity that was exceeded.
    pub capacity: u64,
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "capacity {} = {} exceeded", self.limit, self.capacity)
    }
}

/// Appends `parts` to `out` in order, stopping at the first that does not fit; true if all did.
///
/// Paths and labels are joined with this rather than `core::fmt`: the formatting machinery is
/// then not linked into a firmware image that logs with defmt.
pub(crate) fn push_all<const N: usize>(out: &mut heapless::String<N>, parts: &[&str]) -> bool {
    parts.iter().all(|p| out.push_str(p).is_ok())
}

/// Appends `v` in decimal (as `{v}` would); false if it does not fit.
pub(crate) fn push_decimal<const N: usize>(out: &mut heapless::String<N>, v: u64) -> bool {
    let mut digits = [0u8; 20];
    let text = core::str::from_utf8(decimal(v, &mut digits)).unwrap_or("");
    out.push_str(text).is_ok()
}

/// `n` in decimal, written at the end of `buf`.
// Bounded: a `u64` has at most 20 digits, `at` stops at 0, and a digit is below 10.
#[allow(clippy::arithmetic_side_effects)]
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        let (quotient, digit) = div10(n);
        if let Some(d) = buf.get_mut(at) {
            *d = b'0' + digit;
        }
        n = quotient;
        if n == 0 || at == 0 {
            break;
        }
    }
    buf.get(at..).unwrap_or(&[])
}

/// `n / 10` and `n % 10` with 32-bit divisions only: a Cortex-M4 divides 32-bit numbers in
/// hardware, but a `u64` division links the software divider (900 bytes of flash). A value
/// below 2^32 (every index and count a NEFF has) takes one division; a larger one is divided
/// 16 bits at a time, schoolbook.
// `cur < 10 · 2^16`: no overflow; the quotient's parts are below 2^16 each.
#[allow(clippy::arithmetic_side_effects)]
fn div10(n: u64) -> (u64, u8) {
    if let Ok(small) = u32::try_from(n) {
        return (u64::from(small / 10), (small % 10) as u8);
    }
    let (mut quotient, mut rem) = (0u64, 0u32);
    for shift in [48u32, 32, 16, 0] {
        let cur = (rem << 16) | ((n >> shift) as u32 & 0xFFFF);
        quotient = (quotient << 16) | u64::from(cur / 10);
        rem = cur % 10;
    }
    (quotient, rem as u8)
}

/// Short inline text for error context (member names and key paths).
///
/// Context only: when a name is longer than `N` bytes the *tail* is kept (the file name
/// part is the useful one) and [`Text::is_elided`] is set, so `Display` prints a leading `…`.
/// Data is never stored here, so this elision never changes what a load does.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Text<const N: usize> {
    bytes: [u8; N],
    len: u16,
    elided: bool,
}

impl<const N: usize> Text<N> {
    /// The empty text.
    pub const EMPTY: Self = Self { bytes: [0; N], len: 0, elided: false };

    /// Copies `s`, keeping its last `N` bytes (on a UTF-8 boundary) if it is longer.
    #[inline(never)]
    pub fn new(s: &str) -> Self {
        let mut text = Self::EMPTY;
        (text.len, text.elided) = copy_tail(&mut text.bytes, s);
        text
    }

    /// [`Text::new`] of the tail of a longer string (`elided`), as it would have kept it.
    pub(crate) fn new_elided(s: &str, elided: bool) -> Self {
        let mut text = Self::new(s);
        text.elided |= elided;
        text
    }

    /// Copies raw bytes (lossy: invalid UTF-8 becomes `?`).
    #[inline(never)]
    pub fn from_bytes_lossy(b: &[u8]) -> Self {
        let mut text = Self::EMPTY;
        (text.len, text.elided) = copy_tail_lossy(&mut text.bytes, b);
        text
    }

    /// The kept text.
    pub fn as_str(&self) -> &str {
        kept_str(&self.bytes, self.len)
    }

    /// True when the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0 && !self.elided
    }

    /// True when the head of a longer text was dropped.
    pub fn is_elided(&self) -> bool {
        self.elided
    }
}

/// [`copy_tail`] of raw bytes, each one not ASCII (or NUL) as `?`. One copy for every
/// [`Text`] capacity.
#[inline(never)]
fn copy_tail_lossy(dst: &mut [u8], b: &[u8]) -> (u16, bool) {
    let start = b.len().saturating_sub(dst.len());
    let tail = b.get(start..).unwrap_or(&[]);
    for (d, &s) in dst.iter_mut().zip(tail) {
        *d = if s.is_ascii() && s != 0 { s } else { b'?' };
    }
    // Capacities are at most a few hundred bytes: the length fits a `u16`.
    (tail.len() as u16, start > 0)
}

/// The first `len` bytes of `bytes` as text. One copy for every [`Text`] capacity.
#[inline(never)]
fn kept_str(bytes: &[u8], len: u16) -> &str {
    let bytes = bytes.get(..usize::from(len)).unwrap_or(&[]);
    core::str::from_utf8(bytes).unwrap_or("")
}

/// Copies the tail of `s` that fits `dst` (cut on a UTF-8 boundary) to its front: the length
/// copied, and whether the head of `s` was dropped. One copy for every [`Text`] capacity.
#[inline(never)]
fn copy_tail(dst: &mut [u8], s: &str) -> (u16, bool) {
    let mut start = s.len().saturating_sub(dst.len());
    // `s.len()` is a boundary, so this stops there at the latest.
    while !s.is_char_boundary(start) {
        start = start.saturating_add(1);
    }
    let tail = s.get(start..).unwrap_or("");
    match dst.get_mut(..tail.len()) {
        // Capacities are at most a few hundred bytes: the length fits a `u16`.
        Some(d) => {
            d.copy_from_slice(tail.as_bytes());
            (tail.len() as u16, start > 0)
        }
        None => (0, start > 0),
    }
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const N: usize> fmt::Display for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.elided {
            f.write_str("…")?;
        }
        f.write_str(self.as_str())
    }
}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize> defmt::Format for Text<N> {
    fn format(&self, f: defmt::Formatter<'_>) {
        format_text(f, self.as_str(), self.elided);
    }
}

/// A [`Text`] through defmt, as `Display` shows it (a cut name says so). One copy for every
/// capacity (-350 bytes of `.text` against one a capacity).
#[cfg(feature = "defmt")]
#[inline(never)]
fn format_text(f: defmt::Formatter<'_>, text: &str, elided: bool) {
    if elided {
        defmt::write!(f, "…{=str}", text)
    } else {
        defmt::write!(f, "{=str}", text)
    }
}

/// Capacity of the member name kept in an [`Error`] or [`Warning`]: the tail of a longer name
/// (its file part, the useful one) with a leading `…`. The same on a host: an `Error` is the
/// error type of every member body the loader reads, and a larger one (1 KiB names, 512-byte
/// paths were tried, when it was also the gzip and tar layers' error) cost the host's full load
/// about a tenth of its speed (`cargo bench --bench inflate`, load / plain inflate 1.26 -> 1.38).
pub const MEMBER_TEXT: usize = 128;
/// Capacity of the key path kept in an [`Error`] or [`Warning`] and built while a manifest is
/// read; a longer path ends with `…`.
pub const KEY_PATH_TEXT: usize = 96;

/// Everything that can go wrong, by layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorKind {
    /// The byte source failed.
    Io(embedded_io::ErrorKind),
    /// The input ended before the structure being read was complete.
    Truncated,
    /// A fixed capacity was exceeded.
    Capacity(CapacityError),
    /// The arena the caller lent the load is full.
    ArenaFull {
        /// Bytes lent.
        capacity: u64,
        /// Bytes the load needed at least.
        needed: u64,
    },
    /// A header gate failed.
    Header(HeaderError),
    /// The gzip wrapper or the deflate stream is bad.
    Gzip(GzipError),
    /// The tar stream is bad.
    Tar(TarError),
    /// A manifest is not valid JSON.
    Json(JsonError),
    /// A manifest is valid JSON but not what the runtime accepts.
    Manifest(ManifestError),
    /// The manifest chain is inconsistent.
    Chain(ChainError),
    /// The device refused.
    Hal(HalError),
    /// A `.npy` payload's header is bad or disagrees with its variable.
    Npy(NpyError),
}

impl ErrorKind {
    /// The runtime status this error maps to.
    pub fn status(&self) -> Status {
        match self {
            ErrorKind::Io(_) => Status::Failure,
            ErrorKind::Truncated => Status::Invalid,
            ErrorKind::Capacity(_) | ErrorKind::ArenaFull { .. } => Status::Resource,
            ErrorKind::Header(e) => e.status(),
            ErrorKind::Gzip(e) => e.status(),
            ErrorKind::Tar(e) => e.status(),
            ErrorKind::Json(e) => e.status(),
            ErrorKind::Manifest(e) => e.status(),
            ErrorKind::Chain(e) => e.status(),
            ErrorKind::Hal(e) => e.status(),
            ErrorKind::Npy(e) => e.status(),
        }
    }
}

impl ErrorKind {
    /// A stable number for this error, for bindings (C, Python) that cannot match on the
    /// enum: the layer's hundred plus the layer's own code (`Manifest(ArchMismatch)` is
    /// 919). A number, once given, keeps its meaning and is never reused; the table is
    /// `docs/error-codes.md`, which `tests/error_codes.rs` holds to this function.
    pub fn code(&self) -> u16 {
        match self {
            ErrorKind::Io(kind) => in_layer(1, io_code(*kind)),
            ErrorKind::Truncated => in_layer(2, 0),
            ErrorKind::Capacity(_) => in_layer(3, 0),
            ErrorKind::ArenaFull { .. } => in_layer(4, 0),
            ErrorKind::Header(e) => in_layer(5, e.code()),
            ErrorKind::Gzip(e) => in_layer(6, e.code()),
            ErrorKind::Tar(e) => in_layer(7, e.code()),
            ErrorKind::Json(e) => in_layer(8, e.code()),
            ErrorKind::Manifest(e) => in_layer(9, e.code()),
            ErrorKind::Chain(e) => in_layer(10, e.code()),
            ErrorKind::Hal(e) => in_layer(11, e.code()),
            ErrorKind::Npy(e) => in_layer(12, e.code()),
        }
    }
}

/// `layer × 100 + code`.
// At most 12 × 100 + 255: no overflow.
#[allow(clippy::arithmetic_side_effects)]
const fn in_layer(layer: u16, code: u8) -> u16 {
    layer * 100 + code as u16
}

/// The code of a byte source's error kind within `Io` (0: one `embedded_io` adds later).
const fn io_code(kind: embedded_io::ErrorKind) -> u8 {
    use embedded_io::ErrorKind as K;
    match kind {
        K::Other => 1,
        K::NotFound => 2,
        K::PermissionDenied => 3,
        K::ConnectionRefused => 4,
        K::ConnectionReset => 5,
        K::ConnectionAborted => 6,
        K::NotConnected => 7,
        K::AddrInUse => 8,
        K::AddrNotAvailable => 9,
        K::BrokenPipe => 10,
        K::AlreadyExists => 11,
        K::InvalidInput => 12,
        K::InvalidData => 13,
        K::TimedOut => 14,
        K::Interrupted => 15,
        K::Unsupported => 16,
        K::OutOfMemory => 17,
        K::WriteZero => 18,
        _ => 0,
    }
}

impl ErrorKind {
    /// The runtime's error cause where it names one (`NEFF_ARCH_INCOMPAT` for a NEFF compiled
    /// for another architecture), next to [`ErrorKind::status`].
    /// The rows of `schema/errors.toml` give it (`cause`).
    pub fn cause(&self) -> Option<&'static str> {
        match self {
            ErrorKind::Header(e) => e.cause(),
            ErrorKind::Gzip(e) => e.cause(),
            ErrorKind::Tar(e) => e.cause(),
            ErrorKind::Json(e) => e.cause(),
            ErrorKind::Manifest(e) => e.cause(),
            ErrorKind::Chain(e) => e.cause(),
            ErrorKind::Hal(e) => e.cause(),
            ErrorKind::Npy(e) => e.cause(),
            ErrorKind::Io(_) | ErrorKind::Truncated | ErrorKind::Capacity(_) | ErrorKind::ArenaFull { .. } => None,
        }
    }

    /// The runtime's setting that waives this refusal, where it names one: a NEFF for another
    /// arch, or a cayman `def.json` without its carveout, loads with
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1` (the rows' `override`).
    pub fn override_setting(&self) -> Option<&'static str> {
        match self {
            ErrorKind::Header(e) => e.override_setting(),
            ErrorKind::Gzip(e) => e.override_setting(),
            ErrorKind::Tar(e) => e.override_setting(),
            ErrorKind::Json(e) => e.override_setting(),
            ErrorKind::Manifest(e) => e.override_setting(),
            ErrorKind::Chain(e) => e.override_setting(),
            ErrorKind::Hal(e) => e.override_setting(),
            ErrorKind::Npy(e) => e.override_setting(),
            ErrorKind::Io(_) | ErrorKind::Truncated | ErrorKind::Capacity(_) | ErrorKind::ArenaFull { .. } => None,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(kind) => write!(f, "read failed: {kind:?}"),
            ErrorKind::Truncated => f.write_str("unexpected end of input"),
            ErrorKind::Capacity(e) => e.fmt(f),
            ErrorKind::ArenaFull { capacity, needed } => {
                write!(f, "the load arena of {capacity} bytes is full: at least {needed} bytes are needed")
            }
            ErrorKind::Header(e) => e.fmt(f),
            ErrorKind::Gzip(e) => e.fmt(f),
            ErrorKind::Tar(e) => e.fmt(f),
            ErrorKind::Json(e) => e.fmt(f),
            ErrorKind::Manifest(e) => e.fmt(f),
            ErrorKind::Chain(e) => e.fmt(f),
            ErrorKind::Hal(e) => e.fmt(f),
            ErrorKind::Npy(e) => e.fmt(f),
        }
    }
}

/// What the layers below the archive fail with: the byte source, the gzip layer, the tar walker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StreamKind {
    /// The byte source failed.
    Io(embedded_io::ErrorKind),
    /// The input ended before the structure being read was complete.
    Truncated,
    /// A fixed capacity was exceeded (the tar name buffer, the inflated-size cap, the count of
    /// gzip members).
    Capacity(CapacityError),
    /// The gzip wrapper or the deflate stream is bad.
    Gzip(GzipError),
    /// The tar stream is bad.
    Tar(TarError),
}

impl From<StreamKind> for ErrorKind {
    fn from(kind: StreamKind) -> Self {
        match kind {
            StreamKind::Io(kind) => ErrorKind::Io(kind),
            StreamKind::Truncated => ErrorKind::Truncated,
            StreamKind::Capacity(e) => ErrorKind::Capacity(e),
            StreamKind::Gzip(e) => ErrorKind::Gzip(e),
            StreamKind::Tar(e) => ErrorKind::Tar(e),
        }
    }
}

/// The error of the stream under the members ([`Decoder`](crate::gzip::Decoder), the tar
/// walker's block reads and skips, [`Container`](crate::archive::Container)): what and where,
/// without a member name or key path, so the refill path returns 48 bytes (40 on a controller)
/// instead of an [`Error`]'s 296. The member is added once, where the archive knows it: by the
/// tar [`Member`](crate::tar::Member) a body is read from and by
/// [`TarReader::next_member`](crate::tar::TarReader::next_member). `?` converts one into an
/// [`Error`] with no member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamError {
    /// The layer that failed: `Io`, `Gzip` or `Tar`.
    pub stage: Stage,
    /// What [`StreamError::offset`] is counted from: the file (source and gzip) or the tar
    /// stream (tar).
    pub offset_base: OffsetBase,
    /// The byte offset.
    pub offset: u64,
    /// What went wrong.
    pub kind: StreamKind,
}

impl StreamError {
    /// A failure at `offset` bytes into the file.
    pub const fn at_file(stage: Stage, offset: u64, kind: StreamKind) -> Self {
        Self { stage, offset_base: OffsetBase::File, offset, kind }
    }

    /// A failure at `offset` bytes into the inflated tar stream.
    pub const fn at_archive(stage: Stage, offset: u64, kind: StreamKind) -> Self {
        Self { stage, offset_base: OffsetBase::Archive, offset, kind }
    }
}

impl From<StreamError> for Error {
    #[cold]
    #[inline(never)]
    fn from(e: StreamError) -> Self {
        let kind = ErrorKind::from(e.kind);
        Self { offset_base: e.offset_base, ..Error::at_file(e.stage, e.offset, kind) }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Error::from(*self).fmt(f)
    }
}

impl core::error::Error for StreamError {}

impl embedded_io::Error for StreamError {
    fn kind(&self) -> embedded_io::ErrorKind {
        match self.kind {
            StreamKind::Io(kind) => kind,
            StreamKind::Capacity(_) => embedded_io::ErrorKind::OutOfMemory,
            _ => embedded_io::ErrorKind::InvalidData,
        }
    }
}

/// A load error: what failed, where, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Error {
    /// The layer that failed.
    pub stage: Stage,
    /// The tar member being read, empty outside a member.
    pub member: Text<MEMBER_TEXT>,
    /// The JSON key path (`var.x.size`, `nodes[2].attrs.kelf`), empty outside JSON.
    pub key_path: Text<KEY_PATH_TEXT>,
    /// The byte offset, counted from [`Error::offset_base`].
    pub offset: u64,
    /// What [`Error::offset`] is counted from.
    pub offset_base: OffsetBase,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl Error {
    /// An error at `offset` bytes into the file, outside any member.
    #[cold]
    #[inline(never)]
    pub fn at_file(stage: Stage, offset: u64, kind: ErrorKind) -> Self {
        Self { stage, member: Text::EMPTY, key_path: Text::EMPTY, offset, offset_base: OffsetBase::File, kind }
    }

    /// An error at `offset` bytes into the inflated tar stream.
    #[cold]
    #[inline(never)]
    pub fn at_archive(stage: Stage, offset: u64, kind: ErrorKind) -> Self {
        Self { offset_base: OffsetBase::Archive, ..Self::at_file(stage, offset, kind) }
    }

    /// An error at `offset` bytes into the body of `member`.
    #[cold]
    #[inline(never)]
    pub fn in_member(stage: Stage, member: &str, offset: u64, kind: ErrorKind) -> Self {
        Self { member: Text::new(member), offset_base: OffsetBase::Member, ..Self::at_file(stage, offset, kind) }
    }

    /// An error about `member` as a whole, at no byte of it (a chain check, a device refusal).
    #[cold]
    #[inline(never)]
    pub fn about_member(stage: Stage, member: &str, kind: ErrorKind) -> Self {
        Self { offset_base: OffsetBase::None, ..Self::in_member(stage, member, 0, kind) }
    }

    /// The byte offset and what it is counted from, if the error has a position.
    pub fn position(&self) -> Option<(u64, OffsetBase)> {
        (self.offset_base != OffsetBase::None).then_some((self.offset, self.offset_base))
    }

    /// The same error with a key path attached.
    #[cold]
    #[inline(never)]
    pub fn with_key_path(mut self, path: &str) -> Self {
        self.key_path = Text::new(path);
        self
    }

    /// The same error with a member name attached.
    #[cold]
    #[inline(never)]
    pub fn with_member(mut self, member: &str) -> Self {
        self.member = Text::new(member);
        self
    }

    /// The runtime status this error maps to.
    pub fn status(&self) -> Status {
        self.kind.status()
    }
}

impl Error {
    /// Writes the error as its `Display` does, with `member` and `key_path` in place of its
    /// texts (the loader's whole names: [`Loader::whole_names`](crate::loader::Loader::whole_names)).
    pub(crate) fn write_with(
        &self,
        f: &mut fmt::Formatter<'_>,
        member: &dyn fmt::Display,
        key_path: &dyn fmt::Display,
    ) -> fmt::Result {
        if self.member.is_empty() {
            write!(f, "{}: ", self.stage)?;
        } else {
            write!(f, "{member}: ")?;
        }
        if !self.key_path.is_empty() {
            write!(f, "{key_path}: ")?;
        }
        let base = match self.offset_base {
            OffsetBase::File | OffsetBase::Member => "byte",
            OffsetBase::Archive => "tar byte",
            OffsetBase::None => return write!(f, "{}", self.kind),
        };
        write!(f, "{} ({base} {})", self.kind, self.offset)
    }
}

impl fmt::Display for Error {
    /// `stage: member: key.path: message (byte N)`, leaving out the parts that are empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_with(f, &self.member, &self.key_path)
    }
}

impl core::error::Error for Error {}

/// The stream error for a failure of a byte source at file `offset`: `Stage::Io` with the
/// source's error kind, unless the source's error wraps a [`StreamError`] as its
/// [`source`](core::error::Error::source). An inflater running outside the core (the host's
/// zlib-rs thread) reports that way the error the core's own gzip layer raised there, with its
/// stage, kind and offset.
pub(crate) fn source_error<E: embedded_io::Error>(offset: u64, e: &E) -> StreamError {
    if let Some(inner) = core::error::Error::source(e).and_then(|s| s.downcast_ref::<StreamError>()) {
        return *inner;
    }
    StreamError::at_file(Stage::Io, offset, StreamKind::Io(e.kind()))
}

/// Makes the crate error usable as an `embedded_io` error, so that tar member bodies (and the
/// loader's readers over them) are `embedded_io::Read` with the loader's own error type.
impl embedded_io::Error for Error {
    fn kind(&self) -> embedded_io::ErrorKind {
        match self.kind {
            ErrorKind::Io(kind) => kind,
            ErrorKind::Capacity(_) | ErrorKind::ArenaFull { .. } => embedded_io::ErrorKind::OutOfMemory,
            _ => embedded_io::ErrorKind::InvalidData,
        }
    }
}

// What a failure costs every frame that returns it: an `Error` keeps a 128-byte member tail and
// a 96-byte key path inline (no heap to put them in) and stays under 300 bytes; inside a
// manifest the nested readers pass the much smaller `manifest::DocFault` instead, and the
// context is added once.
static_assertions::const_assert!(core::mem::size_of::<Error>() <= 296);
// The stream below the archive returns its own small error; the member is added once, above it.
static_assertions::const_assert!(core::mem::size_of::<StreamError>() <= 48);

/// Shorthand for results in the core.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Something worth telling that does not fail a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WarningKind {
    /// From the header (trailing bytes, integrity mismatch, ...).
    Header(HeaderWarning),
    /// From the gzip layer (data after the trailer, ...).
    Gzip(GzipWarning),
    /// From the tar walker (duplicate member, lone end block, ...).
    Tar(TarWarning),
    /// From a manifest (unknown dtype, missing engine, ...).
    Manifest(ManifestWarning),
    /// From the chain checks (graph count vs lnc_size, instruction size, ...).
    Chain(ChainWarning),
}

impl WarningKind {
    /// A stable number for this warning, for bindings, as [`ErrorKind::code`] numbers errors:
    /// the layer's hundred (header 5, gzip 6, tar 7, manifest 9, chain 10) plus the layer's
    /// own code. Listed in `docs/error-codes.md`.
    pub fn code(&self) -> u16 {
        match self {
            WarningKind::Header(w) => in_layer(5, w.code()),
            WarningKind::Gzip(w) => in_layer(6, w.code()),
            WarningKind::Tar(w) => in_layer(7, w.code()),
            WarningKind::Manifest(w) => in_layer(9, w.code()),
            WarningKind::Chain(w) => in_layer(10, w.code()),
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarningKind::Header(w) => w.fmt(f),
            WarningKind::Gzip(w) => w.fmt(f),
            WarningKind::Tar(w) => w.fmt(f),
            WarningKind::Manifest(w) => w.fmt(f),
            WarningKind::Chain(w) => w.fmt(f),
        }
    }
}

/// A warning with the same context as an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Warning {
    /// The layer that noticed.
    pub stage: Stage,
    /// The member, empty outside one.
    pub member: Text<MEMBER_TEXT>,
    /// The JSON key path, empty outside JSON.
    pub key_path: Text<KEY_PATH_TEXT>,
    /// The byte offset, counted from [`Warning::offset_base`].
    pub offset: u64,
    /// What [`Warning::offset`] is counted from.
    pub offset_base: OffsetBase,
    /// What was noticed.
    pub kind: WarningKind,
}

impl Warning {
    /// A warning outside any member, at a file offset.
    #[cold]
    #[inline(never)]
    pub fn at_file(stage: Stage, offset: u64, kind: WarningKind) -> Self {
        Self { stage, member: Text::EMPTY, key_path: Text::EMPTY, offset, offset_base: OffsetBase::File, kind }
    }

    /// A warning about `member` as a whole, at no byte of it.
    #[cold]
    #[inline(never)]
    pub fn about_member(stage: Stage, member: &str, kind: WarningKind) -> Self {
        Self { offset_base: OffsetBase::None, ..Self::in_member(stage, member, 0, kind) }
    }

    /// A warning about `member`, at an offset in its body.
    #[cold]
    #[inline(never)]
    pub fn in_member(stage: Stage, member: &str, offset: u64, kind: WarningKind) -> Self {
        Self { member: Text::new(member), offset_base: OffsetBase::Member, ..Self::at_file(stage, offset, kind) }
    }

    /// The same warning with a key path attached.
    #[cold]
    #[inline(never)]
    pub fn with_key_path(mut self, path: &str) -> Self {
        self.key_path = Text::new(path);
        self
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.member.is_empty() {
            write!(f, "{}: ", self.stage)?;
        } else {
            write!(f, "{}: ", self.member)?;
        }
        if !self.key_path.is_empty() {
            write!(f, "{}: ", self.key_path)?;
        }
        self.kind.fmt(f)
    }
}

/// Where warnings go. Closures work: `&mut |w: &Warning| ...`.
pub trait WarningSink {
    /// Receives one warning.
    fn warn(&mut self, warning: &Warning);
}

impl<F: FnMut(&Warning)> WarningSink for F {
    fn warn(&mut self, warning: &Warning) {
        self(warning)
    }
}

/// A sink that drops every warning.
#[derive(Debug, Default, Clone, Copy)]
pub struct IgnoreWarnings;

impl WarningSink for IgnoreWarnings {
    fn warn(&mut self, _warning: &Warning) {}
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    /// The tier enums come from one list (`schema/kinds.toml`): each kind's code comes back
    /// through `from_code`, 0 is none, and its stage is the tier's.
    #[test]
    fn manifest_kinds_round_trip_their_codes_and_report_in_their_tier_stage() {
        let kinds = [ManifestKind::Neff, ManifestKind::Kelf, ManifestKind::Def, ManifestKind::Engine];
        for (i, kind) in kinds.into_iter().enumerate() {
            assert_eq!(usize::from(kind.code()), i + 1);
            assert_eq!(ManifestKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ManifestKind::from_code(0), None);
        assert_eq!(ManifestKind::from_code(5), None);
        let stages: [&str; 4] = kinds.map(|k| k.stage().name());
        assert_eq!(stages, ["neff.json", "kelf", "def.json", "engine"]);
        assert_eq!(ManifestKind::Def.as_str(), "subgraph definition");
    }

    /// The hand-written joins give what `format_args!` gave, and stop where a part does not fit.
    #[test]
    fn push_all_and_push_decimal_write_what_format_would() {
        extern crate std;
        let wide = [1u64 << 32, (1 << 32) + 9, 9_999_999_999, 10_000_000_000, 123_456_789_012_345_678];
        for v in [0, 7, 10, 99, 12_345, u64::from(u32::MAX), u64::MAX - 1, u64::MAX].into_iter().chain(wide) {
            let mut s = heapless::String::<20>::new();
            assert!(push_decimal(&mut s, v));
            assert_eq!(s.as_str(), std::format!("{v}"));
        }
        let mut short = heapless::String::<19>::new();
        assert!(!push_decimal(&mut short, u64::MAX), "20 digits do not fit in 19");
        assert_eq!(short.as_str(), "");
        let mut s = heapless::String::<12>::new();
        assert!(push_all(&mut s, &["nodes", "[", "3", "]"]));
        assert!(!push_all(&mut s, &[".", "attrs"]), "a part that does not fit stops the join");
        assert_eq!(s.as_str(), "nodes[3].");
    }

    /// A stream error becomes the crate error it stands for: same stage, kind, offset and
    /// base, and the member only where the archive adds it.
    #[test]
    fn a_stream_error_gets_its_member_once_at_the_archive() {
        extern crate std;
        let gzip = StreamError::at_file(Stage::Gzip, 1030, StreamKind::Gzip(GzipError::ReservedFlags { flags: 0x20 }));
        let e = Error::from(gzip);
        assert_eq!((e.stage, e.offset, e.offset_base), (Stage::Gzip, 1030, OffsetBase::File));
        assert_eq!(e.kind, ErrorKind::Gzip(GzipError::ReservedFlags { flags: 0x20 }));
        assert!(e.member.is_empty() && e.key_path.is_empty());
        assert_eq!(std::format!("{gzip}"), std::format!("{e}"));

        let short =
            Error::from(StreamError::at_archive(Stage::Tar, 4096, StreamKind::Truncated)).with_member("sg00/PE.bin");
        assert_eq!(short.member.as_str(), "sg00/PE.bin");
        assert_eq!(
            (short.stage, short.offset_base, short.kind),
            (Stage::Tar, OffsetBase::Archive, ErrorKind::Truncated)
        );
        assert_eq!(std::format!("{short}"), "sg00/PE.bin: unexpected end of input (tar byte 4096)");

        let io = StreamError::at_file(Stage::Io, 7, StreamKind::Io(embedded_io::ErrorKind::TimedOut));
        assert_eq!(embedded_io::Error::kind(&io), embedded_io::ErrorKind::TimedOut);
        let cap = StreamKind::Capacity(CapacityError { limit: "NAME", capacity: 1024 });
        assert_eq!(
            embedded_io::Error::kind(&StreamError::at_archive(Stage::Tar, 0, cap)),
            embedded_io::ErrorKind::OutOfMemory
        );
        assert_eq!(Error::from(StreamError::at_archive(Stage::Tar, 0, cap)).status(), Status::Resource);
    }

    #[test]
    fn text_keeps_the_tail_of_a_long_name() {
        let t = Text::<8>::new("sg00/some/long/PE.bin");
        assert_eq!(t.as_str(), "g/PE.bin");
        assert!(t.is_elided());
        let mut s = heapless::String::<32>::new();
        core::fmt::write(&mut s, format_args!("{t}")).ok();
        assert_eq!(s.as_str(), "…g/PE.bin");
    }

    #[test]
    fn text_cuts_on_a_char_boundary() {
        let t = Text::<4>::new("aé€");
        assert_eq!(t.as_str(), "€");
        assert!(t.is_elided());
    }

    #[test]
    fn short_text_is_kept_whole() {
        let t = Text::<16>::new("neff.json");
        assert_eq!(t.as_str(), "neff.json");
        assert!(!t.is_elided());
        assert!(Text::<16>::EMPTY.is_empty());
    }
}
