//! The stable error and warning codes (`ErrorKind::code`, `WarningKind::code`): bindings (C,
//! Python) match on these numbers, so a number may not change, be given twice or be reused.
//!
//! The codes live in `schema/errors.toml`, which generates the enums' `code()`, the published
//! table (`docs/error-codes.md`) and the C enum (`targets/c/include/neff_codes.h`); `tests/refusals_table.rs`
//! holds those files to the table. This test holds the table to what was published: every code
//! below keeps its kind. A new code needs no entry here to pass; list it when it is released.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeSet;

use neff::error::codes::{error_row, CodeRow, ERRORS, WARNINGS};
use neff::error::{
    CapacityError, ChainError, ChainWarning, GzipWarning, HeaderError, HeaderWarning, ManifestWarning, TarError,
    TarWarning, Text, WarningKind,
};
use neff::gzip::GzipError;
use neff::hal::HalError;
use neff::json::JsonError;
use neff::manifest::ManifestError;
use neff::npy::NpyError;
use neff::{ErrorKind, Status};

/// The byte source's error kinds, in the order of their codes (101 on).
const IO_KINDS: [embedded_io::ErrorKind; 18] = {
    use embedded_io::ErrorKind as K;
    [
        K::Other,
        K::NotFound,
        K::PermissionDenied,
        K::ConnectionRefused,
        K::ConnectionReset,
        K::ConnectionAborted,
        K::NotConnected,
        K::AddrInUse,
        K::AddrNotAvailable,
        K::BrokenPipe,
        K::AlreadyExists,
        K::InvalidInput,
        K::InvalidData,
        K::TimedOut,
        K::Interrupted,
        K::Unsupported,
        K::OutOfMemory,
        K::WriteZero,
    ]
};

/// The codes as published (docs/error-codes.md before the table generated it): `(code, kind)`.
const FROZEN_ERRORS: &[(u16, &str)] = &[
    (100, "Io"),
    (101, "Io(Other)"),
    (102, "Io(NotFound)"),
    (103, "Io(PermissionDenied)"),
    (104, "Io(ConnectionRefused)"),
    (105, "Io(ConnectionReset)"),
    (106, "Io(ConnectionAborted)"),
    (107, "Io(NotConnected)"),
    (108, "Io(AddrInUse)"),
    (109, "Io(AddrNotAvailable)"),
    (110, "Io(BrokenPipe)"),
    (111, "Io(AlreadyExists)"),
    (112, "Io(InvalidInput)"),
    (113, "Io(InvalidData)"),
    (114, "Io(TimedOut)"),
    (115, "Io(Interrupted)"),
    (116, "Io(Unsupported)"),
    (117, "Io(OutOfMemory)"),
    (118, "Io(WriteZero)"),
    (200, "Truncated"),
    (300, "Capacity"),
    (400, "ArenaFull"),
    (501, "Header(ShortFile)"),
    (502, "Header(HeaderSizeNot1024)"),
    (503, "Header(HeaderSizePastEnd)"),
    (504, "Header(UnsupportedVersion)"),
    (505, "Header(NewerFeatures)"),
    (506, "Header(DataSizePastEnd)"),
    (507, "Header(ZeroDataSize)"),
    (508, "Header(UnsupportedPackager)"),
    (601, "Gzip(BadMagic)"),
    (602, "Gzip(UnsupportedMethod)"),
    (603, "Gzip(ReservedFlags)"),
    (604, "Gzip(HeaderCrc)"),
    (605, "Gzip(Inflate)"),
    (606, "Gzip(Crc)"),
    (607, "Gzip(Isize)"),
    (701, "Tar(Checksum)"),
    (702, "Tar(BadNumber)"),
    (703, "Tar(NumberOutOfRange)"),
    (704, "Tar(UnsupportedType)"),
    (705, "Tar(BadPaxRecord)"),
    (706, "Tar(BadPaxSize)"),
    (707, "Tar(EmptyName)"),
    (708, "Tar(AbsoluteName)"),
    (709, "Tar(ParentComponent)"),
    (710, "Tar(NulInName)"),
    (801, "Json(UnexpectedByte)"),
    (802, "Json(UnexpectedToken)"),
    (803, "Json(UnexpectedEnd)"),
    (804, "Json(DepthLimit)"),
    (805, "Json(InvalidEscape)"),
    (806, "Json(LoneSurrogate)"),
    (807, "Json(InvalidUtf8)"),
    (808, "Json(ControlCharInString)"),
    (809, "Json(InvalidNumber)"),
    (810, "Json(NumberOutOfRange)"),
    (811, "Json(NotAnInteger)"),
    (812, "Json(TrailingData)"),
    (813, "Json(TrailingComma)"),
    (901, "Manifest(MissingKey)"),
    (902, "Manifest(WrongType)"),
    (903, "Manifest(DuplicateKey)"),
    (904, "Manifest(BadFormat)"),
    (905, "Manifest(UnknownDmaOperation)"),
    (906, "Manifest(InvalidCarveoutType)"),
    (907, "Manifest(OutOfRange)"),
    (908, "Manifest(TooManyDimensions)"),
    (909, "Manifest(EidOutOfBounds)"),
    (910, "Manifest(OutputNodeOutOfBounds)"),
    (911, "Manifest(InputNodeOutOfBounds)"),
    (912, "Manifest(RowPtrOutOfBounds)"),
    (913, "Manifest(SizeOverflow)"),
    (914, "Manifest(KelfAttributeMissing)"),
    (915, "Manifest(InputWithoutName)"),
    (916, "Manifest(NoKelfNode)"),
    (917, "Manifest(InvalidVersion)"),
    (918, "Manifest(InvalidTarget)"),
    (919, "Manifest(ArchMismatch)"),
    (920, "Manifest(VarWithoutSize)"),
    (921, "Manifest(PointerSize)"),
    (922, "Manifest(AlignmentNotPowerOfTwo)"),
    (923, "Manifest(UnexpectedVarIds)"),
    (924, "Manifest(DuplicateVarId)"),
    (925, "Manifest(NoOutputs)"),
    (926, "Manifest(InvalidOwner)"),
    (927, "Manifest(QueueInstancesNotSupported)"),
    (928, "Manifest(TooManySemaphores)"),
    (929, "Manifest(TooManyQueues)"),
    (930, "Manifest(MissingSyncSemaphore)"),
    (931, "Manifest(DynamicDmaScratch)"),
    (932, "Manifest(UcodeVersionMismatch)"),
    (933, "Manifest(UcodeCpuId)"),
    (934, "Manifest(UcodeTotalCpus)"),
    (935, "Manifest(UcodeLibTwice)"),
    (936, "Manifest(TooManyExtIsaOps)"),
    (937, "Manifest(TooManyCceSources)"),
    (938, "Manifest(DescWithoutSource)"),
    (939, "Manifest(CceWithoutDtype)"),
    (940, "Manifest(UnknownDmaQueue)"),
    (941, "Manifest(UnknownDmaVariable)"),
    (942, "Manifest(ZeroDescSize)"),
    (943, "Manifest(StepsSizesMismatch)"),
    (944, "Manifest(MissingCarveout)"),
    (945, "Manifest(CarveoutStartPartition)"),
    (946, "Manifest(CarveoutPartitionCount)"),
    (947, "Manifest(CarveoutOffset)"),
    (948, "Manifest(CarveoutSize)"),
    (1001, "Chain(NeffJsonMissing)"),
    (1002, "Chain(MemberMissing)"),
    (1003, "Chain(InstrTooLarge)"),
    (1004, "Chain(VarSizeMismatch)"),
    (1005, "Chain(DuplicateSubgraph)"),
    (1006, "Chain(ReadAsOther)"),
    (1101, "Hal(OutOfMemory)"),
    (1102, "Hal(RegionTableFull)"),
    (1103, "Hal(IdsExhausted)"),
    (1104, "Hal(ZeroSize)"),
    (1105, "Hal(BadAlignment)"),
    (1106, "Hal(UnknownRegion)"),
    (1107, "Hal(OutOfBounds)"),
    (1108, "Hal(OutOfOrderWrite)"),
    (1109, "Hal(AdoptTooSmall)"),
    (1201, "Npy(BadMagic)"),
    (1202, "Npy(UnsupportedVersion)"),
    (1203, "Npy(Capacity)"),
    (1204, "Npy(Truncated)"),
    (1205, "Npy(Malformed)"),
    (1206, "Npy(MissingKey)"),
    (1207, "Npy(DuplicateKey)"),
    (1208, "Npy(UnknownKey)"),
    (1209, "Npy(UnsupportedDescr)"),
    (1210, "Npy(DataLenOverflow)"),
];

const FROZEN_WARNINGS: &[(u16, &str)] = &[
    (501, "Header(TrailingBytes)"),
    (502, "Header(HeaderSizeAllowed)"),
    (503, "Header(IntegrityMismatch)"),
    (601, "Gzip(TrailingData)"),
    (602, "Gzip(MultipleMembers)"),
    (701, "Tar(LoneZeroBlock)"),
    (702, "Tar(MissingEndOfArchive)"),
    (703, "Tar(DataAfterEnd)"),
    (704, "Tar(GlobalPaxIgnored)"),
    (705, "Tar(UnknownType)"),
    (706, "Tar(SignedChecksum)"),
    (707, "Tar(SparseSkipped)"),
    (708, "Tar(NameNotUtf8)"),
    (901, "Manifest(UnknownDtype)"),
    (902, "Manifest(UnknownValue)"),
    (903, "Manifest(KelfNodeByOp)"),
    (904, "Manifest(EngineMissing)"),
    (905, "Manifest(InstrMismatch)"),
    (1001, "Chain(GraphCount)"),
    (1002, "Chain(InstrNotMultipleOf64)"),
    (1003, "Chain(KelfFallback)"),
    (1004, "Chain(DuplicateMember)"),
    (1005, "Chain(Unreferenced)"),
    (1006, "Chain(KelfNotNamed)"),
];

fn kinds(rows: &[CodeRow]) -> Vec<(u16, &str)> {
    rows.iter().map(|r| (r.code, r.kind)).collect()
}

#[test]
fn every_published_code_keeps_its_kind() {
    for (table, frozen, what) in [(ERRORS, FROZEN_ERRORS, "error"), (WARNINGS, FROZEN_WARNINGS, "warning")] {
        let have = kinds(table);
        let missing: Vec<_> = frozen.iter().filter(|row| !have.contains(row)).collect();
        assert!(missing.is_empty(), "published {what} codes changed or removed: {missing:?}\nthe table has: {have:?}");
    }
}

#[test]
fn codes_are_unique_and_in_their_layer() {
    for (table, what) in [(ERRORS, "error"), (WARNINGS, "warning")] {
        let mut seen = BTreeSet::new();
        for r in table {
            assert!(seen.insert(r.code), "{what} code {} given twice", r.code);
            assert!(seen.len() == 1 || r.code > *seen.iter().rev().nth(1).unwrap(), "{what} rows are in code order");
            let prefix = if what == "error" { "NEFF_ERR_" } else { "NEFF_WARN_" };
            assert!(r.c_name.starts_with(prefix), "{}: {}", r.code, r.c_name);
            assert_eq!(r.status.is_some(), what == "error", "{}: a status exactly for errors", r.code);
        }
    }
    assert!(error_row(919).is_some_and(|r| r.c_name == "NEFF_ERR_MANIFEST_ARCH_MISMATCH"));
    assert!(error_row(501).is_some_and(|r| r.c_name == "NEFF_ERR_HEADER_SHORT_FILE"));
    assert!(error_row(110).is_some_and(|r| r.c_name == "NEFF_ERR_IO_BROKEN_PIPE"));
}

#[test]
fn codes_are_the_layer_hundred_plus_the_layer_number() {
    let arch = ErrorKind::Manifest(ManifestError::ArchMismatch { neff: 2, device: 1 });
    assert_eq!(arch.code(), 919);
    assert_eq!(ErrorKind::Truncated.code(), 200);
    assert_eq!(ErrorKind::ArenaFull { capacity: 1, needed: 2 }.code(), 400);
    assert_eq!(ErrorKind::Io(embedded_io::ErrorKind::TimedOut).code(), 114);
    assert_eq!(ErrorKind::Gzip(GzipError::Crc { stored: 1, computed: 2 }).code(), 606);
    assert_eq!(ErrorKind::Json(JsonError::TrailingComma).code(), 813);
    assert_eq!(ErrorKind::Chain(ChainError::NeffJsonMissing { neff: Text::new("x") }).code(), 1001);
    assert_eq!(ErrorKind::Hal(HalError::ZeroSize).code(), 1104);
    assert_eq!(ErrorKind::Npy(NpyError::DuplicateKey { key: "shape" }).code(), 1207);
    let dtype = ManifestWarning::UnknownDtype(Text::new("float99"));
    assert_eq!(WarningKind::Manifest(dtype).code(), 901);
    // Every layer's hundred, as the table reads them.
    assert_eq!(ErrorKind::Capacity(CapacityError { limit: "x", capacity: 1 }).code(), 300);
    assert_eq!(ErrorKind::Header(HeaderError::ZeroDataSize).code(), 507);
    assert_eq!(ErrorKind::Tar(TarError::EmptyName).code(), 707);
    assert_eq!(WarningKind::Header(HeaderWarning::TrailingBytes { count: 1 }).code(), 501);
    assert_eq!(WarningKind::Gzip(GzipWarning::MultipleMembers { count: 2 }).code(), 602);
    assert_eq!(WarningKind::Tar(TarWarning::LoneZeroBlock).code(), 701);
    assert_eq!(WarningKind::Chain(ChainWarning::KelfFallback).code(), 1003);
}

/// The variants `ErrorKind` has of its own (written by hand in src/error.rs) against their rows:
/// code, status and message.
#[test]
fn errorkinds_own_variants_are_their_rows() {
    let arena = ErrorKind::ArenaFull { capacity: 10, needed: 20 };
    let capacity = ErrorKind::Capacity(CapacityError { limit: "MAX_VARS", capacity: 32 });
    let io = ErrorKind::Io(embedded_io::ErrorKind::TimedOut);
    let cases: [(ErrorKind, &[(&str, &str)]); 4] = [
        (io, &[("kind:?", "TimedOut")]),
        (ErrorKind::Truncated, &[]),
        (capacity, &[("limit", "MAX_VARS"), ("capacity", "32")]),
        (arena, &[("capacity", "10"), ("needed", "20")]),
    ];
    for (kind, values) in cases {
        let row = error_row(kind.code()).unwrap_or_else(|| panic!("no row for {kind:?}"));
        assert_eq!(Some(kind.status()), row.status, "{kind:?}");
        let mut want = row.message.trim_matches('`').to_string();
        for (name, value) in values {
            want = want.replace(&format!("{{{name}}}"), value);
        }
        assert_eq!(kind.to_string(), want, "{kind:?}: the row's message");
    }
    assert_eq!(error_row(100).unwrap().status, Some(Status::Failure));
}

#[test]
fn every_byte_source_error_kind_has_its_own_code() {
    for (n, kind) in IO_KINDS.into_iter().enumerate() {
        let code = ErrorKind::Io(kind).code();
        assert_eq!(code, 101 + n as u16, "{kind:?}");
        assert_eq!(error_row(code).unwrap().kind, format!("Io({kind:?})"), "the table's row for {code}");
    }
}

/// `targets/c/include/neff_codes.h` compiles as C and holds the values, where a C compiler is installed.
#[test]
fn the_c_header_compiles() {
    let Some(cc) = ["cc", "gcc", "clang"]
        .into_iter()
        .find(|c| std::process::Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
    else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "no C compiler under CI");
        eprintln!("skip: no C compiler");
        return;
    };
    let dir = std::env::temp_dir().join(format!("neff-codes-h-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = String::from("#include \"neff_codes.h\"\n");
    for r in ERRORS.iter().chain(WARNINGS) {
        c.push_str(&format!("_Static_assert({} == {}, \"{}\");\n", r.c_name, r.code, r.kind));
    }
    c.push_str("neff_error_code e = NEFF_ERR_TRUNCATED;\nneff_warning_code w = NEFF_WARN_TAR_LONE_ZERO_BLOCK;\n");
    let file = dir.join("check.c");
    std::fs::write(&file, c).unwrap();
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/targets/c/include");
    let out = std::process::Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I", include])
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{cc}: {}", String::from_utf8_lossy(&out.stderr));
}
