//! The generated def.json parser against serde_json on generated documents (a 20,000-var
//! def.json with escaped names among them), fed in chunks of 1, 7 and 4096 bytes; and a
//! 100,000-level nesting inside an unconsumed key, which must be a depth error on a small stack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, clippy::result_large_err)]
use neff::json::{JsonError, Tokenizer};
use neff::manifest::{DefJson, Document, Entry, EntryAt, NoVisitor};
use neff::ErrorKind;
use serde_json::Value;

mod common;
use common::chunked::Chunked;

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A generated def.json with `n` vars (ids a permutation of 0..n), escaped names, optional
/// keys present or not, and unconsumed keys of every JSON type in between.
pub fn generate_def(n: usize, seed: u64) -> String {
    let mut rng = Rng(seed | 1);
    let types = ["input", "output", "file", "tmp-buf", "virtual", "state-buffer", "dge-table", "pointer"];
    let mut vars = Vec::with_capacity(n);
    for i in 0..n {
        let id = (i as u64 * 7919) % n as u64;
        let ty = if i == 0 { "output" } else { types[rng.below(types.len() as u64) as usize] };
        let name = match rng.below(4) {
            0 => format!("v{i}"),
            1 => format!("v\\\"{i}\\\\x"),
            2 => format!("v\\u00e9\\n{i}"),
            _ => format!("-t125_i{i}_RematSpillSave\\/{i}_sg0000"),
        };
        let mut fields = vec![format!(r#""type":"{ty}""#), format!(r#""var_id":{id}"#), r#""ops":[]"#.to_string()];
        // Types that occupy device memory need a size (a pointer's is 8); the others may have one.
        let needs_size = !matches!(ty, "state-buffer" | "dge-table");
        if ty == "pointer" {
            fields.push(r#""size":8"#.to_string());
        } else if needs_size || rng.below(3) > 0 {
            fields.push(format!(r#""size":{}"#, rng.next() >> rng.below(64)));
        }
        if rng.below(4) == 0 {
            fields.push(format!(r#""alignment":{}"#, 1u64 << rng.below(20)));
        }
        if rng.below(4) == 0 {
            fields.push(format!(r#""file_name":"value_{i}_CRSM.npy""#));
        }
        if rng.below(4) == 0 {
            fields.push(format!(r#""backing_variable_off":{}"#, rng.next() >> 20));
        }
        if rng.below(8) == 0 {
            let list: Vec<String> = (0..rng.below(8)).map(|_| rng.below(1000).to_string()).collect();
            fields.push(format!(r#""list":[{}]"#, list.join(",")));
        }
        if rng.below(8) == 0 {
            fields.push(r#""fabric_path":"main","dtype":"float16","shape":[128,256]"#.to_string());
        }
        if rng.below(6) == 0 {
            fields.push(r##""#transfer-type":"input","internal_shape":[1,1,1,32],"junk":{"a":[1.5e3,-2,true,null,"\ud83d\ude00"]}"##.to_string());
        }
        // Keys in a shuffled order.
        for k in (1..fields.len()).rev() {
            fields.swap(k, rng.below(k as u64 + 1) as usize);
        }
        vars.push(format!(r#""{name}":{{{}}}"#, fields.join(",")));
    }
    format!(
        r#"{{"name":"definition","version":"0.6","pe":"PE.json","act":"Activation.json","pool":"Pool.json","dve":"DVE.json","sp":"SP.json",
"dma_queue":{{"qPoolDynamic":{{"dynamic_dma":{{"SB_scratch_partition_offset":0,"SB_scratch_partition_size":16384}},"fabric_path":"main","num_queues":16,"owner":"pool","semaphore_set":[24,25,26],"type":"dynamic"}}}},
"neff_features":["neff_feature_vnc"],"debug_info":{{}},
"var":{{{}}},
"runtime_statebuffer_reservation":[{{"base_partition":0,"offset":229368,"partitions":128,"size":8,"type":"evtaccel"}}],
"cc_streams":{{"num_streams":0}}}}"#,
        vars.join(",\n")
    )
}

/// The consumed var keys of one var, as serde_json sees them.
#[derive(Debug, PartialEq)]
struct VarRow {
    name: String,
    ty: String,
    var_id: u32,
    size: Option<u64>,
    alignment: Option<u64>,
    file_name: Option<String>,
    backing_variable_off: Option<u64>,
    list: Option<Vec<u32>>,
    fabric_path: Option<String>,
    dtype: Option<String>,
    shape: Option<Vec<u64>>,
}

fn expected(doc: &str) -> Vec<VarRow> {
    let v: Value = serde_json::from_str(doc).unwrap();
    let mut rows: Vec<VarRow> = v["var"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, e)| VarRow {
            name: name.clone(),
            ty: e["type"].as_str().unwrap().to_string(),
            var_id: e["var_id"].as_u64().unwrap() as u32,
            size: e.get("size").map(|x| x.as_u64().unwrap()),
            alignment: e.get("alignment").map(|x| x.as_u64().unwrap()),
            file_name: e.get("file_name").map(|x| x.as_str().unwrap().to_string()),
            backing_variable_off: e.get("backing_variable_off").map(|x| x.as_u64().unwrap()),
            list: e.get("list").map(|x| x.as_array().unwrap().iter().map(|n| n.as_u64().unwrap() as u32).collect()),
            fabric_path: e.get("fabric_path").map(|x| x.as_str().unwrap().to_string()),
            dtype: e.get("dtype").map(|x| x.as_str().unwrap().to_string()),
            shape: e.get("shape").map(|x| x.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect()),
        })
        .collect();
    rows.sort_by_key(|r| r.var_id);
    rows
}

/// Parses `doc` fed in chunks of `chunk` bytes into `out`, returning the streamed vars in
/// var_id order, with their `list` entries (streamed before their var).
fn parsed(doc: &str, chunk: usize, out: &mut DefJson) -> Vec<VarRow> {
    let mut scratch = [0; 256];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    let mut src = Chunked::new(doc.as_bytes(), chunk);
    let mut rows = Vec::new();
    let mut list: Vec<u32> = Vec::new();
    let mut visit = |e: Entry<'_>, _: &EntryAt<'_>| {
        match e {
            Entry::VarListId(&id) => list.push(id),
            Entry::Var(v) => {
                let has_list = v.list.is_some();
                let ids = std::mem::take(&mut list);
                rows.push(VarRow {
                    name: v.name.to_string(),
                    ty: v.var_type.to_string(),
                    var_id: v.var_id,
                    size: v.size,
                    alignment: v.alignment,
                    file_name: v.file_name.as_ref().map(|s| s.to_string()),
                    backing_variable_off: v.backing_variable_off,
                    list: has_list.then_some(ids),
                    fabric_path: v.fabric_path.as_ref().map(|s| s.to_string()),
                    dtype: v.dtype.as_ref().map(|s| s.to_string()),
                    shape: v.shape.as_ref().map(|s| s.to_vec()),
                });
            }
            _ => {}
        }
        Ok(())
    };
    out.parse_into(&mut tok, &mut src, "sg00/def.json", &mut neff::error::IgnoreWarnings, &mut visit)
        .unwrap_or_else(|e| panic!("{e}"));
    rows.sort_by_key(|r| r.var_id);
    rows
}

/// The first DMA queue set and carveout of `doc`.
fn first_queue_and_carveout(doc: &str) -> (Vec<u32>, u64) {
    let mut scratch = [0; 256];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    let (mut sems, mut offset) = (None, None);
    let mut visit = |e: Entry<'_>, _: &EntryAt<'_>| {
        match e {
            Entry::DmaQueue(q) => {
                sems.get_or_insert_with(|| q.semaphores().to_vec());
            }
            Entry::Carveout(c) => {
                offset.get_or_insert(c.offset);
            }
            _ => {}
        }
        Ok(())
    };
    let mut d = DefJson::default();
    d.parse_into(&mut tok, &mut doc.as_bytes(), "sg00/def.json", &mut neff::error::IgnoreWarnings, &mut visit).unwrap();
    (sems.unwrap(), offset.unwrap())
}

fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(512 << 20).spawn(f).unwrap().join().unwrap();
}

#[test]
fn twenty_thousand_vars_match_serde_json_in_every_chunking() {
    on_big_stack(|| {
        let doc = generate_def(20_000, 42);
        let want = expected(&doc);
        assert_eq!(want.len(), 20_000);
        assert!(want.iter().any(|r| r.name.contains('"') && r.name.contains('\\')));
        assert!(want.iter().any(|r| r.name.contains('é') && r.name.contains('\n')));
        let mut doc_slot = DefJson::default();
        for chunk in [1, 7, 4096] {
            let got = parsed(&doc, chunk, &mut doc_slot);
            assert!(
                got == want,
                "chunk {chunk}: first difference at {:?}",
                got.iter().zip(&want).position(|(a, b)| a != b)
            );
        }
        assert_eq!(first_queue_and_carveout(&doc), (vec![24, 25, 26], 229368));
    });
}

#[test]
fn many_small_documents_match_serde_json() {
    on_big_stack(|| {
        let mut big = DefJson::default();
        for seed in 1..60u64 {
            let n = 1 + (seed as usize * 13) % 64;
            let doc = generate_def(n, seed);
            let want = expected(&doc);
            for chunk in [1, 7, 4096] {
                assert!(parsed(&doc, chunk, &mut big) == want, "seed {seed} chunk {chunk}");
            }
        }
    });
}

#[test]
fn a_name_past_its_capacity_names_the_limit() {
    // Counts have no capacity (vars stream); one name's bytes do, and exceeding it is an error.
    let long = "v".repeat(neff::manifest::cap::VAR_NAME + 1);
    let doc = format!(
        r#"{{"var":{{"o":{{"type":"output","var_id":0,"size":4}},"{long}":{{"type":"input","var_id":1,"size":4}}}}}}"#
    );
    let mut scratch = vec![0; neff::manifest::STRING_SCRATCH];
    let mut tok = Tokenizer::new(&mut scratch, neff::manifest::DEPTH_LIMIT);
    let mut d = DefJson::default();
    let e = d
        .parse_into(&mut tok, &mut doc.as_bytes(), "sg00/def.json", &mut neff::error::IgnoreWarnings, &mut NoVisitor)
        .unwrap_err();
    let cap = neff::error::CapacityError { limit: "VAR_NAME", capacity: neff::manifest::cap::VAR_NAME as u64 };
    assert_eq!(e.kind, ErrorKind::Capacity(cap));
    assert!(e.key_path.as_str().starts_with("var"), "{}", e.key_path);
}

#[test]
fn deep_nesting_in_an_unconsumed_key_is_a_depth_error_on_a_small_stack() {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let mut doc = String::from(r#"{"var":{"o":{"type":"output","var_id":0,"size":4}},"junk":"#);
            doc.push_str(&"[".repeat(100_000));
            doc.push_str(&"]".repeat(100_000));
            doc.push('}');
            let mut scratch = [0; 256];
            let mut tok = Tokenizer::new(&mut scratch, 128);
            let mut d = <DefJson>::default();
            let e = d
                .parse_into(
                    &mut tok,
                    &mut doc.as_bytes(),
                    "sg00/def.json",
                    &mut neff::error::IgnoreWarnings,
                    &mut NoVisitor,
                )
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Json(JsonError::DepthLimit { limit: 128 }));
            assert_eq!(e.key_path.as_str(), "junk");
            // The same nesting inside a consumed key's unconsumed part.
            let inner = doc.replace(
                r#""var_id":0,"size":4}"#,
                &format!(r#""var_id":0,"size":4,"ops":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000)),
            );
            let e = d
                .parse_into(
                    &mut tok,
                    &mut inner.as_bytes(),
                    "sg00/def.json",
                    &mut neff::error::IgnoreWarnings,
                    &mut NoVisitor,
                )
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Json(JsonError::DepthLimit { limit: 128 }));
            assert_eq!(e.key_path.as_str(), "var.o.ops");
        })
        .unwrap()
        .join()
        .unwrap();
}
