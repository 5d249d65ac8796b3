//! The pass over the members: each one is a manifest, a payload, or skipped.
//!
//! What a member is comes from the manifest that names it: `neff.json` is found by its name
//! (the runtime looks it up so), a KELF by `attrs.kelf`, a definition by `graphs[].definition`,
//! an engine or activation-set JSON by a `def.json` engine key or `activation_function_sets`,
//! a payload by the key that names it (a weight's `file_name`, an `instr`, a table), whatever
//! its suffix. The tar order is not the chain order (real NEFFs put `neff.json` last), so a
//! member nothing read so far names, and that may be a manifest (a `.json` name, or a body that
//! opens a JSON object), is read both ways at once: parsed as the manifest its name suggests (a
//! root member as a KELF, `*/def.json` as a definition, any other as an engine JSON), while its
//! bytes stream to a staging region as a payload's would. The chain then takes whichever it
//! names; an error of the manifest read is kept until the chain reaches it. Debug members are
//! never read (unless the chain names them, or they open a JSON object), and known producer metadata (`info.json`, ...) is staged as a payload, not parsed.

use embedded_io::BufRead;

use super::book::Book;
use super::index::dir_of;
use super::{Counting, Loader, ManifestKind, MemberAt, Observer};
use crate::archive::Archive;
use crate::error::{Error, WarningSink};
use crate::hal::Hal;
use core::cell::RefCell;

use super::dma::HalNotebook;

use super::report::{LoadReport, MemberReport, Shared};

/// Producer metadata at the root or in a subgraph directory that no runtime path reads.
const METADATA_NAMES: [&str; 8] = [
    "info.json",
    "hlo_stats.json",
    "metrics.json",
    "hlo_metrics.json",
    "global_metric_store.json",
    "kernel_debug_info.json",
    "loop.json",
    "tensor_map.json",
];

/// What the walk does with a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// Debug data nothing names, which opens no JSON object: skipped, never read.
    Debug,
    /// Named as a manifest of this kind (or `neff.json`).
    Manifest(ManifestKind),
    /// Named as a payload, or not JSON: streamed to the device.
    Payload,
    /// Producer metadata nothing names yet (`info.json`, ...): streamed to the device as a
    /// payload met before its `def.json` would be, and released without a warning if nothing
    /// names it (a weight may bear such a name: §15.18).
    Metadata,
    /// Nothing names it yet and it may be a manifest: read as one of this kind (its name's
    /// suggestion) while its bytes stream to the device as a payload would, so that the chain
    /// can later name it either way (§15.18: the naming key decides, not the suffix).
    Either(ManifestKind),
}

/// A debug data name (`debug_info/…`, `*.dbg`, `*.asm`): such a member is never read
/// (§15.18) unless the chain names it ([`Route::Debug`]).
pub(super) fn is_debug(name: &str) -> bool {
    let dir = dir_of(name);
    let file = name.get(dir.len()..).unwrap_or(name).trim_start_matches('/');
    dir == "debug_info"
        || dir.starts_with("debug_info/")
        || file.ends_with(".dbg")
        || file.as_bytes().windows(5).any(|w| w == b".dbg_")
        || file.ends_with(".asm")
        || file.ends_with("_dbg")
}

/// The kind a JSON member's name suggests, for a speculative read.
fn guess(name: &str) -> ManifestKind {
    let dir = dir_of(name);
    if dir.is_empty() {
        ManifestKind::Kelf
    } else if name.get(dir.len()..) == Some("/def.json") {
        ManifestKind::Def
    } else {
        ManifestKind::Engine
    }
}

/// A member's body, whose bytes are shown to the observer as they are consumed when it asked
/// for them ([`Observer::member`]).
struct Watched<'c, B, O: ?Sized> {
    body: B,
    observer: Option<&'c RefCell<O>>,
}

impl<B: BufRead<Error = Error>, O: Observer + ?Sized> Watched<'_, B, O> {
    /// Reads the rest of the body.
    fn drain(&mut self) -> Result<(), Error> {
        loop {
            let n = self.fill_buf()?.len();
            if n == 0 {
                return Ok(());
            }
            self.consume(n);
        }
    }
}

impl<B: BufRead<Error = Error>, O: ?Sized> embedded_io::ErrorType for Watched<'_, B, O> {
    type Error = Error;
}

impl<B: BufRead<Error = Error>, O: Observer + ?Sized> BufRead for Watched<'_, B, O> {
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        self.body.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if let Some(observer) = self.observer {
            // The bytes consumed are the front of what `fill_buf` returned: asking again
            // returns them without reading.
            if let (Ok(bytes), Ok(mut observer)) = (self.body.fill_buf(), observer.try_borrow_mut()) {
                observer.member_bytes(bytes.get(..amt).unwrap_or(bytes));
            }
        }
        self.body.consume(amt);
    }
}

impl<B: BufRead<Error = Error>, O: Observer + ?Sized> embedded_io::Read for Watched<'_, B, O> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        crate::read_buffered(self, buf)
    }
}

/// Whether a member's first bytes, past whitespace, open a JSON object. Looks at the first
/// chunk only and consumes nothing.
fn starts_object<R: BufRead<Error = Error>>(body: &mut R) -> Result<bool, Error> {
    let chunk = body.fill_buf()?;
    Ok(chunk.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) == Some(&b'{'))
}

impl Loader<'_> {
    /// The pass over the members.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    pub(super) fn walk<R: BufRead, H: Hal, S: WarningSink>(
        &mut self,
        archive: &mut Archive<R>,
        hal: &mut H,
        report: &mut LoadReport,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        // Shared between the member's reader (its bytes, when the observer asks for them)
        // and the manifest reads (their entries).
        let Loader { reader, book, replays } = self;
        let observer = RefCell::new(observer);
        let mut shared = Shared(&observer);
        while let Some(member) = archive.next_member(sink)? {
            // Borrowed from the walker, not copied: a copy (`MEMBER_PATH`, 1 KiB on a
            // controller) would sit in this frame under every member's read.
            let name = member.name();
            let size = member.size();
            let seen = MemberReport {
                name,
                typeflag: member.typeflag(),
                size,
                header_offset: member.header_offset(),
                data_offset: member.data_offset(),
            };
            let watched = shared.member(&seen);
            let mut member = Watched { body: member, observer: watched.then_some(&observer) };
            let starts_object = starts_object(&mut member)?;
            match route(book, name, starts_object) {
                Route::Debug => {}
                Route::Manifest(kind) => {
                    report.manifests = report.manifests.saturating_add(1);
                    let device = RefCell::new(&mut *hal);
                    let mut notebook = HalNotebook(&device);
                    reader.read_manifest(book, kind, name, &mut member, &mut notebook, &mut shared, sink)?;
                    replays.settle_replays(book, reader, &mut notebook, &mut shared, sink)?;
                    replays.release_manifest_copies(book, hal)?;
                }
                Route::Payload => {
                    report.payloads = report.payloads.saturating_add(1);
                    let at = MemberAt { name, len: size, seq: report.payloads };
                    book.read_payload(at, false, &mut member, hal, sink)?;
                }
                Route::Metadata => {
                    // Counted as a payload only if the chain makes it one (as a member read
                    // both ways): its sequence number is the next one.
                    let seq = report.payloads.saturating_add(1);
                    book.read_payload(MemberAt { name, len: size, seq }, true, &mut member, hal, sink)?;
                }
                Route::Either(kind) => {
                    report.manifests = report.manifests.saturating_add(1);
                    // Its payload sequence number is the next one; it counts as a payload only
                    // if the chain gives it a payload role (the report counts what it places).
                    let seq = report.payloads.saturating_add(1);
                    replays.read_either(
                        book,
                        reader,
                        kind,
                        MemberAt { name, len: size, seq },
                        &mut member,
                        hal,
                        &mut shared,
                        sink,
                    )?;
                    replays.settle_replays(
                        book,
                        reader,
                        &mut HalNotebook(&RefCell::new(&mut *hal)),
                        &mut shared,
                        sink,
                    )?;
                    replays.release_manifest_copies(book, hal)?;
                }
            }
            if watched {
                // What the route left unread (all of a skipped member) streams past the
                // observer too, so it sees the whole body.
                member.drain()?;
                shared.member_end();
            }
        }
        Ok(())
    }
}

/// What a member is: what the manifests read so far name it as, else what it may be.
/// `starts_object`: its first bytes open a JSON object (every manifest is one).
fn route(book: &Book<'_>, name: &str, starts_object: bool) -> Route {
    if name == "neff.json" || name == "kelp.json" {
        return Route::Manifest(ManifestKind::Neff);
    }
    if let Some(kind) = book.index.named_as(&book.arena, name) {
        return Route::Manifest(kind);
    }
    let json_name = name.ends_with(".json");
    // Debug data is never read (§15.18), but what the chain names is never debug data: a
    // member named so far is read whatever its name, and one that opens a JSON object is
    // read both ways, as the manifest the chain may name later.
    if !json_name && !starts_object {
        return if is_debug(name) && book.role_of(name).is_none() { Route::Debug } else { Route::Payload };
    }
    if book.role_of(name).is_some() {
        return Route::Payload;
    }
    if !starts_object && is_debug(name) {
        return Route::Debug;
    }
    let file = name.get(dir_of(name).len()..).unwrap_or(name).trim_start_matches('/');
    if json_name && METADATA_NAMES.contains(&file) {
        return Route::Metadata;
    }
    Route::Either(guess(name))
}
