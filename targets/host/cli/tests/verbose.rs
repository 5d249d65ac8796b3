//! `neff -v`: the runtime's debug lines (`Found KELF node: %s`, libnrt's words) and each
//! subgraph's fp8 conversion config as the loader fills it, on stderr; and the runtime's fp8
//! environment variables (`NEURON_RT_DBG_FP8_*`, `NEURON_RT_DBG_OCP_FP8_SAT`) set on the
//! child process, seen in that config, with garbage values refused as usage errors naming the
//! variable. What each NEFF holds is read here with `tar` + `flate2` + `serde_json`, not by the
//! command.

#[path = "../../../../tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::*;

/// The six variables, cleared in every child (the test's own environment must not leak in).
const FP8_VARIABLES: [&str; 6] = [
    "NEURON_RT_DBG_FP8_RANGE_EXT",
    "NEURON_RT_DBG_FP8_EMAX_E4M3",
    "NEURON_RT_DBG_FP8_EMAX_E5M2",
    "NEURON_RT_DBG_OCP_FP8_SAT",
    "NEURON_RT_DBG_FP8_SIS",
    "NEURON_RT_DBG_FP8_SNS",
];

/// `neff` with `args`, the fp8 variables cleared and then `env` set.
fn neff_env(args: &[&dyn AsRef<std::ffi::OsStr>], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neff"));
    cmd.args(args.iter().map(|a| a.as_ref()));
    for v in FP8_VARIABLES {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("spawn neff");
    assert_ne!(out.status.code(), Some(101), "neff panicked: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The KELF members `neff.json`'s KELF nodes name (`attrs.kelf`), read independently.
fn kelf_members(neff: &[u8]) -> Vec<String> {
    let members = members_of(neff);
    let (_, doc) = members.iter().find(|(n, _)| n.trim_start_matches("./") == "neff.json").expect("neff.json");
    let doc: Value = serde_json::from_slice(doc).unwrap();
    let mut kelfs: Vec<String> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["attrs"]["kelf"].as_str().map(str::to_owned))
        .collect();
    kelfs.sort();
    kelfs.dedup();
    kelfs
}

/// Each `def.json`'s `fp8_conversion_config`, read independently: `member -> config` (absent:
/// `Value::Null`).
fn fp8_configs(neff: &[u8]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = members_of(neff)
        .into_iter()
        .filter(|(n, _)| n.ends_with("/def.json"))
        .map(|(n, bytes)| {
            let doc: Value = serde_json::from_slice(&bytes).unwrap();
            (n.trim_start_matches("./").to_owned(), doc["fp8_conversion_config"].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The `fp8_conversion_info` lines of a `-v` run: `member -> the rest of the line`.
fn fp8_lines(err: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = err
        .lines()
        .filter_map(|l| l.strip_prefix("fp8_conversion_info "))
        .map(|l| {
            let (member, rest) = l.split_once(": ").unwrap();
            (member.to_owned(), rest.to_owned())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The line `-v` prints for a config (JSON `null`: not initialised, every field zero).
fn fp8_line(c: &Value) -> String {
    let flag = |k: &str| u8::from(c[k].as_bool().unwrap_or(false));
    let num = |k: &str| c[k].as_u64().unwrap_or(0);
    format!(
        "initialized {}, fp8_range_extension {}, emax_fp8_e4m3 {}, emax_fp8_e5m2 {}, ocp_sat {}, fp8_sis {}, fp8_sns {}",
        u8::from(!c.is_null()),
        flag("fp8_range_extension"),
        num("emax_fp8_e4m3"),
        num("emax_fp8_e5m2"),
        flag("ocp_sat"),
        flag("fp8_sis"),
        flag("fp8_sns"),
    )
}

/// `load`, `check` and `info` with `-v` print `Found KELF node: <member>` for each KELF node
/// (libnrt's words), on stderr, and nothing of it on stdout; without `-v`, no such line.
fn assert_kelf_lines(path: &Path, neff: &[u8]) {
    let kelfs = kelf_members(neff);
    assert!(!kelfs.is_empty(), "{}: no KELF node", path.display());
    let want: Vec<String> = kelfs.iter().map(|k| format!("Found KELF node: {k}")).collect();
    for verb in [&["load", "-v"][..], &["check", "-v"], &["-v", "info", "--json"]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            verb.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        args.push(&path);
        let out = neff_env(&args, &[]);
        assert_eq!(code(&out), 0, "{verb:?} {}: {}", path.display(), stderr(&out));
        let err = stderr(&out);
        let mut got: Vec<String> =
            err.lines().filter(|l| l.starts_with("Found KELF node: ")).map(str::to_owned).collect();
        got.sort();
        got.dedup();
        assert_eq!(got, want, "{verb:?} {}: stderr {err}", path.display());
        assert!(!stdout(&out).contains("Found KELF node"), "{verb:?}: the debug line went to stdout");
    }
    let quiet = neff_env(&[&"check", &path], &[]);
    assert_eq!(code(&quiet), 0);
    assert!(!stderr(&quiet).contains("Found KELF node"), "without -v: {}", stderr(&quiet));
}

#[test]
fn v_prints_the_kelf_node_debug_line_for_the_sample_neff() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sample.neff");
    std::fs::write(&path, neff_host::sample::SampleBuilder::new().build().unwrap()).unwrap();
    assert_kelf_lines(&path, &std::fs::read(&path).unwrap());
}

#[test]
fn v_prints_the_kelf_node_debug_line_for_real_neffs() {
    for rel in ["public/nkipy/matmul_small.neff", "public/trainium-kernel-fusion/baseline_bf16_s512/baseline.neff"] {
        let Some(path) = common::fixture(rel) else { return };
        assert_kelf_lines(&path, &std::fs::read(&path).unwrap());
    }
}

/// Without the variables, `-v` prints each `def.json`'s config as the document says; with each
/// variable set on the child, that field (and only it) takes the variable's value, in `load`
/// and `check` alike, whether or not the document has the key.
#[test]
fn the_fp8_environment_variables_replace_the_config_the_loader_fills() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    std::fs::write(&sample, neff_host::sample::SampleBuilder::new().build().unwrap()).unwrap();
    let mut paths = vec![sample];
    paths.extend(common::fixture("public/nkipy/matmul_small.neff"));
    for path in &paths {
        let neff = std::fs::read(path).unwrap();
        let configs = fp8_configs(&neff);
        assert!(!configs.is_empty(), "{}: no def.json", path.display());
        let plain = neff_env(&[&"load", &"-v", path], &[]);
        assert_eq!(code(&plain), 0, "{}", stderr(&plain));
        let want: Vec<(String, String)> = configs.iter().map(|(m, c)| (m.clone(), fp8_line(c))).collect();
        assert_eq!(fp8_lines(&stderr(&plain)), want, "{}: without overrides", path.display());

        let env = [
            ("NEURON_RT_DBG_FP8_RANGE_EXT", "1"),
            ("NEURON_RT_DBG_FP8_EMAX_E4M3", "7"),
            ("NEURON_RT_DBG_FP8_EMAX_E5M2", " 14 "),
            ("NEURON_RT_DBG_OCP_FP8_SAT", "true"),
            ("NEURON_RT_DBG_FP8_SIS", "1"),
            ("NEURON_RT_DBG_FP8_SNS", "false"),
        ];
        for verb in ["load", "check"] {
            let out = neff_env(&[&verb, &"-v", path], &env);
            assert_eq!(code(&out), 0, "{verb}: {}", stderr(&out));
            let want: Vec<(String, String)> = configs
                .iter()
                .map(|(m, c)| {
                    let initialized = u8::from(!c.is_null());
                    let line = format!(
                        "initialized {initialized}, fp8_range_extension 1, emax_fp8_e4m3 7, emax_fp8_e5m2 14, \
                         ocp_sat 1, fp8_sis 1, fp8_sns 0"
                    );
                    (m.clone(), line)
                })
                .collect();
            assert_eq!(fp8_lines(&stderr(&out)), want, "{verb} {}: all six set", path.display());
        }

        // One variable alone changes its field only.
        let out = neff_env(&[&"load", &"-v", path], &[("NEURON_RT_DBG_FP8_EMAX_E4M3", "3")]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let want: Vec<(String, String)> = configs
            .iter()
            .map(|(m, c)| {
                let mut c = if c.is_null() { serde_json::json!({}) } else { c.clone() };
                c["emax_fp8_e4m3"] = 3.into();
                let line = fp8_line(&c);
                // `initialized` stays what the document says.
                let initialized = u8::from(!configs.iter().find(|(n, _)| n == m).unwrap().1.is_null());
                (m.clone(), line.replacen("initialized 1", &format!("initialized {initialized}"), 1))
            })
            .collect();
        assert_eq!(fp8_lines(&stderr(&out)), want, "{}: emax_fp8_e4m3 alone", path.display());
    }
}

/// A value a variable cannot take is a usage error (exit 2, one `error:` line) naming the
/// variable and the value, before the load starts (nothing on stdout); in every verb that loads.
#[test]
fn garbage_fp8_values_are_usage_errors_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.neff");
    std::fs::write(&sample, neff_host::sample::SampleBuilder::new().build().unwrap()).unwrap();
    let cases = [
        ("NEURON_RT_DBG_FP8_RANGE_EXT", "yes", "0, 1, false or true"),
        ("NEURON_RT_DBG_OCP_FP8_SAT", "2", "0, 1, false or true"),
        ("NEURON_RT_DBG_FP8_SIS", "", "0, 1, false or true"),
        ("NEURON_RT_DBG_FP8_EMAX_E4M3", "-1", "an unsigned integer"),
        ("NEURON_RT_DBG_FP8_EMAX_E5M2", "4294967296", "an unsigned integer"),
        ("NEURON_RT_DBG_FP8_SNS", "on", "0, 1, false or true"),
    ];
    for (variable, value, expected) in cases {
        for verb in ["load", "check", "info"] {
            let out = neff_env(&[&verb, &sample], &[(variable, value)]);
            let line = assert_one_line_error(&out, 2);
            assert!(line.contains(&format!("{variable}={value}")), "{verb} {variable}={value:?}: {line}");
            assert!(line.contains(expected), "{verb} {variable}={value:?}: {line}");
            assert!(stdout(&out).is_empty(), "{verb}: printed before refusing: {}", stdout(&out));
        }
    }
}
