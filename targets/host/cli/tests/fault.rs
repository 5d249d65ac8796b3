//! What bindings (the Python package) read of a pass: a refusal field by field
//! (`CliError::Rejected::fault`), the warnings as records, and an input that is any reader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use neff_host::error::{CliError, Fault};
use neff_host::loading::{self, PassOptions, Request, Target};
use neff_host::sample::SampleBuilder;
use neff_host::source::InputSource;

fn reader(bytes: Vec<u8>) -> InputSource {
    let size = bytes.len() as u64;
    InputSource::Reader(Box::new(std::io::Cursor::new(bytes)), size)
}

fn check(bytes: Vec<u8>, arch: Option<neff::manifest::Arch>) -> Result<loading::Pass, CliError> {
    let options = PassOptions { keep_warning_records: true, ..PassOptions::default() };
    loading::run(reader(bytes), Request::check().onto(Target::Check(arch)).with(options))
}

fn fault(e: CliError) -> (String, Fault) {
    match e {
        CliError::Rejected { message, fault: Some(fault), .. } => (message, *fault),
        other => panic!("not a core refusal: {other:?}"),
    }
}

#[test]
fn a_manifest_refusal_has_its_member_key_path_and_byte() {
    let bytes =
        SampleBuilder::new().replace_text("sg00/def.json", "\"size\":16384", "\"size\":\"big\"").build().unwrap();
    let (message, f) = fault(check(bytes, None).err().unwrap());
    assert_eq!((f.code, f.stage, f.status), (902, "def.json", neff::Status::Invalid));
    assert_eq!(f.member.as_deref(), Some("sg00/def.json"));
    let key_path = f.key_path.clone().unwrap();
    assert!(key_path.starts_with("var.") && key_path.ends_with(".size"), "{key_path}");
    let (offset, base) = f.offset.unwrap();
    assert_eq!(base, "member");
    // The message is the command's line: member, key path, reason, byte.
    assert_eq!(message, format!("sg00/def.json: {key_path}: {} (byte {offset})", f.reason));
    assert!(f.warnings.is_empty());
}

#[test]
fn a_refusal_keeps_the_warnings_raised_before_it() {
    let mut bytes = SampleBuilder::new().build().unwrap();
    bytes.extend_from_slice(b"tail");
    let accepted = check(bytes.clone(), None).unwrap();
    assert_eq!(accepted.warning_records.len(), 1);
    assert_eq!(accepted.warning_records[0].kind.code(), 501);
    assert_eq!(accepted.warnings, vec![accepted.warning_records[0].to_string()]);
    let (_, f) = fault(check(bytes, Some(neff::manifest::Arch::Sunda)).err().unwrap());
    assert_eq!((f.code, f.stage, f.offset), (919, "kelf", None));
    assert_eq!(f.warnings, accepted.warning_records);
    // Unasked, the records are not kept: the lines are.
    let source = reader(SampleBuilder::new().build().unwrap().into_iter().chain(*b"tail").collect());
    let plain = loading::run(source, Request::check()).unwrap();
    assert_eq!((plain.warnings.len(), plain.warning_records.len()), (1, 0));
}

#[test]
fn a_reader_input_is_read_as_a_file_is() {
    let bytes = neff_host::SAMPLE_NEFF.to_vec();
    let from_reader = check(bytes, None).unwrap();
    let from_sample = loading::run(InputSource::Sample(neff_host::SAMPLE_NEFF), Request::check()).unwrap();
    let digests =
        |p: &loading::Pass| p.report.payloads.iter().map(|p| (p.member.clone(), p.digest)).collect::<Vec<_>>();
    assert_eq!(digests(&from_reader), digests(&from_sample));
    assert!(!digests(&from_reader).is_empty());
    // Short of the size it claims: the header gate sees what the stream held.
    let (_, f) = fault(check(neff_host::SAMPLE_NEFF[..100].to_vec(), None).err().unwrap());
    assert_eq!((f.code, f.stage, f.offset), (501, "header", Some((0, "file"))));
}
