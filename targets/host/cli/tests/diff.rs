//! `neff diff` on the baseline/fused pairs of the real NEFFs, on a file against itself, and on
//! sample variants; the expected differences are worked out here from the members as the
//! `tar` and `flate2` crates read them (and `serde_json` parses them), never by the command.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod fleet;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use support::*;
use xxhash_rust::xxh3::xxh3_64;

const PAIRS: [(&str, &str); 5] = [
    ("baseline_attention", "fused_attention"),
    ("baseline_bf16_s1024", "fused_bf16_s1024"),
    ("baseline_bf16_s512", "fused_bf16_s512"),
    ("baseline_fp32_s1024", "fused_fp32_s1024"),
    ("baseline_fp32_s512", "fused_fp32_s512"),
];

fn diff_json(a: &Path, b: &Path) -> (i32, Value) {
    let out = neff_p(&[&"diff", &a, &b, &"--json"]);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    (code(&out), doc)
}

fn members(path: &Path) -> BTreeMap<String, Vec<u8>> {
    members_of(&std::fs::read(path).unwrap()).into_iter().collect()
}

fn names(v: &Value) -> BTreeSet<String> {
    v.as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap().to_owned()).collect()
}

/// `var.<name>.<key>` of a def.json, values as JSON text (the keys a var has no default for).
fn var_keys(def: &[u8]) -> BTreeMap<String, String> {
    let doc: Value = serde_json::from_slice(def).unwrap();
    let mut out = BTreeMap::new();
    for (name, var) in doc["var"].as_object().unwrap() {
        for key in ["type", "var_id", "size", "alignment", "file_name", "backing_variable_off", "list", "fabric_path"] {
            if let Some(v) = var.get(key) {
                let text = match v {
                    Value::Array(items) => {
                        format!("[{}]", items.iter().map(Value::to_string).collect::<Vec<_>>().join(", "))
                    }
                    v => v.to_string(),
                };
                out.insert(format!("var.{name}.{key}"), text);
            }
        }
    }
    out
}

#[test]
fn baseline_and_fused_differ_as_their_members_do() {
    for (base, fused) in PAIRS {
        let (Some(a), Some(b)) = (fleet::fusion_neff(base), fleet::fusion_neff(fused)) else { return };
        let (code, d) = diff_json(&a, &b);
        assert_eq!(code, 1, "{base}");
        assert_eq!(d["same"], false);
        let (ma, mb) = (members(&a), members(&b));

        // Members, by digest of their bytes.
        let added: BTreeSet<String> = mb.keys().filter(|n| !ma.contains_key(*n)).cloned().collect();
        let removed: BTreeSet<String> = ma.keys().filter(|n| !mb.contains_key(*n)).cloned().collect();
        let changed: BTreeSet<String> =
            ma.iter().filter(|(n, x)| mb.get(*n).is_some_and(|y| y != *x)).map(|(n, _)| n.clone()).collect();
        assert_eq!(names(&d["members"]["added"]), added, "{base}");
        assert_eq!(names(&d["members"]["removed"]), removed, "{base}");
        assert_eq!(names(&d["members"]["changed"]), changed, "{base}");
        let same = ma.iter().filter(|(n, x)| mb.get(*n) == Some(*x)).count();
        assert_eq!(d["members"]["same"], same, "{base}");
        for c in d["members"]["changed"].as_array().unwrap() {
            let n = c["name"].as_str().unwrap();
            assert_eq!(c["a"]["digest"], format!("{:016x}", xxh3_64(&ma[n])), "{base} {n}");
            assert_eq!(c["b"]["size"], mb[n].len(), "{base} {n}");
        }

        // Header: the uuid and the name differ (and the hash); the sizes of these pairs agree.
        let fields: BTreeSet<&str> =
            d["header"].as_array().unwrap().iter().map(|h| h["field"].as_str().unwrap()).collect();
        assert!(fields.contains("uuid") && fields.contains("name"), "{base}: {fields:?}");

        // Consumed keys: every var key of each def.json, as serde_json reads the members.
        for def in ["sg00/def.json", "sg01/def.json"] {
            let (ka, kb) = (var_keys(&ma[def]), var_keys(&mb[def]));
            let mut want = BTreeMap::new();
            for key in ka.keys().chain(kb.keys()) {
                if ka.get(key) != kb.get(key) {
                    want.insert(key.clone(), (ka.get(key).cloned(), kb.get(key).cloned()));
                }
            }
            let have: BTreeMap<String, (Option<String>, Option<String>)> = d["manifests"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|k| k["member"] == def && k["key"].as_str().unwrap().starts_with("var."))
                .map(|k| {
                    let side = |v: &Value| v.as_str().map(str::to_owned);
                    (k["key"].as_str().unwrap().to_owned(), (side(&k["a"]), side(&k["b"])))
                })
                .collect();
            assert_eq!(have, want, "{base} {def}");
        }

        // Payloads: instruction streams by their bytes, weights by their array data.
        let digest = |m: &BTreeMap<String, Vec<u8>>, n: &str| {
            let bytes = &m[n];
            let data = if n.ends_with(".npy") { common::neff::npy_data(bytes) } else { bytes };
            format!("{:016x}", xxh3_64(data))
        };
        for p in d["payloads"].as_array().unwrap() {
            let n = p["member"].as_str().unwrap();
            for (side, m) in [("a", &ma), ("b", &mb)] {
                match m.contains_key(n) {
                    true => assert_eq!(p[side]["digest"], digest(m, n), "{base} {n} {side}"),
                    false => assert_eq!(p[side], Value::Null, "{base} {n} {side}"),
                }
            }
            assert_ne!(p["a"], p["b"]);
        }
        // Every instruction stream whose bytes differ is listed.
        for n in changed.iter().filter(|n| n.ends_with(".bin") && !n.contains("debug")) {
            assert!(d["payloads"].as_array().unwrap().iter().any(|p| p["member"] == n.as_str()), "{base}: {n}");
        }
        // Same I/O signature in these pairs.
        assert_eq!(d["io"], Value::Array(vec![]), "{base}");
    }
}

#[test]
fn a_file_against_itself_is_the_same() {
    for (label, path) in fleet::real_neffs() {
        let (code, d) = diff_json(&path, &path);
        assert_eq!(code, 0, "{label}: {d}");
        assert_eq!(d["same"], true);
        for key in ["header", "manifests", "io", "payloads"] {
            assert_eq!(d[key], Value::Array(vec![]), "{label} {key}");
        }
        assert_eq!(d["members"]["same"], members(&path).len(), "{label}");
        let text = stdout(&neff_p(&[&"diff", &path, &path]));
        assert!(text.ends_with("payloads: same\nsame\n"), "{text}");
    }
}

#[test]
fn the_io_signature_names_each_tensor_that_changed() {
    let (Some(a), Some(b)) = (fleet::fusion_neff("baseline_fp32_s512"), fleet::fusion_neff("baseline_bf16_s512"))
    else {
        return;
    };
    let (code, d) = diff_json(&a, &b);
    assert_eq!(code, 1);
    let io = d["io"].as_array().unwrap();
    let q = io.iter().find(|t| t["name"] == "q_ref").expect("q_ref differs");
    assert_eq!(
        (q["kind"].as_str(), q["a"]["dtype"].as_str(), q["b"]["dtype"].as_str()),
        (Some("input"), Some("float32"), Some("bfloat16"))
    );
    assert_eq!(q["a"]["size"].as_u64().unwrap(), 2 * q["b"]["size"].as_u64().unwrap());
    let text = stdout(&neff_p(&[&"diff", &a, &b]));
    assert!(text.contains("I/O signature: differs\n  input q_ref: float32 [128,512] (262144 bytes) -> bfloat16 [128,512] (131072 bytes)"), "{text}");
}

#[test]
fn nested_arrays_are_keyed_by_their_positions() {
    let block = |off: u64| {
        format!(
            r#"{{"dma":[{{"id":0,"queue":"qPoolDynamic","desc":[{{"from":"x","to":"SB","from_off":0,"to_off":0}}]}},{{"id":1,"queue":"qPoolDynamic","desc":[{{"from":"x","to":"SB","from_off":0,"to_off":0}},{{"from":"x","to":"SB","from_off":{off},"to_off":8}}]}}],"instr":"PE.bin","name":"PE.json"}}"#
        )
    };
    let sample = |off| {
        neff_host::sample::SampleBuilder::new().replace_member("sg00/PE.json", block(off).as_bytes()).build().unwrap()
    };
    let (a, b) = (write_temp(&sample(16)), write_temp(&sample(32)));
    let (code, d) = diff_json(a.path(), b.path());
    assert_eq!(code, 1, "{d}");
    let keys: Vec<(&str, &str, &str, &str)> = d["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["member"].as_str().unwrap(),
                k["key"].as_str().unwrap(),
                k["a"].as_str().unwrap(),
                k["b"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys, [("sg00/PE.json", "dma[1].desc[1].from_off", "16", "32")]);
    assert_eq!(names(&d["members"]["changed"]), BTreeSet::from(["sg00/PE.json".to_owned()]));
    assert_eq!(d["payloads"], Value::Array(vec![]));
}

#[test]
fn trouble_exits_2() {
    let Some((_, good)) = fleet::real_neffs().into_iter().next() else { return };
    let out = neff_p(&[&"diff", &good, &"/nonexistent/b.neff"]);
    assert_one_line_error(&out, 2);
    let bytes = std::fs::read(&good).unwrap();
    let cut = write_temp(&bytes[..bytes.len() / 2]);
    let out = neff_p(&[&"diff", &cut.path(), &good]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains(&cut.path().display().to_string()), "{line}");
    assert_eq!(code(&neff(&["diff", "only-one.neff"])), 2);
}

/// The value at `path` (`dma[1].desc[0].op`, `var.a.b.size`: a map entry's name may hold dots)
/// of a JSON document, as the key path of a consumed value names it.
fn at_path<'v>(doc: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(doc);
    }
    if let Some(rest) = path.strip_prefix('[') {
        let (index, rest) = rest.split_once(']')?;
        let item = doc.as_array()?.get(index.parse::<usize>().ok()?)?;
        return at_path(item, rest.strip_prefix('.').unwrap_or(rest));
    }
    // The longest key of the object that the path goes on from.
    let object = doc.as_object()?;
    let mut found = None;
    for (key, value) in object {
        if let Some(rest) = path.strip_prefix(key.as_str()) {
            if (rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
                && found.is_none_or(|(k, _, _): (&String, _, _)| k.len() < key.len())
            {
                found = Some((key, value, rest));
            }
        }
    }
    let (_, value, rest) = found?;
    at_path(value, rest.strip_prefix('.').unwrap_or(rest))
}

/// Whether `text` (as `neff diff` shows a consumed value) is the JSON `value`: strings quoted
/// as Rust's `{:?}`, numbers as written (a number with a fraction as an `f64`), arrays as
/// `[a, b]` (a TVM typed list by its items, an empty object as `[]`), a counted array as
/// `(n elements)`.
fn shows(text: &str, value: &Value) -> bool {
    if let Some(n) = text.strip_prefix('(').and_then(|t| t.strip_suffix(" elements)")) {
        return value.as_array().is_some_and(|a| a.len().to_string() == n);
    }
    match value {
        Value::String(s) => text == format!("{s:?}"),
        Value::Bool(b) => text == b.to_string(),
        // An empty object keyed by name: no elements.
        Value::Object(o) => o.is_empty() && text == "[]",
        Value::Number(n) if text.contains('.') => text.parse::<f64>().ok() == n.as_f64(),
        Value::Number(n) => text == n.to_string(),
        Value::Array(items) => {
            if let [Value::String(tag), Value::Array(inner)] = items.as_slice() {
                if tag.starts_with("list_") && shows(text, &Value::Array(inner.clone())) {
                    return true;
                }
            }
            let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else { return false };
            // The items: split at the commas outside nested brackets and quoted strings.
            let mut parts = Vec::new();
            let (mut depth, mut quoted, mut escaped, mut from) = (0, false, false, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' if quoted => escaped = true,
                    '"' => quoted = !quoted,
                    '[' if !quoted => depth += 1,
                    ']' if !quoted => depth -= 1,
                    ',' if !quoted && depth == 0 => {
                        parts.push(inner[from..i].trim());
                        from = i + 1;
                    }
                    _ => {}
                }
            }
            if !inner.trim().is_empty() {
                parts.push(inner[from..].trim());
            }
            parts.len() == items.len() && parts.iter().zip(items).all(|(t, v)| shows(t, v))
        }
        _ => false,
    }
}

/// A member's consumed value (one side of a `manifests` row): the JSON value at its key path,
/// or, where the document has no value there, the key's default from the schema.
fn check_side(label: &str, member: &str, key: &str, shown: &Value, json: Option<&Value>) {
    let Some(text) = shown.as_str() else {
        // Not listed: the document has no value there (an absent optional key, no such
        // element), or one listed by its elements (`var` by `var.<name>.size`, ...).
        let by_elements = |v: &Value| match v {
            Value::Object(o) => !o.is_empty(),
            Value::Array(a) => a.first().is_some_and(Value::is_object),
            _ => false,
        };
        let value = json.and_then(|doc| at_path(doc, key));
        assert!(value.is_none_or(|v| v.is_null() || by_elements(v)), "{label} {member} {key}: {value:?}");
        return;
    };
    let doc = json.unwrap_or_else(|| panic!("{label}: {member} is listed but is no JSON member"));
    match at_path(doc, key) {
        Some(value) => assert!(shows(text, value), "{label} {member} {key}: {text} is not {value}"),
        None => {
            // A default: the key (its last segment) has one in the table, shown as `text`.
            let last = key.rsplit('.').next().unwrap_or(key);
            let default = neff::manifest::CONSUMED_KEYS.iter().any(|k| {
                k.path.rsplit('.').next() == Some(last)
                    && !k.default.is_empty()
                    && (text == k.default || text == format!("{:?}", k.default.trim_matches('"')))
            });
            assert!(default, "{label} {member} {key}: {text} is neither in the document nor a default");
        }
    }
}

/// Every consumed value `neff diff` lists between two real NEFFs (every pair) is the
/// value the member's JSON holds at that key path, as serde_json reads it (or the key's
/// default where the document has none): the generated value visitors hand over what the
/// documents say.
#[test]
fn every_consumed_value_listed_between_real_neffs_is_the_documents() {
    let neffs = fleet::real_neffs();
    let jsons: Vec<BTreeMap<String, Value>> = neffs
        .iter()
        .map(|(_, path)| {
            members(path)
                .into_iter()
                .filter(|(n, _)| n.ends_with(".json"))
                .filter_map(|(n, bytes)| Some((n, serde_json::from_slice(&bytes).ok()?)))
                .collect()
        })
        .collect();
    let mut rows = 0;
    for (ia, (la, a)) in neffs.iter().enumerate() {
        // Each pair once: both sides are checked.
        for (ib, (lb, b)) in neffs.iter().enumerate().filter(|(ib, _)| *ib > ia) {
            let (_, d) = diff_json(a, b);
            for row in d["manifests"].as_array().unwrap() {
                let (member, key) = (row["member"].as_str().unwrap(), row["key"].as_str().unwrap());
                let label = format!("{la} vs {lb}");
                check_side(&label, member, key, &row["a"], jsons[ia].get(member));
                check_side(&label, member, key, &row["b"], jsons[ib].get(member));
                rows += 1;
            }
        }
    }
    if neffs.len() > 1 {
        assert!(rows > 1000, "{rows} rows: the real NEFFs differ in thousands of consumed values");
    }
}
