//! Walking a NEFF through the core: the header, then every member of the archive, in one
//! forward pass.
//!
//! [`walk`] opens the core's streaming [`neff::archive::Archive`] over the input (an
//! `embedded_io::BufRead` with a fixed buffer), which applies the runtime's header gates,
//! inflates with a fixed window (zlib-rs, in a thread of its own on a multi-core host: see
//! [`crate::inflate`]) and walks the tar. Each regular member (name, size, body
//! reader) goes to a [`Visitor`] as it streams past; nothing is held whole. At the end
//! `Archive::finish` checks the gzip trailer (CRC-32, ISIZE) and the padding. Core warnings
//! are printed as `warning: ...` when they arrive.

use std::io::{self, Read};

use neff::archive::OpenOptions;

use crate::error::{print_warning, CliError};
use crate::header_view::HeaderView;
use crate::inflate::{open_archive, Inflation};
use crate::source::InputSource;

/// Receives the header and then each member, in archive order.
pub trait Visitor {
    /// Called once, after the header gates passed.
    fn header(&mut self, header: &HeaderView) -> Result<(), CliError>;
    /// Called for each regular-file member, by its name as the archive stores it (a name
    /// that is not UTF-8 included: such a member is walked too). `body` yields exactly `size` bytes unless the
    /// archive is damaged, in which case a read fails; map such failures with
    /// [`body_error`].
    fn member(&mut self, name: &[u8], size: u64, body: &mut dyn Read) -> Result<(), CliError>;
}

/// What a walk saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkSummary {
    /// Regular members visited.
    pub members: u64,
    /// Sum of their sizes.
    pub member_bytes: u64,
    /// Bytes of the inflated tar stream.
    pub tar_bytes: u64,
    /// Payload bytes of the compressed (or raw) stream, without padding.
    pub stream_bytes: u64,
    /// Zero padding after the stream, inside `data_size`.
    pub padding_bytes: u64,
    /// Warnings raised (already printed as `warning: ...`).
    pub warnings: Vec<String>,
    /// The same warnings field by field (for bindings: code, stage, member, key path), when
    /// [`walk_keeping`] was asked to keep them.
    pub warning_records: Vec<neff::Warning>,
}

/// The rejection for a body read that failed inside member `name`. A core error already
/// names the member and the byte offset, so it is printed as it is.
pub fn body_error(name: &str, err: &io::Error) -> CliError {
    match err.get_ref().and_then(|inner| inner.downcast_ref::<neff::Error>()) {
        Some(core) => CliError::from(*core),
        None => CliError::rejected(format!("{name}: {}", crate::error::io_message(err))),
    }
}

impl From<&neff::header::NeffHeader> for HeaderView {
    fn from(h: &neff::header::NeffHeader) -> Self {
        HeaderView {
            pkg_version: h.pkg_version,
            header_size: h.header_size,
            data_size: h.data_size,
            neff_version_major: h.version_major,
            neff_version_minor: h.version_minor,
            build_version: h.build_version().to_string(),
            num_tpb: h.num_tpb,
            hash: h.hash,
            uuid: h.uuid.0,
            name: h.name().to_string(),
            requested_tpb_count: h.requested_tpb_count,
            tpb_per_node: h.tpb_per_node,
            feature_bits: h.feature_bits,
            lnc_size: h.lnc_size,
        }
    }
}

/// A core member body as a `std::io::Read`; a core error travels inside the `io::Error`.
struct Body<'m, M>(&'m mut M);

impl<M: embedded_io::Read<Error = neff::Error>> Read for Body<'_, M> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(io::Error::other)
    }
}

/// Walks `src` (a file of `file_size` bytes): header gates, then every member to `visitor`.
pub fn walk(src: InputSource, file_size: u64, visitor: &mut dyn Visitor) -> Result<WalkSummary, CliError> {
    walk_keeping(src, file_size, visitor, false)
}

/// [`walk`], keeping each warning field by field too ([`WalkSummary::warning_records`]) when
/// `records` (bindings, which hand warnings on as objects).
pub fn walk_keeping(
    src: InputSource,
    file_size: u64,
    visitor: &mut dyn Visitor,
    records: bool,
) -> Result<WalkSummary, CliError> {
    walk_inner(src, file_size, visitor, records, None, &mut None)
}

/// [`walk`], inflating with miniz_oxide while recording inflate checkpoints into `recorder`;
/// returns each member's name and place too, in tar order, for a
/// [`crate::index::MemberIndex`].
pub fn walk_indexing(
    src: InputSource,
    file_size: u64,
    visitor: &mut dyn Visitor,
    recorder: crate::index::Recorder,
) -> Result<(WalkSummary, Vec<(String, crate::index::Place)>), CliError> {
    let mut places = Some(Vec::new());
    let summary = walk_inner(src, file_size, visitor, false, Some(recorder), &mut places)?;
    Ok((summary, places.unwrap_or_default()))
}

fn walk_inner(
    src: InputSource,
    file_size: u64,
    visitor: &mut dyn Visitor,
    records: bool,
    indexing: Option<crate::index::Recorder>,
    places: &mut Option<Vec<(String, crate::index::Place)>>,
) -> Result<WalkSummary, CliError> {
    let mut warnings = Vec::new();
    let mut warning_records = Vec::new();
    let mut sink = |w: &neff::Warning| {
        let text = w.to_string();
        print_warning(&text);
        warnings.push(text);
        if records {
            warning_records.push(*w);
        }
    };
    let inflation = match indexing {
        Some(recorder) => Inflation::Indexing {
            recorder,
            threaded: !matches!(Inflation::for_this_host(file_size), Inflation::Inline),
        },
        None => Inflation::for_this_host(file_size),
    };
    let mut archive = open_archive(src, file_size, &OpenOptions::default(), inflation, &mut sink)?;
    archive.set_raw_names(true);
    visitor.header(&HeaderView::from(archive.header()))?;
    let mut summary = WalkSummary::default();
    while let Some(mut member) = archive.next_member(&mut sink)? {
        let name = member.name_bytes().to_owned();
        let size = member.size();
        let offset = member.data_offset();
        visitor.member(&name, size, &mut Body(&mut member))?;
        if let Some(places) = places.as_mut() {
            places.push((String::from_utf8_lossy(&name).into_owned(), crate::index::Place { offset, size }));
        }
        summary.members += 1;
        summary.member_bytes += size;
    }
    let finish = archive.finish(&mut sink)?;
    summary.tar_bytes = finish.inflated_bytes;
    summary.stream_bytes = finish.compressed_bytes;
    summary.padding_bytes = finish.padding_bytes;
    summary.warnings = warnings;
    summary.warning_records = warning_records;
    Ok(summary)
}
