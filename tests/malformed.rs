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
use neff::archive::{Archive, OpenOptions};
use neff::error::{ErrorKind, Warning};
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver};
use neff::manifest::Arch;
use neff::sim::SimDevice;

/// Loads `bytes`; returns the error kind (None on success). Panics only if the loader did.
fn load(bytes: &[u8]) -> Option<ErrorKind> {
    let mut memory = vec![0u8; 8 << 20];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let mut report = Box::<LoadReport<4, 64, 8>>::default();
    let mut sink = |_: &Warning| {};
    let result = Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).and_then(
        |mut archive| {
            let mut loader: Box<Loader> = Box::new(Loader::new(LoadOptions::default()));
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
    let refused = corpus.iter().filter(|neff| load(neff).is_some()).count();
    assert!(refused > 50, "{refused} of {}", corpus.len());
}

#[test]
fn every_cut_of_the_small_neff_is_refused() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    for (i, cut) in corpus::cuts(&bytes).iter().enumerate() {
        assert!(load(cut).is_some(), "a NEFF cut at {} bytes loaded", i * 997);
    }
}
