//! The C ABI's `neff_status` and `neff_stage`, with the conversions from the core's `Status`
//! and `Stage` and the names `neff_status_name()` and `neff_stage_name()` give.
//!
//! Generated from `schema/kinds.toml` (the rows the core's `Status` and `Stage` are expanded
//! from) by scripts/gen-header.sh, through macros/codegen: do not edit. cbindgen writes the
//! enums into `neff.h`; every value is ABI, never renumbered or reused.

use core::ffi::CStr;

use neff::error::{Stage, Status};

/// The outcome of a call: `NEFF_STATUS_OK`, the runtime's `NRT_STATUS` the error maps to
/// (same numbers), or a misuse of the API.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_status {
    /// Success (`NRT_SUCCESS`).
    NEFF_STATUS_OK = 0,
    /// `NRT_FAILURE`: a generic failure (the byte source, the device).
    NEFF_STATUS_FAILURE = 1,
    /// `NRT_INVALID`: an invalid NEFF.
    NEFF_STATUS_INVALID = 2,
    /// `NRT_RESOURCE`: out of a resource (device memory, a capacity, the arena).
    NEFF_STATUS_RESOURCE = 4,
    /// `NRT_UNSUPPORTED_NEFF_VERSION`.
    NEFF_STATUS_UNSUPPORTED_NEFF_VERSION = 10,
    /// An argument is null where it may not be, or a length is wrong: nothing was read. The
    /// error's stage is `NEFF_STAGE_ARGUMENT` and its message names the argument.
    NEFF_STATUS_BAD_ARGUMENT = 64,
    /// A buffer the call writes is too small for what it must hold: nothing was done (a load
    /// was undone, its regions released). `neff_error_needed()` gives the bytes it needs,
    /// `neff_error_available()` the bytes lent.
    NEFF_STATUS_BUFFER_TOO_SMALL = 65,
    /// `neff_init()` was given a header of another major version (or, before 1.0, another minor
    /// version), a newer header than the library, or structure sizes that differ from the
    /// library's: the program was built against another `neff.h`.
    NEFF_STATUS_VERSION_MISMATCH = 66,
}

impl From<Status> for neff_status {
    fn from(s: Status) -> Self {
        match s {
            Status::Failure => neff_status::NEFF_STATUS_FAILURE,
            Status::Invalid => neff_status::NEFF_STATUS_INVALID,
            Status::Resource => neff_status::NEFF_STATUS_RESOURCE,
            Status::UnsupportedNeffVersion => neff_status::NEFF_STATUS_UNSUPPORTED_NEFF_VERSION,
        }
    }
}

/// The C name of the status numbered `status` (`c"NEFF_STATUS_INVALID"`), if any.
pub(crate) fn status_name(status: u32) -> Option<&'static CStr> {
    Some(match status {
        0 => c"NEFF_STATUS_OK",
        1 => c"NEFF_STATUS_FAILURE",
        2 => c"NEFF_STATUS_INVALID",
        4 => c"NEFF_STATUS_RESOURCE",
        10 => c"NEFF_STATUS_UNSUPPORTED_NEFF_VERSION",
        64 => c"NEFF_STATUS_BAD_ARGUMENT",
        65 => c"NEFF_STATUS_BUFFER_TOO_SMALL",
        66 => c"NEFF_STATUS_VERSION_MISMATCH",
        _ => return None,
    })
}

/// Where in the data path an error or warning arose.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum neff_stage {
    /// Reading the byte source itself.
    NEFF_STAGE_IO = 0,
    /// The 1024-byte `neff_header_t`.
    NEFF_STAGE_HEADER = 1,
    /// The gzip wrapper and the deflate stream.
    NEFF_STAGE_GZIP = 2,
    /// The tar walker.
    NEFF_STAGE_TAR = 3,
    /// Tier 1: `neff.json`.
    NEFF_STAGE_NEFF_JSON = 4,
    /// Tier 2: `kelf-<i>.json`.
    NEFF_STAGE_KELF = 5,
    /// Tier 3: `sgNN/def.json`.
    NEFF_STAGE_DEF_JSON = 6,
    /// Engine JSONs (`PE.json`, `Activation.json`, ...) and their tables.
    NEFF_STAGE_ENGINE = 7,
    /// Raw payloads (`*.bin`, `*.npy`).
    NEFF_STAGE_PAYLOAD = 8,
    /// Checks across the manifest chain, once every manifest is known.
    NEFF_STAGE_CHAIN = 9,
    /// The device behind the `Hal`.
    NEFF_STAGE_HAL = 10,
    /// No stage of the data path: an argument of the call (`NEFF_STATUS_BAD_ARGUMENT`,
    /// `NEFF_STATUS_BUFFER_TOO_SMALL`).
    NEFF_STAGE_ARGUMENT = 255,
    /// No error (a `neff_error` after a call that succeeded).
    NEFF_STAGE_NONE = 254,
}

impl From<Stage> for neff_stage {
    fn from(s: Stage) -> Self {
        match s {
            Stage::Io => neff_stage::NEFF_STAGE_IO,
            Stage::Header => neff_stage::NEFF_STAGE_HEADER,
            Stage::Gzip => neff_stage::NEFF_STAGE_GZIP,
            Stage::Tar => neff_stage::NEFF_STAGE_TAR,
            Stage::NeffJson => neff_stage::NEFF_STAGE_NEFF_JSON,
            Stage::Kelf => neff_stage::NEFF_STAGE_KELF,
            Stage::DefJson => neff_stage::NEFF_STAGE_DEF_JSON,
            Stage::Engine => neff_stage::NEFF_STAGE_ENGINE,
            Stage::Payload => neff_stage::NEFF_STAGE_PAYLOAD,
            Stage::Chain => neff_stage::NEFF_STAGE_CHAIN,
            Stage::Hal => neff_stage::NEFF_STAGE_HAL,
        }
    }
}

/// The core's stages in `neff_stage` order (`NEFF_STAGE_IO` = 0, ...).
pub(crate) const STAGES: [Stage; 11] = [
    Stage::Io,
    Stage::Header,
    Stage::Gzip,
    Stage::Tar,
    Stage::NeffJson,
    Stage::Kelf,
    Stage::DefJson,
    Stage::Engine,
    Stage::Payload,
    Stage::Chain,
    Stage::Hal,
];

/// The name of a stage outside the data path (`c"argument"`), if `stage` is one.
pub(crate) fn c_stage_name(stage: u32) -> Option<&'static CStr> {
    Some(match stage {
        255 => c"argument",
        254 => c"none",
        _ => return None,
    })
}
