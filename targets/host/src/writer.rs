//! Writing NEFF files: the 1024-byte header, then a tar of the members, gzip'd for pkg 2.
//!
//! The layout written is the one `neuronx-cc` produces (see `spec/neff-format.md` §2-§3):
//!
//! ```text
//! offset 0      neff_header_t, 1024 bytes, little-endian, no magic
//! offset 1024   data_size bytes:
//!                 pkg_version 2: a gzip member (deflate, OS 3, MTIME 0) of a POSIX ustar
//!                                tar, then zero padding to a 10240-byte block (libarchive's
//!                                writer pads its output the same way)
//!                 pkg_version 1: the raw tar, padded the same way
//! ```
//!
//! A caller may ask to keep a given payload span ([`NeffWriter::keep_data_size`]): when the
//! stream fits in it, the padding fills it exactly. `pack` uses this so that an unpack/pack
//! round trip reproduces the original header's `data_size` (the compiler's deflate settings
//! are not reproducible byte for byte, but our stream is never the longer one in practice).
//!
//! The tar is deterministic: POSIX ustar headers (the `tar` crate), regular files only, mode
//! 0664, uid/gid 0, mtime 0, in the order the caller appends them. The integrity hash is
//! written the way current compilers write it (§2.6): pkg 2 stores the MD5 of
//! `data[0..data_size]` in `hash[0..16]` word-swapped, as neuronx-cc 2.18 and later do (each
//! 4-byte word of the digest reversed: the four MD5 state words big-endian), the rest zero;
//! pkg 1 the SHA-256 in `hash[0..32]`, as is.
//!
//! The writer streams: members go through a fixed buffer into the tar, the tar into the
//! compressor, the compressed bytes through the digest into the output. The header's
//! `data_size` and `hash` are only known at the end, so the output must be [`Seek`]: a
//! placeholder header is written first and overwritten by [`NeffWriter::finish`].
//!
//! This module is shared with the build script (which writes the built-in sample NEFF), so it
//! uses only std, `tar`, `flate2`, `md-5` and `sha2`.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;

use md5::Md5;
use neff::header::field;
use sha2::{Digest, Sha256};

/// Size of `neff_header_t`, and the file offset of the payload.
pub const HEADER_SIZE: usize = neff::header::HEADER_SIZE;
/// The payload is zero-padded to a multiple of this many bytes (libarchive's block size).
pub const PAYLOAD_BLOCK: u64 = 10240;
/// Capacity of `neff_build_version` (NUL-terminated, so at most 127 bytes of text).
pub const BUILD_VERSION_LEN: usize = field::BUILD_VERSION.end - field::BUILD_VERSION.start;
/// Capacity of `name` (NUL-terminated, so at most 255 bytes of text).
pub const NAME_LEN: usize = field::NAME.end - field::NAME.start;
/// Entries of `tpb_per_node` (`MAX_NODES`).
pub const TPB_PER_NODE_LEN: usize = field::TPB_PER_NODE.end - field::TPB_PER_NODE.start;
/// Mode bits of every member written (what the real NEFFs carry).
pub const MEMBER_MODE: u32 = 0o664;
/// Longest path a ustar `name` field holds without a prefix; longer ones get a PAX `path` record.
const USTAR_NAME: usize = 100;

/// Every header field a writer is told; `header_size`, `data_size` and `hash` are computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderFields {
    /// 1 (raw tar, SHA-256) or 2 (gzip, MD5).
    pub pkg_version: u64,
    /// `neff_version_major`.
    pub neff_version_major: u64,
    /// `neff_version_minor`.
    pub neff_version_minor: u64,
    /// `neff_build_version`, at most 127 bytes.
    pub build_version: String,
    /// `num_tpb`.
    pub num_tpb: u32,
    /// `uuid`, 16 raw bytes.
    pub uuid: [u8; 16],
    /// `name`, at most 255 bytes.
    pub name: String,
    /// `requested_tpb_count`.
    pub requested_tpb_count: u32,
    /// `tpb_per_node`, one byte per KELF node.
    pub tpb_per_node: [u8; TPB_PER_NODE_LEN],
    /// `feature_bits`.
    pub feature_bits: u64,
    /// `lnc_size`.
    pub lnc_size: u32,
}

impl HeaderFields {
    /// The header `neuronx-cc` writes for a one-node NEFF: version 2.0, one TPB, empty build.
    pub fn new(name: &str, uuid: [u8; 16], lnc_size: u32) -> Self {
        let mut tpb_per_node = [0u8; TPB_PER_NODE_LEN];
        tpb_per_node[0] = 1;
        Self {
            pkg_version: 2,
            neff_version_major: 2,
            neff_version_minor: 0,
            build_version: String::new(),
            num_tpb: 1,
            uuid,
            name: name.to_owned(),
            requested_tpb_count: 1,
            tpb_per_node,
            feature_bits: 0,
            lnc_size,
        }
    }

    /// Encodes the 1024-byte `neff_header_t` at the offsets the core reads it by
    /// (`neff::header::field`, docs/format.md §2.3).
    ///
    /// Fails when a string does not fit its NUL-terminated field.
    pub fn encode(&self, data_size: u64, hash: &[u8; 32]) -> io::Result<[u8; HEADER_SIZE]> {
        let mut h = [0u8; HEADER_SIZE];
        put(&mut h, field::PKG_VERSION, &self.pkg_version.to_le_bytes());
        put(&mut h, field::HEADER_SIZE, &(HEADER_SIZE as u64).to_le_bytes());
        put(&mut h, field::DATA_SIZE, &data_size.to_le_bytes());
        put(&mut h, field::VERSION_MAJOR, &self.neff_version_major.to_le_bytes());
        put(&mut h, field::VERSION_MINOR, &self.neff_version_minor.to_le_bytes());
        put_str(&mut h, field::BUILD_VERSION, "build_version", &self.build_version)?;
        put(&mut h, field::NUM_TPB, &self.num_tpb.to_le_bytes());
        put(&mut h, field::HASH, hash);
        put(&mut h, field::UUID, &self.uuid);
        put_str(&mut h, field::NAME, "name", &self.name)?;
        put(&mut h, field::REQUESTED_TPB_COUNT, &self.requested_tpb_count.to_le_bytes());
        put(&mut h, field::TPB_PER_NODE, &self.tpb_per_node);
        put(&mut h, field::FEATURE_BITS, &self.feature_bits.to_le_bytes());
        put(&mut h, field::LNC_SIZE, &self.lnc_size.to_le_bytes());
        Ok(h)
    }
}

/// Writes `bytes` over all of header field `at` (a value of the field's width).
fn put(h: &mut [u8; HEADER_SIZE], at: Range<usize>, bytes: &[u8]) {
    h[at].copy_from_slice(bytes);
}

/// Writes `s` at the start of the NUL-terminated text field `at`.
fn put_str(h: &mut [u8; HEADER_SIZE], at: Range<usize>, name: &str, s: &str) -> io::Result<()> {
    // One byte stays for the NUL terminator; a NUL inside would cut the string short.
    let cap = at.len();
    if s.len() >= cap || s.as_bytes().contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("header field {name} must be at most {} bytes without NUL, got {} bytes", cap - 1, s.len()),
        ));
    }
    h[at.start..at.start + s.len()].copy_from_slice(s.as_bytes());
    Ok(())
}

/// What [`NeffWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// `data_size`: the payload length including the zero padding.
    pub data_size: u64,
    /// The length of the tar or gzip stream before the padding.
    pub stream_size: u64,
    /// The `hash` field as written.
    pub hash: [u8; 32],
    /// The whole header as written.
    pub header: [u8; HEADER_SIZE],
    /// Number of members appended.
    pub members: usize,
}

enum Hasher {
    Md5(Md5),
    Sha256(Sha256),
}

/// Counts and digests the payload bytes on their way to the output.
struct Tap<W: Write> {
    out: W,
    count: u64,
    hasher: Hasher,
}

impl<W: Write> Write for Tap<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        let done = &buf[..n];
        match &mut self.hasher {
            Hasher::Md5(h) => h.update(done),
            Hasher::Sha256(h) => h.update(done),
        }
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

enum Payload<W: Write> {
    // Boxed: zlib-rs's encoder state is several times the size of the raw variant.
    Gzip(Box<flate2::write::GzEncoder<Tap<W>>>),
    Raw(Tap<W>),
}

impl<W: Write> Write for Payload<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Payload::Gzip(g) => g.write(buf),
            Payload::Raw(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Payload::Gzip(g) => g.flush(),
            Payload::Raw(t) => t.flush(),
        }
    }
}

/// Streams members into a NEFF: [`NeffWriter::new`], [`NeffWriter::append`] per member,
/// [`NeffWriter::finish`].
pub struct NeffWriter<W: Write + Seek> {
    tar: tar::Builder<Payload<W>>,
    fields: HeaderFields,
    start: u64,
    members: usize,
    keep_data_size: Option<u64>,
}

impl<W: Write + Seek> NeffWriter<W> {
    /// Writes a placeholder header at the current position of `out` and opens the payload.
    ///
    /// Fails on a `pkg_version` other than 1 or 2, or on strings too long for the header.
    pub fn new(mut out: W, fields: HeaderFields) -> io::Result<Self> {
        // Check the strings now rather than after streaming the whole payload.
        fields.encode(0, &[0; 32])?;
        let start = out.stream_position()?;
        out.write_all(&[0u8; HEADER_SIZE])?;
        let payload = match fields.pkg_version {
            2 => {
                let tap = Tap { out, count: 0, hasher: Hasher::Md5(Md5::new()) };
                // MTIME 0 and OS 3 (Unix) as in the real NEFFs; the default level.
                let gz = flate2::GzBuilder::new().operating_system(3).write(tap, flate2::Compression::default());
                Payload::Gzip(Box::new(gz))
            }
            1 => Payload::Raw(Tap { out, count: 0, hasher: Hasher::Sha256(Sha256::new()) }),
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("pkg_version must be 1 or 2, got {other}"),
                ))
            }
        };
        let mut tar = tar::Builder::new(payload);
        tar.mode(tar::HeaderMode::Deterministic);
        Ok(Self { tar, fields, start, members: 0, keep_data_size: None })
    }

    /// Pads the payload to exactly `data_size` bytes when the stream fits in it (else to the
    /// next 10240-byte block, as without this call).
    pub fn keep_data_size(&mut self, data_size: u64) {
        self.keep_data_size = Some(data_size);
    }

    /// Appends one regular-file member of `size` bytes read from `body`.
    ///
    /// Fails when `body` yields fewer or more than `size` bytes, or when `name` is not a
    /// relative path without `..` (the tar crate refuses those).
    pub fn append(&mut self, name: &str, size: u64, body: &mut dyn Read) -> io::Result<()> {
        if name.len() > USTAR_NAME {
            self.append_pax_path(name)?;
        }
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(MEMBER_MODE);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let mut exact = ExactReader { inner: body, left: size };
        if name.len() > USTAR_NAME {
            // The PAX record before carries the whole path; the ustar name is its tail, as
            // GNU tar writes it, for readers that ignore PAX.
            let mut cut = name.len() - USTAR_NAME;
            while !name.is_char_boundary(cut) {
                cut += 1;
            }
            header.set_path(&name[cut..]).or_else(|_| header.set_path("pax-long-name"))?;
            header.set_cksum();
            self.tar.append(&header, &mut exact)?;
        } else {
            self.tar.append_data(&mut header, name, &mut exact)?;
        }
        if exact.left != 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("member {name}: body ended {} bytes early", exact.left),
            ));
        }
        let mut probe = [0u8; 1];
        if body.read(&mut probe)? != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("member {name}: body is longer than {size} bytes (did the file change?)"),
            ));
        }
        self.members += 1;
        Ok(())
    }

    /// Writes a PAX extended header (`x`) whose `path` record names the next member.
    fn append_pax_path(&mut self, name: &str) -> io::Result<()> {
        // A record is "<len> path=<name>\n", where <len> counts its own digits.
        let body_len = " path=".len() + name.len() + 1;
        let mut len = body_len + 1;
        while len.to_string().len() + body_len != len {
            len += 1;
        }
        let record = format!("{len} path={name}\n");
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::XHeader);
        header.set_size(record.len() as u64);
        header.set_mode(MEMBER_MODE);
        header.set_mtime(0);
        header.set_path("PaxHeader")?;
        header.set_cksum();
        self.tar.append(&header, record.as_bytes())
    }

    /// Appends a member held in memory.
    pub fn append_bytes(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.append(name, bytes.len() as u64, &mut &bytes[..])
    }

    /// Ends the tar (two zero blocks) and the gzip stream, pads, and writes the real header.
    ///
    /// Returns the output (positioned at the end of the file) and what was written.
    pub fn finish(self) -> io::Result<(W, Written)> {
        let payload = self.tar.into_inner()?;
        let mut tap = match payload {
            Payload::Gzip(g) => g.finish()?,
            Payload::Raw(t) => t,
        };
        let stream_size = tap.count;
        let padded = match self.keep_data_size {
            Some(span) if span >= stream_size && span > 0 => span,
            _ => stream_size.div_ceil(PAYLOAD_BLOCK).max(1) * PAYLOAD_BLOCK,
        };
        let zeros = [0u8; 4096];
        let mut left = padded - stream_size;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            tap.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        let mut hash = [0u8; 32];
        match tap.hasher {
            Hasher::Md5(h) => hash[..16].copy_from_slice(&md5_word_swapped(&h.finalize().into())),
            Hasher::Sha256(h) => hash.copy_from_slice(&h.finalize()),
        }
        let header = self.fields.encode(padded, &hash)?;
        let mut out = tap.out;
        out.flush()?;
        out.seek(SeekFrom::Start(self.start))?;
        out.write_all(&header)?;
        out.seek(SeekFrom::End(0))?;
        out.flush()?;
        Ok((out, Written { data_size: padded, stream_size, hash, header, members: self.members }))
    }
}

/// An MD5 digest as neuronx-cc 2.18 and later store it in the header: each 4-byte word
/// reversed (spec §2.6). This module is shared with build scripts, so it does not call the
/// core's `neff::header::word_swapped`; the tests check that the core accepts what it writes.
pub fn md5_word_swapped(digest: &[u8; 16]) -> [u8; 16] {
    let mut out = *digest;
    for word in out.chunks_exact_mut(4) {
        word.reverse();
    }
    out
}

/// Reads at most `left` bytes from `inner`, so a member never takes more than its size.
struct ExactReader<'a> {
    inner: &'a mut dyn Read,
    left: u64,
}

impl Read for ExactReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Writes a whole NEFF from in-memory members, in the order given.
pub fn neff_bytes(fields: &HeaderFields, members: &[(String, Vec<u8>)]) -> io::Result<Vec<u8>> {
    let mut writer = NeffWriter::new(io::Cursor::new(Vec::new()), fields.clone())?;
    for (name, body) in members {
        writer.append_bytes(name, body)?;
    }
    let (cursor, _) = writer.finish()?;
    Ok(cursor.into_inner())
}
