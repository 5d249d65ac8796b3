//! A corpus of malformed NEFFs, generated from the real small NEFF: damaged manifests, damaged
//! tar headers, damaged payloads. Every one must end in `Ok` or a typed error, never a panic,
//! and a failed load must leave nothing allocated on the device.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::result_large_err,
    missing_docs
)]

mod common;

use std::io::Write;

use common::neff::{members, npy_data, pack};
use neff::archive::{Archive, OpenOptions};
use neff::error::{ErrorKind, Warning};
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver};
use neff::manifest::Arch;
use neff::sim::digest64;
use neff::sim::SimDevice;

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Loads `bytes`; returns `(member, digest)` of every placed payload, or the error kind.
fn load_placed(bytes: &[u8]) -> Result<Vec<(String, u64)>, ErrorKind> {
    let mut memory = vec![0u8; 8 << 20];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let mut sink = |_: &Warning| {};
    let (result, report) =
        match Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink) {
            Ok(mut archive) => common::recorder::run(
                &mut archive,
                Some(&mut dev),
                None,
                LoadOptions::default(),
                common::recorder::TEST_ARENA,
                &mut sink,
            ),
            Err(e) => (Err(e), common::recorder::Report::default()),
        };
    match result {
        Ok(()) => Ok(report
            .payloads
            .iter()
            .filter(|p| p.state == neff::loader::PayloadState::Placed)
            .map(|p| (p.member.clone(), p.digest))
            .collect()),
        Err(e) => {
            assert_eq!(dev.live_regions().count(), 0, "a failed load left regions behind: {e}");
            Err(e.kind)
        }
    }
}

/// Loads `bytes`; returns the error kind (None on success). Panics only if the loader did.
fn load(bytes: &[u8]) -> Option<ErrorKind> {
    let mut memory = vec![0u8; 8 << 20];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let mut report = LoadReport::new();
    let mut arena = vec![0u8; 1 << 20];
    let mut sink = |_: &Warning| {};
    let result = Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).and_then(
        |mut archive| {
            let mut loader = Box::new(Loader::new(&mut arena, LoadOptions::default()));
            loader.load(&mut archive, &mut dev, &mut report, &mut NoObserver, &mut sink)
        },
    );
    match result {
        Ok(()) => None,
        Err(e) => {
            assert_eq!(dev.live_regions().count(), 0, "a failed load left regions behind: {e}");
            // Every error renders (the CLI prints it) without panicking.
            assert!(!e.to_string().is_empty());
            Some(e.kind)
        }
    }
}

/// Applies one random damage to `body`: flip a byte, cut it, or splice in garbage.
fn damage(body: &mut Vec<u8>, rng: &mut Rng) {
    if body.is_empty() {
        body.push(b'{');
        return;
    }
    match rng.below(4) {
        0 => {
            let i = rng.below(body.len());
            body[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(body.len());
            body[i] = b"{}[]\",:0-e.\\ntu\x00\xff"[rng.below(16)];
        }
        2 => body.truncate(rng.below(body.len())),
        _ => {
            let i = rng.below(body.len());
            let junk: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            body.splice(i..i, junk);
        }
    }
}

#[test]
fn damaged_manifests_give_errors_not_panics() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let original = members(&bytes);
    let manifests: Vec<usize> =
        original.iter().enumerate().filter(|(_, (n, _))| n.ends_with(".json")).map(|(i, _)| i).collect();
    let mut rng = Rng(0x5eed_0001);
    let (mut failed, mut total) = (0, 0);
    for _ in 0..400 {
        let mut list = original.clone();
        let target = manifests[rng.below(manifests.len())];
        damage(&mut list[target].1, &mut rng);
        total += 1;
        if load(&pack(&bytes, &list)).is_some() {
            failed += 1;
        }
    }
    // Most damage is caught; some lands in values nobody reads (e.g. tensor_map.json).
    assert!(failed > total / 2, "{failed} of {total} damaged NEFFs were refused");
}

#[test]
fn damaged_payloads_and_npy_headers_give_errors_not_panics() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let original = members(&bytes);
    let npy = original.iter().position(|(n, _)| n.ends_with(".npy")).unwrap();
    let mut rng = Rng(0x5eed_0002);
    let mut refused = 0;
    for _ in 0..150 {
        let mut list = original.clone();
        // Damage inside the .npy header (its first 128 bytes) or cut the array data.
        let body = &mut list[npy].1;
        if rng.below(2) == 0 {
            let i = rng.below(128);
            body[i] ^= 1 << rng.below(8);
        } else {
            body.truncate(128 + rng.below(body.len() - 128));
        }
        if load(&pack(&bytes, &list)).is_some() {
            refused += 1;
        }
    }
    assert!(refused > 100, "{refused} of 150");
}

#[test]
fn damaged_tar_streams_give_errors_not_panics() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    // The inflated tar, damaged at header-heavy offsets, then gzip'd again with a fresh header.
    let mut tar_bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[1024..]), &mut tar_bytes).unwrap();
    let mut rng = Rng(0x5eed_0003);
    let mut refused = 0;
    for round in 0..200 {
        let mut tar = tar_bytes.clone();
        // Half the damage goes into tar header blocks (the first 512 bytes of some block).
        let block = rng.below(tar.len() / 512);
        let at = if round % 2 == 0 { block * 512 + rng.below(512) } else { rng.below(tar.len()) };
        tar[at] ^= 1 << rng.below(8);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        let payload = gz.finish().unwrap();
        let mut neff = bytes[..1024].to_vec();
        neff[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        neff.extend_from_slice(&payload);
        match load_placed(&neff) {
            Err(_) => refused += 1,
            Ok(placed) => {
                // What loads must be what an independent reader (the `tar` crate) finds in the
                // damaged tar: a flip in a field nobody reads changes nothing, a flip in a
                // payload changes that payload's digest on both sides alike.
                let Some(theirs) = independent_members(&tar) else { continue };
                for (member, digest) in placed {
                    let (_, body) = theirs
                        .iter()
                        .find(|(n, _)| *n == member)
                        .unwrap_or_else(|| panic!("round {round}: placed {member}, which the tar crate does not see"));
                    let data = if member.ends_with(".npy") { npy_data(body) } else { body.as_slice() };
                    assert_eq!(digest, digest64(data), "round {round}: {member}");
                }
            }
        }
    }
    println!("{refused} of 200 damaged tar streams refused");
    assert!(refused > 0);
}

/// The regular members of a tar as the `tar` crate reads them, `None` if it cannot.
fn independent_members(tar_bytes: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let mut archive = tar::Archive::new(tar_bytes);
    let mut out = Vec::new();
    for entry in archive.entries().ok()? {
        let mut entry = entry.ok()?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().ok()?.to_string_lossy().trim_start_matches("./").to_owned();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut body).ok()?;
        out.push((name, body));
    }
    Some(out)
}

#[test]
fn every_cut_of_the_small_neff_is_refused() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    for cut in (0..bytes.len()).step_by(997) {
        assert!(load(&bytes[..cut]).is_some(), "a NEFF cut at {cut} bytes loaded");
    }
}
