//! Names an error keeps only in part, read again where the manifest wrote them.
//!
//! The core keeps of each reference the chain follows its name, its naming key and the index
//! of the array entry it stands in, but not a var's name (a weight's record would grow by it,
//! with every weight, in a controller's arena), and a refusal keeps 40 bytes of a missing
//! member's name and 16 of a library's. On a host that can read its input again (a file, the
//! sample), the manifest the error is about is read once more, after the refusal:
//! [`locate`] gives a missing member's reference its var's name (`var.tZ.file_name`) and the
//! member its whole name, and [`value_at`] gives the string at an error's key path whole
//! (`ucode_lib[1].library`). Nothing is kept during the load, and a load that succeeds never
//! pays for it.

use neff::archive::OpenOptions;
use neff::error::MemberText;
use neff::loader::{named_by, Tier};
use neff::manifest::def::ENGINE_KEYS;
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

/// Manifest `by` of input `again`, read again and parsed; `None` when the input cannot be
/// read again or the member is no JSON.
pub fn manifest(again: &Again, by: &str) -> Option<Value> {
    serde_json::from_slice(&member_bytes(again, by)?).ok()
}

/// The site of the reference in manifest `doc` (member `by`) at the core's key path `key_path`
/// (an array's index where the core keeps it, no var's name) that named `missing`; `None`
/// when no entry or several agree with it. `dirs`: where `by`'s names are resolved when not in
/// its own directory (an engine JSON below its definition's directory: that directory, as
/// `Loader::definition_dirs_of` gives it).
pub fn locate(doc: &Value, by: &str, dirs: &[&str], key_path: &str, missing: &MemberText) -> Option<Site> {
    // The segments that carry the core's index: a site must have each of them.
    let indexed: Vec<&str> = key_path.split('.').filter(|k| k.contains('[')).collect();
    let suffixes = suffixes(key_path);
    let mut sites = strings_under(doc, key_path).into_iter().filter_map(|(path, name)| {
        let segments: Vec<&str> = path.split('.').collect();
        if !indexed.iter().all(|k| segments.contains(k)) {
            return None;
        }
        let member = resolved(by, dirs, &name, &suffixes, missing)?;
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

/// The string at key path `key_path` of `doc` (`ucode_lib[1].library`); `None` where the path
/// leads to no string: the one of [`leaves`]' strings whose written-out path is `key_path`.
pub fn value_at(doc: &Value, key_path: &str) -> Option<String> {
    strings_under(doc, key_path).into_iter().find(|(path, _)| path == key_path).map(|(_, value)| value)
}

/// [`leaves`] under `key_path` without its indices: every string that could stand there.
fn strings_under(doc: &Value, key_path: &str) -> Vec<(String, String)> {
    let keys: Vec<&str> = key_path.split('.').map(|k| k.split_once('[').map_or(k, |(key, _)| key)).collect();
    let mut found = Vec::new();
    leaves(doc, &keys, String::new(), &mut found);
    found
}

/// The whole member name `name` (as manifest `by` writes it) stands for when it agrees with the
/// error's `missing`: the name itself (from the archive's root) or joined to the directory it
/// is resolved in (`dirs`, else `by`'s own), with one of `suffixes` (as the loader names the
/// member: [`suffixes`]), whichever the error's text is, or ends with where it kept only a
/// tail.
fn resolved(by: &str, dirs: &[&str], name: &str, suffixes: &[&str], missing: &MemberText) -> Option<String> {
    let own = [neff::loader::dir_of(by)];
    let dirs = if dirs.is_empty() { &own[..] } else { dirs };
    let kept = missing.as_str();
    let named = |suffix: &str| -> Vec<String> {
        let joined = dirs.iter().filter(|d| !d.is_empty()).map(|dir| format!("{dir}/{name}{suffix}"));
        joined.chain([format!("{name}{suffix}")]).collect()
    };
    suffixes.iter().flat_map(|s| named(s)).find(|whole| {
        if missing.is_elided() {
            whole.ends_with(kept) && whole.len() > kept.len()
        } else {
            whole == kept
        }
    })
}

/// The suffixes the loader may give a name at `key_path` (an activation set `S` is member
/// `S.json`), whichever tier of manifest holds it; the name as written first.
fn suffixes(key_path: &str) -> Vec<&'static str> {
    let engines = ENGINE_KEYS.iter().map(|&e| Tier::Engine(Some(e)));
    let tiers = [Tier::Neff, Tier::Kelf, Tier::Def, Tier::Engine(None), Tier::ActSet, Tier::UcodeLibs];
    let mut out = vec![""];
    for (_, suffix) in tiers.into_iter().chain(engines).filter_map(|t| named_by(t, key_path)) {
        if !out.contains(&suffix) {
            out.push(suffix);
        }
    }
    out
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
        let site = locate(&neff, "neff.json", &[], "nodes.attrs.kelf", &text("kelf-0.json")).unwrap();
        assert_eq!(site, Site { key_path: "nodes[2].attrs.kelf".into(), member: "kelf-0.json".into() });

        let def: Value = serde_json::json!({"var": {
            "x": {"type": "input"}, "tZ": {"file_name": "w.npy"}, "tY": {"file_name": "v.npy"}}});
        let site = locate(&def, "sg00/def.json", &[], "var.file_name", &text("sg00/w.npy")).unwrap();
        assert_eq!(site, Site { key_path: "var.tZ.file_name".into(), member: "sg00/w.npy".into() });

        let engine: Value = serde_json::json!({"activation_function_sets": ["a", "b"]});
        let site = locate(&engine, "sg00/Act.json", &[], "activation_function_sets[1]", &text("sg00/b")).unwrap();
        assert_eq!(site.key_path, "activation_function_sets[1]");
        let dve: Value = serde_json::json!({"dve_tables": [{"opcode_table": "o.bin", "datapath_table": "d.bin"}]});
        let site = locate(&dve, "sg00/DVE.json", &[], "dve_tables[0]", &text("sg00/d.bin")).unwrap();
        assert_eq!(site.key_path, "dve_tables[0].datapath_table");
    }

    #[test]
    fn a_cut_name_is_given_whole_when_one_entry_ends_with_it() {
        let long = format!("weight_{}.npy", "q".repeat(60));
        let whole = format!("sg00/{long}");
        let cut = text(&whole);
        assert!(cut.is_elided(), "the error's text keeps 40 bytes");
        let def: Value = serde_json::json!({"var": {"a": {"file_name": "short.npy"}, "b": {"file_name": long}}});
        let site = locate(&def, "sg00/def.json", &[], "var.file_name", &cut).unwrap();
        assert_eq!(site, Site { key_path: "var.b.file_name".into(), member: whole });
    }

    #[test]
    fn a_set_name_gets_the_suffix_the_loader_gives_it() {
        // Activation set `S` is member `S.json` (the core's `named_by`): a cut name is found
        // whole with it.
        let set = format!("exp_{}", "z".repeat(50));
        let whole = format!("sg00/{set}.json");
        let engine: Value = serde_json::json!({"activation_function_sets": ["other", set]});
        let site = locate(&engine, "sg00/Act.json", &[], "activation_function_sets[1]", &text(&whole)).unwrap();
        assert_eq!(site, Site { key_path: "activation_function_sets[1]".into(), member: whole });
        assert_eq!(suffixes("activation_function_sets[1]"), ["", ".json"]);
        assert_eq!(suffixes("var.w.file_name"), [""]);
    }

    #[test]
    fn an_engine_below_its_definition_resolves_in_the_definition_directory() {
        // `sg00/x/DVE.json` names its tables from `sg00` (spec §4): its own directory would
        // give a whole name that ends as the error's text does, and is not the member.
        let table = format!("datapath_{}.bin", "t".repeat(50));
        let whole = format!("sg00/{table}");
        let dve: Value = serde_json::json!({"dve_tables": [{"datapath_table": table}]});
        let site = locate(&dve, "sg00/x/DVE.json", &["sg00"], "dve_tables[0]", &text(&whole)).unwrap();
        assert_eq!(site.member, whole);
        let guessed = locate(&dve, "sg00/x/DVE.json", &[], "dve_tables[0]", &text(&whole)).unwrap();
        assert_eq!(guessed.member, format!("sg00/x/{table}"), "without the definition's directory");
    }

    #[test]
    fn the_core_index_picks_the_entry() {
        let kelf: Value =
            serde_json::json!({"graphs": [{"definition": "sg01/def.json"}, {"definition": "sg01/def.json"}]});
        let site = locate(&kelf, "kelf-0.json", &[], "graphs[1].definition", &text("sg01/def.json")).unwrap();
        assert_eq!(site.key_path, "graphs[1].definition");
        assert_eq!(locate(&kelf, "kelf-0.json", &[], "graphs[2].definition", &text("sg01/def.json")), None);
    }

    #[test]
    fn the_value_at_a_key_path_is_the_whole_string() {
        let libs: Value = serde_json::json!({"ucode_lib": [{"library": "a.so"}, {"library": "libbuiltin_cpu7.so"}]});
        assert_eq!(value_at(&libs, "ucode_lib[1].library").as_deref(), Some("libbuiltin_cpu7.so"));
        assert_eq!(value_at(&libs, "ucode_lib[2].library"), None);
        assert_eq!(value_at(&libs, "ucode_lib"), None, "an array is no string");
        let def: Value = serde_json::json!({"var": {"output0": {"dtype": "float99"}}});
        assert_eq!(value_at(&def, "var.output0.dtype").as_deref(), Some("float99"));
    }

    #[test]
    fn no_site_when_no_entry_or_two_agree() {
        let def: Value = serde_json::json!({"var": {"a": {"file_name": "w.npy"}, "b": {"file_name": "w.npy"}}});
        assert_eq!(locate(&def, "sg00/def.json", &[], "var.file_name", &text("sg00/w.npy")), None, "two vars name it");
        assert_eq!(locate(&def, "sg00/def.json", &[], "var.file_name", &text("sg00/other.npy")), None);
        let kelf: Value = serde_json::json!({"graphs": [{"definition": "sg00/def.json"}]});
        assert_eq!(locate(&kelf, "kelf-0.json", &[], "graphs.definition", &text("sg01/def.json")), None);
    }
}
