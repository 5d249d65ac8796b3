//! The generated def.json parser against serde_json on the same generated ~20 MB def.json,
//! same run: MB/s of each and their ratio. serde_json deserializes the same consumed keys into
//! a derive struct (unknown keys ignored), from the whole slice. Ours reads the slice as one
//! buffer, and in 4096-byte chunks as it would from the inflater.
//!
//! `cargo bench --bench manifest`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
use std::collections::HashMap;
use std::time::{Duration, Instant};

use neff::json::Tokenizer;
use neff::manifest::{DefJson, Document, Entry, EntryAt, Visitor};
use serde::Deserialize;

const VARS: usize = 110_000;

/// Counts the streamed vars (what a caller that keeps nothing pays).
#[derive(Default)]
struct CountVars(usize);

impl Visitor for CountVars {
    fn entry(&mut self, entry: Entry<'_>, _at: &EntryAt<'_>) -> Result<(), neff::manifest::DocFault> {
        if let Entry::Var(_) = entry {
            self.0 += 1;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct SVar {
    #[serde(rename = "type")]
    ty: String,
    var_id: u32,
    size: Option<u64>,
    alignment: Option<u64>,
    fabric_path: Option<String>,
    file_name: Option<String>,
    backing_variable_off: Option<u64>,
    backing_buf: Option<String>,
    referenced_var_id: Option<u32>,
    list: Option<Vec<u32>>,
    dtype: Option<String>,
    shape: Option<Vec<u64>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct SQueue {
    #[serde(rename = "type")]
    ty: String,
    owner: Option<String>,
    num_queues: Option<u32>,
    semaphore: Option<u32>,
    semaphore_set: Option<Vec<u32>>,
    fabric_path: Option<String>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct SCarveout {
    #[serde(rename = "type")]
    ty: String,
    offset: u64,
    size: u64,
    #[serde(alias = "start_partition")]
    base_partition: u64,
    #[serde(alias = "num_partitions")]
    partitions: u64,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct SDef {
    name: Option<String>,
    version: Option<String>,
    var: HashMap<String, SVar>,
    dma_queue: Option<HashMap<String, SQueue>>,
    pe: Option<String>,
    act: Option<String>,
    pool: Option<String>,
    dve: Option<String>,
    sp: Option<String>,
    runtime_statebuffer_reservation: Option<Vec<SCarveout>>,
}

#[path = "../tests/common/mod.rs"]
mod common;
use common::chunked::Chunked;

fn generate(n: usize) -> String {
    let mut s = String::from(
        r#"{"name":"definition","version":"0.6","pe":"PE.json","act":"Activation.json","pool":"Pool.json","dve":"DVE.json","sp":"SP.json","dma_queue":{"qPoolDynamic":{"fabric_path":"main","num_queues":16,"owner":"pool","semaphore_set":[24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39],"type":"dynamic"}},"runtime_statebuffer_reservation":[{"base_partition":0,"offset":229368,"partitions":128,"size":8,"type":"evtaccel"}],"var":{"#,
    );
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        let ty = if i == 0 { "output" } else { ["input", "file", "virtual", "tmp-buf"][i % 4] };
        s.push_str(&format!(
            r#""-t125_i{i}_RematSpillSave{i}_sg0000":{{"backing_variable_off":{},"ops":[],"size":{},"type":"{ty}","var_id":{i}"#,
            i * 524_288,
            524_288 + i
        ));
        if i % 3 == 0 {
            s.push_str(&format!(
                r#","alignment":32768,"fabric_path":"main","file_name":"value_sg0000_identity_{i}_CRSM.npy""#
            ));
        }
        if i % 5 == 0 {
            s.push_str(
                r##","dtype":"float16","shape":[128,256],"#transfer-type":"weight","internal_shape":[1,1,128,256]"##,
            );
        }
        s.push('}');
    }
    s.push_str(r#"},"cc_streams":{"num_streams":0}}"#);
    s
}

fn best(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(|| {
            let doc = generate(VARS - 1000);
            let mb = doc.len() as f64 / 1e6;
            let mut big = DefJson::default();
            let mut scratch = vec![0; neff::manifest::STRING_SCRATCH];
            let mut tok = Tokenizer::new(&mut scratch, neff::manifest::DEPTH_LIMIT);
            let mut count = CountVars::default();
            let runs = 7;

            let ours_slice = best(runs, || {
                count.0 = 0;
                let sink = &mut neff::error::IgnoreWarnings;
                big.parse_into(&mut tok, &mut doc.as_bytes(), "sg00/def.json", sink, &mut count).unwrap();
            });
            assert_eq!(count.0, VARS - 1000);
            let ours_chunked = best(runs, || {
                let mut src = Chunked::new(doc.as_bytes(), 4096);
                big.parse_into(&mut tok, &mut src, "sg00/def.json", &mut neff::error::IgnoreWarnings, &mut count)
                    .unwrap();
            });
            let skip_only = best(runs, || {
                tok.reset();
                let mut src = doc.as_bytes();
                assert!(tok.skip_value(&mut src).unwrap());
            });
            let serde = best(runs, || {
                let d: SDef = serde_json::from_slice(doc.as_bytes()).unwrap();
                assert_eq!(d.var.len(), VARS - 1000);
            });
            let rate = |t: Duration| mb / t.as_secs_f64();
            println!("def.json: {:.1} MB, {} vars (best of {runs})", mb, VARS - 1000);
            println!(
                "  neff (generated parser, whole slice)  {:8.1} MB/s  {:8.2} ms",
                rate(ours_slice),
                ours_slice.as_secs_f64() * 1e3
            );
            println!(
                "  neff (generated parser, 4096 chunks)  {:8.1} MB/s  {:8.2} ms",
                rate(ours_chunked),
                ours_chunked.as_secs_f64() * 1e3
            );
            println!(
                "  tokenizer alone (skip_value)          {:8.1} MB/s  {:8.2} ms",
                rate(skip_only),
                skip_only.as_secs_f64() * 1e3
            );
            println!(
                "  serde_json (derive, consumed keys)    {:8.1} MB/s  {:8.2} ms",
                rate(serde),
                serde.as_secs_f64() * 1e3
            );
            println!(
                "  ratio neff/serde_json: slice {:.2}x, chunked {:.2}x",
                rate(ours_slice) / rate(serde),
                rate(ours_chunked) / rate(serde)
            );
        })
        .unwrap()
        .join()
        .unwrap();
}
