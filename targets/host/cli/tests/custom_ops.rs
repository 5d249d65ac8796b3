//! Issue 30: the GPSIMD custom-op libraries of a neuronx-cc 2.14 training cache. Its `def.json`
//! names the libraries' manifest (`"ucode_lib": "ucode_lib.json"`) instead of listing them, and
//! that manifest lists eight built-in libraries, one per CPU (`cpu_id` 7 down to 0 of
//! `total_cpus` 8), versioned `"1.x.x.x"`, with the opcodes in `functions[]` (spec §7.6). The
//! sample NEFF is given that shape; `check`, `info`, `ls` and `mem` accept it and count the
//! libraries, and each way to break it is refused with the runtime's message.

mod support;

use neff_host::sample::{MemberOrder, SampleBuilder};
use serde_json::Value;
use support::*;

const CPUS: u32 = 8;

fn library(cpu: u32) -> String {
    format!("libbuiltincustomop_cpu{cpu}.stripped.so")
}

/// `ucode_lib.json` as neuronx-cc 2.14 writes it, with `version` as every entry's
/// `ulib_to_ucode_version`.
fn ucode_lib_json(version: &str) -> String {
    let entries: Vec<String> = (0..CPUS)
        .rev()
        .map(|cpu| {
            format!(
                r#"{{"cpu_id": {cpu}, "total_cpus": {CPUS}, "is_builtin": true, "library": "{}", "ulib_to_isa_version": "1.0.2520.0", "ulib_to_ucode_version": "{version}", "functions": [{{"name": "partial_merge_multicore_compute", "opcode": 133, "sub_opcode": 1}}, {{"name": "partial_sort_multicore_compute", "opcode": 133, "sub_opcode": 0}}]}}"#,
                library(cpu)
            )
        })
        .collect();
    format!(r#"{{"ucode_lib": [{}]}}"#, entries.join(", "))
}

fn library_bytes(cpu: u32) -> Vec<u8> {
    // An ELF's magic, then bytes of a size of its own per CPU.
    let mut b = b"\x7fELF".to_vec();
    b.extend((0..1000 + cpu * 16).map(|i| (i * 7 + cpu) as u8));
    b
}

/// A NEFF written to a temporary directory, removed when dropped.
struct TempNeff {
    /// Held for its removal on drop.
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl TempNeff {
    fn new(bytes: &[u8]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.neff");
        std::fs::write(&path, bytes).unwrap();
        TempNeff { _dir: dir, path }
    }
}

impl std::ops::Deref for TempNeff {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempNeff {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// The sample's builder with `sg00` in the 2.14 shape.
fn custom_ops_builder() -> SampleBuilder {
    let mut b = SampleBuilder::new()
        .replace_text("sg00/def.json", r#""cc_streams""#, r#""ucode_lib":"ucode_lib.json","cc_streams""#)
        .add_member("sg00/ucode_lib.json", ucode_lib_json("1.x.x.x").as_bytes());
    for cpu in 0..CPUS {
        b = b.add_member(&format!("sg00/{}", library(cpu)), &library_bytes(cpu));
    }
    b
}

/// The sample with `sg00` in the 2.14 shape; `edit` changes the builder before it builds.
fn custom_ops_neff(edit: impl FnOnce(SampleBuilder) -> SampleBuilder) -> TempNeff {
    TempNeff::new(&edit(custom_ops_builder()).build().unwrap())
}

/// The members (name, bytes) of [`custom_ops_neff`] with the same `edit`.
fn custom_ops_members(edit: impl FnOnce(SampleBuilder) -> SampleBuilder) -> Vec<(String, Vec<u8>)> {
    edit(custom_ops_builder()).members().unwrap()
}

fn library_total() -> u64 {
    (0..CPUS).map(|cpu| library_bytes(cpu).len() as u64).sum()
}

#[test]
fn the_string_form_with_eight_cpus_is_accepted_by_check_info_ls_and_mem() {
    let path = custom_ops_neff(|b| b);
    let out = neff_p(&[&"check", &path]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let out = neff_p(&[&"info", &path]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // `ls`: the manifest is reached by the definition's `ucode_lib`, each library by the
    // manifest's `ucode_lib[].library`, as a UCODE_LIB payload.
    let out = neff_p(&[&"ls", &path, &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["members"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name}: {doc}"));
    let manifest = row("sg00/ucode_lib.json");
    assert_eq!(manifest["role"], "manifest", "{manifest}");
    assert!(manifest["reached_by"].as_array().is_some_and(|b| b.iter().any(|b| b["member"] == "sg00/def.json")));
    for cpu in 0..CPUS {
        let lib = row(&format!("sg00/{}", library(cpu)));
        assert_eq!(lib["role"], "payload", "{lib}");
        assert_eq!(lib["usage"], "UCODE_LIB", "{lib}");
        assert!(
            lib["reached_by"].as_array().is_some_and(|b| b.iter().any(|b| b["member"] == "sg00/ucode_lib.json")),
            "{lib}"
        );
    }

    // `load` places them, `mem` counts them on sg00's core as the NEFF's own bytes.
    let out = neff_p(&[&"load", &path]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = neff_p(&[&"mem", &path, &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_neff: Vec<u64> =
        doc["cores"].as_array().unwrap().iter().map(|c| c["from_neff"]["Ucode lib"].as_u64().unwrap()).collect();
    assert_eq!(from_neff, [library_total(), 0], "{doc}");
}

#[test]
fn every_member_order_reaches_the_libraries() {
    // Reversed puts `ucode_lib.json` before its `def.json`: read as a JSON nothing names yet,
    // then taken as the libraries' manifest.
    for order in [MemberOrder::Real, MemberOrder::Sorted, MemberOrder::ManifestsFirst, MemberOrder::Reversed] {
        let path = custom_ops_neff(|b| b.order(order));
        let out = neff_p(&[&"load", &path, &"--json"]);
        assert_eq!(code(&out), 0, "{order:?}: {}", stderr(&out));
        let text = stdout(&out);
        let libs = text.matches("UCODE_LIB").count();
        assert!(libs >= CPUS as usize, "{order:?}: {libs} UCODE_LIB in {text}");
        assert!(!stderr(&out).contains("warning"), "{order:?}: {}", stderr(&out));
    }
}

#[test]
fn a_missing_manifest_a_missing_library_and_major_2_are_refused() {
    let refused = |path: &std::path::Path| {
        let out = neff_p(&[&"check", &path]);
        assert_ne!(code(&out), 0, "{}", stdout(&out));
        stderr(&out)
    };
    let e = refused(&custom_ops_neff(|b| b.drop_member("sg00/ucode_lib.json")));
    assert!(e.contains("sg00/def.json") && e.contains("ucode_lib") && e.contains("sg00/ucode_lib.json"), "{e}");
    assert!(e.contains("missing"), "{e}");

    let e = refused(&custom_ops_neff(|b| b.drop_member("sg00/libbuiltincustomop_cpu3.stripped.so")));
    assert!(e.contains("sg00/ucode_lib.json") && e.contains("sg00/libbuiltincustomop_cpu3.stripped.so"), "{e}");
    // The entries run from cpu_id 7 down to 0: cpu 3's is the fifth.
    assert!(e.contains("sg00/ucode_lib.json: ucode_lib[4].library: member sg00/libbuiltincustomop_cpu3"), "{e}");

    let e =
        refused(&custom_ops_neff(|b| b.replace_member("sg00/ucode_lib.json", ucode_lib_json("2.x.x.x").as_bytes())));
    assert!(e.contains("Mismatch between GPSIMD lib version and NRT version!"), "{e}");
    assert!(e.contains("sg00/ucode_lib.json") && e.contains("ucode_lib[0].ulib_to_ucode_version"), "{e}");

    // A library the manifest lists twice: the runtime's `has already been added`.
    let twice = ucode_lib_json("1.x.x.x").replace(&library(6), &library(7));
    let e = refused(&custom_ops_neff(|b| b.replace_member("sg00/ucode_lib.json", twice.as_bytes())));
    // Reported in the manifest that lists the library twice, at the second entry naming it.
    assert!(e.contains("sg00/ucode_lib.json: ucode_lib[1].library: UCode Library"), "{e}");
    // The error keeps 16 bytes of the name; read again from the file, it is whole.
    assert!(e.contains(&format!("UCode Library {} has already been added", library(7))), "{e}");
}

/// Issue 30 §3: `ls` and `diff` show why a NEFF is refused. The refusal is a warning, the
/// archive (sound) is listed and compared, and what the chain reached is shown.
#[test]
fn ls_and_diff_on_a_refused_neff() {
    let refused = custom_ops_neff(|b| b.drop_member("sg00/libbuiltincustomop_cpu3.stripped.so"));
    let good = custom_ops_neff(|b| b);
    let out = neff_p(&[&"check", &refused]);
    assert_eq!(code(&out), 1);
    let reason = "member sg00/libbuiltincustomop_cpu3.stripped.so is missing from the archive";

    let out = neff_p(&[&"ls", &refused, &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("warning: refused: ") && err.contains(reason), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["members"].as_array().unwrap();
    assert_eq!(rows.len(), sample_members() + 1 + CPUS as usize - 1, "{doc}");
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name}: {doc}"));
    assert_eq!(row("sg00/ucode_lib.json")["role"], "manifest");
    assert_eq!(row("sg00/def.json")["role"], "manifest");
    assert!(row("sg00/libbuiltincustomop_cpu2.stripped.so")["reached_by"].is_array());

    let out = neff_p(&[&"diff", &refused, &good]);
    assert_eq!(code(&out), 1, "different, not trouble: {}", stderr(&out));
    assert!(stderr(&out).contains(reason), "{}", stderr(&out));
    assert!(stdout(&out).contains("libbuiltincustomop_cpu3.stripped.so"), "{}", stdout(&out));

    // `cat` and `unpack` read the tar level only: the refused NEFF's members come out whole.
    let members = custom_ops_members(|b| b.drop_member("sg00/libbuiltincustomop_cpu3.stripped.so"));
    let def = &members.iter().find(|(n, _)| n == "sg00/def.json").unwrap().1;
    let out = neff_p(&[&"cat", &refused, &"sg00/def.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(&out.stdout, def);
    let dir = tempfile::tempdir().unwrap();
    let into = dir.path().join("out");
    let out = neff_p(&[&"unpack", &"--output", &into, &refused]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for (name, bytes) in &members {
        assert_eq!(&std::fs::read(into.join(name)).unwrap(), bytes, "{name}");
    }

    // An archive that cannot be read is still trouble.
    let bytes = std::fs::read(&*good).unwrap();
    let cut = TempNeff::new(&bytes[..bytes.len() / 2]);
    assert_eq!(code(&neff_p(&[&"ls", &cut])), 1);
    assert_eq!(code(&neff_p(&[&"diff", &cut, &good])), 2);
}

/// The members of the sample itself (without the libraries added here).
fn sample_members() -> usize {
    SampleBuilder::new().members().unwrap().len()
}

/// Issue 30 §3: with the KELF at `dir/k.json`, `check` passes, and `ls` reaches every member
/// `check` does (the KELF's names are from the archive's root, not its directory).
#[test]
fn ls_reaches_the_subgraphs_of_a_kelf_in_a_directory() {
    let base = SampleBuilder::new();
    let kelf = base.members().unwrap().into_iter().find(|(n, _)| n == "kelf-0.json").unwrap().1;
    let moved = base
        .drop_member("kelf-0.json")
        .add_member("dir/k.json", &kelf)
        .replace_text("neff.json", "\"kelf-0.json\"", "\"dir/k.json\"")
        .build()
        .unwrap();
    let path = TempNeff::new(&moved);
    let out = neff_p(&[&"check", &path]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The KELF is read twice (first as the JSON its name suggests, then as the KELF
    // `neff.json` names): one manifest, as many as the sample's.
    let manifests = |text: String| text.split(" manifests").next().unwrap().rsplit(' ').next().unwrap().to_owned();
    let sample = TempNeff::new(&SampleBuilder::new().build().unwrap());
    assert_eq!(manifests(stdout(&out)), manifests(stdout(&neff_p(&[&"check", &sample]))));
    let out = neff_p(&[&"ls", &path, &"--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let unreached: Vec<&str> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["reached_by"].is_null() && r["name"].as_str().is_some_and(|n| n.starts_with("sg")))
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // `act_info` names a member the loader does not follow (spec §8.2: tolerated when absent),
    // so `ls` does not follow it either: the roles are the loader's.
    assert_eq!(unreached, ["sg00/act_info.json", "sg01/act_info.json"]);
}
