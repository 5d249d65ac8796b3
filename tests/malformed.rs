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

use common::corpus;
use common::neff::npy_data;
use neff::archive::{Archive, OpenOptions};
use neff::digest::digest64;
use neff::error::{ErrorKind, Warning};
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver};
use neff::manifest::Arch;
use neff::sim::SimDevice;

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
fn damaged_manifests_give_errors_not_panics() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let corpus = corpus::damaged_manifests(&bytes);
    let failed = corpus.iter().filter(|neff| load(neff).is_some()).count();
    // Most damage is caught; some lands in values nobody reads (e.g. tensor_map.json).
    assert!(failed > corpus.len() / 2, "{failed} of {} damaged NEFFs were refused", corpus.len());
}

#[test]
fn damaged_payloads_and_npy_headers_give_errors_not_panics() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let corpus = corpus::damaged_npy_payloads(&bytes);
    let refused = corpus.iter().filter(|neff| load(neff).is_some()).count();
    assert!(refused > 100, "{refused} of {}", corpus.len());
}

#[test]
fn damaged_tar_streams_give_errors_not_panics() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let corpus = corpus::damaged_tar_streams(&bytes);
    let mut refused = 0;
    for (round, neff) in corpus.iter().enumerate() {
        match load_placed(neff) {
            Err(_) => refused += 1,
            Ok(placed) => {
                // What loads must be what an independent reader (the `tar` crate) finds in the
                // damaged tar: a flip in a field nobody reads changes nothing, a flip in a
                // payload changes that payload's digest on both sides alike.
                let mut tar = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&neff[1024..]), &mut tar).unwrap();
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
    println!("{refused} of {} damaged tar streams refused", corpus.len());
    assert!(refused > 0);
}

#[test]
fn every_cut_of_the_small_neff_is_refused() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    for (i, cut) in corpus::cuts(&bytes).iter().enumerate() {
        assert!(load(cut).is_some(), "a NEFF cut at {} bytes loaded", i * 997);
    }
}
