//! The tar tap (`neff_host::tap`) and what `info` reads through it: every member's name, size
//! and digest, and `info.json`'s compiler version, checked against the members as the `tar`
//! and `flate2` crates read them, inflated in the parsing thread and in a thread of its own.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod fleet;
mod support;

use neff::archive::OpenOptions;
use neff_host::inflate::{open_archive_with, Inflation};
use neff_host::source::InputSource;
use neff_host::tap::{tool_version, MemberLog, TapOptions, Tapped};
use support::*;

/// Walks `neff` with the core's archive (no loader), the tap listing every member.
fn tap_walk(neff: &[u8], inflation: Inflation, options: TapOptions) -> (MemberLog, u64) {
    let mut handle = None;
    let mut warn = |_: &neff::Warning| {};
    let wrap = |tar| {
        let (tapped, h) = Tapped::with_tap(tar, options);
        handle = Some(h);
        tapped
    };
    let src = InputSource::Sample(neff.to_vec().leak());
    let mut archive =
        open_archive_with(src, neff.len() as u64, &OpenOptions::default(), inflation, &mut warn, wrap).expect("open");
    while let Some(mut member) = archive.next_member(&mut warn).expect("member") {
        // Read half of each body: the tap must see every byte whatever the archive reads.
        let mut buf = vec![0u8; (member.size() / 2) as usize];
        embedded_io::Read::read_exact(&mut member, &mut buf).expect("body");
    }
    let finish = archive.finish(&mut warn).expect("finish");
    drop(archive);
    (handle.expect("a tap").finish(), finish.inflated_bytes)
}

fn check_log(label: &str, neff: &[u8]) {
    let want = members_of(neff);
    for inflation in [Inflation::Inline, Inflation::Threaded] {
        let (log, tar_bytes) = tap_walk(neff, inflation.clone(), TapOptions::members());
        assert_eq!(log.error, None, "{label} {inflation:?}");
        assert_eq!(log.tar_bytes, tar_bytes, "{label} {inflation:?}: the tap saw the whole tar stream");
        let have: Vec<(&str, u64, u64)> = log.members.iter().map(|m| (m.name.as_str(), m.size, m.digest)).collect();
        let expect: Vec<(&str, u64, u64)> = want
            .iter()
            .map(|(n, b)| (n.strip_prefix("./").unwrap_or(n), b.len() as u64, xxhash_rust::xxh3::xxh3_64(b)))
            .collect();
        assert_eq!(have, expect, "{label} {inflation:?}");
        let info = want.iter().find(|(n, _)| n == "info.json").map(|(_, b)| b.as_slice());
        assert_eq!(log.captured("info.json"), info, "{label}");
        if let Some(info) = info {
            let v: serde_json::Value = serde_json::from_slice(info).unwrap();
            assert_eq!(log.tool_version().as_deref(), v["tool_version"].as_str(), "{label}");
        }
    }
}

#[test]
fn the_tap_sees_every_member_of_every_real_neff() {
    let real = fleet::real_neffs();
    for (label, path) in &real {
        check_log(label, &std::fs::read(path).unwrap());
    }
    println!("{} real NEFFs tapped, inline and threaded", real.len());
}

#[test]
fn the_tap_sees_every_member_of_the_sample_in_both_packings() {
    check_log("sample", neff_host::SAMPLE_NEFF);
    let raw = neff_host::sample::SampleBuilder::new().pkg_version(1).build().unwrap();
    check_log("sample pkg_version 1", &raw);
}

#[test]
fn the_tap_follows_long_names_and_drops_what_the_core_drops() {
    // A GNU 'L' long name, a PAX path, a './' prefix, a directory and a dropped name.
    let long = format!("sg00/{}.bin", "x".repeat(150));
    let pax_name = format!("sg00/{}.npy", "p".repeat(120));
    let pax_record = {
        let body = format!("path={pax_name}\n");
        // "<len> path=...\n" where len counts itself.
        let mut len = body.len() + 2;
        while format!("{len} {body}").len() != len {
            len += 1;
        }
        format!("{len} {body}")
    };
    let mut tar = Vec::new();
    tar.extend(raw_tar_member("././@LongLink", format!("{long}\0").as_bytes(), b'L'));
    tar.extend(raw_tar_member("ignored", b"long", b'0'));
    tar.extend(raw_tar_member("PaxHeaders/x", pax_record.as_bytes(), b'x'));
    tar.extend(raw_tar_member("short-ustar-name", b"pax", b'0'));
    tar.extend(raw_tar_member("./info.json", br#"{"tool_version":"9.9"}"#, b'0'));
    tar.extend(raw_tar_member("sg00/", b"", b'5'));
    tar.extend(raw_tar_member("sg00/x.wavegraph-bin.json", b"{}", b'0'));
    tar.extend([0u8; 1024]);
    let neff = neff_around_tar(&tar);
    let (log, _) = tap_walk(&neff, Inflation::Inline, TapOptions::members());
    let names: Vec<&str> = log.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, [long.as_str(), pax_name.as_str(), "info.json"]);
    assert_eq!(log.tool_version().as_deref(), Some("9.9"));
    // Without `list`, only the captured member is kept.
    let (log, _) = tap_walk(&neff, Inflation::Threaded, TapOptions::producer());
    assert!(log.members.is_empty());
    assert_eq!(log.captured("info.json"), Some(&br#"{"tool_version":"9.9"}"#[..]));
}

#[test]
fn a_captured_member_past_the_limit_is_marked_not_kept() {
    let mut tar = raw_tar_member("info.json", br#"{"tool_version":"1.2.3"}"#, b'0');
    tar.extend([0u8; 1024]);
    let neff = neff_around_tar(&tar);
    let options = TapOptions { capture_limit: 4, ..TapOptions::members() };
    let (log, _) = tap_walk(&neff, Inflation::Inline, options);
    assert_eq!(log.captured.len(), 1);
    assert_eq!(log.captured[0].bytes, None);
    assert_eq!(log.tool_version(), None);
    assert_eq!(log.members[0].size, 24);
}

#[test]
fn tool_version_needs_a_json_object_with_that_string() {
    assert_eq!(
        tool_version(br#"{"tool_version":"2.23.6484.0+3b612583","num_tpb":1}"#).as_deref(),
        Some("2.23.6484.0+3b612583")
    );
    assert_eq!(tool_version(br#"{"tool_version":2}"#), None);
    assert_eq!(tool_version(b"[1]"), None);
    assert_eq!(tool_version(b"{"), None);
}

#[test]
fn info_prints_the_compiler_version_of_every_real_neff() {
    for (label, path) in fleet::real_neffs() {
        let members = members_of(&std::fs::read(&path).unwrap());
        let info: serde_json::Value =
            serde_json::from_slice(&members.iter().find(|(n, _)| n == "info.json").expect("info.json").1).unwrap();
        let want = info["tool_version"].as_str().unwrap();
        let out = neff_p(&[&"info", &path, &"--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["compiler_version"], want, "{label}");
        // The key comes last, after the contract's keys.
        assert_eq!(doc.as_object().unwrap().keys().next_back().map(String::as_str), Some("compiler_version"));
        let text = stdout(&neff_p(&[&"info", &path]));
        assert!(text.contains(&format!("\ncompiler: {want} (info.json tool_version)\n")), "{label}: {text}");
    }
}

#[test]
fn info_without_info_json_prints_a_null_compiler() {
    let bytes = neff_host::sample::SampleBuilder::new().drop_member("info.json").build().unwrap();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, &bytes).unwrap();
    let out = neff_p(&[&"info", &f.path(), &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compiler_version"], serde_json::Value::Null);
    assert!(!stdout(&neff_p(&[&"info", &f.path()])).contains("\ncompiler:"));
    // The built-in sample says who wrote it.
    let doc: serde_json::Value = serde_json::from_slice(&neff(&["info", "--json"]).stdout).unwrap();
    assert_eq!(doc["compiler_version"], "neff-cli sample");
}
