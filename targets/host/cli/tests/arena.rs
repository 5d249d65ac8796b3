//! The arena a load needs, as `docs/firmware.md` ("The arena a model needs") states it: what the chain's index
//! keeps (a record and a name per manifest, weight, other payload and named member; and each
//! payload's landing, unless the device lends a notebook) plus the larger scratch of two
//! moments, a `def.json`'s DMA names while it is read and `neff.json`'s I/O join. The formula
//! is worked out here from the members of generated NEFFs of several sizes, in tar order,
//! independently of the loader, and must equal the peak the loader reports
//! (`LoadReport::arena_peak`) byte for byte, with a notebook and without.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, clippy::result_large_err)]

mod support;

use std::collections::{BTreeMap, BTreeSet};

use neff::archive::{Archive, OpenOptions};
use neff::arena::Arena;
use neff::json::Tokenizer;
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver};
use neff::manifest::{Arch, Document, Entry, EntryAt, IoJoin, NeffJson};
use neff::sim::SimDevice;
use neff_host::scale::ScaleSpec;
use serde_json::Value;

/// Bytes of the records, as `docs/firmware.md` gives them: each record also takes a 4-byte link.
const MANIFEST: u64 = 4 + 25;
const DEF_EXT: u64 = 4 + 114;
const GRAPH: u64 = 4 + 18;
const KELF_NAME: u64 = 4 + 9;
const NAME: u64 = 4 + 9;
const WEIGHT: u64 = 4 + 11;
const PAYLOAD: u64 = 4 + 13;
/// A definition's table of its file variables, from `neff::loader`'s `TABLE_MIN` of them.
const VAR_TABLE: u64 = 4 + 9;
const TABLE_MIN: u64 = 256;

/// Bytes of a definition's file variables' table, for `count` of them: a power of two of
/// 4-byte slots, at most two thirds full, and its record.
fn var_table(count: u64) -> u64 {
    if count < TABLE_MIN {
        0
    } else {
        VAR_TABLE + (4 << (64 - (count + count / 2).leading_zeros()))
    }
}

/// What the loader keeps of a payload that landed (`neff::hal::LANDING_NOTE`): in the device's
/// notebook when it lends one, else in the arena.
const LANDING: u64 = 28;
/// A `def.json` var or queue set while it is read (spec §8.2's DMA names).
const DMA_NAME: u64 = 8;

/// The directory of a member path.
fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn joined(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn strings<'v>(v: &'v Value, key: &str) -> Vec<&'v str> {
    match &v[key] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The peak of `neff.json`'s I/O join on its own, measured with the core's join (its bytes are
/// the manifest layer's business; the formula adds them as they are).
fn join_peak(neff_json: &[u8]) -> u64 {
    let mut buf = vec![0u8; 1 << 24];
    let mut arena = Arena::new(&mut buf);
    let mut join = IoJoin::new(&arena);
    let mut scratch = vec![0u8; neff::manifest::STRING_SCRATCH];
    let mut tok = Tokenizer::new(&mut scratch, neff::manifest::DEPTH_LIMIT);
    let mut visit = |e: Entry<'_>, at: &EntryAt<'_>| join.see(&mut arena, &e).map_err(|k| at.error(k));
    NeffJson::parse(&mut tok, &mut &neff_json[..], "neff.json", &mut |_: &neff::Warning| {}, &mut visit).unwrap();
    join.finish(&mut arena, "neff.json", 0, &mut |_: &neff::Warning| {}, &mut |_| {}).unwrap();
    arena.peak() as u64
}

/// The formula, member by member in tar order: the index grows by each member's records and
/// names (and landings, with no `notebook`); the peak is the largest of the index and the two
/// scratch moments.
fn formula(members: &[(String, Vec<u8>)], notebook: bool) -> u64 {
    let landing = if notebook { 0 } else { LANDING };
    let mut index = 0u64;
    let mut peak = 0u64;
    // Payload records whose slot a later one takes, and the staged copies holding one.
    let mut free_slots = 0u64;
    let mut staged_copies: Vec<String> = Vec::new();
    let payload = |index: &mut u64, free_slots: &mut u64| {
        if *free_slots > 0 {
            *free_slots -= 1;
        } else {
            *index += PAYLOAD;
        }
    };
    // Landings likewise: a staged copy's is given back with its record, and taken again.
    let mut free_landings = 0u64;
    let land = |index: &mut u64, free_landings: &mut u64| {
        if *free_landings > 0 {
            *free_landings -= 1;
        } else {
            *index += landing;
        }
    };
    // What the manifests read so far name.
    let mut kelfs: BTreeSet<String> = BTreeSet::new();
    let mut definitions: BTreeSet<String> = BTreeSet::new();
    let mut engines: BTreeSet<String> = BTreeSet::new();
    let mut act_sets: BTreeSet<String> = BTreeSet::new();
    // Engine JSONs read, by member: the activation sets each names.
    let mut sets_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut defs_read: BTreeSet<String> = BTreeSet::new();
    for (name, bytes) in members {
        let dir = dir_of(name);
        let def_read = defs_read.contains(&joined(dir, "def.json"));
        if !name.ends_with(".json") {
            // A weight lands in its variable when its definition came first; any other payload
            // (and a weight before its definition) is a payload record and its path. One that
            // nothing names yet and that opens a JSON object is read both ways (§15.18): a
            // manifest record too, whose path the payload record shares.
            let opens_object = bytes.iter().find(|b| !b" \t\r\n".contains(b)) == Some(&b'{');
            if opens_object && !def_read {
                index += MANIFEST;
            }
            let weight = name.ends_with(".npy") && def_read;
            if !weight {
                payload(&mut index, &mut free_slots);
                index += name.len() as u64;
            }
            land(&mut index, &mut free_landings);
            peak = peak.max(index);
            continue;
        }
        let doc: Value = serde_json::from_slice(bytes).unwrap();
        let named = name == "neff.json"
            || kelfs.contains(name)
            || definitions.contains(name)
            || engines.contains(name)
            || act_sets.contains(name);
        index += MANIFEST + name.len() as u64;
        if !named {
            // Read both ways: a staged copy too, whose record shares the path.
            payload(&mut index, &mut free_slots);
            land(&mut index, &mut free_landings);
            staged_copies.push(name.clone());
        }
        if name == "neff.json" {
            for node in doc["nodes"].as_array().unwrap() {
                if let Some(k) = node["attrs"]["kelf"].as_str() {
                    index += KELF_NAME + k.len() as u64;
                    kelfs.insert(k.to_owned());
                }
            }
            peak = peak.max(index + join_peak(bytes));
        } else if dir.is_empty() {
            for g in doc["graphs"].as_array().unwrap() {
                let (gname, definition) = (g["name"].as_str().unwrap(), g["definition"].as_str().unwrap());
                index += GRAPH + gname.len() as u64 + definition.len() as u64;
                definitions.insert(definition.to_owned());
            }
        } else if name.ends_with("/def.json") {
            let vars = doc["var"].as_object().unwrap();
            let mut weights = 0;
            for v in vars.values().filter(|v| v["type"] == "file") {
                index += WEIGHT + v["file_name"].as_str().unwrap().len() as u64;
                weights += 1;
            }
            index += var_table(weights);
            for lib in doc["ucode_lib"].as_array().into_iter().flatten() {
                index += NAME + lib["library"].as_str().unwrap().len() as u64;
            }
            index += DEF_EXT;
            let dma_names = vars.len() + doc["dma_queue"].as_object().map_or(0, |q| q.len());
            peak = peak.max(index + DMA_NAME * dma_names as u64);
            for key in ["pe", "act", "pool", "dve", "sp", "q7"] {
                for n in strings(&doc, key).into_iter().chain(strings(&doc, &format!("{key}_instr"))) {
                    index += n.len() as u64;
                }
                for n in strings(&doc, key) {
                    let json = joined(dir, n);
                    // The activation sets of an engine JSON read before its definition.
                    for set in sets_of.get(&json).into_iter().flatten() {
                        act_sets.insert(joined(dir, &format!("{set}.json")));
                    }
                    engines.insert(json);
                }
            }
            defs_read.insert(name.clone());
        } else {
            // An engine JSON or an activation set JSON.
            let mut sets = Vec::new();
            for set in strings(&doc, "activation_function_sets") {
                index += NAME + set.len() as u64;
                sets.push(set.to_owned());
                if engines.contains(name) {
                    act_sets.insert(joined(dir, &format!("{set}.json")));
                }
            }
            for t in doc["dve_tables"].as_array().into_iter().flatten() {
                for table in t.as_object().unwrap().values().filter_map(Value::as_str) {
                    index += NAME + table.len() as u64;
                }
            }
            for key in ["bkt_bin", "ctl_bin"] {
                for table in strings(&doc, key) {
                    index += NAME + table.len() as u64;
                }
            }
            index += strings(&doc, "instr").iter().map(|i| i.len() as u64).sum::<u64>();
            sets_of.insert(name.clone(), sets);
        }
        // The staged copies of members the chain now names as manifests give their slots.
        let all_named = |m: &String| {
            m == "neff.json"
                || kelfs.contains(m)
                || definitions.contains(m)
                || engines.contains(m)
                || act_sets.contains(m)
        };
        let before = staged_copies.len();
        staged_copies.retain(|m| !all_named(m));
        free_slots += (before - staged_copies.len()) as u64;
        free_landings += (before - staged_copies.len()) as u64;
        peak = peak.max(index);
    }
    peak
}

/// The peak the loader reports, loading onto a digest-only device as the firmware does (no
/// replay store), with a notebook on the device or without; and the notebook bytes noted.
fn measured(bytes: &[u8], notebook: bool) -> (u64, usize) {
    let mut archive =
        Archive::<&[u8]>::open(bytes, None, &OpenOptions::default(), &mut |_: &neff::Warning| {}).unwrap();
    let mut arena = vec![0u8; 1 << 22];
    let mut notes = vec![0u8; if notebook { 1 << 20 } else { 0 }];
    let mut loader = Loader::new(&mut arena, LoadOptions::default());
    let mut report = LoadReport::new();
    let mut dev: Box<SimDevice<'_, 8192>> =
        Box::new(SimDevice::digest_only(1 << 40, Arch::Cayman).with_notebook(&mut notes));
    loader.load(&mut archive, &mut *dev, &mut report, &mut NoObserver, &mut |_: &neff::Warning| {}).unwrap();
    (report.arena_peak, dev.noted_bytes())
}

#[test]
fn the_readme_formula_is_the_measured_arena_peak() {
    let cases: &[(&str, &[&str])] = &[
        ("small", &[]),
        ("small", &["weights=0"]),
        ("small", &["weights=40", "subgraphs=4"]),
        ("firmware", &[]),
        ("firmware", &["weights=0"]),
        ("firmware", &["weights=1000"]),
        ("firmware", &["inputs=2", "outputs=1"]),
        ("subgraphs", &[]),
        ("names", &[]),
        ("queues", &[]),
        ("act-sets", &[]),
    ];
    let mut lines = Vec::new();
    for (preset, overrides) in cases {
        let mut spec = ScaleSpec::preset(preset).unwrap();
        for o in *overrides {
            spec.set(o).unwrap();
        }
        let bytes = spec.build().unwrap();
        let members = support::members_of(&bytes);
        let (want, (got, _)) = (formula(&members, false), measured(&bytes, false));
        lines.push(format!("{preset} {overrides:?}: formula {want}, measured {got}"));
        assert_eq!(want, got, "{}", lines.join("\n"));
        // With a notebook: a landing a payload there, none in the arena.
        let (want, (got, noted)) = (formula(&members, true), measured(&bytes, true));
        let payloads = members.iter().filter(|(n, _)| !n.ends_with(".json")).count();
        lines.push(format!("  with a notebook: formula {want}, measured {got}; {noted} bytes noted"));
        assert_eq!(want, got, "{}", lines.join("\n"));
        assert!(noted as u64 >= LANDING * payloads as u64, "{}", lines.join("\n"));
    }
    println!("{}", lines.join("\n"));
}
