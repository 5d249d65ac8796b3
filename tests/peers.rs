//! Other projects' own conformance suites (`../shared/fixtures/peers/`, see its README):
//! nst/JSONTestSuite `test_parsing` through the JSON tokenizer and, as a def.json, through the
//! loader; Go's `archive/tar` testdata, each archive gzip'd behind a NEFF header, through the
//! archive layer. Each test prints `N of M right` (`--nocapture`) and fails listing every
//! wrong case; a case that cannot be right for a principled reason is in an explicit
//! expected-difference list with its reason, and still counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, clippy::result_large_err)]

mod common;

use common::peers::{b64, score};

use std::io::Write as _;

use common::neff::{members, pack};
use common::recorder::{run, TEST_ARENA};
use neff::archive::{Archive, OpenOptions};
use neff::header::field;
use neff::json::{Event, Tokenizer};
use neff::loader::LoadOptions;
use neff::sim::SimDevice;
use neff::tar::TarWarning;
use neff::{ErrorKind, Warning, WarningKind};

// ---------------------------------------------------------------------------------------------
// JSONTestSuite

/// `Ok` when the tokenizer reads the whole document to `End`, else the fault's text.
fn tokenize(doc: &[u8]) -> Result<(), String> {
    let mut scratch = vec![0; 1 << 16];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    let mut src = doc;
    loop {
        match tok.next(&mut src) {
            Ok(Event::End) => return Ok(()),
            Ok(_) => {}
            Err(f) => return Err(format!("{:?} at {}", f.kind, f.offset)),
        }
    }
}

fn json_cases() -> Option<Vec<(String, Vec<u8>)>> {
    let dir = common::fixture("peers/json/test_parsing")?;
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
        })
        .collect();
    cases.sort();
    Some(cases)
}

/// The i_ (implementation-defined) outcomes: accepted ones, pinned (the rest are refused).
const I_ACCEPTED: &[&str] = &[
    "i_number_double_huge_neg_exp.json",
    "i_number_neg_int_huge_exp.json",
    "i_number_pos_double_huge_exp.json",
    "i_number_real_neg_overflow.json",
    "i_number_real_pos_overflow.json",
    "i_number_real_underflow.json",
    "i_number_too_big_neg_int.json",
    "i_number_too_big_pos_int.json",
];

/// y_/n_ cases whose outcome differs on purpose, with the reason.
const JSON_DIFFERENCES: &[(&str, &str)] = &[(
    "y_number_double_close_to_zero.json",
    "a number token longer than the tokenizer's fixed 48-byte number buffer (no alloc) is a \
     CapacityError naming the limit, not a syntax error; real manifests hold no such number",
)];

#[test]
fn json_test_suite_through_the_tokenizer() {
    let Some(cases) = json_cases() else { return };
    assert_eq!(cases.len(), 318, "JSONTestSuite test_parsing holds 318 files");
    let mut wrong = Vec::new();
    let mut i_accepted = Vec::new();
    let mut i_total = 0;
    let mut differences = Vec::new();
    for (name, doc) in &cases {
        let got = tokenize(doc);
        if let Some((_, why)) = JSON_DIFFERENCES.iter().find(|(c, _)| c == name) {
            let agrees = (name.starts_with("y_")) == got.is_ok();
            if agrees {
                wrong.push(format!("{name}: listed as a difference but agrees now"));
            } else {
                differences.push(format!("{name}: {got:?} (expected difference: {why})"));
            }
            continue;
        }
        assert_eq!(got.is_ok(), tokenize(doc).is_ok(), "{name}: deterministic");
        match name.as_bytes()[0] {
            b'y' if got.is_err() => wrong.push(format!("{name}: refused ({})", got.unwrap_err())),
            b'n' if got.is_ok() => wrong.push(format!("{name}: accepted")),
            b'i' => {
                i_total += 1;
                if got.is_ok() {
                    i_accepted.push(name.as_str());
                }
            }
            _ => {}
        }
    }
    println!("i_ cases: {} of {i_total} accepted: {i_accepted:?}", i_accepted.len());
    for d in &differences {
        println!("{d}");
    }
    let want: Vec<&str> = I_ACCEPTED.to_vec();
    if i_accepted != want {
        wrong.push(format!("i_ outcomes changed: accepted {i_accepted:?}, pinned {want:?}"));
    }
    println!("JSONTestSuite: {} of {} as the suite says", cases.len() - wrong.len() - differences.len(), cases.len());
    score("JSONTestSuite (tokenizer; differences listed count as right)", cases.len(), &wrong);
}

#[test]
fn json_test_suite_as_a_def_json_through_the_loader() {
    let Some(cases) = json_cases() else { return };
    let Some(base) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let base_members = members(&base);
    assert!(base_members.iter().any(|(n, _)| n == "sg00/def.json"));
    let mut wrong = Vec::new();
    let mut counted = 0;
    for (name, doc) in cases.iter().filter(|(n, _)| n.starts_with("n_")) {
        counted += 1;
        let mut m = base_members.clone();
        m.iter_mut().find(|(n, _)| n == "sg00/def.json").unwrap().1 = doc.clone();
        let bytes = pack(&base, &m);
        let mut sink = |_: &Warning| {};
        let mut archive =
            Archive::<&[u8]>::open(&bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).expect("open");
        let (result, _) =
            run(&mut archive, None::<&mut SimDevice>, Some(None), LoadOptions::default(), TEST_ARENA, &mut sink);
        match result {
            Err(e) if matches!(e.kind, ErrorKind::Json(_)) && e.member.as_str() == "sg00/def.json" => {}
            Err(e) => wrong.push(format!("{name}: not a JSON syntax error at sg00/def.json: {e}")),
            Ok(()) => wrong.push(format!("{name}: loaded")),
        }
    }
    score("JSONTestSuite n_ as def.json (loader)", counted, &wrong);
}

// ---------------------------------------------------------------------------------------------
// Go archive/tar

/// Cases whose outcome differs from Go's on purpose, with the reason.
const TAR_DIFFERENCES: &[(&str, &str)] = &[
    ("reader/pax-bad-hdr-large.tar.bz2", "not read: the tests have no bzip2 decoder (Go: ErrFieldTooLong)"),
    ("reader/pax-bad-mtime-file.tar", "the walker reads only PAX `path` and `size`; a bad `mtime` is never looked at"),
    ("reader/pax-nul-xattrs.tar", "the walker reads only PAX `path` and `size`; xattr keys are never looked at"),
    (
        "reader/invalid-go17.tar",
        "Go-only fallback reading a GNU header's atime/ctime as a ustar prefix; GNU tar and libarchive read `foo`",
    ),
    (
        "truncation/21",
        "spec §3.2: the archive ends at the first zero block (a lone one is a warning); Go refuses what follows",
    ),
    (
        "truncation/33",
        "cut inside the skipped sparse member's body: a body cut short is refused (`unexpected end of \
         input`), where Go's reader returns io.EOF for the next header",
    ),
];

/// A NEFF (pkg 2) whose payload is `tar` gzip'd.
fn neff_around(tar: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(tar).unwrap();
    let payload = e.finish().unwrap();
    let mut h = vec![0u8; 1024];
    h[field::PKG_VERSION].copy_from_slice(&2u64.to_le_bytes());
    h[field::HEADER_SIZE].copy_from_slice(&1024u64.to_le_bytes());
    h[field::DATA_SIZE].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[field::VERSION_MAJOR].copy_from_slice(&2u64.to_le_bytes());
    h.extend_from_slice(&payload);
    h
}

/// Members (raw name, size, body), names of the sparse members skipped, or the error.
type Walk = Result<(Vec<(Vec<u8>, u64, Vec<u8>)>, Vec<String>), String>;

fn walk_neff(bytes: &[u8]) -> Walk {
    let mut sparse = Vec::new();
    let mut sink = |w: &Warning| {
        if w.kind == WarningKind::Tar(TarWarning::SparseSkipped) {
            sparse.push(w.member.as_str().to_owned());
        }
    };
    let mut archive = Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink)
        .map_err(|e| e.to_string())?;
    archive.set_raw_names(true);
    let mut out = Vec::new();
    loop {
        let member = archive.next_member(&mut sink).map_err(|e| e.to_string())?;
        let Some(mut member) = member else { break };
        let mut body = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = embedded_io::Read::read(&mut member, &mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        out.push((member.name_bytes().to_vec(), member.size(), body));
    }
    archive.finish(&mut sink).map_err(|e| e.to_string())?;
    Ok((out, sparse))
}

#[test]
fn go_archive_tar_testdata_through_the_archive_layer() {
    let Some(expect) = common::fixture_bytes("peers/tar/expect.json") else { return };
    let expect: serde_json::Value = serde_json::from_slice(&expect).unwrap();
    let read = |file: &str| common::fixture_bytes(&format!("peers/tar/testdata/{file}")).unwrap();
    let trash = "garbage ".repeat(64).into_bytes(); // reader_test.go: exactly 512 bytes
    let mut wrong = Vec::new();
    let mut differences = Vec::new();
    let cases = expect["cases"].as_array().unwrap();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let tar: Vec<u8> = if let Some(recipe) = case.get("recipe") {
            let mut t = Vec::new();
            for step in recipe.as_array().unwrap() {
                let step = step.as_array().unwrap();
                let mut part = match step[0].as_str().unwrap() {
                    "trash" => trash.clone(),
                    file => {
                        let mut d = read(file);
                        d.extend(vec![0u8; step.get(2).and_then(|v| v.as_u64()).unwrap_or(0) as usize]);
                        d
                    }
                };
                if let Some(cut) = step[1].as_u64() {
                    part.truncate(cut as usize);
                }
                t.extend(part);
            }
            t
        } else {
            let file = case["file"].as_str().unwrap();
            if file.ends_with(".bz2") {
                // Checked below against the difference list: no bzip2 decoder here.
                Vec::new()
            } else {
                read(file)
            }
        };
        let bz2 = case["file"].as_str().is_some_and(|f| f.ends_with(".bz2"));
        let got = if bz2 { Err(String::new()) } else { walk_neff(&neff_around(&tar)) };
        let verdict = if bz2 { Some("not read".to_owned()) } else { None };
        let verdict = verdict.or(match (case["expect"].as_str().unwrap(), &got) {
            ("reject", Err(_)) => None,
            ("reject", Ok(_)) => Some("accepted; Go refuses it".to_owned()),
            ("accept", Err(e)) => Some(format!("refused: {e}")),
            ("accept", Ok((members, sparse))) => {
                let entries = case["entries"].as_array().cloned().unwrap_or_default();
                let regular = |e: &serde_json::Value| {
                    let t = e["type"].as_str().unwrap();
                    let name = b64(e["path_b64"].as_str().unwrap());
                    matches!(t, "0" | "7" | "\0" | "") && !name.ends_with(b"/")
                };
                let want: Vec<(Vec<u8>, u64, Vec<u8>)> = entries
                    .iter()
                    .filter(|e| regular(e) && !e["sparse"].as_bool().unwrap())
                    .map(|e| {
                        (
                            b64(e["path_b64"].as_str().unwrap()),
                            e["size"].as_u64().unwrap(),
                            b64(e["content_b64"].as_str().unwrap()),
                        )
                    })
                    .collect();
                let want_sparse: Vec<String> = entries
                    .iter()
                    .filter(|e| e["sparse"].as_bool().unwrap())
                    .map(|e| e["name"].as_str().unwrap().to_owned())
                    .collect();
                if members != &want {
                    let show = |m: &[(Vec<u8>, u64, Vec<u8>)]| {
                        m.iter().map(|(n, s, _)| format!("{}:{s}", String::from_utf8_lossy(n))).collect::<Vec<_>>()
                    };
                    Some(format!("members {:?}, Go {:?}", show(members), show(&want)))
                } else if sparse != &want_sparse {
                    Some(format!("sparse skipped {sparse:?}, Go's sparse members {want_sparse:?}"))
                } else {
                    None
                }
            }
            (other, _) => panic!("{id}: expect {other}"),
        });
        let listed = TAR_DIFFERENCES.iter().find(|(c, _)| *c == id);
        match (verdict, listed) {
            (None, None) => {}
            (None, Some(_)) => wrong.push(format!("{id}: listed as a difference but agrees with Go now")),
            (Some(v), Some((_, why))) => differences.push(format!("{id}: {v} (expected difference: {why})")),
            (Some(v), None) => wrong.push(format!("{id}: {v}")),
        }
    }
    for d in &differences {
        println!("{d}");
    }
    println!("Go archive/tar: {} of {} as Go reads them", cases.len() - wrong.len() - differences.len(), cases.len());
    score("Go archive/tar (differences listed count as right)", cases.len(), &wrong);
}
