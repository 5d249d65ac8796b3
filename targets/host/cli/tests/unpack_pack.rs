//! `unpack` and `pack` end to end: agreement with an independent extraction, path safety,
//! round trips on the real NEFFs and on the sample.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use std::fs;
use std::path::Path;

use neff_host::sample::SampleBuilder;
use support::*;

fn unpack(neff_file: &Path, dir: &Path) {
    let out = neff_p(&[&"unpack", &neff_file, &"-o", &dir]);
    assert_eq!(code(&out), 0, "unpack: {}", stderr(&out));
}

fn pack(dir: &Path, neff_file: &Path, extra: &[&str]) {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"pack", &dir, &"-o", &neff_file];
    for e in extra {
        args.push(e);
    }
    let out = neff_p(&args);
    assert_eq!(code(&out), 0, "pack: {}", stderr(&out));
}

fn info_header(neff_file: &Path) -> serde_json::Value {
    let out = neff_p(&[&"info", &"--json", &neff_file]);
    assert_eq!(code(&out), 0, "info: {}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["header"].clone()
}

#[test]
fn unpack_matches_an_independent_extraction_of_the_real_neffs() {
    for (name, bytes) in common::real_neffs() {
        let dir = tempfile::tempdir().unwrap();
        let path = common::fixture(&format!("public/nkipy/{name}.neff")).unwrap();
        unpack(&path, dir.path());
        let expected = members_of(&bytes);
        let mut names: Vec<String> = expected.iter().map(|(n, _)| n.clone()).collect();
        for (member, body) in &expected {
            assert_eq!(&fs::read(dir.path().join(member)).unwrap(), body, "{name}: {member}");
        }
        names.push("header.json".into());
        names.sort();
        assert_eq!(files_under(dir.path()), names, "{name}: nothing more, nothing less");
        let header: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.path().join("header.json")).unwrap()).unwrap();
        let order: Vec<&str> = header["members"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let tar_order: Vec<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(order, tar_order, "{name}: header.json keeps the tar order");
        assert_eq!(header["tpb_per_node"].as_array().unwrap().len(), 64);
        assert_eq!(header["tpb_per_node"][0], 1);
        let hash: String = bytes[172..204].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(header["hash"], hash.as_str());
        assert_eq!(header["lnc_size"], 2);
    }
}

#[test]
fn unpack_then_pack_keeps_the_info_header_of_the_real_neffs() {
    for (name, _) in common::real_neffs() {
        let dir = tempfile::tempdir().unwrap();
        let path = common::fixture(&format!("public/nkipy/{name}.neff")).unwrap();
        let out_dir = dir.path().join("x");
        unpack(&path, &out_dir);
        let repacked = dir.path().join("re.neff");
        pack(&out_dir, &repacked, &[]);
        assert_eq!(info_header(&repacked), info_header(&path), "{name}");
        // Same members, same order, same bytes.
        let original = fs::read(&path).unwrap();
        let again = fs::read(&repacked).unwrap();
        assert_eq!(members_of(&again), members_of(&original), "{name}");
    }
}

#[test]
fn pack_unpack_pack_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    fs::write(&sample, SampleBuilder::new().build().unwrap()).unwrap();
    unpack(&sample, &dir.path().join("a"));
    pack(&dir.path().join("a"), &dir.path().join("a.neff"), &[]);
    unpack(&dir.path().join("a.neff"), &dir.path().join("b"));
    pack(&dir.path().join("b"), &dir.path().join("b.neff"), &[]);
    let a = fs::read(dir.path().join("a.neff")).unwrap();
    let b = fs::read(dir.path().join("b.neff")).unwrap();
    assert!(a == b, "second pack differs from the first");
    assert_eq!(members_of(&a), members_of(&fs::read(&sample).unwrap()));
}

#[test]
fn pack_writes_the_runtime_verifiable_hash_for_both_packagings() {
    use md5::Digest as _;
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    fs::write(&sample, SampleBuilder::new().build().unwrap()).unwrap();
    unpack(&sample, &dir.path().join("a"));
    for pkg in ["1", "2"] {
        let file = dir.path().join(format!("p{pkg}.neff"));
        pack(&dir.path().join("a"), &file, &["--pkg-version", pkg]);
        let bytes = fs::read(&file).unwrap();
        let data_size = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
        assert_eq!(bytes.len(), 1024 + data_size);
        let data = &bytes[1024..];
        if pkg == "1" {
            assert!(!data.starts_with(&[0x1f, 0x8b]), "pkg 1 is a raw tar");
            assert_eq!(&bytes[172..204], sha2::Sha256::digest(data).as_slice());
        } else {
            assert!(data.starts_with(&[0x1f, 0x8b]), "pkg 2 is gzip");
            // Word-swapped, as current compilers write it (spec §2.6).
            let md5: [u8; 16] = md5::Md5::digest(data).into();
            let swapped: Vec<u8> = md5.chunks(4).flat_map(|w| w.iter().rev().copied()).collect();
            assert_eq!(&bytes[172..188], swapped.as_slice());
            assert_ne!(swapped, md5, "the two orders differ for this digest");
            assert_eq!(&bytes[188..204], &[0u8; 16]);
        }
        assert_eq!(info_header(&file)["pkg_version"], pkg.parse::<u64>().unwrap());
        assert_eq!(members_of(&bytes).len(), members_of(&fs::read(&sample).unwrap()).len());
    }
}

#[test]
fn pack_without_header_json_takes_info_json_and_kelf_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for (name, body) in SampleBuilder::new().members().unwrap() {
        let path = src.join(&name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    }
    pack(&src, &dir.path().join("one.neff"), &[]);
    pack(&src, &dir.path().join("two.neff"), &[]);
    let one = fs::read(dir.path().join("one.neff")).unwrap();
    assert!(one == fs::read(dir.path().join("two.neff")).unwrap(), "pack is deterministic");
    let h = info_header(&dir.path().join("one.neff"));
    assert_eq!(h["name"], "sample.neff", "from info.json");
    assert_eq!(h["lnc_size"], 2, "graphs in kelf-0.json");
    assert_eq!(h["neff_version"], "2.0");
    assert_eq!(h["feature_bits"], 0x400);
    assert_eq!(h["data_size"].as_u64().unwrap() % 10240, 0);
    // Real order: sorted, neff.json last.
    let names: Vec<String> = members_of(&one).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.last().unwrap(), "neff.json");
    let expected: Vec<String> = SampleBuilder::new().members().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, expected);
    // A changed member changes the derived uuid.
    fs::write(src.join("sg00/PE.bin"), vec![0u8; 768]).unwrap();
    pack(&src, &dir.path().join("three.neff"), &[]);
    assert_ne!(info_header(&dir.path().join("three.neff"))["uuid"], h["uuid"]);
}

#[test]
fn pack_refuses_a_member_list_naming_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    fs::write(&sample, SampleBuilder::new().build().unwrap()).unwrap();
    unpack(&sample, &dir.path().join("a"));
    fs::remove_file(dir.path().join("a/sg01/PE.json")).unwrap();
    let out = neff_p(&[&"pack", &dir.path().join("a"), &"-o", &dir.path().join("x.neff")]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("sg01/PE.json"), "{line}");
    assert!(!dir.path().join("x.neff").exists(), "no half-written output");
    let out = neff_p(&[&"pack", &dir.path().join("nope"), &"-o", &dir.path().join("x.neff")]);
    assert_one_line_error(&out, 2);
}

fn crafted(members: &[(&str, &[u8], u8)]) -> tempfile::NamedTempFile {
    let mut tar_stream = Vec::new();
    for (name, body, flag) in members {
        tar_stream.extend(raw_tar_member(name, body, *flag));
    }
    tar_stream.extend([0u8; 1024]);
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, &neff_around_tar(&tar_stream)).unwrap();
    f
}

/// A PAX extended header (typeflag `x`) with `records`.
fn pax_records(records: &[(&str, &str)]) -> Vec<u8> {
    let mut data = Vec::new();
    for (k, v) in records {
        let rest = format!(" {k}={v}\n");
        // The length counts its own digits.
        let mut len = rest.len() + 1;
        while format!("{len}").len() + rest.len() != len {
            len += 1;
        }
        data.extend_from_slice(format!("{len}{rest}").as_bytes());
    }
    data
}

#[test]
fn unpack_refuses_members_that_escape_the_directory() {
    // The core's tar walker refuses absolute and `..` names itself, at the member's header
    // (after kelf-0.json's header and body block: tar byte 1024), with the name as it read it
    // (one leading "./" stripped); what it lets through, unpack's own sanitiser refuses, each
    // with its reason and a hint. The member's body is never written.
    let core = |name: &str, reason: &str| format!("error: {name}: tar member name {reason} (tar byte 1024)\n");
    let unpack = |name: &str, reason: &str| {
        format!("error: {name}: member path {reason}\nhint: unpack writes only inside the output directory\n")
    };
    let cases = [
        ("../evil.txt", core("../evil.txt", "has a '..' component")),
        ("sg00/../../evil.txt", core("sg00/../../evil.txt", "has a '..' component")),
        ("./../evil.txt", core("../evil.txt", "has a '..' component")),
        ("/tmp/neff-cli-evil.txt", core("/tmp/neff-cli-evil.txt", "is an absolute path")),
        ("a//evil.txt", unpack("a//evil.txt", "has an empty component")),
        ("a/./evil.txt", unpack("a/./evil.txt", "has a '.' component")),
        (".", unpack(".", "has a '.' component")),
        ("sg00\\..\\evil.txt", unpack("sg00\\..\\evil.txt", "holds a backslash")),
        ("evil\\", unpack("evil\\", "holds a backslash")),
    ];
    for (evil, want) in cases {
        let f = crafted(&[("kelf-0.json", b"{}", b'0'), (evil, b"owned", b'0')]);
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = neff_p(&[&"unpack", &f.path(), &"-o", &out_dir]);
        assert_one_line_error(&out, 1);
        assert_eq!(stderr(&out), want, "{evil}");
        assert!(out.stdout.is_empty(), "{evil}");
        assert!(!dir.path().join("evil.txt").exists(), "{evil} escaped");
        assert!(!out_dir.join("evil.txt").exists(), "{evil} written");
        assert!(!Path::new("/tmp/neff-cli-evil.txt").exists());
        // Members stream to disk: the one before is written, nothing after, no header.json.
        assert_eq!(files_under(&out_dir), ["kelf-0.json"], "{evil}");
    }

    // A NUL cannot be in a ustar name (it ends the field), only in a PAX path: the core refuses
    // it there, before unpack's own NUL rule could be reached, at the header the path applies to
    // (after the PAX header and its one block of records: tar byte 2048), with the NUL shown as
    // '?'. A backslash through PAX reaches unpack's sanitiser like one in a ustar name.
    let cases = [
        ("evil\0.txt", "error: evil?.txt: tar member name contains a NUL byte (tar byte 2048)\n".to_string()),
        ("sg00\\evil.txt", unpack("sg00\\evil.txt", "holds a backslash")),
    ];
    for (path, want) in cases {
        let records = pax_records(&[("path", path)]);
        let f = crafted(&[("kelf-0.json", b"{}", b'0'), ("././@PaxHeader", &records, b'x'), ("a.bin", b"owned", b'0')]);
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = neff_p(&[&"unpack", &f.path(), &"-o", &out_dir]);
        assert_one_line_error(&out, 1);
        assert_eq!(stderr(&out), want, "{path:?}");
        assert_eq!(files_under(&out_dir), ["kelf-0.json"], "{path:?}: only the member before it");
    }
}

#[test]
fn unpack_never_writes_through_a_symlink_or_over_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    fs::write(&sample, SampleBuilder::new().build().unwrap()).unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::symlink(&outside, out_dir.join("sg00")).unwrap();
    let out = neff_p(&[&"unpack", &sample, &"-o", &out_dir]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("symlink"), "{line}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "nothing written through the link");

    // A dangling symlink where a member goes is not followed either.
    let out_dir = dir.path().join("out2");
    fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::symlink(dir.path().join("target.txt"), out_dir.join("info.json")).unwrap();
    let out = neff_p(&[&"unpack", &sample, &"-o", &out_dir]);
    assert_one_line_error(&out, 2);
    assert!(!dir.path().join("target.txt").exists());

    // An existing header.json (a previous unpack) is not overwritten.
    let out_dir = dir.path().join("out3");
    unpack(&sample, &out_dir);
    let before = fs::read(out_dir.join("header.json")).unwrap();
    let out = neff_p(&[&"unpack", &sample, &"-o", &out_dir]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("already exists"), "{line}");
    assert_eq!(fs::read(out_dir.join("header.json")).unwrap(), before);
}

#[test]
fn unpack_skips_directories_and_keeps_the_later_duplicate() {
    let f = crafted(&[
        ("sg00/", b"", b'5'),
        ("sg00/a.bin", b"first", b'0'),
        ("link", b"", b'2'),
        ("sg00/a.bin", b"second", b'0'),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = neff_p(&[&"unpack", &f.path(), &"-o", &dir.path()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("warning: sg00/a.bin: duplicate member"), "{}", stderr(&out));
    assert_eq!(fs::read(dir.path().join("sg00/a.bin")).unwrap(), b"second");
    assert_eq!(files_under(dir.path()), ["header.json", "sg00/a.bin"]);
}

#[test]
fn a_member_named_header_json_is_refused() {
    let f = crafted(&[("header.json", b"{}", b'0')]);
    let dir = tempfile::tempdir().unwrap();
    let out = neff_p(&[&"unpack", &f.path(), &"-o", &dir.path().join("o")]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("header.json"), "{line}");
}

/// A ustar member `name` (raw bytes, up to 100) with `body`, its checksum sealed.
fn raw_named_member(name: &[u8], body: &[u8]) -> Vec<u8> {
    let placeholder = "n".repeat(name.len());
    let mut m = raw_tar_member(&placeholder, body, b'0');
    m[..name.len()].copy_from_slice(name);
    m[148..156].fill(b' ');
    let sum: u32 = m[..512].iter().map(|&b| u32::from(b)).sum();
    m[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    m
}

#[test]
fn unpack_writes_a_member_whose_name_is_not_utf8_under_its_raw_name() {
    use std::os::unix::ffi::OsStrExt;
    let raw: &[u8] = b"sg00/hi\x80\x81\x82\x83bye";
    let mut tar_stream = raw_tar_member("kelf-0.json", b"{}", b'0');
    tar_stream.extend(raw_named_member(raw, b"raw body"));
    tar_stream.extend([0u8; 1024]);
    let f = tempfile::NamedTempFile::new().unwrap();
    fs::write(f.path(), neff_around_tar(&tar_stream)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = neff_p(&[&"unpack", &f.path(), &"-o", &dir.path()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = dir.path().join(std::ffi::OsStr::from_bytes(raw));
    assert_eq!(fs::read(&path).unwrap(), b"raw body", "written under its raw name");
    assert_eq!(fs::read_dir(dir.path().join("sg00")).unwrap().count(), 1);

    // Still never outside DIR: a `..` component is refused whatever the encoding.
    for evil in [&b"\xff/../../evil\xfe"[..], b"../\xffevil"] {
        let mut tar_stream = raw_tar_member("kelf-0.json", b"{}", b'0');
        tar_stream.extend(raw_named_member(evil, b"owned"));
        tar_stream.extend([0u8; 1024]);
        fs::write(f.path(), neff_around_tar(&tar_stream)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = neff_p(&[&"unpack", &f.path(), &"-o", &out_dir]);
        let line = assert_one_line_error(&out, 1);
        assert!(line.contains("'..' component"), "{line}");
        assert_eq!(files_under(&out_dir), ["kelf-0.json"], "{evil:?}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "only out/ in the parent");
    }
}
