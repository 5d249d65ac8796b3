//! Inflate throughput of the full container walker against bare miniz_oxide, same input,
//! same inflater, same 32 KiB ring.
//!
//! `cargo bench --bench inflate` times, best of N runs each, on `matmul_large.neff`:
//! * **walker**: `Archive::open`, every member's body read through `fill_buf`/`consume`,
//!   `finish` (so CRC-32 and ISIZE are verified and the padding is checked);
//! * **plain**: `miniz_oxide::inflate::core::decompress` of the same gzip member into a
//!   32 KiB wrapping buffer, no CRC, no tar;
//! * **plain + crc32**: the same plus the CRC-32 the core uses (`crc32fast`) over the output, to split the
//!   walker's overhead into checksum and tar walking;
//! * **load**: the whole single-pass load (`Loader` with the compact profile: manifests
//!   parsed, every payload streamed, digested and placed on a `SimDevice` in memory mode,
//!   chain checked), and the same onto a digest-only `SimDevice`.
//!
//! It prints MB/s of inflated bytes and the ratio walker / plain. Under `cargo test`
//! (no `--bench` argument) it runs one pass of each on `matmul_small.neff` as a smoke check.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use crc32fast::Hasher as Crc32;
use embedded_io::BufRead;
use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;
use neff::archive::{Archive, OpenOptions};
use neff::error::IgnoreWarnings;
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver};
use neff::manifest::Arch;
use neff::sim::SimDevice;

const WINDOW: usize = 32 * 1024;

/// The full walker; returns the inflated byte count.
fn walker(neff: &[u8]) -> u64 {
    let mut sink = IgnoreWarnings;
    let mut archive: Box<Archive<&[u8]>> =
        Box::new(Archive::open(neff, Some(neff.len() as u64), &OpenOptions::default(), &mut sink).unwrap());
    let mut body_bytes = 0u64;
    while let Some(mut member) = archive.next_member(&mut sink).unwrap() {
        loop {
            let n = member.fill_buf().unwrap().len();
            if n == 0 {
                break;
            }
            body_bytes += n as u64;
            member.consume(n);
        }
    }
    let finish = archive.finish(&mut sink).unwrap();
    assert!(body_bytes <= finish.inflated_bytes);
    finish.inflated_bytes
}

/// The full load onto a simulated device; returns the inflated byte count.
fn load(neff: &[u8], device_memory: Option<&mut [u8]>) -> u64 {
    let mut sink = IgnoreWarnings;
    let mut archive: Box<Archive<&[u8]>> =
        Box::new(Archive::open(neff, Some(neff.len() as u64), &OpenOptions::default(), &mut sink).unwrap());
    let mut dev: SimDevice = match device_memory {
        Some(memory) => SimDevice::new(memory, Arch::Cayman),
        None => SimDevice::digest_only(64 << 30, Arch::Cayman),
    };
    let mut arena = vec![0u8; 1 << 20];
    let mut loader = Box::new(Loader::new(&mut arena, LoadOptions::default()));
    let mut report = LoadReport::new();
    loader.load(&mut archive, &mut dev, &mut report, &mut NoObserver, &mut sink).unwrap();
    assert_eq!(report.released, 0);
    report.inflated_bytes
}

/// The gzip member's deflate data (header parsed just enough for the NKIPY files: FLG 0).
fn deflate_span(neff: &[u8]) -> &[u8] {
    let data_size = u64::from_le_bytes(neff[16..24].try_into().unwrap()) as usize;
    let gz = &neff[1024..1024 + data_size];
    assert_eq!(&gz[..4], &[0x1f, 0x8b, 8, 0], "the bench expects a gzip member with FLG 0");
    &gz[10..]
}

/// Bare inflate into a 32 KiB ring; optionally CRC-32 over the output.
fn plain(deflate: &[u8], inflater: &mut DecompressorOxide, ring: &mut [u8], with_crc: bool) -> u64 {
    inflater.init();
    let mut crc = Crc32::new();
    let (mut input, mut out_pos, mut total) = (deflate, 0usize, 0u64);
    loop {
        let (status, n_in, n_out) =
            decompress(inflater, input, ring, out_pos, inflate_flags::TINFL_FLAG_HAS_MORE_INPUT);
        if with_crc {
            crc.update(&ring[out_pos..out_pos + n_out]);
        }
        input = &input[n_in..];
        total += n_out as u64;
        out_pos = (out_pos + n_out) & (WINDOW - 1);
        match status {
            TINFLStatus::Done => break,
            TINFLStatus::HasMoreOutput | TINFLStatus::NeedsMoreInput => {}
            other => panic!("inflate failed: {other:?}"),
        }
    }
    std::hint::black_box(crc.finalize());
    total
}

/// Best time and byte count of one case.
#[derive(Clone, Copy)]
struct Best {
    time: Duration,
    bytes: u64,
}

impl Best {
    const NONE: Self = Self { time: Duration::MAX, bytes: 0 };

    fn time(&mut self, f: impl FnOnce() -> u64) {
        let start = Instant::now();
        self.bytes = std::hint::black_box(f());
        self.time = self.time.min(start.elapsed());
    }
}

fn mb_per_s(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / 1e6 / t.as_secs_f64()
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let (fixture, runs) = if benching { ("matmul_large", 30) } else { ("matmul_small", 1) };
    let Some(neff) = common::fixture_bytes(&format!("public/nkipy/{fixture}.neff")) else {
        println!("inflate bench: skipped, {fixture}.neff is not available (../shared/fixtures)");
        return;
    };
    let deflate = deflate_span(&neff);
    let mut inflater = Box::new(DecompressorOxide::new());
    let mut ring = vec![0u8; WINDOW];

    // Interleaved rounds, so the three cases see the same machine load (it is shared).
    let mut device_memory = vec![0u8; 32 << 20];
    let (mut w, mut p, mut c) = (Best::NONE, Best::NONE, Best::NONE);
    let (mut l, mut d) = (Best::NONE, Best::NONE);
    for _ in 0..runs {
        w.time(|| walker(&neff));
        p.time(|| plain(deflate, &mut inflater, &mut ring, false));
        c.time(|| plain(deflate, &mut inflater, &mut ring, true));
        l.time(|| load(&neff, Some(&mut device_memory)));
        d.time(|| load(&neff, None));
    }
    assert_eq!(l.bytes, p.bytes);
    assert_eq!(d.bytes, p.bytes);
    let (t_walker, n_walker, t_plain, n_plain, t_crc, n_crc) = (w.time, w.bytes, p.time, p.bytes, c.time, c.bytes);
    assert_eq!(n_walker, n_plain);
    assert_eq!(n_crc, n_plain);
    if !benching {
        println!(
            "inflate bench: smoke pass on {fixture} ok ({n_walker} inflated bytes); run `cargo bench --bench inflate`"
        );
        return;
    }
    println!("inflate bench: {fixture}.neff, {} compressed -> {n_plain} inflated bytes, best of {runs}", deflate.len());
    println!(
        "  plain miniz_oxide (32 KiB ring) {:>8.1} MB/s  {:>8.2} ms",
        mb_per_s(n_plain, t_plain),
        t_plain.as_secs_f64() * 1e3
    );
    println!(
        "  plain + crc32                   {:>8.1} MB/s  {:>8.2} ms",
        mb_per_s(n_crc, t_crc),
        t_crc.as_secs_f64() * 1e3
    );
    println!(
        "  walker (open, bodies, finish)   {:>8.1} MB/s  {:>8.2} ms",
        mb_per_s(n_walker, t_walker),
        t_walker.as_secs_f64() * 1e3
    );
    println!(
        "  ratio walker / plain            {:>8.3} (throughput {:.3})",
        t_walker.as_secs_f64() / t_plain.as_secs_f64(),
        t_plain.as_secs_f64() / t_walker.as_secs_f64()
    );
    println!("  ratio (plain + crc32) / plain   {:>8.3}", t_crc.as_secs_f64() / t_plain.as_secs_f64());
    println!(
        "  full load (memory SimDevice)    {:>8.1} MB/s  {:>8.2} ms",
        mb_per_s(l.bytes, l.time),
        l.time.as_secs_f64() * 1e3
    );
    println!(
        "  full load (digest-only device)  {:>8.1} MB/s  {:>8.2} ms",
        mb_per_s(d.bytes, d.time),
        d.time.as_secs_f64() * 1e3
    );
    println!("  ratio load / plain              {:>8.3}", l.time.as_secs_f64() / t_plain.as_secs_f64());
    println!("  ratio digest-only load / plain  {:>8.3}", d.time.as_secs_f64() / t_plain.as_secs_f64());
}
