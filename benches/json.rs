//! JSON tokenizer throughput on a ~20 MB def.json-like document, against `serde_json` in the
//! same run.
//!
//! The document mimics a big model's `sgNN/def.json` as neuronx-cc writes it (keys sorted,
//! 4-space indentation): engine file names, a `dma_queue` object of queues with semaphore
//! lists, and a `var` object of 20,000+ variables, each with the keys a loader consumes
//! (`type`, `var_id`, `size`) among many it does not (`ops` lists of small objects, shapes,
//! dtype, file names, comments), some names needing escapes.
//!
//! Measured, best of several runs each:
//! - (a) the tokenizer walking every event (strings and numbers copied into its buffers);
//! - (b) the tokenizer reading the consumed keys by hand (per var: name, `type`, `var_id`,
//!   `size`; everything else skipped with `skip_value`), standing in for the generated parser;
//! - (b32k) the same over a reader handing out 32 KiB chunks, as the inflate ring does;
//! - (c) `serde_json::from_slice` into a `#[derive(Deserialize)]` struct holding the same keys
//!   (serde ignores the rest).
//!
//! Then, when `../shared` has it, the same tokenizer on the JSON members of a real training
//! NEFF beside `serde_json` on the same bytes ([`real_manifests`]), and beside a floor for a
//! reader that finds the structure in one pass and reads by position (`json/floor.rs`).
//!
//! Run with `cargo bench --bench json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use embedded_io::{BufRead, ErrorType, Read};
use neff::json::{Event, Tokenizer};
use serde::Deserialize;
use serde_json::{json, Map, Value};

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "json/floor.rs"]
mod floor;

const VARS: usize = 21_000;
const RUNS: usize = 15;

/// xorshift64*: the same document every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const TYPES: [&str; 7] = ["virtual", "input", "output", "file", "tmp-buf", "pointer", "state-buffer"];
const ENGINES: [&str; 5] = ["pe", "act", "pool", "dve", "sp"];

fn shape(rng: &mut Rng) -> Value {
    let dims = 1 + rng.below(4);
    Value::Array((0..dims).map(|_| json!(1u64 << rng.below(12))).collect())
}

fn var(rng: &mut Rng, id: usize) -> (String, Value) {
    let layer = id / 40;
    let mut name = match rng.below(20) {
        0 => format!("layer.{layer}/attn/\"q_proj\"\\{id}"),
        1 => format!("décodeur_{layer}_tensor_{id}"),
        2 => format!("tab\there_{id}\u{1}"),
        _ => format!("-t{}_i{}_RematSpillSave{}_sg0000", 100 + layer, id % 40, id),
    };
    if id == 0 {
        name = "SB".to_owned();
    }
    let ty = if id == 0 { "state-buffer" } else { *rng.pick(&TYPES[..6]) };
    let mut v = Map::new();
    v.insert("type".into(), json!(ty));
    v.insert("var_id".into(), json!(id));
    if ty != "state-buffer" {
        v.insert("size".into(), json!(rng.below(1 << 34)));
    }
    if ty == "virtual" {
        v.insert("backing_variable_off".into(), json!(rng.below(1 << 30) * 64));
        v.insert("backing_buf".into(), json!(*rng.pick(&["main", "sharded"])));
    }
    if ty == "file" {
        v.insert("file_name".into(), json!(format!("value_sg0000_identity_{id}_CRSM.npy")));
        v.insert("alignment".into(), json!(32768));
    }
    v.insert("fabric_path".into(), json!(*rng.pick(&["main", "alt"])));
    v.insert("dtype".into(), json!(*rng.pick(&["float16", "bfloat16", "float32", "int32", "float8_e4m3"])));
    v.insert("shape".into(), shape(rng));
    v.insert("internal_shape".into(), shape(rng));
    v.insert("framework_shape".into(), shape(rng));
    v.insert("#transfer-type".into(), json!(*rng.pick(&["dma", "none", "cce"])));
    v.insert("element_size".into(), json!(*rng.pick(&[1, 2, 4])));
    let ops = (0..rng.below(4))
        .map(|_| {
            json!({
                "engine": *rng.pick(&ENGINES),
                "instr_idx": rng.below(1 << 20),
                "access": *rng.pick(&["read", "write", "read-write"]),
                "offset": rng.below(1 << 24),
                "scale": (rng.below(1000) as f64) / 128.0,
            })
        })
        .collect();
    v.insert("ops".into(), Value::Array(ops));
    (name, Value::Object(v))
}

fn document() -> Vec<u8> {
    let mut rng = Rng(0x005E_ED0F_DEF0_1234);
    let mut root = Map::new();
    root.insert("#rank_world_size".into(), json!(0));
    for engine in ENGINES {
        root.insert(engine.into(), json!(format!("{engine}.json")));
        root.insert(format!("{engine}_instr"), json!(format!("{engine}.bin")));
        root.insert(format!("{engine}_dbg"), json!([format!("debug_info_backend_{engine}.dbg")]));
    }
    let mut queues = Map::new();
    for q in 0..64 {
        let base = 8 + 16 * q;
        queues.insert(
            format!("q{}Dynamic{q}", ENGINES[q % 5]),
            json!({
                "fabric_path": "main",
                "num_queues": 16,
                "owner": ENGINES[q % 5],
                "semaphore_set": (base..base + 16).collect::<Vec<_>>(),
                "type": "dynamic",
            }),
        );
    }
    root.insert("dma_queue".into(), Value::Object(queues));
    root.insert(
        "fp8_conversion_config".into(),
        json!({"emax_fp8_e4m3": 8, "emax_fp8_e5m2": 15, "fp8_range_extension": true, "ocp_sat": true}),
    );
    root.insert("name".into(), json!("sg00"));
    root.insert("runtime_semaphore_count".into(), json!(1040));
    let vars: Map<String, Value> = (0..VARS).map(|id| var(&mut rng, id)).collect();
    root.insert("var".into(), Value::Object(vars));
    root.insert("version".into(), json!("2.0"));

    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(&Value::Object(root), &mut ser).unwrap();
    out.push(b'\n');
    out
}

/// The var types the loader maps (schema discriminator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum VarType {
    StateBuffer,
    Input,
    Output,
    File,
    TmpBuf,
    Virtual,
    Pointer,
    DgeTable,
}

impl VarType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "state-buffer" => Self::StateBuffer,
            "input" => Self::Input,
            "output" => Self::Output,
            "file" => Self::File,
            "tmp-buf" => Self::TmpBuf,
            "virtual" => Self::Virtual,
            "pointer" => Self::Pointer,
            "dge-table" => Self::DgeTable,
            _ => return None,
        })
    }
}

#[derive(Debug, Deserialize)]
struct SerdeVar {
    #[serde(rename = "type")]
    ty: VarType,
    var_id: u64,
    size: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct SerdeDef {
    var: HashMap<String, SerdeVar>,
}

/// What (b) collects per var, the way a fixed-capacity table would hold it.
struct VarRow {
    name: heapless::String<96>,
    ty: VarType,
    var_id: u64,
    size: Option<u64>,
}

/// (a): every event, touching its text.
fn walk_all<R: BufRead>(tok: &mut Tokenizer<'_>, src: &mut R) -> u64 {
    tok.reset();
    let mut checksum = 0u64;
    loop {
        match tok.next(src).unwrap() {
            Event::End => return checksum,
            Event::Key(s) | Event::Str(s) => checksum += s.len() as u64,
            Event::Num(n) => checksum += n.text().len() as u64,
            _ => checksum += 1,
        }
    }
}

/// (b): the consumed keys by hand, as the generated parser will read them.
fn consumed_keys<R: BufRead>(tok: &mut Tokenizer<'_>, src: &mut R, rows: &mut Vec<VarRow>) {
    tok.reset();
    rows.clear();
    tok.begin_object(src).unwrap();
    while let Some(key) = tok.next_key(src).unwrap() {
        if key != "var" {
            tok.skip_value(src).unwrap();
            continue;
        }
        tok.begin_object(src).unwrap();
        while let Some(name) = tok.next_key(src).unwrap() {
            let name = heapless::String::try_from(name).expect("var name capacity");
            let (mut ty, mut var_id, mut size) = (None, None, None);
            tok.begin_object(src).unwrap();
            while let Some(field) = tok.next_key(src).unwrap() {
                match field {
                    "type" => ty = Some(VarType::parse(tok.read_str(src).unwrap()).expect("known type")),
                    "var_id" => var_id = Some(tok.read_u64(src).unwrap()),
                    "size" => size = Some(tok.read_u64(src).unwrap()),
                    _ => {
                        tok.skip_value(src).unwrap();
                    }
                }
            }
            rows.push(VarRow { name, ty: ty.expect("type"), var_id: var_id.expect("var_id"), size });
        }
    }
    assert_eq!(tok.next(src).unwrap(), Event::End);
}

/// A reader handing out `CHUNK`-byte chunks on fixed boundaries, like the inflate ring.
struct Chunked<'a, const CHUNK: usize> {
    data: &'a [u8],
    pos: usize,
}

impl<const CHUNK: usize> ErrorType for Chunked<'_, CHUNK> {
    type Error = core::convert::Infallible;
}

impl<const CHUNK: usize> Read for Chunked<'_, CHUNK> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let chunk = self.fill_buf()?;
        let n = chunk.len().min(buf.len());
        buf[..n].copy_from_slice(&chunk[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<const CHUNK: usize> BufRead for Chunked<'_, CHUNK> {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        let end = ((self.pos / CHUNK + 1) * CHUNK).min(self.data.len());
        Ok(&self.data[self.pos..end])
    }

    fn consume(&mut self, amount: usize) {
        self.pos += amount;
    }
}

/// Runs every case `RUNS` times, round-robin so that a burst of load elsewhere hits all cases
/// alike, and keeps each case's best time.
fn best_times(cases: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut best = vec![Duration::MAX; cases.len()];
    for _ in 0..RUNS {
        for (case, best) in cases.iter_mut().zip(&mut best) {
            let start = Instant::now();
            case();
            *best = (*best).min(start.elapsed());
        }
    }
    best
}

fn main() {
    let doc = document();
    let mb = doc.len() as f64 / 1e6;
    println!("document: {:.1} MB, {VARS} vars", mb);

    let mut tok_scratch = [0; 256];

    let mut tok = Tokenizer::new(&mut tok_scratch, 128);
    let mut rows = Vec::with_capacity(VARS);

    // Both readers must agree with serde_json before anything is timed.
    let reference: SerdeDef = serde_json::from_slice(&doc).unwrap();
    consumed_keys(&mut tok, &mut &doc[..], &mut rows);
    assert_eq!(rows.len(), reference.var.len());
    for row in &rows {
        let theirs = &reference.var[row.name.as_str()];
        assert_eq!((row.ty, row.var_id, row.size), (theirs.ty, theirs.var_id, theirs.size), "{}", row.name);
    }

    let doc_ref = &doc;
    let mut walk = || {
        black_box(walk_all(&mut tok, &mut black_box(&doc_ref[..])));
    };
    let mut tok_b_scratch = [0; 256];
    let mut tok_b = Tokenizer::new(&mut tok_b_scratch, 128);
    let mut consumed = || {
        consumed_keys(&mut tok_b, &mut black_box(&doc_ref[..]), &mut rows);
        black_box(&rows);
    };
    let mut tok_b32k_scratch = [0; 256];
    let mut tok_b32k = Tokenizer::new(&mut tok_b32k_scratch, 128);
    let mut rows_b32k = Vec::with_capacity(VARS);
    let mut consumed_32k = || {
        consumed_keys(&mut tok_b32k, &mut Chunked::<32768> { data: black_box(doc_ref), pos: 0 }, &mut rows_b32k);
        black_box(&rows_b32k);
    };
    let mut serde = || {
        let def: SerdeDef = serde_json::from_slice(black_box(doc_ref)).unwrap();
        black_box(def);
    };
    let times = best_times(&mut [&mut walk, &mut consumed, &mut consumed_32k, &mut serde]);
    let [a, b, b32k, c] = times[..] else { unreachable!() };

    let rate = |d: Duration| mb / d.as_secs_f64();
    println!("(a)    tokenizer, all events:            {:7.1} MB/s  ({:.1} ms)", rate(a), a.as_secs_f64() * 1e3);
    println!("(b)    tokenizer, consumed keys:         {:7.1} MB/s  ({:.1} ms)", rate(b), b.as_secs_f64() * 1e3);
    println!("(b32k) consumed keys, 32 KiB chunks:     {:7.1} MB/s  ({:.1} ms)", rate(b32k), b32k.as_secs_f64() * 1e3);
    println!("(c)    serde_json::from_slice (derive):  {:7.1} MB/s  ({:.1} ms)", rate(c), c.as_secs_f64() * 1e3);
    println!("ratio (a)/(c) = {:.2}", rate(a) / rate(c));
    println!("ratio (b)/(c) = {:.2}", rate(b) / rate(c));
    println!("ratio (b32k)/(c) = {:.2}", rate(b32k) / rate(c));
    real_manifests();
}

/// The tokens the tokenizer gives `doc` (its `End` not counted), one byte each as
/// [`floor::kinds`] writes them, or `None` where it refuses `doc`.
fn tokenizer_kinds(tok: &mut Tokenizer<'_>, doc: &[u8]) -> Option<Vec<u8>> {
    tok.reset();
    let mut src = doc;
    let mut kinds = Vec::new();
    loop {
        kinds.push(match tok.next(&mut src).ok()? {
            Event::End => return Some(kinds),
            Event::BeginObject => b'{',
            Event::EndObject => b'}',
            Event::BeginArray => b'[',
            Event::EndArray => b']',
            Event::Key(_) => b'k',
            Event::Str(_) => b's',
            Event::Num(_) => b'n',
            Event::Bool(_) | Event::Null => b'l',
        });
    }
}

/// The floor accepts what the tokenizer accepts, with the same tokens, on every
/// JSONTestSuite parsing case (`../shared/fixtures/peers/json`; skipped without it), so that
/// its speed is that of a reader checking as much.
fn floor_agrees_with_tokenizer() {
    let Some(dir) = common::fixture("peers/json/test_parsing") else { return };
    let mut scratch = vec![0; 1 << 16];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    let mut tape = Vec::new();
    let (mut cases, mut accepted) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let doc = std::fs::read(&path).unwrap();
        let ours = tokenizer_kinds(&mut tok, &doc);
        let floor = floor::scan(&doc, 128, &mut tape).ok().map(|()| floor::kinds(&doc, &tape));
        assert_eq!(floor, ours, "{}: the floor and the tokenizer disagree", path.display());
        cases += 1;
        accepted += usize::from(ours.is_some());
    }
    assert!(cases > 300, "{cases} JSONTestSuite cases in {}", dir.display());
    println!("floor against JSONTestSuite: agrees with the tokenizer on {cases} cases ({accepted} accepted)");
}

/// The real training NEFF under `../shared/fixtures` (skipped without it, a failure under
/// `CI=true`: [`common::fixture`]): its 5.6 MB of JSON members.
const TRAINING_NEFF: &str = "training-cache/neuronxcc-2.14.227.0+2d4f85be/\
                             MODULE_14041361676943519958+ade7b014/model.neff";

/// The tokenizer alone on the manifests of a real training NEFF (every `.json` member, each
/// its own document): (m) every event, in 32 KiB chunks as the inflate window gives them,
/// consuming in runs as the manifest readers do, beside (s) `serde_json` validating the same
/// bytes (`IgnoredAny`) and (v) building a `serde_json::Value`.
fn real_manifests() {
    let Some(neff) = common::fixture_bytes(TRAINING_NEFF) else { return };
    let mut tar_bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&neff[1024..]), &mut tar_bytes).unwrap();
    let docs: Vec<(String, Vec<u8>)> = tar::Archive::new(&tar_bytes[..])
        .entries()
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| e.path().unwrap().to_string_lossy().ends_with(".json"))
        .map(|mut e| {
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut body).unwrap();
            (name, body)
        })
        .collect();
    let bytes: usize = docs.iter().map(|(_, d)| d.len()).sum();
    let mb = bytes as f64 / 1e6;
    println!("real manifests: {} JSON members of the training NEFF, {mb:.1} MB", docs.len());
    let mut scratch = [0; 4096];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    // The floor must read these bytes as the tokenizer does before it is timed.
    floor_agrees_with_tokenizer();
    let mut tape = Vec::new();
    for (name, doc) in &docs {
        floor::scan(doc, 128, &mut tape).unwrap();
        assert!(
            Some(floor::kinds(doc, &tape)) == tokenizer_kinds(&mut tok, doc),
            "{name}: the floor and the tokenizer disagree"
        );
    }
    let mut tokenize = || {
        for (_, doc) in &docs {
            tok.consume_in_runs(true);
            black_box(walk_all(&mut tok, &mut Chunked::<32768> { data: black_box(doc), pos: 0 }));
        }
    };
    let mut ignored = || {
        for (_, doc) in &docs {
            black_box(serde_json::from_slice::<serde::de::IgnoredAny>(black_box(doc)).unwrap());
        }
    };
    let mut value = || {
        for (_, doc) in &docs {
            black_box(serde_json::from_slice::<Value>(black_box(doc)).unwrap());
        }
    };
    let mut scan = || {
        for (_, doc) in &docs {
            floor::scan(black_box(doc), 128, &mut tape).unwrap();
            black_box(&tape);
        }
    };
    let mut tape_r = Vec::new();
    let mut scan_read = || {
        for (_, doc) in &docs {
            floor::scan(black_box(doc), 128, &mut tape_r).unwrap();
            black_box(floor::read_by_position(doc, &tape_r));
        }
    };
    let times = best_times(&mut [&mut tokenize, &mut ignored, &mut value, &mut scan, &mut scan_read]);
    let [m, i, v, f, fr] = times[..] else { unreachable!() };
    let rate = |d: Duration| mb / d.as_secs_f64();
    println!("(m)    tokenizer, all events, 32 KiB:    {:7.1} MB/s  ({:.1} ms)", rate(m), m.as_secs_f64() * 1e3);
    println!("(s)    serde_json, IgnoredAny:           {:7.1} MB/s  ({:.1} ms)", rate(i), i.as_secs_f64() * 1e3);
    println!("(v)    serde_json, Value:                {:7.1} MB/s  ({:.1} ms)", rate(v), v.as_secs_f64() * 1e3);
    println!("(f)    floor: one pass, token tape:      {:7.1} MB/s  ({:.1} ms)", rate(f), f.as_secs_f64() * 1e3);
    println!("(fr)   floor: tape, then read by place:  {:7.1} MB/s  ({:.1} ms)", rate(fr), fr.as_secs_f64() * 1e3);
    println!("ratio (m)/(s) = {:.2}, (m)/(v) = {:.2}", rate(m) / rate(i), rate(m) / rate(v));
    println!(
        "ratio (m)/(f) = {:.2}, (m)/(fr) = {:.2}, (fr)/(s) = {:.2}",
        rate(m) / rate(f),
        rate(m) / rate(fr),
        rate(fr) / rate(i)
    );
}
