//! The JSON tokenizer against `serde_json`: generated documents (valid ones rebuild the same
//! `serde_json::Value`; mutated ones are valid or invalid for both), the real manifests, and
//! nesting far beyond the depth limit on a small stack.
//!
//! Deliberate differences from `serde_json`, which the comparisons below allow for:
//! - a number the caller receives longer than `NUMBER_CAPACITY` (48 bytes) is a capacity
//!   error here, where `serde_json` reads it (mutations can glue two numbers together);
//! - `skip_value` checks a number's grammar, not its magnitude: `1e400` skips fine, while
//!   `serde_json` refuses it even when the value is ignored;
//! - nesting: `serde_json` stops at 128 levels (127 open containers), this tokenizer at `DEPTH`
//!   (here 128 open containers). The generated documents nest at most 7 levels.
//! - `serde_json` without `float_roundtrip` may round a float 1 ULP away from the correctly
//!   rounded value core's parse gives, so floats compare within a few ULPs.

// Tests may unwrap, index and panic (the core's deny list is for library code).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use neff::json::{Event, Fault, JsonError, Number, Tokenizer};
use neff::ErrorKind;
use serde_json::{Map, Value};

/// Big enough for every string in the generated documents and the fixtures.
const SCRATCH: usize = 1 << 16;
const DEPTH: u16 = 128;

use common::chunked::Chunked as ChunkedReader;

/// An event with owned text; a number carries the `serde_json::Number` it stands for.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    Key(String),
    Str(String),
    Num(String, Result<serde_json::Number, JsonError>),
    Bool(bool),
    Null,
    End,
}

/// The number as `serde_json` represents it: `u64`, else `i64`, else `f64` (integers out of
/// range fall back to `f64`; `-0` is the float `-0.0`).
fn number_value(n: Number<'_>) -> Result<serde_json::Number, JsonError> {
    let as_float = || n.as_f64().map(|f| serde_json::Number::from_f64(f).expect("finite"));
    if !n.is_integer() || n.text() == "-0" {
        return as_float();
    }
    let exact = if n.text().starts_with('-') {
        n.as_i64().map(serde_json::Number::from)
    } else {
        n.as_u64().map(serde_json::Number::from)
    };
    match exact {
        Err(JsonError::NumberOutOfRange) => as_float(),
        other => other,
    }
}

fn own(event: Event<'_>) -> Owned {
    match event {
        Event::BeginObject => Owned::BeginObject,
        Event::EndObject => Owned::EndObject,
        Event::BeginArray => Owned::BeginArray,
        Event::EndArray => Owned::EndArray,
        Event::Key(k) => Owned::Key(k.to_owned()),
        Event::Str(s) => Owned::Str(s.to_owned()),
        Event::Num(n) => Owned::Num(n.text().to_owned(), number_value(n)),
        Event::Bool(b) => Owned::Bool(b),
        Event::Null => Owned::Null,
        Event::End => Owned::End,
    }
}

type Stream = (Vec<(u64, Owned)>, Option<Fault>);

/// Every event with its offset, up to `End` or the first fault.
fn stream(tok: &mut Tokenizer<'_>, doc: &[u8], chunk: usize) -> Stream {
    tok.reset();
    let mut src = ChunkedReader::new(doc, chunk);
    let mut events = Vec::new();
    loop {
        match tok.next(&mut src) {
            Ok(event) => {
                let event = own(event);
                events.push((tok.offset(), event.clone()));
                if event == Owned::End {
                    return (events, None);
                }
            }
            Err(fault) => return (events, Some(fault)),
        }
    }
}

/// The stream of `doc`, checked identical for chunks of 1, 7 and 4096 bytes.
fn stream_all_chunkings(tok: &mut Tokenizer<'_>, doc: &[u8]) -> Stream {
    let whole = stream(tok, doc, 4096);
    for chunk in [1, 7] {
        let other = stream(tok, doc, chunk);
        assert!(other == whole, "chunk {chunk} differs on {}", String::from_utf8_lossy(doc));
    }
    whole
}

/// Why a document did not rebuild into a value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Refusal {
    Tokenizer(Fault),
    Number(JsonError),
}

/// Rebuilds the `serde_json::Value` of a complete event stream, without recursion.
fn rebuild((events, fault): &Stream) -> Result<Value, Refusal> {
    if let Some(fault) = fault {
        return Err(Refusal::Tokenizer(*fault));
    }
    let mut stack: Vec<(Value, Option<String>)> = Vec::new();
    let mut key: Option<String> = None;
    let mut root = None;
    for (_, event) in events {
        let value = match event {
            Owned::BeginObject => {
                stack.push((Value::Object(Map::new()), key.take()));
                continue;
            }
            Owned::BeginArray => {
                stack.push((Value::Array(Vec::new()), key.take()));
                continue;
            }
            Owned::Key(k) => {
                key = Some(k.clone());
                continue;
            }
            Owned::EndObject | Owned::EndArray => {
                let (value, own_key) = stack.pop().expect("balanced");
                key = own_key;
                value
            }
            Owned::Str(s) => Value::String(s.clone()),
            Owned::Num(_, n) => Value::Number(n.clone().map_err(Refusal::Number)?),
            Owned::Bool(b) => Value::Bool(*b),
            Owned::Null => Value::Null,
            Owned::End => break,
        };
        match stack.last_mut() {
            None => root = Some(value),
            Some((Value::Object(map), _)) => {
                map.insert(key.take().expect("a key before each member value"), value);
            }
            Some((Value::Array(items), _)) => items.push(value),
            Some(_) => unreachable!("only containers are stacked"),
        }
    }
    Ok(root.expect("End after a value"))
}

/// Skips the whole document with `skip_value`, then expects `End`.
fn skip_document(tok: &mut Tokenizer<'_>, doc: &[u8], chunk: usize) -> Result<(), Fault> {
    tok.reset();
    let mut src = ChunkedReader::new(doc, chunk);
    assert!(tok.skip_value(&mut src)?, "a document starts with a value or is an error");
    match tok.next(&mut src)? {
        Event::End => Ok(()),
        other => panic!("after the top-level value: {other:?}"),
    }
}

/// Structural equality, floats within a few ULPs (see the module docs).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (Some(x), Some(y)) = (x.as_f64(), y.as_f64()) else { return false };
            close(x, y)
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Equal, or within 4 ULPs of the larger magnitude.
fn close(x: f64, y: f64) -> bool {
    x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
}

/// xorshift64*: deterministic, so a failure names a reproducible document.
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

fn whitespace(rng: &mut Rng, out: &mut Vec<u8>) {
    while rng.below(4) == 0 {
        out.push(*rng.pick(b" \t\r\n"));
    }
}

fn string(rng: &mut Rng, out: &mut Vec<u8>) {
    out.push(b'"');
    for _ in 0..rng.below(12) {
        match rng.below(10) {
            0..=4 => {
                let b = (0x20 + rng.below(0x5F)) as u8;
                if b == b'"' || b == b'\\' {
                    out.push(b'\\');
                }
                out.push(b);
            }
            5 => {
                let escape =
                    *rng.pick::<&[u8]>(&[&b"\\\""[..], b"\\\\", b"\\/", b"\\b", b"\\f", b"\\n", b"\\r", b"\\t"]);
                out.extend_from_slice(escape);
            }
            6 => {
                // A BMP code point outside the surrogates, as \uXXXX in either case.
                let mut cp = rng.below(0x1_0000) as u32;
                if (0xD800..0xE000).contains(&cp) {
                    cp -= 0x1000;
                }
                let escaped = if rng.below(2) == 0 { format!("\\u{cp:04x}") } else { format!("\\u{cp:04X}") };
                out.extend_from_slice(escaped.as_bytes());
            }
            7 => {
                let c = char::from_u32(0x1_0000 + rng.below(0x10_0000) as u32).expect("astral");
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{unit:04X}").as_bytes());
                }
            }
            8 => {
                let c = *rng.pick(&['é', 'ß', '€', '中', '😀', '\u{10FFFF}', '\u{7F}', '\u{80}', '\u{FFFD}']);
                out.extend_from_slice(c.to_string().as_bytes());
            }
            _ => out.extend_from_slice(format!("\\u{:04x}", rng.below(0x20)).as_bytes()),
        }
    }
    out.push(b'"');
}

fn digits(rng: &mut Rng, out: &mut Vec<u8>, count: u64, leading_nonzero: bool) {
    for i in 0..count {
        let low = if i == 0 && leading_nonzero { 1 } else { 0 };
        out.push(b'0' + (low + rng.below(10 - low)) as u8);
    }
}

fn number(rng: &mut Rng, out: &mut Vec<u8>) {
    match rng.below(6) {
        0 => {
            let extreme = *rng.pick(&[
                "0",
                "-0",
                "-0.0",
                "0.0",
                "18446744073709551615",
                "18446744073709551616",
                "9223372036854775807",
                "9223372036854775808",
                "-9223372036854775808",
                "-9223372036854775809",
                "99999999999999999999999",
                "0.5e-3",
                "1E+2",
                "1e-400",
                "2.2250738585072014e-308",
                "1.7976931348623157e308",
            ]);
            out.extend_from_slice(extreme.as_bytes());
        }
        1 => out.extend_from_slice(rng.next().to_string().as_bytes()),
        2 => out.extend_from_slice((rng.next() as i64).to_string().as_bytes()),
        3 => out.extend_from_slice(rng.below(1000).to_string().as_bytes()),
        _ => {
            if rng.below(2) == 0 {
                out.push(b'-');
            }
            if rng.below(3) == 0 {
                out.push(b'0');
            } else {
                let n = 1 + rng.below(6);
                digits(rng, out, n, true);
            }
            if rng.below(3) != 0 {
                out.push(b'.');
                let n = 1 + rng.below(9);
                digits(rng, out, n, false);
            }
            if rng.below(2) == 0 {
                out.push(*rng.pick(b"eE"));
                if rng.below(2) == 0 {
                    out.push(*rng.pick(b"+-"));
                }
                let n = 1 + rng.below(2);
                digits(rng, out, n, false);
            }
        }
    }
}

fn value(rng: &mut Rng, out: &mut Vec<u8>, depth: u32) {
    let kinds = if depth >= 6 { 4 } else { 7 };
    let kind = rng.below(kinds);
    value_of_kind(rng, out, depth, kind);
}

/// Kinds 0-3 are scalars, 4 and 5 an object, 6 an array.
fn value_of_kind(rng: &mut Rng, out: &mut Vec<u8>, depth: u32, kind: u64) {
    match kind {
        0 => string(rng, out),
        1 => number(rng, out),
        2 => {
            let literal = *rng.pick::<&[u8]>(&[&b"true"[..], b"false"]);
            out.extend_from_slice(literal);
        }
        3 => out.extend_from_slice(b"null"),
        4 | 5 => {
            out.push(b'{');
            let n = rng.below(5);
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                whitespace(rng, out);
                string(rng, out);
                whitespace(rng, out);
                out.push(b':');
                whitespace(rng, out);
                value(rng, out, depth + 1);
                whitespace(rng, out);
            }
            whitespace(rng, out);
            out.push(b'}');
        }
        _ => {
            out.push(b'[');
            let n = rng.below(5);
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                whitespace(rng, out);
                value(rng, out, depth + 1);
                whitespace(rng, out);
            }
            whitespace(rng, out);
            out.push(b']');
        }
    }
}

fn document(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    whitespace(rng, &mut out);
    // Mostly containers at the top, as manifests are, sometimes a bare scalar.
    let kind = if rng.below(8) == 0 { rng.below(4) } else { 4 + rng.below(3) };
    value_of_kind(rng, &mut out, 0, kind);
    whitespace(rng, &mut out);
    out
}

/// Flips, deletes, inserts or truncates at a random place.
fn mutate(rng: &mut Rng, doc: &[u8]) -> Vec<u8> {
    const INTERESTING: &[u8] = b"{}[],:\"\\0159-+.eEtfnu \x00\x1F\x7F\x80\xBF\xC0\xE0\xED\xF0\xF4\xFF";
    let mut out = doc.to_vec();
    if out.is_empty() {
        out.push(*rng.pick(INTERESTING));
        return out;
    }
    let at = rng.below(out.len() as u64) as usize;
    match rng.below(4) {
        0 => out[at] = *rng.pick(INTERESTING),
        1 => {
            out.remove(at);
        }
        2 => out.insert(at, *rng.pick(INTERESTING)),
        _ => out.truncate(at),
    }
    out
}

fn is_capacity(refusal: &Result<Value, Refusal>) -> bool {
    matches!(refusal, Err(Refusal::Tokenizer(Fault { kind: ErrorKind::Capacity(_), .. })))
}

#[test]
fn generated_documents_match_serde_json() {
    let mut scratch = vec![0; SCRATCH];
    let mut tok = Tokenizer::new(&mut scratch, DEPTH);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut valid, mut invalid, mut mutated_valid) = (0, 0, 0);
    for index in 0..3000 {
        let doc = document(&mut rng);
        let shown = String::from_utf8_lossy(&doc).into_owned();
        let theirs: Value = serde_json::from_slice(&doc)
            .unwrap_or_else(|e| panic!("doc {index} invalid for serde_json ({e}): {shown}"));
        let ours =
            rebuild(&stream_all_chunkings(&mut tok, &doc)).unwrap_or_else(|e| panic!("doc {index}: {e:?}: {shown}"));
        assert!(same(&ours, &theirs), "doc {index}: {shown}\nours:   {ours}\ntheirs: {theirs}");
        assert_eq!(skip_document(&mut tok, &doc, 7), Ok(()), "doc {index} skip: {shown}");
        valid += 1;

        for round in 0..10 {
            let bad = mutate(&mut rng, &doc);
            let shown = String::from_utf8_lossy(&bad).into_owned();
            let theirs = serde_json::from_slice::<Value>(&bad);
            let ours = rebuild(&stream_all_chunkings(&mut tok, &bad));
            if is_capacity(&ours) {
                continue;
            }
            assert_eq!(
                ours.is_ok(),
                theirs.is_ok(),
                "doc {index} mutation {round}: {shown}\nours: {ours:?}\ntheirs: {theirs:?}"
            );
            if let (Ok(ours), Ok(theirs)) = (&ours, &theirs) {
                assert!(same(ours, theirs), "doc {index} mutation {round}: {shown}");
                mutated_valid += 1;
            } else {
                invalid += 1;
            }
            let skipped = skip_document(&mut tok, &bad, 4096);
            let out_of_range = theirs.as_ref().is_err_and(|e| e.to_string().starts_with("number out of range"));
            if !out_of_range {
                assert_eq!(skipped.is_ok(), theirs.is_ok(), "doc {index} mutation {round} skipped: {shown}");
            }
        }
    }
    eprintln!("{valid} generated documents, {invalid} invalid and {mutated_valid} valid mutations");
    // The generator and the mutations must exercise both sides.
    assert_eq!(valid, 3000);
    assert!(invalid > 20_000, "only {invalid} mutated documents were invalid");
    assert!(mutated_valid > 500, "only {mutated_valid} mutated documents stayed valid");
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[test]
fn real_manifests_rebuild_to_serde_json_values() {
    let Some(root) = common::fixture("public/nkipy") else { return };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&root).expect("fixture dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() && path.extension().is_some_and(|e| e == "extracted") {
            json_files(&path, &mut files);
        }
    }
    files.sort();
    assert!(files.len() >= 10, "found only {} JSON files under {}", files.len(), root.display());
    let mut scratch = vec![0; SCRATCH];
    let mut tok = Tokenizer::new(&mut scratch, DEPTH);
    let mut bytes = 0;
    for path in &files {
        let doc = std::fs::read(path).expect("fixture");
        let theirs: Value = serde_json::from_slice(&doc).expect("fixtures are valid JSON");
        let ours =
            rebuild(&stream_all_chunkings(&mut tok, &doc)).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert!(same(&ours, &theirs), "{} differs", path.display());
        assert_eq!(skip_document(&mut tok, &doc, 1), Ok(()), "{}", path.display());
        bytes += doc.len();
    }
    eprintln!("{} manifests, {bytes} bytes, tokenized like serde_json", files.len());
}

#[test]
fn a_hundred_thousand_levels_in_a_skipped_value_hit_the_depth_limit_on_a_small_stack() {
    let outcome = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(|| {
            let mut results = Vec::new();
            for (open, prefix) in [(&b"["[..], &b"{\"keep\": 1, \"skip\": "[..]), (b"{\"a\":", b"{\"skip\": ")] {
                let mut doc = prefix.to_vec();
                for _ in 0..100_000 {
                    doc.extend_from_slice(open);
                }
                let mut scratch = [0; 256];
                let mut tok = Tokenizer::new(&mut scratch, 128);
                let mut src = ChunkedReader::new(&doc, 4096);
                assert_eq!(tok.next(&mut src), Ok(Event::BeginObject));
                loop {
                    match tok.next(&mut src).expect("the prefix is valid") {
                        Event::Key("skip") => break,
                        Event::Key(_) => assert_eq!(tok.skip_value(&mut src), Ok(true)),
                        other => panic!("unexpected {other:?}"),
                    }
                }
                results.push((prefix.len(), open.len(), tok.skip_value(&mut src)));
            }
            results
        })
        .expect("spawn")
        .join()
        .expect("no stack overflow");
    for (prefix, step, result) in outcome {
        // The enclosing object is level 1: the 128th opening inside the skipped value fails.
        let offset = (prefix + 127 * step) as u64;
        assert_eq!(result, Err(Fault::json(offset, JsonError::DepthLimit { limit: 128 })));
    }
}
