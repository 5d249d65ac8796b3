//! A corpus of malformed NEFFs, generated from the real small NEFF: damaged manifests, damaged
//! tar streams, damaged `.npy` payloads and cuts. Each case is loaded and checked against the
//! outcome its damage must give, worked out from the damage itself and independently of the
//! loader: where in the tar it falls (headers, bodies, padding, from the `tar` crate's layout),
//! which member it hits and whether the manifest chain reaches that member (walked here with
//! `serde_json`), what `serde_json` makes of a damaged manifest, and what the `.npy` grammar
//! makes of a damaged header. A load that succeeds must leave exactly the device image the
//! damaged members call for (the clean one when the damage is in something the loader skips);
//! a refusal must name its stage, member, key path, offset and kind, and leave nothing
//! allocated. A damage the rules here do not cover fails the test: no case passes unclassified.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::result_large_err,
    missing_docs
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::corpus::{self, Damage};
use common::neff::{members, npy_data};
use neff::archive::{Archive, OpenOptions};
use neff::digest::digest64;
use neff::error::{CapacityError, OffsetBase, Text, Warning};
use neff::header::HeaderError;
use neff::json::JsonError;
use neff::loader::{ChainError, LoadOptions};
use neff::manifest::{Arch, JsonType, ManifestError};
use neff::npy::NpyError;
use neff::sim::SimDevice;
use neff::tar::TarError;
use neff::{Error, ErrorKind, Stage};
use serde_json::Value;

const SMALL: &str = "public/nkipy/matmul_small.neff";

/// What a load left on the device: `(member, bytes, digest of the device's bytes)` of every
/// live region, sorted.
type Image = Vec<(String, u64, u64)>;

/// Member name -> body, as the `tar` crate extracts them.
type Members = BTreeMap<String, Vec<u8>>;

/// Loads `bytes` onto a simulated cayman device. A refusal must render and leave no region
/// allocated; a success must report the digests the device holds.
fn load(bytes: &[u8]) -> Result<Image, Error> {
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
    if let Err(e) = result {
        assert_eq!(dev.live_regions().count(), 0, "a failed load left regions behind: {e}");
        assert!(!e.to_string().is_empty());
        return Err(e);
    }
    let mut image = Vec::new();
    for p in report.payloads.iter().filter(|p| p.region.is_some()) {
        let on_device = dev.digest(p.region.unwrap()).unwrap();
        assert_eq!(p.digest, on_device, "{}: the report's digest is the device's", p.member);
        image.push((p.member.clone(), p.len, on_device));
    }
    image.sort();
    assert_eq!(dev.live_regions().count(), image.len(), "every live region is a reported payload");
    Ok(image)
}

/// The error a damage must give.
#[derive(Debug, Clone, PartialEq)]
struct Refusal {
    stage: Stage,
    member: String,
    key_path: String,
    offset: u64,
    base: OffsetBase,
    kind: ErrorKind,
}

impl Refusal {
    fn in_member(stage: Stage, member: &str, key_path: &str, offset: u64, kind: ErrorKind) -> Self {
        Refusal { stage, member: member.into(), key_path: key_path.into(), offset, base: OffsetBase::Member, kind }
    }

    /// A refusal about a member as a whole: no byte position.
    fn about(stage: Stage, member: &str, key_path: &str, kind: ErrorKind) -> Self {
        Refusal { base: OffsetBase::None, ..Self::in_member(stage, member, key_path, 0, kind) }
    }

    fn of(e: &Error) -> Self {
        Refusal {
            stage: e.stage,
            member: e.member.to_string(),
            key_path: e.key_path.to_string(),
            offset: e.offset,
            base: e.offset_base,
            kind: e.kind,
        }
    }
}

/// What a damaged manifest must give when `serde_json` refuses it: an error of the JSON
/// tokenizer in that member, where `serde_json` stops (or, for bytes that are not UTF-8,
/// where the text stops being UTF-8), under a key path on the way to that byte.
#[derive(Debug)]
struct JsonRefusal {
    stage: Stage,
    member: String,
    body: Vec<u8>,
    serde: serde_json::Error,
    /// The first byte that differs from the undamaged manifest.
    first_change: usize,
}

/// The outcome a case must have.
#[derive(Debug)]
enum Want {
    /// Loads, leaving this image.
    Loads(Image),
    /// Refused with exactly this error.
    Refused(Refusal),
    /// Refused as `MissingKey { key, within }` in `member` under `key_path`, at the `}`
    /// closing the object without it.
    MissingKey { stage: Stage, member: String, key_path: String, key: &'static str, within: String, body: Vec<u8> },
    /// Refused by the JSON tokenizer.
    Json(JsonRefusal),
}

/// Checks one case; returns what kind of outcome it was, for the summary.
fn check(case: &str, got: &Result<Image, Error>, want: &Want) -> &'static str {
    let what = match want {
        Want::Loads(_) => "loaded",
        Want::Refused(_) => "refused with a computed error",
        Want::MissingKey { .. } => "refused for a missing key",
        Want::Json(_) => "refused as serde_json refuses it",
    };
    match (want, got) {
        (Want::Loads(image), Ok(got)) => assert_eq!(got, image, "{case}: device image"),
        (Want::Refused(r), Err(e)) => assert_eq!(&Refusal::of(e), r, "{case}: {e}"),
        (Want::MissingKey { stage, member, key_path, key, within, body }, Err(e)) => {
            assert_eq!(
                (e.stage, e.member.as_str(), e.key_path.as_str(), e.offset_base),
                (*stage, member.as_str(), key_path.as_str(), OffsetBase::Member),
                "{case}: {e}"
            );
            assert_eq!(body.get(e.offset as usize), Some(&b'}'), "{case}: at the end of the object: {e}");
            match e.kind {
                ErrorKind::Manifest(ManifestError::MissingKey { key: k, within: w }) => {
                    assert_eq!((k.key, w.as_str()), (*key, within.as_str()), "{case}: {e}")
                }
                _ => panic!("{case}: expected a missing {key}, got {e}"),
            }
        }
        (Want::Json(j), Err(e)) => check_json(case, j, e),
        (want, got) => panic!("{case}: expected {want:?}, got {got:?}"),
    }
    what
}

/// Prints how many cases of a set ended which way.
fn summary(set: &str, outcomes: &[&'static str]) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for o in outcomes {
        *counts.entry(o).or_default() += 1;
    }
    println!("{set}: {} cases: {counts:?}", outcomes.len());
}

/// The byte offset of `serde_json`'s error (its line and column, 1-based; column 0 is the
/// newline that ends the line before).
fn serde_offset(body: &[u8], e: &serde_json::Error) -> usize {
    let line_start = if e.line() == 1 {
        0
    } else {
        body.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(e.line() - 2).map(|(i, _)| i + 1).unwrap()
    };
    (line_start + e.column()).saturating_sub(1)
}

/// The first byte at which `body` stops being the start of a UTF-8 text, if it does.
fn first_non_utf8(body: &[u8]) -> Option<usize> {
    (0..body.len()).find(|&k| std::str::from_utf8(&body[..=k]).is_err_and(|e| e.error_len().is_some()))
}

fn check_json(case: &str, j: &JsonRefusal, e: &Error) {
    assert_eq!(
        (e.stage, e.member.as_str(), e.offset_base),
        (j.stage, j.member.as_str(), OffsetBase::Member),
        "{case}: {e}"
    );
    let at = e.offset as usize;
    let body = &j.body;
    if let ErrorKind::Manifest(ManifestError::WrongType { found, .. }) = e.kind {
        // A typed value the damage turned into the start of another type is refused there,
        // before the syntax error further on.
        let starts = match body[at] {
            b'{' => JsonType::Object,
            b'[' => JsonType::Array,
            b'"' => JsonType::String,
            b't' | b'f' => JsonType::Bool,
            b'n' => JsonType::Null,
            _ => panic!("{case}: no rule for {e}"),
        };
        assert_eq!((at, found), (j.first_change, starts), "{case}: {e}");
        assert_eq!(e.key_path.as_str(), json_path_at(&body[..at]), "{case}: {e}");
        return;
    }
    let ErrorKind::Json(kind) = e.kind else { panic!("{case}: serde_json refuses it ({}), we gave {e}", j.serde) };
    match kind {
        JsonError::UnexpectedEnd => {
            assert!(j.serde.is_eof(), "{case}: {e}; serde_json: {}", j.serde);
            assert_eq!(at, body.len(), "{case}: at the end");
        }
        JsonError::InvalidUtf8 => assert_eq!(Some(at), first_non_utf8(body), "{case}: {e}"),
        _ => {
            assert_eq!(at, serde_offset(body, &j.serde), "{case}: {e}; serde_json: {}", j.serde);
            match kind {
                JsonError::UnexpectedByte { found, .. } => assert_eq!(body[at], found, "{case}: {e}"),
                JsonError::ControlCharInString => assert!(body[at] < 0x20, "{case}: {e}"),
                JsonError::InvalidEscape => assert_eq!(body[at - 1], b'\\', "{case}: {e}"),
                JsonError::TrailingData => assert!(!b" \t\r\n".contains(&body[at]), "{case}: {e}"),
                _ => panic!("{case}: no rule for {e} (serde_json: {})", j.serde),
            }
        }
    }
    let path = json_path_at(&body[..at]);
    let key = e.key_path.as_str();
    let on_the_way = path == key
        || key.is_empty()
        || path.strip_prefix(key).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['));
    assert!(on_the_way, "{case}: key path {key:?} is not on the way to {path:?}: {e}");
}

/// The key path at the end of `prefix` (a JSON document cut short): `a.b[2].c` from the key
/// `c` to the `,` after its value, the container's own path before its first key; in an array,
/// the element being read or, between elements, the next one.
fn json_path_at(prefix: &[u8]) -> String {
    enum Frame {
        Object { key: Option<String>, expect_key: bool },
        Array { index: usize },
    }
    fn value_done(stack: &mut [Frame]) {
        if let Some(Frame::Array { index }) = stack.last_mut() {
            *index += 1;
        }
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < prefix.len() {
        match prefix[i] {
            b'"' => {
                let mut j = i + 1;
                while j < prefix.len() && prefix[j] != b'"' {
                    j += if prefix[j] == b'\\' { 2 } else { 1 };
                }
                if j >= prefix.len() {
                    break;
                }
                match stack.last_mut() {
                    Some(Frame::Object { key, expect_key }) if *expect_key => {
                        *key = Some(serde_json::from_slice(&prefix[i..=j]).unwrap());
                        *expect_key = false;
                    }
                    _ => value_done(&mut stack),
                }
                i = j;
            }
            b'{' => stack.push(Frame::Object { key: None, expect_key: true }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
                value_done(&mut stack);
            }
            b',' => {
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut() {
                    *key = None;
                    *expect_key = true;
                }
            }
            b':' | b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => {
                // A number or a literal, up to the next delimiter (the end delimits a number).
                let mut j = i;
                while j < prefix.len() && !b",:]} \t\r\n".contains(&prefix[j]) {
                    j += 1;
                }
                if j >= prefix.len() && serde_json::from_slice::<serde_json::Number>(&prefix[i..]).is_err() {
                    break;
                }
                value_done(&mut stack);
                i = j - 1;
            }
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(k), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
            }
            Frame::Array { index } => path.push_str(&format!("[{index}]")),
            Frame::Object { key: None, .. } => break,
        }
    }
    path
}

/// The stage of errors in a manifest of each role.
fn stage_of(role: Role) -> Stage {
    match role {
        Role::Neff => Stage::NeffJson,
        Role::Kelf => Stage::Kelf,
        Role::Def => Stage::DefJson,
        Role::Engine => Stage::Engine,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Neff,
    Kelf,
    Def,
    Engine,
}

/// What the manifest chain reaches, walked from `neff.json` as the spec describes it (§4-§8):
/// `neff.json` names the KELF (the `__kelf` node's `attrs.kelf`), the KELF its definitions
/// (`graphs[].definition`), a definition its engine JSONs (`pe`, `act`, `pool`, `dve`, `sp`),
/// its instruction streams (the engine JSON's `instr`, else the definition's `<engine>_instr`)
/// and its file variables (`file_name`); `Activation.json` names its activation sets
/// (`activation_function_sets`, member `<set>.json`), each set its tables (`bkt_bin`,
/// `ctl_bin`); `DVE.json` its tables (`dve_tables`).
#[derive(Debug, Default)]
struct Chain {
    manifests: BTreeMap<String, Role>,
    payloads: BTreeSet<String>,
}

fn json(m: &Members, name: &str) -> Value {
    serde_json::from_slice(&m[name]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn str_at<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

fn missing(stage: Stage, by: &str, key: &str, name: &str) -> Refusal {
    Refusal::about(stage, by, key, ErrorKind::Chain(ChainError::MemberMissing { member: Text::new(name) }))
}

fn walk_chain(m: &Members) -> Result<Chain, Refusal> {
    let mut chain = Chain::default();
    chain.manifests.insert("neff.json".into(), Role::Neff);
    let neff = json(m, "neff.json");
    // A key path that crosses an array names the entry's index (a var's name is the host's).
    let mut payload_refs: Vec<(Stage, String, String, String)> = Vec::new();
    for (n, node) in neff["nodes"].as_array().unwrap().iter().enumerate() {
        let attrs = &node["attrs"];
        let is_kelf = str_at(attrs, "func_name") == Some("__kelf") || str_at(node, "op") == Some("__kelf");
        let Some(kelf) = str_at(attrs, "kelf").filter(|_| is_kelf) else { continue };
        if !m.contains_key(kelf) {
            return Err(missing(Stage::NeffJson, "neff.json", &format!("nodes[{n}].attrs.kelf"), kelf));
        }
        chain.manifests.insert(kelf.into(), Role::Kelf);
        for (g, graph) in json(m, kelf)["graphs"].as_array().unwrap().iter().enumerate() {
            let def_name = str_at(graph, "definition").unwrap();
            if !m.contains_key(def_name) {
                return Err(missing(Stage::Kelf, kelf, &format!("graphs[{g}].definition"), def_name));
            }
            chain.manifests.insert(def_name.into(), Role::Def);
            let def = json(m, def_name);
            let dir = def_name.rsplit_once('/').map_or("", |(d, _)| d);
            let joined = |n: &str| if dir.is_empty() { n.to_string() } else { format!("{dir}/{n}") };
            for engine in ["pe", "act", "pool", "dve", "sp"] {
                let Some(json_name) = str_at(&def, engine).map(joined) else { continue };
                if !m.contains_key(&json_name) {
                    return Err(missing(Stage::DefJson, def_name, engine, &json_name));
                }
                chain.manifests.insert(json_name.clone(), Role::Engine);
                let doc = json(m, &json_name);
                let instr = str_at(&doc, "instr").or_else(|| str_at(&def, &format!("{engine}_instr")));
                if let Some(instr) = instr {
                    payload_refs.push((Stage::Chain, json_name.clone(), "instr".into(), joined(instr)));
                }
                for (i, tables) in doc.get("dve_tables").and_then(Value::as_array).into_iter().flatten().enumerate() {
                    for key in
                        ["opcode_table", "datapath_table", "control_table", "control_fast_table", "control_slow_table"]
                    {
                        if let Some(t) = str_at(tables, key) {
                            payload_refs.push((Stage::Chain, json_name.clone(), format!("dve_tables[{i}]"), joined(t)));
                        }
                    }
                }
                let sets = doc.get("activation_function_sets").and_then(Value::as_array).into_iter().flatten();
                for (i, set) in sets.enumerate() {
                    let set_name = joined(&format!("{}.json", set.as_str().unwrap()));
                    if !m.contains_key(&set_name) {
                        let key = format!("activation_function_sets[{i}]");
                        return Err(missing(Stage::Engine, &json_name, &key, &set_name));
                    }
                    chain.manifests.insert(set_name.clone(), Role::Engine);
                    let set_doc = json(m, &set_name);
                    for key in ["bkt_bin", "ctl_bin"] {
                        if let Some(t) = str_at(&set_doc, key) {
                            payload_refs.push((Stage::Chain, set_name.clone(), key.into(), joined(t)));
                        }
                    }
                }
            }
            for var in def["var"].as_object().unwrap().values() {
                if let (Some("file"), Some(file)) = (str_at(var, "type"), str_at(var, "file_name")) {
                    payload_refs.push((Stage::Chain, def_name.into(), "var.file_name".into(), joined(file)));
                }
            }
        }
    }
    for (stage, by, key, name) in payload_refs {
        if !m.contains_key(&name) {
            return Err(missing(stage, &by, &key, &name));
        }
        chain.payloads.insert(name);
    }
    Ok(chain)
}

/// The device image `m` calls for: every payload the chain names, `.npy` ones without their
/// header; empty payloads get no region.
fn image_of(m: &Members, chain: &Chain) -> Image {
    let mut image: Image = chain
        .payloads
        .iter()
        .map(|name| {
            let body = &m[name];
            let data = if name.ends_with(".npy") { npy_data(body) } else { body.as_slice() };
            (name.clone(), data.len() as u64, digest64(data))
        })
        .filter(|(_, len, _)| *len > 0)
        .collect();
    image.sort();
    image
}

/// The undamaged NEFF: its members, chain and image, and its tar's layout.
struct Clean {
    neff: Vec<u8>,
    members: Members,
    chain: Chain,
    /// `(name, header offset, data offset, size)` of every entry, in tar order.
    layout: Vec<(String, usize, usize, usize)>,
    tar: Vec<u8>,
}

impl Clean {
    fn new(neff: Vec<u8>) -> Self {
        let members: Members = members(&neff).into_iter().collect();
        let chain = walk_chain(&members).unwrap();
        let tar = corpus::inflated(&neff);
        let mut archive = tar::Archive::new(&tar[..]);
        let layout = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                (name, e.raw_header_position() as usize, e.raw_file_position() as usize, e.size() as usize)
            })
            .collect();
        Clean { neff, members, chain, layout, tar }
    }

    /// The outcome of replacing member `name`'s body by `body`.
    fn want_member(&self, name: &str, body: &[u8], damage: &Damage) -> Want {
        let mut m = self.members.clone();
        m.insert(name.into(), body.to_vec());
        let original = &self.members[name];
        if let Some(&role) = self.chain.manifests.get(name) {
            return self.want_manifest(&m, name, role, original, body);
        }
        if !self.chain.payloads.contains(name) {
            // Debug data, producer metadata, JSON nothing names: never read.
            return Want::Loads(image_of(&self.members, &self.chain));
        }
        if name.ends_with(".npy") {
            return want_npy(name, original, body, damage, || image_of(&m, &self.chain));
        }
        match damage {
            Damage::Flip { .. } => Want::Loads(image_of(&m, &self.chain)),
            _ => panic!("{name}: no rule for {damage:?} in a raw payload"),
        }
    }

    fn want_manifest(&self, m: &Members, name: &str, role: Role, original: &[u8], body: &[u8]) -> Want {
        let stage = stage_of(role);
        let before: Value = serde_json::from_slice(original).unwrap();
        let after: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(serde) => {
                // Not JSON: the syntax error wins over any schema error before it (libnrt parses
                // the whole document first), a root that is not an object included.
                let first_change = (0..body.len()).find(|&i| original.get(i) != Some(&body[i])).unwrap_or(body.len());
                return Want::Json(JsonRefusal {
                    stage,
                    member: name.into(),
                    body: body.to_vec(),
                    serde,
                    first_change,
                });
            }
        };
        if after == before {
            // Whitespace, or a cut after the document.
            return Want::Loads(image_of(&self.members, &self.chain));
        }
        let mut changes = Vec::new();
        diff(&mut Vec::new(), &before, &after, &mut changes);
        for change in &changes {
            if let Some(want) = semantic_rule(name, role, change, body) {
                return want;
            }
        }
        match walk_chain(m) {
            Ok(chain) => Want::Loads(image_of(m, &chain)),
            Err(refusal) => Want::Refused(refusal),
        }
    }
}

/// One difference between two JSON documents, at a path of keys and indices. A key the damage
/// made up is not listed: no rule below depends on one (the chain walk reads the damaged
/// documents themselves).
#[derive(Debug)]
enum Change {
    Removed(Vec<String>),
    Changed(Vec<String>, Value),
}

fn diff(path: &mut Vec<String>, a: &Value, b: &Value, out: &mut Vec<Change>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                path.push(k.clone());
                match y.get(k) {
                    Some(w) => diff(path, v, w, out),
                    None => out.push(Change::Removed(path.clone())),
                }
                path.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                path.push(format!("[{i}]"));
                diff(path, v, w, out);
                path.pop();
            }
        }
        _ if a == b => {}
        _ => out.push(Change::Changed(path.clone(), b.clone())),
    }
}

/// The rules of the spec that a changed manifest can break beyond naming members: required
/// keys (§5-§7: `version` and `graphs` of a KELF, `type` and `var_id` of a var, `var` of a
/// definition), the KELF target (§6, one of the known architectures or `*`), the cayman
/// state-buffer carveout (§7.7, required on cayman).
fn semantic_rule(member: &str, role: Role, change: &Change, body: &[u8]) -> Option<Want> {
    let stage = stage_of(role);
    match (role, change) {
        (Role::Kelf, Change::Removed(p)) if p == &["version"] || p == &["graphs"] => {
            let key = if p[0] == "version" { "version" } else { "graphs" };
            let (member, key_path, within, body) = (member.into(), key.into(), String::new(), body.to_vec());
            Some(Want::MissingKey { stage, member, key_path, key, within, body })
        }
        (Role::Kelf, Change::Changed(p, Value::String(t))) if p == &["target"] => {
            let known = ["sunda", "v2", "cayman", "v3", "mariana", "v4", "*", ""];
            (!known.contains(&t.as_str())).then(|| {
                let kind = ErrorKind::Manifest(ManifestError::InvalidTarget(Text::new(t)));
                Want::Refused(Refusal::in_member(stage, member, "target", body.len() as u64, kind))
            })
        }
        (Role::Def, Change::Removed(p)) if p.len() == 3 && p[0] == "var" && (p[2] == "type" || p[2] == "var_id") => {
            let key = if p[2] == "type" { "type" } else { "var_id" };
            let (member, key_path, within, body) = (member.into(), p.join("."), p[1].clone(), body.to_vec());
            Some(Want::MissingKey { stage, member, key_path, key, within, body })
        }
        (Role::Def, Change::Removed(p)) if p == &["runtime_statebuffer_reservation"] => {
            let kind = ErrorKind::Manifest(ManifestError::MissingCarveout);
            Some(Want::Refused(Refusal::about(stage, member, "runtime_statebuffer_reservation", kind)))
        }
        _ => None,
    }
}

/// What the `.npy` format makes of a damaged weight (spec §9.2; the grammar of numpy's
/// header: magic, version, header length, a Python dict literal padded with whitespace).
fn want_npy(name: &str, original: &[u8], body: &[u8], damage: &Damage, loads: impl FnOnce() -> Image) -> Want {
    let header_len = 10 + u16::from_le_bytes([original[8], original[9]]) as usize;
    assert_eq!(original[6], 1, "{name}: a version 1.0 header");
    // A header error is at its own offset when it has one, else at the start of the member.
    let header = |kind: NpyError| {
        let offset = match kind {
            NpyError::Malformed { offset, .. } | NpyError::UnknownKey { offset } => offset,
            _ => 0,
        };
        Want::Refused(Refusal::in_member(Stage::Payload, name, "", offset, ErrorKind::Npy(kind)))
    };
    let at = match *damage {
        Damage::Cut { at } if at >= header_len => {
            // The data is shorter than the shape says.
            let kind = NpyError::Truncated { needed: original.len() as u64, got: at as u64 };
            return Want::Refused(Refusal::in_member(
                Stage::Payload,
                name,
                "",
                header_len as u64,
                ErrorKind::Npy(kind),
            ));
        }
        Damage::Flip { at, .. } if at >= header_len => return Want::Loads(loads()),
        Damage::Flip { at, .. } => at,
        _ => panic!("{name}: no rule for {damage:?}"),
    };
    match at {
        0..=5 => header(NpyError::BadMagic { found: body[..6].try_into().unwrap() }),
        6 | 7 => {
            let (major, minor) = (body[6], body[7]);
            if (1..=3).contains(&major) && minor == 0 {
                // Versions 2 and 3 read a 4-byte header length: here ASCII text, far past 256.
                let len = u32::from_le_bytes(body[8..12].try_into().unwrap());
                assert!(len > 256, "{name}: header length {len}");
                header(NpyError::Capacity(CapacityError { limit: "HEADER_CAP", capacity: 256 }))
            } else {
                header(NpyError::UnsupportedVersion { major, minor })
            }
        }
        8 | 9 => panic!("{name}: no rule for a damaged header length ({damage:?})"),
        _ => match npy_dict_rule(original, body, at, header_len) {
            DictOutcome::Header(kind) => header(kind),
            DictOutcome::Shape(declared) => {
                let kind = NpyError::Truncated { needed: (header_len as u64) + declared, got: body.len() as u64 };
                Want::Refused(Refusal::in_member(Stage::Payload, name, "", header_len as u64, ErrorKind::Npy(kind)))
            }
            DictOutcome::Same => Want::Loads(loads()),
        },
    }
}

enum DictOutcome {
    Header(NpyError),
    /// The shape changed: the data length it declares.
    Shape(u64),
    Same,
}

fn npy_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// One flipped byte `at` of the dict `original[10..end]`: what the dict grammar makes of it,
/// by the role the byte had in the undamaged dict.
fn npy_dict_rule(original: &[u8], body: &[u8], at: usize, end: usize) -> DictOutcome {
    let malformed = |offset: usize, expected: &'static str| {
        DictOutcome::Header(NpyError::Malformed { offset: offset as u64, expected })
    };
    let c = body[at];
    let close = (10..end).rev().find(|&i| original[i] == b'}').unwrap();
    if at > close {
        // Padding (and its closing newline).
        return if npy_ws(c) { DictOutcome::Same } else { malformed(at, "only padding after the dict") };
    }
    assert!(!npy_ws(c), "no rule for whitespace replacing {:?} at {at}", original[at] as char);
    // The tokens of the undamaged dict, in order: (start, end, kind).
    let mut tokens: Vec<(usize, usize, u8)> = Vec::new();
    let mut i = 10;
    while i <= close {
        let b = original[i];
        let start = i;
        let kind = match b {
            b'\'' => {
                i = (i + 1..end).find(|&j| original[j] == b'\'').unwrap() + 1;
                b's'
            }
            b'0'..=b'9' => {
                i = (i..end).find(|&j| !original[j].is_ascii_digit()).unwrap();
                b'i'
            }
            b'A'..=b'Z' | b'a'..=b'z' => {
                i = (i..end).find(|&j| !original[j].is_ascii_alphanumeric()).unwrap();
                b'a'
            }
            _ if npy_ws(b) => {
                i = (i..end).find(|&j| !npy_ws(original[j])).unwrap();
                b' '
            }
            _ => {
                i += 1;
                b
            }
        };
        tokens.push((start, i, kind));
    }
    let t = tokens.iter().position(|&(s, e, _)| s <= at && at < e).unwrap();
    let (start, stop, kind) = tokens[t];
    let next = tokens[t + 1..].iter().find(|&&(_, _, k)| k != b' ').map(|&(_, _, k)| k);
    let prev = tokens[..t].iter().rev().find(|&&(_, _, k)| k != b' ').map(|&(_, _, k)| k);
    // Is the token inside the shape's parentheses?
    let in_shape = tokens[..t].iter().any(|&(_, _, k)| k == b'(') && !tokens[..t].iter().any(|&(_, _, k)| k == b')');
    let is_key = kind == b's' && matches!(prev, Some(b'{') | Some(b','));
    let ident_end = |from: usize| (from..end).find(|&j| !(body[j].is_ascii_alphanumeric() || body[j] == b'_')).unwrap();
    match kind {
        b'{' => malformed(at, "'{'"),
        b':' => malformed(at, "':'"),
        b',' if in_shape => malformed(at, "',' or ')' in the shape"),
        b')' => malformed(at, "',' or ')' in the shape"),
        b',' => malformed(at, "',' or '}'"),
        b'(' => malformed(at, "'(' opening the shape"),
        // After the trailing comma another key may come.
        b'}' if !matches!(c, b'\'' | b'"') => malformed(at, "a quoted string"),
        b' ' => match next {
            Some(b's') | Some(b'}') if !matches!(c, b'\'' | b'"') => malformed(at, "a quoted string"),
            Some(b'a') if c.is_ascii_alphanumeric() || c == b'_' => malformed(ident_end(at), "True or False"),
            Some(b'a') => malformed(at, "True or False"),
            Some(b'(') if c != b'(' => malformed(at, "'(' opening the shape"),
            Some(b'i') if !c.is_ascii_digit() => malformed(at, "a non-negative integer"),
            _ => panic!("no rule for {:?} replacing whitespace at {at}", c as char),
        },
        b's' if at == start && !matches!(c, b'\'' | b'"') => malformed(at, "a quoted string"),
        b's' if at + 1 < stop => {
            assert!(!matches!(c, b'\'' | b'\\' | b'\n'), "no rule for {:?} in a string at {at}", c as char);
            if is_key {
                DictOutcome::Header(NpyError::UnknownKey { offset: start as u64 })
            } else {
                let descr = &body[start + 1..stop - 1];
                assert!(neff::npy::Descr::parse(descr).is_err(), "no rule for a valid descr {descr:?}");
                DictOutcome::Header(NpyError::UnsupportedDescr { descr: Text::from_bytes_lossy(descr) })
            }
        }
        b's' => {
            // The closing quote: the string runs on to the next quote, or stops at an escape or
            // a newline.
            let stop = (at + 1..end).find(|&j| matches!(body[j], b'\'' | b'\\' | b'\n'));
            match stop {
                Some(q) if body[q] == b'\'' && is_key => {
                    let after = (q + 1..end).find(|&j| !npy_ws(body[j])).unwrap();
                    assert_ne!(body[after], b':', "no rule for a key running on to a colon");
                    malformed(after, "':'")
                }
                Some(q) if body[q] == b'\'' => DictOutcome::Header(NpyError::UnsupportedDescr {
                    descr: Text::from_bytes_lossy(&body[start + 1..q]),
                }),
                Some(q) => malformed(q, "a string without escapes"),
                None => malformed(end, "a closing quote"),
            }
        }
        b'a' => malformed(ident_end(start), "True or False"),
        b'i' if c.is_ascii_digit() => {
            // Another dimension: the data length the new shape declares (float16 elements).
            assert_eq!(&original[20..24], b"'<f2", "the weight is float16");
            let open = tokens.iter().find(|&&(_, _, k)| k == b'(').unwrap().0;
            let close_paren = tokens.iter().find(|&&(_, _, k)| k == b')').unwrap().0;
            let text = std::str::from_utf8(&body[open + 1..close_paren]).unwrap();
            let elements: u64 = text
                .split(',')
                .map(|d| d.trim())
                .filter(|d| !d.is_empty())
                .map(|d| d.parse::<u64>().unwrap())
                .product();
            DictOutcome::Shape(elements * 2)
        }
        b'i' if at == start => malformed(at, "a non-negative integer"),
        b'i' => {
            assert_ne!(c, b'L', "no rule for a Python 2 long suffix");
            malformed(at, "',' or ')' in the shape")
        }
        _ => panic!("no rule for {:?} replacing {:?} at {at}", c as char, original[at] as char),
    }
}

/// A case's label for messages.
fn label(set: &str, i: usize, what: &str) -> String {
    format!("{set} #{i} ({what})")
}

#[test]
fn the_clean_small_neff_loads_the_image_its_chain_names() {
    let Some(bytes) = common::fixture_bytes(SMALL) else { return };
    let clean = Clean::new(bytes);
    let want = image_of(&clean.members, &clean.chain);
    assert_eq!(want.len(), 24, "5 instruction streams, 4 DVE tables, 2 activation tables, 1 weight per subgraph");
    assert_eq!(load(&clean.neff).unwrap(), want);
}

#[test]
fn damaged_manifests_give_what_their_damage_calls_for() {
    let Some(bytes) = common::fixture_bytes(SMALL) else { return };
    let clean = Clean::new(bytes.clone());
    let mut outcomes = Vec::new();
    for (i, case) in corpus::damaged_manifest_cases(&bytes).iter().enumerate() {
        let what = label("manifest", i, &format!("{}: {:?}", case.member, case.damage));
        let want = clean.want_member(&case.member, &case.body, &case.damage);
        outcomes.push(check(&what, &load(&case.neff), &want));
    }
    summary("damaged manifests", &outcomes);
}

#[test]
fn damaged_npy_headers_and_cut_data_give_what_their_damage_calls_for() {
    let Some(bytes) = common::fixture_bytes(SMALL) else { return };
    let clean = Clean::new(bytes.clone());
    let mut outcomes = Vec::new();
    for (i, case) in corpus::damaged_npy_cases(&bytes).iter().enumerate() {
        let what = label("npy", i, &format!("{:?}", case.damage));
        let want = clean.want_member(&case.member, &case.body, &case.damage);
        if let Damage::Cut { .. } = case.damage {
            // A cut in the data is always refused, with the sizes.
            assert!(matches!(want, Want::Refused(Refusal { kind: ErrorKind::Npy(NpyError::Truncated { .. }), .. })));
        }
        outcomes.push(check(&what, &load(&case.neff), &want));
    }
    summary("damaged .npy", &outcomes);
}

#[test]
fn damaged_tar_streams_give_what_the_flipped_byte_calls_for() {
    let Some(bytes) = common::fixture_bytes(SMALL) else { return };
    let clean = Clean::new(bytes.clone());
    let mut outcomes = Vec::new();
    for (i, case) in corpus::damaged_tar_cases(&bytes).iter().enumerate() {
        let what = label("tar", i, &format!("bit {} of byte {}", case.bit, case.at));
        let (at, bit) = (case.at, case.bit);
        let entry =
            clean.layout.iter().find(|(_, header, data, size)| *header <= at && at < data + size.div_ceil(512) * 512);
        let Some((name, header, data, size)) = entry else { panic!("{what}: no rule for the end-of-archive blocks") };
        let want = if at < header + 512 {
            // A header block: its checksum no longer matches.
            let mut block: [u8; 512] = clean.tar[*header..header + 512].try_into().unwrap();
            block[at - header] ^= 1 << bit;
            let field = std::str::from_utf8(&block[148..156]).unwrap();
            let stored = u64::from_str_radix(field.trim_matches(|c| c == ' ' || c == '\0'), 8).unwrap();
            block[148..156].fill(b' ');
            let computed: u64 = block.iter().map(|&b| u64::from(b)).sum();
            assert_ne!(stored, computed, "{what}");
            let kind = ErrorKind::Tar(TarError::Checksum { stored, computed });
            Want::Refused(Refusal {
                stage: Stage::Tar,
                member: String::new(),
                key_path: String::new(),
                offset: *header as u64,
                base: OffsetBase::Archive,
                kind,
            })
        } else if at < data + size {
            let mut body = clean.members[name].clone();
            body[at - data] ^= 1 << bit;
            clean.want_member(name, &body, &Damage::Flip { at: at - data, bit })
        } else {
            // The zero padding after a body: nobody reads it.
            Want::Loads(image_of(&clean.members, &clean.chain))
        };
        outcomes.push(check(&format!("{what}, {name}"), &load(&case.neff), &want));
    }
    summary("damaged tar streams", &outcomes);
}

#[test]
fn every_cut_of_the_small_neff_is_refused_by_the_header_gates() {
    let Some(bytes) = common::fixture_bytes(SMALL) else { return };
    let data_size = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
    for (i, cut) in corpus::cuts(&bytes).iter().enumerate() {
        let len = cut.len() as u64;
        assert_eq!(len, i as u64 * 997);
        let (offset, kind) = if len < 1024 {
            (0, HeaderError::ShortFile { received: len })
        } else {
            (16, HeaderError::DataSizePastEnd { data_size, available: len - 1024 })
        };
        let want = Refusal {
            stage: Stage::Header,
            member: String::new(),
            key_path: String::new(),
            offset,
            base: OffsetBase::File,
            kind: ErrorKind::Header(kind),
        };
        check(&format!("cut at {len}"), &load(cut), &Want::Refused(want));
    }
}
