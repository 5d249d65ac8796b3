//! Placing payloads: streaming a member onto the device as it passes, and the role that
//! decides where it goes.
//!
//! A payload is written chunk by chunk from the inflate window straight into a device region:
//! the host never holds a member whole. A `.npy` member's header is parsed in-stream and only
//! the array data lands on the device. The loader computes its own digest of the bytes it sent,
//! so the load report does not depend on what the device keeps. When the manifests read so far
//! give the payload a role (a weight, an instruction stream, a table), it goes straight into
//! its final region; otherwise it is staged, and the binder adopts it once the chain is known.

use embedded_io::BufRead;

use super::book::Book;
use super::index::{usage_code, Landing, PayloadRec, VarState, INSTR_ALIGN};
use super::pass::{Counting, MemberAt};
use super::report::PayloadState;
use crate::arena::NIL;
use crate::digest::Digest64;
use crate::error::{Error, ErrorKind, Stage, Warning, WarningKind, WarningSink};
use crate::hal::{AllocRequest, Hal, RegionId};
use crate::manifest::UsageClass;
use crate::npy::{NpyError, NpyFeed, NpyParser};

impl Book<'_> {
    /// Streams one payload member: into its final region when its role is known, else staged
    /// (`quiet`: producer metadata, released without a warning if nothing names it).
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    pub(super) fn read_payload<B: BufRead<Error = Error>, H: Hal, S: WarningSink>(
        &mut self,
        at: MemberAt<'_>,
        quiet: bool,
        body: &mut B,
        hal: &mut H,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        self.open_payload(at.name, hal, sink)?;
        let role = self.role_of(at.name);
        let req = match role {
            Some(r) => AllocRequest { size: 0, align: r.align, usage: r.usage, core: r.core },
            None => AllocRequest { size: 0, align: INSTR_ALIGN, usage: UsageClass::Generic, core: 0 },
        };
        let placed = stream_to_device(hal, body, at.name, at.len, req);
        self.close_payload(at, quiet, role, placed, hal)
    }

    /// Before a payload streams: releases an earlier copy of `name` (last wins, as the
    /// runtime's member map does), with a warning. A frame of its own, as
    /// [`Self::close_payload`] is: their locals would otherwise stay reserved in
    /// [`Self::read_payload`]'s frame while the member streams.
    #[inline(never)]
    fn open_payload<H: Hal, S: WarningSink>(
        &mut self,
        name: &str,
        hal: &mut H,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        if self.release_earlier(name, hal)? {
            // About the member as a whole: no byte of it is wrong.
            let duplicate = WarningKind::Chain(super::chain::ChainWarning::DuplicateMember);
            sink.warn(&Warning::about_member(Stage::Payload, name, duplicate));
        }
        Ok(())
    }

    /// After a payload streamed (`placed`, for the `role` it had): records its landing, in its
    /// file variable or as a payload of its own.
    #[inline(never)]
    fn close_payload<H: Hal>(
        &mut self,
        at: MemberAt<'_>,
        quiet: bool,
        role: Option<super::index::Role>,
        placed: Result<Placed, Error>,
        hal: &mut H,
    ) -> Result<(), Error> {
        let MemberAt { name, len: member_len, seq } = at;
        let fail = |k: ErrorKind| Error::about_member(Stage::Payload, name, k);
        let placed = match placed {
            Ok(placed) => placed,
            // A `.npy` nothing has named yet may be a member no manifest ever reaches (§15.18):
            // its error waits for the chain, as a speculative manifest read's does.
            Err(e) if role.is_none() && matches!(e.kind, ErrorKind::Npy(_)) => {
                let failed = Some(self.deferred.keep(e));
                let member = self.arena.push_str(name).map_err(fail)?;
                let landing = Landing { seq, ..Landing::NONE };
                let landed = self.index.landings.keep(hal, &mut self.arena, &landing).map_err(fail)?;
                let rec = PayloadRec { member, landed, kept: false, quiet, failed };
                self.index.push_payload(&mut self.arena, &rec).map_err(fail)?;
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let state = match (hal.keeps_nothing(), role) {
            (true, _) => PayloadState::Checked,
            (false, Some(_)) => PayloadState::Placed,
            (false, None) => PayloadState::Staged,
        };
        let region = if hal.keeps_nothing() { None } else { placed.region };
        let release = |hal: &mut H| {
            if let Some(r) = region {
                let _ = hal.release(r);
            }
        };
        // A `.npy` header is at most 12 + 256 bytes (the parser's capacity bounds it).
        let Ok(header_len) = u16::try_from(member_len.saturating_sub(placed.len)) else {
            release(hal);
            return Err(fail(ErrorKind::Npy(NpyError::Truncated { needed: placed.len, got: member_len })));
        };
        let landing = Landing {
            seq,
            state: state.code(),
            usage: usage_code(role.map_or(UsageClass::Generic, |r| r.usage)),
            core: role.map_or(u8::MAX, |r| r.core),
            region: region.map_or(NIL, |r| r.0),
            len: placed.len,
            header_len,
            digest: placed.digest,
        };
        // A weight lands in its variable, unless it has not the declared size: then it is kept
        // as any other payload, with both sizes, for the binder to refuse.
        let var = role.filter(|r| r.expect_len.is_none_or(|len| len == placed.len)).and_then(|r| r.var);
        if let Some(var) = var {
            let mut rec = self.index.var(&self.arena, var);
            // A new slot: an earlier copy's was given back (`release_earlier`).
            if let Err(k) = self.index.landings.keep(hal, &mut self.arena, &landing).map(|slot| rec.landed = slot) {
                release(hal);
                return Err(fail(k));
            }
            rec.kept = landing.is_kept();
            self.index.set_var(&mut self.arena, var, &rec);
            return Ok(());
        }
        // Refuse before keeping a region the index cannot list: it would leak.
        let kept = landing.is_kept();
        let stored = self.index.landings.keep(hal, &mut self.arena, &landing).and_then(|landed| {
            let member = self.arena.push_str(name)?;
            let rec = PayloadRec { member, landed, kept, quiet, failed: None };
            self.index.push_payload(&mut self.arena, &rec)
        });
        if let Err(k) = stored {
            release(hal);
            return Err(fail(k));
        }
        Ok(())
    }

    /// Releases the region of the landing in `slot` (of member `name`) and gives the slot back:
    /// its record leaves, or forgets it.
    fn let_go<H: Hal>(&mut self, hal: &mut H, slot: u32, name: &str) -> Result<(), Error> {
        let fail = |k| Error::about_member(Stage::Hal, name, k);
        let landing = self.index.landings.get(hal, &self.arena, slot).map_err(fail)?;
        if landing.region != NIL {
            hal.release(RegionId(landing.region)).map_err(|e| hal_error(name, None, e))?;
        }
        self.index.landings.forget(hal, &mut self.arena, slot).map_err(fail)
    }

    /// Releases an earlier copy of member `name`, if one landed; true if there was one.
    pub(super) fn release_earlier<H: Hal>(&mut self, name: &str, hal: &mut H) -> Result<bool, Error> {
        let earlier = self.index.payload_named(&self.arena, name);
        if let Some((pos, old)) = earlier {
            self.let_go(hal, old.landed, name)?;
            // Out of the list for good: the new copy is the member now.
            self.index.drop_payload(&mut self.arena, pos);
            return Ok(true);
        }
        let landed = self.index.var_named(&self.arena, name, VarState::Landed);
        if let Some((ext_pos, mut ext, pos, mut var)) = landed {
            // The file variable waits for the new copy, which takes its place; one of a
            // replaced def.json waits for nothing and leaves the list.
            self.let_go(hal, var.landed, name)?;
            (var.landed, var.kept) = (NIL, false);
            self.index.set_var(&mut self.arena, pos, &var);
            if self.index.manifests.get(&self.arena, ext.def).superseded {
                ext.vars.unlink(&mut self.arena, pos);
                self.index.def_exts.set(&mut self.arena, ext_pos, &ext);
            }
            return Ok(true);
        }
        Ok(false)
    }
}

/// A payload that reached the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Placed {
    /// The region holding the bytes; `None` for an empty payload (devices refuse empty regions).
    pub region: Option<RegionId>,
    /// Bytes written to the device (for `.npy`, the array data only).
    pub len: u64,
    /// [`digest64`](crate::digest::digest64) of the bytes written.
    pub digest: u64,
    /// For a `.npy` member, the array data size its header declares (equal to `len`).
    pub npy_data_len: Option<u64>,
}

/// True when a member name is a NumPy array file, whose header is stripped on the way in.
pub fn is_npy(name: &str) -> bool {
    name.ends_with(".npy")
}

/// Streams `body` (a member of `member_len` bytes) into a new region allocated with `req`
/// (whose size is replaced by the number of bytes that will land).
pub fn stream_to_device<H: Hal, R: BufRead<Error = Error>>(
    hal: &mut H,
    body: &mut R,
    member: &str,
    member_len: u64,
    mut req: AllocRequest,
) -> Result<Placed, Error> {
    let npy = if is_npy(member) { Some(npy_data_len(body, member, member_len)?) } else { None };
    let data_len = match npy {
        Some((declared, header_len)) => {
            let available = member_len.saturating_sub(header_len);
            if declared != available {
                return Err(npy_error(
                    member,
                    header_len,
                    NpyError::Truncated { needed: header_len.saturating_add(declared), got: member_len },
                ));
            }
            declared
        }
        None => member_len,
    };
    let npy_data_len = npy.map(|_| data_len);
    if data_len == 0 {
        return Ok(Placed { region: None, len: 0, digest: crate::digest::digest64(&[]), npy_data_len });
    }
    req.size = data_len;
    let region = hal.alloc(&req).map_err(|e| hal_error(member, None, e))?;
    match copy_body(hal, region, body, member, data_len) {
        Ok(digest) => Ok(Placed { region: Some(region), len: data_len, digest, npy_data_len }),
        Err(e) => {
            // Leave the device as it was: the region is useless without its bytes.
            let _ = hal.release(region);
            Err(e)
        }
    }
}

/// Copies exactly `len` bytes from `body` into `region`, returning their digest.
fn copy_body<H: Hal, R: BufRead<Error = Error>>(
    hal: &mut H,
    region: RegionId,
    body: &mut R,
    member: &str,
    len: u64,
) -> Result<u64, Error> {
    let mut digest = Digest64::new();
    let mut written = 0u64;
    while written < len {
        let chunk = body.fill_buf()?;
        if chunk.is_empty() {
            return Err(Error::in_member(Stage::Payload, member, written, ErrorKind::Truncated));
        }
        let take = usize::try_from(len.saturating_sub(written)).unwrap_or(usize::MAX).min(chunk.len());
        let bytes = chunk.get(..take).unwrap_or(chunk);
        hal.write(region, written, bytes).map_err(|e| hal_error(member, Some(written), e))?;
        digest.update(bytes);
        // At most `len`: `take` is what is left of it.
        written = written.saturating_add(bytes.len() as u64);
        let n = bytes.len();
        body.consume(n);
    }
    Ok(digest.finish())
}

/// Reads a `.npy` header from the front of `body`, leaving `body` at the first data byte.
/// Returns the array data length the header declares and the header's own length in bytes.
///
/// A frame of its own, and only the lengths come out: the parser (and the header it holds)
/// is gone before the data streams. The parsing of a whole header happens in
/// [`NpyParser::feed`]'s frame, never at once with the archive read that refills `body`.
#[inline(never)]
fn npy_data_len<R: BufRead<Error = Error>>(body: &mut R, member: &str, member_len: u64) -> Result<(u64, u64), Error> {
    let mut parser: NpyParser = NpyParser::new();
    let mut fed = 0u64;
    loop {
        let chunk = body.fill_buf()?;
        // Never read past the member: the body reader is bounded, but be explicit about it.
        let limit = usize::try_from(member_len.saturating_sub(fed)).unwrap_or(usize::MAX);
        let chunk = chunk.get(..chunk.len().min(limit)).unwrap_or(&[]);
        if chunk.is_empty() {
            let needed = fed.saturating_add(1);
            let e = parser.finish().err().unwrap_or(NpyError::Truncated { needed, got: fed });
            return Err(npy_error(member, fed, e));
        }
        match parser.feed(chunk).map_err(|e| npy_header_error(member, e))? {
            NpyFeed::NeedMore => {
                let n = chunk.len();
                // Bytes the member delivered (at most `member_len`): see the loader's note.
                fed = fed.saturating_add(n as u64);
                body.consume(n);
            }
            NpyFeed::Complete { header, header_bytes } => {
                fed = fed.saturating_add(header_bytes as u64);
                body.consume(header_bytes);
                let declared = header.data_len().map_err(|e| npy_error(member, 0, e))?;
                return Ok((declared, fed));
            }
        }
    }
}

#[cold]
#[inline(never)]
fn npy_error(member: &str, offset: u64, e: NpyError) -> Error {
    Error::in_member(Stage::Payload, member, offset, ErrorKind::Npy(e))
}

/// A `.npy` header the parser refused, at a place that does not depend on how the member was
/// cut into chunks: the error's own offset when it has one, else the start of the header.
fn npy_header_error(member: &str, e: NpyError) -> Error {
    let offset = match e {
        NpyError::Malformed { offset, .. } | NpyError::UnknownKey { offset } => offset,
        _ => 0,
    };
    npy_error(member, offset, e)
}

/// A HAL error while placing `member`.
#[cold]
#[inline(never)]
pub(crate) fn hal_error(member: &str, offset: Option<u64>, e: impl crate::hal::DeviceError) -> Error {
    match offset {
        Some(offset) => Error::in_member(Stage::Hal, member, offset, ErrorKind::Hal(e.kind())),
        None => Error::about_member(Stage::Hal, member, ErrorKind::Hal(e.kind())),
    }
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
    use super::*;
    use crate::digest::digest64;
    use crate::manifest::{Arch, UsageClass};
    use crate::sim::SimDevice;

    /// The payload streamer reads member bodies, whose error is the crate's.
    type Chunked<'a> = crate::testutil::Chunked<'a, Error>;

    fn npy(shape: &str, data: &[u8]) -> Vec<u8> {
        let mut dict = format!("{{'descr': '<f2', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + dict.len() + 1) % 64 != 0 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out.extend_from_slice(data);
        out
    }

    extern crate std;
    use std::{format, vec::Vec};

    fn request() -> AllocRequest {
        AllocRequest { size: 0, align: 64, usage: UsageClass::Weight, core: 0 }
    }

    #[test]
    fn raw_payload_lands_whole_in_any_chunking() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        for chunk in [1, 7, 4096] {
            let mut mem = [0u8; 4096];
            let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
            let mut src = Chunked::new(&data, chunk);
            let placed = stream_to_device(&mut dev, &mut src, "sg00/PE.bin", 1000, request()).unwrap();
            assert_eq!(placed.len, 1000);
            assert_eq!(placed.digest, digest64(&data));
            let region = placed.region.unwrap();
            assert_eq!(dev.contents(region).unwrap(), &data[..]);
            assert_eq!(placed.npy_data_len, None);
        }
    }

    #[test]
    fn npy_header_is_stripped_in_stream() {
        let data: Vec<u8> = (0..16u8).collect();
        let file = npy("(2, 4)", &data);
        for chunk in [1, 3, 4096] {
            let mut mem = [0u8; 1024];
            let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
            let mut src = Chunked::new(&file, chunk);
            let placed = stream_to_device(&mut dev, &mut src, "sg00/w.npy", file.len() as u64, request()).unwrap();
            assert_eq!(placed.len, 16);
            assert_eq!(placed.npy_data_len, Some(16));
            assert_eq!(placed.digest, digest64(&data));
            assert_eq!(dev.contents(placed.region.unwrap()).unwrap(), &data[..]);
        }
    }

    #[test]
    fn npy_shape_that_disagrees_with_the_member_is_an_error_and_frees_nothing_twice() {
        let file = npy("(2, 5)", &[0u8; 16]); // declares 20 bytes, carries 16
        let mut mem = [0u8; 1024];
        let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
        let mut src = Chunked::new(&file, 4096);
        let e = stream_to_device(&mut dev, &mut src, "sg00/w.npy", file.len() as u64, request()).unwrap_err();
        assert_eq!(e.stage, Stage::Payload);
        assert!(matches!(e.kind, ErrorKind::Npy(NpyError::Truncated { .. })), "{e:?}");
        assert_eq!(dev.live_regions().count(), 0);
    }

    #[test]
    fn bad_npy_magic_names_the_member() {
        let mut file = npy("(2,)", &[0u8; 4]);
        file[1] = b'X';
        let mut mem = [0u8; 1024];
        let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
        let mut src = Chunked::new(&file, 4096);
        let e = stream_to_device(&mut dev, &mut src, "sg00/w.npy", file.len() as u64, request()).unwrap_err();
        assert_eq!(e.member.as_str(), "sg00/w.npy");
        assert!(matches!(e.kind, ErrorKind::Npy(NpyError::BadMagic { .. })), "{e:?}");
    }

    #[test]
    fn a_short_body_releases_its_region() {
        let data = [1u8; 100];
        let mut mem = [0u8; 1024];
        let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
        let mut src = Chunked::new(&data[..60], 16);
        let e = stream_to_device(&mut dev, &mut src, "sg00/PE.bin", 100, request()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Truncated);
        assert_eq!(e.offset, 60);
        assert_eq!(dev.live_regions().count(), 0);
    }

    #[test]
    fn device_out_of_memory_is_a_hal_error() {
        let data = [1u8; 100];
        let mut mem = [0u8; 64];
        let mut dev: SimDevice = SimDevice::new(&mut mem, Arch::Cayman);
        let mut src = Chunked::new(&data, 4096);
        let e = stream_to_device(&mut dev, &mut src, "sg00/PE.bin", 100, request()).unwrap_err();
        assert_eq!(e.stage, Stage::Hal);
        assert!(matches!(e.kind, ErrorKind::Hal(crate::hal::HalError::OutOfMemory { .. })), "{e:?}");
    }
}
