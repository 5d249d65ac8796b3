//! Helpers shared by the CLI integration tests: running the binary, reading fixtures and
//! NEFFs independently of the command (with the `tar` and `flate2` crates).
#![allow(dead_code)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `neff` with `args`; asserts it did not panic (exit 101) or die by a signal.
pub fn neff(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_neff")).args(args).output().expect("spawn neff");
    let code = out.status.code().expect("neff died by a signal");
    assert_ne!(code, 101, "neff panicked: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Runs `neff` with path arguments.
pub fn neff_p(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let out =
        Command::new(env!("CARGO_BIN_EXE_neff")).args(args.iter().map(|a| a.as_ref())).output().expect("spawn neff");
    let code = out.status.code().expect("neff died by a signal");
    assert_ne!(code, 101, "neff panicked: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `bytes` in a temporary file (removed when dropped), for a verb to read by path.
pub fn write_temp(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
    f
}

/// The exit code.
pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Asserts a rejection: exit `want`, and stderr is one `error:` line, then only `hint:` lines.
pub fn assert_one_line_error(out: &Output, want: i32) -> String {
    let err = stderr(out);
    assert_eq!(code(out), want, "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty(), "no error printed");
    assert!(lines[0].starts_with("error: "), "first line: {:?}", lines[0]);
    assert!(lines[1..].iter().all(|l| l.starts_with("hint: ")), "extra lines: {err}");
    lines[0].to_owned()
}

/// The members of a NEFF, `(name, bytes)` in tar order, read with `tar` + `flate2`.
pub fn members_of(neff: &[u8]) -> Vec<(String, Vec<u8>)> {
    let data_size = u64::from_le_bytes(neff[16..24].try_into().unwrap()) as usize;
    let payload = &neff[1024..1024 + data_size];
    let tar_bytes: Vec<u8> = if payload.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(payload).read_to_end(&mut out).unwrap();
        out
    } else {
        payload.to_vec()
    };
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).unwrap();
        out.push((name, body));
    }
    out
}

/// Every regular file under `dir`, as member paths, sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = stack.pop() {
        for e in std::fs::read_dir(&path).unwrap() {
            let e = e.unwrap();
            let name = format!("{prefix}{}", e.file_name().to_str().unwrap());
            if e.file_type().unwrap().is_dir() {
                stack.push((e.path(), format!("{name}/")));
            } else {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

/// A NEFF file around a raw tar stream (gzip'd), with a plausible header.
pub fn neff_around_tar(tar_stream: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(tar_stream).unwrap();
    let payload = gz.finish().unwrap();
    let fields = neff_host::writer::HeaderFields::new("crafted.neff", [7; 16], 1);
    let mut out = fields.encode(payload.len() as u64, &[0; 32]).unwrap().to_vec();
    out.extend_from_slice(&payload);
    out
}

/// One ustar member with any name (even one the `tar` crate's builder refuses).
pub fn raw_tar_member(name: &str, body: &[u8], typeflag: u8) -> Vec<u8> {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000664");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{:011o}", body.len()).as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = typeflag;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(body);
    out.resize(out.len().next_multiple_of(512), 0);
    out
}
