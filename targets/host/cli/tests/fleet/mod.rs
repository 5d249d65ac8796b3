//! The real NEFFs of `../shared/fixtures/public` for the operator verbs' tests (`mem`, `diff`,
//! `ls`, `cat`, `cache`, the tar tap): where they are, and their neuron-profile reports.
#![allow(dead_code)]

use std::path::PathBuf;

/// The ten trainium-kernel-fusion directories (each holds one NEFF and its `profile.json`).
pub const FUSION: [&str; 10] = [
    "baseline_attention",
    "baseline_bf16_s1024",
    "baseline_bf16_s512",
    "baseline_fp32_s1024",
    "baseline_fp32_s512",
    "fused_attention",
    "fused_bf16_s1024",
    "fused_bf16_s512",
    "fused_fp32_s1024",
    "fused_fp32_s512",
];

/// The NEFF of a trainium-kernel-fusion directory (`baseline.neff` or `fused.neff`).
pub fn fusion_neff(dir: &str) -> Option<PathBuf> {
    let file = if dir.starts_with("baseline") { "baseline.neff" } else { "fused.neff" };
    super::common::fixture(&format!("public/trainium-kernel-fusion/{dir}/{file}"))
}

/// The `profile.json` beside it.
pub fn fusion_profile(dir: &str) -> Option<serde_json::Value> {
    let path = super::common::fixture(&format!("public/trainium-kernel-fusion/{dir}/profile.json"))?;
    Some(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap())
}

/// Every real NEFF: `(label, path)`, the two nkipy ones and the ten fusion ones. Empty (with
/// a note, or a failure under `CI=true`) when `../shared` is absent.
pub fn real_neffs() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for name in ["matmul_small", "matmul_large"] {
        if let Some(p) = super::common::fixture(&format!("public/nkipy/{name}.neff")) {
            out.push((name.to_owned(), p));
        }
    }
    for dir in FUSION {
        if let Some(p) = fusion_neff(dir) {
            out.push((dir.to_owned(), p));
        }
    }
    out
}
