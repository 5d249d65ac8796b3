//! The controller's budget on real NEFFs (issue 42): the training-cache NEFFs that a firmware
//! arena of 32 KiB of records refused (DMA references waiting for `def.json`, the `neff.json`
//! I/O join, long variable names) load with a notebook on the device, and [`Loader::needs`]
//! says what each buffer took, the same figures a second load within exactly those buffers
//! then meets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use neff::archive::{Archive, OpenOptions};
use neff::error::Warning;
use neff::loader::{LoadOptions, LoadReport, Loader, Needs, NoObserver, Storage};
use neff::manifest::{Arch, STRING_SCRATCH};
use neff::sim::SimDevice;

/// The training-cache entries with a NEFF, by hash, and what each stands for.
const ENTRIES: [(&str, &str); 4] = [
    ("MODULE_14041361676943519958", "engine JSONs before def.json, 29,581 DMA references, var names of 468 bytes"),
    ("MODULE_6855667900855398127", "388 inputs and 924 outputs: the neff.json I/O join"),
    ("MODULE_10103772202104053224", "3,667 DMA references of DVE.json, var names of 385 bytes"),
    ("MODULE_10014641777187220149", "a small healthy entry"),
];

/// The firmware's record budget (`targets/qemu-m4`: `RECORD_BYTES`), which the `neff.json` I/O
/// join of 1,312 tensors sets.
const FIRMWARE_RECORDS: usize = 36 * 1024;

fn training_neff(hash: &str) -> Option<Vec<u8>> {
    common::fixture_bytes(&format!("training-cache/neuronxcc-2.14.227.0+2d4f85be/{hash}+ade7b014/model.neff"))
}

/// One load of `bytes` onto a digest-only device lending `notebook` bytes, with an arena of
/// `arena` bytes and nothing else lent: its result and what it needed.
fn load(bytes: &[u8], arena: usize, notebook: usize) -> (Result<LoadReport, neff::Error>, Needs) {
    let mut arena = vec![0u8; arena];
    let mut notes = vec![0u8; notebook];
    let mut dev: SimDevice<4096> = SimDevice::digest_only(1 << 40, Arch::Sunda).with_notebook(&mut notes);
    let mut archive =
        Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let storage = Storage { arena: &mut arena, replay: &mut [], deferred: &mut [], whole_names: &mut [] };
    let mut loader = Loader::with_storage(storage, LoadOptions::default());
    let mut report = LoadReport::default();
    let result = loader.load(&mut archive, &mut dev, &mut report, &mut NoObserver, &mut |_: &Warning| {});
    (result.map(|()| report), loader.needs())
}

#[test]
fn the_refused_real_neffs_load_in_the_firmware_arena_with_a_notebook() {
    for (hash, what) in ENTRIES {
        let Some(bytes) = training_neff(hash) else { return };
        // Measured with room to spare, then loaded again within exactly what was measured.
        let (measured, needs) = load(&bytes, 64 << 20, 64 << 20);
        let report = measured.unwrap_or_else(|e| panic!("{hash}: {e}"));
        println!("{hash} ({what}): {needs:?}, {} payloads", report.payloads);
        // The host's string scratch is larger than the firmware's (`manifest::cap`): the
        // records are what the firmware's arena must hold.
        let records = needs.arena as usize - STRING_SCRATCH;
        assert!(records <= FIRMWARE_RECORDS, "{hash}: {records} bytes of records, {needs:?}");
        let (again, needs_again) = load(&bytes, needs.arena as usize, needs.notebook as usize);
        again.unwrap_or_else(|e| panic!("{hash} within {needs:?}: {e}"));
        assert_eq!(needs_again, needs, "{hash}");
        // One byte less of arena is refused, naming the arena.
        let (short, _) = load(&bytes, needs.arena as usize - 1, needs.notebook as usize);
        let e = short.expect_err(hash);
        assert!(matches!(e.kind, neff::ErrorKind::ArenaFull { .. }), "{hash}: {e}");
    }
}
