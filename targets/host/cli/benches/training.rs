//! `neff check` and `neff load` on NEFFs made mostly of JSON (training NEFFs) against their
//! floor, a bare zlib-rs inflate of the same files, all measured in the same run.
//!
//! ```sh
//! cargo bench -p neff-cli --bench training
//! NEFF_BENCH_MANY=500 cargo bench -p neff-cli --bench training
//! ```
//!
//! The NEFFs: the `training` preset of `scale-neff` (written once under the target directory)
//! and, when `../shared` has it, the real training NEFF it is shaped after
//! (`training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_14041361676943519958+ade7b014`).
//! Every contender runs as a process of its own, one thread, best of [`ROUNDS`] rounds taken
//! in turn (the machine may be shared); its CPU time (user + system, from `/usr/bin/time`
//! when it exists, else the wall time) is what the ratios compare:
//!
//! * **bare zlib-rs**: raw inflate of each file's gzip member into a 32 KiB buffer, the file
//!   read through a 64 KiB buffer, no CRC, no tar, no JSON: the floor;
//! * **neff check --threads 1** and **neff load --digest-only --threads 1**, on each NEFF
//!   (each contender on one NEFF is run [`REPEAT`] times in a row, timed together), and the
//!   same with default flags (inflating in a thread of its own on a host of two cores or
//!   more), by wall time against the bare inflate's wall time: the three in turn for
//!   [`WALL_ROUNDS`] rounds, each one's median;
//! * over many copies of the training NEFF (`NEFF_BENCH_MANY`, default 100) laid out as a
//!   compile cache: **neff check --threads 1 FILE...** and **neff cache --threads 1 DIR**;
//! * **neff check --threads 1** on NEFFs of 3,000 and 12,000 tiny weights (the `trn1` preset,
//!   one definition naming them all), and the ratio of the two: about 4 when a member's lookups
//!   cost the same whatever the model's size (it was 15 when each scanned every weight).
//!
//! Under `cargo test` (no `--bench` argument) each contender runs once, on three copies for
//! the cache, and must succeed. `NEFF_BENCH_BIN=path/to/neff` times another build of `neff`
//! (an older one, to compare).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../../tests/common/mod.rs"]
mod common;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use neff_host::scale::ScaleSpec;

/// Rounds of the CPU times; each contender's best is kept.
const ROUNDS: usize = 3;
/// Rounds of the wall times, the contenders in turn; each contender's median is kept (the
/// wall ratios are of a few hundredths of a second: a best of 3 moved them by a tenth).
const WALL_ROUNDS: usize = 15;
/// Runs of a contender on one NEFF whose CPU time is taken together.
const REPEAT: usize = 10;
/// The read buffer of the bare inflater (as the `neff` command's).
const READ_BUFFER: usize = 64 * 1024;
/// The bare inflater's output buffer (the core's window).
const WINDOW: usize = 32 * 1024;
/// The real training NEFF, under `../shared/fixtures`.
const REAL: &str = "training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_14041361676943519958+ade7b014/model.neff";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--zlib-rs") {
        let total: u64 = args[i + 1..].iter().map(|p| bare_zlib_rs(Path::new(p))).sum();
        println!("{total}");
        return;
    }
    let bench = args.iter().any(|a| a == "--bench");
    let many =
        if bench { std::env::var("NEFF_BENCH_MANY").ok().and_then(|n| n.parse().ok()).unwrap_or(100) } else { 3 };
    let rounds = if bench { ROUNDS } else { 1 };
    let dir = target_dir().join("bench-training");
    let generated = dir.join("training.neff");
    if !generated.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&generated, ScaleSpec::preset("training").unwrap().build().unwrap()).unwrap();
    }
    let mut files = vec![("generated training-shaped NEFF", generated.clone())];
    if let Some(real) = common::fixture(REAL) {
        files.push(("real training NEFF (neuronx-cc 2.14)", real));
    }
    println!("training bench: best of {rounds}, CPU time (user + system) of each whole process, one thread");
    for (label, path) in &files {
        let size = std::fs::metadata(path).unwrap().len();
        let bare = best(rounds, || repeated(self_command(&[path])));
        let check = best(rounds, || repeated(neff_command(&["check", "--threads", "1"], &[path])));
        let load = best(rounds, || repeated(neff_command(&["load", "--digest-only", "--threads", "1"], &[path])));
        println!("  {label}: {:.1} MB, each contender run {REPEAT} times", size as f64 / 1e6);
        println!("    bare zlib-rs inflate                       {:>8.3} s", secs(bare));
        println!(
            "    neff check --threads 1                     {:>8.3} s   / bare {:>6.2}",
            secs(check),
            ratio(check, bare)
        );
        println!(
            "    neff load --digest-only --threads 1        {:>8.3} s   / bare {:>6.2}",
            secs(load),
            ratio(load, bare)
        );
        // The default: inflating in a thread of its own beside the walk, when the host has
        // two cores or more. Wall time, against the bare inflate's.
        let wall_rounds = if bench { WALL_ROUNDS } else { 1 };
        let walls = interleaved_wall(
            wall_rounds,
            &[&|| repeated(self_command(&[path])), &|| repeated(neff_command(&["check"], &[path])), &|| {
                repeated(neff_command(&["load", "--digest-only"], &[path]))
            }],
        );
        let (bare_wall, check_wall, load_wall) = (walls[0], walls[1], walls[2]);
        println!("    wall time, default flags ({} cores), median of {wall_rounds} rounds taken in turn:", cores());
        println!("      bare zlib-rs inflate                     {:>8.3} s", secs(bare_wall));
        println!(
            "      neff check                               {:>8.3} s   / bare {:>6.2}",
            secs(check_wall),
            ratio(check_wall, bare_wall)
        );
        println!(
            "      neff load --digest-only                  {:>8.3} s   / bare {:>6.2}",
            secs(load_wall),
            ratio(load_wall, bare_wall)
        );
    }
    let weights: Vec<(usize, PathBuf)> = [3000, 12000]
        .into_iter()
        .map(|n| {
            let path = dir.join(format!("weights-{n}.neff"));
            if !path.exists() {
                let mut spec = ScaleSpec::preset("trn1").unwrap();
                spec.set(&format!("weights={n}")).unwrap();
                spec.set(&format!("vars_per_subgraph={n}")).unwrap();
                std::fs::write(&path, spec.build().unwrap()).unwrap();
            }
            (n, path)
        })
        .collect();
    let times: Vec<Duration> = weights
        .iter()
        .map(|(n, path)| {
            let bare = best(rounds, || repeated(self_command(&[path])));
            let check = best(rounds, || repeated(neff_command(&["check", "--threads", "1"], &[path])));
            println!("  {n} weights: each contender run {REPEAT} times");
            println!("    bare zlib-rs inflate                       {:>8.3} s", secs(bare));
            println!(
                "    neff check --threads 1                     {:>8.3} s   / bare {:>6.2}",
                secs(check),
                ratio(check, bare)
            );
            check
        })
        .collect();
    println!("  neff check, 12,000 weights / 3,000: {:.2} (linear: 4)", ratio(times[1], times[0]));
    let cache = dir.join(format!("cache-{many}"));
    let neffs = write_cache(&cache, &generated, many);
    let neff_refs: Vec<&PathBuf> = neffs.iter().collect();
    let bare = best(rounds, || self_command(&neff_refs));
    let check = best(rounds, || neff_command(&["check", "--threads", "1"], &neff_refs));
    let cache_run = best(rounds, || neff_command(&["cache", "--threads", "1"], &[&cache]));
    println!("  {many} generated training-shaped NEFFs as a compile cache:");
    println!("    bare zlib-rs inflate of every NEFF         {:>8.3} s", secs(bare));
    println!(
        "    neff check --threads 1 FILE...             {:>8.3} s   / bare {:>6.2}",
        secs(check),
        ratio(check, bare)
    );
    println!(
        "    neff cache --threads 1 DIR                 {:>8.3} s   / bare {:>6.2}",
        secs(cache_run),
        ratio(cache_run, bare)
    );
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// The target directory (benches run from the package directory).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| common::repo_root().join("target"), PathBuf::from)
}

/// `count` copies of `neff` as libneuronxla entries under `root` (written once); their paths.
fn write_cache(root: &Path, neff: &Path, count: usize) -> Vec<PathBuf> {
    let bytes = std::fs::read(neff).unwrap();
    (0..count)
        .map(|i| {
            let entry = root.join(format!("neuronxcc-2.14.227.0+2d4f85be/MODULE_{i:020}+ade7b014"));
            let path = entry.join("model.neff");
            if !path.exists() {
                std::fs::create_dir_all(&entry).unwrap();
                std::fs::write(&path, &bytes).unwrap();
                std::fs::write(entry.join("model.done"), b"").unwrap();
            }
            path
        })
        .collect()
}

/// This bench inflating `paths` bare.
fn self_command(paths: &[&PathBuf]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.arg("--zlib-rs").args(paths);
    c
}

/// The `neff` command (`NEFF_BENCH_BIN` names another build to compare, e.g. an older one).
fn neff_command(args: &[&str], paths: &[&PathBuf]) -> Command {
    let bin = std::env::var_os("NEFF_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_neff").into());
    let mut c = Command::new(bin);
    c.args(args).args(paths);
    c
}

/// `inner` run [`REPEAT`] times in turn by one shell (whose CPU time counts theirs): a
/// single NEFF takes a few hundredths of a second, about the resolution of `/usr/bin/time`.
fn repeated(inner: Command) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("for i in $(seq {REPEAT}); do \"$@\" || exit 1; done"))
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args());
    c
}

/// The least CPU time of `rounds` runs of the command `make` builds; each must succeed.
fn best(rounds: usize, make: impl Fn() -> Command) -> Duration {
    (0..rounds).map(|_| timed(make()).0).min().unwrap()
}

/// The wall times of the commands `makes` build, run in turn round after round (so that a busy
/// spell of a shared machine falls on every contender alike): each one's median of `rounds`.
/// Each run must succeed.
fn interleaved_wall(rounds: usize, makes: &[&dyn Fn() -> Command]) -> Vec<Duration> {
    let mut times = vec![Vec::with_capacity(rounds); makes.len()];
    for _ in 0..rounds {
        for (make, runs) in makes.iter().zip(&mut times) {
            runs.push(timed(make()).1);
        }
    }
    times
        .into_iter()
        .map(|mut runs| {
            runs.sort();
            runs[runs.len() / 2]
        })
        .collect()
}

/// The cores this process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU time of `inner` (user + system, by `/usr/bin/time`; else its wall time), and its
/// wall time.
fn timed(inner: Command) -> (Duration, Duration) {
    let time = Path::new("/usr/bin/time");
    let report = std::env::temp_dir().join(format!("neff-training-bench-{}.time", std::process::id()));
    let mut command = if time.exists() {
        let mut c = Command::new(time);
        c.args(["-f", "%U %S", "-o"]).arg(&report).arg(inner.get_program()).args(inner.get_args());
        c
    } else {
        inner
    };
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let started = Instant::now();
    let status = command.status().unwrap();
    let wall = started.elapsed();
    assert!(status.success(), "{command:?}: {status}");
    let cpu = std::fs::read_to_string(&report).ok().and_then(|text| {
        let _ = std::fs::remove_file(&report);
        let fields: Vec<f64> = text.split_whitespace().filter_map(|f| f.parse().ok()).collect();
        (fields.len() == 2).then(|| Duration::from_secs_f64(fields[0] + fields[1]))
    });
    (cpu.unwrap_or(wall), wall)
}

/// Raw zlib-rs inflate of the NEFF's gzip member (no CRC, no tar); returns the bytes inflated.
fn bare_zlib_rs(neff: &Path) -> u64 {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut file = File::open(neff).unwrap();
    let mut header = [0u8; 1024];
    file.read_exact(&mut header).unwrap();
    let data_size = u64::from_le_bytes(header[16..24].try_into().unwrap());
    let mut input = BufReader::with_capacity(READ_BUFFER, file.take(data_size));
    let mut fixed = [0u8; 10];
    input.read_exact(&mut fixed).unwrap();
    assert_eq!(&fixed[..4], &[0x1f, 0x8b, 8, 0], "a gzip member without optional fields");
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
