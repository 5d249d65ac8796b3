//! The member index (`neff_host::index`): every member read from a checkpoint is the member
//! the generator wrote, with checkpoints far apart, close together, and thinned to the bound.

use std::collections::HashMap;
use std::io::Cursor;

use neff_host::index::{MemberIndex, Recorder, MAX_CHECKPOINTS};
use neff_host::loading::{self, Request};
use neff_host::scale::ScaleSpec;
use neff_host::source::InputSource;
use neff_host::tap::TapOptions;

/// A NEFF with 400 weights (a tar stream of about 512 KiB), and its members by name.
fn generated() -> (Vec<u8>, HashMap<String, Vec<u8>>) {
    generated_with(400)
}

/// A NEFF with `weights` weights (about 1.3 KiB of tar each), and its members by name.
fn generated_with(weights: usize) -> (Vec<u8>, HashMap<String, Vec<u8>>) {
    let mut spec = ScaleSpec::small();
    spec.set(&format!("weights={weights}")).expect("weights");
    let bytes = spec.build().expect("build");
    let members = spec.members().into_iter().collect();
    (bytes, members)
}

/// The index of one indexed pass over `neff`, checkpoints `spacing` bytes apart.
fn index_of(neff: &[u8], spacing: u64) -> (MemberIndex, Vec<String>) {
    let source = InputSource::Reader(Box::new(Cursor::new(neff.to_vec())), neff.len() as u64);
    let recorder = Recorder::with_spacing(spacing);
    let request = Request { tap: Some(TapOptions::members()), index: Some(recorder.clone()), ..Request::check() };
    let pass = loading::run(source, request).expect("a valid NEFF");
    let log = pass.members.expect("the tap's list");
    let names = log.members.iter().map(|m| m.name.clone()).collect();
    (MemberIndex::new(&recorder, &log.members, &mut Cursor::new(neff)), names)
}

fn reads_every_member(spacing: u64) -> usize {
    reads_members_of(generated(), spacing, 1)
}

/// Reads every `step`-th member, last first, through the index; returns its checkpoints.
fn reads_members_of((neff, want): (Vec<u8>, HashMap<String, Vec<u8>>), spacing: u64, step: usize) -> usize {
    let (index, names) = index_of(&neff, spacing);
    assert!(index.can_read());
    assert!(names.len() >= 400, "{} members", names.len());
    // Last member first: nothing depends on what was read before.
    for name in names.iter().rev().step_by(step) {
        let got = index.read(name, &mut Cursor::new(&neff)).expect("read").expect("a member");
        assert_eq!(Some(&got), want.get(name), "{name} (spacing {spacing})");
    }
    assert_eq!(index.read("no/such/member", &mut Cursor::new(&neff)).expect("read"), None);
    index.checkpoints()
}

#[test]
fn members_read_from_the_default_spacing() {
    // A tar stream under 4 MiB: one checkpoint, at the start.
    assert_eq!(reads_every_member(neff_host::index::SPACING), 1);
}

#[test]
fn members_read_from_checkpoints_in_the_middle_of_the_stream() {
    let kept = reads_every_member(16 << 10);
    assert!(kept > 10, "{kept} checkpoints");
}

#[test]
fn checkpoints_are_thinned_to_the_bound() {
    // A checkpoint is taken at most once per inflate call (up to 32 KiB of output each): a
    // tar stream of about 10 MiB has room for more than the bound.
    let big = generated_with(8000);
    let (index, _) = index_of(&big.0, 1 << 10);
    assert!(index.checkpoints() <= MAX_CHECKPOINTS, "{}", index.checkpoints());
    assert!(index.checkpoints() > MAX_CHECKPOINTS / 4, "{}", index.checkpoints());
    assert!(index.spacing() > 1 << 10, "the spacing doubled");
    assert!(reads_members_of(big, 1 << 10, 97) <= MAX_CHECKPOINTS);
}

#[test]
fn a_changed_file_is_an_error_not_wrong_bytes() {
    let (neff, _) = generated();
    let (index, names) = index_of(&neff, 64 << 10);
    let last = names.last().expect("a member");
    let cut = &neff[..neff.len() / 2];
    assert!(index.read(last, &mut Cursor::new(cut)).is_err());
}
