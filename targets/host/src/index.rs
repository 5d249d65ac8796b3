//! The member index of an opened NEFF: where each member's bytes sit in the tar stream, and
//! inflate checkpoints, so that one member is read later without inflating from the start.
//!
//! A gzip stream can only be inflated from its beginning, unless the inflater's state at some
//! point is kept: zlib's `examples/zran.c` and indexed_gzip keep, every few MiB of output, the
//! bit position and the 32 KiB window before it. Here the first pass inflates with
//! miniz_oxide (the core's own inflater) through [`IndexingInflate`], whose whole state is a
//! value: at a call boundary every [`SPACING`] bytes of output, it keeps a [`Checkpoint`]
//! (the decompressor's state, the window, the input and output positions). Reading a member
//! then starts at the last checkpoint before it: at most [`SPACING`] bytes (or the spacing
//! thinning made it, see below) are inflated and dropped, then the member's own bytes.
//!
//! Size: a checkpoint holds the 32 KiB window and miniz_oxide's state (about 10.3 KiB), about
//! 43 KiB in all. The index keeps at most [`MAX_CHECKPOINTS`]: past that it drops every other
//! one and doubles the spacing (as zran's users do to bound an index), so it never holds more
//! than about 11 MiB, whatever the size of the NEFF; a 1 GiB tar stream keeps 256 checkpoints
//! 4 MiB apart. The member table grows with the number of members, as `neff ls` does.
//!
//! The index covers the first gzip member (every real NEFF is one); a NEFF of several gzip
//! members, or an uncompressed tar (pkg_version 1), has no checkpoints and [`MemberIndex::read`]
//! says so (`None`): the caller walks the archive as before.

use std::collections::HashMap;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex};

use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;
use neff::gzip::{Inflate, InflateStatus, WINDOW_SIZE};

use crate::members::MemberRecord;

/// Output bytes between two checkpoints (before any thinning).
pub const SPACING: u64 = 4 << 20;
/// The most checkpoints an index keeps (each about 43 KiB).
pub const MAX_CHECKPOINTS: usize = 256;
/// Compressed bytes read at a time when reading a member.
const READ_CHUNK: usize = 64 * 1024;
/// Where a NEFF's payload (the gzip stream) starts: the header is 1,024 bytes (spec §2).
const PAYLOAD_START: u64 = 1024;

/// The inflater's whole state at one call boundary.
#[derive(Clone)]
pub struct Checkpoint {
    /// Tar-stream bytes written before it.
    pub out: u64,
    /// Deflate-stream bytes consumed before it.
    pub input: u64,
    /// Where the next output goes in the window.
    out_pos: usize,
    /// The window: the latest 32 KiB of output (miniz_oxide's history).
    window: Box<[u8; WINDOW_SIZE]>,
    /// miniz_oxide's state (bit buffer, Huffman tables, where it stands in a block).
    state: Box<DecompressorOxide>,
}

/// The checkpoints of one pass, shared between the inflater and the code that opened it.
#[derive(Clone)]
pub struct Recorder(Arc<Mutex<Recording>>);

impl Default for Recorder {
    fn default() -> Self {
        Recorder::with_spacing(SPACING)
    }
}

impl PartialEq for Recorder {
    /// The same recording.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Recorder {}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recorder")
    }
}

/// What a [`Recorder`] holds.
#[derive(Default)]
struct Recording {
    checkpoints: Vec<Checkpoint>,
    spacing: u64,
    /// A second gzip member began: the checkpoints are void (see the module doc).
    several_members: bool,
}

impl Recorder {
    /// A recorder whose checkpoints are `spacing` output bytes apart ([`SPACING`] by default;
    /// tests take a smaller one to have many checkpoints in a small NEFF).
    pub fn with_spacing(spacing: u64) -> Self {
        Recorder(Arc::new(Mutex::new(Recording { spacing: spacing.max(1), ..Recording::default() })))
    }

    /// The checkpoints recorded; `None` when the stream had no checkpoints (not gzip) or more
    /// than one gzip member.
    fn take(&self) -> Option<(Vec<Checkpoint>, u64)> {
        let mut r = self.0.lock().ok()?;
        if r.several_members || r.checkpoints.is_empty() {
            return None;
        }
        Some((std::mem::take(&mut r.checkpoints), r.spacing))
    }
}

/// miniz_oxide as the core's inflater, keeping a [`Checkpoint`] every [`SPACING`] bytes of
/// output (the same calls as the core's `MinizInflater`, plus the copies).
pub struct IndexingInflate {
    state: Box<DecompressorOxide>,
    recorder: Recorder,
    input: u64,
    out: u64,
    next_at: u64,
    spacing: u64,
    members: u32,
}

impl IndexingInflate {
    /// An inflater that records into `recorder`.
    pub fn new(recorder: Recorder) -> Self {
        let spacing = recorder.0.lock().map_or(SPACING, |r| r.spacing);
        Self { state: Box::default(), recorder, input: 0, out: 0, next_at: 0, spacing, members: 0 }
    }

    fn checkpoint(&mut self, window: &[u8; WINDOW_SIZE], out_pos: usize) {
        let Ok(mut r) = self.recorder.0.lock() else { return };
        if r.checkpoints.len() >= MAX_CHECKPOINTS {
            // Thin: keep every other one (the first, at the start, stays) and double the spacing.
            let kept: Vec<Checkpoint> = r.checkpoints.drain(..).step_by(2).collect();
            r.checkpoints = kept;
            self.spacing = self.spacing.saturating_mul(2);
        }
        r.checkpoints.push(Checkpoint {
            out: self.out,
            input: self.input,
            out_pos,
            window: Box::new(*window),
            state: self.state.clone(),
        });
        r.spacing = self.spacing;
        self.next_at = self.out.saturating_add(self.spacing);
    }
}

impl Inflate for IndexingInflate {
    fn reset(&mut self) {
        self.state.init();
        self.members += 1;
        if self.members > 1 {
            if let Ok(mut r) = self.recorder.0.lock() {
                r.several_members = true;
                r.checkpoints.clear();
            }
        }
    }

    fn inflate(
        &mut self,
        input: &[u8],
        window: &mut [u8; WINDOW_SIZE],
        out_pos: usize,
        more_input: bool,
    ) -> (InflateStatus, usize, usize) {
        if self.members <= 1 && self.out >= self.next_at {
            self.checkpoint(window, out_pos);
        }
        let flags = if more_input { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT } else { 0 };
        let (status, n_in, n_out) = decompress(&mut self.state, input, window, out_pos, flags);
        self.input += n_in as u64;
        self.out += n_out as u64;
        let status = match status {
            TINFLStatus::Done => InflateStatus::Done,
            TINFLStatus::NeedsMoreInput | TINFLStatus::HasMoreOutput => InflateStatus::Progress,
            TINFLStatus::FailedCannotMakeProgress if !more_input => InflateStatus::Truncated,
            other => InflateStatus::Invalid(other as i8),
        };
        (status, n_in, n_out)
    }
}

/// A member's place in the tar stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Its first byte, in the tar stream.
    pub offset: u64,
    /// Its size.
    pub size: u64,
}

/// Where every member is, and the checkpoints to reach it.
pub struct MemberIndex {
    /// The first copy of each name (the one the loader binds and `neff cat` writes).
    places: HashMap<String, Place>,
    checkpoints: Vec<Checkpoint>,
    spacing: u64,
    /// Where the deflate stream starts in the file.
    deflate_start: Option<u64>,
}

impl MemberIndex {
    /// The index of a pass that inflated with an [`IndexingInflate`] recording into
    /// `recorder`, whose member log listed `members`. `input` is the NEFF (to find where its deflate
    /// stream starts).
    pub fn new(recorder: &Recorder, members: &[MemberRecord], input: &mut (impl Read + Seek)) -> Self {
        let places = members.iter().map(|m| (m.name.clone(), Place { offset: m.offset, size: m.size }));
        Self::with_places(recorder, places, input)
    }

    /// [`MemberIndex::new`] from each member's name and place, in tar order (a walk's).
    pub fn with_places(
        recorder: &Recorder,
        members: impl IntoIterator<Item = (String, Place)>,
        input: &mut (impl Read + Seek),
    ) -> Self {
        let mut places = HashMap::new();
        for (name, place) in members {
            places.entry(name).or_insert(place);
        }
        let (checkpoints, spacing) = recorder.take().unwrap_or_default();
        let deflate_start = if checkpoints.is_empty() { None } else { deflate_start(input) };
        MemberIndex { places, checkpoints, spacing, deflate_start }
    }

    /// Where `name` is; `None` when the archive has no such member.
    pub fn place(&self, name: &str) -> Option<Place> {
        self.places.get(name).copied()
    }

    /// How many checkpoints the index keeps.
    pub fn checkpoints(&self) -> usize {
        self.checkpoints.len()
    }

    /// Output bytes between two checkpoints.
    pub fn spacing(&self) -> u64 {
        self.spacing
    }

    /// Whether [`MemberIndex::read`] can read members (the stream was one gzip member).
    pub fn can_read(&self) -> bool {
        self.deflate_start.is_some()
    }

    /// The bytes of member `name` from `input` (the same NEFF), inflated from the last
    /// checkpoint before it. `Ok(None)`: no such member, or no checkpoints to read from (the
    /// caller walks the archive).
    pub fn read(&self, name: &str, input: &mut (impl Read + Seek)) -> io::Result<Option<Vec<u8>>> {
        let (Some(place), Some(start)) = (self.place(name), self.deflate_start) else { return Ok(None) };
        self.read_range(place, start, input).map(Some)
    }

    fn read_range(&self, place: Place, start: u64, input: &mut (impl Read + Seek)) -> io::Result<Vec<u8>> {
        let at = self.checkpoints.partition_point(|c| c.out <= place.offset);
        let Some(cp) = at.checked_sub(1).and_then(|i| self.checkpoints.get(i)) else {
            return Err(io::Error::other("the index has no checkpoint before the member"));
        };
        input.seek(SeekFrom::Start(start + cp.input))?;
        let mut state = cp.state.clone();
        let mut window = cp.window.clone();
        let mut out_pos = cp.out_pos;
        let mut out = cp.out;
        let end = place.offset + place.size;
        let mut bytes = Vec::with_capacity(usize::try_from(place.size).unwrap_or(0));
        let mut buf = vec![0u8; READ_CHUNK];
        let (mut filled, mut used, mut more) = (0usize, 0usize, true);
        let cut = || io::Error::new(io::ErrorKind::UnexpectedEof, "the NEFF ends before the member (did it change?)");
        while out < end {
            if used == filled && more {
                filled = input.read(&mut buf)?;
                used = 0;
                more = filled > 0;
            }
            let flags = if more { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT } else { 0 };
            let (status, n_in, n_out) = decompress(&mut state, &buf[used..filled], &mut window[..], out_pos, flags);
            used += n_in;
            let produced = &window[out_pos..out_pos + n_out];
            // The part of this output that is the member's.
            let from = place.offset.saturating_sub(out).min(n_out as u64) as usize;
            let to = end.saturating_sub(out).min(n_out as u64) as usize;
            bytes.extend_from_slice(&produced[from..to]);
            out += n_out as u64;
            out_pos = (out_pos + n_out) % WINDOW_SIZE;
            match status {
                TINFLStatus::NeedsMoreInput | TINFLStatus::HasMoreOutput => {}
                TINFLStatus::Done if out >= end => {}
                TINFLStatus::Done | TINFLStatus::FailedCannotMakeProgress => return Err(cut()),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the deflate stream changed since it was indexed",
                    ))
                }
            }
            if n_in == 0 && n_out == 0 && !more {
                return Err(cut());
            }
        }
        Ok(bytes)
    }
}

/// Where the deflate stream of the NEFF in `input` starts: after the 1,024-byte header and the
/// gzip member header (RFC 1952: FEXTRA, FNAME, FCOMMENT, FHCRC).
fn deflate_start(input: &mut (impl Read + Seek)) -> Option<u64> {
    input.seek(SeekFrom::Start(PAYLOAD_START)).ok()?;
    let mut head = Vec::with_capacity(READ_CHUNK);
    input.take(READ_CHUNK as u64).read_to_end(&mut head).ok()?;
    if head.get(..3)? != [0x1f, 0x8b, 8] {
        return None;
    }
    let flags = *head.get(3)?;
    let mut pos = 10usize;
    if flags & 4 != 0 {
        let len = u16::from_le_bytes([*head.get(pos)?, *head.get(pos + 1)?]);
        pos += 2 + usize::from(len);
    }
    for flag in [8u8, 16] {
        if flags & flag != 0 {
            pos += head.get(pos..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flags & 2 != 0 {
        pos += 2;
    }
    (pos <= head.len()).then_some(PAYLOAD_START + pos as u64)
}
