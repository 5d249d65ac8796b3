//! A missing member's reference, found again where the manifest wrote it.
//!
//! The core remembers of each reference the chain follows its name and its naming key, not
//! where in the manifest it stood: an index per node, graph or table and a var's name per
//! weight would grow the controller's arena with the model. So a refusal for a member the chain
//! names and the archive lacks says `nodes.attrs.kelf` or `var.file_name`, and keeps the last
//! 40 bytes of the member's name. On a host that can read its input again (a file, the
//! sample), [`locate`] reads the naming manifest once more, after the refusal, and finds the
//! entry: the key path gets its indices and the var's name (`nodes[2].attrs.kelf`,
//! `var.tZ.file_name`), and the member its whole name. Nothing is kept during the load, and a
//! load that succeeds never pays for it.

use neff::archive::OpenOptions;
use neff::error::MemberText;
use serde_json::Value;

use crate::inflate::{open_archive, Inflation};
use crate::source::Again;

/// The largest naming manifest read again (a `def.json` of a big model is a few MB).
const MANIFEST_MAX: u64 = 256 << 20;

/// Where a missing member's reference stands in its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The key path with its array indices and var names (`graphs[0].definition`).
    pub key_path: String,
    /// The member's whole name, as the chain resolved it.
    pub member: String,
}

/// The site of the reference in manifest `by` (of input `again`) at key path `key_path` (the
/// core's: with the index of an array the chain's records keep, without a var's name) that
/// named `missing`; `None` when the input cannot be read again, the
/// manifest is not JSON, or no entry or several agree with the name.
pub fn locate(again: &Again, by: &str, key_path: &str, missing: &MemberText) -> Option<Site> {
    let doc: Value = serde_json::from_slice(&member_bytes(again, by)?).ok()?;
    site_in(&doc, by, key_path, missing)
}

/// [`locate`] in manifest `doc` (member `by`), already parsed.
pub fn site_in(doc: &Value, by: &str, key_path: &str, missing: &MemberText) -> Option<Site> {
    let keys: Vec<&str> = key_path.split('.').map(|k| k.split_once('[').map_or(k, |(key, _)| key)).collect();
    let mut found = Vec::new();
    leaves(doc, &keys, String::new(), &mut found);
    let mut sites = found.into_iter().filter_map(|(path, name)| {
        let member = resolved(by, &name, missing)?;
        Some(Site { key_path: path, member })
    });
    let site = sites.next()?;
    // Two entries that name the same member would make the first a guess.
    sites.next().is_none().then_some(site)
}

/// Each string under key path `keys` of `value`, with its key path written out: an array
/// gives each element with its index, and an object whose keys are not the next key (the
/// `var` map) gives each entry with its name.
fn leaves(value: &Value, keys: &[&str], path: String, out: &mut Vec<(String, String)>) {
    let dot = |path: &str, key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match (value, keys.split_first()) {
        (Value::String(s), None) => out.push((path, s.clone())),
        // Past the key path, an object's strings are the names (a `dve_tables` entry's tables).
        (Value::Object(map), None) => {
            for (name, v) in map {
                leaves(v, keys, dot(&path, name), out);
            }
        }
        (Value::Array(items), _) => {
            for (i, item) in items.iter().enumerate() {
                leaves(item, keys, format!("{path}[{i}]"), out);
            }
        }
        (Value::Object(map), Some((key, rest))) => match map.get(*key) {
            Some(v) => leaves(v, rest, dot(&path, key), out),
            None => {
                for (name, v) in map.iter().filter(|(_, v)| v.is_object()) {
                    leaves(v, keys, dot(&path, name), out);
                }
            }
        },
        _ => {}
    }
}

/// The whole member name `name` (as manifest `by` writes it) stands for when it agrees with the
/// error's `missing`: the name itself (from the archive's root) or joined to `by`'s directory,
/// whichever the error's text is, or ends with where it kept only a tail.
fn resolved(by: &str, name: &str, missing: &MemberText) -> Option<String> {
    let dir = neff::loader::dir_of(by);
    let joined = (!dir.is_empty()).then(|| format!("{dir}/{name}"));
    let kept = missing.as_str();
    [joined, Some(name.to_owned())].into_iter().flatten().find(|whole| {
        if missing.is_elided() {
            whole.ends_with(kept) && whole.len() > kept.len()
        } else {
            whole == kept
        }
    })
}

/// The bytes of member `name` of input `again`, read again through the core's archive (its
/// warnings were raised by the load already, and are not raised twice).
fn member_bytes(again: &Again, name: &str) -> Option<Vec<u8>> {
    let source = again.open().ok()?;
    let size = source.size();
    let mut quiet = |_: &neff::Warning| {};
    let mut archive = open_archive(source, size, &OpenOptions::default(), Inflation::Inline, &mut quiet).ok()?;
    while let Some(mut member) = archive.next_member(&mut quiet).ok()? {
        if member.name_bytes() != name.as_bytes() {
            continue;
        }
        if member.size() > MANIFEST_MAX {
            return None;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(member.size()).ok()?);
        let mut buf = [0u8; 16 * 1024];
        loop {
            match embedded_io::Read::read(&mut member, &mut buf).ok()? {
                0 => return Some(bytes),
                n => bytes.extend_from_slice(buf.get(..n)?),
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> MemberText {
        MemberText::new(s)
    }

    #[test]
    fn an_array_gives_its_index_and_a_map_its_entry_name() {
        let neff: Value = serde_json::json!({"nodes": [
            {"op": "null"}, {"attrs": {"func_name": "x"}}, {"attrs": {"kelf": "kelf-0.json"}}]});
        let site = site_in(&neff, "neff.json", "nodes.attrs.kelf", &text("kelf-0.json")).unwrap();
        assert_eq!(site, Site { key_path: "nodes[2].attrs.kelf".into(), member: "kelf-0.json".into() });

        let def: Value = serde_json::json!({"var": {
            "x": {"type": "input"}, "tZ": {"file_name": "w.npy"}, "tY": {"file_name": "v.npy"}}});
        let site = site_in(&def, "sg00/def.json", "var.file_name", &text("sg00/w.npy")).unwrap();
        assert_eq!(site, Site { key_path: "var.tZ.file_name".into(), member: "sg00/w.npy".into() });

        let engine: Value = serde_json::json!({"activation_function_sets": ["a", "b"]});
        let site = site_in(&engine, "sg00/Act.json", "activation_function_sets[1]", &text("sg00/b")).unwrap();
        assert_eq!(site.key_path, "activation_function_sets[1]");
        let dve: Value = serde_json::json!({"dve_tables": [{"opcode_table": "o.bin", "datapath_table": "d.bin"}]});
        let site = site_in(&dve, "sg00/DVE.json", "dve_tables[0]", &text("sg00/d.bin")).unwrap();
        assert_eq!(site.key_path, "dve_tables[0].datapath_table");
    }

    #[test]
    fn a_cut_name_is_given_whole_when_one_entry_ends_with_it() {
        let long = format!("weight_{}.npy", "q".repeat(60));
        let whole = format!("sg00/{long}");
        let cut = text(&whole);
        assert!(cut.is_elided(), "the error's text keeps 40 bytes");
        let def: Value = serde_json::json!({"var": {"a": {"file_name": "short.npy"}, "b": {"file_name": long}}});
        let site = site_in(&def, "sg00/def.json", "var.file_name", &cut).unwrap();
        assert_eq!(site, Site { key_path: "var.b.file_name".into(), member: whole });
    }

    #[test]
    fn no_site_when_no_entry_or_two_agree() {
        let def: Value = serde_json::json!({"var": {"a": {"file_name": "w.npy"}, "b": {"file_name": "w.npy"}}});
        assert_eq!(site_in(&def, "sg00/def.json", "var.file_name", &text("sg00/w.npy")), None, "two vars name it");
        assert_eq!(site_in(&def, "sg00/def.json", "var.file_name", &text("sg00/other.npy")), None);
        let kelf: Value = serde_json::json!({"graphs": [{"definition": "sg00/def.json"}]});
        assert_eq!(site_in(&kelf, "kelf-0.json", "graphs.definition", &text("sg01/def.json")), None);
    }
}
