//! The parallel inflater against the serial one: the same tar stream, the same closing result,
//! and every corruption refused the same way at the same offset, on generated NEFFs cut into
//! many small chunks; and the same `info`, `load` and `unpack` output from the command, on the
//! real NEFFs and on generated ones, with the parallel path forced on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../../tests/common/mod.rs"]
mod common;
// The fuzz crate's harness: one inflate-and-compare body for the fuzz target and these tests.
#[allow(dead_code)]
#[path = "../../../../fuzz/src/host_targets.rs"]
mod host_targets;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use embedded_io::BufRead as _;
use neff::archive::{Container, OpenOptions};
use neff::Warning;
use neff_host::inflate::parallel::{Deferred, HostInflater, ParallelInflate, Parallelism};
use neff_host::source::{FileSource, InputSource};

// The generated NEFFs are the same on every run.
use common::Rng;

/// A tar stream of members of every texture: JSON-like text with repeats, incompressible bytes
/// (stored blocks), zeros, copies of earlier members (matches reaching far back).
fn random_tar(seed: u64, members: usize) -> Vec<u8> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut tar = Vec::new();
    let mut bodies: Vec<Vec<u8>> = Vec::new();
    for i in 0..members {
        let len = (rng.next() % 150_000) as usize;
        let body: Vec<u8> = match rng.next() % 4 {
            0 => {
                let words: [&[u8]; 5] = [b"{\"name\": \"w", b"\", \"shape\": [", b"128, ", b"]}\n", b"float32"];
                let mut v = Vec::with_capacity(len);
                while v.len() < len {
                    let r = rng.next();
                    if r % 7 == 0 {
                        v.extend_from_slice(format!("{}", r % 100_000).as_bytes());
                    } else {
                        v.extend_from_slice(words[(r >> 8) as usize % words.len()]);
                    }
                }
                v
            }
            1 => (0..len).map(|_| rng.next() as u8).collect(),
            2 => vec![0; len],
            _ => match bodies.last() {
                Some(b) => b.iter().map(|&x| x ^ u8::from(rng.next() % 97 == 0)).collect(),
                None => vec![7; len],
            },
        };
        tar.extend_from_slice(&support::raw_tar_member(&format!("m{i}.bin"), &body, b'0'));
        bodies.push(body);
    }
    tar.extend_from_slice(&[0; 1024]);
    tar
}

/// A NEFF around `payload` (a gzip stream, possibly broken).
fn neff_of(payload: &[u8]) -> Vec<u8> {
    let fields = neff_host::writer::HeaderFields::new("crafted.neff", [7; 16], 1);
    let mut out = fields.encode(payload.len() as u64, &[0; 32]).unwrap().to_vec();
    out.extend_from_slice(payload);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// The container's tar stream and how it ended, inflated serially (`None`) or in parallel: the
/// fuzz target's own harness ([`host_targets::inflate_file`]).
fn inflate(path: &Path, par: Option<Parallelism>) -> (Vec<u8>, String) {
    host_targets::inflate_file(path, par, OpenOptions::default().max_inflated)
}

fn temp_neff(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Chunk sizes and worker counts compared with the serial path.
const CONFIGS: [(u64, usize); 3] = [(4096, 2), (9000, 3), (65_536, 2)];

fn assert_same(path: &Path, what: &str) -> String {
    assert_same_in(path, what, &CONFIGS)
}

fn assert_same_in(path: &Path, what: &str, configs: &[(u64, usize)]) -> String {
    let (serial, serial_end) = inflate(path, None);
    for &(chunk, threads) in configs {
        {
            let (par, par_end) = inflate(path, Some(Parallelism { threads, chunk }));
            assert_eq!(par_end, serial_end, "{what}: chunk {chunk}, {threads} threads");
            // A refused stream: the core does not hand on the output of the inflater's call that
            // failed (or that ended the member before a bad trailer), and the two inflaters'
            // calls end at different places, so what precedes the error may differ by less than
            // one window (32 KiB); it is the same stream, and the error is the same.
            let common = par.len().min(serial.len());
            assert!(par[..common] == serial[..common], "{what}: chunk {chunk}, {threads} threads: tar streams differ");
            if serial_end.starts_with("finish: Ok") {
                assert_eq!(par.len(), serial.len(), "{what}: chunk {chunk}, {threads} threads");
            } else {
                assert!(
                    par.len().abs_diff(serial.len()) < 32 * 1024,
                    "{what}: {} vs {} bytes",
                    par.len(),
                    serial.len()
                );
            }
        }
    }
    serial_end
}

#[test]
fn generated_neffs_inflate_alike_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 1..=4u64 {
        let tar = random_tar(seed, 24);
        let payload = gzip(&tar);
        let path = temp_neff(dir.path(), &format!("r{seed}.neff"), &neff_of(&payload));
        let end = assert_same(&path, &format!("seed {seed}"));
        assert!(end.starts_with("finish: Ok"), "seed {seed}: {end}");
        assert_eq!(inflate(&path, None).0, tar);
    }
    // The parallel path itself served (not only its serial replay).
    let (chunks, _) = neff_host::inflate::parallel::stats();
    assert!(chunks > 100, "chunks handed on: {chunks}");
}

/// A valid stream of text-like members only (dynamic blocks throughout): served by the
/// chunks, byte for byte.
#[test]
fn a_valid_stream_is_served_by_the_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut tar = Vec::new();
    for i in 0..8 {
        let mut rng = Rng(i + 1);
        let mut body = Vec::new();
        while body.len() < 200_000 {
            let r = rng.next();
            body.extend_from_slice(
                format!("{{\"name\": \"w{}\", \"shape\": [{}]}}\n", r % 5000, (r >> 20) % 512).as_bytes(),
            );
        }
        tar.extend_from_slice(&support::raw_tar_member(&format!("t{i}.json"), &body, b'0'));
    }
    tar.extend_from_slice(&[0; 1024]);
    let path = temp_neff(dir.path(), "t.neff", &neff_of(&gzip(&tar)));
    let source = FileSource::open(&path).unwrap();
    let size = source.size();
    let opts = OpenOptions::default();
    let deferred = Deferred::default();
    let par = Parallelism { threads: 2, chunk: 4096 };
    let file = source.file().try_clone().unwrap();
    let inflater = HostInflater::Parallel(Box::new(ParallelInflate::new(file, size, &opts, par, &deferred)));
    let mut sink = |_: &Warning| {};
    let mut container = Container::open(InputSource::File(source), Some(size), &opts, inflater, &mut sink).unwrap();
    deferred.set_data_size(container.header().data_size);
    let before = neff_host::inflate::parallel::stats();
    let mut out = Vec::new();
    loop {
        let b = container.fill_buf().unwrap();
        if b.is_empty() {
            break;
        }
        let n = b.len();
        out.extend_from_slice(b);
        container.consume(n);
    }
    assert!(container.finish(&mut sink).is_ok());
    assert!(out == tar);
    let after = neff_host::inflate::parallel::stats();
    assert!(after.0 - before.0 > 5, "chunks: {before:?} -> {after:?}");
}

/// Cuts at every chunk boundary (and beside it), a bad CRC, a bad ISIZE, garbage inside
/// blocks: each refused by both paths alike.
#[test]
fn every_corruption_is_refused_alike_at_the_same_offset() {
    let dir = tempfile::tempdir().unwrap();
    let tar = random_tar(9, 12);
    let payload = gzip(&tar);
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    let chunk = 4096usize;
    assert!(payload.len() > 20 * chunk, "cuts at 20 chunk boundaries at least: {} bytes", payload.len());
    let mut cut = chunk;
    while cut < payload.len() {
        for c in [cut - 1, cut, cut + 1] {
            cases.push((format!("cut at {c}"), payload[..c].to_vec()));
        }
        cut += chunk;
    }
    cases.push(("cut before the trailer".into(), payload[..payload.len() - 8].to_vec()));
    let mut crc = payload.clone();
    let n = crc.len();
    crc[n - 8] ^= 1;
    cases.push(("bad CRC".into(), crc));
    let mut isize = payload.clone();
    isize[n - 1] ^= 1;
    cases.push(("bad ISIZE".into(), isize));
    let mut rng = Rng(77);
    for i in 0..12 {
        let at = 20 + (rng.next() as usize % (n - 40));
        let mut g = payload.clone();
        for b in &mut g[at..at + 1 + i % 4] {
            *b ^= rng.next() as u8 | 1;
        }
        cases.push((format!("garbage at {at}"), g));
    }
    let mut refused = 0;
    for (what, bytes) in &cases {
        let path = temp_neff(dir.path(), "c.neff", &neff_of(bytes));
        // Cuts: at every boundary of 4096-byte chunks, with those chunks; the rest with all.
        let configs = if what.starts_with("cut at") { &CONFIGS[..1] } else { &CONFIGS[..] };
        let end = assert_same_in(&path, what, configs);
        refused += usize::from(!end.starts_with("finish: Ok"));
    }
    assert!(refused >= cases.len() - 6, "most corruptions are refused: {refused} of {}", cases.len());
}

/// Runs the command with the parallel path forced on small inputs, or off.
fn neff_cmd(args: &[&dyn AsRef<std::ffi::OsStr>], parallel: bool) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neff"));
    cmd.args(args.iter().map(|a| a.as_ref()));
    if parallel {
        cmd.args(["--threads", "2"]).env("NEFF_PARALLEL_MIN_BYTES", "0").env("NEFF_INFLATE_CHUNK", "4096");
    } else {
        cmd.args(["--threads", "1"]);
    }
    let out = cmd.output().unwrap();
    assert_ne!(out.status.code(), Some(101), "panic: {}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), out.stdout, out.stderr)
}

/// Timings printed by `load` vary from run to run.
fn without_timing(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).lines().map(|l| l.split(" in ").next().unwrap_or(l)).collect::<Vec<_>>().join("\n")
}

fn assert_verbs_alike(path: &Path, what: &str) {
    for verb in [&["info"][..], &["info", "--json"], &["load", "--digest-only"], &["check"], &["ls"]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            verb.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        args.push(&path);
        let serial = neff_cmd(&args, false);
        let par = neff_cmd(&args, true);
        assert_eq!(par.0, serial.0, "{what} {verb:?}: exit");
        assert_eq!(without_timing(&par.1), without_timing(&serial.1), "{what} {verb:?}: stdout");
        assert_eq!(without_timing(&par.2), without_timing(&serial.2), "{what} {verb:?}: stderr");
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("serial"), dir.path().join("parallel"));
    let s = neff_cmd(&[&"unpack", &path, &"-o", &a], false);
    let p = neff_cmd(&[&"unpack", &path, &"-o", &b], true);
    assert_eq!(p.0, s.0, "{what} unpack: exit");
    let files = support::files_under(&a);
    assert_eq!(support::files_under(&b), files, "{what} unpack: the same files");
    for f in &files {
        assert!(std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(), "{what} unpack: {f} differs");
    }
}

#[test]
fn real_neffs_give_the_same_output_in_parallel() {
    let Some(root) = common::fixture("public") else { return };
    let mut stack = vec![root];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "neff") {
                assert_verbs_alike(&path, &path.display().to_string());
                seen += 1;
            }
        }
    }
    assert!(seen >= 12, "real NEFFs found: {seen}");
}

#[test]
fn generated_neffs_give_the_same_output_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let spec = neff_host::scale::ScaleSpec::preset("weights").unwrap();
    let path = temp_neff(dir.path(), "weights.neff", &spec.build().unwrap());
    assert_verbs_alike(&path, "scale weights");
    let path = temp_neff(dir.path(), "random.neff", &neff_of(&gzip(&random_tar(5, 16))));
    assert_verbs_alike(&path, "random tar");
}
