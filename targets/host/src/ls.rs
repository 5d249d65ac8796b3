//! `neff ls FILE [--json]`: every member with its size and role, like `tar -tv`.
//!
//! One streaming pass: the loader's check, the tar tap listing every member (debug data and
//! producer metadata included), and the consumed values of every manifest
//! ([`crate::consumed`]). A member's role is the key that reached it, by the loader's own table
//! of what names what ([`neff::loader::named_by`]): starting at the chain's root (`neff.json`,
//! or without it the KELF the loader falls back to), a manifest reached so far reaches each
//! member a naming key of its tier names, relative to the directory the loader resolves it in
//! (the root for `neff.json` and a KELF, the definition's directory for a definition and what
//! it names; an activation set by its name plus `.json`), and so on. A member nothing reached
//! (debug data, producer metadata, a key the loader does not follow such as `act_info`) is
//! listed as `not reached`. Payloads carry the usage class and core the loader placed them
//! with.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use neff::loader::{dir_of, named_by, Names, Tier};
use serde_json::{json, Value};

use crate::consumed::ConsumedValues;
use crate::loading::{join, Pass};

/// A key of a manifest that names a member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The manifest member.
    pub member: String,
    /// The key path in it.
    pub key: String,
    /// The key names a manifest (else a payload).
    pub manifest: bool,
}

/// The strings of a consumed value (`"PE.bin"`, or `["exp_and_others"]`).
fn strings(value: &str) -> Vec<String> {
    match serde_json::from_str::<Value>(value) {
        Ok(Value::String(s)) => vec![s],
        Ok(Value::Array(items)) => items.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// Every member reached from the chain's root, with the keys that reached it (the root has
/// none). `manifests` are the consumed values by member; `members` every member in the tar.
pub fn reached(
    manifests: &BTreeMap<String, BTreeMap<String, String>>,
    members: &BTreeSet<&str>,
) -> BTreeMap<String, Vec<Reference>> {
    let mut out: BTreeMap<String, Vec<Reference>> = BTreeMap::new();
    let root = [("neff.json", Tier::Neff), ("kelf-0.json", Tier::Kelf), ("kelf-a.json", Tier::Kelf)]
        .into_iter()
        .find(|(r, _)| manifests.contains_key(*r));
    let Some((root, tier)) = root else { return out };
    out.insert(root.to_owned(), Vec::new());
    // Each manifest with its tier and the directory its names are relative to, as the loader
    // resolves them: `neff.json` and a KELF name members from the archive's root (a KELF at
    // `dir/k.json` still names `sg00/def.json`); a definition and everything below it from the
    // definition's directory (an engine JSON at `sg00/e/Activation.json` names `sg00/PE.bin`).
    let mut queue = VecDeque::from([(root.to_owned(), tier, String::new())]);
    let mut done = BTreeSet::new();
    while let Some((manifest, tier, base)) = queue.pop_front() {
        if !done.insert(manifest.clone()) {
            continue;
        }
        let Some(values) = manifests.get(&manifest) else { continue };
        for (key, value) in values {
            let Some((names, suffix)) = named_by(tier, key) else { continue };
            for s in strings(value) {
                let target = format!("{}{suffix}", join(&base, &s));
                if target == manifest || !members.contains(target.as_str()) {
                    continue;
                }
                let next = match names {
                    Names::Manifest(next) => Some(next),
                    Names::Payload(_) => None,
                };
                let reference = Reference { member: manifest.clone(), key: key.clone(), manifest: next.is_some() };
                out.entry(target.clone()).or_default().push(reference);
                if let Some(next) = next.filter(|_| manifests.contains_key(&target)) {
                    // A KELF's `graphs[].definition` starts a subgraph directory.
                    let below = if next == Tier::Def { dir_of(&target).to_owned() } else { base.clone() };
                    queue.push_back((target, next, below));
                }
            }
        }
    }
    out
}

/// One `--json` row per member of the pass, in tar order.
pub fn rows(pass: &Pass, consumed: &ConsumedValues) -> Vec<Value> {
    let log = pass.members.as_ref().map(|m| m.members.as_slice()).unwrap_or_default();
    let names: BTreeSet<&str> = log.iter().map(|m| m.name.as_str()).collect();
    let reach = reached(&consumed.values, &names);
    let payloads: HashMap<&str, _> = pass.report.payloads.iter().map(|p| (p.member.as_str(), p)).collect();
    let mut rows = Vec::new();
    for m in log {
        let refs = reach.get(&m.name);
        let payload = payloads.get(m.name.as_str());
        let as_manifest = refs.is_some_and(|r| r.is_empty() || r.iter().any(|r| r.manifest));
        let role = match (refs, payload) {
            (Some(_), _) if as_manifest && consumed.values.contains_key(&m.name) => Some("manifest"),
            (_, Some(_)) => Some("payload"),
            (Some(_), None) => Some("named"),
            (None, None) => None,
        };
        rows.push(json!({
            "name": m.name,
            "size": m.size,
            "digest": format!("{:016x}", m.digest),
            "role": role,
            "usage": payload.map(|p| p.usage.as_str()),
            "core": payload.and_then(|p| p.core),
            "reached_by": refs.map(|r| r.iter().map(|r| json!({"member": r.member, "key": r.key})).collect::<Vec<_>>()),
        }));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_follows_names_from_the_root_only() {
        let mut manifests = BTreeMap::new();
        let values = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        manifests.insert("neff.json".to_owned(), values(&[("nodes[0].attrs.kelf", "\"kelf-0.json\"")]));
        manifests.insert("kelf-0.json".to_owned(), values(&[("graphs[0].definition", "\"sg00/def.json\"")]));
        manifests.insert(
            "sg00/def.json".to_owned(),
            values(&[("pe", "\"PE.json\""), ("act", "\"Act.json\""), ("name", "\"def.json\"")]),
        );
        manifests.insert("sg00/PE.json".to_owned(), values(&[("instr", "\"PE.bin\"")]));
        let act = [("activation_function_sets", "[\"exp\"]"), ("act_info", "\"act_info.json\"")];
        manifests.insert("sg00/Act.json".to_owned(), values(&act));
        // Parsed on spec, but nothing reached names it.
        manifests.insert("sg09/def.json".to_owned(), values(&[("pe", "\"PE.json\"")]));
        let members: BTreeSet<&str> = [
            "neff.json",
            "kelf-0.json",
            "sg00/def.json",
            "sg00/PE.json",
            "sg00/PE.bin",
            "sg00/Act.json",
            "sg00/exp.json",
            "sg00/act_info.json",
            "sg09/def.json",
            "sg09/PE.json",
        ]
        .into_iter()
        .collect();
        let r = reached(&manifests, &members);
        assert_eq!(r["neff.json"], []);
        let by_pe = Reference { member: "sg00/PE.json".into(), key: "instr".into(), manifest: false };
        assert_eq!(r["sg00/PE.bin"], [by_pe]);
        assert_eq!(r["sg00/exp.json"][0].key, "activation_function_sets");
        assert!(r["sg00/exp.json"][0].manifest);
        // A key the loader does not follow reaches nothing; `name` names no member.
        assert!(!r.contains_key("sg00/act_info.json"), "{r:?}");
        assert!(!r.contains_key("sg09/def.json") && !r.contains_key("sg09/PE.json"));
        // A manifest naming itself does not reach itself.
        assert_eq!(r["sg00/def.json"].len(), 1);
    }

    #[test]
    fn names_resolve_where_the_loader_resolves_them() {
        let mut manifests = BTreeMap::new();
        let values = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        manifests.insert("neff.json".to_owned(), values(&[("nodes[0].attrs.kelf", "\"dir/k.json\"")]));
        manifests.insert("dir/k.json".to_owned(), values(&[("graphs[0].definition", "\"sg00/def.json\"")]));
        manifests.insert("sg00/def.json".to_owned(), values(&[("act", "\"e/Activation.json\"")]));
        manifests.insert("sg00/e/Activation.json".to_owned(), values(&[("instr", "\"Activation.bin\"")]));
        let members: BTreeSet<&str> =
            ["neff.json", "dir/k.json", "sg00/def.json", "sg00/e/Activation.json", "sg00/Activation.bin"]
                .into_iter()
                .collect();
        let r = reached(&manifests, &members);
        assert_eq!(r.len(), members.len(), "{r:?}");
        assert_eq!(r["sg00/def.json"][0].member, "dir/k.json");
        assert_eq!(r["sg00/Activation.bin"][0].member, "sg00/e/Activation.json");
    }

    #[test]
    fn strings_of_values() {
        assert_eq!(strings("\"a.bin\""), ["a.bin"]);
        assert_eq!(strings("[\"x\", \"y\"]"), ["x", "y"]);
        assert!(strings("16").is_empty());
        assert!(strings("[1, 2]").is_empty());
    }
}
