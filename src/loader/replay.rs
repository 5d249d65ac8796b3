//! Members read both ways, and the replay store.
//!
//! A member that nothing read so far names, and that may be a manifest, is parsed as the kind
//! its name suggests while its bytes stream to a staging region ([`Tee`]). Its bytes are also
//! kept in the lent replay store, until the chain names it: named as the kind it was read as,
//! or as a payload, the first reading stands; named as another kind, it is read again from the
//! store ([`Replayed`]). A later copy of the member takes the earlier one's place.

use core::cell::RefCell;

use embedded_io::BufRead;

use super::book::Book;
use super::chain::ChainWarning;
use super::dma::{HalNotebook, Notebook};
use super::index::{push_str, usage_code, Landing, ManifestKind, ManifestRec, PayloadRec, ReplayRec};
use super::pass::{Counting, MemberAt, MEMBER_PATH};
use super::place::hal_error;
use super::read::Reader;
use super::report::{Observer, PayloadState};
use crate::arena::NIL;
use crate::digest::Digest64;
use crate::error::{Error, ErrorKind, Stage, Warning, WarningKind, WarningSink};
use crate::hal::{AllocRequest, DeviceError, Hal, RegionId};
use crate::manifest::UsageClass;

/// A member's bytes read back from the replay store.
struct Replayed<'b>(&'b [u8]);

impl embedded_io::ErrorType for Replayed<'_> {
    type Error = Error;
}

impl embedded_io::Read for Replayed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        crate::read_buffered(self, buf)
    }
}

impl BufRead for Replayed<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        Ok(self.0)
    }

    fn consume(&mut self, amt: usize) {
        self.0 = self.0.get(amt..).unwrap_or_default();
    }
}

/// The replay store was too small for a member the chain names as another kind than it was
/// first read as.
fn replay_capacity(capacity: usize) -> ErrorKind {
    ErrorKind::Capacity(crate::error::CapacityError { limit: "REPLAY", capacity: capacity as u64 })
}

/// A member body read by the manifest parser while every byte it consumes also streams into
/// a device region (and a digest), as a payload's would.
struct Tee<'r, 'h, R: BufRead<Error = Error>, H: Hal> {
    inner: &'r mut R,
    /// The device, shared with the notebook the reader keeps pending DMA references in: each
    /// write borrows it for itself alone.
    hal: &'r RefCell<&'h mut H>,
    region: Option<RegionId>,
    /// Bytes consumed (and written) so far.
    written: u64,
    /// Borrowed, not owned: built in place in the caller's frame, not copied into the tee.
    digest: &'r mut Digest64,
    /// The first device error met while consuming (`consume` cannot return one), and where;
    /// kept small: the tee lives on the deepest path of a load.
    hal_error: Option<(crate::hal::HalError, u64)>,
    /// Asking the member again for the bytes being consumed failed (it never does: the bytes
    /// are buffered), so not all of them reached the device.
    lost_bytes: bool,
    /// The free part of the replay store, and how much of it the member filled; `overflow`
    /// once the member did not fit.
    replay: &'r mut [u8],
    kept: usize,
    overflow: bool,
}

impl<R: BufRead<Error = Error>, H: Hal> Tee<'_, '_, R, H> {
    /// Consumes the rest of the member (what the parser left, after an error or trailing data);
    /// an error reading it goes to `read`, the read's outcome. Out of line, and writing into
    /// the caller's slot rather than returning one of its own: a frame holding the tee is live
    /// under the whole parse.
    #[inline(never)]
    fn drain(&mut self, read: &mut Result<(), Error>) {
        loop {
            let n = match self.fill_buf() {
                Ok(chunk) => chunk.len(),
                Err(e) => {
                    *read = Err(e);
                    return;
                }
            };
            if n == 0 || self.hal_error.is_some() {
                return;
            }
            self.consume(n);
        }
    }
}

/// What a [`Tee`] saw, once the member is read.
struct Teed {
    /// The staging region it wrote to (none for an empty member).
    region: Option<RegionId>,
    written: u64,
    digest: u64,
    hal_error: Option<(crate::hal::HalError, u64)>,
    lost_bytes: bool,
    /// Bytes kept in the replay store, and whether the member did not fit there.
    kept: usize,
    lost: bool,
}

impl Teed {
    /// The error of the copy of `member` to the device, if it failed.
    fn error(&self, member: &str) -> Option<Error> {
        match (self.hal_error, self.lost_bytes) {
            (Some((e, offset)), _) => Some(hal_error(member, Some(offset), e)),
            (None, true) => Some(Error::in_member(Stage::Payload, member, self.written, ErrorKind::Truncated)),
            (None, false) => None,
        }
    }

    /// Whether every byte reached the device.
    fn complete(&self) -> bool {
        self.hal_error.is_none() && !self.lost_bytes
    }
}

impl<R: BufRead<Error = Error>, H: Hal> embedded_io::ErrorType for Tee<'_, '_, R, H> {
    type Error = Error;
}

impl<R: BufRead<Error = Error>, H: Hal> embedded_io::Read for Tee<'_, '_, R, H> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        crate::read_buffered(self, buf)
    }
}

impl<R: BufRead<Error = Error>, H: Hal> BufRead for Tee<'_, '_, R, H> {
    #[inline]
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // The bytes being consumed are the front of the chunk `fill_buf` returned; asking for
        // it again reads nothing new.
        match self.inner.fill_buf() {
            Ok(chunk) => {
                let bytes = chunk.get(..amt).unwrap_or(chunk);
                if let (Some(region), None) = (self.region, self.hal_error) {
                    let written = match self.hal.try_borrow_mut() {
                        Ok(mut hal) => hal.write(region, self.written, bytes).map_err(|e| e.kind()),
                        Err(_) => Err(crate::hal::HalError::NotebookBusy),
                    };
                    if let Err(e) = written {
                        self.hal_error = Some((e, self.written));
                    }
                }
                self.digest.update(bytes);
                self.written = self.written.saturating_add(bytes.len() as u64);
                let end = self.kept.checked_add(bytes.len()).filter(|_| !self.overflow);
                match end.and_then(|end| self.replay.get_mut(self.kept..end)) {
                    Some(dst) => {
                        dst.copy_from_slice(bytes);
                        self.kept = self.kept.saturating_add(bytes.len());
                    }
                    None => self.overflow = true,
                }
            }
            Err(_) => self.lost_bytes = true,
        }
        self.inner.consume(amt);
    }
}

/// The lent replay store: the bytes of members read before anything named them, kept to
/// read them again if the chain names them as another kind ([`Storage::replay`](super::Storage)).
pub(super) struct Replays<'a> {
    replay: &'a mut [u8],
    /// Bytes of `replay` in use.
    replay_used: usize,
    /// The most bytes of `replay` in use at once.
    replay_peak: usize,
    /// Staged copies of members read both ways that still hold a device region.
    either_staged: u32,
}

impl<'a> Replays<'a> {
    /// An empty store over `replay`.
    pub(super) fn new(replay: &'a mut [u8]) -> Self {
        Self { replay, replay_used: 0, replay_peak: 0, either_staged: 0 }
    }

    /// Empties the store for a new load.
    pub(super) fn reset(&mut self) {
        (self.replay_used, self.replay_peak, self.either_staged) = (0, 0, 0);
    }

    /// The most bytes in use at once in the last load.
    pub(super) fn peak(&self) -> usize {
        self.replay_peak
    }
}

impl Replays<'_> {
    /// Settles each member waiting in the replay store that the manifests read so far name:
    /// named as the kind it was read as, or as a payload, its first reading stands; named as
    /// another kind, it is read again as that kind. Either way its bytes leave the store.
    /// Repeats while a new reading names more.
    #[inline]
    pub(super) fn settle_replays<S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        reader: &mut Reader<'_>,
        nb: &mut dyn Notebook,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        if book.index.replays.is_empty() {
            return Ok(());
        }
        self.settle_waiting(book, reader, nb, observer, sink)
    }

    /// [`Self::settle_replays`] with members waiting.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn settle_waiting<S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        reader: &mut Reader<'_>,
        nb: &mut dyn Notebook,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        loop {
            let mut again = false;
            let mut dropped = false;
            let mut pos = book.index.replays.first();
            while pos != NIL {
                let next = crate::arena::List::<ReplayRec>::next_after(&book.arena, pos);
                let rec = book.index.replays.get(&book.arena, pos);
                let mut name: heapless::String<MEMBER_PATH> = heapless::String::new();
                let _ = name.push_str(book.arena.str(rec.member));
                let named = book.index.named_as(&book.arena, &name);
                if named.is_none() && book.role_of(&name).is_none() {
                    pos = next;
                    continue;
                }
                if let Some(kind) = named.filter(|k| *k != rec.kind) {
                    self.reread(book, reader, &rec, kind, &name, nb, observer, sink)?;
                    again = true;
                }
                // Its bytes stay where they are (a later reread reads the others in place)
                // until the pass is over: then the gaps close at once.
                book.index.replays.unlink(&mut book.arena, pos);
                dropped = true;
                pos = next;
            }
            if dropped {
                self.compact(book);
            }
            if !again {
                return Ok(());
            }
        }
    }

    /// Reads a member again from the replay store as `kind` (or, when its bytes did not fit,
    /// records that reading as failed for want of room).
    #[allow(clippy::too_many_arguments)] // the book and reader it works on, then the read's own
    fn reread<S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        reader: &mut Reader<'_>,
        rec: &ReplayRec,
        kind: ManifestKind,
        name: &str,
        nb: &mut dyn Notebook,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        if rec.lost {
            let stage = kind.stage();
            let e = Error::about_member(stage, name, replay_capacity(self.replay.len()));
            book.supersede(name);
            let member = push_str(&mut book.arena, name, stage, name)?;
            let mut failed = ManifestRec::new(member, kind);
            failed.failed = Some(book.deferred.keep(e));
            book.index.manifests.push(&mut book.arena, &failed).map_err(|k| Error::about_member(stage, name, k))?;
            return Ok(());
        }
        let replay = core::mem::take(&mut self.replay);
        let start = usize::try_from(rec.at).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(rec.len).unwrap_or(usize::MAX));
        let mut body = Replayed(replay.get(start..end).unwrap_or_default());
        let read = reader.read_manifest_as(book, kind, name, &mut body, true, nb, observer, sink);
        self.replay = replay;
        read
    }

    /// Removes a member from the replay store, closing the gap its bytes leave.
    fn drop_replay(&mut self, book: &mut Book<'_>, pos: u32) {
        book.index.replays.unlink(&mut book.arena, pos);
        self.compact(book);
    }

    /// Closes the gaps that members gone from the replay store left: the bytes of each member
    /// still waiting move down, in store order (the list's), once. Settling several members
    /// at once (`def.json` names the engine JSONs that came before it: megabytes) moves each
    /// byte that stays once, not once per member settled before it.
    fn compact(&mut self, book: &mut Book<'_>) {
        let mut write = 0usize;
        let mut p = book.index.replays.first();
        while p != NIL {
            let next = crate::arena::List::<ReplayRec>::next_after(&book.arena, p);
            let mut rec = book.index.replays.get(&book.arena, p);
            // A member that did not fit has no bytes here.
            let (at, len) = (usize::try_from(rec.at).unwrap_or(usize::MAX), usize::try_from(rec.len).unwrap_or(0));
            if !rec.lost && len != 0 {
                // At or after `write` (the store's order); the bytes of `at..at + len` go to
                // `write`.
                if let Some(span) = at.checked_add(len).and_then(|end| self.replay.get_mut(write..end)) {
                    crate::arena::move_down(span, at.saturating_sub(write));
                }
                rec.at = u32::try_from(write).unwrap_or(u32::MAX);
                book.index.replays.set(&mut book.arena, p, &rec);
                write = write.saturating_add(len);
            }
            p = next;
        }
        self.replay_used = write;
    }

    /// Releases the staged copy of each member read both ways that a manifest now names as a
    /// manifest: the device holds those bytes only while the member's kind is open.
    pub(super) fn release_manifest_copies<H: Hal>(&mut self, book: &mut Book<'_>, hal: &mut H) -> Result<(), Error> {
        if self.either_staged == 0 {
            return Ok(());
        }
        let mut pos = book.index.payloads.first();
        while pos != NIL {
            let next = crate::arena::List::<PayloadRec>::next_after(&book.arena, pos);
            let p = book.index.payloads.get(&book.arena, pos);
            let member = book.arena.str(p.member);
            // Kept: not released.
            if p.quiet && p.kept && book.index.named_as(&book.arena, member).is_some() {
                let landing = book.index.landings.get(hal, &book.arena, p.landed);
                let region = landing.map_err(|k| Error::about_member(Stage::Hal, member, k))?.region;
                if region != NIL {
                    hal.release(RegionId(region)).map_err(|e| hal_error(member, None, e))?;
                    // A manifest now, never a payload to place or report: its record and its
                    // landing leave for good.
                    book.index.drop_payload(&mut book.arena, pos);
                    let forgotten = book.index.landings.forget(hal, &mut book.arena, p.landed);
                    forgotten.map_err(|k| Error::about_member(Stage::Hal, book.arena.str(p.member), k))?;
                    self.either_staged = self.either_staged.saturating_sub(1);
                }
            }
            pos = next;
        }
        Ok(())
    }

    /// Reads a member nothing names yet both ways at once: as a manifest of `kind`, while
    /// every byte the parser consumes (and the rest after it) streams into a staging region,
    /// as a payload met before its `def.json` would.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // the book and reader it works on, then the read's own
    pub(super) fn read_either<B: BufRead<Error = Error>, H: Hal, S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        reader: &mut Reader<'_>,
        kind: ManifestKind,
        at: MemberAt<'_>,
        body: &mut B,
        hal: &mut H,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        let region = self.open_either(book, at.name, at.len, hal, sink)?;
        // The replay store is lent to the tee while the loader reads the member.
        let replay = core::mem::take(&mut self.replay);
        let window = replay.get_mut(self.replay_used..).unwrap_or_default();
        let mut digest = Digest64::new();
        let device = RefCell::new(&mut *hal);
        let mut tee = Tee {
            inner: body,
            hal: &device,
            region,
            written: 0,
            digest: &mut digest,
            hal_error: None,
            lost_bytes: false,
            replay: window,
            kept: 0,
            overflow: false,
        };
        let mut notebook = HalNotebook(&device);
        let mut read = reader.read_manifest(book, kind, at.name, &mut tee, &mut notebook, observer, sink);
        if read.is_ok() {
            tee.drain(&mut read);
        }
        let teed = Teed {
            region,
            written: tee.written,
            digest: tee.digest.finish(),
            hal_error: tee.hal_error,
            lost_bytes: tee.lost_bytes,
            kept: tee.kept,
            lost: tee.overflow,
        };
        self.replay = replay;
        // One slot for the outcome, settled in place and returned as it is.
        self.close_either(book, kind, at, &mut read, &teed, hal);
        read
    }

    /// The start of a member read both ways: releases an earlier copy (with a warning) and
    /// allocates the staging region. A frame of its own, as [`Self::close_either`] is: their
    /// locals would otherwise stay reserved in [`Self::read_either`]'s frame under the parse.
    #[inline(never)]
    fn open_either<H: Hal, S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        name: &str,
        member_len: u64,
        hal: &mut H,
        sink: &mut Counting<'_, S>,
    ) -> Result<Option<RegionId>, Error> {
        if book.release_earlier(name, hal)? {
            sink.warn(&Warning::about_member(Stage::Payload, name, WarningKind::Chain(ChainWarning::DuplicateMember)));
        }
        match member_len {
            0 => Ok(None),
            size => {
                let req = AllocRequest { size, ..AllocRequest::staging(size, 0) };
                Ok(Some(hal.alloc(&req).map_err(|e| hal_error(name, None, e))?))
            }
        }
    }

    /// The end of a member read both ways (`read`: the manifest read's outcome; `teed`: what
    /// the tee saw): keeps its bytes for a second reading when they fit, and records its
    /// staged copy as a payload that nothing names yet.
    #[inline(never)]
    fn close_either<H: Hal>(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        at: MemberAt<'_>,
        read: &mut Result<(), Error>,
        teed: &Teed,
        hal: &mut H,
    ) {
        let outcome = core::mem::replace(read, Ok(()));
        *read = self.settle_either(book, kind, at, outcome, teed, hal);
    }

    /// [`Self::close_either`], with the read's outcome by value.
    fn settle_either<H: Hal>(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        at: MemberAt<'_>,
        read: Result<(), Error>,
        teed: &Teed,
        hal: &mut H,
    ) -> Result<(), Error> {
        let MemberAt { name, seq, .. } = at;
        let region = teed.region;
        // A later copy of the member wins: an earlier one waiting in the store is never read
        // again, and left there it would be asked after at every manifest that follows.
        let earlier = book.index.replays.iter(&book.arena).find(|(_, r)| book.arena.eq(r.member, name));
        if let Some((pos, _)) = earlier {
            self.drop_replay(book, pos);
        }
        let fail = |k: ErrorKind| Error::about_member(Stage::Payload, name, k);
        let (written, digest, kept, lost) = (teed.written, teed.digest, teed.kept, teed.lost);
        // Kept for a second reading when it fit (a member that did not, or a loader lent no
        // replay store, has only its first: named as another kind, the binder refuses it).
        let member = book.index.manifest(&book.arena, name).map(|(_, r)| r.member);
        if let (true, true, false, Some(member)) = (read.is_ok(), teed.complete(), lost, member) {
            let fail = |k: ErrorKind| Error::about_member(kind.stage(), name, k);
            let at = u32::try_from(self.replay_used).map_err(|_| fail(replay_capacity(self.replay.len())))?;
            let len = u32::try_from(kept).map_err(|_| fail(replay_capacity(self.replay.len())))?;
            book.index.replays.push(&mut book.arena, &ReplayRec { member, kind, at, len, lost }).map_err(fail)?;
            self.replay_used = self.replay_used.saturating_add(kept);
            self.replay_peak = self.replay_peak.max(self.replay_used);
        }
        let release = |hal: &mut H| {
            if let Some(r) = region {
                let _ = hal.release(r);
            }
        };
        if let Err(e) = read.and(teed.error(name).map_or(Ok(()), Err)) {
            release(hal);
            return Err(e);
        }
        let keeps = !hal.keeps_nothing();
        let state = if keeps { PayloadState::Staged } else { PayloadState::Checked };
        let landing = Landing {
            seq,
            state: state.code(),
            usage: usage_code(UsageClass::Generic),
            core: u8::MAX,
            region: region.filter(|_| keeps).map_or(NIL, |r| r.0),
            len: written,
            header_len: 0,
            digest,
        };
        // The manifest record's copy of the name serves the payload record too.
        let stored = match member {
            Some(member) => Ok(member),
            None => book.arena.push_str(name),
        }
        .and_then(|member| {
            let landed = book.index.landings.keep(hal, &mut book.arena, &landing)?;
            let rec = PayloadRec { member, landed, kept: landing.is_kept(), quiet: true, failed: None };
            book.index.push_payload(&mut book.arena, &rec)
        });
        if let Err(k) = stored {
            release(hal);
            return Err(fail(k));
        }
        if landing.region != NIL {
            self.either_staged = self.either_staged.saturating_add(1);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::panic)]
mod tests {
    use super::*;
    use crate::digest::digest64;
    use crate::manifest::Arch;
    use crate::sim::SimDevice;

    extern crate std;
    use std::vec::Vec;

    type Chunked<'a> = crate::testutil::Chunked<'a, Error>;

    /// A tee over `src` into `region` of `dev`, with `store` as the free part of the replay store.
    fn tee<'r, 'd, 'h, H: Hal>(
        src: &'r mut Chunked<'d>,
        dev: &'r RefCell<&'h mut H>,
        region: RegionId,
        digest: &'r mut Digest64,
        store: &'r mut [u8],
    ) -> Tee<'r, 'h, Chunked<'d>, H> {
        Tee {
            inner: src,
            hal: dev,
            region: Some(region),
            written: 0,
            digest,
            hal_error: None,
            lost_bytes: false,
            replay: store,
            kept: 0,
            overflow: false,
        }
    }

    fn body() -> Vec<u8> {
        (0..700u32).map(|i| (i * 13 % 251) as u8).collect()
    }

    /// Reads all of `tee` the way the parser does (whatever it asks at a time), then drains.
    fn read_through<R: BufRead<Error = Error>, H: Hal>(tee: &mut Tee<'_, '_, R, H>, step: usize) -> Result<(), Error> {
        let mut seen = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            let want = step.min(buf.len());
            let n = embedded_io::Read::read(tee, &mut buf[..want])?;
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if seen.len() >= 300 {
                // The parser stops early (a document ends before the member does): the drain
                // takes the rest.
                break;
            }
        }
        let mut read = Ok(());
        tee.drain(&mut read);
        read
    }

    #[test]
    fn the_tee_sends_every_byte_to_the_device_the_digest_and_the_store_in_any_chunking() {
        let data = body();
        for (chunk, step) in [(1, 1), (7, 64), (4096, 5), (4096, 64)] {
            let mut mem = [0u8; 4096];
            let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
            let region = dev.alloc(&AllocRequest::staging(data.len() as u64, 0)).unwrap();
            let mut src = Chunked::new(&data, chunk);
            let mut digest = Digest64::new();
            let mut store = [0u8; 1024];
            let device = RefCell::new(&mut dev);
            let mut tee = tee(&mut src, &device, region, &mut digest, &mut store);
            read_through(&mut tee, step).unwrap();
            let (written, kept, overflow) = (tee.written, tee.kept, tee.overflow);
            assert_eq!((written, kept, overflow), (700, 700, false), "chunk {chunk}, step {step}");
            assert_eq!(digest.finish(), digest64(&data));
            assert_eq!(&store[..700], &data[..]);
            assert_eq!(dev.contents(region).unwrap(), &data[..]);
        }
    }

    #[test]
    fn a_member_longer_than_the_store_is_marked_and_still_reaches_the_device() {
        let data = body();
        let mut mem = [0u8; 4096];
        let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
        let region = dev.alloc(&AllocRequest::staging(data.len() as u64, 0)).unwrap();
        let mut src = Chunked::new(&data, 100);
        let mut digest = Digest64::new();
        let mut store = [0u8; 650];
        let device = RefCell::new(&mut dev);
        let mut tee = tee(&mut src, &device, region, &mut digest, &mut store);
        read_through(&mut tee, 64).unwrap();
        // What fit stays (whole consumes, in order: 64 then 36 bytes of each 100-byte chunk),
        // the rest is marked lost; nothing is kept after the first consume that did not fit.
        assert!(tee.overflow);
        let kept = tee.kept;
        assert_eq!(kept, 620);
        assert_eq!(tee.written, 700);
        assert_eq!(&store[..kept], &data[..kept]);
        assert_eq!(dev.contents(region).unwrap(), &data[..]);
    }

    #[test]
    fn a_device_error_is_kept_with_its_offset_and_ends_the_drain() {
        let data = body();
        let mut mem = [0u8; 4096];
        let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
        // A region shorter than the member: the write past its end fails.
        let region = dev.alloc(&AllocRequest::staging(256, 0)).unwrap();
        let mut src = Chunked::new(&data, 128);
        let mut digest = Digest64::new();
        let mut store = [0u8; 1024];
        let device = RefCell::new(&mut dev);
        let mut tee = tee(&mut src, &device, region, &mut digest, &mut store);
        let mut read = Ok(());
        tee.drain(&mut read);
        read.unwrap();
        let teed = Teed {
            region: Some(region),
            written: tee.written,
            digest: 0,
            hal_error: tee.hal_error,
            lost_bytes: tee.lost_bytes,
            kept: tee.kept,
            lost: tee.overflow,
        };
        assert!(!teed.complete());
        let e = teed.error("sg00/x.json").unwrap();
        assert_eq!((e.stage, e.member.as_str(), e.offset), (Stage::Hal, "sg00/x.json", 256), "{e:?}");
        // The drain stopped at the error: the member was not read to its end.
        assert!(teed.written < 700);
    }

    #[test]
    fn replayed_bytes_read_back_as_they_were_kept() {
        let data = body();
        let mut replayed = Replayed(&data);
        let mut out = Vec::new();
        let mut buf = [0u8; 33];
        loop {
            let n = embedded_io::Read::read(&mut replayed, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, data);
        let mut replayed = Replayed(&data[..10]);
        replayed.consume(20);
        assert_eq!(replayed.fill_buf().unwrap(), &[] as &[u8], "consuming past the end leaves nothing, no panic");
    }

    #[test]
    fn the_replay_store_limit_is_named() {
        match replay_capacity(4096) {
            ErrorKind::Capacity(c) => assert_eq!((c.limit, c.capacity), ("REPLAY", 4096)),
            other => panic!("expected a capacity error, got {other:?}"),
        }
    }
}
