//! The loader's lookups by name (a member's role, an earlier copy of it, a reference's payload)
//! grow linearly with a model's weights, not with their square: the arena's reads
//! (`Loader::arena_reads`, a count, the same on any machine) over a load of 4,000 weights are
//! about four times those over 1,000, with the definition before the weights (each weight lands
//! in its variable) and after them (each is staged, then bound). And the answers are the ones a
//! scan gives: every weight placed, a repeated weight replaced with its warning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use neff::archive::{Archive, OpenOptions};
use neff::loader::{LoadOptions, LoadReport, Loader, NoObserver};
use neff::manifest::Arch;
use neff::sim::SimDevice;
use neff_host::scale::ScaleSpec;

/// Where the weights go in the tar.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// As the generator writes them: after their `def.json`.
    AfterDef,
    /// Before every manifest, as in real NEFFs whose weights sort first.
    BeforeDef,
    /// Before, with the first weight a second time at the end (last copy wins).
    BeforeDefRepeated,
}

/// A training-shaped NEFF of one subgraph with `weights` weights, its members in `order`.
fn neff_with(weights: usize, order: Order) -> Vec<u8> {
    let mut spec = ScaleSpec::preset("trn1").unwrap();
    spec.set(&format!("weights={weights}")).unwrap();
    spec.set(&format!("vars_per_subgraph={weights}")).unwrap();
    let members = spec.members();
    let (mut npy, rest): (Vec<_>, Vec<_>) = members.into_iter().partition(|(n, _)| n.ends_with(".npy"));
    assert_eq!(npy.len(), weights, "one member a weight");
    let members = match order {
        Order::AfterDef => rest.into_iter().chain(npy).collect::<Vec<_>>(),
        Order::BeforeDef => npy.into_iter().chain(rest).collect(),
        Order::BeforeDefRepeated => {
            let again = npy[0].clone();
            npy.extend(rest);
            npy.push(again);
            npy
        }
    };
    neff_host::writer::neff_bytes(&spec.header(), &members).unwrap()
}

/// Loads `neff` onto a simulated device: the report and the arena's reads. (On a thread of
/// its own: the loader and the device's table are large for a debug build's test stack.)
fn load(neff: &[u8]) -> (LoadReport, u64) {
    let neff = neff.to_vec();
    std::thread::Builder::new().stack_size(64 << 20).spawn(move || load_here(&neff)).unwrap().join().unwrap()
}

fn load_here(neff: &[u8]) -> (LoadReport, u64) {
    let mut archive = Archive::<&[u8]>::open(neff, None, &OpenOptions::default(), &mut |_: &neff::Warning| {}).unwrap();
    let mut arena = vec![0u8; 1 << 24];
    let mut loader = Loader::new(&mut arena, LoadOptions::default());
    let mut report = LoadReport::new();
    let mut dev: Box<SimDevice<'_, 16384>> = Box::new(SimDevice::digest_only(1 << 40, Arch::Sunda));
    loader.load(&mut archive, &mut *dev, &mut report, &mut NoObserver, &mut |_: &neff::Warning| {}).unwrap();
    (report, loader.arena_reads())
}

#[test]
fn lookups_by_name_grow_linearly_with_the_weights() {
    for order in [Order::AfterDef, Order::BeforeDef, Order::BeforeDefRepeated] {
        let (small, small_reads) = load(&neff_with(1000, order));
        let (large, large_reads) = load(&neff_with(4000, order));
        let ratio = large_reads as f64 / small_reads as f64;
        println!("{order:?}: {small_reads} reads for 1,000 weights, {large_reads} for 4,000 ({ratio:.2}x)");
        // Linear is 4x; a scan per weight (the square) was 11x and more.
        assert!(ratio < 5.0, "{order:?}: {small_reads} reads for 1,000 weights, {large_reads} for 4,000");
        // Every weight placed (and the other payloads), nothing released, whatever the order.
        for (weights, report) in [(1000, &small), (4000, &large)] {
            let others = report.placed - weights;
            let repeated = u32::from(matches!(order, Order::BeforeDefRepeated));
            assert_eq!(report.released, 0, "{order:?}");
            assert_eq!(report.payloads, report.placed + repeated, "{order:?}: the replaced copy is not placed");
            assert!(others < 20, "{order:?}: {} placed for {weights} weights", report.placed);
            assert_eq!(report.warnings, repeated, "{order:?}: the repeated weight's warning only");
        }
    }
}

#[test]
fn the_order_of_the_weights_changes_no_placement() {
    let reports: Vec<LoadReport> =
        [Order::AfterDef, Order::BeforeDef, Order::BeforeDefRepeated].map(|o| load(&neff_with(600, o)).0).into();
    for r in &reports[1..] {
        assert_eq!((r.placed, r.bytes_placed), (reports[0].placed, reports[0].bytes_placed));
    }
    assert_eq!(reports[2].payloads, reports[0].payloads + 1, "the repeated weight, read twice");
}
