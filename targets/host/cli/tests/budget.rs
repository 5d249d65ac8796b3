//! `neff load --budget`: what a controller must lend, measured in one pass, on the real NEFF
//! whose DMA references once overflowed the firmware's arena, and on a small one; the figures
//! are the core's `Loader::needs` and agree with a load through the C ABI's report
//! (`targets/c/src/tests.rs`) and the firmware images' printed arena peaks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod support;

use std::path::PathBuf;

use support::*;

fn shared(rel: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/fixtures").join(rel);
    if path.exists() {
        return Some(path);
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{} is missing under CI=true", path.display());
    eprintln!("skipping: {} absent", path.display());
    None
}

#[test]
fn budget_measures_every_lent_buffer() {
    let big = "training-cache/neuronxcc-2.14.227.0+2d4f85be/MODULE_14041361676943519958+ade7b014/model.neff";
    let Some(path) = shared(big) else { return };
    let out = neff(&["load", "--budget", "--json", path.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let b = &doc["budget"];
    let num = |k: &str| b[k].as_u64().unwrap_or_else(|| panic!("budget.{k}: {b}"));
    // The firmware's string scratch plus the records, within the images' 36 KiB of records.
    assert_eq!(num("string_scratch"), 1024);
    assert_eq!(num("arena"), num("string_scratch") + num("records"));
    assert!(num("records") <= 36 * 1024, "{b}");
    // The host's arena is the same records behind its own, larger string scratch.
    assert_eq!(num("host_arena") - num("records"), neff::manifest::STRING_SCRATCH as u64);
    // 29,581 DMA references wait for def.json in the notebook, once per member and name.
    assert!(num("notebook") > 400_000 && num("notebook") < 1 << 20, "{b}");
    assert_eq!(num("arena"), doc["arena_peak"].as_u64().unwrap() + 1024);
    let text = stdout(&neff(&["load", "--budget", path.to_str().unwrap()]));
    assert!(text.contains(&format!("  arena     {} bytes: string scratch 1024", num("arena"))), "{text}");
    assert!(text.contains(&format!("  notebook  {} bytes of device memory", num("notebook"))), "{text}");
    // --budget is a digest-only device of its own.
    let out = neff(&["load", "--budget", "--digest-only", path.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
