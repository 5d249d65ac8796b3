//! The command line itself: usage errors, unreadable paths, header gates, `info`, `schema`.
//! Exit codes per `spec/cli-contract.md`: 0 ok, 1 rejected, 2 usage or path.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use neff_host::sample::SampleBuilder;
use support::*;

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["frobnicate"][..],
        &["info", "--bogus"][..],
        &["check"][..],
        &["check", "x.neff", "--arch", "v5"][..],
        &["load", "--device-mem", "12Q"][..],
        &["load", "--device-mem", "64M", "--digest-only"][..],
        &["unpack", "x.neff"][..],
        &["pack", "dir", "-o", "x.neff", "--pkg-version", "3"][..],
        &["schema", "--format", "yaml"][..],
    ] {
        let out = neff(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        // clap names the problem, or (no verb at all) prints the usage.
        assert!(stderr(&out).contains("error") || stderr(&out).contains("Usage:"), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: usage errors go to stderr");
    }
}

#[test]
fn help_and_version_exit_0() {
    let out = neff(&["--help"]);
    assert_eq!(code(&out), 0);
    for verb in ["info", "check", "load", "unpack", "pack", "schema"] {
        assert!(stdout(&out).contains(verb), "help lists {verb}");
    }
    let out = neff(&["load", "--help"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("--device-mem"));
    assert!(stdout(&out).contains("cayman|v3"));
    assert!(stdout(&out).contains("Default: the NEFF's own KELF target"), "{}", stdout(&out));
    assert_eq!(code(&neff(&["--version"])), 0);
}

#[test]
fn arch_accepts_every_spelling_of_the_contract() {
    // Every spelling parses. The built-in sample is a cayman (v3) NEFF: it loads on cayman, and
    // any other device refuses it with the runtime's mismatch line, naming both arches.
    for (arch, version) in [("sunda", 2), ("v2", 2), ("cayman", 3), ("v3", 3), ("mariana", 4), ("v4", 4)] {
        let out = neff(&["load", "--arch", arch, "--device-mem", "2G"]);
        if version == 3 {
            assert_eq!(code(&out), 0, "{arch}: {}", stderr(&out));
            assert!(stdout(&out).starts_with("loaded "), "{arch}: {}", stdout(&out));
        } else {
            let line = assert_one_line_error(&out, 1);
            let mismatch = format!(
                "error: kelf-0.json: target: Loading a NEFF compiled for a different arch is not allowed, \
                 NEFF arch: v3, instance arch: v{version}"
            );
            assert_eq!(line, mismatch, "{arch}");
            assert!(out.stdout.is_empty(), "{arch}: nothing loaded");
        }
    }
}

#[test]
fn unreadable_paths_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.neff");
    for verb in ["info", "check", "load"] {
        let out = neff_p(&[&verb, &missing]);
        let line = assert_one_line_error(&out, 2);
        assert!(line.contains("missing.neff") && line.contains("No such file"), "{line}");
    }
    let out = neff_p(&[&"info", &dir.path()]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("is a directory"), "{line}");
    let out = neff_p(&[&"unpack", &missing, &"-o", &dir.path().join("out")]);
    assert_one_line_error(&out, 2);
}

#[test]
fn a_file_shorter_than_the_header_is_rejected_in_one_line() {
    let sample = SampleBuilder::new().build().unwrap();
    let f = write_temp(&sample[..500]);
    let out = neff_p(&[&"info", &f.path()]);
    let line = assert_one_line_error(&out, 1);
    // The runtime's wording (gate 2), the size in hex as the runtime prints it.
    assert_eq!(line, "error: header: Invalid number of NEFF bytes received 1f4 (byte 0)");
    assert!(stderr(&out).contains("hint: the file is truncated"), "{}", stderr(&out));
}

#[test]
fn a_truncated_payload_is_rejected_by_the_data_size_gate() {
    let sample = SampleBuilder::new().build().unwrap();
    let cut = sample.len() - 5000;
    let f = write_temp(&sample[..cut]);
    for verb in ["info", "check", "load"] {
        let line = assert_one_line_error(&neff_p(&[&verb, &f.path()]), 1);
        assert!(line.starts_with("error: header: Invalid NEFF data size("), "{line}");
        assert!(line.ends_with("(byte 16)"), "{line}");
    }
}

#[test]
fn a_corrupt_deflate_stream_is_rejected_not_panicked() {
    let mut sample = SampleBuilder::new().build().unwrap();
    // Flip bytes in the middle of the deflate stream.
    for b in &mut sample[5000..5064] {
        *b ^= 0x5a;
    }
    let f = write_temp(&sample);
    let out = neff_p(&[&"info", &f.path()]);
    let line = assert_one_line_error(&out, 1);
    // Where it must stop, from flate2 and the tar crate: the flipped bytes still inflate (to
    // other bytes), and the first inflated byte that differs from the undamaged tar's falls in
    // a tar header, which the walk refuses, at that header.
    let inflate = |neff: &[u8]| {
        let mut out = Vec::new();
        let mut gz = flate2::read::GzDecoder::new(&neff[1024..]);
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = std::io::Read::read(&mut gz, &mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        out
    };
    let clean = SampleBuilder::new().build().unwrap();
    let (before, after) = (inflate(&clean), inflate(&sample));
    let first = (0..after.len()).find(|&i| before.get(i) != Some(&after[i])).unwrap();
    let mut archive = tar::Archive::new(&before[..]);
    let headers: Vec<u64> = archive.entries().unwrap().map(|e| e.unwrap().raw_header_position()).collect();
    let header = *headers.iter().rev().find(|&&h| h <= first as u64).unwrap();
    assert!(first < header as usize + 512, "the first change, at {first}, is in the header at {header}");
    assert!(line.starts_with("error: tar: "), "{line}");
    assert!(line.ends_with(&format!("(tar byte {header})")), "{line}");
}

#[test]
fn header_gates_reject_with_the_runtime_wording() {
    type Edit = fn(&mut neff_host::writer::HeaderFields);
    let cases: [(Edit, &str); 3] = [
        (|h| h.pkg_version = 3, "Unsupported NEFF packager: 3"),
        (|h| h.neff_version_major = 3, "NEFF version: 3.0 is not supported, accepted version range: 0.x-2.x"),
        (|h| h.feature_bits |= 1 << 40, "has been compiled by a newer version of Neuron compiler"),
    ];
    for (edit, want) in cases {
        let fields = {
            let mut f = SampleBuilder::new().header_fields().clone();
            edit(&mut f);
            f
        };
        // Build with a good header, then overwrite it: pkg_version 3 cannot be written.
        let mut bytes = SampleBuilder::new().build().unwrap();
        let data_size = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
        let header = fields.encode(data_size, &[0; 32]).unwrap();
        bytes[..1024].copy_from_slice(&header);
        let f = write_temp(&bytes);
        let line = assert_one_line_error(&neff_p(&[&"info", &f.path()]), 1);
        assert!(line.contains(want), "{line}");
    }
    // header_size other than 1024.
    let mut bytes = SampleBuilder::new().build().unwrap();
    bytes[8..16].copy_from_slice(&512u64.to_le_bytes());
    let f = write_temp(&bytes);
    let line = assert_one_line_error(&neff_p(&[&"info", &f.path()]), 1);
    assert!(line.contains("Invalid NEFF header size 200") && line.ends_with("(byte 8)"), "{line}");
}

#[test]
fn info_without_file_shows_the_built_in_sample() {
    let out = neff(&["info"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("built-in sample NEFF ("), "{text}");
    assert!(text.contains("  name                 sample.neff\n"), "{text}");
    assert!(text.contains("  lnc_size             2\n"), "{text}");
    assert!(text.contains("\nsubgraph sg01 (sg01/def.json, version 0.6)\n"), "{text}");
    assert!(text.contains("\nkelf kelf-0.json: version 0.5, target \"cayman\" (arch 3), 2 graphs\n"), "{text}");
    // The payload table closes the report, one line per payload with its role.
    let payloads: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("payloads (")).skip(1).collect();
    assert_eq!(payloads.len(), 24, "{text}");
    assert!(
        payloads.iter().any(|l| l.contains(" WEIGHT ") && l.ends_with("sg01/value_sg0100_identity_7_CRSM.npy")),
        "{text}"
    );
}

#[test]
fn info_json_header_of_the_sample_matches_what_was_written() {
    let out = neff(&["info", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let h = &doc["header"];
    let fields = SampleBuilder::new().header_fields().clone();
    let uuid: String = fields.uuid.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(h["uuid"], uuid.as_str());
    assert_eq!(h["name"], "sample.neff");
    assert_eq!(h["lnc_size"], 2);
    assert_eq!(h["pkg_version"], 2);
    assert_eq!(h["feature_bits"], 0x400);
    assert_eq!(h["data_size"].as_u64().unwrap() as usize + 1024, neff_host::SAMPLE_NEFF.len());
}

#[test]
fn info_json_header_of_the_real_neffs_follows_the_contract() {
    for (name, bits) in [("matmul_small", 0x209c00u64), ("matmul_large", 0x201c00)] {
        let Some(path) = common::fixture(&format!("public/nkipy/{name}.neff")) else { return };
        let out = neff_p(&[&"info", &path, &"--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let h = &doc["header"];
        let size = std::fs::metadata(&path).unwrap().len();
        assert_eq!(h["pkg_version"], 2);
        assert_eq!(h["header_size"], 1024);
        assert_eq!(h["data_size"].as_u64().unwrap(), size - 1024);
        assert_eq!(h["neff_version"], "2.0");
        assert_eq!(h["build_version"], "");
        assert_eq!(h["num_tpb"], 1);
        assert_eq!(h["name"], "file.neff");
        assert_eq!(h["requested_tpb_count"], 1);
        assert_eq!(h["feature_bits"], bits);
        assert_eq!(h["lnc_size"], 2);
        let uuid = h["uuid"].as_str().unwrap();
        assert!(uuid.len() == 32 && uuid.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{uuid}");
        // Keys in contract order.
        let keys: Vec<&String> = h.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "pkg_version",
                "header_size",
                "data_size",
                "neff_version",
                "build_version",
                "num_tpb",
                "uuid",
                "name",
                "requested_tpb_count",
                "feature_bits",
                "lnc_size"
            ]
        );
    }
}

#[test]
fn a_closed_stdout_pipe_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_neff"))
        .args(["info"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    // Whether the report was cut short or fitted the pipe's buffer, the reader going away is
    // no error: exit 0, nothing on stderr.
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
