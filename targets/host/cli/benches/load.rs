//! `neff load --digest-only` against its floor (bare inflaters) and against the libnrt way
//! (inflate everything into RAM, index with `tar`, parse manifests with `serde_json`), on a
//! NEFF of 400 MB or more that the bench writes itself, all measured in the same run.
//!
//! ```sh
//! cargo bench -p neff-cli --bench load
//! ```
//!
//! The NEFF is `matmul_large.neff`'s members repeated [`COPIES`] times in one tar, gzip'd at the
//! default level (written once under the target directory, then reused). Every contender runs
//! as a process of its own, under `/usr/bin/time -v` when it exists (for the peak RSS), and is
//! timed wall-clock from spawn to exit, best of [`ROUNDS`] rounds taken in turn (the machine
//! may be shared):
//!
//! * **bare miniz_oxide** and **bare zlib-rs**: raw inflate of the gzip member into a 32 KiB
//!   buffer, the file read through a 64 KiB buffer, no CRC, no tar: the floor;
//! * **eager (libnrt way)**: flate2's `GzDecoder` (zlib-rs here, CRC checked) into one `Vec`,
//!   members indexed with the `tar` crate, every `.json` parsed to a `serde_json::Value`, every
//!   payload digested with XXH3-64 (what a digest-only load computes);
//! * **neff, one thread**: the `neff` command's load with the container inflating in the
//!   loading thread;
//! * **neff load --digest-only**: the real `neff` binary, inflating in a thread of its own on a
//!   multi-core host;
//! * **neff load --digest-only --threads N** for N = 1, 2, 4, 8: the first gzip member inflated
//!   in parallel chunks by N workers (`--threads 1`: on one thread), with its peak RSS;
//! * **rapidgzip -P 2**, where `rapidgzip` is on the `PATH` (`pip install rapidgzip`): the
//!   NEFF's payload (written once beside it) inflated to nowhere by rapidgzip's parallel
//!   decoder with 2 threads, inflating only.
//!
//! It prints each time and the ratios of the same run: neff / eager, neff / bare miniz_oxide,
//! neff / bare zlib-rs, and neff's peak RSS. Under `cargo test` (no `--bench` argument) it runs
//! each contender once on `matmul_large.neff` itself and checks that the eager loader's digests
//! are those `neff load --json` reports. `cargo bench -p neff-cli --bench load -- --neff-path`
//! writes the NEFF if needed and prints its path (`scripts/memory.sh` uses it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Copies of matmul_large's members: 320 x 9.3 MB of tar gzip (flate2's default level) to a
/// NEFF of about 408 MB.
const COPIES: usize = 320;
/// Rounds; each contender's best is kept.
const ROUNDS: usize = 3;
/// The read buffer of every streaming contender (as the `neff` command's).
const READ_BUFFER: usize = 64 * 1024;
/// The inflate output buffer of the bare inflaters (the core's window).
const WINDOW: usize = 32 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--contender") {
        let path = PathBuf::from(&args[i + 2]);
        match args[i + 1].as_str() {
            "miniz" => println!("{}", bare_miniz(&path)),
            "zlib-rs" => println!("{}", bare_zlib_rs(&path)),
            "eager" => {
                for (member, digest) in eager(&path) {
                    println!("{member} {digest:016x}");
                }
            }
            "neff-inline" => neff_inline(&path),
            other => panic!("unknown contender {other}"),
        }
        return;
    }
    let Some(small) = common::fixture("public/nkipy/matmul_large.neff") else {
        println!("load bench: skipped, matmul_large.neff is not available (../shared/fixtures)");
        return;
    };
    if args.iter().any(|a| a == "--neff-path") {
        println!("{}", generated_neff(&small).display());
        return;
    }
    if !args.iter().any(|a| a == "--bench") {
        smoke(&small);
        return;
    }
    let big = generated_neff(&small);
    bench(&big);
}

/// One pass of each contender on `neff`, and the eager digests against neff's.
fn smoke(neff: &Path) {
    for contender in [Contender::Miniz, Contender::ZlibRs, Contender::Eager, Contender::NeffInline, Contender::Neff] {
        let run = contender.run(neff);
        assert!(run.time > Duration::ZERO, "{}", contender.label());
    }
    let eager: HashMap<String, String> = self_command("eager", neff)
        .output()
        .map(|o| String::from_utf8(o.stdout).unwrap())
        .unwrap()
        .lines()
        .map(|l| {
            let (m, d) = l.split_once(' ').unwrap();
            (m.to_owned(), d.to_owned())
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_neff")).args(["load", "--digest-only", "--json"]).arg(neff).output();
    let doc: serde_json::Value = serde_json::from_slice(&out.unwrap().stdout).unwrap();
    let payloads = doc["payloads"].as_array().unwrap();
    assert_eq!(payloads.len(), eager.len(), "the eager loader digests every payload neff places");
    for p in payloads {
        let member = p["member"].as_str().unwrap();
        assert_eq!(eager.get(member).map(String::as_str), p["digest"].as_str(), "{member}");
    }
    println!(
        "load bench: smoke pass on {} ok (eager digests = neff's); run `cargo bench -p neff-cli --bench load`",
        neff.display()
    );
}

fn bench(neff: &Path) {
    let neff_size = std::fs::metadata(neff).unwrap().len();
    let tar_size = tar_size(neff);
    let contenders = [
        Contender::Miniz,
        Contender::ZlibRs,
        Contender::Eager,
        Contender::NeffInline,
        Contender::Neff,
        Contender::Threads(1),
        Contender::Threads(2),
        Contender::Threads(4),
        Contender::Threads(8),
    ];
    // rapidgzip, where it is installed: the parallel inflater the issue measured against.
    let rapidgzip = which("rapidgzip").map(|_| Contender::Rapidgzip);
    let contenders: Vec<Contender> = contenders.into_iter().chain(rapidgzip).collect();
    let contenders = &contenders[..];
    let mut best: Vec<Option<Run>> = vec![None; contenders.len()];
    for _ in 0..ROUNDS {
        for (slot, contender) in best.iter_mut().zip(contenders) {
            let run = contender.run(neff);
            if slot.as_ref().is_none_or(|b| run.time < b.time) {
                *slot = Some(run);
            }
        }
    }
    let best: Vec<Run> = best.into_iter().map(Option::unwrap).collect();
    println!(
        "load bench: matmul_large's members x{COPIES}: NEFF {:.1} MB, tar {:.1} MB; best of {ROUNDS}, wall time of each \
         whole process",
        neff_size as f64 / 1e6,
        tar_size as f64 / 1e6
    );
    println!("  {:<44} {:>9} {:>12} {:>14}", "contender", "time (s)", "MB/s of tar", "peak RSS (MiB)");
    for (contender, run) in contenders.iter().zip(&best) {
        let rss = run.peak_rss_kib.map_or("-".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0));
        println!(
            "  {:<44} {:>9.3} {:>12.1} {:>14}",
            contender.label(),
            run.time.as_secs_f64(),
            tar_size as f64 / 1e6 / run.time.as_secs_f64(),
            rss
        );
    }
    let [miniz, zlib_rs, eager, inline, neff_run] = [0, 1, 2, 3, 4].map(|i| best[i].time.as_secs_f64());
    println!("ratios (same run):");
    println!("  neff load --digest-only / eager (libnrt way)   {:>7.3}  (goal <= 0.5)", neff_run / eager);
    println!("  neff load --digest-only / bare miniz_oxide     {:>7.3}  (goal <= 0.9)", neff_run / miniz);
    println!("  neff load --digest-only / bare zlib-rs         {:>7.3}", neff_run / zlib_rs);
    println!("  neff load --digest-only / neff, one thread     {:>7.3}", neff_run / inline);
    match best[4].peak_rss_kib {
        Some(k) => {
            println!("  neff load --digest-only peak RSS               {:>7.1} MiB  (goal <= 16)", k as f64 / 1024.0)
        }
        None => println!("  neff load --digest-only peak RSS: /usr/bin/time not found (apt-get install time)"),
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("parallel inflate (--threads N; {cores} cores here: more threads than cores are oversubscribed):");
    for (i, n) in [(5, 1), (6, 2), (7, 4), (8, 8)] {
        let run = &best[i];
        let rss = run.peak_rss_kib.map_or("-".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
        println!(
            "  --threads {n}: / bare zlib-rs {:>6.3}, / --threads 1 {:>6.3}, peak RSS {rss}{}",
            run.time.as_secs_f64() / zlib_rs,
            run.time.as_secs_f64() / best[5].time.as_secs_f64(),
            if n > cores { " (oversubscribed)" } else { "" }
        );
    }
    match best.get(9) {
        Some(run) => {
            let rapid = run.time.as_secs_f64();
            println!("  rapidgzip -P 2 (inflate only): / bare zlib-rs {:>6.3}", rapid / zlib_rs);
            println!(
                "  neff load --digest-only --threads 2 / rapidgzip -P 2 {:>6.3}",
                best[6].time.as_secs_f64() / rapid
            );
        }
        None => println!("  rapidgzip: not on the PATH (pip install rapidgzip), not run"),
    }
}

/// The path of program `name` on the `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The NEFF's payload (its gzip stream and padding, without the 1024-byte header) as a file of
/// its own beside it, written once: what a gzip tool reads.
fn payload_file(neff: &Path) -> PathBuf {
    let path = neff.with_extension("payload.gz");
    if !path.exists() {
        let mut file = File::open(neff).unwrap();
        file.seek(SeekFrom::Start(1024)).unwrap();
        let mut out = File::create(&path).unwrap();
        std::io::copy(&mut file, &mut out).unwrap();
    }
    path
}

#[derive(Debug, Clone, Copy)]
enum Contender {
    Miniz,
    ZlibRs,
    Eager,
    NeffInline,
    Neff,
    /// `neff load --digest-only --threads N`.
    Threads(u8),
    /// `rapidgzip -P 2 -d -c` on the NEFF's payload (inflating only, to /dev/null).
    Rapidgzip,
}

#[derive(Debug, Clone)]
struct Run {
    time: Duration,
    peak_rss_kib: Option<u64>,
}

impl Contender {
    fn label(self) -> &'static str {
        match self {
            Contender::Miniz => "bare miniz_oxide inflate",
            Contender::ZlibRs => "bare zlib-rs inflate",
            Contender::Eager => "eager, libnrt way (flate2 + tar + serde_json)",
            Contender::NeffInline => "neff load --digest-only, one thread",
            Contender::Neff => "neff load --digest-only",
            Contender::Threads(1) => "neff load --digest-only --threads 1",
            Contender::Threads(2) => "neff load --digest-only --threads 2",
            Contender::Threads(4) => "neff load --digest-only --threads 4",
            Contender::Threads(_) => "neff load --digest-only --threads 8",
            Contender::Rapidgzip => "rapidgzip -P 2 (inflate only)",
        }
    }

    fn command(self, neff: &Path) -> Command {
        match self {
            Contender::Miniz => self_command("miniz", neff),
            Contender::ZlibRs => self_command("zlib-rs", neff),
            Contender::Eager => self_command("eager", neff),
            Contender::NeffInline => self_command("neff-inline", neff),
            Contender::Neff => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_neff"));
                c.args(["load", "--digest-only"]).arg(neff);
                c
            }
            Contender::Threads(n) => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_neff"));
                c.args(["load", "--digest-only", "--threads", &n.to_string()]).arg(neff);
                c
            }
            Contender::Rapidgzip => {
                let mut c = Command::new(which("rapidgzip").unwrap_or_else(|| PathBuf::from("rapidgzip")));
                c.args(["-P", "2", "-d", "-c"]).arg(payload_file(neff));
                c
            }
        }
    }

    /// Runs the contender as a process (under `/usr/bin/time -v` when present).
    fn run(self, neff: &Path) -> Run {
        let inner = self.command(neff);
        let time_v = Path::new("/usr/bin/time");
        let report = std::env::temp_dir().join(format!("neff-load-bench-{}.time", std::process::id()));
        let mut command = if time_v.exists() {
            let mut c = Command::new(time_v);
            c.arg("-v").arg("-o").arg(&report).arg(inner.get_program()).args(inner.get_args());
            c
        } else {
            inner
        };
        command.stdout(Stdio::null()).stderr(Stdio::null());
        let started = Instant::now();
        let status = command.status().unwrap();
        let time = started.elapsed();
        assert!(status.success(), "{}: {status}", self.label());
        let peak_rss_kib = std::fs::read_to_string(&report).ok().and_then(|text| {
            let _ = std::fs::remove_file(&report);
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
                .and_then(|v| v.trim().parse().ok())
        });
        Run { time, peak_rss_kib }
    }
}

/// This bench binary, run again as one contender.
fn self_command(contender: &str, neff: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.arg("--contender").arg(contender).arg(neff);
    c
}

/// The gzip member of a NEFF, read through a 64 KiB buffer, its header skipped (RFC 1952).
fn deflate_stream(neff: &Path) -> BufReader<std::io::Take<File>> {
    let mut file = File::open(neff).unwrap();
    let mut header = [0u8; 1024];
    file.read_exact(&mut header).unwrap();
    let data_size = u64::from_le_bytes(header[16..24].try_into().unwrap());
    let mut gz = BufReader::with_capacity(READ_BUFFER, file.take(data_size));
    let mut fixed = [0u8; 10];
    gz.read_exact(&mut fixed).unwrap();
    assert_eq!(&fixed[..3], &[0x1f, 0x8b, 8], "a gzip member");
    let flags = fixed[3];
    let mut byte = [0u8; 1];
    if flags & 4 != 0 {
        let mut xlen = [0u8; 2];
        gz.read_exact(&mut xlen).unwrap();
        std::io::copy(&mut (&mut gz).take(u64::from(u16::from_le_bytes(xlen))), &mut std::io::sink()).unwrap();
    }
    for flag in [8, 16] {
        if flags & flag != 0 {
            while gz.read_exact(&mut byte).is_ok() && byte[0] != 0 {}
        }
    }
    if flags & 2 != 0 {
        gz.read_exact(&mut [0u8; 2]).unwrap();
    }
    gz
}

/// Bare miniz_oxide: inflated bytes of the first gzip member, no CRC.
fn bare_miniz(neff: &Path) -> u64 {
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    use miniz_oxide::inflate::TINFLStatus;
    let mut input = deflate_stream(neff);
    let mut state = Box::new(DecompressorOxide::new());
    let mut ring = vec![0u8; WINDOW];
    let (mut out_pos, mut total) = (0usize, 0u64);
    loop {
        let buf = std::io::BufRead::fill_buf(&mut input).unwrap();
        let flags = if buf.is_empty() { 0 } else { inflate_flags::TINFL_FLAG_HAS_MORE_INPUT };
        let (status, n_in, n_out) = decompress(&mut state, buf, &mut ring, out_pos, flags);
        std::io::BufRead::consume(&mut input, n_in);
        total += n_out as u64;
        out_pos = (out_pos + n_out) & (WINDOW - 1);
        match status {
            TINFLStatus::Done => return total,
            TINFLStatus::HasMoreOutput | TINFLStatus::NeedsMoreInput => {}
            other => panic!("inflate failed: {other:?}"),
        }
    }
}

/// Bare zlib-rs (flate2's raw `Decompress`): inflated bytes of the first gzip member, no CRC.
fn bare_zlib_rs(neff: &Path) -> u64 {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut input = deflate_stream(neff);
    let mut state = Decompress::new(false);
    let mut out = vec![0u8; WINDOW];
    loop {
        let buf = std::io::BufRead::fill_buf(&mut input).unwrap();
        let before = state.total_in();
        let status = state.decompress(buf, &mut out, FlushDecompress::None).unwrap();
        let n_in = (state.total_in() - before) as usize;
        std::io::BufRead::consume(&mut input, n_in);
        match status {
            Status::StreamEnd => return state.total_out(),
            Status::Ok | Status::BufError => {}
        }
    }
}

/// The libnrt way: the whole tar in RAM, indexed with `tar`, manifests parsed with
/// `serde_json`, payloads digested (`.npy` without its header). Returns (member, digest).
fn eager(neff: &Path) -> Vec<(String, u64)> {
    let mut file = File::open(neff).unwrap();
    let mut header = [0u8; 1024];
    file.read_exact(&mut header).unwrap();
    let data_size = u64::from_le_bytes(header[16..24].try_into().unwrap());
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(BufReader::with_capacity(READ_BUFFER, file.take(data_size)))
        .read_to_end(&mut tar_bytes)
        .unwrap();
    // Name -> (offset, size); a later copy of a member replaces an earlier one.
    let mut index: HashMap<String, (usize, usize)> = HashMap::new();
    let mut order = Vec::new();
    for entry in tar::Archive::new(tar_bytes.as_slice()).entries().unwrap() {
        let entry = entry.unwrap();
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let span = (entry.raw_file_position() as usize, entry.size() as usize);
        if index.insert(name.clone(), span).is_none() {
            order.push(name);
        }
    }
    let body = |name: &str| {
        let (at, len) = index[name];
        &tar_bytes[at..at + len]
    };
    let mut manifests = 0usize;
    for name in order.iter().filter(|n| n.ends_with(".json")) {
        let doc: serde_json::Value = serde_json::from_slice(body(name)).unwrap();
        manifests += usize::from(!doc.is_null());
    }
    assert!(manifests > 0);
    order
        .iter()
        .filter(|n| !n.starts_with("debug_info/") && (n.ends_with(".bin") || n.ends_with(".npy")))
        .map(|name| {
            let bytes = body(name);
            let data = if name.ends_with(".npy") { common::neff::npy_data(bytes) } else { bytes };
            (name.clone(), xxhash_rust::xxh3::xxh3_64(data))
        })
        .collect()
}

/// The `neff` command's load, with the container inflating in the loading thread.
fn neff_inline(neff: &Path) {
    use neff_host::inflate::Inflation;
    use neff_host::loading::{run, Request, Target};
    use neff_host::source::{FileSource, InputSource};
    let source = FileSource::open(neff).unwrap();
    let target = Target::DigestOnly {
        arch: neff_host::loading::DeviceArch::Pinned(neff::manifest::Arch::Cayman),
        capacity: 64 << 30,
        notebook: 0,
    };
    let request = Request { inflation: Some(Inflation::Inline), ..Request::check().onto(target) };
    let pass = run(InputSource::File(source), request).unwrap_or_else(|e| panic!("{}", e));
    assert!(pass.report.inflated_bytes > 0);
}

/// The size of a NEFF's tar stream (counted by inflating it: the gzip trailer's ISIZE is only
/// the size mod 2^32).
fn tar_size(neff: &Path) -> u64 {
    bare_zlib_rs(neff)
}

/// `matmul_large`'s members repeated [`COPIES`] times, under the target directory.
fn generated_neff(small: &Path) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("matmul_large_x{COPIES}.neff"));
    if path.exists() {
        return path;
    }
    eprintln!("load bench: writing {} (once)...", path.display());
    let source = std::fs::read(small).unwrap();
    let members = common::neff::members(&source);
    let partial = path.with_extension("partial");
    let mut file = File::create(&partial).unwrap();
    file.write_all(&source[..1024]).unwrap();
    let gz = flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for _ in 0..COPIES {
        for (name, body) in &members {
            let mut h = tar::Header::new_ustar();
            h.set_size(body.len() as u64);
            h.set_mode(0o664);
            h.set_mtime(0);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_path(name).unwrap();
            h.set_cksum();
            builder.append(&h, body.as_slice()).unwrap();
        }
    }
    let mut file = builder.into_inner().unwrap().finish().unwrap().into_inner().unwrap();
    let data_size = file.stream_position().unwrap() - 1024;
    file.seek(SeekFrom::Start(16)).unwrap();
    file.write_all(&data_size.to_le_bytes()).unwrap();
    drop(file);
    std::fs::rename(&partial, &path).unwrap();
    path
}
