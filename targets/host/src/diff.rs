//! `neff diff A B [--json]`: what differs between two NEFFs.
//!
//! Five views, each from one streaming pass per file (the loader's check, with the tar tap of
//! [`crate::tap`] and the consumed-value observer of [`crate::consumed`]):
//!
//! * the header, field by field;
//! * the members: added, removed, and changed (by XXH3 digest of the member's bytes, or size),
//!   debug data and producer metadata included;
//! * every consumed manifest key, by member and key path, with both values (absent on one
//!   side: `null` / `-`);
//! * the I/O signature: each input and output of `neff.json` by name (dtype, shape, size);
//! * the payloads as the loader places them: digest of the bytes that land (a `.npy`'s array
//!   data), length, usage class and core, by member.
//!
//! Exit status as diff(1): 0 the same, 1 different, 2 trouble (a usage error, an unreadable
//! path, or an archive that cannot be read: its header, gzip or tar). A NEFF whose manifests
//! the loader refuses is compared as far as it was read, the refusal printed as a warning (a
//! diff is how one finds out why a NEFF is refused). What is kept is the digests and the
//! consumed values of both files, not their bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use crate::consumed::ConsumedValues;
use crate::error::CliError;
use crate::header_view::hex;
use crate::loading::{Pass, TensorInfo};

/// What one pass keeps of a NEFF for comparing.
pub struct Side {
    /// The path as given.
    pub label: String,
    /// Header fields, as `info --json` names them (plus `tpb_per_node` and `hash`).
    pub header: Vec<(String, Value)>,
    /// `name -> (size, digest)` of every member (the last copy of a name).
    pub members: BTreeMap<String, (u64, u64)>,
    /// `member -> key path -> value`.
    pub manifests: BTreeMap<String, BTreeMap<String, String>>,
    /// `(kind, name) -> (dtype, shape, size)`, in `neff.json` order.
    pub io: Vec<((&'static str, String), Value)>,
    /// `member -> {digest, len, usage, core}` of each payload placed.
    pub payloads: BTreeMap<String, Value>,
}

fn tensor(t: &TensorInfo) -> Value {
    json!({"dtype": t.dtype, "shape": t.shape, "size": t.size})
}

/// The side of one pass.
pub fn side(label: String, pass: &Pass, consumed: ConsumedValues) -> Result<Side, CliError> {
    if let Some(first) = consumed.unreadable.first() {
        return Err(CliError::usage(format!("{label}: {first}: a consumed value could not be read back (a bug)")));
    }
    let mut header: Vec<(String, Value)> = match serde_json::to_value(pass.header.to_json()) {
        Ok(Value::Object(m)) => m.into_iter().collect(),
        _ => Vec::new(),
    };
    header.push(("tpb_per_node".into(), json!(pass.header.tpb_per_node_used())));
    header.push(("hash".into(), json!(hex(&pass.header.hash))));
    let members = pass
        .members
        .as_ref()
        .map(|log| log.members.iter().map(|m| (m.name.clone(), (m.size, m.digest))).collect())
        .unwrap_or_default();
    let mut io = Vec::new();
    if let Some((_, inputs, outputs)) = &pass.collected.neff {
        io.extend(inputs.iter().map(|t| (("input", t.name.clone()), tensor(t))));
        io.extend(outputs.iter().map(|t| (("output", t.name.clone()), tensor(t))));
    }
    let payloads = pass
        .report
        .payloads
        .iter()
        .map(|p| {
            let v = json!({"digest": format!("{:016x}", p.digest), "len": p.len, "usage": p.usage.as_str(), "core": p.core});
            (p.member.clone(), v)
        })
        .collect();
    Ok(Side { label, header, members, manifests: consumed.values, io, payloads })
}

/// Reads one NEFF for comparing. An archive that cannot be read is trouble (exit 2): exit 1
/// means "different". A refusal of its manifests is a warning.
pub fn read_side(path: &Path) -> Result<Side, CliError> {
    let trouble = |e: CliError| match e {
        CliError::Rejected { message, .. } => CliError::usage(format!("{}: {message}", path.display())),
        other => other,
    };
    let (pass, consumed) = crate::loading::consumed_pass(path, "diff").map_err(trouble)?;
    side(path.display().to_string(), &pass, consumed)
}

/// The differences, as the `--json` object (`"same"` says whether there are none).
pub fn compare(a: &Side, b: &Side) -> Value {
    let header: Vec<Value> = a
        .header
        .iter()
        .filter_map(|(k, va)| {
            let vb = b.header.iter().find(|(kb, _)| kb == k).map_or(Value::Null, |(_, v)| v.clone());
            (*va != vb).then(|| json!({"field": k, "a": va, "b": vb}))
        })
        .collect();

    let member_json = |name: &str, (size, digest): (u64, u64)| json!({"name": name, "size": size, "digest": format!("{digest:016x}")});
    let added: Vec<Value> =
        b.members.iter().filter(|(n, _)| !a.members.contains_key(*n)).map(|(n, v)| member_json(n, *v)).collect();
    let removed: Vec<Value> =
        a.members.iter().filter(|(n, _)| !b.members.contains_key(*n)).map(|(n, v)| member_json(n, *v)).collect();
    let mut changed = Vec::new();
    let mut same_members = 0u64;
    for (name, va) in &a.members {
        match b.members.get(name) {
            Some(vb) if vb == va => same_members += 1,
            Some(vb) => changed.push(json!({
                "name": name,
                "a": {"size": va.0, "digest": format!("{:016x}", va.1)},
                "b": {"size": vb.0, "digest": format!("{:016x}", vb.1)},
            })),
            None => {}
        }
    }

    let mut manifests = Vec::new();
    let members: BTreeSet<&String> = a.manifests.keys().chain(b.manifests.keys()).collect();
    let empty = BTreeMap::new();
    for member in members {
        let (ka, kb) = (a.manifests.get(member).unwrap_or(&empty), b.manifests.get(member).unwrap_or(&empty));
        let keys: BTreeSet<&String> = ka.keys().chain(kb.keys()).collect();
        for key in keys {
            let (va, vb) = (ka.get(key), kb.get(key));
            if va != vb {
                manifests.push(json!({"member": member, "key": key, "a": va, "b": vb}));
            }
        }
    }

    let mut io = Vec::new();
    let mut seen = BTreeSet::new();
    for (id, _) in a.io.iter().chain(&b.io) {
        if !seen.insert(id.clone()) {
            continue;
        }
        let find = |s: &Side| s.io.iter().find(|(k, _)| k == id).map(|(_, v)| v.clone());
        let (va, vb) = (find(a), find(b));
        if va != vb {
            io.push(json!({"kind": id.0, "name": id.1, "a": va, "b": vb}));
        }
    }
    // The same tensors in another order is another signature too.
    let order = |s: &Side| s.io.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let reordered = io.is_empty() && order(a) != order(b);

    let mut payloads = Vec::new();
    let names: BTreeSet<&String> = a.payloads.keys().chain(b.payloads.keys()).collect();
    for name in names {
        let (va, vb) = (a.payloads.get(name), b.payloads.get(name));
        if va != vb {
            payloads.push(json!({"member": name, "a": va, "b": vb}));
        }
    }

    let same = header.is_empty()
        && added.is_empty()
        && removed.is_empty()
        && changed.is_empty()
        && manifests.is_empty()
        && io.is_empty()
        && !reordered
        && payloads.is_empty();
    json!({
        "a": a.label,
        "b": b.label,
        "same": same,
        "header": header,
        "members": {"added": added, "removed": removed, "changed": changed, "same": same_members},
        "manifests": manifests,
        "io": io,
        "io_order_differs": reordered,
        "payloads": payloads,
    })
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The human form of [`compare`]'s object.
pub fn human(d: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "--- {}\n+++ {}", text(&d["a"]), text(&d["b"]));
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let header = list(&d["header"]);
    if header.is_empty() {
        let _ = writeln!(out, "header: same");
    } else {
        let _ = writeln!(out, "header: {} differ", count(header.len(), "field"));
        for h in &header {
            let _ = writeln!(out, "  {:<20} {} -> {}", text(&h["field"]), text(&h["a"]), text(&h["b"]));
        }
    }
    let m = &d["members"];
    let (added, removed, changed) = (list(&m["added"]), list(&m["removed"]), list(&m["changed"]));
    let _ = writeln!(
        out,
        "members: {} changed, {} added, {} removed, {} same",
        changed.len(),
        added.len(),
        removed.len(),
        m["same"]
    );
    for c in &changed {
        let _ = writeln!(
            out,
            "  ~ {}  {} bytes {} -> {} bytes {}",
            text(&c["name"]),
            c["a"]["size"],
            text(&c["a"]["digest"]),
            c["b"]["size"],
            text(&c["b"]["digest"])
        );
    }
    for (sign, items) in [("+", &added), ("-", &removed)] {
        for i in items {
            let _ = writeln!(out, "  {sign} {}  {} bytes {}", text(&i["name"]), i["size"], text(&i["digest"]));
        }
    }
    let manifests = list(&d["manifests"]);
    if manifests.is_empty() {
        let _ = writeln!(out, "manifest keys: same");
    } else {
        let _ = writeln!(out, "manifest keys: {} differ", count(manifests.len(), "key"));
        for k in &manifests {
            let _ =
                writeln!(out, "  {}: {}: {} -> {}", text(&k["member"]), text(&k["key"]), text(&k["a"]), text(&k["b"]));
        }
    }
    let io = list(&d["io"]);
    if io.is_empty() && d["io_order_differs"] != true {
        let _ = writeln!(out, "I/O signature: same");
    } else {
        let _ = writeln!(out, "I/O signature: differs");
        if d["io_order_differs"] == true {
            let _ = writeln!(out, "  the same tensors in another order");
        }
        let tensor = |v: &Value| match v {
            Value::Null => "-".to_owned(),
            t => format!("{} {} ({} bytes)", text(&t["dtype"]), t["shape"], t["size"]),
        };
        for t in &io {
            let _ = writeln!(
                out,
                "  {} {}: {} -> {}",
                text(&t["kind"]),
                text(&t["name"]),
                tensor(&t["a"]),
                tensor(&t["b"])
            );
        }
    }
    let payloads = list(&d["payloads"]);
    if payloads.is_empty() {
        let _ = writeln!(out, "payloads: same");
    } else {
        let _ = writeln!(out, "payloads: {} differ", count(payloads.len(), "payload"));
        let p = |v: &Value| match v {
            Value::Null => "-".to_owned(),
            p => format!("{} {} bytes {} core {}", text(&p["digest"]), p["len"], text(&p["usage"]), text(&p["core"])),
        };
        for x in &payloads {
            let _ = writeln!(out, "  {}: {} -> {}", text(&x["member"]), p(&x["a"]), p(&x["b"]));
        }
    }
    let _ = writeln!(out, "{}", if d["same"] == true { "same" } else { "different" });
    out
}
