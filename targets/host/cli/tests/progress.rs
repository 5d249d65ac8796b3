//! Progress bars: drawn on a terminal for big jobs, never on a pipe.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::process::Command;

use support::*;

/// A 20 MB NEFF (pkg 1, raw tar: quick to build) in a fresh temporary directory.
fn big_neff() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let body: Vec<u8> = (0..20_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(input.join("blob.bin"), body).unwrap();
    let neff = dir.path().join("big.neff");
    let out = neff_p(&[&"pack", &input, &"-o", &neff, &"--pkg-version", &"1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (dir, neff)
}

#[test]
fn no_bar_on_a_pipe() {
    let (dir, neff) = big_neff();
    let out = neff_p(&[&"unpack", &neff, &"-o", &dir.path().join("out")]);
    assert_eq!(code(&out), 0);
    assert_eq!(stderr(&out), "", "nothing but results on a pipe");
    assert!(stdout(&out).starts_with("unpacked 1 members"));
}

#[test]
fn a_bar_on_a_terminal() {
    // `script` (util-linux) runs the command on a pseudo-terminal and copies what it drew.
    if Command::new("script").arg("--version").output().is_err() {
        // A newcomer's machine may lack it; CI never skips (scripts/test-all.sh installs it).
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "`script` (util-linux, Debian bsdutils) is missing under CI=true");
        eprintln!("skipping: no `script` command to provide a terminal");
        return;
    }
    let (dir, neff) = big_neff();
    let cmd =
        format!("{} unpack {} -o {}", env!("CARGO_BIN_EXE_neff"), neff.display(), dir.path().join("out").display());
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("unpack ["), "no progress bar drawn: {screen:?}");
    assert!(screen.contains("19.07 MiB") || screen.contains("19.08 MiB"), "{screen:?}");
    assert!(screen.contains("unpacked 1 members"));
}
