//! Walking a NEFF: the header, then every member of the archive, in one forward pass.
//!
//! [`walk`] reads the header, checks the runtime's header gates, then hands each regular
//! member (name, size, body reader) to a [`Visitor`] as it streams past, through the fixed
//! read buffer of the source. Nothing is held whole.
//!
//! INTERIM: this module walks with the `flate2` and `tar` crates until the core's streaming
//! `neff::archive::Archive` (branch `container`) is merged; then [`walk`] becomes
//! `Archive::open(src, Some(file_size), &options, &mut warnings)`, `header()`,
//! `next_member()` per member, `finish()`, and the header decode below goes away. The
//! [`Visitor`] interface, and so every verb, stays as it is.

use std::io::{self, BufRead, Read};

use crate::error::CliError;
use crate::header_view::HeaderView;
use crate::writer::HEADER_SIZE;

/// Receives the header and then each member, in archive order.
pub trait Visitor {
    /// Called once, after the header gates passed.
    fn header(&mut self, header: &HeaderView) -> Result<(), CliError>;
    /// Called for each regular-file member. `body` yields exactly `size` bytes unless the
    /// archive is damaged, in which case a read fails; map such failures with
    /// [`body_error`].
    fn member(&mut self, name: &str, size: u64, body: &mut dyn Read) -> Result<(), CliError>;
}

/// What a walk saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkSummary {
    /// Regular members visited.
    pub members: u64,
    /// Sum of their sizes.
    pub member_bytes: u64,
    /// Bytes of the file read.
    pub file_bytes: u64,
    /// Warnings raised (already printed as `warning: ...`).
    pub warnings: Vec<String>,
}

/// The rejection for a body read that failed inside member `name`.
pub fn body_error(name: &str, err: &io::Error) -> CliError {
    CliError::rejected(format!("{name}: {}", crate::error::io_message(err)))
}

/// Decodes the 1024 header bytes (no gate; see [`check_header`]).
pub fn decode_header(h: &[u8; HEADER_SIZE]) -> HeaderView {
    let u64_at = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |at: usize| u32::from_le_bytes(h[at..at + 4].try_into().unwrap_or([0; 4]));
    let cstr = |at: usize, len: usize| {
        let field = &h[at..at + len];
        let end = field.iter().position(|&b| b == 0).unwrap_or(len);
        String::from_utf8_lossy(&field[..end]).into_owned()
    };
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&h[172..204]);
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&h[204..220]);
    let mut tpb_per_node = [0u8; 64];
    tpb_per_node.copy_from_slice(&h[480..544]);
    HeaderView {
        pkg_version: u64_at(0),
        header_size: u64_at(8),
        data_size: u64_at(16),
        neff_version_major: u64_at(24),
        neff_version_minor: u64_at(32),
        build_version: cstr(40, 128),
        num_tpb: u32_at(168),
        hash,
        uuid,
        name: cstr(220, 256),
        requested_tpb_count: u32_at(476),
        tpb_per_node,
        feature_bits: u64_at(544),
        lnc_size: u32_at(552),
    }
}

/// Feature bits a version-2 NEFF may not set (runtime 2.31 knows bits 0..26).
const UNSUPPORTED_FEATURES: u64 = 0x7FFF_FFFF_F800_0000;

/// The runtime's header gates (`spec/neff-format.md` §2.5, with the loader's stricter
/// `header_size == 1024` and `data_size > 0`). Returns warnings.
pub fn check_header(h: &HeaderView, file_size: u64) -> Result<Vec<String>, CliError> {
    let payload_room = file_size - HEADER_SIZE as u64;
    if h.header_size != HEADER_SIZE as u64 {
        return Err(CliError::rejected(format!(
            "header: header_size is {}, expected 1024 (byte 8)",
            h.header_size
        )));
    }
    if h.neff_version_major > 2 {
        return Err(CliError::rejected_with_hint(
            format!(
                "header: NEFF version: {}.{} is not supported, accepted version range: 0.x-2.x (byte 24)",
                h.neff_version_major, h.neff_version_minor
            ),
            "the NEFF was written by a newer compiler than this loader knows",
        ));
    }
    if h.neff_version_major == 2 && h.feature_bits & UNSUPPORTED_FEATURES != 0 {
        return Err(CliError::rejected_with_hint(
            format!(
                "header: This NEFF (version: {}.{}, features: 0x{:x}) has been compiled by a newer version of Neuron compiler. Features supported by this Neuron Runtime: 0x7ffffff. (byte 544)",
                h.neff_version_major,
                h.neff_version_minor,
                h.feature_bits & UNSUPPORTED_FEATURES
            ),
            "recompile with the compiler that matches the runtime, or update the runtime",
        ));
    }
    if h.data_size > payload_room {
        return Err(CliError::rejected_with_hint(
            format!("header: Invalid NEFF data size({:x} vs {:x}) (byte 16)", h.data_size, payload_room),
            format!("the file is {file_size} bytes: it looks truncated (the header promises {} bytes)", h.data_size + 1024),
        ));
    }
    if h.pkg_version != 1 && h.pkg_version != 2 {
        return Err(CliError::rejected(format!("header: Unsupported NEFF packager: {} (byte 0)", h.pkg_version)));
    }
    if h.data_size == 0 {
        return Err(CliError::rejected("header: data_size is 0: the NEFF holds no archive (byte 16)"));
    }
    let mut warnings = Vec::new();
    if payload_room > h.data_size {
        warnings.push(format!(
            "header: {} bytes after the payload (data_size {}, file {} bytes)",
            payload_room - h.data_size,
            h.data_size,
            file_size
        ));
    }
    Ok(warnings)
}

/// Walks `src` (a file of `file_size` bytes): header gates, then every member to `visitor`.
pub fn walk<R: BufRead>(mut src: R, file_size: u64, visitor: &mut dyn Visitor) -> Result<WalkSummary, CliError> {
    let mut summary = WalkSummary::default();
    if file_size < HEADER_SIZE as u64 {
        return Err(CliError::rejected_with_hint(
            format!("header: unexpected end of input: the file is {file_size} bytes, a NEFF header is 1024 (byte {file_size})"),
            "the file is truncated or not a NEFF",
        ));
    }
    let mut raw = [0u8; HEADER_SIZE];
    src.read_exact(&mut raw).map_err(|e| CliError::rejected(format!("header: {} (byte 0)", crate::error::io_message(&e))))?;
    let header = decode_header(&raw);
    for w in check_header(&header, file_size)? {
        crate::error::print_warning(&w);
        summary.warnings.push(w);
    }
    visitor.header(&header)?;

    let mut payload = (&mut src).take(header.data_size);
    let gzip = payload.fill_buf().map(|b| b.starts_with(&[0x1f, 0x8b])).unwrap_or(false);
    if gzip {
        let mut inflate = flate2::bufread::GzDecoder::new(&mut payload);
        walk_tar(&mut inflate, visitor, &mut summary)?;
        // The tar walker stops at the end blocks; reading on checks the CRC-32 and ISIZE.
        io::copy(&mut inflate, &mut io::sink())
            .map_err(|e| CliError::rejected(format!("gzip: {} (after the tar end)", crate::error::io_message(&e))))?;
    } else {
        walk_tar(&mut payload, visitor, &mut summary)?;
    }
    // Zero padding up to data_size follows the stream in real NEFFs.
    io::copy(&mut payload, &mut io::sink()).map_err(|e| CliError::rejected(format!("io: {}", crate::error::io_message(&e))))?;
    summary.file_bytes = file_size;
    Ok(summary)
}

fn walk_tar(stream: &mut dyn Read, visitor: &mut dyn Visitor, summary: &mut WalkSummary) -> Result<(), CliError> {
    let mut archive = tar::Archive::new(stream);
    let entries = archive.entries().map_err(|e| CliError::rejected(format!("tar: {}", crate::error::io_message(&e))))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| {
            CliError::rejected(format!("tar: {} (tar byte {})", crate::error::io_message(&e), summary.member_bytes))
        })?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            continue;
        }
        let path = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&path).into_owned();
        let name = name.strip_prefix("./").unwrap_or(&name).to_owned();
        let size = entry.size();
        visitor.member(&name, size, &mut entry)?;
        summary.members += 1;
        summary.member_bytes += size;
    }
    Ok(())
}
