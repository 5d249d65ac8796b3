//! The entry points called as C calls them, with callbacks written in Rust: a simulated device
//! that keeps each region's bytes, a read callback over a file's bytes, observers that record
//! what they see. Miri runs these (`cargo +nightly miri test` in `targets/c/`): the tests over whole
//! real NEFFs are skipped under it (minutes each), the rest run the same boundary code on the
//! failure paths and on a NEFF cut short.

use core::ffi::c_void;
use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::error::*;
use crate::hal::*;

/// The shared real NEFFs, or `None` (with a note) where they are absent; under `CI=true`
/// their absence fails.
fn fixture(rel: &str) -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/public").join(rel);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{}: {e} (required under CI=true)", path.display());
            eprintln!("skipped: {} absent ({e})", path.display());
            None
        }
    }
}

const MATMUL_SMALL: &str = "nkipy/matmul_small.neff";

/// A device that keeps every region's bytes.
#[derive(Default)]
struct Device {
    arch: u32,
    regions: HashMap<u32, Vec<u8>>,
    next: u32,
    /// `alloc` refuses with this code when set.
    refuse_alloc: Option<u32>,
    /// The notebook lent to the loader.
    notebook: Vec<u8>,
}

unsafe extern "C" fn dev_note(ctx: *mut c_void, at: u64, bytes: *const u8, len: usize) -> u32 {
    let d = device(ctx);
    let Some(dst) = d.notebook.get_mut(at as usize..at as usize + len) else {
        return neff_hal_result::NEFF_HAL_OUT_OF_BOUNDS as u32;
    };
    // SAFETY: (test) the library lends `len` readable bytes at `bytes`.
    dst.copy_from_slice(unsafe { core::slice::from_raw_parts(bytes, len) });
    0
}

unsafe extern "C" fn dev_recall(ctx: *mut c_void, at: u64, out: *mut u8, len: usize) -> u32 {
    let d = device(ctx);
    let Some(src) = d.notebook.get(at as usize..at as usize + len) else {
        return neff_hal_result::NEFF_HAL_OUT_OF_BOUNDS as u32;
    };
    // SAFETY: (test) the library lends `len` writable bytes at `out`.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), out, len) };
    0
}

fn device(ctx: *mut c_void) -> &'static mut Device {
    // SAFETY: (test) every ctx handed to these callbacks is a `&mut Device` that outlives the call.
    unsafe { &mut *ctx.cast::<Device>() }
}

unsafe extern "C" fn dev_arch(ctx: *mut c_void) -> u32 {
    device(ctx).arch
}

unsafe extern "C" fn dev_alloc(ctx: *mut c_void, req: *const neff_alloc_request, region: *mut u32) -> u32 {
    let d = device(ctx);
    if let Some(code) = d.refuse_alloc {
        return code;
    }
    // SAFETY: (test) the library passes a live request and a live out-pointer.
    let req = unsafe { &*req };
    d.next += 1;
    d.regions.insert(d.next, vec![0; req.size as usize]);
    // SAFETY: (test) as above.
    unsafe { region.write(d.next) };
    0
}

unsafe extern "C" fn dev_write(ctx: *mut c_void, region: u32, offset: u64, bytes: *const u8, len: usize) -> u32 {
    let Some(r) = device(ctx).regions.get_mut(&region) else { return neff_hal_result::NEFF_HAL_UNKNOWN_REGION as u32 };
    let start = offset as usize;
    let Some(dst) = r.get_mut(start..start + len) else { return neff_hal_result::NEFF_HAL_OUT_OF_BOUNDS as u32 };
    // SAFETY: (test) the library lends `len` readable bytes at `bytes`.
    dst.copy_from_slice(unsafe { core::slice::from_raw_parts(bytes, len) });
    0
}

unsafe extern "C" fn dev_adopt(ctx: *mut c_void, staged: u32, req: *const neff_alloc_request, region: *mut u32) -> u32 {
    let d = device(ctx);
    let Some(mut bytes) = d.regions.remove(&staged) else { return neff_hal_result::NEFF_HAL_UNKNOWN_REGION as u32 };
    // SAFETY: (test) live request and out-pointer.
    let req = unsafe { &*req };
    bytes.resize(req.size as usize, 0);
    d.next += 1;
    d.regions.insert(d.next, bytes);
    // SAFETY: (test) as above.
    unsafe { region.write(d.next) };
    0
}

unsafe extern "C" fn dev_release(ctx: *mut c_void, region: u32) -> u32 {
    match device(ctx).regions.remove(&region) {
        Some(_) => 0,
        None => neff_hal_result::NEFF_HAL_UNKNOWN_REGION as u32,
    }
}

fn hal_of(d: &mut Device) -> neff_hal {
    neff_hal {
        ctx: (d as *mut Device).cast(),
        arch: Some(dev_arch),
        alloc: Some(dev_alloc),
        write: Some(dev_write),
        adopt: Some(dev_adopt),
        release: Some(dev_release),
        address: None,
        notebook_len: 0,
        note: None,
        recall: None,
    }
}

/// What the observer saw.
#[derive(Default)]
struct Seen {
    payloads: Vec<(String, neff_payload_state, u64, u64, Option<u32>)>,
    warnings: Vec<(u16, String)>,
}

unsafe extern "C" fn on_payload(ctx: *mut c_void, p: *const neff_payload) {
    // SAFETY: (test) ctx is a `&mut Seen`; `p` and its member text live for the call.
    let (seen, p) = unsafe { (&mut *ctx.cast::<Seen>(), &*p) };
    // SAFETY: (test) as above.
    let member = unsafe { core::slice::from_raw_parts(p.member, p.member_len) };
    let member = String::from_utf8(member.to_vec()).unwrap();
    seen.payloads.push((member, p.state, p.len, p.digest, p.has_region.then_some(p.region)));
}

unsafe extern "C" fn on_warning(ctx: *mut c_void, w: *const neff_warning) {
    // SAFETY: (test) ctx is a `&mut Seen`; `w` lives for the call.
    let seen = unsafe { &mut *ctx.cast::<Seen>() };
    let mut buf = [0u8; 256];
    // SAFETY: (test) the warning handed to this callback, during the call.
    let n = unsafe { neff_warning_message(w, buf.as_mut_ptr(), buf.len()) };
    // SAFETY: (test) `w` lives for the call.
    let code = unsafe { (*w).code };
    seen.warnings.push((code, String::from_utf8_lossy(&buf[..n.min(255)]).into_owned()));
}

fn observer_of(seen: &mut Seen) -> neff_observer {
    neff_observer {
        ctx: (seen as *mut Seen).cast(),
        payload: Some(on_payload),
        warning: Some(on_warning),
        io_tensor: None,
        dma_queue: None,
        carveout: None,
        subgraph_tables: None,
        debug: None,
    }
}

fn memory(bytes: &[u8]) -> neff_source {
    neff_source {
        bytes: bytes.as_ptr(),
        len: bytes.len(),
        read: None,
        ctx: core::ptr::null_mut(),
        buf: core::ptr::null_mut(),
        buf_len: 0,
        file_size: 0,
    }
}

/// A callback source: the bytes left, served `step` at a time; a negative `fail_at` fails
/// the read that would pass that offset.
struct Feed<'a> {
    rest: &'a [u8],
    served: usize,
    step: usize,
    fail_at: Option<usize>,
}

unsafe extern "C" fn feed_read(ctx: *mut c_void, buf: *mut u8, len: usize) -> isize {
    // SAFETY: (test) ctx is a `&mut Feed`.
    let feed = unsafe { &mut *ctx.cast::<Feed<'_>>() };
    let n = feed.rest.len().min(len).min(feed.step);
    if feed.fail_at.is_some_and(|at| feed.served + n > at) {
        return -5;
    }
    // SAFETY: (test) the library lends `len` writable bytes at `buf`.
    unsafe { core::ptr::copy_nonoverlapping(feed.rest.as_ptr(), buf, n) };
    feed.rest = &feed.rest[n..];
    feed.served += n;
    n as isize
}

fn callback(feed: &mut Feed<'_>, buf: &mut [u8], file_size: u64) -> neff_source {
    neff_source {
        bytes: core::ptr::null(),
        len: 0,
        read: Some(feed_read),
        ctx: (feed as *mut Feed<'_>).cast(),
        buf: buf.as_mut_ptr(),
        buf_len: buf.len(),
        file_size,
    }
}

fn buffers(arena: &mut [u8]) -> neff_buffers {
    neff_buffers { arena: arena.as_mut_ptr(), arena_len: arena.len(), replay: core::ptr::null_mut(), replay_len: 0 }
}

fn new_error() -> neff_error {
    neff_error { opaque: [0; NEFF_ERROR_WORDS] }
}

// The accessors, called as C calls them, on errors and warnings the library filled.
fn status_of(e: *const neff_error) -> neff_status {
    // SAFETY: a live (or null) error.
    unsafe { neff_error_status(e) }
}
fn stage(e: *const neff_error) -> neff_stage {
    // SAFETY: a live (or null) error.
    unsafe { neff_error_stage(e) }
}
fn code(e: *const neff_error) -> u16 {
    // SAFETY: a live (or null) error.
    unsafe { neff_error_kind(e) }
}
fn offset(e: *const neff_error) -> u64 {
    // SAFETY: a live (or null) error.
    unsafe { neff_error_offset(e) }
}
fn offset_base(e: *const neff_error) -> neff_offset_base {
    // SAFETY: a live (or null) error.
    unsafe { neff_error_offset_base(e) }
}
fn message_into(e: *const neff_error, buf: *mut u8, len: usize) -> usize {
    // SAFETY: a live (or null) error; `buf` lends `len` bytes (or is null with 0).
    unsafe { neff_error_message(e, buf, len) }
}
fn member(e: *const neff_error) -> String {
    let mut len = 7usize;
    // SAFETY: a live error and a live length.
    let p = unsafe { neff_error_member(e, &mut len) };
    text(p, len)
}

fn message(err: &neff_error) -> String {
    let mut buf = [0u8; 512];
    let n = message_into(err, buf.as_mut_ptr(), buf.len());
    assert!(n < buf.len(), "message cut");
    assert_eq!(buf[n], 0, "NUL-terminated");
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

fn text(ptr: *const u8, len: usize) -> String {
    // SAFETY: (test) an accessor's pointer and length.
    String::from_utf8(unsafe { core::slice::from_raw_parts(ptr, len) }.to_vec()).unwrap()
}

fn arena() -> Vec<u8> {
    vec![0u8; neff_arena_min() + 32 * 1024]
}

#[test]
fn null_arguments_are_errors_naming_the_argument() {
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    // SAFETY: null where the API allows it to be refused; the rest live.
    let status = unsafe {
        neff_check(core::ptr::null(), &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err)
    };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert_eq!(status_of(&err), neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_ARGUMENT);
    assert_eq!(code(&err), 0);
    assert!(message(&err).starts_with("source:"), "{}", message(&err));

    let bytes = [0u8; 8];
    let src = memory(&bytes);
    // SAFETY: as above.
    let status = unsafe {
        neff_check(&src, core::ptr::null(), core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err)
    };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("buffers:"));

    // A null hal, and a hal with a callback missing.
    // SAFETY: as above.
    let status = unsafe {
        neff_load(&src, core::ptr::null(), &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err)
    };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("hal:"));
    let mut dev = Device { arch: 3, ..Device::default() };
    let mut hal = hal_of(&mut dev);
    hal.adopt = None;
    // SAFETY: as above.
    let status =
        unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).contains("required"));
    // An architecture the core does not know.
    let mut dev = Device { arch: 99, ..Device::default() };
    let hal = hal_of(&mut dev);
    // SAFETY: as above.
    let status =
        unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("hal.arch"));
}

#[test]
fn wrong_lengths_are_errors() {
    let bytes = [0u8; 8];
    let src = memory(&bytes);
    let mut err = new_error();
    // An arena shorter than the string scratch.
    let mut short = vec![0u8; neff_arena_min() - 1];
    let bufs = buffers(&mut short);
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).contains("neff_arena_min"));
    // A null replay store with a length.
    let mut arena = arena();
    let mut bufs = buffers(&mut arena);
    bufs.replay_len = 10;
    // SAFETY: as above.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("buffers.replay"));
    // A replay store inside the arena.
    let mut bufs = buffers(&mut arena);
    // SAFETY: within the arena.
    bufs.replay = unsafe { bufs.arena.add(16) };
    bufs.replay_len = 16;
    // SAFETY: as above.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).contains("overlap"));
    // A read buffer inside the arena.
    let mut feed = Feed { rest: &bytes, served: 0, step: 8, fail_at: None };
    let mut inside = arena.clone();
    let mut src = callback(&mut feed, &mut inside, 0);
    let bufs = buffers(&mut arena);
    src.buf = bufs.arena;
    src.buf_len = 64;
    // SAFETY: as above.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("source.buf and buffers.arena overlap"), "{}", message(&err));
    // A callback source without a buffer.
    let mut feed = Feed { rest: &bytes, served: 0, step: 8, fail_at: None };
    let mut src = callback(&mut feed, &mut [], 0);
    src.buf = core::ptr::null_mut();
    let bufs = buffers(&mut arena);
    // SAFETY: as above.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("source.buf"));
}

#[test]
fn a_short_file_is_refused_with_the_header_gate() {
    let bytes = [0u8; 100];
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_INVALID);
    assert_eq!(status_of(&err), status);
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_HEADER);
    assert_eq!(code(&err), 501, "Header(ShortFile)");
    let msg = message(&err);
    assert!(msg.starts_with("header: "), "{msg}");
    // The same error through the core, formatted by the core.
    let mut sink = neff::error::IgnoreWarnings;
    let core = Archive::open(&bytes[..], Some(100), &OpenOptions::default(), &mut sink).err().unwrap();
    assert_eq!(msg, core.to_string());
    assert_eq!(offset_base(&err), core.offset_base.into());
}

#[test]
fn the_message_is_cut_as_snprintf_cuts_and_stays_utf8() {
    let bytes = [0u8; 100];
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    // SAFETY: every pointer is live or null.
    unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    let whole = message(&err);
    let mut small = [0xffu8; 10];
    let n = message_into(&err, small.as_mut_ptr(), small.len());
    assert_eq!(n, whole.len(), "the whole length, as snprintf returns");
    assert_eq!(&small[..9], &whole.as_bytes()[..9]);
    assert_eq!(small[9], 0);
    // No buffer at all: just the length.
    assert_eq!(message_into(&err, core::ptr::null_mut(), 0), whole.len());
    // A null or never-filled error reads as no error.
    assert_eq!(status_of(core::ptr::null()), neff_status::NEFF_STATUS_OK);
    let blank = new_error();
    assert_eq!(stage(&blank), neff_stage::NEFF_STAGE_NONE);
    assert_eq!(message(&blank), "");
    assert_eq!(member(&blank), "");
}

#[test]
fn a_failing_read_callback_is_an_io_error() {
    // The header's first 1024 bytes, then a failure: any file will do for the header.
    let mut bytes = vec![0u8; 4096];
    bytes[..4].copy_from_slice(b"NEFF");
    let mut feed = Feed { rest: &bytes, served: 0, step: 300, fail_at: Some(500) };
    let mut buf = [0u8; 300];
    let src = callback(&mut feed, &mut buf, 0);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_FAILURE, "{}", message(&err));
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_IO);
    assert_eq!(code(&err), 101, "Io(Other)");
}

#[test]
fn a_callback_claiming_more_than_it_was_lent_is_refused() {
    unsafe extern "C" fn liar(_: *mut c_void, _: *mut u8, len: usize) -> isize {
        (len + 1) as isize
    }
    let mut buf = [0u8; 64];
    let src = neff_source {
        bytes: core::ptr::null(),
        len: 0,
        read: Some(liar),
        ctx: core::ptr::null_mut(),
        buf: buf.as_mut_ptr(),
        buf_len: buf.len(),
        file_size: 0,
    };
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_FAILURE);
    assert_eq!(code(&err), 113, "Io(InvalidData)");
}

/// Checks `bytes` through both sources; the report and what the observer saw.
fn check_both_ways(bytes: &[u8]) -> (neff_report, Seen) {
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let mut report = neff_report::default();
    let mut json = [0u8; 1024];
    let mut json_len = 0usize;
    let outputs = neff_outputs {
        report: &mut report,
        json: json.as_mut_ptr(),
        json_len: json.len(),
        json_written: &mut json_len,
    };
    let mut seen = Seen::default();
    let obs = observer_of(&mut seen);
    let options = neff_options { verify_integrity: true, ..neff_options::default() };
    let src = memory(bytes);
    // SAFETY: every pointer is live.
    let status = unsafe { neff_check(&src, &bufs, &options, &obs, &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_NONE);
    // The report's own serialisation (no JSON parser here: serde_json would bring std into the
    // no_std library's build of the tests).
    let json = std::str::from_utf8(&json[..json_len]).unwrap();
    assert!(json.starts_with('{') && json.ends_with('}'), "{json}");
    assert!(json.contains(&format!("\"placed\":{}", report.placed)), "{json}");
    assert!(json.contains(&format!("\"members\":{}", report.members)), "{json}");

    // The same through a read callback with an odd buffer.
    let mut feed = Feed { rest: bytes, served: 0, step: usize::MAX, fail_at: None };
    let mut buf = [0u8; 333];
    let src = callback(&mut feed, &mut buf, bytes.len() as u64);
    let mut again = neff_report::default();
    let outputs = neff_outputs {
        report: &mut again,
        json: core::ptr::null_mut(),
        json_len: 0,
        json_written: core::ptr::null_mut(),
    };
    let mut seen_again = Seen::default();
    let obs = observer_of(&mut seen_again);
    // SAFETY: every pointer is live.
    let status = unsafe { neff_check(&src, &bufs, &options, &obs, &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
    assert_eq!(again, report);
    assert_eq!(seen_again.payloads, seen.payloads);
    (report, seen)
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_real_neff_checks_through_memory_and_callback_alike() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let (report, seen) = check_both_ways(&bytes);
    assert_eq!(report.placed, 24, "matmul_small's 24 payloads");
    assert_eq!(report.bytes_placed, seen.payloads.iter().map(|p| p.2).sum::<u64>());
    assert_eq!(report.members, 72);
    assert_eq!(report.integrity, neff_integrity::NEFF_INTEGRITY_MATCH as u32);
    assert_eq!(report.integrity_order, neff_digest_order::NEFF_ORDER_WORD_SWAPPED as u32);
    assert_eq!(report.computed_hash_len, 16);
    assert_eq!(seen.payloads.len(), 24);
    assert!(seen.payloads.iter().all(|p| p.1 == neff_payload_state::NEFF_PAYLOAD_CHECKED && p.4.is_none()));
    assert!(seen.warnings.is_empty(), "{:?}", seen.warnings);
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_real_neff_loads_onto_the_c_device_and_every_region_holds_its_digest() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let mut dev = Device { arch: 3, ..Device::default() };
    let hal = hal_of(&mut dev);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let mut report = neff_report::default();
    let outputs = neff_outputs {
        report: &mut report,
        json: core::ptr::null_mut(),
        json_len: 0,
        json_written: core::ptr::null_mut(),
    };
    let mut seen = Seen::default();
    let obs = observer_of(&mut seen);
    let src = memory(&bytes);
    // SAFETY: every pointer is live.
    let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), &obs, &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
    assert_eq!(report.placed, 24);
    assert_eq!(report.integrity, neff_integrity::NEFF_INTEGRITY_NOT_REQUESTED as u32);
    for (member, state, len, digest, region) in &seen.payloads {
        assert_eq!(*state, neff_payload_state::NEFF_PAYLOAD_PLACED, "{member}");
        let held = &dev.regions[&region.unwrap()];
        assert!(held.len() as u64 >= *len, "{member}");
        assert_eq!(neff::digest::digest64(&held[..*len as usize]), *digest, "{member}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_device_notebook_takes_the_notes_off_the_arena() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let mut peaks = Vec::new();
    for notebook in [0usize, 64 * 28] {
        let mut dev = Device { arch: 3, notebook: vec![0; notebook], ..Device::default() };
        let mut hal = hal_of(&mut dev);
        if notebook > 0 {
            hal.notebook_len = notebook as u64;
            hal.note = Some(dev_note);
            hal.recall = Some(dev_recall);
        }
        let mut arena = arena();
        let bufs = buffers(&mut arena);
        let mut err = new_error();
        let mut report = neff_report::default();
        let outputs = neff_outputs {
            report: &mut report,
            json: core::ptr::null_mut(),
            json_len: 0,
            json_written: core::ptr::null_mut(),
        };
        let src = memory(&bytes);
        // SAFETY: every pointer is live or null.
        let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
        assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
        assert_eq!(report.placed, 24);
        peaks.push(report.arena_peak);
        if notebook > 0 {
            assert!(dev.notebook.iter().any(|&b| b != 0), "the loader wrote its notes to the device");
        }
    }
    assert!(peaks[1] < peaks[0], "arena peaks without and with a notebook: {peaks:?}");
    // A notebook without its callbacks is refused.
    let mut dev = Device { arch: 3, ..Device::default() };
    let mut hal = hal_of(&mut dev);
    hal.notebook_len = 64;
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let src = memory(&bytes);
    // SAFETY: every pointer is live or null.
    let status =
        unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_refusing_device_fails_the_load_and_gets_every_region_back() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let mut dev =
        Device { arch: 3, refuse_alloc: Some(neff_hal_result::NEFF_HAL_OUT_OF_MEMORY as u32), ..Device::default() };
    let hal = hal_of(&mut dev);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let src = memory(&bytes);
    // SAFETY: every pointer is live or null.
    let status =
        unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_RESOURCE, "{}", message(&err));
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_HAL);
    assert_eq!(code(&err), 1101, "Hal(OutOfMemory)");
    assert!(!member(&err).is_empty(), "the payload being placed");
    assert!(dev.regions.is_empty());
    // The C device does not say what is free: the message does not make up "0 bytes free".
    let text = message(&err);
    assert!(
        text.contains("device out of memory: requested ")
            && text.contains("; the device did not report its free bytes"),
        "{text}"
    );
    assert!(!text.contains("bytes free"), "{text}");
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_damaged_neff_is_refused_with_its_stage_and_message() {
    let Some(mut bytes) = fixture(MATMUL_SMALL) else { return };
    // A byte in the middle of the deflate stream.
    bytes[1024 + 20_000] ^= 0x55;
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let src = memory(&bytes);
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_ne!(status, neff_status::NEFF_STATUS_OK);
    assert_eq!(status_of(&err), status);
    // The same as the core says, through the core's API.
    let mut sink = neff::error::IgnoreWarnings;
    let mut archive = Archive::open(&bytes[..], Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).unwrap();
    let mut arena2 = vec![0u8; neff_arena_min() + 32 * 1024];
    let mut loader = Loader::new(&mut arena2, LoadOptions::default());
    let mut report = LoadReport::new();
    let core = loader.check(&mut archive, None, &mut report, &mut neff::loader::NoObserver, &mut sink).err().unwrap();
    assert_eq!(message(&err), core.to_string());
    assert_eq!(code(&err), core.kind.code());
    assert_eq!(offset(&err), core.offset);
    assert_eq!(stage(&err), core.stage.into());
}

#[test]
fn a_json_buffer_too_small_is_its_own_status() {
    // A failed check still writes its report: a one-byte JSON buffer is too small for it, but
    // the load's own error wins.
    let bytes = [0u8; 100];
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let mut json = [0u8; 1];
    let outputs = neff_outputs {
        report: core::ptr::null_mut(),
        json: json.as_mut_ptr(),
        json_len: 1,
        json_written: core::ptr::null_mut(),
    };
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_INVALID);
    assert_eq!(code(&err), 501);
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_json_buffer_too_small_after_a_good_check() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let mut json = [0u8; 16];
    let mut report = neff_report::default();
    let outputs = neff_outputs {
        report: &mut report,
        json: json.as_mut_ptr(),
        json_len: json.len(),
        json_written: core::ptr::null_mut(),
    };
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BUFFER_TOO_SMALL);
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_ARGUMENT);
    assert_eq!(report.placed, 24, "the report is written all the same");
}

#[test]
fn the_size_queries_cover_what_a_load_takes() {
    assert_eq!(neff_arena_min(), STRING_SCRATCH);
    assert!(neff_load_stack_size() > core::mem::size_of::<Loader<'static>>());
    assert_eq!(neff_error_size(), NEFF_ERROR_WORDS * 8);
    assert_eq!(neff_builtin_arena_size(), BUILTIN_ARENA);
    assert_eq!(parse_size(b"33792"), 33792);
    assert_eq!(parse_size(b""), 0);
}

#[test]
fn no_arena_is_an_error_without_a_built_in_one() {
    let bytes = [0u8; 100];
    let src = memory(&bytes);
    let bufs =
        neff_buffers { arena: core::ptr::null_mut(), arena_len: 0, replay: core::ptr::null_mut(), replay_len: 0 };
    let mut err = new_error();
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    if neff_builtin_arena_size() >= neff_arena_min() {
        // The built-in arena is used: the short file is refused by the header gate.
        assert_eq!(code(&err), 501);
    } else {
        assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
        assert!(message(&err).starts_with("buffers.arena"));
    }
}

// ---- neff_info ----

/// `neff_info` with `work` and `json` lent; its status, the length it reported, the error.
fn info_call(src: &neff_source, work: &mut [u8], json: &mut [u8]) -> (neff_status, usize, neff_error) {
    let mut arena = vec![0u8; neff_arena_min() + 256 * 1024];
    let bufs = buffers(&mut arena);
    let (json_ptr, json_len) =
        if json.is_empty() { (core::ptr::null_mut(), 0) } else { (json.as_mut_ptr(), json.len()) };
    let ib = neff_info_buffers { work: work.as_mut_ptr(), work_len: work.len(), json: json_ptr, json_len };
    let mut err = new_error();
    let mut written = usize::MAX;
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_info(src, &bufs, core::ptr::null(), core::ptr::null(), &ib, &mut written, &mut err) };
    (status, written, err)
}

/// The info document through the source `src` makes: its size asked first, then written.
fn info_document(src: &mut dyn FnMut() -> neff_source) -> String {
    let mut work = vec![0u8; 64 * 1024];
    let (status, needed, err) = info_call(&src(), &mut work, &mut []);
    assert_eq!(status, neff_status::NEFF_STATUS_BUFFER_TOO_SMALL, "{}", message(&err));
    // SAFETY: a live error.
    assert_eq!(unsafe { neff_error_needed(&err) }, needed);
    let mut json = vec![0u8; needed];
    let (status, written, err) = info_call(&src(), &mut work, &mut json);
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
    assert_eq!(written, needed);
    String::from_utf8(json).unwrap()
}

/// The numbers after each `"key":` in `doc`, in order.
fn numbers_of(doc: &str, key: &str) -> Vec<u64> {
    let pat = format!("\"{key}\":");
    doc.match_indices(&pat)
        .map(|(at, _)| {
            let rest = &doc[at + pat.len()..];
            rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap()
        })
        .collect()
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn info_writes_the_info_document_through_either_source() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let doc = info_document(&mut || memory(&bytes));
    if let Ok(path) = std::env::var("NEFF_INFO_DUMP") {
        std::fs::write(path, &doc).unwrap();
    }
    // The keys of the contract, in order, compact.
    let order = [
        "\"header\":",
        "\"kelf\":",
        "\"inputs\":",
        "\"outputs\":",
        "\"subgraphs\":",
        "\"hash\":",
        "\"compiler_version\":",
    ];
    let at: Vec<usize> = order.iter().map(|k| doc.find(k).unwrap_or_else(|| panic!("{k} missing: {doc}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{doc}");
    assert!(doc.starts_with(
        "{\"header\":{\"pkg_version\":2,\"header_size\":1024,\"data_size\":61440,\"neff_version\":\"2.0\""
    ));
    assert!(
        doc.contains("\"kelf\":[{\"member\":\"kelf-0.json\",\"version\":\"0.5\",\"target\":\"cayman\",\"arch\":3}]")
    );
    assert!(doc.contains(
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float16\",\"nrt_dtype\":7,\"shape\":[128,256],\"size\":65536}"
    ));
    // Vars by var_id; the PE stream's size from the payload that carried it (768 bytes, 12
    // instructions of 64).
    for subgraph in doc.split("\"definition\":").skip(1) {
        let ids = numbers_of(subgraph, "var_id");
        assert!(ids.len() >= 2 && ids.windows(2).all(|w| w[0] <= w[1]), "{ids:?}");
    }
    assert!(doc.contains(
        "{\"engine\":\"pe\",\"json\":\"sg00/PE.json\",\"instr\":\"sg00/PE.bin\",\"instr_size\":768,\"ninstr\":12}"
    ));
    assert!(doc.contains("\"result\":\"not-requested\",\"order\":null,\"computed\":null}"));
    // `info.json`'s tool_version, which the loader skips: shown to the info observer.
    assert!(doc.ends_with("\"}") && doc.contains("\"compiler_version\":\"2."), "{}", &doc[doc.len() - 80..]);

    // Through a read callback, in odd steps: the same bytes.
    let mut feeds = Vec::new();
    let mut bufs = Vec::new();
    let mut by_callback = || {
        feeds.push(Box::new(Feed { rest: &bytes, served: 0, step: 777, fail_at: None }));
        bufs.push(vec![0u8; 1000]);
        callback(feeds.last_mut().unwrap(), bufs.last_mut().unwrap(), 0)
    };
    assert_eq!(info_document(&mut by_callback), doc);
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn info_buffers_too_small_are_typed_errors_never_cut_documents() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let src = memory(&bytes);
    let mut work = vec![0u8; 64 * 1024];
    let mut json = vec![0xAAu8; 100];
    let (status, needed, err) = info_call(&src, &mut work, &mut json);
    assert_eq!(status, neff_status::NEFF_STATUS_BUFFER_TOO_SMALL);
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_ARGUMENT);
    // SAFETY: a live error.
    assert_eq!(unsafe { (neff_error_needed(&err), neff_error_available(&err)) }, (needed, 100));
    assert_eq!(message(&err), format!("info.json: {needed} bytes needed, 100 lent"));

    let mut small = vec![0u8; 256];
    let (status, written, err) = info_call(&src, &mut small, &mut []);
    assert_eq!(status, neff_status::NEFF_STATUS_RESOURCE);
    assert_eq!(written, 0);
    // SAFETY: a live error.
    let work_needed = unsafe { neff_error_needed(&err) };
    assert!(work_needed > 256 && message(&err).starts_with("info.work: "), "{}", message(&err));
    // What it said is enough.
    let mut enough = vec![0u8; work_needed];
    let (status, _, err) = info_call(&src, &mut enough, &mut []);
    assert_eq!(status, neff_status::NEFF_STATUS_BUFFER_TOO_SMALL, "{}", message(&err));
}

#[test]
fn info_refuses_bad_arguments_and_bad_neffs_before_writing() {
    let bytes = [0u8; 100];
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut work = [0u8; 64];
    let mut json = [0u8; 64];
    let mut err = new_error();
    let mut written = 7usize;
    // No info buffers at all.
    // SAFETY: every pointer is live or null.
    let status = unsafe {
        neff_info(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut written, &mut err)
    };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert_eq!(message(&err), "info: null or misaligned");
    // A null buffer with a length.
    let ib = neff_info_buffers { work: work.as_mut_ptr(), work_len: 64, json: core::ptr::null_mut(), json_len: 8 };
    // SAFETY: as above.
    let status = unsafe { neff_info(&src, &bufs, core::ptr::null(), core::ptr::null(), &ib, &mut written, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("info.json"), "{}", message(&err));
    // The work buffer over the arena.
    let ib = neff_info_buffers { work: arena.as_mut_ptr(), work_len: 64, json: json.as_mut_ptr(), json_len: 64 };
    let bufs = buffers(&mut arena);
    // SAFETY: as above (refused before any slice is made).
    let status = unsafe { neff_info(&src, &bufs, core::ptr::null(), core::ptr::null(), &ib, &mut written, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT);
    assert!(message(&err).starts_with("buffers.arena and info.work overlap"), "{}", message(&err));
    // A short file: the header gate's refusal, nothing written.
    let ib = neff_info_buffers { work: work.as_mut_ptr(), work_len: 64, json: json.as_mut_ptr(), json_len: 64 };
    // SAFETY: as above.
    let status = unsafe { neff_info(&src, &bufs, core::ptr::null(), core::ptr::null(), &ib, &mut written, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_INVALID);
    assert_eq!((code(&err), written), (501, 0));
    assert!(neff_info_stack_size() > neff_load_stack_size() - BUILTIN_ARENA);
}

#[test]
fn the_info_observer_keeps_the_last_root_info_json_the_loader_shows_it() {
    let mut buf = vec![0u8; 64];
    let work = core::cell::RefCell::new(info::Work::new(&mut buf));
    let c = CObserver { ctx: core::ptr::null_mut(), payload: None, warning: None };
    let mut observer = info::InfoObserver::new(&work, c);
    let members: [(&str, &[u8]); 5] = [
        ("info.json", b"one"),
        ("sg00/info.json", b"three"),
        ("info.json", b"0123456789"),
        ("debug_info/sg00.dbg", b"x"),
        ("info.json.bak", b"four"),
    ];
    let mut asked = Vec::new();
    for (name, body) in members {
        let member = neff::loader::MemberReport {
            name,
            typeflag: b'0',
            size: body.len() as u64,
            header_offset: 0,
            data_offset: 512,
        };
        if observer.member(&member) {
            asked.push(name);
            body.chunks(3).for_each(|chunk| observer.member_bytes(chunk));
            observer.member_end();
        }
    }
    assert_eq!(asked, ["info.json", "info.json"]);
    assert_eq!(work.borrow().kept_info(), Some(&b"0123456789"[..]));
    // A copy cut short (the load failed in it) is not kept.
    let member =
        neff::loader::MemberReport { name: "info.json", typeflag: b'0', size: 8, header_offset: 0, data_offset: 0 };
    assert!(observer.member(&member));
    observer.member_bytes(b"abc");
    assert_eq!(work.borrow().kept_info(), None);
}

#[test]
fn the_json_writer_escapes_and_counts_what_does_not_fit() {
    let mut buf = [0u8; 8];
    let mut out = json::Out::new(&mut buf);
    out.str("a\"b\\c\n\u{1}é");
    out.lossy(b"x\xffy");
    out.u64(u64::MAX);
    let whole = "\"a\\\"b\\\\c\\n\\u0001é\"\"x\u{FFFD}y\"18446744073709551615";
    assert_eq!(out.len(), whole.len());
    assert!(!out.fits());
    assert_eq!(&buf, &whole.as_bytes()[..8]);
}

fn outputs_of(report: *mut neff_report, json: &mut [u8], written: *mut usize) -> neff_outputs {
    neff_outputs { report, json: json.as_mut_ptr(), json_len: json.len(), json_written: written }
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_report_too_long_for_its_buffer_undoes_the_load() {
    let Some(bytes) = fixture(MATMUL_SMALL) else { return };
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut dev = Device { arch: 3, ..Device::default() };
    let hal = hal_of(&mut dev);
    let mut err = new_error();
    let mut json = [0u8; 16];
    let mut written = 7usize;
    let mut report = neff_report::default();
    let outputs = outputs_of(&mut report, &mut json, &mut written);
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_BUFFER_TOO_SMALL, "{}", message(&err));
    assert_eq!(status_of(&err), status);
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_ARGUMENT);
    // SAFETY: a live error.
    let (needed, available) = unsafe { (neff_error_needed(&err), neff_error_available(&err)) };
    assert!(needed > 16 && needed <= REPORT_JSON_MAX, "{needed}");
    assert_eq!(available, 16);
    assert_eq!(written, needed, "json_written holds the bytes needed");
    assert_eq!(message(&err), format!("outputs.json: {needed} bytes needed, 16 lent"));
    assert!(dev.next > 0, "the load had allocated regions");
    assert!(dev.regions.is_empty(), "no region is left live: {} are", dev.regions.len());
    assert_eq!(report.placed, 24, "the report says what was done, then undone");

    // With the bytes it asked for, the same load succeeds and writes exactly that much.
    let mut json = vec![0u8; needed];
    let outputs = outputs_of(core::ptr::null_mut(), &mut json, &mut written);
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
    assert_eq!(written, needed);
    assert!(!dev.regions.is_empty());
    assert!(serde_json_parses(&json));
}

/// Whether `bytes` is one JSON object (by its braces: the crate has no JSON parser).
fn serde_json_parses(bytes: &[u8]) -> bool {
    bytes.first() == Some(&b'{') && bytes.last() == Some(&b'}')
}

#[test]
fn every_failure_of_a_load_leaves_the_json_count_at_zero() {
    let bytes = [0u8; 100];
    let src = memory(&bytes);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut dev = Device { arch: 3, ..Device::default() };
    let hal = hal_of(&mut dev);
    let mut err = new_error();
    let mut json = [0u8; 1024];
    let mut written = 7usize;
    let outputs = outputs_of(core::ptr::null_mut(), &mut json, &mut written);
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_INVALID);
    assert_eq!(written, 0);
}

#[test]
fn report_json_is_bounded() {
    use neff::header::HashValue;
    let mut report = LoadReport::new();
    report.device_arch = Some(Arch::from_value(4).unwrap());
    // The longest target, each character escaped as six (`\u0001`).
    while report.target.push('\u{1}').is_ok() {}
    (report.subgraphs, report.payloads, report.placed, report.inputs, report.outputs) =
        (u32::MAX, u32::MAX, u32::MAX, u32::MAX, u32::MAX);
    (report.manifests, report.released, report.warnings, report.members) = (u32::MAX, u32::MAX, u32::MAX, u32::MAX);
    (report.bytes_placed, report.inflated_bytes, report.compressed_bytes) = (u64::MAX, u64::MAX, u64::MAX);
    (report.padding_bytes, report.trailing_bytes, report.arena_peak) = (u64::MAX, u64::MAX, u64::MAX);
    let sha = HashValue::new(neff::header::HashAlgorithm::Sha256, &[0xff; 32]);
    report.integrity = Some(Integrity::Mismatch { computed: sha, stored: sha });
    let mut room = [0u8; REPORT_JSON_MAX];
    let n = report.to_json(&mut room).expect("the largest report fits REPORT_JSON_MAX");
    assert!(n > 400, "the report is the one measured: {n}");
    assert_eq!(report_json_len(&report), n);
}

/// Lent buffers, each in a slot of its own in one pool: a pair is made to overlap by moving
/// the second into the first one's slot.
fn slot_len() -> usize {
    (neff_arena_min() + 4096).next_multiple_of(8)
}

/// The lent buffers of each entry point, as the overlap error names them.
const CHECK_BUFFERS: [&str; 7] =
    ["source", "buffers.arena", "buffers.replay", "outputs.report", "outputs.json", "outputs.json_written", "err"];
const INFO_BUFFERS: [&str; 7] =
    ["source", "buffers.arena", "buffers.replay", "info.work", "info.json", "written", "err"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Entry {
    Check,
    Load,
    Info,
}

/// Calls `entry` with its buffers laid out in `pool`, slot by slot, except `moved` put at the
/// start of `into`'s slot; the source reads from memory, or through a callback if `callback`.
fn call_with_layout(
    entry: Entry,
    callback: bool,
    pool: &mut [u64],
    moved: usize,
    into: usize,
) -> (neff_status, String) {
    let names = if entry == Entry::Info { INFO_BUFFERS } else { CHECK_BUFFERS };
    let base = pool.as_mut_ptr().cast::<u8>();
    let at = |i: usize| {
        let slot = if i == moved { into } else { i };
        // SAFETY: (test) every slot lies inside the pool.
        unsafe { base.add(slot * slot_len()) }
    };
    let lengths = [1024, neff_arena_min(), 512, 0, 256, 0, 0];
    unsafe extern "C" fn never(_: *mut c_void, _: *mut u8, _: usize) -> isize {
        panic!("nothing is read before the arguments are checked")
    }
    let source = if callback {
        neff_source {
            bytes: core::ptr::null(),
            len: 0,
            read: Some(never),
            ctx: core::ptr::null_mut(),
            buf: at(0),
            buf_len: lengths[0],
            file_size: 0,
        }
    } else {
        neff_source { bytes: at(0), len: lengths[0], ..memory(&[]) }
    };
    let bufs = neff_buffers { arena: at(1), arena_len: lengths[1], replay: at(2), replay_len: lengths[2] };
    let err = at(6).cast::<neff_error>();
    let mut dev = Device { arch: 3, ..Device::default() };
    let hal = hal_of(&mut dev);
    // SAFETY: (test) every pointer points into the pool, aligned for its type (slots are
    // 8-byte aligned), or to a live local.
    let status = unsafe {
        match entry {
            Entry::Check | Entry::Load => {
                let outputs = neff_outputs {
                    report: at(3).cast(),
                    json: at(4),
                    json_len: lengths[4],
                    json_written: at(5).cast(),
                };
                if entry == Entry::Check {
                    neff_check(&source, &bufs, core::ptr::null(), core::ptr::null(), &outputs, err)
                } else {
                    neff_load(&source, &hal, &bufs, core::ptr::null(), core::ptr::null(), &outputs, err)
                }
            }
            Entry::Info => {
                let info = neff_info_buffers { work: at(3), work_len: 4096, json: at(4), json_len: lengths[4] };
                neff_info(&source, &bufs, core::ptr::null(), core::ptr::null(), &info, at(5).cast(), err)
            }
        }
    };
    assert_eq!(dev.next, 0, "{entry:?}: nothing was allocated");
    let text = if names[moved] == "err" || names[into] == "err" {
        String::new()
    } else {
        // SAFETY: (test) the call filled the error slot.
        message(unsafe { &*err })
    };
    (status, text)
}

#[test]
fn every_pair_of_lent_buffers_is_refused_in_every_entry_point_and_nothing_is_written() {
    for entry in [Entry::Check, Entry::Load, Entry::Info] {
        let names = if entry == Entry::Info { INFO_BUFFERS } else { CHECK_BUFFERS };
        for callback in [false, true] {
            let source = if callback { "source.buf" } else { "source.bytes" };
            let name = |i: usize| if i == 0 { source } else { names[i] };
            const MARK: u64 = 0x5a5a_5a5a_5a5a_5a5a;
            let words = slot_len() / 8;
            // One pool for every layout: a refused call writes nothing but the error slot, which
            // is marked again after each call.
            let mut pool = vec![MARK; names.len() * words];
            for first in 0..names.len() {
                for second in 0..names.len() {
                    if first == second {
                        continue;
                    }
                    let (status, text) = call_with_layout(entry, callback, &mut pool, second, first);
                    let case = format!("{entry:?}, {} inside {}", name(second), name(first));
                    assert_eq!(status, neff_status::NEFF_STATUS_BAD_ARGUMENT, "{case}: {text}");
                    // Nothing but the error slot is written, and that one only if it overlaps
                    // nothing (it is skipped unread: the library's write leaves its padding
                    // uninitialised). Each buffer starts its slot; Miri, slow, reads those starts.
                    let err_moved = names[first] == "err" || names[second] == "err";
                    for slot in (0..names.len()).filter(|&slot| err_moved || slot != 6) {
                        let checked = if cfg!(miri) { 64 } else { words };
                        let words = &pool[slot * words..slot * words + checked];
                        assert!(words.iter().all(|&w| w == MARK), "{case}: slot {slot} was written");
                    }
                    pool[6 * words..7 * words].fill(MARK);
                    if !text.is_empty() {
                        let (a, b) = (name(first.min(second)), name(first.max(second)));
                        assert!(text.starts_with(&format!("{a} and {b} overlap")), "{case}: {text}");
                    }
                }
            }
            // Laid out apart, the call reads the source (a zeroed one: refused by its header).
            let mut pool = vec![0u64; names.len() * slot_len() / 8];
            let (status, text) = call_with_layout(entry, false, &mut pool, 0, 0);
            assert_eq!(status, neff_status::NEFF_STATUS_INVALID, "{entry:?}: {text}");
        }
    }
}

#[test]
fn the_read_callback_s_error_reaches_the_error_and_its_message() {
    let mut bytes = vec![0u8; 4096];
    bytes[..4].copy_from_slice(b"NEFF");
    let mut feed = Feed { rest: &bytes, served: 0, step: 300, fail_at: Some(500) };
    let mut buf = [0u8; 300];
    let src = callback(&mut feed, &mut buf, 0);
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_FAILURE);
    // SAFETY: a live error.
    assert_eq!(unsafe { neff_error_read_result(&err) }, -5, "-EIO, as the callback returned it");
    assert!(message(&err).ends_with(" (the read callback returned -5)"), "{}", message(&err));
    // An error that is not the callback's has none.
    let zeros = [0u8; 100];
    let src = memory(&zeros);
    // SAFETY: every pointer is live or null.
    unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) };
    // SAFETY: a live error.
    assert_eq!(unsafe { neff_error_read_result(&err) }, 0);
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_damaged_header_field_is_at_the_same_byte_from_memory_and_through_the_callback() {
    let Some(mut bytes) = fixture(MATMUL_SMALL) else { return };
    // `data_size` (byte 16) larger than the file.
    let twice = bytes.len() as u64 * 2;
    bytes[16..24].copy_from_slice(&twice.to_le_bytes());
    let mut arena = arena();
    let bufs = buffers(&mut arena);
    let mut from_memory = new_error();
    let src = memory(&bytes);
    // SAFETY: every pointer is live or null.
    unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut from_memory) };
    for file_size in [0, bytes.len() as u64] {
        let mut feed = Feed { rest: &bytes, served: 0, step: 4096, fail_at: None };
        let mut buf = [0u8; 4096];
        let src = callback(&mut feed, &mut buf, file_size);
        let mut through = new_error();
        // SAFETY: every pointer is live or null.
        unsafe { neff_check(&src, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut through) };
        assert_eq!(
            (offset(&through), offset_base(&through), stage(&through)),
            (offset(&from_memory), offset_base(&from_memory), stage(&from_memory)),
            "file_size {file_size}: {} / from memory: {}",
            message(&through),
            message(&from_memory)
        );
    }
    assert_eq!(offset(&from_memory), 16, "{}", message(&from_memory));
}

#[test]
fn neff_init_takes_its_own_header_and_refuses_another() {
    use crate::names::*;
    assert_eq!(NEFF_VERSION_MAJOR.to_string(), env!("CARGO_PKG_VERSION_MAJOR"));
    assert_eq!(NEFF_VERSION_MINOR.to_string(), env!("CARGO_PKG_VERSION_MINOR"));
    assert_eq!(NEFF_VERSION_PATCH.to_string(), env!("CARGO_PKG_VERSION_PATCH"));
    // SAFETY: a static NUL-terminated string.
    let version = unsafe { core::ffi::CStr::from_ptr(neff_version()) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    let (e, r) = (core::mem::size_of::<neff_error>(), core::mem::size_of::<neff_report>());
    let mut err = new_error();
    // SAFETY: a live error.
    let init = |major, minor, e, r, err: &mut neff_error| unsafe { neff_init_(major, minor, e, r, err) };
    assert_eq!(init(NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR, e, r, &mut err), neff_status::NEFF_STATUS_OK);
    assert_eq!(status_of(&err), neff_status::NEFF_STATUS_OK);
    let mismatch = neff_status::NEFF_STATUS_VERSION_MISMATCH;
    assert_eq!(init(NEFF_VERSION_MAJOR + 1, NEFF_VERSION_MINOR, e, r, &mut err), mismatch);
    assert_eq!(status_of(&err), mismatch);
    assert_eq!(stage(&err), neff_stage::NEFF_STAGE_ARGUMENT);
    let text = message(&err);
    assert!(text.contains(&format!("neff.h {}.{}", NEFF_VERSION_MAJOR + 1, NEFF_VERSION_MINOR)), "{text}");
    assert!(text.contains(&format!("the library {}", env!("CARGO_PKG_VERSION"))), "{text}");
    // A newer minor version: before 1.0 any other, after it a newer one.
    assert_eq!(init(NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR + 1, e, r, &mut err), mismatch);
    assert_eq!(init(NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR, e - 8, r, &mut err), mismatch);
    assert!(message(&err).contains("sizeof(neff_error)"));
    assert_eq!(init(NEFF_VERSION_MAJOR, NEFF_VERSION_MINOR, e, r + 4, &mut err), mismatch);
}

fn c_text(p: *const core::ffi::c_char) -> Option<String> {
    // SAFETY: (test) null or a static NUL-terminated name.
    (!p.is_null()).then(|| unsafe { core::ffi::CStr::from_ptr(p) }.to_str().unwrap().to_string())
}

#[test]
#[cfg_attr(miri, ignore = "reads targets/c/include/neff.h (Miri isolates the file system)")]
fn every_status_stage_and_code_has_its_name() {
    use crate::names::*;
    use neff::error::codes::{ERRORS, WARNINGS};
    // The status names are the header's enumerators, at the header's values.
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/neff.h")).unwrap();
    // The version string cbindgen cannot write from Rust (targets/c/cbindgen.toml's after_includes).
    let string = format!("#define NEFF_VERSION_STRING \"{}\"\n", env!("CARGO_PKG_VERSION"));
    assert!(header.contains(&string), "neff.h: {string}");
    let mut statuses = 0;
    for line in header.lines() {
        let line = line.trim().trim_end_matches(',');
        if let Some((name, value)) = line.split_once(" = ") {
            if name.starts_with("NEFF_STATUS_") {
                assert_eq!(c_text(neff_status_name(value.parse().unwrap())).as_deref(), Some(name));
                statuses += 1;
            }
        }
    }
    assert!(statuses >= 8, "{statuses}");
    assert_eq!(neff_status_name(3), core::ptr::null());
    // The stages, as the core prints them.
    for (i, stage) in crate::names::tests_stages().iter().enumerate() {
        assert_eq!(neff_stage::from(*stage) as usize, i, "{stage:?}: the C order");
        assert_eq!(c_text(neff_stage_name(i as u32)).as_deref(), Some(stage.name()));
    }
    assert_eq!(c_text(neff_stage_name(neff_stage::NEFF_STAGE_ARGUMENT as u32)).as_deref(), Some("argument"));
    assert_eq!(c_text(neff_stage_name(neff_stage::NEFF_STAGE_NONE as u32)).as_deref(), Some("none"));
    assert_eq!(neff_stage_name(11), core::ptr::null());
    // Every code of the refusal table, and nothing else.
    for row in ERRORS {
        assert_eq!(c_text(neff_code_name(row.code)).as_deref(), Some(row.c_name));
    }
    for row in WARNINGS {
        assert_eq!(c_text(neff_warning_code_name(row.code)).as_deref(), Some(row.c_name));
    }
    assert_eq!(c_text(neff_code_name(501)).as_deref(), Some("NEFF_ERR_HEADER_SHORT_FILE"));
    assert_eq!(neff_code_name(0), core::ptr::null());
    assert_eq!(neff_warning_code_name(101), core::ptr::null());
}

/// The real training NEFF whose DMA references once overflowed a controller's arena, or `None`
/// where `../shared` is absent (a failure under `CI=true`).
fn training_neff() -> Option<Vec<u8>> {
    fixture("../training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_14041361676943519958+ade7b014/model.neff")
}

/// One load of `bytes` with `arena` bytes of arena and a notebook of `notebook` bytes: its
/// status and report.
fn load_within(bytes: &[u8], arena: usize, notebook: usize) -> (neff_status, neff_report, String) {
    let mut dev = Device { arch: 2, notebook: vec![0; notebook], ..Device::default() };
    let mut hal = hal_of(&mut dev);
    hal.notebook_len = notebook as u64;
    hal.note = Some(dev_note);
    hal.recall = Some(dev_recall);
    let mut arena = vec![0u8; arena];
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let mut report = neff_report::default();
    let outputs = neff_outputs {
        report: &mut report,
        json: core::ptr::null_mut(),
        json_len: 0,
        json_written: core::ptr::null_mut(),
    };
    let src = memory(bytes);
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), &outputs, &mut err) };
    (status, report, message(&err))
}

#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn a_load_reports_what_it_needed_and_loads_within_exactly_that() {
    let Some(bytes) = training_neff() else { return };
    // Measured with generous buffers.
    let (status, measured, message) = load_within(&bytes, 8 << 20, 8 << 20);
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{message}");
    assert_eq!(measured.arena_needed, (neff_arena_min() as u64) + measured.arena_peak);
    assert!(measured.notebook_needed > 400_000, "29,581 DMA references wait in the notebook: {measured:?}");
    assert_eq!(measured.replay_needed, 0, "no replay store lent");
    // Within exactly what was measured, the same load; one byte of arena less is refused.
    let (arena, notebook) = (measured.arena_needed as usize, measured.notebook_needed as usize);
    let (status, again, message) = load_within(&bytes, arena, notebook);
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{message}");
    assert_eq!((again.arena_needed, again.notebook_needed), (measured.arena_needed, measured.notebook_needed));
    let (status, _, message) = load_within(&bytes, arena - 1, notebook);
    assert_eq!(status, neff_status::NEFF_STATUS_RESOURCE, "{message}");
    assert!(message.contains("arena"), "{message}");
}

/// Every real NEFF under `../shared/fixtures` (the public ones and the training cache's), as
/// `(name, bytes)`.
fn every_real_neff() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("public"), root.join("training-cache")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "neff") {
                let bytes = std::fs::read(&path).unwrap();
                // The failed compile's marker (`ERROR`) is no NEFF.
                if bytes.len() > 1024 {
                    out.push((path.strip_prefix(&root).unwrap().display().to_string(), bytes));
                }
            }
        }
    }
    out.sort();
    if std::env::var("CI").as_deref() == Ok("true") {
        assert_eq!(out.len(), 16, "12 public and 4 training-cache NEFFs under CI=true");
    }
    out
}

/// `neff_info` of `bytes` with `work` bytes of work memory and a large arena, asking the
/// document's size only: its status and error.
fn info_work(bytes: &[u8], work: usize) -> (neff_status, neff_error) {
    let src = memory(bytes);
    let mut arena = vec![0u8; neff_arena_min() + (4 << 20)];
    let bufs = buffers(&mut arena);
    let mut work = vec![0u8; work.max(1)];
    let ib =
        neff_info_buffers { work: work.as_mut_ptr(), work_len: work.len(), json: core::ptr::null_mut(), json_len: 0 };
    let mut err = new_error();
    let mut written = 0usize;
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_info(&src, &bufs, core::ptr::null(), core::ptr::null(), &ib, &mut written, &mut err) };
    (status, err)
}

#[test]
#[cfg_attr(miri, ignore = "whole real NEFFs take minutes under Miri")]
fn the_info_work_each_real_neff_needs_is_what_a_short_one_says() {
    for (name, bytes) in every_real_neff() {
        // A short buffer says what it needed when it ran out, not the total: retried with that
        // much until the document is written (here: its size asked).
        let (mut needed, mut passes) = (256usize, 0);
        loop {
            let (status, err) = info_work(&bytes, needed);
            passes += 1;
            if status == neff_status::NEFF_STATUS_BUFFER_TOO_SMALL {
                break;
            }
            assert_eq!(status, neff_status::NEFF_STATUS_RESOURCE, "{name}: {}", message(&err));
            // SAFETY: a live error.
            let said = unsafe { neff_error_needed(&err) };
            assert!(said > needed && passes < 64, "{name}: {said} after {needed}");
            needed = said;
        }
        let (mut lo, mut hi) = (256usize, needed);
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            match info_work(&bytes, mid).0 {
                neff_status::NEFF_STATUS_BUFFER_TOO_SMALL => hi = mid,
                status => {
                    assert_eq!(status, neff_status::NEFF_STATUS_RESOURCE, "{name} with {mid}");
                    lo = mid;
                }
            }
        }
        assert!(hi <= needed && hi * 2 >= needed, "{name}: least {hi}, said {needed}");
        println!("{name}: info work {hi} bytes ({passes} passes to learn {needed})");
    }
}

/// The byte the stack is painted with before a call whose stack use is measured.
const PAINT: u8 = 0xA5;
/// Bytes painted: more than any entry point takes.
const PAINTED: usize = 4 << 20;

/// Paints [`PAINTED`] bytes of stack below the caller's frame and returns their lowest address.
#[inline(never)]
fn paint() -> usize {
    let mut region = [PAINT; PAINTED];
    std::hint::black_box(&mut region);
    region.as_ptr() as usize
}

/// Bytes of stack `f` used below this function's frame, frames included: the stack is painted,
/// `f` runs where the paint was, and the lowest byte it changed marks its deepest point. Run on
/// a thread with a stack well above [`PAINTED`].
#[inline(never)]
fn stack_used(f: impl FnOnce()) -> usize {
    let here = 0u8;
    let top = std::hint::black_box(&here) as *const u8 as usize;
    let bottom = paint();
    f();
    // SAFETY: `bottom..top` is this thread's own stack, mapped and written by `paint` above;
    // nothing else writes it, and the bytes are read as plain `u8`s.
    let lowest = (bottom..top).find(|&at| unsafe { std::ptr::read_volatile(at as *const u8) } != PAINT);
    top - lowest.expect("the call wrote its stack")
}

/// The deepest real NEFF for a load's stack: the training one (DMA references waiting, long
/// names; its KELF target sunda, `neff_arch` 2).
fn deep_neff() -> Option<Vec<u8>> {
    training_neff()
}

/// A load of `bytes` (for sunda) onto a device with a notebook, with a generous arena: its
/// status.
fn load_deep(bytes: &[u8]) -> neff_status {
    let arch = 2;
    let mut dev = Device { arch, notebook: vec![0; 8 << 20], ..Device::default() };
    let mut hal = hal_of(&mut dev);
    hal.notebook_len = 8 << 20;
    hal.note = Some(dev_note);
    hal.recall = Some(dev_recall);
    let mut arena = vec![0u8; 8 << 20];
    let bufs = buffers(&mut arena);
    let mut err = new_error();
    let src = memory(bytes);
    // SAFETY: every pointer is live or null.
    unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), core::ptr::null(), core::ptr::null(), &mut err) }
}

/// `neff_info` of `bytes` with generous buffers: its status.
fn info_deep(bytes: &[u8]) -> neff_status {
    let src = memory(bytes);
    let mut arena = vec![0u8; 8 << 20];
    let bufs = buffers(&mut arena);
    let mut work = vec![0u8; 8 << 20];
    let mut json = vec![0u8; 64 << 20];
    let ib = neff_info_buffers {
        work: work.as_mut_ptr(),
        work_len: work.len(),
        json: json.as_mut_ptr(),
        json_len: json.len(),
    };
    let mut err = new_error();
    let mut written = 0usize;
    // SAFETY: every pointer is live or null.
    let status = unsafe { neff_info(&src, &bufs, core::ptr::null(), core::ptr::null(), &ib, &mut written, &mut err) };
    assert_eq!(status, neff_status::NEFF_STATUS_OK, "{}", message(&err));
    status
}

#[test]
#[cfg_attr(miri, ignore = "paints and reads the thread's own stack")]
fn the_stack_sizes_are_the_measured_peaks() {
    let Some(bytes) = deep_neff() else { return };
    let measured = std::thread::Builder::new()
        .stack_size(PAINTED * 4)
        .spawn(move || {
            let load = stack_used(|| assert_eq!(load_deep(&bytes), neff_status::NEFF_STATUS_OK));
            let info = stack_used(|| assert_eq!(info_deep(&bytes), neff_status::NEFF_STATUS_OK));
            (load, info)
        })
        .unwrap()
        .join()
        .unwrap();
    let (load, info) = measured;
    println!(
        "stack: load {load} (reported {}), info {info} (reported {})",
        neff_load_stack_size(),
        neff_info_stack_size()
    );
    // The figures are the peaks rounded up to a page, and the 8 KiB a thread's start takes: no
    // less, and not a page more.
    for (what, used, reported) in [("load", load, neff_load_stack_size()), ("info", info, neff_info_stack_size())] {
        assert!(used + 8192 <= reported && reported - used < 4096 + 8192, "{what}: used {used}, reported {reported}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "runs whole real NEFFs on threads of their own")]
fn each_entry_point_runs_on_a_thread_with_exactly_the_reported_stack() {
    let Some(bytes) = deep_neff() else { return };
    let bytes = std::sync::Arc::new(bytes);
    for (what, size) in [("load", neff_load_stack_size()), ("info", neff_info_stack_size())] {
        let bytes = bytes.clone();
        // A stack too small ends the process (the guard page): the test fails with it.
        let status = std::thread::Builder::new()
            .stack_size(size)
            .spawn(move || if what == "load" { load_deep(&bytes) } else { info_deep(&bytes) })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(status, neff_status::NEFF_STATUS_OK, "{what} on {size} bytes of stack");
    }
}

/// A subgraph's tables as observed: `(member, kbin_mem_ref_set_t, kbin_cc_streams_t,
/// fp8_conversion_info, the mla_resources tail)`.
type SubgraphRow = (String, Option<KbinMemRefSetHeader>, KbinCcStreams, Fp8ConversionInfo, Option<MlaResourcesTail>);

/// The runtime's tables as an observer saw them: through the C callbacks, or straight from the
/// core (the same rows, to compare).
#[derive(Default, Debug, PartialEq)]
struct TablesSeen {
    /// `(kind, index, name, dtype, io_node_info_t)`.
    tensors: Vec<(IoKind, u32, String, String, IoNodeInfo)>,
    queues: Vec<(String, String, KbinDmaHeader)>,
    carveouts: Vec<(String, u32, SbCarveout)>,
    subgraphs: Vec<SubgraphRow>,
    kelf_nodes: Vec<String>,
}

impl Observer for TablesSeen {
    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        self.tensors.push((t.kind, t.index, t.name.to_owned(), t.dtype.to_owned(), t.info()));
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        self.queues.push((member.to_owned(), name.to_owned(), *queue));
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        self.carveouts.push((member.to_owned(), u32::from(index), *carveout));
    }
    fn subgraph_tables(&mut self, member: &str, t: &SubgraphTables) {
        self.subgraphs.push((member.to_owned(), t.mem_ref_set, t.cc_streams, t.fp8, t.mla_tail));
    }
    fn debug(&mut self, line: &DebugLine<'_>) {
        let DebugLine::KelfNode { kelf } = *line;
        self.kelf_nodes.push(kelf.to_owned());
    }
}

/// (test) `len` bytes at `ptr` as a `String`.
///
/// # Safety
/// `ptr` points to `len` readable bytes of UTF-8.
unsafe fn lent_text(ptr: *const u8, len: usize) -> String {
    // SAFETY: (test) as the caller says.
    String::from_utf8(unsafe { core::slice::from_raw_parts(ptr, len) }.to_vec()).unwrap()
}

unsafe extern "C" fn on_io_tensor(ctx: *mut c_void, t: *const neff_io_tensor) {
    // SAFETY: (test) ctx is a `&mut TablesSeen`; `t` and what it points to live for the call.
    let (seen, t) = unsafe { (&mut *ctx.cast::<TablesSeen>(), &*t) };
    let kind = match t.kind {
        neff_io_kind::NEFF_IO_INPUT => IoKind::Input,
        neff_io_kind::NEFF_IO_OUTPUT => IoKind::Output,
    };
    // SAFETY: (test) as above.
    let (name, dtype, info) = unsafe { (lent_text(t.name, t.name_len), lent_text(t.dtype, t.dtype_len), *t.info) };
    seen.tensors.push((kind, t.index, name, dtype, info));
}

unsafe extern "C" fn on_dma_queue(ctx: *mut c_void, q: *const neff_dma_queue) {
    // SAFETY: (test) as `on_io_tensor`.
    let (seen, q) = unsafe { (&mut *ctx.cast::<TablesSeen>(), &*q) };
    // SAFETY: (test) as above.
    let row = unsafe { (lent_text(q.member, q.member_len), lent_text(q.name, q.name_len), *q.queue) };
    seen.queues.push(row);
}

unsafe extern "C" fn on_carveout(ctx: *mut c_void, c: *const neff_carveout) {
    // SAFETY: (test) as `on_io_tensor`.
    let (seen, c) = unsafe { (&mut *ctx.cast::<TablesSeen>(), &*c) };
    // SAFETY: (test) as above.
    let row = unsafe { (lent_text(c.member, c.member_len), c.index, *c.carveout) };
    seen.carveouts.push(row);
}

unsafe extern "C" fn on_subgraph_tables(ctx: *mut c_void, t: *const neff_subgraph_tables) {
    // SAFETY: (test) as `on_io_tensor`; the two optional records are null or live.
    let (seen, t) = unsafe { (&mut *ctx.cast::<TablesSeen>(), &*t) };
    // SAFETY: (test) as above.
    let row = unsafe {
        (
            lent_text(t.member, t.member_len),
            t.mem_ref_set.as_ref().copied(),
            *t.cc_streams,
            *t.fp8,
            t.mla_tail.as_ref().copied(),
        )
    };
    seen.subgraphs.push(row);
}

unsafe extern "C" fn on_debug(ctx: *mut c_void, l: *const neff_debug_line) {
    // SAFETY: (test) as `on_io_tensor`.
    let (seen, l) = unsafe { (&mut *ctx.cast::<TablesSeen>(), &*l) };
    assert_eq!(l.kind, neff_debug_kind::NEFF_DEBUG_KELF_NODE);
    // SAFETY: (test) as above.
    seen.kelf_nodes.push(unsafe { lent_text(l.subject, l.subject_len) });
}

/// An observer with every table callback (and no payload or warning callback).
fn tables_observer_of(seen: &mut TablesSeen) -> neff_observer {
    neff_observer {
        ctx: (seen as *mut TablesSeen).cast(),
        payload: None,
        warning: None,
        io_tensor: Some(on_io_tensor),
        dma_queue: Some(on_dma_queue),
        carveout: Some(on_carveout),
        subgraph_tables: Some(on_subgraph_tables),
        debug: Some(on_debug),
    }
}

/// Each table callback gets the core's record as the core hands it over, through the C
/// structs' pointers; an absent record is a null pointer; a null callback is not called (its
/// `ctx` is null here: a call would crash). Miri runs this one.
#[test]
fn the_table_callbacks_get_the_core_s_records_through_their_c_structs() {
    let shape = [3u32, 5];
    let tensor = IoTensor {
        kind: IoKind::Output,
        index: 2,
        name: "out",
        dtype: "float32",
        nrt_dtype: neff::manifest::NrtDtype::Float32,
        shape: &shape,
        size: 60,
    };
    let queue =
        KbinDmaHeader { queue_set_cnt: 4, semaphore_cnt: 1, ring_instance_count: 7, ..KbinDmaHeader::default() };
    let carveout = SbCarveout { carveout_type: 1, offset: 4096, size: 512, start_partition: 0, num_partitions: 128 };
    let tables = SubgraphTables {
        mem_ref_set: Some(KbinMemRefSetHeader { shared_scratchpad_size: 1 << 20, nmem: 9, ..Default::default() }),
        cc_streams: KbinCcStreams { num_streams: 3, ..Default::default() },
        fp8: Fp8ConversionInfo::default(),
        mla_tail: None,
    };
    let mut seen = TablesSeen::default();
    let c = tables_observer_of(&mut seen);
    let mut base = CObserver { ctx: c.ctx, payload: None, warning: None };
    let all = CTables {
        io_tensor: c.io_tensor,
        dma_queue: c.dma_queue,
        carveout: c.carveout,
        subgraph_tables: c.subgraph_tables,
        debug: c.debug,
    };
    let mut full = CFullObserver { base: &mut base, tables: all };
    let mut want = TablesSeen::default();
    for o in [&mut full as &mut dyn Observer, &mut want] {
        o.io_tensor(&tensor);
        o.dma_queue("sg00/def.json", "qSyncIO", &queue);
        o.carveout("sg00/def.json", 1, &carveout);
        o.subgraph_tables("sg00/def.json", &tables);
        o.debug(&DebugLine::KelfNode { kelf: "kelf-0.json" });
    }
    assert_eq!(seen, want);
    assert_eq!(seen.tensors[0].4.shape[..3], [3, 5, 0]);
    assert_eq!((seen.tensors[0].4.ndim, seen.tensors[0].4.size), (2, 60));
    assert_eq!(seen.subgraphs[0].4, None, "no tail: a null mla_tail");

    let mut base = CObserver { ctx: core::ptr::null_mut(), payload: None, warning: None };
    let mut none = CFullObserver { base: &mut base, tables: CTables::default() };
    none.io_tensor(&tensor);
    none.dma_queue("sg00/def.json", "qSyncIO", &queue);
    none.carveout("sg00/def.json", 1, &carveout);
    none.subgraph_tables("sg00/def.json", &tables);
    none.debug(&DebugLine::KelfNode { kelf: "kelf-0.json" });
}

/// What the core's own loader hands a Rust observer of `bytes` (a check, as `neff_check`).
fn core_tables(bytes: &[u8]) -> TablesSeen {
    let mut arena = arena();
    let mut archive =
        Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let storage = Storage { arena: &mut arena, replay: &mut [], deferred: &mut [], whole_names: &mut [] };
    let mut loader = Loader::with_storage(storage, LoadOptions::default());
    let mut seen = TablesSeen::default();
    loader.check(&mut archive, None, &mut LoadReport::default(), &mut seen, &mut |_: &Warning| {}).unwrap();
    seen
}

/// Through `neff_check` and `neff_load` alike, the C observer gets every record the core hands
/// its own observer, in the same order, on real NEFFs: the nkipy one and a bf16
/// trainium-kernel-fusion one (whose I/O tensors `tests/layouts.rs` holds to the runtime's
/// profile tables).
#[test]
#[cfg_attr(miri, ignore = "a whole real NEFF takes minutes under Miri")]
fn the_c_observer_gets_every_table_the_core_hands_over() {
    for rel in [MATMUL_SMALL, "trainium-kernel-fusion/baseline_bf16_s512/baseline.neff"] {
        let Some(bytes) = fixture(rel) else { return };
        let want = core_tables(&bytes);
        assert!(!want.tensors.is_empty() && !want.subgraphs.is_empty() && !want.queues.is_empty(), "{rel}");
        assert!(!want.kelf_nodes.is_empty(), "{rel}: no KELF node line");

        let mut arena = arena();
        let bufs = buffers(&mut arena);
        let mut err = new_error();
        let mut report = neff_report::default();
        let none = core::ptr::null_mut();
        let outputs =
            neff_outputs { report: &mut report, json: none, json_len: 0, json_written: core::ptr::null_mut() };
        let src = memory(&bytes);
        let mut checked = TablesSeen::default();
        let obs = tables_observer_of(&mut checked);
        // SAFETY: every pointer is live.
        let status = unsafe { neff_check(&src, &bufs, core::ptr::null(), &obs, &outputs, &mut err) };
        assert_eq!(status, neff_status::NEFF_STATUS_OK, "{rel}: {}", message(&err));
        assert_eq!(checked, want, "{rel}: neff_check");
        assert_eq!(report.inputs + report.outputs, want.tensors.len() as u32, "{rel}");

        let mut dev = Device { arch: 3, ..Device::default() };
        let hal = hal_of(&mut dev);
        let mut loaded = TablesSeen::default();
        let obs = tables_observer_of(&mut loaded);
        let outputs =
            neff_outputs { report: none.cast(), json: none, json_len: 0, json_written: core::ptr::null_mut() };
        // SAFETY: every pointer is live.
        let status = unsafe { neff_load(&src, &hal, &bufs, core::ptr::null(), &obs, &outputs, &mut err) };
        assert_eq!(status, neff_status::NEFF_STATUS_OK, "{rel}: {}", message(&err));
        assert_eq!(loaded, want, "{rel}: neff_load");
    }
}
