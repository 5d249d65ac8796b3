//! # neff-ffi
//!
//! A C ABI over the `neff` core, for firmware written in C (Zephyr, FreeRTOS, vendor SDKs) and
//! C/C++ host daemons. `targets/c/include/neff.h` is generated from this crate by cbindgen
//! (`scripts/gen-header.sh`); `scripts/test-all.sh` fails when the checked-in header is stale.
//!
//! What a C caller lends, and what it calls:
//!
//! * the NEFF: bytes in memory, or a `read` callback filling a lent buffer (`neff_source`);
//! * the device: a vtable of callbacks, `arch`, `alloc`, `write`, `adopt`, `release` and
//!   optionally `address` (`neff_hal`); `neff_check()` needs none;
//! * the arena, where binding keeps what it must remember, and an optional replay store
//!   (`neff_buffers`); `neff_arena_min()` is the least arena that works at all;
//! * an observer for payload placements, warnings and the runtime's tables as they are filled
//!   (`io_node_info_t`, `kbin_dma_t`, `sb_carveout`, the subgraph records; `neff_observer`, optional);
//! * a `neff_report` and a buffer for the JSON report (both optional), and a
//!   `neff_error` for the failure (optional).
//!
//! The loader state and the archive reader (with its 32 KiB inflate window) live on the
//! caller's stack during the call: `neff_load_stack_size()` gives their size.
//!
//! No panic crosses the boundary: the core never panics by design (its lints deny every
//! panicking construct), this crate checks every pointer and length it can before use, and
//! the static library is built with `panic = "abort"`: a panic, were one left, would stop the
//! program at once (C's `abort`), never unwind into C.
//!
//! `unsafe` is confined to the boundary itself: dereferencing what the caller lent
//! (`buffers`), calling the caller's callbacks (`source`, `hal`) and the error slot
//! (`error`); each block says why it is sound. The core stays `forbid(unsafe_code)`.
#![cfg_attr(not(test), no_std)]
#![allow(non_camel_case_types)]
// `neff::Error` is ~300 bytes by value: with no heap there is nothing to box it into.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

pub mod error;
pub mod hal;
mod info;
mod json;
pub mod kinds;
pub mod names;
pub mod source;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests;

use core::ffi::c_void;

use neff::archive::{Archive, OpenOptions};
use neff::hal::{Hal, NullDevice};
use neff::header::{DigestOrder, Integrity};
use neff::loader::{
    DebugLine, LoadOptions, LoadReport, Loader, Needs, Observer, PayloadReport, PayloadState, Storage, SubgraphTables,
};
use neff::manifest::{Arch, STRING_SCRATCH};
use neff::manifest::{
    Fp8ConversionInfo, IoKind, IoNodeInfo, IoTensor, KbinCcStreams, KbinDmaHeader, KbinMemRefSetHeader,
    MlaResourcesTail, SbCarveout,
};
use neff::{Error, Warning};

pub(crate) use names::VERSION;

use core::cell::Cell;

use error::{neff_error, neff_status, neff_warning, store, store_read, What};
use hal::{neff_hal, ArchValue, BadHal, CHal, UsageValue};
use source::{neff_source, Reader};

/// Memory the caller lends a load or check, as pointer and length. A null pointer with a
/// length of 0 lends nothing.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_buffers {
    /// The arena: the tokenizer's string scratch (`neff_arena_min()` bytes), then the records
    /// binding keeps (3,035 to 3,435 bytes for the twelve public real NEFFs, up to 36,723 for
    /// the real training NEFFs measured, with a notebook; `neff_report.arena_peak` says what a
    /// NEFF took, `neff_report.arena_needed` the whole arena). Required, unless the library was built with an arena of its own
    /// (`neff_builtin_arena_size()`): then null with a length of 0 uses that one.
    pub arena: *mut u8,
    /// Bytes at `arena`.
    pub arena_len: usize,
    /// The replay store: the bytes of members read before the manifest that names them (a
    /// member the tar holds ahead of its manifest). Optional (null, 0).
    pub replay: *mut u8,
    /// Bytes at `replay`.
    pub replay_len: usize,
}

/// How a load or check behaves. A null `const neff_options *` means all zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct neff_options {
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1`.
    pub allow_legacy: bool,
    /// Check the header hash (MD5 or SHA-256 of the payload) while it streams past; the
    /// outcome is in `neff_report.integrity` (a mismatch is a warning, as in the runtime).
    pub verify_integrity: bool,
    /// For `neff_check()`: the device architecture to gate the KELF target against
    /// (2 sunda, 3 cayman, 4 mariana), or 0 for none.
    pub arch: ArchValue,
}

/// What became of a payload.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_payload_state {
    /// Streamed into a staging region; its role was not known yet.
    NEFF_PAYLOAD_STAGED = 0,
    /// In its final region with its final usage class.
    NEFF_PAYLOAD_PLACED = 1,
    /// Nothing referenced it: its staging region was released.
    NEFF_PAYLOAD_RELEASED = 2,
    /// Checked but stored nowhere (`neff_check()`).
    NEFF_PAYLOAD_CHECKED = 3,
}

/// One payload, as the observer's `payload` callback sees it (once the chain is bound, in tar
/// order). Its pointers live for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_payload {
    /// The member's path (UTF-8, `member_len` bytes, not NUL-terminated).
    pub member: *const u8,
    /// Bytes at `member`.
    pub member_len: usize,
    /// Its position among the payload members, from 1.
    pub seq: u32,
    /// The subgraph (core) it belongs to, or -1.
    pub core: i32,
    /// The usage class.
    pub usage: UsageValue,
    /// What became of it.
    pub state: neff_payload_state,
    /// Bytes that landed (a `.npy` member's array data only).
    pub len: u64,
    /// The member's size in the tar.
    pub member_size: u64,
    /// XXH3-64 (seed 0) of the bytes that landed.
    pub digest: u64,
    /// The device region (valid if `has_region`).
    pub region: u32,
    /// Whether it has a region.
    pub has_region: bool,
    /// The region's device address (valid if `has_address`).
    pub address: u64,
    /// Whether the address is known.
    pub has_address: bool,
}

/// Whether an I/O tensor is a graph input or output.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_io_kind {
    /// An `arg_nodes` entry of `neff.json`.
    NEFF_IO_INPUT = 0,
    /// A `heads` entry (one per distinct name).
    NEFF_IO_OUTPUT = 1,
}

/// One input or output tensor of `neff.json`, as the observer's `io_tensor` callback sees it
/// (once the document is read, inputs then outputs). Its pointers live for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_io_tensor {
    /// The tensor's name (UTF-8, `name_len` bytes, not NUL-terminated).
    pub name: *const u8,
    /// Bytes at `name`.
    pub name_len: usize,
    /// The dtype string of `attrs.dltype` (`"float32"`, ...; `dtype_len` bytes).
    pub dtype: *const u8,
    /// Bytes at `dtype`.
    pub dtype_len: usize,
    /// Input or output.
    pub kind: neff_io_kind,
    /// Its position among the inputs, or among the distinct outputs.
    pub index: u32,
    /// The runtime's `io_node_info_t`: bytes, `nrt_dtype_t`, shape and rank.
    pub info: *const IoNodeInfo,
}

/// One DMA queue set of a `def.json`, as the observer's `dma_queue` callback sees it (as the
/// document is read). Its pointers live for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_dma_queue {
    /// The `def.json` member (`member_len` bytes, not NUL-terminated).
    pub member: *const u8,
    /// Bytes at `member`.
    pub member_len: usize,
    /// The queue set's name (`name_len` bytes).
    pub name: *const u8,
    /// Bytes at `name`.
    pub name_len: usize,
    /// The runtime's `kbin_dma_t`, without its `ring_instances` pointer array.
    pub queue: *const KbinDmaHeader,
}

/// One state-buffer carveout of a `def.json` (an entry of `runtime_statebuffer_reservation`),
/// as the observer's `carveout` callback sees it. Its pointers live for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_carveout {
    /// The `def.json` member (`member_len` bytes, not NUL-terminated).
    pub member: *const u8,
    /// Bytes at `member`.
    pub member_len: usize,
    /// Its position in `runtime_statebuffer_reservation`, from 0.
    pub index: u32,
    /// The runtime's `sb_carveout`.
    pub carveout: *const SbCarveout,
}

/// A subgraph's records of the runtime's, filled from its `def.json` once it is read (the
/// pointer-free parts of `mla_resources`), as the observer's `subgraph_tables` callback sees
/// them. Its pointers live for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_subgraph_tables {
    /// The `def.json` member (`member_len` bytes, not NUL-terminated).
    pub member: *const u8,
    /// Bytes at `member`.
    pub member_len: usize,
    /// The runtime's `kbin_mem_ref_set_t` without its `mem` array; NULL when the var count or
    /// the shared scratchpad does not fit its field.
    pub mem_ref_set: *const KbinMemRefSetHeader,
    /// The runtime's `kbin_cc_streams_t` (`num_streams`, 1 when the key is absent).
    pub cc_streams: *const KbinCcStreams,
    /// The runtime's `fp8_conversion_info` (`fp8_conversion_config`), the runtime's debug
    /// overrides applied (none through this ABI: the document's values).
    pub fp8: *const Fp8ConversionInfo,
    /// The pointer-free tail of `mla_resources` (`CCSTMI`, the fp8 config, the input and output
    /// var counts); NULL when a count does not fit its field.
    pub mla_tail: *const MlaResourcesTail,
}

/// Which of the runtime's debug lines a `neff_debug_line` is.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_debug_kind {
    /// libnrt's `Found KELF node: %s`: a KELF node of `neff.json` the chain takes; `subject` is
    /// the member its `attrs.kelf` names (`kelf-0.json`).
    NEFF_DEBUG_KELF_NODE = 0,
}

/// One of libnrt's debug log lines, where the loader meets what the runtime logs, with its
/// facts (no text is formatted: a firmware prints it as it likes, e.g.
/// `printf("Found KELF node: %.*s\n", (int)l->subject_len, (const char *)l->subject)`).
/// Its pointers live for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_debug_line {
    /// Which line.
    pub kind: neff_debug_kind,
    /// Its subject (`subject_len` bytes, not NUL-terminated).
    pub subject: *const u8,
    /// Bytes at `subject`.
    pub subject_len: usize,
}

/// Observer callbacks, each optional (NULL: not called); `ctx` is passed as is.
///
/// `payload` and `warning` come first, as in the first release; the runtime's tables follow
/// (`io_tensor` to `debug`), appended: a caller that initialises the struct positionally with
/// the first three, or by designated initialisers, leaves them NULL. The library reads the
/// whole struct of the header it was built with, so a program is built against the library's
/// own `neff.h` (`neff_init()` checks the version). `neff_info()` calls `payload` and `warning`
/// only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_observer {
    /// Passed to the callbacks.
    pub ctx: *mut c_void,
    /// A payload, once the chain is bound.
    pub payload: Option<unsafe extern "C" fn(ctx: *mut c_void, payload: *const neff_payload)>,
    /// A warning (the load goes on).
    pub warning: Option<unsafe extern "C" fn(ctx: *mut c_void, warning: *const neff_warning)>,
    /// An input or output tensor of `neff.json` with its `io_node_info_t`, once the document
    /// is read.
    pub io_tensor: Option<unsafe extern "C" fn(ctx: *mut c_void, tensor: *const neff_io_tensor)>,
    /// A DMA queue set of a `def.json` with its `kbin_dma_t`, as it is read.
    pub dma_queue: Option<unsafe extern "C" fn(ctx: *mut c_void, queue: *const neff_dma_queue)>,
    /// A state-buffer carveout of a `def.json` with its `sb_carveout`, as it is read.
    pub carveout: Option<unsafe extern "C" fn(ctx: *mut c_void, carveout: *const neff_carveout)>,
    /// A `def.json`'s subgraph-wide records (`kbin_mem_ref_set_t`, `kbin_cc_streams_t`,
    /// `fp8_conversion_info`, the `mla_resources` tail), once it is read.
    pub subgraph_tables: Option<unsafe extern "C" fn(ctx: *mut c_void, tables: *const neff_subgraph_tables)>,
    /// One of libnrt's debug log lines (`Found KELF node: %s`).
    pub debug: Option<unsafe extern "C" fn(ctx: *mut c_void, line: *const neff_debug_line)>,
}

/// The header hash check's outcome.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_integrity {
    /// The archive was not finished (the load failed before its end).
    NEFF_INTEGRITY_NONE = 0,
    /// Not requested (`verify_integrity` false).
    NEFF_INTEGRITY_NOT_REQUESTED = 1,
    /// The payload's digest equals the header's hash (in `integrity_order`).
    NEFF_INTEGRITY_MATCH = 2,
    /// It does not (a warning was sent).
    NEFF_INTEGRITY_MISMATCH = 3,
    /// Requested, but the `pkg_version` names no digest.
    NEFF_INTEGRITY_NOT_APPLICABLE = 4,
}

/// A `neff_integrity`, held as its 32 bits (written `neff_integrity` in C: see `HalResult`).
pub type IntegrityValue = u32;

/// A `neff_digest_order`, held as its 32 bits (written `neff_digest_order` in C).
pub type DigestOrderValue = u32;

/// The byte order a matching MD5 is stored in.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_digest_order {
    /// No match.
    NEFF_ORDER_NONE = 0,
    /// As the algorithm defines it (neuronx-cc 2.0, every SHA-256).
    NEFF_ORDER_PLAIN = 1,
    /// Each 4-byte word reversed (neuronx-cc 2.18 and later, `neff pack`).
    NEFF_ORDER_WORD_SWAPPED = 2,
}

/// The summary of a load or check, fixed size.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct neff_report {
    /// Tar members walked.
    pub members: u32,
    /// Manifests read.
    pub manifests: u32,
    /// Subgraphs of the chain.
    pub subgraphs: u32,
    /// Payload members read.
    pub payloads: u32,
    /// Payloads placed (or checked, without a device).
    pub placed: u32,
    /// Payloads nothing referenced (released).
    pub released: u32,
    /// Inputs of `neff.json`.
    pub inputs: u32,
    /// Outputs of `neff.json`.
    pub outputs: u32,
    /// Warnings sent to the observer.
    pub warnings: u32,
    /// The header hash check.
    pub integrity: IntegrityValue,
    /// On a match, its byte order.
    pub integrity_order: DigestOrderValue,
    /// Bytes of `computed_hash` (16 for MD5, 32 for SHA-256, 0 when not computed).
    pub computed_hash_len: u32,
    /// The payload's digest in its plain order, when computed.
    pub computed_hash: [u8; 32],
    /// Bytes placed (or checked).
    pub bytes_placed: u64,
    /// Bytes of tar stream inflated.
    pub inflated_bytes: u64,
    /// Bytes of compressed payload read.
    pub compressed_bytes: u64,
    /// Zero padding after the gzip stream.
    pub padding_bytes: u64,
    /// Bytes after `data_size`.
    pub trailing_bytes: u64,
    /// The most bytes of the arena's records in use at once (after the string scratch).
    pub arena_peak: u64,
    /// What this load needed of each lent buffer, measured as it ran (also after a failure:
    /// then at least these). Lend a generous arena, replay store and notebook once (on a
    /// host: untouched pages cost nothing), read these, and the same NEFF loads within them.
    /// Bytes of arena: this target's string scratch (`neff_arena_min()`) plus `arena_peak`.
    pub arena_needed: u64,
    /// Bytes of the replay store in use at once (0 with none lent: every member read once).
    pub replay_needed: u64,
    /// Bytes of the device's notebook used (`neff_hal.notebook_len`): a landing per payload
    /// from its start, DMA references waiting for their `def.json` from its end.
    pub notebook_needed: u64,
    /// Deferred-error slots in use at once (the loader keeps 4 of its own).
    pub deferred_needed: u64,
}

impl neff_report {
    fn of(r: &LoadReport, needs: &Needs) -> Self {
        let (integrity, order, computed) = match r.integrity {
            None => (neff_integrity::NEFF_INTEGRITY_NONE, neff_digest_order::NEFF_ORDER_NONE, None),
            Some(Integrity::NotRequested) => {
                (neff_integrity::NEFF_INTEGRITY_NOT_REQUESTED, neff_digest_order::NEFF_ORDER_NONE, None)
            }
            Some(Integrity::Match { order, computed }) => {
                let order = match order {
                    DigestOrder::Plain => neff_digest_order::NEFF_ORDER_PLAIN,
                    DigestOrder::WordSwapped => neff_digest_order::NEFF_ORDER_WORD_SWAPPED,
                };
                (neff_integrity::NEFF_INTEGRITY_MATCH, order, Some(computed))
            }
            Some(Integrity::Mismatch { computed, .. }) => {
                (neff_integrity::NEFF_INTEGRITY_MISMATCH, neff_digest_order::NEFF_ORDER_NONE, Some(computed))
            }
            Some(Integrity::NotApplicable) => {
                (neff_integrity::NEFF_INTEGRITY_NOT_APPLICABLE, neff_digest_order::NEFF_ORDER_NONE, None)
            }
        };
        let mut computed_hash = [0u8; 32];
        let hash = computed.as_ref().map_or(&[][..], |h| h.as_bytes());
        let n = hash.len().min(computed_hash.len());
        if let (Some(dst), Some(src)) = (computed_hash.get_mut(..n), hash.get(..n)) {
            dst.copy_from_slice(src);
        }
        Self {
            members: r.members,
            manifests: r.manifests,
            subgraphs: r.subgraphs,
            payloads: r.payloads,
            placed: r.placed,
            released: r.released,
            inputs: r.inputs,
            outputs: r.outputs,
            warnings: r.warnings,
            integrity: integrity as u32,
            integrity_order: order as u32,
            computed_hash_len: n as u32,
            computed_hash,
            bytes_placed: r.bytes_placed,
            inflated_bytes: r.inflated_bytes,
            compressed_bytes: r.compressed_bytes,
            padding_bytes: r.padding_bytes,
            trailing_bytes: r.trailing_bytes,
            arena_peak: r.arena_peak,
            arena_needed: needs.arena,
            replay_needed: needs.replay,
            notebook_needed: needs.notebook,
            deferred_needed: u64::from(needs.deferred),
        }
    }
}

/// Where a load's outputs go: each optional.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_outputs {
    /// The summary (null: not wanted).
    pub report: *mut neff_report,
    /// A buffer for the JSON report, the object `neff load --json` prints as its summary
    /// (null: not wanted). 1 KiB is enough for any NEFF.
    pub json: *mut u8,
    /// Bytes at `json`.
    pub json_len: usize,
    /// If non-null, receives the bytes of JSON written (not NUL-terminated); with
    /// `NEFF_STATUS_BUFFER_TOO_SMALL`, the bytes the report needs (as `neff_error_needed()`);
    /// with any other failure, 0.
    pub json_written: *mut usize,
}

/// Bytes of the arena built into the library (`NEFF_FFI_BUILTIN_ARENA` when it was built, else
/// 0), for firmware: it sits on the stack in the frame that loads, entered once the archive is
/// open, so it reuses the stack the open took (a lent arena is live during the open too).
pub const BUILTIN_ARENA: usize = match option_env!("NEFF_FFI_BUILTIN_ARENA") {
    Some(bytes) => parse_size(bytes.as_bytes()),
    None => 0,
};

/// A decimal size, at compile time.
// A panic here is a build error (the value is a constant), never a run-time one.
#[allow(clippy::panic, clippy::arithmetic_side_effects)]
const fn parse_size(mut digits: &[u8]) -> usize {
    let mut n = 0usize;
    while let [d, rest @ ..] = digits {
        if !d.is_ascii_digit() {
            panic!("NEFF_FFI_BUILTIN_ARENA: not a decimal number of bytes");
        }
        n = n * 10 + (*d - b'0') as usize;
        digits = rest;
    }
    n
}

/// Bytes of the library's own arena (set by `NEFF_FFI_BUILTIN_ARENA` when the library was
/// built; 0: none, every caller lends one).
#[no_mangle]
pub extern "C" fn neff_builtin_arena_size() -> usize {
    BUILTIN_ARENA
}

/// Bytes of arena below which no load can work: the tokenizer's string scratch, which comes
/// off the arena's front (1 KiB on thumbv7em, more on hosted targets). Lend this plus what
/// the records take (`neff_report.arena_peak`).
#[no_mangle]
pub extern "C" fn neff_arena_min() -> usize {
    STRING_SCRATCH
}

/// Bytes of stack a thread needs to run a load, frames included, besides a built-in arena: the
/// peak measured on the real training NEFF that takes every path (DMA references waiting for
/// their `def.json`, 468-byte names), rounded up to 4 KiB, plus on a hosted target the 8 KiB
/// a thread's own start and TLS take (x86_64 Linux). x86_64:
/// `the_stack_sizes_are_the_measured_peaks` (tests.rs) measures the peaks, and
/// `each_entry_point_runs_on_a_thread_with_exactly_the_reported_stack` runs each entry point on
/// a thread with exactly the figure; thumbv7em: the C firmware image paints its stack under
/// QEMU and checks the figure against what its loads used. Other hosted targets take the
/// x86_64 figures, unmeasured there.
const LOAD_STACK: usize = if cfg!(target_os = "none") {
    LOAD_STACK_THUMBV7EM
} else if cfg!(debug_assertions) {
    (352 + 8) * 1024
} else {
    (176 + 8) * 1024
};
/// [`LOAD_STACK`] for an info call (a check with the document's work).
const INFO_STACK: usize = if cfg!(target_os = "none") {
    INFO_STACK_THUMBV7EM
} else if cfg!(debug_assertions) {
    (408 + 8) * 1024
} else {
    (192 + 8) * 1024
};
/// The thumbv7em figure, as the C firmware image measures it (`--profile firmware`, its
/// `neff_load: ... used below its call` line): 101,448 bytes with its built-in arena of 37,888,
/// so 63,560 of frames and state, rounded up to a 4 KiB total.
const LOAD_STACK_THUMBV7EM: usize = 63 * 1024;
/// The info call on thumbv7em is not measured (the C firmware image links no info call): the
/// load's figure plus what the info call holds besides a load's state (the document's work and
/// its observer), an estimate.
const INFO_STACK_THUMBV7EM: usize = LOAD_STACK_THUMBV7EM
    .saturating_add(core::mem::size_of::<core::cell::RefCell<info::Work<'static>>>())
    .saturating_add(core::mem::size_of::<info::InfoObserver<'static, 'static>>());

/// Bytes of the caller's stack a load or check takes, frames included: the library's deepest
/// path as measured on this target, plus the built-in arena if any. A thread with this much
/// stack can call `neff_load()` or `neff_check()`.
#[no_mangle]
pub extern "C" fn neff_load_stack_size() -> usize {
    LOAD_STACK.saturating_add(BUILTIN_ARENA)
}

/// Bytes of a `neff_error` (also `sizeof(neff_error)`): for callers that allocate it
/// dynamically.
#[no_mangle]
pub extern "C" fn neff_error_size() -> usize {
    core::mem::size_of::<neff_error>()
}

/// The caller's observer as the core's observer and warning sink.
pub(crate) struct CObserver {
    pub(crate) ctx: *mut c_void,
    pub(crate) payload: Option<unsafe extern "C" fn(*mut c_void, *const neff_payload)>,
    pub(crate) warning: Option<unsafe extern "C" fn(*mut c_void, *const neff_warning)>,
}

impl Observer for CObserver {
    fn payload(&mut self, p: &PayloadReport<'_>) {
        let Some(callback) = self.payload else { return };
        let state = match p.state {
            PayloadState::Staged => neff_payload_state::NEFF_PAYLOAD_STAGED,
            PayloadState::Placed => neff_payload_state::NEFF_PAYLOAD_PLACED,
            PayloadState::Released => neff_payload_state::NEFF_PAYLOAD_RELEASED,
            PayloadState::Checked => neff_payload_state::NEFF_PAYLOAD_CHECKED,
        };
        let c = neff_payload {
            member: p.member.as_ptr(),
            member_len: p.member.len(),
            seq: p.seq,
            core: p.core.map_or(-1, i32::from),
            usage: p.usage as u32,
            state,
            len: p.len,
            member_size: p.member_len,
            digest: p.digest,
            region: p.region.map_or(0, |r| r.0),
            has_region: p.region.is_some(),
            address: p.address.unwrap_or(0),
            has_address: p.address.is_some(),
        };
        // SAFETY: the callback is the caller's, non-null; `&c` and the member text it points
        // to live for the call, as `neff_payload` documents.
        unsafe { callback(self.ctx, &c) };
    }
}

/// The caller's callbacks for the runtime's tables (the members of `neff_observer` after
/// `warning`), which a load and a check call besides [`CObserver`]'s.
#[derive(Clone, Copy, Default)]
pub(crate) struct CTables {
    io_tensor: Option<unsafe extern "C" fn(*mut c_void, *const neff_io_tensor)>,
    dma_queue: Option<unsafe extern "C" fn(*mut c_void, *const neff_dma_queue)>,
    carveout: Option<unsafe extern "C" fn(*mut c_void, *const neff_carveout)>,
    subgraph_tables: Option<unsafe extern "C" fn(*mut c_void, *const neff_subgraph_tables)>,
    debug: Option<unsafe extern "C" fn(*mut c_void, *const neff_debug_line)>,
}

/// The observer of a load or check: the caller's [`CObserver`] and its [`CTables`].
pub(crate) struct CFullObserver<'c> {
    base: &'c mut CObserver,
    tables: CTables,
}

impl Observer for CFullObserver<'_> {
    fn payload(&mut self, p: &PayloadReport<'_>) {
        self.base.payload(p);
    }

    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        let Some(callback) = self.tables.io_tensor else { return };
        let info = t.info();
        let kind = match t.kind {
            IoKind::Input => neff_io_kind::NEFF_IO_INPUT,
            IoKind::Output => neff_io_kind::NEFF_IO_OUTPUT,
        };
        let c = neff_io_tensor {
            name: t.name.as_ptr(),
            name_len: t.name.len(),
            dtype: t.dtype.as_ptr(),
            dtype_len: t.dtype.len(),
            kind,
            index: t.index,
            info: &info,
        };
        // SAFETY: the callback is the caller's, non-null; `&c` and what it points to live for
        // the call, as `neff_io_tensor` documents.
        unsafe { callback(self.base.ctx, &c) };
    }

    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        let Some(callback) = self.tables.dma_queue else { return };
        let c = neff_dma_queue {
            member: member.as_ptr(),
            member_len: member.len(),
            name: name.as_ptr(),
            name_len: name.len(),
            queue,
        };
        // SAFETY: as for `io_tensor`, for `neff_dma_queue`.
        unsafe { callback(self.base.ctx, &c) };
    }

    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        let Some(callback) = self.tables.carveout else { return };
        let c = neff_carveout { member: member.as_ptr(), member_len: member.len(), index: u32::from(index), carveout };
        // SAFETY: as for `io_tensor`, for `neff_carveout`.
        unsafe { callback(self.base.ctx, &c) };
    }

    fn subgraph_tables(&mut self, member: &str, tables: &SubgraphTables) {
        let Some(callback) = self.tables.subgraph_tables else { return };
        let c = neff_subgraph_tables {
            member: member.as_ptr(),
            member_len: member.len(),
            mem_ref_set: tables.mem_ref_set.as_ref().map_or(core::ptr::null(), |m| m),
            cc_streams: &tables.cc_streams,
            fp8: &tables.fp8,
            mla_tail: tables.mla_tail.as_ref().map_or(core::ptr::null(), |m| m),
        };
        // SAFETY: as for `io_tensor`, for `neff_subgraph_tables`.
        unsafe { callback(self.base.ctx, &c) };
    }

    fn debug(&mut self, line: &DebugLine<'_>) {
        let Some(callback) = self.tables.debug else { return };
        let (kind, subject) = match *line {
            DebugLine::KelfNode { kelf } => (neff_debug_kind::NEFF_DEBUG_KELF_NODE, kelf),
        };
        let c = neff_debug_line { kind, subject: subject.as_ptr(), subject_len: subject.len() };
        // SAFETY: as for `io_tensor`, for `neff_debug_line`.
        unsafe { callback(self.base.ctx, &c) };
    }
}

impl neff::WarningSink for CObserver {
    fn warn(&mut self, w: &Warning) {
        let Some(callback) = self.warning else { return };
        let c = neff_warning::of(w);
        // SAFETY: the callback is the caller's, non-null; `&c` and what it points to (`w`
        // included) live for the call, as `neff_warning` documents.
        unsafe { callback(self.ctx, &c) };
    }
}

/// The caller's arguments, checked and borrowed for the call.
pub(crate) struct Lent<'a> {
    pub(crate) reader: Reader<'a>,
    pub(crate) file_size: Option<u64>,
    /// `None`: the library's own (`BUILTIN_ARENA`).
    pub(crate) arena: Option<&'a mut [u8]>,
    pub(crate) replay: &'a mut [u8],
    pub(crate) options: neff_options,
    pub(crate) observer: CObserver,
    /// The observer's callbacks for the runtime's tables (a load's and a check's).
    pub(crate) tables: CTables,
}

/// A lent buffer, by the name the C API gives it, for the overlap checks: its first byte's
/// address and its length (0: lends nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) name: &'static str,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

impl Span {
    /// Nothing lent.
    const NONE: Span = Span { name: "", start: 0, len: 0 };

    /// `len` bytes at `ptr`.
    fn bytes<T>(name: &'static str, ptr: *const T, len: usize) -> Self {
        Span { name, start: ptr as usize, len }
    }

    /// One `T` at `ptr` (nothing if null).
    fn one<T>(name: &'static str, ptr: *const T) -> Self {
        Span { name, start: ptr as usize, len: core::mem::size_of::<T>() }
    }
}

/// The first two lent buffers that share a byte, by name.
fn first_overlap(spans: &[Span]) -> Option<(&'static str, &'static str)> {
    spans.iter().enumerate().find_map(|(i, a)| {
        spans
            .iter()
            .skip(i.saturating_add(1))
            .find(|b| overlaps((a.start, a.len), (b.start, b.len)))
            .map(|b| (a.name, b.name))
    })
}

/// A misuse of the API, found before anything is read: `NEFF_STATUS_BAD_ARGUMENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Misuse {
    /// What was wrong.
    Argument(&'static str),
    /// Two lent buffers share a byte: their names.
    Overlap(&'static str, &'static str),
}

impl From<&'static str> for Misuse {
    fn from(what: &'static str) -> Self {
        Misuse::Argument(what)
    }
}

/// Records a misuse; `NEFF_STATUS_BAD_ARGUMENT`.
fn refuse(err: *mut neff_error, misuse: Misuse) -> neff_status {
    match misuse {
        Misuse::Argument(what) => bad_argument(err, neff_status::NEFF_STATUS_BAD_ARGUMENT, what),
        Misuse::Overlap(first, second) => {
            // An error slot that overlaps another buffer is left as it was: writing it would
            // write that buffer (the source, even).
            if first != ERROR_SPAN && second != ERROR_SPAN {
                store(err, What::Overlap(first, second));
            }
            neff_status::NEFF_STATUS_BAD_ARGUMENT
        }
    }
}

/// `len` bytes at `ptr` as a mutable slice: empty for (null, 0), an error for null with a length.
///
/// # Safety
/// A non-null `ptr` must point to `len` bytes the caller lends for `'a`, writable, and not
/// used through another pointer while lent.
unsafe fn lent_mut<'a>(ptr: *mut u8, len: usize, what: &'static str) -> Result<&'a mut [u8], &'static str> {
    if ptr.is_null() {
        return if len == 0 { Ok(&mut []) } else { Err(what) };
    }
    if len > isize::MAX as usize {
        return Err(what);
    }
    // SAFETY: non-null, `len` fits an allocation, and the caller's contract (above) gives the
    // rest; `u8` needs no alignment.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// The buffers an entry point lends besides the source and `neff_buffers` (its outputs and its
/// `neff_error`), for the overlap checks.
pub(crate) type Others = [Span; 4];

/// Checks and borrows the arguments every entry point shares. Every lent buffer (the source's,
/// the arena, the replay store and `others`) is checked against every other before any is
/// used: the source is never written, and no write lands in another buffer.
///
/// # Safety
/// Each non-null pointer points to its type (a `neff_source`, `neff_buffers`, `neff_options`,
/// `neff_observer`), and the memory those lend is as their docs say, for `'a`.
unsafe fn borrow<'a>(
    source: *const neff_source,
    buffers: *const neff_buffers,
    options: *const neff_options,
    observer: *const neff_observer,
    others: &Others,
    read_failure: &'a Cell<isize>,
) -> Result<Lent<'a>, Misuse> {
    if source.is_null() || !source.is_aligned() {
        return Err("source: null or misaligned".into());
    }
    if buffers.is_null() || !buffers.is_aligned() {
        return Err("buffers: null or misaligned".into());
    }
    // SAFETY: non-null and aligned, and a `neff_source` by the caller's contract; copied.
    let src = unsafe { *source };
    // SAFETY: as above, for the `neff_buffers`.
    let bufs = unsafe { *buffers };
    let options = if options.is_null() || !options.is_aligned() {
        neff_options::default()
    } else {
        // SAFETY: non-null, aligned, a `neff_options` by contract; copied.
        unsafe { *options }
    };
    let (observer, tables) = if observer.is_null() || !observer.is_aligned() {
        (CObserver { ctx: core::ptr::null_mut(), payload: None, warning: None }, CTables::default())
    } else {
        // SAFETY: non-null, aligned, a `neff_observer` by contract; copied.
        let o = unsafe { *observer };
        let tables = CTables {
            io_tensor: o.io_tensor,
            dma_queue: o.dma_queue,
            carveout: o.carveout,
            subgraph_tables: o.subgraph_tables,
            debug: o.debug,
        };
        (CObserver { ctx: o.ctx, payload: o.payload, warning: o.warning }, tables)
    };
    // `BUILTIN_ARENA` is set when the library is built: 0 by default, which clippy sees.
    #[allow(clippy::absurd_extreme_comparisons)]
    let builtin = bufs.arena.is_null() && bufs.arena_len == 0 && BUILTIN_ARENA >= STRING_SCRATCH;
    if !builtin && (bufs.arena.is_null() || bufs.arena_len < STRING_SCRATCH) {
        return Err("buffers.arena: null (and no built-in arena) or shorter than neff_arena_min()".into());
    }
    // Every overlap is refused before any slice is made: a `&mut` slice sharing a byte with
    // another slice would itself be undefined behaviour (Miri caught a check made after them).
    let source_span = if src.bytes.is_null() {
        Span::bytes("source.buf", src.buf, src.buf_len)
    } else {
        Span::bytes("source.bytes", src.bytes, src.len)
    };
    let [a, b, c, d] = *others;
    let spans = [
        source_span,
        Span::bytes("buffers.arena", bufs.arena, bufs.arena_len),
        Span::bytes("buffers.replay", bufs.replay, bufs.replay_len),
        a,
        b,
        c,
        d,
    ];
    if let Some((first, second)) = first_overlap(&spans) {
        return Err(Misuse::Overlap(first, second));
    }
    let (reader, file_size) = if !src.bytes.is_null() {
        if src.len > isize::MAX as usize {
            return Err("source.len: larger than any object".into());
        }
        // SAFETY: non-null, `len` fits an allocation; the caller lends `len` readable bytes at
        // `bytes` for the call and does not write them meanwhile (`neff_source`'s contract);
        // no lent buffer overlaps them (checked above).
        let bytes = unsafe { core::slice::from_raw_parts(src.bytes, src.len) };
        (Reader::Memory(bytes), Some(src.len as u64))
    } else {
        let Some(read) = src.read else { return Err("source: neither bytes nor a read callback".into()) };
        if src.buf.is_null() || src.buf_len == 0 {
            return Err("source.buf: a read callback needs a buffer of at least 1 byte".into());
        }
        // SAFETY: the caller lends `buf_len` writable bytes at `buf` (the contract above), which
        // overlap no other lent buffer (checked above).
        let buf = unsafe { lent_mut(src.buf, src.buf_len, "source.buf") }?;
        (Reader::callback(read, src.ctx, buf, read_failure), (src.file_size != 0).then_some(src.file_size))
    };
    let arena = if builtin {
        None
    } else {
        // SAFETY: the caller lends `arena_len` writable bytes at `arena` (the contract above),
        // and they overlap no other lent buffer (checked above).
        Some(unsafe { lent_mut(bufs.arena, bufs.arena_len, "buffers.arena") }?)
    };
    // SAFETY: as for the arena, for the replay store.
    let replay = unsafe { lent_mut(bufs.replay, bufs.replay_len, "buffers.replay: null with a length") }?;
    Ok(Lent { reader, file_size, arena, replay, options, observer, tables })
}

/// Whether two lent buffers (address, length) share a byte.
fn overlaps((a0, a_len): (usize, usize), (b0, b_len): (usize, usize)) -> bool {
    a0 != 0 && b0 != 0 && a_len != 0 && b_len != 0 && a0 < b0.saturating_add(b_len) && b0 < a0.saturating_add(a_len)
}

/// Why a load or check that got past its arguments failed.
pub(crate) enum Failed {
    /// The core's error (every region the load allocated was released).
    Core(Error),
    /// The load succeeded, but its JSON report needs `needed` bytes, more than the caller lent:
    /// the load was undone.
    ReportTooLong { needed: usize },
}

/// One load or check. The big objects are spread over frames as the Rust firmware image
/// spreads them (targets/qemu-m4/src/load.rs): this frame holds the archive reader, borrowed
/// out of its `Result` (a move would copy the ~46 KB reader into a second slot), and the copy
/// `Archive::open` makes lives in `open`'s frame, gone before `load` builds the loader.
/// Returns the bytes of JSON report written into `json` (0 for none).
///
/// Generic over the device (the caller's, or the core's `NullDevice` for a check), so that a
/// program that only loads links no check path, and the reverse.
#[inline(never)]
fn run<H: Hal>(
    lent: Lent<'_>,
    device: &mut H,
    report: &mut LoadReport,
    needs: &mut Needs,
    json: Option<&mut [u8]>,
) -> Result<usize, Failed> {
    let Lent { reader, file_size, arena, replay, options, mut observer, tables } = lent;
    let mut opened = open(reader, file_size, options.verify_integrity, &mut observer);
    let archive = match &mut opened {
        Ok(archive) => archive,
        Err(e) => return Err(Failed::Core(*e)),
    };
    let mut observer = CFullObserver { base: &mut observer, tables };
    load(archive, arena, replay, options.allow_legacy, device, report, needs, &mut observer, json)
}

/// Header gates and gzip sniff, in a frame of its own.
#[inline(never)]
fn open<'a>(
    reader: Reader<'a>,
    file_size: Option<u64>,
    verify_integrity: bool,
    sink: &mut CObserver,
) -> Result<Archive<Reader<'a>>, Error> {
    let options = OpenOptions { verify_integrity, ..OpenOptions::default() };
    Archive::open(reader, file_size, &options, sink)
}

/// The load itself over an opened archive: the loader is a local of this frame. The JSON
/// report is written here, while the loader can still undo the load: a report that does not
/// fit leaves no region live (all or nothing).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn load<H: Hal>(
    archive: &mut Archive<Reader<'_>>,
    arena: Option<&mut [u8]>,
    replay: &mut [u8],
    allow_legacy: bool,
    device: &mut H,
    report: &mut LoadReport,
    needs: &mut Needs,
    observer: &mut CFullObserver<'_>,
    json: Option<&mut [u8]>,
) -> Result<usize, Failed> {
    // The built-in arena, when the caller lent none: a local of this frame, after the open.
    let mut own = [0u8; BUILTIN_ARENA];
    let arena = match arena {
        Some(lent) => lent,
        None => &mut own[..],
    };
    let storage = Storage { arena, replay, deferred: &mut [], whole_names: &mut [] };
    let mut loader = Loader::with_storage(storage, LoadOptions { allow_legacy, ..LoadOptions::default() });
    // The observer is both the placements' observer and the warnings' sink: two borrows of
    // one value, so the warnings go through a second handle with the same callbacks.
    let mut sink = CObserver { ctx: observer.base.ctx, payload: None, warning: observer.base.warning };
    let loaded = loader.load(archive, device, report, observer, &mut sink);
    *needs = loader.needs();
    if let Err(e) = loaded {
        return Err(Failed::Core(e));
    }
    let Some(json) = json else { return Ok(0) };
    match report.to_json(json) {
        Ok(n) => Ok(n),
        Err(_) => {
            loader.unload(device);
            Err(Failed::ReportTooLong { needed: report_json_len(report) })
        }
    }
}

/// The most bytes a load's JSON report takes (every count and size at its largest, the KELF
/// target at its longest, every character escaped: `report_json_is_bounded` in the tests).
pub(crate) const REPORT_JSON_MAX: usize = 1024;

/// Bytes of `report` as JSON: measured in a buffer of this frame, entered only once the load
/// is over (its stack is what the load's deeper frames took).
#[cold]
#[inline(never)]
fn report_json_len(report: &LoadReport) -> usize {
    let mut room = [0u8; REPORT_JSON_MAX];
    report.to_json(&mut room).unwrap_or(REPORT_JSON_MAX)
}

/// The caller's `neff_outputs`, copied and checked before anything is read: its buffers'
/// spans for the overlap checks (with the `neff_error`'s).
///
/// # Safety
/// `outputs` is null or points to a `neff_outputs`.
unsafe fn read_outputs(outputs: *const neff_outputs, err: *mut neff_error) -> Result<(neff_outputs, Others), Misuse> {
    let none = neff_outputs {
        report: core::ptr::null_mut(),
        json: core::ptr::null_mut(),
        json_len: 0,
        json_written: core::ptr::null_mut(),
    };
    let out = if outputs.is_null() || !outputs.is_aligned() {
        none
    } else {
        // SAFETY: non-null, aligned, a `neff_outputs` by contract; copied.
        unsafe { *outputs }
    };
    if out.json.is_null() && out.json_len != 0 {
        return Err("outputs.json: null with a length".into());
    }
    if out.json_len > isize::MAX as usize {
        return Err("outputs.json_len: larger than any object".into());
    }
    let report = if out.report.is_aligned() { out.report } else { core::ptr::null_mut() };
    let written = if out.json_written.is_aligned() { out.json_written } else { core::ptr::null_mut() };
    let out = neff_outputs { report, json_written: written, ..out };
    let spans = [
        Span::one("outputs.report", out.report),
        Span::bytes("outputs.json", out.json, out.json_len),
        Span::one("outputs.json_written", out.json_written),
        error_span(err),
    ];
    Ok((out, spans))
}

/// The name of the caller's `neff_error` among the lent buffers.
const ERROR_SPAN: &str = "err";

/// The caller's `neff_error`, as a lent buffer.
fn error_span(err: *mut neff_error) -> Span {
    if err.is_aligned() {
        Span::one(ERROR_SPAN, err)
    } else {
        Span::NONE
    }
}

/// Records an argument error; its status.
fn bad_argument(err: *mut neff_error, status: neff_status, what: &'static str) -> neff_status {
    store(err, What::Argument(status, what));
    status
}

/// Records the core's error (with what a failed read callback returned, if it did); its status.
#[cold]
#[inline(never)]
fn failed(err: *mut neff_error, e: &Error, read: isize) -> neff_status {
    let read = if e.stage == neff::error::Stage::Io { read } else { 0 };
    store_read(err, What::Core(*e), read);
    e.status().into()
}

/// The shared tail of both entry points: run, then report.
///
/// # Safety
/// As `neff_load()`'s; `out` is what `read_outputs` returned, its buffers checked against
/// every other lent buffer.
unsafe fn run_and_report<H: Hal>(
    lent: Lent<'_>,
    device: &mut H,
    out: neff_outputs,
    err: *mut neff_error,
    read_failure: &Cell<isize>,
) -> neff_status {
    // SAFETY: the caller lends `json_len` writable bytes at `json` (null only with 0, checked
    // by `read_outputs`), overlapping no other lent buffer (checked by `borrow`).
    let json = match unsafe { lent_mut(out.json, out.json_len, "outputs.json") } {
        Ok(json) if !out.json.is_null() => Some(json),
        _ => None,
    };
    let mut report = LoadReport::new();
    let mut needs = Needs::default();
    let result = run(lent, device, &mut report, &mut needs, json);
    if !out.report.is_null() {
        // SAFETY: non-null and aligned (`read_outputs`), writable by contract and overlapping
        // no other lent buffer; `write` reads nothing there.
        unsafe { out.report.write(neff_report::of(&report, &needs)) };
    }
    let put = |n: usize| {
        if !out.json_written.is_null() {
            // SAFETY: non-null and aligned (`read_outputs`), a writable `size_t` by contract.
            unsafe { out.json_written.write(n) };
        }
    };
    match result {
        Ok(n) => {
            put(n);
            store(err, What::Nothing);
            neff_status::NEFF_STATUS_OK
        }
        Err(Failed::ReportTooLong { needed }) => {
            put(needed);
            let status = neff_status::NEFF_STATUS_BUFFER_TOO_SMALL;
            store(err, What::Short { status, buffer: "outputs.json", needed, available: out.json_len });
            status
        }
        Err(Failed::Core(e)) => {
            put(0);
            failed(err, &e, read_failure.get())
        }
    }
}

/// The outputs and the lent buffers of a load or check, read and checked against each other
/// and the source; a bad argument or an overlap is the status to return, its error stored.
///
/// # Safety
/// As `neff_load()`'s, for these arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn lend<'a>(
    source: *const neff_source,
    buffers: *const neff_buffers,
    options: *const neff_options,
    observer: *const neff_observer,
    outputs: *const neff_outputs,
    err: *mut neff_error,
    read_failure: &'a Cell<isize>,
) -> Result<(neff_outputs, Lent<'a>), neff_status> {
    // SAFETY: the caller's contract for `outputs`.
    let (out, others) = unsafe { read_outputs(outputs, err) }.map_err(|misuse| refuse(err, misuse))?;
    // SAFETY: the caller's contract for the rest.
    let lent = unsafe { borrow(source, buffers, options, observer, &others, read_failure) };
    Ok((out, lent.map_err(|misuse| refuse(err, misuse))?))
}

/// Loads a NEFF onto the device behind `hal`: every check of `neff_check()`, and every payload
/// lands in a device region with its usage class. Returns `NEFF_STATUS_OK` or the failure's
/// status, with the error in `*err` (if non-null) and the report (what was done before the
/// failure, too) in `*outputs`.
///
/// All or nothing: whatever the status, unless it is `NEFF_STATUS_OK`, no region this call
/// allocated is left live on the device (each was released through `hal->release`). A JSON
/// report too long for `outputs->json` is `NEFF_STATUS_BUFFER_TOO_SMALL`, found once the
/// load is over and before it returns: the load is undone.
///
/// `source`, `hal` and `buffers` are required; `options`, `observer`, `outputs` and `err` may
/// be null. A null required pointer, a null buffer with a length, an arena shorter than
/// `neff_arena_min()` (or none, in a library without a built-in one), or two lent buffers
/// that share a byte (the source's bytes or buffer, the arena, the replay store,
/// `outputs->report`, `outputs->json`, `outputs->json_written`, `err`) is
/// `NEFF_STATUS_BAD_ARGUMENT`, before anything is read or allocated (an `err` that overlaps
/// another buffer is then left unwritten: only the status says it).
///
/// # Safety
/// Every non-null pointer points to a live object of its type; the memory a `neff_source`,
/// `neff_buffers` or `neff_outputs` lends is valid for the lengths it gives, for the call, and
/// is not touched by anything else meanwhile; the callbacks follow their documented contracts.
#[no_mangle]
pub unsafe extern "C" fn neff_load(
    source: *const neff_source,
    hal: *const neff_hal,
    buffers: *const neff_buffers,
    options: *const neff_options,
    observer: *const neff_observer,
    outputs: *const neff_outputs,
    err: *mut neff_error,
) -> neff_status {
    if hal.is_null() || !hal.is_aligned() {
        return bad_argument(err, neff_status::NEFF_STATUS_BAD_ARGUMENT, "hal: null or misaligned");
    }
    let read_failure = Cell::new(0);
    // SAFETY: the caller's contract, as documented on `neff_load`.
    let (out, lent) = match unsafe { lend(source, buffers, options, observer, outputs, err, &read_failure) } {
        Ok(lent) => lent,
        Err(status) => return status,
    };
    // SAFETY: non-null, aligned, a `neff_hal` by the caller's contract; copied.
    let vtable = unsafe { *hal };
    let mut device = match CHal::new(&vtable) {
        Ok(device) => device,
        Err(BadHal::MissingCallback) => {
            return bad_argument(
                err,
                neff_status::NEFF_STATUS_BAD_ARGUMENT,
                "hal: arch, alloc, write, adopt and release are required (note and recall with a notebook)",
            )
        }
        Err(BadHal::UnknownArch) => {
            return bad_argument(err, neff_status::NEFF_STATUS_BAD_ARGUMENT, "hal.arch: not a neff_arch value")
        }
    };
    // SAFETY: `out` came from `read_outputs`, its buffers checked by `borrow`.
    unsafe { run_and_report(lent, &mut device, out, err, &read_failure) }
}

/// Validates a NEFF without a device: header gates, gzip and tar, every manifest of the chain,
/// every payload read, digested and size-checked (the observer sees each as
/// `NEFF_PAYLOAD_CHECKED`, with no region). `options->arch`, when not 0, adds the target gate
/// against that architecture. As `neff_load()` otherwise, the overlap checks included.
///
/// # Safety
/// As `neff_load()`'s.
#[no_mangle]
pub unsafe extern "C" fn neff_check(
    source: *const neff_source,
    buffers: *const neff_buffers,
    options: *const neff_options,
    observer: *const neff_observer,
    outputs: *const neff_outputs,
    err: *mut neff_error,
) -> neff_status {
    let read_failure = Cell::new(0);
    // SAFETY: the caller's contract, as documented on `neff_load`.
    let (out, lent) = match unsafe { lend(source, buffers, options, observer, outputs, err, &read_failure) } {
        Ok(lent) => lent,
        Err(status) => return status,
    };
    let arch = match check_arch(lent.options.arch) {
        Ok(arch) => arch,
        Err(what) => return bad_argument(err, neff_status::NEFF_STATUS_BAD_ARGUMENT, what),
    };
    // SAFETY: `out` came from `read_outputs`, its buffers checked by `borrow`.
    unsafe { run_and_report(lent, &mut NullDevice::new(arch), out, err, &read_failure) }
}

/// The buffers an info call writes, besides those a check takes (`neff_info()`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct neff_info_buffers {
    /// Work memory: what the manifests stream, logged until the document is written (the
    /// names, types and sizes of every var, queue and carveout, the graphs, the KELF nodes, the
    /// I/O tensors), `info.json`'s bytes, and an index of 4 bytes per var or queue of a
    /// subgraph to sort them. About the size of the manifests' names: 4,409 to 7,796 bytes for
    /// the twelve public real NEFFs, 3,911 to 524,002 for the real training NEFFs (the one of
    /// 3,468 vars with names of up to 468 bytes the most); a short one is
    /// `NEFF_STATUS_RESOURCE`, and `neff_error_needed()` says how much it took when it ran out,
    /// at least that much more than was lent (null with a length of 0: none).
    pub work: *mut u8,
    /// Bytes at `work`.
    pub work_len: usize,
    /// The document (UTF-8 JSON, not NUL-terminated). Null with a length of 0 asks for its size
    /// only: the call returns `NEFF_STATUS_BUFFER_TOO_SMALL` with the size in `*written`.
    pub json: *mut u8,
    /// Bytes at `json`.
    pub json_len: usize,
}

/// Bytes of the caller's stack an info call takes, frames included (as `neff_load_stack_size()`
/// for a check, with the document's work). Measured on x86_64;
/// on a bare-metal target an estimate (the load's measured figure plus the info call's own
/// state).
#[no_mangle]
pub extern "C" fn neff_info_stack_size() -> usize {
    INFO_STACK.saturating_add(BUILTIN_ARENA)
}

/// The `neff_options.arch` of a check: none for 0, else a `neff_arch` value.
fn check_arch(value: u32) -> Result<Option<Arch>, &'static str> {
    match value {
        0 => Ok(None),
        value => Arch::from_value(value).map(Some).ok_or("options.arch: not 0 nor a neff_arch value"),
    }
}

/// What a NEFF holds, as the document `neff info --json` prints (the header, the chain's KELFs, inputs and outputs, each subgraph's vars by `var_id`, DMA queues
/// by name, engines, carveouts and FP8 policy, the header hash, and `info.json`'s
/// `tool_version`), written to `info.json`. The NEFF is checked as `neff_check()` checks it;
/// a NEFF it refuses is that error, and nothing is written.
///
/// `*written` (if non-null) receives the document's length; when `info.json_len` is too small,
/// `NEFF_STATUS_BUFFER_TOO_SMALL` and the length it needs (also `neff_error_needed()`). A work
/// buffer too small is `NEFF_STATUS_RESOURCE` with the bytes it needs. Both name their buffer
/// (`info.json`, `info.work`) in the error, whose stage is `NEFF_STAGE_ARGUMENT`. The output is
/// never cut short. With `options.verify_integrity` the `hash` object has the outcome (a
/// mismatch is a warning, as for a check). `options.arch` gates as for `neff_check()`.
///
/// # Safety
/// As `neff_load()`'s; `info` points to a `neff_info_buffers` whose buffers are writable for
/// their lengths and overlap no other buffer of the call.
#[no_mangle]
pub unsafe extern "C" fn neff_info(
    source: *const neff_source,
    buffers: *const neff_buffers,
    options: *const neff_options,
    observer: *const neff_observer,
    info: *const neff_info_buffers,
    written: *mut usize,
    err: *mut neff_error,
) -> neff_status {
    let bad = |what| bad_argument(err, neff_status::NEFF_STATUS_BAD_ARGUMENT, what);
    if info.is_null() || !info.is_aligned() {
        return bad("info: null or misaligned");
    }
    // SAFETY: non-null, aligned, a `neff_info_buffers` by the caller's contract; copied.
    let ib = unsafe { *info };
    let written = if written.is_aligned() { written } else { core::ptr::null_mut() };
    let others = [
        Span::bytes("info.work", ib.work, ib.work_len),
        Span::bytes("info.json", ib.json, ib.json_len),
        Span::one("written", written),
        error_span(err),
    ];
    let read_failure = Cell::new(0);
    // SAFETY: the caller's contract, as documented on `neff_load`.
    let lent = match unsafe { borrow(source, buffers, options, observer, &others, &read_failure) } {
        Ok(lent) => lent,
        Err(misuse) => return refuse(err, misuse),
    };
    let arch = match check_arch(lent.options.arch) {
        Ok(arch) => arch,
        Err(what) => return bad(what),
    };
    // SAFETY: the caller lends `work_len` writable bytes at `work`, overlapping no other lent
    // buffer (checked by `borrow`).
    let work = match unsafe { lent_mut(ib.work, ib.work_len, "info.work: null with a length") } {
        Ok(work) => work,
        Err(what) => return bad(what),
    };
    // SAFETY: as for the work buffer, for the document's.
    let json = match unsafe { lent_mut(ib.json, ib.json_len, "info.json: null with a length") } {
        Ok(json) => json,
        Err(what) => return bad(what),
    };
    let put = |n: usize| {
        if !written.is_null() {
            // SAFETY: non-null and aligned, a writable `size_t` by contract.
            unsafe { written.write(n) };
        }
    };
    put(0);
    let work = core::cell::RefCell::new(info::Work::new(work));
    let mut report = LoadReport::new();
    let (header, integrity) = match info::run(lent, arch, &work, &mut report) {
        Ok(done) => done,
        Err(e) => return failed(err, &e, read_failure.get()),
    };
    let (status, buffer, needed, available) = match info::render(work.into_inner(), &header, integrity, json) {
        Ok(n) => {
            put(n);
            store(err, What::Nothing);
            return neff_status::NEFF_STATUS_OK;
        }
        Err(info::Short::Json(n)) => {
            put(n);
            (neff_status::NEFF_STATUS_BUFFER_TOO_SMALL, "info.json", n, ib.json_len)
        }
        Err(info::Short::Work(n)) => (neff_status::NEFF_STATUS_RESOURCE, "info.work", n, ib.work_len),
    };
    store(err, What::Short { status, buffer, needed, available });
    status
}

/// A panic cannot unwind into C: the library is built with `panic = "abort"`, and this handler
/// ends the program. (The core is written not to panic: its lints deny every panicking
/// construct; this is the last guard.)
#[cfg(all(not(test), not(doc)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    extern "C" {
        /// The C library's `abort` (glibc, newlib, picolibc all have it).
        fn abort() -> !;
    }
    // SAFETY: `abort` takes nothing and never returns; every C runtime this links into has it.
    unsafe { abort() }
}
