//! The stable error and warning codes (`ErrorKind::code`, `WarningKind::code`) against their
//! published table, `docs/error-codes.md`: bindings (C, Python) match on these numbers, so a
//! number may not change, be given twice or go missing from the table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};

use neff::error::{
    CapacityError, ChainError, ChainWarning, GzipWarning, HeaderError, HeaderWarning, ManifestWarning, TarError,
    TarWarning, Text, WarningKind,
};
use neff::gzip::GzipError;
use neff::hal::HalError;
use neff::json::JsonError;
use neff::manifest::ManifestError;
use neff::npy::NpyError;
use neff::ErrorKind;

/// `(layer hundred, file under src/error/, error enum, warning enum)`.
const LAYERS: [(u16, &str, &str, Option<&str>); 8] = [
    (5, "header", "HeaderError", Some("HeaderWarning")),
    (6, "gzip", "GzipError", Some("GzipWarning")),
    (7, "tar", "TarError", Some("TarWarning")),
    (8, "json", "JsonError", None),
    (9, "manifest", "ManifestError", Some("ManifestWarning")),
    (10, "chain", "ChainError", Some("ChainWarning")),
    (11, "hal", "HalError", None),
    (12, "npy", "NpyError", None),
];

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

/// The `(variant, number)` arms of `impl <enum> { fn code }` in `src`.
fn arms(src: &str, enum_name: &str) -> Vec<(String, u16)> {
    let start = src.find(&format!("impl {enum_name} {{\n    /// A stable number")).unwrap_or_else(|| {
        panic!("{enum_name} has no `code`");
    });
    let body = &src[start..start + src[start..].find("\n}\n").unwrap()];
    let prefix = format!("{enum_name}::");
    body.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix(&prefix)?;
            let variant: String = rest.chars().take_while(char::is_ascii_alphanumeric).collect();
            let number = line.rsplit_once("=> ")?.1.trim_end_matches(',').parse().ok()?;
            Some((variant, number))
        })
        .collect()
}

/// The rows `(code, kind)` of the code, by table: errors, then warnings.
fn code_tables() -> (BTreeMap<u16, String>, BTreeMap<u16, String>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut errors = BTreeMap::new();
    let mut warnings = BTreeMap::new();
    errors.insert(100, "Io".to_owned());
    for (n, kind) in IO_KINDS.iter().enumerate() {
        errors.insert(101 + n as u16, format!("Io({kind:?})"));
    }
    errors.insert(200, "Truncated".to_owned());
    errors.insert(300, "Capacity".to_owned());
    errors.insert(400, "ArenaFull".to_owned());
    for (layer, file, error_enum, warning_enum) in LAYERS {
        let src = std::fs::read_to_string(format!("{root}/src/error/{file}.rs")).unwrap();
        let mut tables = vec![(error_enum, "Error", &mut errors)];
        if let Some(w) = warning_enum {
            tables.push((w, "Warning", &mut warnings));
        }
        for (enum_name, suffix, table) in tables {
            let short = enum_name.strip_suffix(suffix).unwrap();
            let mut seen = BTreeSet::new();
            for (variant, number) in arms(&src, enum_name) {
                assert!(seen.insert(number), "{enum_name}: code {number} given twice");
                assert!((1..100).contains(&number), "{enum_name}::{variant}: code {number} outside 1..100");
                table.insert(layer * 100 + number, format!("{short}({variant})"));
            }
        }
    }
    (errors, warnings)
}

/// The rows `(code, kind)` of `docs/error-codes.md`, by table.
fn doc_tables() -> (BTreeMap<u16, String>, BTreeMap<u16, String>) {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/error-codes.md")).unwrap();
    let (errors, warnings) = doc.split_once("## Warnings").expect("a warnings section");
    let rows = |text: &str| {
        let mut table = BTreeMap::new();
        for line in text.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| code")) {
            let cells: Vec<&str> = line.split(" | ").collect();
            let code: u16 = cells[0].trim_start_matches("| ").parse().unwrap();
            let kind = cells[1].trim_matches('`');
            let kind = kind.split('`').next().unwrap().to_owned();
            assert!(table.insert(code, kind).is_none(), "docs/error-codes.md lists {code} twice");
        }
        table
    };
    (rows(errors), rows(warnings))
}

fn print(table: &BTreeMap<u16, String>) -> String {
    table.iter().map(|(code, kind)| format!("| {code} | `{kind}` |\n")).collect()
}

#[test]
fn the_published_table_is_the_codes_the_core_returns() {
    let (errors, warnings) = code_tables();
    let (doc_errors, doc_warnings) = doc_tables();
    assert_eq!(doc_errors, errors, "docs/error-codes.md errors; the code has:\n{}", print(&errors));
    assert_eq!(doc_warnings, warnings, "docs/error-codes.md warnings; the code has:\n{}", print(&warnings));
    // Every arm was read: the enums have 114 error and 24 warning variants, plus `Io`'s 19,
    // `Truncated`, `Capacity` and `ArenaFull`.
    assert_eq!((errors.len(), warnings.len()), (133, 24), "the source reader found every arm");
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

#[test]
fn every_byte_source_error_kind_has_its_own_code() {
    let (errors, _) = code_tables();
    for (n, kind) in IO_KINDS.into_iter().enumerate() {
        let code = ErrorKind::Io(kind).code();
        assert_eq!(code, 101 + n as u16, "{kind:?}");
        assert_eq!(errors[&code], format!("Io({kind:?})"), "the table's row for {code}");
    }
}

#[test]
fn the_source_reader_reads_arms_of_every_shape() {
    let src = "impl E {\n    /// A stable number\n    pub const fn code(&self) -> u8 {\n        match self {\n            E::A { .. } => 1,\n            E::B(..) => 2,\n            E::C => 30,\n        }\n    }\n}\n";
    assert_eq!(arms(src, "E"), [("A".to_owned(), 1), ("B".to_owned(), 2), ("C".to_owned(), 30)]);
}
