//! `neff mem` against what the Neuron runtime really allocated: the `nc_mem_usage` tables of
//! the ten neuron-profile reports beside the trainium-kernel-fusion NEFFs (trn2.3xlarge,
//! neuronx-cc 2.23, driver 2.26), category by category on both NeuronCores of each run.
//!
//! `cargo test -p neff-cli --test mem -- --nocapture` prints each category's error over the
//! twenty cores, and for each of the runtime's overhead constants its leave-one-out error: the
//! constant fitted on nine reports (the mean of what the runtime added beyond the NEFF's own
//! bytes), used to predict the tenth.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod fleet;
mod support;

use std::collections::BTreeMap;

use serde_json::Value;
use support::*;

/// `neff mem --json` of one file.
fn mem_json(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Value {
    let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"mem", &"--json"];
    all.extend_from_slice(args);
    let out = neff_p(&all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `{sg_name: {category: bytes}}` of a profile (its `nc_mem_usage`, keyed through
/// `model_info`'s `nc_idx` -> `sg_name`).
fn profile_usage(profile: &Value) -> BTreeMap<String, BTreeMap<String, u64>> {
    let sg_of: BTreeMap<u64, String> = profile["model_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["nc_idx"].as_u64().unwrap(), m["sg_name"].as_str().unwrap().to_owned()))
        .collect();
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for row in profile["nc_mem_usage"].as_array().unwrap() {
        let sg = &sg_of[&row["nc"].as_u64().unwrap()];
        out.entry(sg.clone())
            .or_default()
            .insert(row["usage_type"].as_str().unwrap().to_owned(), row["amount_bytes"].as_u64().unwrap());
    }
    out
}

/// One core of one run: what `mem` said and what the runtime allocated.
struct Sample {
    dir: &'static str,
    /// 0: the LNC's first core.
    position: usize,
    usage: BTreeMap<String, u64>,
    from_neff: BTreeMap<String, u64>,
    runtime: BTreeMap<String, u64>,
    actual: BTreeMap<String, u64>,
}

fn map(v: &Value) -> BTreeMap<String, u64> {
    v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).collect()
}

fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for dir in fleet::FUSION {
        let (Some(neff), Some(profile)) = (fleet::fusion_neff(dir), fleet::fusion_profile(dir)) else { continue };
        let doc = mem_json(&[&neff, &"--profiling"]);
        let actual = profile_usage(&profile);
        let cores = doc["cores"].as_array().unwrap();
        assert_eq!(cores.len(), actual.len(), "{dir}: one core per profiled NeuronCore");
        for (position, core) in cores.iter().enumerate() {
            let sg = core["subgraph"].as_str().unwrap();
            let actual = actual.get(sg).unwrap_or_else(|| panic!("{dir}: no profiled core runs {sg}")).clone();
            let mut usage = map(&core["usage"]);
            usage.insert("Total".into(), core["total"].as_u64().unwrap());
            out.push(Sample {
                dir,
                position,
                usage,
                from_neff: map(&core["from_neff"]),
                runtime: map(&core["runtime_overhead"]),
                actual,
            });
        }
    }
    out
}

#[test]
fn mem_matches_the_runtime_on_every_profiled_core() {
    let samples = samples();
    if samples.is_empty() {
        return;
    }
    assert_eq!(samples.len(), 20, "ten runs on two NeuronCores");
    // Every category the profiler lists is one `mem` prints, and no other.
    for s in &samples {
        let (have, want): (Vec<&String>, Vec<&String>) = (s.usage.keys().collect(), s.actual.keys().collect());
        assert_eq!(have, want, "{}", s.dir);
    }
    println!("{:<24} {:>14} {:>14}  cores off", "category", "max |error|", "mean error");
    let mut wrong = Vec::new();
    for category in samples[0].actual.keys() {
        let errors: Vec<i128> =
            samples.iter().map(|s| i128::from(s.usage[category]) - i128::from(s.actual[category])).collect();
        let max = errors.iter().map(|e| e.abs()).max().unwrap();
        let mean = errors.iter().sum::<i128>() as f64 / errors.len() as f64;
        let off = errors.iter().filter(|e| **e != 0).count();
        println!("{category:<24} {max:>14} {mean:>14.1}  {off}/{}", errors.len());
        for (s, e) in samples.iter().zip(&errors) {
            if *e != 0 {
                wrong.push(format!("{} core {} {category}: {e:+}", s.dir, s.position));
            }
        }
    }
    // Weights are the `.npy` array bytes, exactly; so is every other category on these runs.
    assert!(wrong.is_empty(), "mem differs from the runtime:\n{}", wrong.join("\n"));
}

#[test]
fn each_overhead_constant_predicts_the_run_left_out() {
    let samples = samples();
    if samples.is_empty() {
        return;
    }
    let categories: Vec<String> =
        samples[0].runtime.keys().filter(|c| samples.iter().any(|s| s.runtime[*c] > 0)).cloned().collect();
    println!("{:<24} {:>8} {:>14} {:>14}", "overhead constant", "core", "fitted on all", "leave-one-out");
    for category in &categories {
        for position in [0, 1] {
            // The runs where the runtime adds this constant on this core.
            let runs: Vec<&Sample> =
                samples.iter().filter(|s| s.position == position && s.runtime[category] > 0).collect();
            if runs.is_empty() {
                continue;
            }
            let shared_scratchpad = category == "Shared Scratchpad";
            // What the runtime added beyond the NEFF; for the shared scratchpad, its page.
            let observed = |s: &Sample| -> i128 {
                if shared_scratchpad {
                    i128::from(s.actual[category.as_str()])
                } else {
                    i128::from(s.actual[category.as_str()]) - i128::from(s.from_neff[category.as_str()])
                }
            };
            let fit = |runs: &[&Sample]| -> i128 {
                let n = runs.len() as i128;
                (runs.iter().map(|s| observed(s)).sum::<i128>() + n / 2) / n
            };
            let predict = |s: &Sample, c: i128| -> i128 {
                let neff = i128::from(s.from_neff[category.as_str()]);
                if shared_scratchpad {
                    (neff + c - 1) / c * c
                } else {
                    neff + c
                }
            };
            let all = fit(&runs);
            // The constant in the code is the one these reports give.
            for s in &runs {
                let coded = i128::from(s.from_neff[category.as_str()]) + i128::from(s.runtime[category.as_str()]);
                assert_eq!(coded, predict(s, all), "{} core {position} {category}", s.dir);
            }
            let mut loo_max = 0i128;
            if runs.len() > 1 {
                for (i, s) in runs.iter().enumerate() {
                    let others: Vec<&Sample> =
                        runs.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, s)| *s).collect();
                    let error = predict(s, fit(&others)) - i128::from(s.actual[category.as_str()]);
                    loo_max = loo_max.max(error.abs());
                }
            }
            let fitted = if shared_scratchpad { format!("page {all}") } else { all.to_string() };
            println!("{category:<24} {position:>8} {fitted:>14} {loo_max:>14}  ({} runs)", runs.len());
            assert_eq!(loo_max, 0, "{category} core {position}: the constant varies between runs");
        }
    }
}

#[test]
fn weights_are_the_npy_array_bytes() {
    for (label, path) in fleet::real_neffs() {
        let members = members_of(&std::fs::read(&path).unwrap());
        let doc = mem_json(&[&path]);
        for core in doc["cores"].as_array().unwrap() {
            let sg = core["subgraph"].as_str().unwrap();
            let want: u64 = members
                .iter()
                .filter(|(n, _)| n.starts_with(&format!("{sg}/")) && n.ends_with(".npy"))
                .map(|(_, b)| common::neff::npy_data(b).len() as u64)
                .sum();
            assert_eq!(core["from_neff"]["Weights"], want, "{label} {sg}");
            assert_eq!(core["usage"]["Weights"], want, "{label} {sg}");
            let pe: u64 =
                members.iter().filter(|(n, _)| *n == format!("{sg}/PE.bin")).map(|(_, b)| b.len() as u64).sum();
            assert_eq!(core["from_neff"]["Tensor Instructions"], pe, "{label} {sg}");
            // Without --profiling there are no profiler buffers.
            assert_eq!(core["usage"]["Profiler Buffers"], 0, "{label} {sg}");
        }
    }
}

#[test]
fn several_files_add_up_on_the_same_cores() {
    let (Some(a), Some(b)) = (fleet::fusion_neff("baseline_attention"), fleet::fusion_neff("baseline_fp32_s1024"))
    else {
        return;
    };
    let (one, two) = (mem_json(&[&a]), mem_json(&[&b]));
    let both = mem_json(&[&a, &b]);
    assert_eq!(both["files"][0], one);
    assert_eq!(both["files"][1], two);
    for core in 0..2 {
        let sum = &both["sum"]["cores"][core];
        assert_eq!(sum["core"], core);
        let (x, y) = (&one["cores"][core]["usage"], &two["cores"][core]["usage"]);
        let mut total = 0;
        for (category, value) in sum["usage"].as_object().unwrap() {
            let (x, y) = (x[category].as_u64().unwrap(), y[category].as_u64().unwrap());
            // The models of a core share one shared scratchpad.
            let want = if category == "Shared Scratchpad" { x.max(y) } else { x + y };
            assert_eq!(value.as_u64().unwrap(), want, "core {core} {category}");
            total += want;
        }
        assert_eq!(sum["total"], total);
    }
    let largest = &both["largest"];
    let t = |d: &Value, c: usize| d["cores"][c]["total"].as_u64().unwrap();
    let best = [t(&one, 0), t(&one, 1), t(&two, 0), t(&two, 1)].into_iter().max().unwrap();
    assert_eq!(largest["total"], best);
    assert_eq!(largest["file"], if best == t(&two, 0) { b.display().to_string() } else { a.display().to_string() });
    let text = stdout(&neff_p(&[&"mem", &a, &b]));
    assert!(text.contains("all 2 files on the same NeuronCores"), "{text}");
    assert!(text.contains("\nlargest: "), "{text}");
}

#[test]
fn another_arch_gets_the_neff_part_only() {
    let bytes = neff_host::sample::SampleBuilder::new().target("sunda").build().unwrap();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, &bytes).unwrap();
    let doc = mem_json(&[&f.path()]);
    assert_eq!(doc["runtime_overhead_source"], Value::Null);
    for core in doc["cores"].as_array().unwrap() {
        assert_eq!(core["runtime_overhead"], Value::Null);
        assert_eq!(core["usage"], core["from_neff"]);
        assert!(core["usage"]["Weights"].as_u64().unwrap() > 0);
    }
    let text = stdout(&neff_p(&[&"mem", &f.path()]));
    assert!(text.contains("no measured figures for this target"), "{text}");
}

#[test]
fn mem_refuses_what_check_refuses() {
    let out = neff(&["mem", "/nonexistent/x.neff"]);
    assert_eq!(code(&out), 2);
    let bytes = neff_host::sample::SampleBuilder::new().build().unwrap();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, &bytes[..bytes.len() - 100]).unwrap();
    assert_one_line_error(&neff_p(&[&"mem", &f.path()]), 1);
    assert_eq!(code(&neff(&["mem"])), 2, "FILE is required");
}
