//! `--verify` end to end (spec §2.6): `check`, `info` and `load` compute the payload's digest
//! while streaming and compare it with the header's hash in either byte order real compilers
//! write. Expected digests are computed here with the `md-5` and `sha2` crates over the file's
//! own bytes, never by calling the core.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;

use md5::Digest as _;
use neff_host::sample::SampleBuilder;
use serde_json::Value;
use support::*;

/// Offset of `hash` in the header, and of the payload.
const HASH: usize = 172;
const PAYLOAD: usize = 1024;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `data[0..data_size]`: what the header hash covers (the stream with its zero padding).
fn payload(neff: &[u8]) -> &[u8] {
    let data_size = u64::from_le_bytes(neff[16..24].try_into().unwrap()) as usize;
    &neff[PAYLOAD..PAYLOAD + data_size]
}

fn md5_of(neff: &[u8]) -> [u8; 16] {
    md5::Md5::digest(payload(neff)).into()
}

/// Each 4-byte word reversed, written out here rather than taken from the crate.
fn swap_words(digest: &[u8; 16]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = digest[i / 4 * 4 + 3 - i % 4];
    }
    out
}

fn check_verify(path: &Path) -> std::process::Output {
    neff_p(&[&"check", &path, &"--verify"])
}

/// The `verify:` line of a `check --verify` that passed.
fn verify_line(out: &std::process::Output) -> String {
    assert_eq!(code(out), 0, "{}", stderr(out));
    let text = stdout(out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("ok: "), "{text}");
    lines[1].to_owned()
}

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(code(out), 0, "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn every_real_neff_verifies_as_a_match_word_swapped() {
    let neffs = common::public_neffs();
    for (name, path) in &neffs {
        let bytes = std::fs::read(path).unwrap();
        let md5 = md5_of(&bytes);
        // neuronx-cc 2.23 (every public NEFF) stores the digest word-swapped.
        assert_eq!(bytes[HASH..HASH + 16], swap_words(&md5), "{name}: the fixture itself");
        let (computed, stored) = (hex(&md5), hex(&bytes[HASH..HASH + 16]));
        let want = format!(
            "verify: MD5 match, word-swapped order (each 4-byte word of the digest reversed): payload {computed}, header {stored}"
        );
        let out = check_verify(path);
        assert_eq!(verify_line(&out), want, "{name}");
        assert!(stderr(&out).is_empty(), "{name}: {}", stderr(&out));
        println!("{name}: {}", verify_line(&out));

        let doc = json_of(&neff_p(&[&"info", &path, &"--json", &"--verify"]));
        let hash = serde_json::json!({
            "algorithm": "md5", "stored": stored, "result": "match", "order": "word-swapped", "computed": computed
        });
        assert_eq!(doc["hash"], hash, "{name}");

        let out = neff_p(&[&"load", &path, &"--digest-only", &"--verify"]);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert!(stdout(&out).contains("; integrity match; 0 warnings\n"), "{name}: {}", stdout(&out));
        assert!(stdout(&out).contains(&format!("\n{want}\n")), "{name}: {}", stdout(&out));
    }
    if !neffs.is_empty() {
        assert!(neffs.len() >= 12, "{} real NEFFs found", neffs.len());
    }
}

#[test]
fn without_verify_nothing_is_computed_and_the_stored_hash_is_shown() {
    let Some(path) = common::fixture("public/nkipy/matmul_small.neff") else { return };
    let out = neff_p(&[&"check", &path]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1, "no verify line: {}", stdout(&out));
    let out = neff_p(&[&"info", &path]);
    let text = stdout(&out);
    assert!(
        text.contains("\n  hash                 bcb3e9ef77301698cd8b4cb9471ff5ac (stored, not verified)\n"),
        "{text}"
    );
    assert!(!text.contains("  verify "), "{text}");
    let doc = json_of(&neff_p(&[&"info", &path, &"--json"]));
    let hash = serde_json::json!({
        "algorithm": "md5", "stored": "bcb3e9ef77301698cd8b4cb9471ff5ac", "result": "not-requested",
        "order": null, "computed": null
    });
    assert_eq!(doc["hash"], hash);
    let doc = json_of(&neff_p(&[&"load", &path, &"--json", &"--digest-only"]));
    assert_eq!((&doc["integrity"], &doc["hash"]), (&Value::from("not-requested"), &hash));

    // With it, `info` keeps the stored line and adds the outcome; the header section holds both.
    let text = stdout(&neff_p(&[&"info", &path, &"--verify"]));
    let verify = "\n  verify               MD5 match, word-swapped order (each 4-byte word of the digest reversed): \
                  payload efe9b3bc98163077b94c8bcdacf51f47, header bcb3e9ef77301698cd8b4cb9471ff5ac\n";
    assert!(text.contains(&format!("(stored, not verified){verify}")), "{text}");
}

#[test]
fn a_flipped_byte_in_the_padding_or_the_stream_is_an_md5_mismatch_under_verify_only() {
    let Some(path) = common::fixture("public/nkipy/matmul_small.neff") else { return };
    let clean = std::fs::read(&path).unwrap();
    let stored = hex(&clean[HASH..HASH + 16]);
    // The last byte of data_size is zero padding after the gzip stream; byte 5 of the gzip
    // header is MTIME, in the stream but read by nobody: both still load.
    for (what, at) in [("padding", clean.len() - 1), ("gzip MTIME", PAYLOAD + 5)] {
        let mut bytes = clean.clone();
        bytes[at] ^= 0x01;
        let file = write_temp(&bytes);
        let computed = hex(&md5_of(&bytes));
        let want = format!(
            "error: header: MD5 mismatch! payload {computed}, header {stored} (neither plain nor word-swapped) (byte 172)"
        );
        for verb in [&["check"][..], &["info"], &["info", "--json"], &["load", "--digest-only"], &["load", "--json"]] {
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = verb.iter().map(|a| a as _).collect();
            let file_path = file.path();
            args.push(&file_path);
            args.push(&"--verify");
            let out = neff_p(&args);
            // The padding flip is also the gzip layer's warning (non-zero bytes after the
            // trailer); the mismatch itself is the error, not also a warning.
            let err = stderr(&out);
            let rest: String =
                err.lines().filter(|l| !l.starts_with("warning: gzip: ")).map(|l| format!("{l}\n")).collect();
            assert_eq!(code(&out), 1, "{what} {verb:?}: {err}");
            assert!(!err.contains("warning: header"), "{what} {verb:?}: {err}");
            let filtered = std::process::Output { stderr: rest.into_bytes(), ..out.clone() };
            assert_eq!(assert_one_line_error(&filtered, 1), want, "{what} {verb:?}");
            assert!(err.contains("hint: runtime status NRT_INVALID (2)"), "{what} {verb:?}: {err}");
            if verb.contains(&"--json") {
                // No report: the refusal's object, with the mismatch's code and offset.
                let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let e = &doc["error"];
                assert_eq!((e["code"].as_u64(), e["offset"].as_u64()), (Some(503), Some(172)), "{what} {verb:?}");
                assert_eq!(format!("error: header: {} (byte 172)", e["message"].as_str().unwrap()), want);
            } else {
                assert!(out.stdout.is_empty(), "{what} {verb:?}: a rejected pass prints no report");
            }
        }
        // Not asked, the same file passes: the hash is never checked by default.
        let out = neff_p(&[&"check", &file.path()]);
        assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
        assert!(!stderr(&out).contains("mismatch"), "{what}: {}", stderr(&out));
    }
}

#[test]
fn both_byte_orders_side_by_side() {
    let Some(path) = common::fixture("public/nkipy/matmul_small.neff") else { return };
    let swapped = std::fs::read(&path).unwrap();
    let md5 = md5_of(&swapped);
    // The same file with the plain digest (neuronx-cc 2.0 writes it so, and some later files too).
    let mut plain = swapped.clone();
    plain[HASH..HASH + 16].copy_from_slice(&md5);
    let plain_file = write_temp(&plain);
    let m = hex(&md5);
    assert_eq!(
        verify_line(&check_verify(&path)),
        format!(
            "verify: MD5 match, word-swapped order (each 4-byte word of the digest reversed): payload {m}, header {}",
            hex(&swap_words(&md5))
        )
    );
    assert_eq!(
        verify_line(&check_verify(plain_file.path())),
        format!("verify: MD5 match, plain order (the digest's bytes as computed): payload {m}, header {m}")
    );
    let doc = json_of(&neff_p(&[&"info", &plain_file.path(), &"--json", &"--verify"]));
    assert_eq!((&doc["hash"]["order"], &doc["hash"]["computed"]), (&Value::from("plain"), &Value::from(m.clone())));
    // hash[16..32] is not compared: '0' x 16 (the 2.0.21884 toolchain) verifies the same.
    plain[HASH + 16..HASH + 32].fill(b'0');
    let tail_file = write_temp(&plain);
    assert!(verify_line(&check_verify(tail_file.path())).starts_with("verify: MD5 match, plain"));
    // Neither order: the words moved, not reversed.
    let mut moved = swapped.clone();
    moved[HASH..HASH + 16].copy_from_slice(&[&md5[4..], &md5[..4]].concat());
    let out = check_verify(write_temp(&moved).path());
    assert!(assert_one_line_error(&out, 1).contains("MD5 mismatch!"));
}

#[test]
fn pack_writes_the_hash_word_swapped_and_check_verify_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    std::fs::write(&sample, SampleBuilder::new().build().unwrap()).unwrap();
    let out = neff_p(&[&"unpack", &sample, &"-o", &dir.path().join("a")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let packed = dir.path().join("packed.neff");
    let out = neff_p(&[&"pack", &dir.path().join("a"), &"-o", &packed]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bytes = std::fs::read(&packed).unwrap();
    let md5 = md5_of(&bytes);
    assert_eq!(bytes[HASH..HASH + 16], swap_words(&md5), "as current compilers write it");
    assert_eq!(bytes[HASH + 16..HASH + 32], [0; 16]);
    let line = verify_line(&check_verify(&packed));
    assert!(line.starts_with("verify: MD5 match, word-swapped order "), "{line}");
    assert!(line.contains(&format!("payload {}, ", hex(&md5))), "{line}");

    // A real NEFF unpacked and packed again: the new payload's hash, in the compiler's order.
    let Some(real) = common::fixture("public/nkipy/matmul_small.neff") else { return };
    let out = neff_p(&[&"unpack", &real, &"-o", &dir.path().join("b")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let repacked = dir.path().join("repacked.neff");
    assert_eq!(code(&neff_p(&[&"pack", &dir.path().join("b"), &"-o", &repacked])), 0);
    let line = verify_line(&check_verify(&repacked));
    assert!(line.starts_with("verify: MD5 match, word-swapped order "), "{line}");
}

#[test]
fn pkg_version_1_verifies_its_sha256_and_a_flipped_byte_is_a_mismatch() {
    let bytes = SampleBuilder::new().pkg_version(1).build().unwrap();
    let sha: [u8; 32] = sha2::Sha256::digest(payload(&bytes)).into();
    assert_eq!(bytes[HASH..HASH + 32], sha, "pkg 1 stores the SHA-256 as is");
    let file = write_temp(&bytes);
    let s = hex(&sha);
    assert_eq!(verify_line(&check_verify(file.path())), format!("verify: SHA-256 match: payload {s}, header {s}"));
    let doc = json_of(&neff_p(&[&"info", &file.path(), &"--json", &"--verify"]));
    let want = serde_json::json!({
        "algorithm": "sha256", "stored": s, "result": "match", "order": "plain", "computed": s
    });
    assert_eq!(doc["hash"], want);

    // One byte of the padding after the tar (inside data_size): the tar walker notes it, the
    // digest differs.
    let mut damaged = bytes.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x01;
    let damaged_file = write_temp(&damaged);
    let computed = hex(&sha2::Sha256::digest(payload(&damaged)));
    let out = check_verify(damaged_file.path());
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    let error: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(error, [format!("error: header: SHA256 mismatch! payload {computed}, header {s} (byte 172)")], "{err}");
    assert_eq!(code(&neff_p(&[&"check", &damaged_file.path()])), 0, "not asked, not checked");
}
