//! A pass over a file lends the loader no replay store first: members read before the
//! manifest naming them are read once, not copied. Only when the chain names one of them as
//! another kind than it was read as does a second pass read the file again with the store;
//! its outcome stands, and it prints only the warnings the first did not. Here the sample's
//! KELF moves into a directory, behind everything and twice over (so it is guessed an engine
//! JSON, and its second copy warns), with `neff.json`, which names it, last.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod support;

use support::{code, members_of, neff_around_tar, neff_p, raw_tar_member, stderr, stdout, write_temp};

const KELF: &str = "k/kelf-0.json";

/// The sample with its KELF moved to [`KELF`], `copies` times, and `neff.json` last.
fn kelf_moved(copies: usize) -> Vec<u8> {
    let mut members = members_of(neff_host::SAMPLE_NEFF);
    let take = |members: &mut Vec<(String, Vec<u8>)>, name: &str| {
        let at = members.iter().position(|(n, _)| n == name).unwrap_or_else(|| panic!("the sample has no {name}"));
        members.remove(at).1
    };
    let kelf = take(&mut members, "kelf-0.json");
    let neff = String::from_utf8(take(&mut members, "neff.json")).unwrap();
    assert!(neff.contains("\"kelf-0.json\""));
    let neff = neff.replacen("\"kelf-0.json\"", &format!("\"{KELF}\""), 1);
    members.extend((0..copies).map(|_| (KELF.to_string(), kelf.clone())));
    members.push(("neff.json".to_string(), neff.into_bytes()));
    let mut tar: Vec<u8> = members.iter().flat_map(|(name, body)| raw_tar_member(name, body, b'0')).collect();
    tar.extend_from_slice(&[0; 1024]);
    neff_around_tar(&tar)
}

/// The warning lines of a run.
fn warning_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.starts_with("warning: ")).collect()
}

#[test]
fn a_member_the_chain_names_as_another_kind_is_read_again_from_the_file() {
    let file = write_temp(&kelf_moved(2));
    let out = neff_p(&[&"check", &file.path()]);
    // Without the second pass, the KELF read as an engine JSON is refused (`ReadAsOther`).
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let summary = stdout(&out);
    assert!(summary.contains("2 subgraphs"), "{summary}");
    // The later copy of the KELF warns (as the staged payload, and as the document read);
    // each warning is printed once, though both passes raised it: as many lines as the
    // report counts.
    let err = stderr(&out);
    let lines = warning_lines(&err);
    let twice = lines.iter().filter(|l| l.contains(KELF) && l.contains("appears twice")).count();
    assert_eq!(twice, 2, "{err}");
    assert!(summary.contains(&format!("{} warnings", lines.len())), "{summary}\n{err}");
}

#[test]
fn a_budget_lends_the_replay_store_from_the_start_and_says_what_it_held() {
    let file = write_temp(&kelf_moved(1));
    let out = neff_p(&[&"load", &"--budget", &"--json", &file.path()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let replay = doc["budget"]["replay"].as_u64().unwrap();
    // Every manifest after `kelf-0.json` waited for `neff.json`: the KELF and the subgraph's.
    let members = members_of(&kelf_moved(1));
    let waiting: usize =
        members.iter().filter(|(n, _)| n.ends_with(".json") && n != "neff.json").map(|(_, b)| b.len()).sum();
    assert!(replay > 0 && replay <= waiting as u64, "replay {replay} of {waiting} bytes of JSON");
}

#[test]
fn with_v_the_runtime_s_debug_lines_are_printed_once() {
    let file = write_temp(&kelf_moved(1));
    let out = neff_p(&[&"-v", &"check", &file.path()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let debug: Vec<&str> = err.lines().filter(|l| !l.starts_with("warning: ")).collect();
    // The KELF node found and each subgraph's fp8 config, once each.
    assert!(debug.iter().any(|l| l.contains("Found KELF node")), "{err}");
    assert_eq!(debug.iter().filter(|l| l.starts_with("fp8_conversion_info")).count(), 2, "{err}");
    let unique: std::collections::BTreeSet<&&str> = debug.iter().collect();
    assert_eq!(unique.len(), debug.len(), "{err}");
}
