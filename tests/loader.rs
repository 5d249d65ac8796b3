//! The single-pass loader on the real NEFFs and on NEFFs rebuilt from them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::result_large_err,
    missing_docs
)]

mod common;

use common::neff::{members, npy_data, pack};
use common::recorder::{run, Report, TEST_ARENA};
use neff::archive::{Archive, OpenOptions};
use neff::digest::digest64;
use neff::error::{ErrorKind, OffsetBase, Stage, Warning, WarningKind};
use neff::loader::{ChainError, ChainWarning, LoadOptions, LoadReport, Loader, NoObserver, PayloadState, Storage};
use neff::manifest::{Arch, JsonType, ManifestError, UsageClass};
use neff::sim::SimDevice;

struct Outcome {
    result: Result<(), neff::Error>,
    report: Box<Report>,
    warnings: Vec<Warning>,
    /// (member, usage, len, device digest) of every live region, sorted.
    image: Vec<(String, UsageClass, u64, u64)>,
    live_regions: usize,
    /// Payloads whose device region sits on another core than the report says.
    core_mismatches: Vec<String>,
    /// Live regions that were adopted from a staging region.
    adopted: usize,
}

fn load_with(bytes: &[u8], arch: Arch, options: LoadOptions, device_mem: usize) -> Outcome {
    load_noted(bytes, arch, options, device_mem, 0).0
}

/// A load onto a device that lends the loader a notebook of `notebook` bytes; the outcome and
/// the notebook bytes written.
fn load_noted(bytes: &[u8], arch: Arch, options: LoadOptions, device_mem: usize, notebook: usize) -> (Outcome, usize) {
    let mut memory = vec![0u8; device_mem];
    let mut notes = vec![0u8; notebook];
    let mut dev: SimDevice = SimDevice::new(&mut memory, arch).with_notebook(&mut notes);
    let mut warnings = Vec::new();
    let mut sink = |w: &Warning| warnings.push(*w);
    let (result, report) =
        match Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink) {
            Ok(mut archive) => run(&mut archive, Some(&mut dev), None, options, TEST_ARENA, &mut sink),
            Err(e) => (Err(e), Report::default()),
        };
    let report = Box::new(report);
    let mut image: Vec<_> = report
        .payloads
        .iter()
        .filter_map(|p| p.region.map(|r| (p.member.to_string(), p.usage, p.len, dev.digest(r).expect("digest"))))
        .collect();
    image.sort_by_key(|(m, u, l, d)| (m.clone(), u.value(), *l, *d));
    let live_regions = dev.live_regions().count();
    let core_mismatches = report
        .payloads
        .iter()
        .filter_map(|p| {
            let on_device = dev.region(p.region?)?.core;
            (p.core != Some(on_device)).then(|| p.member.to_string())
        })
        .collect();
    let adopted = dev.live_regions().filter(|r| r.adopted_from.is_some()).count();
    let noted = dev.noted_bytes();
    (Outcome { result, report, warnings, image, live_regions, core_mismatches, adopted }, noted)
}

fn load(bytes: &[u8]) -> Outcome {
    load_with(bytes, Arch::Cayman, LoadOptions::default(), 32 << 20)
}

#[test]
fn real_neffs_land_byte_exact_on_the_device() {
    for (name, bytes) in common::real_neffs() {
        let out = load(&bytes);
        out.result.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        let extracted = members(&bytes);
        let mut placed = 0;
        for p in out.report.payloads.iter().filter(|p| p.state == PayloadState::Placed) {
            let (_, body) = extracted.iter().find(|(n, _)| n.as_str() == p.member.as_str()).expect("member extracted");
            let data = if p.member.ends_with(".npy") { npy_data(body) } else { body.as_slice() };
            assert_eq!(p.len, data.len() as u64, "{name}: {}", p.member);
            assert_eq!(p.digest, digest64(data), "{name}: report digest of {}", p.member);
            let (_, _, _, device) = out.image.iter().find(|(m, ..)| m.as_str() == p.member.as_str()).expect("region");
            assert_eq!(*device, digest64(data), "{name}: device digest of {}", p.member);
            placed += 1;
        }
        // Per subgraph: 5 instruction streams, 4 DVE tables, 2 activation tables, 1 weight.
        assert_eq!(placed, 24, "{name}");
        assert_eq!(out.report.released, 0, "{name}");
        assert_eq!(out.report.subgraphs.len(), 2);
        for sg in &out.report.subgraphs {
            let weight = sg.bytes_by_usage[neff::hal::usage_index(UsageClass::Weight)];
            assert_eq!(weight, 32768, "{name}: {} weight bytes", sg.name);
            assert_eq!(sg.allocations, 12);
        }
        assert_eq!(out.report.target.as_str(), "cayman");
        assert_eq!(out.report.io.inputs.len(), 2);
        // libnrt's debug line for the KELF node (seed §3), through the observer.
        assert_eq!(out.report.debug, ["Found KELF node: kelf-0.json"], "{name}");
        assert_eq!(out.live_regions, 24);
        // The real NEFFs warn about nothing but their unverifiable hash (not requested here).
        assert!(out.warnings.is_empty(), "{name}: {:?}", out.warnings);
    }
}

#[test]
fn instruction_streams_get_their_engine_class() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let out = load(&bytes);
    out.result.unwrap();
    let usage = |m: &str| out.report.payloads.iter().find(|p| p.member.as_str() == m).unwrap().usage;
    assert_eq!(usage("sg00/PE.bin"), UsageClass::InstrPe);
    assert_eq!(usage("sg01/Activation.bin"), UsageClass::InstrAct);
    assert_eq!(usage("sg00/Pool.bin"), UsageClass::InstrPool);
    assert_eq!(usage("sg00/DVE.bin"), UsageClass::InstrDve);
    assert_eq!(usage("sg00/SP.bin"), UsageClass::InstrSp);
    assert_eq!(usage("sg00/exp_and_others_bkt.bin"), UsageClass::ActTable);
    assert_eq!(usage("sg00/value_sg0000_identity_82_CRSM.npy"), UsageClass::Weight);
    let core = |m: &str| out.report.payloads.iter().find(|p| p.member.as_str() == m).unwrap().core;
    assert_eq!(core("sg00/PE.bin"), Some(0));
    assert_eq!(core("sg01/PE.bin"), Some(1));
}

#[test]
fn member_order_does_not_change_the_device_image() {
    for (name, bytes) in common::real_neffs() {
        let original = load(&bytes);
        original.result.as_ref().unwrap();
        let mut list = members(&bytes);
        list.reverse();
        let reversed = load(&pack(&bytes, &list));
        reversed.result.as_ref().unwrap_or_else(|e| panic!("{name} reversed: {e}"));
        let is_manifest = |n: &str| n.ends_with(".json");
        list.sort_by_key(|(n, _)| (!is_manifest(n), n.clone()));
        let manifests_first = load(&pack(&bytes, &list));
        manifests_first.result.as_ref().unwrap_or_else(|e| panic!("{name} manifests first: {e}"));
        assert_eq!(original.image, reversed.image, "{name}: reversed order");
        assert_eq!(original.image, manifests_first.image, "{name}: manifests-first order");
        for (a, b) in original.report.subgraphs.iter().zip(&manifests_first.report.subgraphs) {
            assert_eq!(a.bytes_by_usage, b.bytes_by_usage);
        }
        // In manifests-first order every payload's role is known on arrival: nothing is staged,
        // so nothing is adopted; in tar order the instruction streams (before their engine
        // JSONs) are staged and adopted.
        assert_eq!(manifests_first.adopted, 0, "{name}");
        assert!(original.adopted > 0, "{name}");
        for out in [&original, &reversed, &manifests_first] {
            assert!(out.core_mismatches.is_empty(), "{name}: {:?}", out.core_mismatches);
        }
    }
}

#[test]
fn digest_only_device_loads_the_large_neff() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_large.neff") else { return };
    let mut dev: SimDevice = SimDevice::digest_only(64 << 30, Arch::Cayman);
    let mut archive =
        Archive::<&[u8]>::open(&bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let (result, report) =
        run(&mut archive, Some(&mut dev), None, LoadOptions::default(), TEST_ARENA, &mut |_: &Warning| {});
    result.unwrap();
    let extracted = members(&bytes);
    for p in report.payloads.iter() {
        let (_, body) = extracted.iter().find(|(n, _)| n.as_str() == p.member.as_str()).unwrap();
        let data = if p.member.ends_with(".npy") { npy_data(body) } else { body.as_slice() };
        assert_eq!(dev.digest(p.region.unwrap()), Some(digest64(data)), "{}", p.member);
        // The report's digest is XXH3-64 as the `xxhash-rust` crate computes it in one shot
        // (and `xxhsum -H3` prints for an unpacked `.bin` member).
        assert_eq!(p.digest, xxhash_rust::xxh3::xxh3_64(data), "{}", p.member);
    }
    assert!(
        report.payloads.iter().any(|p| p.member.ends_with(".bin") && p.len > 1 << 20),
        "a large member is among them"
    );
    assert_eq!(
        report.bytes_placed(),
        2 * (1_361_216 + 439_872 + 28_736 + 70_464 + 6_592 + 4096 * 2 + 16384 + 1024 + 30112 + 2848 + 32768)
    );
}

/// The real small NEFF with `edit` applied to its member list.
fn variant(edit: impl FnOnce(&mut Vec<(String, Vec<u8>)>)) -> Option<Vec<u8>> {
    let bytes = common::fixture_bytes("public/nkipy/matmul_small.neff")?;
    let mut list = members(&bytes);
    edit(&mut list);
    Some(pack(&bytes, &list))
}

fn replace(list: &mut [(String, Vec<u8>)], member: &str, from: &str, to: &str) {
    let (_, body) = list.iter_mut().find(|(n, _)| n == member).unwrap();
    let text = String::from_utf8(body.clone()).unwrap();
    assert!(text.contains(from), "{member} has no {from}");
    *body = text.replacen(from, to, 1).into_bytes();
}

fn chain_error(out: &Outcome) -> (ChainError, neff::Error) {
    let e = out.result.unwrap_err();
    match e.kind {
        ErrorKind::Chain(c) => (c, e),
        other => panic!("expected a chain error, got {other:?}: {e}"),
    }
}

#[test]
fn a_missing_instruction_stream_is_named() {
    let Some(bytes) = variant(|l| l.retain(|(n, _)| n != "sg01/Pool.bin")) else { return };
    let out = load(&bytes);
    let (c, e) = chain_error(&out);
    assert!(matches!(c, ChainError::MemberMissing { member } if member.as_str() == "sg01/Pool.bin"));
    // A payload is found missing when the chain is bound: the chain stage, in the manifest
    // that names it.
    assert_eq!(
        (e.stage, e.member.as_str(), e.key_path.as_str(), e.offset),
        (Stage::Chain, "sg01/Pool.json", "instr", 0)
    );
    assert_eq!(e.to_string(), "sg01/Pool.json: instr: member sg01/Pool.bin is missing from the archive");
    assert_eq!(out.live_regions, 0, "a failed load releases what it allocated");
}

#[test]
fn a_missing_engine_json_def_or_kelf_is_named() {
    // (dropped member, the manifest naming it, the key that names it, the stage): a missing
    // manifest is an error of the manifest that names it, a missing payload one of the chain.
    let cases: [(&str, &str, &str, Stage); 5] = [
        ("sg00/DVE.json", "sg00/def.json", "dve", Stage::DefJson),
        // A key path that crosses an array gives the entry's index; a var is named on the host.
        ("sg01/def.json", "kelf-0.json", "graphs[1].definition", Stage::Kelf),
        ("sg00/exp_and_others.json", "sg00/Activation.json", "activation_function_sets[0]", Stage::Engine),
        ("sg00/value_sg0000_identity_82_CRSM.npy", "sg00/def.json", "var.file_name", Stage::Chain),
        ("kelf-0.json", "neff.json", "nodes[2].attrs.kelf", Stage::NeffJson),
    ];
    for (drop, by, key, stage) in cases {
        let Some(bytes) = variant(|l| l.retain(|(n, _)| n != drop)) else { return };
        let out = load(&bytes);
        let (c, e) = chain_error(&out);
        assert!(matches!(c, ChainError::MemberMissing { member } if member.as_str() == drop), "{drop}: {c:?}");
        assert_eq!((e.stage, e.member.as_str(), e.key_path.as_str(), e.offset), (stage, by, key, 0), "{drop}");
        assert_eq!(out.live_regions, 0);
    }
}

#[test]
fn without_neff_json_the_kelf_is_found_by_name() {
    let Some(bytes) = variant(|l| l.retain(|(n, _)| n != "neff.json")) else { return };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    assert!(out.warnings.iter().any(|w| w.kind == WarningKind::Chain(ChainWarning::KelfFallback)));
    assert!(out.report.io.inputs.is_empty());
    let Some(bytes) = variant(|l| l.retain(|(n, _)| n != "neff.json" && n != "kelf-0.json")) else { return };
    let (e, err) = chain_error(&load(&bytes));
    // The runtime's message names the NEFF by its header's name field.
    let name = common::fixture_bytes("public/nkipy/matmul_small.neff").unwrap()[neff::header::field::NAME]
        .split(|&b| b == 0)
        .next()
        .map(|n| String::from_utf8(n.to_vec()).unwrap())
        .unwrap();
    assert_eq!(name, "file.neff");
    assert!(matches!(e, ChainError::NeffJsonMissing { neff } if neff.as_str() == name), "{e:?}");
    assert_eq!((err.stage, err.member.as_str(), err.offset), (Stage::Chain, "", 0));
    assert!(err.to_string().contains(", neff.json is missing"), "{err}");
    assert!(err.kind.to_string().starts_with("Invalid NN: "), "{}", err.kind);
    // The legacy name works too.
    let Some(bytes) = variant(|l| {
        l.retain(|(n, _)| n != "neff.json");
        l.iter_mut().find(|(n, _)| n == "kelf-0.json").unwrap().0 = "kelf-a.json".into();
    }) else {
        return;
    };
    load(&bytes).result.unwrap();
}

#[test]
fn the_target_gate_follows_allow_legacy() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    // A cayman NEFF on a sunda device: refused, with or without allow_legacy (older device).
    for allow_legacy in [false, true] {
        let out = load_with(&bytes, Arch::Sunda, LoadOptions { allow_legacy, ..LoadOptions::default() }, 32 << 20);
        let e = out.result.unwrap_err();
        assert_eq!(
            (e.stage, e.member.as_str(), e.key_path.as_str(), e.offset),
            (Stage::Kelf, "kelf-0.json", "target", 0)
        );
        assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::ArchMismatch { neff: 3, device: 2 }));
        assert!(
            e.to_string().contains(
                "Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v3, instance arch: v2"
            ),
            "{e}"
        );
    }
    // On a newer (mariana) device: refused unless allow_legacy.
    let out = load_with(&bytes, Arch::Mariana, LoadOptions { allow_legacy: false, ..LoadOptions::default() }, 32 << 20);
    let e = out.result.unwrap_err();
    assert_eq!((e.stage, e.member.as_str(), e.key_path.as_str()), (Stage::Kelf, "kelf-0.json", "target"));
    assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::ArchMismatch { neff: 3, device: 4 }));
    load_with(&bytes, Arch::Mariana, LoadOptions { allow_legacy: true, ..LoadOptions::default() }, 32 << 20)
        .result
        .unwrap();
}

#[test]
fn cayman_carveout_rules_apply_on_a_cayman_device() {
    let Some(bytes) = variant(|l| replace(l, "sg00/def.json", "\"offset\": 229368", "\"offset\": 229360")) else {
        return;
    };
    let e = load(&bytes).result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::CarveoutOffset(229360)));
    assert_eq!(e.member.as_str(), "sg00/def.json");
    assert!(
        e.to_string().contains("Event Accel carveout SB partition offset must start at 0x37ff8. Got 0x37ff0"),
        "{e}"
    );
    assert_eq!(e.key_path.as_str(), "runtime_statebuffer_reservation[0]");
    // §15.19: the rules follow the KELF target (cayman), not the device: the same file is
    // refused on a mariana device with allow_legacy too.
    let e = load_with(&bytes, Arch::Mariana, LoadOptions { allow_legacy: true, ..LoadOptions::default() }, 32 << 20)
        .result
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::CarveoutOffset(229360)));
}

#[test]
fn arch_rules_follow_the_kelf_target_not_the_device() {
    // A sunda NEFF with the same bad carveout, on a cayman device with allow_legacy: no cayman
    // rule applies (the target is sunda), and the legacy override lets it load.
    let Some(bytes) = variant(|l| {
        replace(l, "sg00/def.json", "\"offset\": 229368", "\"offset\": 229360");
        replace(l, "kelf-0.json", "\"cayman\"", "\"sunda\"");
    }) else {
        return;
    };
    load_with(&bytes, Arch::Cayman, LoadOptions { allow_legacy: true, ..LoadOptions::default() }, 32 << 20)
        .result
        .unwrap();
    // A cayman NEFF checked without a device gets the cayman rules (the target says cayman).
    let Some(cayman) = variant(|l| replace(l, "sg00/def.json", "\"offset\": 229368", "\"offset\": 229360")) else {
        return;
    };
    let mut archive =
        Archive::<&[u8]>::open(&cayman[..], None, &OpenOptions::default(), &mut |_: &Warning| {}).unwrap();
    let none: Option<&mut SimDevice> = None;
    let (r, _) = run(&mut archive, none, Some(None), LoadOptions::default(), TEST_ARENA, &mut |_: &Warning| {});
    assert_eq!(r.unwrap_err().kind, ErrorKind::Manifest(ManifestError::CarveoutOffset(229360)));
    // `*` takes the device's arch: on cayman the rules apply, with no device none does.
    let Some(any) = variant(|l| {
        replace(l, "sg00/def.json", "\"offset\": 229368", "\"offset\": 229360");
        replace(l, "kelf-0.json", "\"cayman\"", "\"*\"");
    }) else {
        return;
    };
    let e = load_with(&any, Arch::Cayman, LoadOptions::default(), 32 << 20).result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::CarveoutOffset(229360)));
    let mut archive = Archive::<&[u8]>::open(&any[..], None, &OpenOptions::default(), &mut |_: &Warning| {}).unwrap();
    let none: Option<&mut SimDevice> = None;
    run(&mut archive, none, Some(None), LoadOptions::default(), TEST_ARENA, &mut |_: &Warning| {}).0.unwrap();
}

#[test]
fn a_weight_whose_shape_disagrees_with_its_var_is_refused() {
    let Some(bytes) = variant(|l| {
        replace(
            l,
            "sg00/def.json",
            "\"size\": 32768,\n            \"type\": \"file\"",
            "\"size\": 32770,\n            \"type\": \"file\"",
        )
    }) else {
        return;
    };
    let (c, e) = chain_error(&load(&bytes));
    assert_eq!(c, ChainError::VarSizeMismatch { declared: 32770, actual: 32768 });
    assert_eq!(
        (e.stage, e.member.as_str(), e.key_path.as_str(), e.offset),
        (Stage::Chain, "sg00/value_sg0000_identity_82_CRSM.npy", "", 0)
    );
}

#[test]
fn odd_instruction_sizes_and_graph_counts_warn() {
    let Some(bytes) = variant(|l| {
        l.iter_mut().find(|(n, _)| n == "sg00/SP.bin").unwrap().1.extend_from_slice(&[0; 8]);
    }) else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    let w = out
        .warnings
        .iter()
        .find(|w| matches!(w.kind, WarningKind::Chain(ChainWarning::InstrNotMultipleOf64 { size: 200 })))
        .unwrap();
    assert_eq!(w.member.as_str(), "sg00/SP.bin");
    assert_eq!(out.report.warnings, 1);

    let Some(mut bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    bytes[552] = 1; // lnc_size 1 with two graphs
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    assert!(out
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::Chain(ChainWarning::GraphCount { graphs: 2, lnc_size: 1 })));
}

#[test]
fn unreferenced_payloads_are_released_and_duplicates_replace() {
    let Some(bytes) = variant(|l| {
        l.insert(3, ("sg00/stray.bin".into(), vec![7; 100]));
        let pe = l.iter().find(|(n, _)| n == "sg00/PE.bin").unwrap().clone();
        l.insert(0, (pe.0, vec![1; 64]));
    }) else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    assert_eq!(out.report.released, 1);
    let stray = out.report.payloads.iter().find(|p| p.member.as_str() == "sg00/stray.bin").unwrap();
    assert_eq!(stray.state, PayloadState::Released);
    assert!(
        out.warnings.iter().any(|w| w.kind == WarningKind::Chain(ChainWarning::DuplicateMember)
            && w.member.as_str() == "sg00/PE.bin"
            && w.offset_base == OffsetBase::None),
        "a duplicate is about the member as a whole, at no byte of it"
    );
    let pe = out.report.payloads.iter().filter(|p| p.member.as_str() == "sg00/PE.bin").collect::<Vec<_>>();
    assert_eq!(pe.len(), 1);
    assert_eq!(pe[0].len, 768, "the later copy wins");
    assert_eq!(out.live_regions, 24);
}

/// A member that waits in the replay store (read before anything names it) and comes again:
/// the later copy wins. Here a KELF in a directory (guessed an engine JSON until `neff.json`
/// names it) comes 40 times before `neff.json`, and the store holds 4 copies: the copy that
/// wins is read again as the chain's KELF. (The loader also drops the earlier copies' entries,
/// which otherwise were asked after at every manifest that followed: `cargo bench -p neff-cli
/// --bench load` shows that in time, 21.7 s before on its 320-copy NEFF.)
#[test]
fn a_waiting_member_that_comes_again_leaves_the_replay_store() {
    const KELF: &str = "k/kelf-0.json";
    let Some(bytes) = variant(|l| {
        replace(l, "neff.json", "\"kelf-0.json\"", &format!("\"{KELF}\""));
        let (_, body) = l.iter().find(|(n, _)| n == "kelf-0.json").unwrap().clone();
        l.retain(|(n, _)| n != "kelf-0.json");
        for _ in 0..40 {
            l.insert(0, (KELF.to_string(), body.clone()));
        }
    }) else {
        return;
    };
    let kelf_len = members(&bytes).iter().find(|(n, _)| n == KELF).unwrap().1.len();
    let mut arena = vec![0u8; TEST_ARENA];
    let mut replay = vec![0u8; 4 * kelf_len];
    let mut deferred = vec![None; 64];
    let storage = Storage { arena: &mut arena, replay: &mut replay, deferred: &mut deferred, whole_names: &mut [] };
    let mut loader = Box::new(Loader::with_storage(storage, LoadOptions::default()));
    let mut report = LoadReport::new();
    let mut warnings = Vec::new();
    let mut sink = |w: &Warning| warnings.push(*w);
    let mut archive =
        Archive::<&[u8]>::open(&bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).unwrap();
    let result = loader.check(&mut archive, Some(Arch::Cayman), &mut report, &mut NoObserver, &mut sink);
    result.unwrap_or_else(|e| panic!("the copy that wins must find room in the store: {e}"));
    assert_eq!(report.subgraphs, 2, "the KELF in its directory was read again as the chain's KELF");
    // Each later copy is a duplicate twice: of the payload staged and of the document read.
    let copies = warnings.iter().filter(|w| w.kind == WarningKind::Chain(ChainWarning::DuplicateMember)).count();
    assert_eq!(copies, 2 * 39);
    assert!(warnings.iter().all(|w| w.member.as_str() == KELF), "{warnings:?}");
}

/// Members that wait in the replay store together leave it in one pass: with the KELF (moved
/// into a directory, guessed an engine JSON) and `neff.json` last, every manifest waits. Once
/// the KELF is read again as one, it names both definitions: `sg00/def.json` settles as read
/// and leaves a gap in the store, then `sg01/d.json` (guessed an engine JSON) is read again as
/// a definition from where it waits, the gap closed only once the pass is over. The load is
/// the original's.
#[test]
fn members_settled_together_are_read_again_from_where_they_wait() {
    loads_as_the_original(kelf_and_definition_moved);
}

/// The edit of [`members_settled_together_are_read_again_from_where_they_wait`]: the KELF as
/// `k/kelf-0.json` and `sg01/def.json` as `sg01/d.json` (each guessed an engine JSON), the KELF
/// and `neff.json` last.
fn kelf_and_definition_moved(l: &mut Vec<(String, Vec<u8>)>) {
    const KELF: &str = "k/kelf-0.json";
    replace(l, "neff.json", "\"kelf-0.json\"", &format!("\"{KELF}\""));
    replace(l, "kelf-0.json", "\"sg01/def.json\"", "\"sg01/d.json\"");
    l.iter_mut().filter(|(n, _)| n == "sg01/def.json").for_each(|(n, _)| *n = "sg01/d.json".into());
    let kelf = l.iter().position(|(n, _)| n == "kelf-0.json").unwrap();
    let (_, body) = l.remove(kelf);
    let neff = l.iter().position(|(n, _)| n == "neff.json").unwrap();
    let neff = l.remove(neff);
    // Behind the engine JSONs and def.json, which settle before it in the pass.
    l.push((KELF.to_string(), body));
    l.push(neff);
}

/// A check of `bytes` lent `replay` bytes of replay store (and room enough otherwise): its
/// result and what it needed.
fn check_lent_replay(bytes: &[u8], replay: usize) -> (Result<(), neff::Error>, neff::loader::Needs) {
    let mut sink = |_: &Warning| {};
    let mut archive =
        Archive::<&[u8]>::open(bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).unwrap();
    let (mut arena, mut store, mut deferred) = (vec![0u8; TEST_ARENA], vec![0u8; replay], vec![None; 64]);
    let storage = Storage { arena: &mut arena, replay: &mut store, deferred: &mut deferred, whole_names: &mut [] };
    let mut loader = Box::new(Loader::with_storage(storage, LoadOptions::default()));
    let result = loader.check(&mut archive, Some(Arch::Cayman), &mut LoadReport::new(), &mut NoObserver, &mut sink);
    (result, loader.needs())
}

/// `Needs::replay_missed` counts the members the chain names as another kind that a load
/// could not read again for want of a replay store: 0 when the store changed nothing (the
/// original, whose members are all read as what the chain names them), and not 0 for the
/// variant of `members_settled_together_are_read_again_from_where_they_wait` when none was
/// lent, where that load is refused and one with a store is not: the KELF, guessed an engine
/// JSON (`sg01/d.json`, named only by the KELF, is not named as anything by a load that never
/// read the KELF as one). A host lends none first and loads again only then.
#[test]
fn a_load_without_a_replay_store_counts_the_members_it_could_not_read_again() {
    let Some(original) = variant(|_| {}) else { return };
    let Some(moved) = variant(kelf_and_definition_moved) else { return };
    for bytes in [&original, &moved] {
        let (with_store, needs) = check_lent_replay(bytes, 4 << 20);
        with_store.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(needs.replay_missed, Some(0), "a store that held every member misses none");
    }
    let (result, needs) = check_lent_replay(&original, 0);
    result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((needs.replay, needs.replay_missed), (0, Some(0)), "the original needs no second reading");
    let (result, needs) = check_lent_replay(&moved, 0);
    let e = result.expect_err("the KELF read as an engine JSON and never read again");
    assert!(matches!(e.kind, ErrorKind::Chain(ChainError::ReadAsOther { .. })), "{e}");
    assert_eq!(needs.replay_missed, Some(1), "{needs:?}");
    // A store too small for the KELF: the same.
    let (result, needs) = check_lent_replay(&moved, 16);
    assert!(result.is_err());
    assert_eq!(needs.replay_missed, Some(1), "{needs:?}");
}

/// Loads the variant `edit` makes and the original: both succeed, with two subgraphs, and
/// every payload lands as in the original. Both outcomes, for more checks (`None` without
/// `../shared`).
fn loads_as_the_original(edit: impl FnOnce(&mut Vec<(String, Vec<u8>)>)) -> Option<(Outcome, Outcome)> {
    let original = variant(|_| {})?;
    let bytes = variant(edit)?;
    let (out, original) = (load(&bytes), load(&original));
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    original.result.as_ref().unwrap();
    assert_eq!(out.report.summary.subgraphs, 2);
    assert_eq!(out.image, original.image, "every payload lands as in the original");
    Some((out, original))
}

/// What the chain names is never debug data (§15.18): a KELF named `kelf.dbg` and a
/// definition named `sg00/def.asm`, each met before the manifest naming it, open a JSON object
/// and are read both ways like any other member nothing names yet; the load is the original's.
#[test]
fn manifests_with_debug_names_are_read_when_the_chain_names_them() {
    let Some((out, original)) = loads_as_the_original(|l| {
        replace(l, "neff.json", "\"kelf-0.json\"", "\"kelf.dbg\"");
        replace(l, "kelf-0.json", "\"sg00/def.json\"", "\"sg00/def.asm\"");
        for (name, _) in l.iter_mut() {
            match name.as_str() {
                "kelf-0.json" => *name = "kelf.dbg".into(),
                "sg00/def.json" => *name = "sg00/def.asm".into(),
                _ => {}
            }
        }
    }) else {
        return;
    };
    assert_eq!(out.report.summary.manifests, original.report.summary.manifests);
}

/// A payload with a debug name that the chain names before it comes (`sg00/PE.dbg` as the PE
/// engine's instructions, after `def.json` and `PE.json`) lands as its role says; debug
/// members nothing names are still skipped unread.
#[test]
fn a_payload_with_a_debug_name_the_chain_named_first_lands() {
    let Some(original) = variant(|_| {}) else { return };
    let Some(bytes) = variant(|l| {
        replace(l, "sg00/def.json", "\"PE.bin\"", "\"PE.dbg\"");
        replace(l, "sg00/PE.json", "\"PE.bin\"", "\"PE.dbg\"");
        let at = l.iter().position(|(n, _)| n == "sg00/PE.bin").unwrap();
        let (_, body) = l.remove(at);
        let after = l.iter().position(|(n, _)| n == "sg00/def.json").unwrap();
        l.insert(after + 1, ("sg00/PE.dbg".into(), body));
    }) else {
        return;
    };
    let (out, original) = (load(&bytes), load(&original));
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let pe = out.report.payloads.iter().find(|p| p.member.as_str() == "sg00/PE.dbg").unwrap();
    let was = original.report.payloads.iter().find(|p| p.member.as_str() == "sg00/PE.bin").unwrap();
    assert_eq!((pe.usage, pe.state, pe.core, pe.len, pe.digest), (was.usage, was.state, was.core, was.len, was.digest));
    assert_eq!(pe.usage, UsageClass::InstrPe);
    // The real debug members (`sg00/debug_info_asm_PE.dbg`, ...) stay unread: no more payloads.
    assert_eq!(out.report.payloads.len(), original.report.payloads.len());
}

/// Where the loader keeps its landings (a notebook on the device, the arena, or the notebook
/// until it is full and then the arena) changes nothing of a load: the same reports, device
/// image, warnings and outcome, on the real NEFFs and on one with a duplicate and an
/// unreferenced payload (released and dropped landings); the arena saves 28 bytes a noted one.
#[test]
fn a_notebook_on_the_device_changes_nothing_but_the_arena() {
    let note = neff::hal::LANDING_NOTE;
    let mut cases: Vec<(String, Vec<u8>)> = common::real_neffs().into_iter().map(|(n, b)| (n.to_string(), b)).collect();
    let duplicates = variant(|l| {
        l.insert(3, ("sg00/stray.bin".into(), vec![7; 100]));
        let pe = l.iter().find(|(n, _)| n == "sg00/PE.bin").unwrap().clone();
        l.insert(0, (pe.0, vec![1; 64]));
    });
    cases.extend(duplicates.map(|b| ("duplicates".to_string(), b)));
    for (name, bytes) in &cases {
        let (plain, none) = load_noted(bytes, Arch::Cayman, LoadOptions::default(), 32 << 20, 0);
        plain.result.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(none, 0);
        let landings = plain.report.payloads.len();
        for slots in [3, 10_000] {
            let (noted, bytes_noted) =
                load_noted(bytes, Arch::Cayman, LoadOptions::default(), 32 << 20, slots * note + note / 2);
            noted.result.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(format!("{:?}", noted.report.payloads), format!("{:?}", plain.report.payloads), "{name}");
            assert_eq!(format!("{:?}", noted.report.subgraphs), format!("{:?}", plain.report.subgraphs), "{name}");
            assert_eq!(noted.image, plain.image, "{name}");
            assert_eq!(noted.warnings, plain.warnings, "{name}");
            assert_eq!((noted.live_regions, noted.adopted), (plain.live_regions, plain.adopted), "{name}");
            let (a, b) = (&noted.report, &plain.report);
            assert_eq!((a.released, a.placed, a.bytes_placed), (b.released, b.placed, b.bytes_placed), "{name}");
            // Every landing that went to the notebook is one fewer in the arena.
            assert!(bytes_noted >= note * slots.min(landings), "{name}: {bytes_noted} bytes noted");
            let saved = plain.report.arena_peak - noted.report.arena_peak;
            assert!(saved >= (note * slots.min(landings)) as u64 / 2, "{name}: {saved} bytes saved");
        }
    }
}

/// A member that an engine and a `file` variable both name takes the role the walk of the
/// definition meets first (its engines, then its variables): an instruction stream or a
/// DVE table named again as a weight keeps its engine's class, in either tar order, while
/// the weight no engine names keeps the variable's. A host skips the engines for a member
/// none of their names can be, which must change none of this.
#[test]
fn a_member_named_by_an_engine_and_a_variable_takes_the_engines_role() {
    let usage = |out: &Outcome, member: &str| {
        out.report.payloads.iter().find(|p| p.member.as_str() == member).map(|p| (p.usage, p.state))
    };
    let Some(original) = variant(|_| {}) else { return };
    let original = load(&original);
    original.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(usage(&original, WEIGHT), Some((UsageClass::Weight, PayloadState::Placed)));
    for (named, class) in [("PE.bin", UsageClass::InstrPe), ("default_opcode_table.bin", UsageClass::Generic)] {
        for def_first in [false, true] {
            let Some(bytes) = variant(|l| {
                replace(l, "sg00/def.json", "\"value_sg0000_identity_82_CRSM.npy\"", &format!("\"{named}\""));
                if def_first {
                    move_after(l, "sg00/def.json", "kelf-0.json");
                }
            }) else {
                return;
            };
            let out = load(&bytes);
            let member = format!("sg00/{named}");
            assert_eq!(
                usage(&out, &member).map(|(u, _)| u),
                Some(class),
                "{member} (def.json first: {def_first}): {:?}",
                out.result
            );
            // The same member in sg01, whose variable still names its own weight, is untouched.
            assert_eq!(usage(&out, &format!("sg01/{named}")), usage(&original, &format!("sg01/{named}")));
            assert_eq!(
                usage(&out, "sg01/value_sg0000_identity_82_CRSM.npy"),
                Some((UsageClass::Weight, PayloadState::Placed))
            );
        }
    }
}

const WEIGHT: &str = "sg00/value_sg0000_identity_82_CRSM.npy";

/// The payload members of a member list, in tar order.
fn payload_order(list: &[(String, Vec<u8>)]) -> Vec<String> {
    list.iter()
        .map(|(n, _)| n.clone())
        .filter(|n| !n.ends_with(".json") && !n.starts_with("debug_info") && !n.contains("/debug_info"))
        .collect()
}

#[test]
fn a_weight_lands_in_its_variable_whatever_the_member_order() {
    // Arriving after its def.json (as in the real files): placed on arrival. A second copy
    // later in the tar replaces it.
    let mut order = Vec::new();
    let Some(bytes) = variant(|l| {
        let w = l.iter().find(|(n, _)| n == WEIGHT).unwrap().clone();
        l.push(w);
        order = payload_order(l);
    }) else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    let copies: Vec<_> = out.report.payloads.iter().filter(|p| p.member == WEIGHT).collect();
    assert_eq!(copies.len(), 1, "one report for the member");
    assert_eq!((copies[0].usage, copies[0].state, copies[0].core), (UsageClass::Weight, PayloadState::Placed, Some(0)));
    assert_eq!(copies[0].seq as usize, order.len(), "the later copy's position");
    assert!(out
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::Chain(ChainWarning::DuplicateMember) && w.member.as_str() == WEIGHT));
    assert_eq!(out.live_regions, 24, "the earlier copy's region is released");
    assert_eq!(out.report.placed, 24);
    // The reports come weights last; their positions give the tar order back.
    let mut by_seq: Vec<_> = out.report.payloads.iter().map(|p| (p.seq, p.member.clone())).collect();
    by_seq.sort();
    let mut expected = order.clone();
    expected.retain(|n| n != WEIGHT);
    expected.push(WEIGHT.into());
    assert_eq!(by_seq.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>(), expected);

    // Arriving before any manifest: staged, then adopted as the weight it is.
    let Some(bytes) = variant(|l| {
        let at = l.iter().position(|(n, _)| n == WEIGHT).unwrap();
        let w = l.remove(at);
        l.insert(0, w);
    }) else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    let w = out.report.payloads.iter().find(|p| p.member == WEIGHT).unwrap();
    assert_eq!((w.usage, w.state, w.core, w.seq), (UsageClass::Weight, PayloadState::Placed, Some(0), 1));
    assert_eq!(out.live_regions, 24);
    assert!(out.core_mismatches.is_empty(), "{:?}", out.core_mismatches);
    let on_device = out.image.iter().find(|(m, ..)| m == WEIGHT).unwrap();
    assert_eq!((on_device.1, on_device.3), (UsageClass::Weight, w.digest));
}

#[test]
fn a_device_too_small_fails_with_a_hal_error_and_frees_everything() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_large.neff") else { return };
    // 2 MiB and the staged copies of the JSON members nothing has named yet (read both ways
    // until the chain says what they are).
    let device: u64 = (2 << 20) + (128 << 10);
    let out = load_with(&bytes, Arch::Cayman, LoadOptions::default(), device as usize);
    let e = out.result.unwrap_err();
    // sg00/PE.bin (1.3 MiB) fits; the second subgraph's copy does not.
    let size = |m: &str| members(&bytes).into_iter().find(|(n, _)| n == m).unwrap().1.len() as u64;
    assert!(size("sg00/PE.bin") < device && 2 * size("sg01/PE.bin") > device);
    assert_eq!((e.stage, e.member.as_str(), e.offset), (Stage::Hal, "sg01/PE.bin", 0));
    match e.kind {
        ErrorKind::Hal(neff::hal::HalError::OutOfMemory { requested, align, free, largest_free }) => {
            assert_eq!((requested, align), (size("sg01/PE.bin"), neff::loader::INSTR_ALIGN), "{e}");
            assert!(largest_free < requested && largest_free <= free && free < device, "{e}");
        }
        _ => panic!("expected OutOfMemory, got {e}"),
    }
    assert_eq!(out.live_regions, 0);
}

/// A simulated device whose notebook refuses its `fail_at`-th write (counting from 1).
struct FailingNotebook<'m> {
    dev: SimDevice<'m>,
    notes: u32,
    fail_at: u32,
}

impl neff::hal::Hal for FailingNotebook<'_> {
    type Error = neff::hal::HalError;
    fn arch(&self) -> Arch {
        self.dev.arch()
    }
    fn alloc(&mut self, req: &neff::hal::AllocRequest) -> Result<neff::hal::RegionId, Self::Error> {
        self.dev.alloc(req)
    }
    fn write(&mut self, region: neff::hal::RegionId, offset: u64, bytes: &[u8]) -> Result<(), Self::Error> {
        self.dev.write(region, offset, bytes)
    }
    fn adopt(
        &mut self,
        staged: neff::hal::RegionId,
        req: &neff::hal::AllocRequest,
    ) -> Result<neff::hal::RegionId, Self::Error> {
        self.dev.adopt(staged, req)
    }
    fn release(&mut self, region: neff::hal::RegionId) -> Result<(), Self::Error> {
        self.dev.release(region)
    }
    fn address(&self, region: neff::hal::RegionId) -> Result<u64, Self::Error> {
        self.dev.address(region)
    }
    fn notebook_len(&self) -> u64 {
        self.dev.notebook_len()
    }
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), Self::Error> {
        self.notes += 1;
        if self.notes == self.fail_at {
            return Err(neff::hal::HalError::OutOfBounds {
                region: neff::hal::RegionId(0),
                offset: at,
                len: 0,
                size: 0,
            });
        }
        self.dev.note(at, bytes)
    }
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), Self::Error> {
        self.dev.recall(at, out)
    }
}

/// Whichever note the device refuses (a landing kept, placed, or given back), the load ends
/// with the device's error and leaves no region behind: not the staged one, not one adopted
/// in its place.
#[test]
fn a_notebook_that_fails_leaves_no_region_behind() {
    let Some(bytes) = variant(|l| {
        // A replaced copy gives its slot back too.
        let pe = l.iter().find(|(n, _)| n == "sg00/PE.bin").unwrap().clone();
        l.insert(0, (pe.0, vec![1; 64]));
    }) else {
        return;
    };
    let load = |fail_at: u32| {
        let mut memory = vec![0u8; 32 << 20];
        let mut notes = vec![0u8; 1 << 16];
        let dev = SimDevice::new(&mut memory, Arch::Cayman).with_notebook(&mut notes);
        let mut dev = FailingNotebook { dev, notes: 0, fail_at };
        let mut archive = Archive::<&[u8]>::open(&bytes, None, &OpenOptions::default(), &mut |_: &Warning| {}).unwrap();
        let mut arena = vec![0u8; TEST_ARENA];
        let mut loader = neff::loader::Loader::new(&mut arena, LoadOptions::default());
        let mut report = neff::loader::LoadReport::new();
        let result =
            loader.load(&mut archive, &mut dev, &mut report, &mut neff::loader::NoObserver, &mut |_: &Warning| {});
        (result, dev.notes, dev.dev.live_regions().count())
    };
    let (ok, notes, live) = load(0);
    ok.unwrap();
    assert!(live > 0 && notes > 48, "{notes} notes");
    for fail_at in 1..=notes {
        let (result, _, live) = load(fail_at);
        let e = result.expect_err("a refused note fails the load");
        assert!(matches!(e.kind, ErrorKind::Hal(_)), "note {fail_at}: {e}");
        assert_eq!(live, 0, "note {fail_at} of {notes}: {e}");
    }
}

#[test]
fn check_without_a_device_runs_every_step() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let mut archive =
        Archive::<&[u8]>::open(&bytes[..], Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let none: Option<&mut SimDevice> = None;
    let (result, report) =
        run(&mut archive, none, Some(None), LoadOptions::default(), TEST_ARENA, &mut |_: &Warning| {});
    result.unwrap();
    assert_eq!(report.payloads.len(), 24);
    assert!(report.payloads.iter().all(|p| p.region.is_none() && p.state == PayloadState::Checked));
    assert_eq!(report.subgraphs[0].bytes_by_usage[neff::hal::usage_index(UsageClass::InstrPe)], 768);
    // With an architecture the gate applies.
    let mut archive =
        Archive::<&[u8]>::open(&bytes[..], Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let none: Option<&mut SimDevice> = None;
    let (result, _) =
        run(&mut archive, none, Some(Some(Arch::Sunda)), LoadOptions::default(), TEST_ARENA, &mut |_: &Warning| {});
    let e = result.unwrap_err();
    assert_eq!((e.stage, e.member.as_str(), e.key_path.as_str(), e.offset), (Stage::Kelf, "kelf-0.json", "target", 0));
    assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::ArchMismatch { neff: 3, device: 2 }));
}

#[test]
fn the_report_serialises_to_json_without_a_heap() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let mut memory = vec![0u8; 32 << 20];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let mut archive =
        Archive::<&[u8]>::open(&bytes[..], Some(bytes.len() as u64), &OpenOptions::default(), &mut |_: &Warning| {})
            .unwrap();
    let mut arena = vec![0u8; TEST_ARENA];
    let mut loader = neff::loader::Loader::new(&mut arena, LoadOptions::default());
    let mut summary = neff::loader::LoadReport::new();
    let mut lines_buf = vec![0u8; 64 * 1024];
    let mut lines = neff::loader::JsonLines::<&mut [u8], 512>::new(&mut lines_buf[..]);
    loader.load(&mut archive, &mut dev, &mut summary, &mut lines, &mut |_: &Warning| {}).unwrap();
    let (written, failed) = (lines.written, lines.failed);
    let left = lines.out.len();
    let used = lines_buf.len() - left;
    assert_eq!(failed, 0);
    // 3 tensors, 24 payloads, 2 subgraphs: one JSON object a line.
    assert_eq!(written, 3 + 24 + 2);
    let text = std::str::from_utf8(&lines_buf[..used]).unwrap();
    let values: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(values[0]["tensor"]["name"], "x");
    assert_eq!(values[0]["tensor"]["size"], 65536);
    let weight = values.iter().find(|v| v["payload"]["usage"] == "WEIGHT").unwrap();
    assert_eq!(weight["payload"]["len"], 32768);
    assert_eq!(weight["payload"]["digest"].as_str().unwrap().len(), 16);
    assert_eq!(values.last().unwrap()["subgraph"]["bytes_by_usage"]["INSTR_PE"], 768);
    // The summary, serialised into a small buffer.
    let mut buf = [0u8; 1024];
    let n = summary.to_json(&mut buf).unwrap();
    assert!(n > 100, "{n}");
    let v: serde_json::Value = serde_json::from_slice(&buf[..n]).unwrap();
    assert_eq!(v["device_arch"], "cayman");
    assert_eq!(v["placed"], 24);
    assert!(v["arena_peak"].as_u64().unwrap() > 0);
    // A buffer one byte too small is an error, not a panic; exactly the size is enough. A line
    // too long is counted, not cut.
    assert_eq!(summary.to_json(&mut buf[..n - 1]), Err(serde_json_core::ser::Error::BufferFull));
    assert_eq!(summary.to_json(&mut buf[..100]), Err(serde_json_core::ser::Error::BufferFull));
    let mut exact = vec![0u8; n];
    assert_eq!(summary.to_json(&mut exact), Ok(n));
    assert_eq!(exact, buf[..n]);
    let mut tiny = neff::loader::JsonLines::<&mut [u8], 16>::new(&mut lines_buf[..]);
    neff::loader::Observer::subgraph(
        &mut tiny,
        &neff::loader::SubgraphReport {
            name: "sg00",
            core: 0,
            allocations: 1,
            bytes_placed: 8,
            bytes_by_usage: [0; neff::hal::USAGE_CLASS_COUNT],
        },
    );
    assert_eq!((tiny.written, tiny.failed), (0, 1));
}

#[test]
fn long_member_names_need_no_capacity_of_the_loader() {
    // A debug member and a payload whose paths are longer than any fixed table would hold:
    // the names live in the arena. The stray payload is released (nothing names it).
    let long = format!("debug_info/{}.dbg", "x".repeat(80));
    let long_payload = format!("sg00/{}.bin", "y".repeat(180));
    let Some(bytes) = variant(|l| {
        l.insert(0, (long.clone(), vec![0; 10]));
        l.insert(0, (long_payload.clone(), vec![0; 10]));
    }) else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    let p = out.report.payloads.iter().find(|p| p.member == long_payload).unwrap();
    assert_eq!(p.state, PayloadState::Released);
}

#[test]
fn a_full_arena_is_a_capacity_error_that_says_how_much() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let mut memory = vec![0u8; 8 << 20];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let mut archive = Archive::<&[u8]>::open(&bytes[..], None, &OpenOptions::default(), &mut |_: &Warning| {}).unwrap();
    // The tokenizer's scratch comes off the front; 600 bytes are left for the records.
    let arena = neff::manifest::STRING_SCRATCH + 600;
    let (result, _) = run(&mut archive, Some(&mut dev), None, LoadOptions::default(), arena, &mut |_: &Warning| {});
    let e = result.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::ArenaFull { capacity: 600, needed } if needed > 600), "{e}");
    assert!(e.to_string().contains("the load arena of 600 bytes is full"), "{e}");
    assert_eq!(dev.live_regions().count(), 0, "a failed load releases what it placed");
}

#[test]
fn an_arena_shorter_than_the_string_scratch_is_an_error_not_a_panic() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    for arena in [0, 5, 600] {
        let mut archive =
            Archive::<&[u8]>::open(&bytes[..], None, &OpenOptions::default(), &mut |_: &Warning| {}).unwrap();
        let none = None::<&mut SimDevice>;
        let (result, _) = run(&mut archive, none, Some(None), LoadOptions::default(), arena, &mut |_: &Warning| {});
        // The tokenizer takes all of it: no room for records, or a string longer than it.
        let e = result.unwrap_err();
        let scratch =
            |c: &neff::error::CapacityError| c.limit == neff::json::SCRATCH_LIMIT && c.capacity == arena as u64;
        assert!(
            matches!(e.kind, ErrorKind::ArenaFull { capacity: 0, .. })
                || matches!(&e.kind, ErrorKind::Capacity(c) if scratch(c)),
            "{arena}: {e}"
        );
    }
}

#[test]
fn the_real_neffs_need_a_few_kib_of_arena() {
    for (name, bytes) in common::real_neffs() {
        let out = load(&bytes);
        out.result.as_ref().unwrap();
        let peak = out.report.arena_peak;
        println!("{name}: arena peak {peak} bytes");
        assert!(peak > 0 && peak < 8 * 1024, "{name}: {peak}");
    }
}

#[test]
fn a_stray_kelf_before_neff_json_does_not_misplace_cores() {
    // An unnamed kelf-a.json listing the graphs in the other order arrives first: until
    // neff.json (last) says which KELF counts, core numbers are unknown and payloads wait.
    let stray = br#"{"graphs":[{"definition":"sg01/def.json","name":"sg01"},{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5","target":"cayman"}"#;
    let Some(bytes) = variant(|l| l.insert(0, ("kelf-a.json".into(), stray.to_vec()))) else { return };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    assert!(out.core_mismatches.is_empty(), "{:?}", out.core_mismatches);
    let core = |m: &str| out.report.payloads.iter().find(|p| p.member.as_str() == m).unwrap().core;
    assert_eq!(core("sg00/value_sg0000_identity_82_CRSM.npy"), Some(0));
    assert_eq!(core("sg01/PE.bin"), Some(1));
    assert!(out.warnings.iter().any(|w| w.kind == WarningKind::Chain(ChainWarning::KelfNotNamed)));
}

#[test]
fn a_file_name_with_a_directory_is_placed() {
    let Some(bytes) = variant(|l| {
        for (n, body) in l.iter_mut() {
            if n == "sg00/value_sg0000_identity_82_CRSM.npy" {
                *n = "sg00/w/value_sg0000_identity_82_CRSM.npy".into();
            }
            if n == "sg00/def.json" {
                let t = String::from_utf8(body.clone()).unwrap();
                *body = t.replacen("\"value_sg0000", "\"w/value_sg0000", 1).into_bytes();
            }
        }
    }) else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    let p =
        out.report.payloads.iter().find(|p| p.member.as_str() == "sg00/w/value_sg0000_identity_82_CRSM.npy").unwrap();
    assert_eq!((p.state, p.usage), (PayloadState::Placed, UsageClass::Weight));
    assert_eq!(out.report.released, 0);
}

#[test]
fn a_stream_with_a_huge_data_size_is_an_error_not_an_overflow() {
    let Some(mut bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    bytes[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    // No file size: nothing bounds data_size until the stream ends.
    let result = Archive::<&[u8]>::open(&bytes[..], None, &OpenOptions::default(), &mut |_: &Warning| {}).and_then(
        |mut archive| {
            let none: Option<&mut SimDevice> = None;
            run(&mut archive, none, Some(None), LoadOptions::default(), TEST_ARENA, &mut |_: &Warning| {}).0
        },
    );
    // The stream ends first: the data_size gate fails once the input ended, with what it held,
    // at the field's byte (16) as for a file of known size.
    let e = result.unwrap_err();
    let kind = neff::header::HeaderError::DataSizePastEnd { data_size: u64::MAX, available: bytes.len() as u64 - 1024 };
    assert_eq!(e.kind, ErrorKind::Header(kind));
    assert_eq!((e.stage, e.member.as_str(), e.offset, e.offset_base), (Stage::Header, "", 16, OffsetBase::File));
}

#[test]
fn an_empty_instruction_stream_is_placed_without_a_region() {
    let Some(bytes) = variant(|l| l.iter_mut().find(|(n, _)| n == "sg00/SP.bin").unwrap().1.clear()) else { return };
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    let sp = out.report.payloads.iter().find(|p| p.member.as_str() == "sg00/SP.bin").unwrap();
    assert_eq!((sp.state, sp.usage, sp.len, sp.region), (PayloadState::Placed, UsageClass::InstrSp, 0, None));
    assert_eq!(out.live_regions, 23);
}

#[test]
fn members_are_reached_through_the_chain_not_by_name() {
    // Broken JSON that nothing names is never an error (§15.18): a stray definition, a stray
    // KELF and a garbage note.
    let Some(bytes) = variant(|l| {
        l.insert(0, ("sg07/def.json".into(), b"{ not json".to_vec()));
        l.insert(0, ("kelf-3.json".into(), b"[1, 2".to_vec()));
        l.insert(0, ("notes.json".into(), b"\x00\x01".to_vec()));
    }) else {
        return;
    };
    let clean = load(&common::fixture_bytes("public/nkipy/matmul_small.neff").unwrap());
    let out = load(&bytes);
    out.result.as_ref().unwrap();
    assert_eq!(out.image, clean.image, "the same device image");

    // Any member name, as long as the chain names it: the KELF, a definition, an engine JSON.
    let Some(renamed) = variant(|l| {
        let rename = |l: &mut Vec<(String, Vec<u8>)>, from: &str, to: &str| {
            l.iter_mut().find(|(n, _)| n == from).unwrap().0 = to.into();
        };
        rename(l, "kelf-0.json", "descriptor.json");
        replace(l, "neff.json", "\"kelf-0.json\"", "\"descriptor.json\"");
        rename(l, "sg00/def.json", "sg00/definition.json");
        replace(l, "descriptor.json", "\"sg00/def.json\"", "\"sg00/definition.json\"");
        rename(l, "sg00/PE.json", "sg00/engine_pe_v2.json");
        replace(l, "sg00/definition.json", "\"PE.json\"", "\"engine_pe_v2.json\"");
    }) else {
        return;
    };
    let out = load(&renamed);
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.image, clean.image);
    let usage = |m: &str| out.report.payloads.iter().find(|p| p.member == m).unwrap().usage;
    assert_eq!(usage("sg00/PE.bin"), UsageClass::InstrPe, "the renamed engine JSON gives PE.bin its role");
}

/// Renames `from` to `to` in the member list and in the manifest `namer` that names it: by
/// its file name (a `def.json` names members of its directory), or by `reference` as written.
fn rename_named(l: &mut [(String, Vec<u8>)], from: &str, to: &str, namer: &str, reference: &str) {
    l.iter_mut().find(|(n, _)| n == from).unwrap().0 = to.into();
    let file_name = |path: &str| path.rsplit_once('/').map_or(path, |(_, f)| f).to_string();
    let (old, new) =
        if reference.is_empty() { (file_name(from), file_name(to)) } else { (reference.into(), to.into()) };
    replace(l, namer, &format!("\"{old}\""), &format!("\"{new}\""));
}

#[test]
fn a_payload_named_json_is_a_payload_in_any_order() {
    // §15.18: the naming key says what a member is, not its suffix. A weight, an instruction
    // stream and a DVE table named `.json`, before and after the def.json naming them.
    let clean = load(&common::fixture_bytes("public/nkipy/matmul_small.neff").unwrap());
    for def_first in [false, true] {
        let Some(bytes) = variant(|l| {
            // A raw weight (only `.npy` members are parsed as arrays, by their name).
            let weight = "sg00/value_sg0000_identity_82_CRSM.npy";
            let w = l.iter_mut().find(|(n, _)| n == weight).unwrap();
            w.1 = common::neff::npy_data(&w.1).to_vec();
            rename_named(l, weight, "sg00/weights.json", "sg00/def.json", "");
            rename_named(l, "sg00/PE.bin", "sg00/pe_stream.json", "sg00/PE.json", "");
            replace(l, "sg00/def.json", r#""pe_instr": "PE.bin""#, r#""pe_instr": "pe_stream.json""#);
            rename_named(l, "sg00/default_opcode_table.bin", "sg00/opcodes.json", "sg00/DVE.json", "");
            if def_first {
                for m in ["sg00/weights.json", "sg00/pe_stream.json", "sg00/opcodes.json"] {
                    move_after(l, m, "neff.json");
                }
            }
        }) else {
            return;
        };
        let out = load(&bytes);
        out.result.as_ref().unwrap_or_else(|e| panic!("def_first {def_first}: {e}"));
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let usage = |m: &str| out.report.payloads.iter().find(|p| p.member == m).map(|p| (p.usage, p.state));
        assert_eq!(usage("sg00/pe_stream.json"), Some((UsageClass::InstrPe, PayloadState::Placed)));
        assert_eq!(usage("sg00/weights.json").map(|u| u.0), Some(UsageClass::Weight));
        assert_eq!(usage("sg00/opcodes.json").map(|u| u.1), Some(PayloadState::Placed));
        let digests = |o: &Outcome| o.image.iter().map(|(_, u, l, d)| (u.value(), *l, *d)).collect::<Vec<_>>();
        let (mut got, mut want) = (digests(&out), digests(&clean));
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "the same bytes land with the same classes");
        // Manifests read both ways leave no payload behind.
        assert!(out.report.payloads.iter().all(|p| !p.member.ends_with("PE.json")), "{:?}", out.report.payloads);
    }
}

#[test]
fn a_kelf_named_without_json_before_neff_json_loads() {
    // The real order puts neff.json last: the KELF is met before anything names it.
    let Some(bytes) = variant(|l| {
        rename_named(l, "kelf-0.json", "descriptor", "neff.json", "kelf-0.json");
        move_after(l, "neff.json", "sg01/value_sg0000_identity_82_CRSM.npy");
    }) else {
        return;
    };
    let names: Vec<_> = members(&bytes).into_iter().map(|(n, _)| n).collect();
    assert!(names.iter().position(|n| n == "descriptor") < names.iter().position(|n| n == "neff.json"));
    let out = load(&bytes);
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.image, load(&common::fixture_bytes("public/nkipy/matmul_small.neff").unwrap()).image);
}

#[test]
fn no_name_decides_what_a_member_is() {
    // Each member below is met before the manifest naming it, under a name that suggests
    // another kind: it is read as its name suggests, then again as what the chain names it.
    let clean = load(&common::fixture_bytes("public/nkipy/matmul_small.neff").unwrap());
    type Edit = fn(&mut Vec<(String, Vec<u8>)>);
    let cases: [(&str, Edit); 5] = [
        ("a definition named like an engine JSON", |l| {
            rename_named(l, "sg00/def.json", "sg00/definition.json", "kelf-0.json", "sg00/def.json");
            fix_kelf_path(l, "sg00/definition.json");
        }),
        ("a definition named def_fz.json", |l| {
            rename_named(l, "sg01/def.json", "sg01/def_fz.json", "kelf-0.json", "sg01/def.json");
            fix_kelf_path(l, "sg01/def_fz.json");
        }),
        ("a KELF in a directory", |l| {
            rename_named(l, "kelf-0.json", "graphs/kelf.json", "neff.json", "kelf-0.json");
            fix_kelf_path(l, "graphs/kelf.json");
        }),
        ("an engine JSON named def.json", |l| {
            l.iter_mut().find(|(n, _)| n == "sg00/PE.json").unwrap().0 = "sg00/pe/def.json".into();
            replace(l, "sg00/def.json", r#""PE.json""#, r#""pe/def.json""#);
            fix_kelf_path(l, "sg00/pe/def.json");
        }),
        ("a subgraph at the tar root", |l| {
            for (from, to) in [("sg00/def.json", "root_def.json"), ("sg00/PE.json", "PE.json")] {
                l.iter_mut().find(|(n, _)| n == from).unwrap().0 = to.into();
            }
            replace(l, "kelf-0.json", r#""sg00/def.json""#, r#""root_def.json""#);
            let sg00: Vec<String> = l.iter().map(|(n, _)| n.clone()).filter(|n| n.starts_with("sg00/")).collect();
            for name in sg00 {
                l.iter_mut().find(|(n, _)| *n == name).unwrap().0 = name.trim_start_matches("sg00/").into();
            }
        }),
    ];
    for (what, edit) in cases {
        let Some(bytes) = variant(edit) else { return };
        let out = load(&bytes);
        out.result.as_ref().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.warnings.is_empty(), "{what}: {:?}", out.warnings);
        let digests = |o: &Outcome| {
            let mut d: Vec<_> = o.image.iter().map(|(_, u, l, d)| (u.value(), *l, *d)).collect();
            d.sort_unstable();
            d
        };
        assert_eq!(digests(&out), digests(&clean), "{what}: the same bytes land with the same classes");
    }
}

/// Moves `member` first in the tar, before anything that could name it.
fn fix_kelf_path(l: &mut Vec<(String, Vec<u8>)>, member: &str) {
    let at = l.iter().position(|(n, _)| n == member).unwrap();
    let entry = l.remove(at);
    l.insert(0, entry);
}

#[test]
fn an_unreached_npy_with_a_bad_header_is_no_error() {
    // §15.18: a member nothing reaches is never read for an error; a reached one is refused.
    let long_header = {
        let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': '{}' }}", "y".repeat(400));
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        npy.extend_from_slice(dict.as_bytes());
        npy.extend_from_slice(&[0; 8]);
        npy
    };
    let orphan = long_header.clone();
    let Some(bytes) = variant(move |l| l.insert(0, ("sg00/orphan_weight.npy".into(), orphan))) else { return };
    let out = load(&bytes);
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let w: Vec<_> = out.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("sg00/orphan_weight.npy"), "{w:?}");
    // The same header on a weight the chain reaches, met before its def.json: its own error.
    let weight = "sg00/value_sg0000_identity_82_CRSM.npy";
    let Some(bytes) = variant(move |l| {
        l.iter_mut().find(|(n, _)| n == weight).unwrap().1 = long_header;
        move_after(l, weight, "kelf-0.json");
    }) else {
        return;
    };
    let e = load(&bytes).result.unwrap_err();
    assert_eq!((e.stage, e.member.as_str()), (Stage::Payload, weight), "{e}");
    assert!(matches!(e.kind, ErrorKind::Npy(_)), "{e}");
}

#[test]
fn the_engine_json_instr_wins_and_one_is_required() {
    // §15.15: `<eng>_instr` that differs from the engine JSON's `instr` is a warning.
    let Some(bytes) = variant(|l| replace(l, "sg00/def.json", r#""pe_instr": "PE.bin""#, r#""pe_instr": "pe_v1.bin""#))
    else {
        return;
    };
    let out = load(&bytes);
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let warnings: Vec<_> = out.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        ["sg00/PE.json: instr: pe_instr \"pe_v1.bin\" differs from the engine JSON's instr \"PE.bin\"; using the engine JSON's"]
    );
    // Without the engine JSON's `instr`, `<eng>_instr` names the stream.
    let Some(bytes) = variant(|l| replace(l, "sg00/PE.json", r#","instr":"PE.bin""#, "")) else { return };
    let out = load(&bytes);
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    // With neither, the stream cannot be found: refused, naming `instr`.
    let Some(bytes) = variant(|l| {
        replace(l, "sg00/PE.json", r#","instr":"PE.bin""#, "");
        replace(l, "sg00/def.json", r#""pe_instr": "PE.bin","#, "");
    }) else {
        return;
    };
    let e = load(&bytes).result.unwrap_err();
    assert_eq!((e.stage, e.member.as_str(), e.key_path.as_str()), (Stage::Engine, "sg00/PE.json", "instr"), "{e}");
    assert!(matches!(e.kind, ErrorKind::Manifest(ManifestError::MissingKey { .. })), "{e}");
}

#[test]
fn a_broken_member_the_chain_reaches_is_refused_when_reached() {
    // sg00/PE.json comes before sg00/def.json names it: read speculatively, its error is kept
    // and reported once the chain reaches it, with its member and key path.
    let Some(bytes) = variant(|l| replace(l, "sg00/PE.json", "\"instr\":\"PE.bin\"", "\"instr\":7")) else { return };
    let e = load(&bytes).result.unwrap_err();
    assert_eq!(e.member.as_str(), "sg00/PE.json");
    assert_eq!(e.key_path.as_str(), "instr");
    assert_eq!(e.stage, Stage::Engine);
    let body = &members(&bytes).into_iter().find(|(n, _)| n == "sg00/PE.json").unwrap().1;
    let seven = body.windows(9).position(|w| w == b"\"instr\":7").unwrap() + 8;
    assert_eq!(e.offset, seven as u64, "at the number");
    assert!(
        matches!(
            e.kind,
            ErrorKind::Manifest(ManifestError::WrongType {
                expected: JsonType::String,
                found: JsonType::UnsignedInteger,
                ..
            })
        ),
        "{e}"
    );
}

/// `sg00/PE.json` of the small NEFF with one DMA block (`block`, a JSON object) in its `dma`.
fn with_pe_dma(l: &mut [(String, Vec<u8>)], block: &str) {
    replace(l, "sg00/PE.json", "\"dma\":[]", &format!("\"dma\":[{block}]"));
}

/// Moves `member` to just after `after` in the tar.
fn move_after(l: &mut Vec<(String, Vec<u8>)>, member: &str, after: &str) {
    let at = l.iter().position(|(n, _)| n == member).unwrap();
    let entry = l.remove(at);
    let to = l.iter().position(|(n, _)| n == after).unwrap() + 1;
    l.insert(to, entry);
}

const GOOD_BLOCK: &str = r#"{"id":0,"queue":"qPoolDynamic","desc":[{"from":"x","to":"SB","from_off":0,"to_off":0,"from_sizes":[128],"from_steps":[1]}]}"#;

#[test]
fn dma_names_resolve_to_the_definition_whichever_comes_first() {
    let Some(clean) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let clean = load(&clean);
    // Real order (PE.json before def.json: the reference waits) and the other one (the
    // definition keeps its names for the engine JSON still to come).
    for engine_after_def in [false, true] {
        let bytes = variant(|l| {
            with_pe_dma(l, GOOD_BLOCK);
            if engine_after_def {
                move_after(l, "sg00/PE.json", "sg00/def.json");
            }
        })
        .unwrap();
        let out = load(&bytes);
        out.result.as_ref().unwrap_or_else(|e| panic!("engine after def: {engine_after_def}: {e}"));
        assert_eq!(out.image, clean.image);
    }
}

#[test]
fn an_unresolved_dma_name_is_refused_with_its_member_key_path_and_offset() {
    let cases = [
        (
            r#"{"id":0,"queue":"qPoolDynamic","desc":[{"from":"x","to":"nowhere","from_off":0,"to_off":0}]}"#,
            "dma[0].desc[0].to",
            ManifestError::UnknownDmaVariable { to: true, name: neff::error::Text::new("nowhere") },
            "DMA descriptor to variable nowhere is not a var of the subgraph's def.json",
            r#"{"from":"x","to":"nowhere","from_off":0,"to_off":0}"#,
        ),
        (
            r#"{"id":0,"queue":"qPoolDynamic","desc":[{"from":"output","to":"SB","from_off":0,"to_off":0}]}"#,
            "dma[0].desc[0].from",
            ManifestError::UnknownDmaVariable { to: false, name: neff::error::Text::new("output") },
            "DMA descriptor from variable output is not a var of the subgraph's def.json",
            r#"{"from":"output","to":"SB","from_off":0,"to_off":0}"#,
        ),
        (
            // A CCE source names its variable too.
            r#"{"id":0,"queue":"qPoolDynamic","desc":[{"from_arr":[{"from":"x","from_off":0,"from_dtype":"float32"},{"from":"nowhere","from_off":0,"from_dtype":"float32"}],"to":"SB","to_dtype":"float32","to_off":0}]}"#,
            "dma[0].desc[0].from_arr[1].from",
            ManifestError::UnknownDmaVariable { to: false, name: neff::error::Text::new("nowhere") },
            "DMA descriptor from variable nowhere is not a var of the subgraph's def.json",
            r#"{"from":"nowhere","from_off":0,"from_dtype":"float32"}"#,
        ),
        (
            // A queue set's name is not a variable's, nor the other way round.
            r#"{"id":0,"queue":"x","desc":[]}"#,
            "dma[0].queue",
            ManifestError::UnknownDmaQueue(neff::error::Text::new("x")),
            "DMA queue x is not a dma_queue of the subgraph's def.json",
            r#"{"id":0,"queue":"x","desc":[]}"#,
        ),
    ];
    for (block, key_path, kind, message, element) in cases {
        for engine_after_def in [false, true] {
            let mut pe_text = String::new();
            let bytes = variant(|l| {
                with_pe_dma(l, block);
                if engine_after_def {
                    move_after(l, "sg00/PE.json", "sg00/def.json");
                }
                pe_text = String::from_utf8(l.iter().find(|(n, _)| n == "sg00/PE.json").unwrap().1.clone()).unwrap();
            })
            .unwrap();
            let out = load(&bytes);
            let e = out.result.unwrap_err();
            let case = format!("{key_path}, engine after def: {engine_after_def}");
            assert_eq!(
                (e.stage, e.member.as_str(), e.key_path.as_str()),
                (Stage::Engine, "sg00/PE.json", key_path),
                "{case}"
            );
            assert_eq!(e.kind, ErrorKind::Manifest(kind), "{case}");
            assert_eq!(e.kind.to_string(), message, "{case}");
            // The offset is that of the closing brace of the block or descriptor holding the name.
            let close = pe_text.find(element).unwrap() + element.len() - 1;
            assert_eq!(e.offset, close as u64, "{case}");
            assert_eq!(out.live_regions, 0, "{case}");
        }
    }
}

/// Descriptors naming the same variables again and again, as real engine JSONs do (in runs,
/// and in cycles longer than the few names a host remembers of its last waits), keep one
/// pending reference per name, at its first use: the same records (the same arena and
/// notebook peaks) and the same error as when each name is used once.
#[test]
fn repeated_dma_names_wait_once_at_their_first_use() {
    let names: Vec<String> = (0..11).map(|i| format!("ghost_{i}")).collect();
    // Each name once (the first uses), then runs of 1 to 4 uses, the name moving on by 3 or
    // by 7 of 11: every repeat found both among the last few names and far behind them.
    let mut order: Vec<usize> = (0..names.len()).collect();
    let mut at = 0usize;
    for i in 0..300usize {
        at = (at + if i % 5 == 0 { 7 } else { 3 }) % names.len();
        order.extend(std::iter::repeat_n(at, 1 + i % 4));
    }
    let block = |uses: &[usize]| {
        let descs: Vec<String> =
            uses.iter().map(|&i| format!(r#"{{"from":"{}","to":"SB","from_off":0,"to_off":0}}"#, names[i])).collect();
        format!(r#"{{"id":0,"queue":"qPoolDynamic","desc":[{}]}}"#, descs.join(","))
    };
    let Some(once) = variant(|l| with_pe_dma(l, &block(&order[..names.len()]))) else { return };
    let many = variant(|l| with_pe_dma(l, &block(&order))).unwrap();
    // In the arena, then in a notebook.
    for notebook in [0usize, 1 << 16] {
        let (once, _) = load_noted(&once, Arch::Cayman, LoadOptions::default(), 32 << 20, notebook);
        let (many, _) = load_noted(&many, Arch::Cayman, LoadOptions::default(), 32 << 20, notebook);
        let (a, b) = (once.result.unwrap_err(), many.result.unwrap_err());
        assert_eq!(a.to_string(), b.to_string(), "notebook {notebook}");
        assert_eq!((a.stage, a.offset, a.key_path.as_str()), (b.stage, b.offset, "dma[0].desc[0].from"));
        assert_eq!(
            a.kind,
            ErrorKind::Manifest(ManifestError::UnknownDmaVariable {
                to: false,
                name: neff::error::Text::new("ghost_0")
            })
        );
        assert_eq!(once.report.summary.arena_peak, many.report.summary.arena_peak, "notebook {notebook}");
    }
}

#[test]
fn dma_names_of_members_the_chain_does_not_reach_are_not_checked() {
    let Some(clean) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let clean = load(&clean);
    let stray = r#"{"dma":[{"id":0,"queue":"qNone","desc":[{"from":"a","to":"b","from_off":0,"to_off":0}]}],"instr":"PE.bin","name":"x.json"}"#;
    for after_def in [false, true] {
        let bytes = variant(|l| {
            l.push(("sg00/stray_engine.json".into(), stray.as_bytes().to_vec()));
            let stray_at = l.len() - 1;
            let entry = l.remove(stray_at);
            let anchor = if after_def { "sg00/def.json" } else { "sg00/Activation.json" };
            let to = l.iter().position(|(n, _)| n == anchor).unwrap() + usize::from(after_def);
            l.insert(to, entry);
        })
        .unwrap();
        let out = load(&bytes);
        out.result.as_ref().unwrap_or_else(|e| panic!("after def: {after_def}: {e}"));
        assert_eq!(out.image, clean.image);
    }
}

#[test]
fn a_definitions_own_dma_resolves_to_its_names() {
    // def.json's top-level `dma` comes before `dma_queue` and `var` (sorted keys): its
    // references wait for the names of the same document.
    let block = |to: &str| {
        format!(
            r#""dma":[{{"id":1,"queue":"qSPDynamicHW","desc":[{{"from":"y","to":"{to}","from_off":0,"to_off":0}}]}}],"dma_queue""#
        )
    };
    let good = variant(|l| replace(l, "sg00/def.json", "\"dma_queue\"", &block("output0"))).unwrap();
    load(&good).result.unwrap();
    let bad = variant(|l| replace(l, "sg00/def.json", "\"dma_queue\"", &block("output9"))).unwrap();
    let e = load(&bad).result.unwrap_err();
    assert_eq!(
        (e.stage, e.member.as_str(), e.key_path.as_str()),
        (Stage::DefJson, "sg00/def.json", "dma[0].desc[0].to")
    );
    assert_eq!(
        e.kind,
        ErrorKind::Manifest(ManifestError::UnknownDmaVariable { to: true, name: neff::error::Text::new("output9") })
    );
}

#[test]
fn a_block_with_an_instance_name_is_not_resolved_by_its_queue() {
    // `instance_name` takes precedence over `queue` (§8.2) and names a ring instance.
    let block = r#"{"id":0,"queue":"qUnknown","instance_name":"ring7","desc":[]}"#;
    let bytes = variant(|l| with_pe_dma(l, block)).unwrap();
    load(&bytes).result.unwrap();
}

#[test]
fn an_engine_a_definition_does_not_name_is_a_warning_naming_the_neff() {
    // `Engine %s not found in NEFF %s, using empty placeholder`: the second argument is the
    // NEFF's name, from its header ("file.neff" in the real NEFFs).
    let Some(bytes) = variant(|l| replace(l, "sg00/def.json", "\"pool\": \"Pool.json\",", "")) else { return };
    let out = load(&bytes);
    let missing: Vec<String> = out
        .warnings
        .iter()
        .filter(|w| matches!(w.kind, WarningKind::Manifest(neff::manifest::ManifestWarning::EngineMissing { .. })))
        .map(|w| w.to_string())
        .collect();
    assert_eq!(
        missing,
        ["sg00/def.json: pool: Engine pool not found in NEFF file.neff, using empty placeholder"],
        "{:?}",
        out.result
    );
}

#[test]
fn a_q7_engine_is_reached_through_its_definition() {
    let Some(clean) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let clean = load(&clean);
    let q7_bin: Vec<u8> = (0..128u8).collect();
    let with_q7 = |json: Option<&str>| {
        let q7_bin = q7_bin.clone();
        variant(move |l| {
            replace(l, "sg00/def.json", "\"pe\":", "\"q7\": \"Q7.json\", \"q7_instr\": \"Q7.bin\", \"pe\":");
            let at = l.iter().position(|(n, _)| n == "sg00/PE.json").unwrap();
            l.insert(at, ("sg00/Q7.bin".into(), q7_bin));
            if let Some(json) = json {
                l.insert(at + 1, ("sg00/Q7.json".into(), json.as_bytes().to_vec()));
            }
        })
        .unwrap()
    };
    // Its instruction stream lands, on the core of its definition, in a generic region
    // (§11.8 has no Vision-Q7 class); everything else is as before.
    let out = load(&with_q7(Some(r#"{"dma":[],"instr":"Q7.bin","name":"Q7.json"}"#)));
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let q7 = out.report.payloads.iter().find(|p| p.member == "sg00/Q7.bin").unwrap();
    assert_eq!((q7.state, q7.usage, q7.len, q7.core), (PayloadState::Placed, UsageClass::Generic, 128, Some(0)));
    assert_eq!(q7.digest, digest64(&q7_bin));
    let mut image = out.image.clone();
    image.retain(|(m, ..)| m != "sg00/Q7.bin");
    assert_eq!(image, clean.image);
    // Named but absent: the definition's `q7` key names the missing member.
    let (c, e) = chain_error(&load(&with_q7(None)));
    assert!(matches!(c, ChainError::MemberMissing { member } if member.as_str() == "sg00/Q7.json"), "{c:?}");
    assert_eq!((e.member.as_str(), e.key_path.as_str()), ("sg00/def.json", "q7"));
    // Reached, so its errors count, with its member and key path.
    let e = load(&with_q7(Some(r#"{"dma":[],"instr":7}"#))).result.unwrap_err();
    assert_eq!((e.stage, e.member.as_str(), e.key_path.as_str()), (Stage::Engine, "sg00/Q7.json", "instr"));
}

#[test]
fn a_missing_activation_table_is_named_by_its_own_key() {
    for (drop, key) in [("sg00/exp_and_others_bkt.bin", "bkt_bin"), ("sg00/exp_and_others_ctrl.bin", "ctl_bin")] {
        let Some(bytes) = variant(|l| l.retain(|(n, _)| n != drop)) else { return };
        let (c, e) = chain_error(&load(&bytes));
        assert!(matches!(c, ChainError::MemberMissing { member } if member.as_str() == drop), "{drop}: {c:?}");
        assert_eq!((e.stage, e.member.as_str(), e.key_path.as_str()), (Stage::Chain, "sg00/exp_and_others.json", key));
    }
}

/// A simulated device whose arch turns from `before` to `after` at its first allocation
/// (as a device learning its arch from the NEFF as it streams would).
struct Turning<'m> {
    dev: SimDevice<'m>,
    before: Arch,
    after: Arch,
    allocated: bool,
}

impl neff::hal::Hal for Turning<'_> {
    type Error = neff::hal::HalError;

    fn arch(&self) -> Arch {
        if self.allocated {
            self.after
        } else {
            self.before
        }
    }
    fn alloc(&mut self, req: &neff::hal::AllocRequest) -> Result<neff::hal::RegionId, neff::hal::HalError> {
        self.allocated = true;
        self.dev.alloc(req)
    }
    fn write(&mut self, r: neff::hal::RegionId, off: u64, bytes: &[u8]) -> Result<(), neff::hal::HalError> {
        self.dev.write(r, off, bytes)
    }
    fn adopt(
        &mut self,
        staged: neff::hal::RegionId,
        req: &neff::hal::AllocRequest,
    ) -> Result<neff::hal::RegionId, neff::hal::HalError> {
        self.dev.adopt(staged, req)
    }
    fn release(&mut self, r: neff::hal::RegionId) -> Result<(), neff::hal::HalError> {
        self.dev.release(r)
    }
    fn address(&self, r: neff::hal::RegionId) -> Result<u64, neff::hal::HalError> {
        self.dev.address(r)
    }
}

/// A device with an error type of its own (an errno, as a C driver returns), which refuses
/// its third allocation: the loader reports the refusal's kind, as embedded-hal's `kind()`.
struct Errno<'m> {
    dev: SimDevice<'m>,
    allocs: u32,
}

/// A driver's error: its own code, and the kind it stands for.
#[derive(Debug)]
struct DriverError {
    errno: i32,
}

impl neff::hal::DeviceError for DriverError {
    fn kind(&self) -> neff::hal::HalError {
        match self.errno {
            12 => neff::hal::HalError::OutOfMemory { requested: 0, align: 0, free: 0, largest_free: 0 },
            _ => neff::hal::HalError::IdsExhausted,
        }
    }
}

impl neff::hal::Hal for Errno<'_> {
    type Error = DriverError;

    fn arch(&self) -> Arch {
        self.dev.arch()
    }
    fn alloc(&mut self, req: &neff::hal::AllocRequest) -> Result<neff::hal::RegionId, DriverError> {
        self.allocs += 1;
        if self.allocs == 3 {
            return Err(DriverError { errno: 12 });
        }
        self.dev.alloc(req).map_err(|_| DriverError { errno: 5 })
    }
    fn write(&mut self, r: neff::hal::RegionId, off: u64, bytes: &[u8]) -> Result<(), DriverError> {
        self.dev.write(r, off, bytes).map_err(|_| DriverError { errno: 5 })
    }
    fn adopt(
        &mut self,
        staged: neff::hal::RegionId,
        req: &neff::hal::AllocRequest,
    ) -> Result<neff::hal::RegionId, DriverError> {
        self.dev.adopt(staged, req).map_err(|_| DriverError { errno: 5 })
    }
    fn release(&mut self, r: neff::hal::RegionId) -> Result<(), DriverError> {
        self.dev.release(r).map_err(|_| DriverError { errno: 5 })
    }
    fn address(&self, r: neff::hal::RegionId) -> Result<u64, DriverError> {
        self.dev.address(r).map_err(|_| DriverError { errno: 5 })
    }
}

#[test]
fn a_device_error_of_its_own_type_is_reported_by_its_kind() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let mut memory = vec![0u8; 32 << 20];
    let mut dev = Errno { dev: SimDevice::new(&mut memory, Arch::Cayman), allocs: 0 };
    let mut sink = |_: &Warning| {};
    let mut archive =
        Archive::<&[u8]>::open(&bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).unwrap();
    let (result, _) = run(&mut archive, Some(&mut dev), None, LoadOptions::default(), TEST_ARENA, &mut sink);
    let e = result.unwrap_err();
    assert_eq!(e.stage, Stage::Hal);
    assert!(matches!(e.kind, ErrorKind::Hal(neff::hal::HalError::OutOfMemory { .. })), "{e:?}");
    assert!(!e.member.is_empty(), "the member being placed is named: {e:?}");
    assert_eq!(e.status(), neff::Status::Resource);
}

#[test]
fn the_device_arch_is_asked_when_binding() {
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    // The gate and the report take the arch the device has once the archive is read, not the
    // one it had when the load began: the host's `load` learns it from the KELF on the way.
    for (before, after, want) in [
        (Arch::Sunda, Arch::Cayman, Ok(())),
        (Arch::Cayman, Arch::Sunda, Err(ManifestError::ArchMismatch { neff: 3, device: 2 })),
    ] {
        let mut memory = vec![0u8; 32 << 20];
        let mut dev = Turning { dev: SimDevice::new(&mut memory, before), before, after, allocated: false };
        let mut sink = |_: &Warning| {};
        let mut archive =
            Archive::<&[u8]>::open(&bytes, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink).unwrap();
        let (result, report) = run(&mut archive, Some(&mut dev), None, LoadOptions::default(), TEST_ARENA, &mut sink);
        assert_eq!(result.map_err(|e| e.kind), want.map_err(ErrorKind::Manifest), "{before:?} then {after:?}");
        assert_eq!(report.summary.device_arch, Some(after), "{before:?} then {after:?}");
    }
}

#[test]
fn a_host_takes_long_names_and_paths_the_firmware_profile_would_refuse() {
    // Spec §15.20: size is not a reason to refuse on a host. Names past the firmware's
    // capacities (var and node names over 256 bytes, a queue name over 128, a dtype over 16,
    // heads of 4 elements, a 3,980-byte PAX path and a 1,412-byte GNU long name).
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let input = format!("x_{}", "long_input_name_".repeat(20));
    let queue = format!("q_{}", "PoolDynamicQueue".repeat(20));
    let pax_dir = "p".repeat(3960);
    let gnu_dir = "g".repeat(1390);
    assert!((input.len(), queue.len()) > (256, 128));
    let mut list = members(&bytes);
    let json = |list: &[(String, Vec<u8>)], m: &str| -> serde_json::Value {
        serde_json::from_slice(&list.iter().find(|(n, _)| n == m).unwrap().1).unwrap()
    };
    let set = |list: &mut Vec<(String, Vec<u8>)>, m: &str, v: &serde_json::Value| {
        list.iter_mut().find(|(n, _)| n == m).unwrap().1 = serde_json::to_vec(v).unwrap();
    };
    let mut neff = json(&list, "neff.json");
    neff["nodes"][0]["name"] = input.clone().into();
    neff["nodes"][0]["output_names"] = serde_json::json!([input]);
    for head in neff["heads"].as_array_mut().unwrap() {
        head.as_array_mut().unwrap().push(7.into());
    }
    set(&mut list, "neff.json", &neff);
    let weight = "value_sg0000_identity_82_CRSM.npy";
    for (sg, dir) in [("sg00", &pax_dir), ("sg01", &gnu_dir)] {
        let member = format!("{sg}/def.json");
        let mut def = json(&list, &member);
        let vars = def["var"].as_object_mut().unwrap();
        let x = vars.remove("x").unwrap();
        vars.insert(input.clone(), x);
        vars["output0"]["dtype"] = "float16_with_a_long_suffix".into();
        let var = vars.values_mut().find(|v| v["file_name"] == weight).unwrap();
        var["file_name"] = format!("{dir}/{weight}").into();
        let queues = def["dma_queue"].as_object_mut().unwrap();
        let q = queues.remove("qPoolDynamic").unwrap();
        queues.insert(queue.clone(), q);
        set(&mut list, &member, &def);
        list.iter_mut().find(|(n, _)| *n == format!("{sg}/{weight}")).unwrap().0 = format!("{sg}/{dir}/{weight}");
    }
    // sg00's weight through a PAX `path` record (the helper writes GNU long names).
    let pax_member = format!("sg00/{pax_dir}/{weight}");
    let at = list.iter().position(|(n, _)| *n == pax_member).unwrap();
    let (name, body) = list.remove(at);
    let packed = pack(&bytes, &list);
    let neff_bytes = {
        let mut builder = tar::Builder::new(Vec::new());
        append_pax_named(&mut builder, &[("path", name.as_bytes())], &body);
        // Without the end-of-archive blocks, then the PAX member and its own.
        let mut all = common::corpus::inflated(&packed);
        while all.len() >= 512 && all[all.len() - 512..].iter().all(|&b| b == 0) {
            all.truncate(all.len() - 512);
        }
        all.extend_from_slice(&builder.into_inner().unwrap());
        behind_header(&packed, &all)
    };
    assert!(pax_member.len() >= 3980 && format!("sg01/{gnu_dir}/{weight}").len() >= 1412);
    let out = load(&neff_bytes);
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let warnings: Vec<_> = out.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    // The value is named (its end: a warning keeps a few bytes of it, issue 21 asks for more).
    assert!(warnings.iter().all(|w| w.contains("unknown dtype") && w.contains("a_long_suffix")), "{warnings:?}");
    let w = out.report.payloads.iter().find(|p| p.member == pax_member).unwrap();
    assert_eq!((w.usage, w.state), (UsageClass::Weight, PayloadState::Placed));
    assert_eq!(out.report.io.inputs.iter().filter(|t| t.name == input).count(), 1);
}

#[test]
fn pax_headers_of_any_length_stream_past() {
    // Every member behind a PAX header with 100 KiB of extended attributes: past the 64 KiB a
    // hosted walker once buffered (and the firmware's 1.5 KiB), so such a NEFF was refused for
    // the size of metadata the loader never reads. The walker now reads PAX records as they
    // stream, and the NEFF loads to the same device image as the original.
    let Some(bytes) = common::fixture_bytes("public/nkipy/matmul_small.neff") else { return };
    let list = members(&bytes);
    let xattr = vec![b'x'; 100 * 1024];
    let mut builder = tar::Builder::new(Vec::new());
    for (name, body) in &list {
        append_pax_named(&mut builder, &[("SCHILY.xattr.user.note", &xattr), ("path", name.as_bytes())], body);
    }
    let tar = builder.into_inner().unwrap();
    assert!(tar.len() > list.len() * 100 * 1024);
    let padded = behind_header(&bytes, &tar);

    let (original, out) = (load(&bytes), load(&padded));
    original.result.as_ref().unwrap();
    out.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.image.is_empty());
    assert_eq!(out.image, original.image, "the same members, lengths and device digests");
    assert_eq!(out.report.summary.members, original.report.summary.members);
}

/// Appends a member named by a PAX header with `records` (its ustar name a placeholder).
fn append_pax_named(builder: &mut tar::Builder<Vec<u8>>, records: &[(&str, &[u8])], body: &[u8]) {
    builder.append_pax_extensions(records.iter().copied()).unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_path("pax-named").unwrap();
    h.set_size(body.len() as u64);
    h.set_mode(0o664);
    h.set_cksum();
    builder.append(&h, body).unwrap();
}

/// `tar`, gzip'd behind the 1024-byte header of `neff` (its data size set to match).
fn behind_header(neff: &[u8], tar: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, tar).unwrap();
    let payload = gz.finish().unwrap();
    let mut out = neff[..1024].to_vec();
    out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// A member as an observer saw it: name, typeflag, size, data offset, and its body if asked for
/// and shown whole.
type SeenMember = (String, u8, u64, u64, Option<Vec<u8>>);

/// An observer that asks for members' bodies.
struct MemberWatcher {
    /// Which members to ask the bytes of.
    wants: fn(&str) -> bool,
    seen: Vec<SeenMember>,
    open: Option<Vec<u8>>,
}

impl MemberWatcher {
    fn new(wants: fn(&str) -> bool) -> Self {
        Self { wants, seen: Vec::new(), open: None }
    }
}

impl neff::loader::Observer for MemberWatcher {
    fn member(&mut self, m: &neff::loader::MemberReport<'_>) -> bool {
        assert!(self.open.is_none(), "{}: the previous member's body was not ended", m.name);
        self.seen.push((m.name.to_string(), m.typeflag, m.size, m.data_offset, None));
        let wants = (self.wants)(m.name);
        self.open = wants.then(Vec::new);
        wants
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        self.open.as_mut().expect("bytes of a member not asked for").extend_from_slice(bytes);
    }
    fn member_end(&mut self) {
        self.seen.last_mut().unwrap().4 = Some(self.open.take().expect("an end without a member"));
    }
}

/// `bytes` checked (loaded with no device) with `watcher` as the observer, in reads of `chunk`
/// bytes.
fn watch_members(bytes: &[u8], watcher: &mut MemberWatcher, chunk: usize) -> Result<(), neff::Error> {
    let mut sink = |_: &Warning| {};
    let source = common::chunked::Chunked::new(bytes, chunk);
    let mut archive = Archive::open(source, Some(bytes.len() as u64), &OpenOptions::default(), &mut sink)?;
    let mut arena = vec![0u8; TEST_ARENA];
    let storage = Storage { arena: &mut arena, replay: &mut [], deferred: &mut [], whole_names: &mut [] };
    let mut loader = Box::new(Loader::with_storage(storage, LoadOptions::default()));
    loader.check(&mut archive, None, &mut LoadReport::new(), watcher, &mut sink)
}

#[test]
fn the_observer_sees_every_member_and_the_bodies_it_asks_for() {
    // Debug data and producer metadata the loader skips, two copies of info.json, a GNU long
    // name, a `./` name: each is shown, in tar order, with its bytes where asked.
    let Some(bytes) = variant(|list| {
        list.insert(0, ("info.json".into(), br#"{"tool_version": "old"}"#.to_vec()));
        list.push(("debug_info/sg00.dbg".into(), vec![7u8; 3000]));
        list.push((format!("{}/deep.asm", "d".repeat(120)), b"nop\n".to_vec()));
        list.push(("./info.json".into(), br#"{"tool_version": "2.0"}"#.to_vec()));
    }) else {
        return;
    };
    let expected = members(&bytes);
    let tar = common::corpus::inflated(&bytes);
    for chunk in [1, 777, 1 << 16] {
        let mut all = MemberWatcher::new(|_| true);
        watch_members(&bytes, &mut all, chunk).unwrap();
        assert_eq!(all.seen.len(), expected.len());
        for ((name, typeflag, size, offset, body), (want_name, want_body)) in all.seen.iter().zip(&expected) {
            assert_eq!(name, want_name.trim_start_matches("./"));
            assert_eq!((*typeflag, *size), (b'0', want_body.len() as u64), "{name}");
            assert_eq!(body.as_deref(), Some(want_body.as_slice()), "{name}");
            let at = usize::try_from(*offset).unwrap();
            assert_eq!(&tar[at..at + want_body.len()], want_body.as_slice(), "{name}: data offset");
        }
    }
    // Asking for one member: only its bodies are shown, every copy in order (the real NEFF's
    // own between the two added).
    let mut info = MemberWatcher::new(|name| name == "info.json");
    watch_members(&bytes, &mut info, 4096).unwrap();
    let bodies: Vec<_> = info.seen.iter().filter_map(|s| s.4.clone()).collect();
    let copies: Vec<_> =
        expected.iter().filter(|(n, _)| n.trim_start_matches("./") == "info.json").map(|(_, b)| b.clone()).collect();
    assert_eq!(copies.len(), 3);
    assert_eq!(copies.first().unwrap(), br#"{"tool_version": "old"}"#);
    assert_eq!(bodies, copies);
    assert_eq!(info.seen.len(), expected.len());
}
