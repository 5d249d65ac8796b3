//! NEFFs at the scale of real models (spec §15.20: size is never a reason to refuse a valid
//! NEFF on the host): `info`, `check` and `load --digest-only` accept each generated preset,
//! and report its counts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod support;

use neff_cli::scale::ScaleSpec;
use support::{code, neff_p, stdout};

/// Writes `preset` to a temporary file and runs every accepting verb on it.
fn accepted(preset: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{preset}.neff"));
    std::fs::write(&path, ScaleSpec::preset(preset).unwrap().build().unwrap()).unwrap();
    let mut info = String::new();
    for verb in [&["info"][..], &["check"][..], &["load", "--digest-only"][..]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            verb.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>).collect();
        args.push(&path);
        let out = neff_p(&args);
        assert_eq!(code(&out), 0, "{preset}: neff {verb:?}: {}", String::from_utf8_lossy(&out.stderr));
        if verb == ["info"] {
            info = stdout(&out);
        }
    }
    (dir, path, info)
}

#[test]
fn two_thousand_inputs_and_five_hundred_outputs_of_up_to_32_dims() {
    let (_d, _p, info) = accepted("io");
    assert!(info.contains("in01999"), "the last input is listed");
    assert!(info.contains("out00499"), "the last output is listed");
    let dims32 = format!("[{}]", ["2"; 32].join(", "));
    assert!(info.contains(&dims32), "a 32-dimension shape is printed whole");
}

#[test]
fn a_hundred_thousand_vars_in_one_def_json() {
    let (_d, _p, info) = accepted("vars");
    assert!(info.contains("vars (100002)"), "{}", info.lines().find(|l| l.contains("vars (")).unwrap_or(""));
}

#[test]
fn three_thousand_npy_weights_each_its_own_member() {
    let (_d, path, _) = accepted("weights");
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(text.lines().filter(|l| l.contains("WEIGHT") && l.contains("placed")).count(), 3000);
}

#[test]
fn sixteen_subgraphs() {
    let (_d, _p, info) = accepted("subgraphs");
    assert!(info.contains("subgraph sg15"));
}

#[test]
fn long_directory_and_member_names_through_pax() {
    let spec = ScaleSpec::preset("names").unwrap();
    let (_d, path, info) = accepted("names");
    assert!(info.contains(&spec.dir(1)), "the 300-byte directory is printed");
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    assert!(stdout(&out).contains(&format!("{}/{}", spec.dir(0), spec.weight_file(0))));
}

#[test]
fn sixty_four_queue_sets_of_sixteen_queues_and_thirty_two_semaphores() {
    let (_d, _p, info) = accepted("queues");
    assert!(info.contains("dma queues (64)"));
    assert!(info.contains("16 queues"));
}

#[test]
fn eight_activation_sets() {
    let (_d, path, _) = accepted("act-sets");
    let out = support::neff(&["load", "--digest-only", path.to_str().unwrap()]);
    let text = stdout(&out);
    // Bucket and control tables of 8 sets in 2 subgraphs, each an activation table.
    assert_eq!(text.lines().filter(|l| l.contains("ACT_TABLE") && l.contains("placed")).count(), 2 * 8 * 2);
}
