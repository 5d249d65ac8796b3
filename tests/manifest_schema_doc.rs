//! `schema/README.md` is generated from `CONSUMED_KEYS` and `LAYOUTS` by
//! `neff::manifest::doc::write_markdown` (rerun with
//! `NEFF_UPDATE_SCHEMA_DOC=1` after a schema edit), and no consumed JSON key is written by hand
//! in `src/` (outside test modules): the schema is the one place keys live.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use neff::manifest::{CONSUMED_KEYS, LAYOUTS};

fn render() -> String {
    let mut out = String::new();
    neff::manifest::doc::write_markdown(&mut out).unwrap();
    out
}

#[test]
fn schema_readme_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/README.md");
    let want = render();
    if std::env::var("NEFF_UPDATE_SCHEMA_DOC").is_ok() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "schema/README.md is stale: rerun with NEFF_UPDATE_SCHEMA_DOC=1");
}

#[test]
fn the_table_covers_every_tier_and_the_resolved_conflicts() {
    let has = |tier: &str, path: &str| CONSUMED_KEYS.iter().any(|k| k.tier == tier && k.path == path);
    assert!(has("neff.json", "nodes[].output_names"));
    assert!(has("neff.json", "attrs.dltype"));
    assert!(has("kelf", "graphs[].definition"));
    assert!(has("def.json", "var.<name>.backing_variable_off"));
    assert!(has("def.json", "num_streams") && has("def.json", "cc_streams.num_streams"));
    assert!(has("engine", "dve_tables[].control_slow_table"));
    let carve = CONSUMED_KEYS.iter().find(|k| k.path == "runtime_statebuffer_reservation[].base_partition").unwrap();
    assert_eq!(carve.aliases, ["start_partition"]);
    assert!(LAYOUTS.iter().any(|l| l.c_name == "io_node_info_t" && l.size == 144));
}

#[test]
fn no_consumed_key_is_written_by_hand_in_src() {
    let mut keys: Vec<&str> = CONSUMED_KEYS
        .iter()
        .flat_map(|k| std::iter::once(k.path.rsplit(['.', ']']).next().unwrap()).chain(k.aliases.iter().copied()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    // The layers that read JSON manifests. The tar, npy and header modules parse other formats
    // whose field names (`size`, `name`, `shape`) happen to be JSON keys too; they are not checked.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack: Vec<_> = ["json", "manifest", "loader"].iter().map(|d| src.join(d)).collect();
    let mut offenders = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with("error.rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                // Test modules hold JSON documents; they are not the parser.
                let code = text.split("#[cfg(test)]").next().unwrap();
                // `serialize_field` names the load report's own output keys, not manifest keys.
                for line in
                    code.lines().filter(|l| !l.trim_start().starts_with("//") && !l.contains("serialize_field("))
                {
                    for k in &keys {
                        if line.contains(&format!("\"{k}\"")) {
                            offenders.push(format!("{}: {}", p.display(), line.trim()));
                        }
                    }
                }
            }
        }
    }
    assert!(offenders.is_empty(), "JSON keys written by hand:\n{}", offenders.join("\n"));
}
