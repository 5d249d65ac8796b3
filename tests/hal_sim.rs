//! SimDevice through the Hal trait: allocation, bounds, adoption, digests, accounting, and a
//! pseudo-random workload checked against a model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use neff::digest::{digest64, Digest64};
use neff::hal::{usage_index, AllocRequest, Hal, HalError, RegionId, USAGE_CLASS_COUNT};
use neff::manifest::{Arch, UsageClass};
use neff::sim::{Adoption, RegionState, SimDevice};
use neff::Status;

fn req(size: u64, align: u64, usage: UsageClass, core: u8) -> AllocRequest {
    AllocRequest { size, align, usage, core }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Writes `bytes` into `region` in chunks of `chunk` bytes, in order.
fn write_chunked<H: Hal>(hal: &mut H, region: RegionId, bytes: &[u8], chunk: usize) {
    for (i, part) in bytes.chunks(chunk).enumerate() {
        hal.write(region, (i * chunk) as u64, part).unwrap();
    }
}

#[test]
fn allocations_honour_alignment_and_do_not_overlap() {
    let mut memory = vec![0u8; 1 << 16];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    assert_eq!(dev.arch(), Arch::Cayman);
    let mut spans = Vec::new();
    for (i, align) in [1u64, 64, 8, 4096, 2, 512].into_iter().enumerate() {
        let id = dev.alloc(&req(100 + i as u64 * 7, align, UsageClass::Weight, 0)).unwrap();
        let address = dev.address(id).unwrap();
        assert_eq!(address % align, 0, "align {align}");
        let record = dev.region(id).unwrap();
        assert_eq!((record.address, record.align, record.state), (address, align, RegionState::Live));
        spans.push((address, record.end()));
    }
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "{pair:?} overlap");
    }
}

#[test]
fn released_space_is_reused_first_fit() {
    let mut memory = vec![0u8; 4096];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Sunda);
    let a = dev.alloc(&req(1000, 1, UsageClass::Generic, 0)).unwrap();
    let b = dev.alloc(&req(1000, 1, UsageClass::Generic, 0)).unwrap();
    let c = dev.alloc(&req(1000, 1, UsageClass::Generic, 0)).unwrap();
    assert_eq!([dev.address(a), dev.address(b), dev.address(c)], [Ok(0), Ok(1000), Ok(2000)]);
    dev.release(b).unwrap();
    // 1000 bytes fit in b's hole; 1050 do not, and go after c.
    let d = dev.alloc(&req(1050, 1, UsageClass::Generic, 0)).unwrap();
    assert_eq!(dev.address(d), Ok(3000));
    dev.release(d).unwrap();
    let e = dev.alloc(&req(900, 16, UsageClass::Generic, 0)).unwrap();
    assert_eq!(dev.address(e), Ok(1008), "first aligned address inside the freed hole");
    assert_eq!(dev.region(b).unwrap().state, RegionState::Released);
    assert_eq!(dev.live_regions().count(), 3);
}

#[test]
fn out_of_memory_names_request_and_free_bytes_and_changes_nothing() {
    let mut memory = vec![0u8; 1024];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let a = dev.alloc(&req(300, 1, UsageClass::Io, 0)).unwrap();
    let b = dev.alloc(&req(300, 1, UsageClass::Io, 0)).unwrap();
    let _c = dev.alloc(&req(300, 1, UsageClass::Io, 0)).unwrap();
    dev.release(b).unwrap();
    // 424 bytes free in two spans of 300 and 124: 400 contiguous bytes do not fit.
    let err = dev.alloc(&req(400, 1, UsageClass::Weight, 1)).unwrap_err();
    assert_eq!(err, HalError::OutOfMemory { requested: 400, align: 1, free: 424, largest_free: 300 });
    assert_eq!(err.status(), Status::Resource);
    let text = err.to_string();
    assert!(text.contains("400") && text.contains("424 bytes free"), "{text}");
    assert_eq!(dev.live_regions().count(), 2);
    assert_eq!(dev.live_bytes(), 600);
    assert_eq!(dev.address(a), Ok(0));
    // Bigger than the whole device, and an alignment that pushes past the end.
    assert!(matches!(dev.alloc(&req(u64::MAX, 1, UsageClass::Io, 0)), Err(HalError::OutOfMemory { .. })));
    assert!(matches!(dev.alloc(&req(200, 512, UsageClass::Io, 0)), Err(HalError::OutOfMemory { .. })));
}

#[test]
fn bad_requests_are_refused() {
    let mut dev: SimDevice = SimDevice::digest_only(1 << 20, Arch::Cayman);
    assert_eq!(dev.alloc(&req(0, 1, UsageClass::Io, 0)), Err(HalError::ZeroSize));
    let err = dev.alloc(&req(8, 48, UsageClass::Io, 0)).unwrap_err();
    assert_eq!(err, HalError::BadAlignment { align: 48 });
    assert_eq!(err.status(), Status::Invalid);
    assert_eq!(dev.write(RegionId(99), 0, b"x"), Err(HalError::UnknownRegion { region: RegionId(99) }));
    assert_eq!(dev.release(RegionId(0)), Err(HalError::UnknownRegion { region: RegionId(0) }));
    assert_eq!(dev.live_regions().count(), 0);
}

#[test]
fn writes_past_the_end_are_errors_and_write_nothing() {
    let mut memory = vec![0u8; 256];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let id = dev.alloc(&req(16, 1, UsageClass::Weight, 0)).unwrap();
    dev.write(id, 0, &[7; 10]).unwrap();
    let err = dev.write(id, 10, &[9; 7]).unwrap_err();
    assert_eq!(err, HalError::OutOfBounds { region: id, offset: 10, len: 7, size: 16 });
    assert_eq!(
        dev.write(id, u64::MAX, b"ab"),
        Err(HalError::OutOfBounds { region: id, offset: u64::MAX, len: 2, size: 16 })
    );
    assert_eq!(dev.contents(id).unwrap(), &[7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0, 0, 0]);
    assert_eq!(dev.region(id).unwrap().written, 10);
    dev.write(id, 10, &[9; 6]).unwrap();
    assert_eq!(dev.region(id).unwrap().written, 16);

    let mut dev: SimDevice = SimDevice::digest_only(1 << 20, Arch::Cayman);
    let id = dev.alloc(&req(16, 1, UsageClass::Weight, 0)).unwrap();
    assert!(matches!(dev.write(id, 0, &[0; 17]), Err(HalError::OutOfBounds { len: 17, .. })));
    assert_eq!(dev.region(id).unwrap().written, 0);
}

#[test]
fn released_region_refuses_writes() {
    let mut memory = vec![0u8; 256];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let id = dev.alloc(&req(16, 1, UsageClass::Weight, 0)).unwrap();
    dev.release(id).unwrap();
    assert_eq!(dev.write(id, 0, b"a"), Err(HalError::UnknownRegion { region: id }));
    assert_eq!(dev.release(id), Err(HalError::UnknownRegion { region: id }));
    assert_eq!(dev.contents(id), None);
    assert_eq!(dev.live_bytes(), 0);
}

#[test]
fn digests_equal_digest64_of_the_bytes_in_both_modes() {
    let payload = pattern(10_000, 3);
    let mut memory = vec![0u8; 1 << 16];
    let mut mem_dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let mut dig_dev: SimDevice = SimDevice::digest_only(64 << 30, Arch::Cayman);
    for chunk in [1usize, 7, 4096, 10_000] {
        let m = mem_dev.alloc(&AllocRequest::staging(10_000, 0)).unwrap();
        let d = dig_dev.alloc(&AllocRequest::staging(10_000, 0)).unwrap();
        write_chunked(&mut mem_dev, m, &payload, chunk);
        write_chunked(&mut dig_dev, d, &payload, chunk);
        assert_eq!(mem_dev.digest(m), Some(digest64(&payload)), "chunk {chunk}");
        assert_eq!(dig_dev.digest(d), Some(digest64(&payload)), "chunk {chunk}");
        assert_eq!(mem_dev.contents(m), Some(&payload[..]));
        assert_eq!(dig_dev.contents(d), None, "digest-only mode stores no byte");
        mem_dev.release(m).unwrap();
        dig_dev.release(d).unwrap();
        assert_eq!(mem_dev.region(m).unwrap().digest(), Some(digest64(&payload)), "kept after release");
    }
    // A partial write digests only what was written.
    let d = dig_dev.alloc(&AllocRequest::staging(100, 0)).unwrap();
    dig_dev.write(d, 0, &payload[..40]).unwrap();
    assert_eq!(dig_dev.digest(d), Some(digest64(&payload[..40])));
    let mut incremental = Digest64::new();
    incremental.update(&payload[..40]);
    assert_eq!(dig_dev.digest(d), Some(incremental.finish()));
}

#[test]
fn writes_to_more_regions_at_once_than_streams() {
    let payloads: Vec<Vec<u8>> = (0..3).map(|i| pattern(1000, i)).collect();
    for digest_only in [false, true] {
        let mut memory = vec![0u8; 1 << 14];
        let mut dev: SimDevice<'_, 8, 2> = if digest_only {
            SimDevice::digest_only(1 << 14, Arch::Cayman)
        } else {
            SimDevice::new(&mut memory, Arch::Cayman)
        };
        let ids: Vec<RegionId> = (0..3).map(|_| dev.alloc(&AllocRequest::staging(1000, 0)).unwrap()).collect();
        // Two regions half written hold both streams.
        dev.write(ids[0], 0, &payloads[0][..500]).unwrap();
        dev.write(ids[1], 0, &payloads[1][..500]).unwrap();
        let third = dev.write(ids[2], 0, &payloads[2][..500]);
        if digest_only {
            assert_eq!(third, Err(HalError::RegionTableFull { limit: "STREAMS", capacity: 2 }));
            // Once one region is full, its stream goes to the next region that needs one.
            dev.write(ids[0], 500, &payloads[0][500..]).unwrap();
            dev.write(ids[2], 0, &payloads[2][..500]).unwrap();
        } else {
            third.unwrap(); // digested from memory instead
        }
        dev.write(ids[2], 500, &payloads[2][500..]).unwrap();
        dev.write(ids[1], 500, &payloads[1][500..]).unwrap();
        if !digest_only {
            dev.write(ids[0], 500, &payloads[0][500..]).unwrap();
        }
        for (id, payload) in ids.iter().zip(&payloads) {
            assert_eq!(dev.digest(*id), Some(digest64(payload)), "digest-only {digest_only}");
        }
    }
}

#[test]
fn digest_only_mode_requires_sequential_writes() {
    let mut dev: SimDevice = SimDevice::digest_only(1 << 20, Arch::Mariana);
    let id = dev.alloc(&AllocRequest::staging(64, 0)).unwrap();
    let err = dev.write(id, 8, &[1; 8]).unwrap_err();
    assert_eq!(err, HalError::OutOfOrderWrite { region: id, expected: 0, offset: 8 });
    assert_eq!(err.status(), Status::Failure);
    dev.write(id, 0, &[1; 8]).unwrap();
    // An empty chunk lands nothing, wherever it points inside the region.
    dev.write(id, 40, &[]).unwrap();
    assert_eq!(dev.write(id, 65, &[]), Err(HalError::OutOfBounds { region: id, offset: 65, len: 0, size: 64 }));
    // Rewriting bytes already received is out of order too.
    assert_eq!(dev.write(id, 0, &[2; 8]), Err(HalError::OutOfOrderWrite { region: id, expected: 8, offset: 0 }));
    dev.write(id, 8, &[3; 8]).unwrap();
    let mut expected = vec![1u8; 8];
    expected.extend([3u8; 8]);
    assert_eq!(dev.digest(id), Some(digest64(&expected)));
}

#[test]
fn memory_mode_accepts_out_of_order_writes_and_recomputes_the_digest() {
    let mut memory = vec![0u8; 1024];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let id = dev.alloc(&AllocRequest::staging(64, 0)).unwrap();
    dev.write(id, 32, &[5; 16]).unwrap();
    dev.write(id, 0, &[6; 8]).unwrap();
    assert_eq!(dev.region(id).unwrap().digest(), None, "running digest is stale");
    let mut expected = vec![6u8; 8];
    expected.extend([0u8; 24]);
    expected.extend([5u8; 16]);
    assert_eq!(dev.region(id).unwrap().written, 48);
    assert_eq!(dev.digest(id), Some(digest64(&expected)));
    // The digest is frozen on release, before the memory can be reused.
    dev.release(id).unwrap();
    let reuse = dev.alloc(&AllocRequest::staging(64, 0)).unwrap();
    dev.write(reuse, 0, &[0xee; 64]).unwrap();
    assert_eq!(dev.digest(id), Some(digest64(&expected)));
}

#[test]
fn adopt_in_place_relabels_and_consumes_the_staged_id() {
    for digest_only in [false, true] {
        let mut memory = vec![0u8; 1 << 14];
        let mut dev: SimDevice = if digest_only {
            SimDevice::digest_only(1 << 14, Arch::Cayman)
        } else {
            SimDevice::new(&mut memory, Arch::Cayman)
        };
        let payload = pattern(768, 9);
        let staged = dev.alloc(&AllocRequest::staging(768, 0)).unwrap();
        write_chunked(&mut dev, staged, &payload, 100);
        assert_eq!(dev.bytes_in(UsageClass::Generic), 768);

        // Address 0 satisfies any alignment: relabelled in place.
        let adopted = dev.adopt(staged, &req(768, 64, UsageClass::InstrPe, 1)).unwrap();
        assert_ne!(adopted, staged);
        let record = *dev.region(adopted).unwrap();
        assert_eq!(record.address, 0);
        assert_eq!((record.usage, record.core, record.align), (UsageClass::InstrPe, 1, 64));
        assert_eq!(record.adopted_from, Some(Adoption { from: staged, in_place: true }));
        assert_eq!(dev.region(staged).unwrap().state, RegionState::Adopted { into: adopted });
        assert_eq!(dev.digest(adopted), Some(digest64(&payload)));
        assert_eq!(dev.bytes_in(UsageClass::Generic), 0);
        assert_eq!(dev.bytes_in(UsageClass::InstrPe), 768);
        assert_eq!(dev.live_bytes(), 768);
        assert_eq!(dev.peak_bytes(), 768, "no copy was needed");
        if !digest_only {
            assert_eq!(dev.contents(adopted), Some(&payload[..]));
        }
        // The staged id is consumed.
        assert_eq!(dev.write(staged, 0, b"x"), Err(HalError::UnknownRegion { region: staged }));
        assert_eq!(dev.release(staged), Err(HalError::UnknownRegion { region: staged }));
        assert_eq!(
            dev.adopt(staged, &req(768, 1, UsageClass::Weight, 0)),
            Err(HalError::UnknownRegion { region: staged })
        );
        dev.release(adopted).unwrap();
        assert_eq!(dev.live_bytes(), 0);
    }
}

#[test]
fn adopt_copies_when_alignment_or_size_differ() {
    for digest_only in [false, true] {
        let mut memory = vec![0u8; 1 << 14];
        let mut dev: SimDevice = if digest_only {
            SimDevice::digest_only(1 << 14, Arch::Cayman)
        } else {
            SimDevice::new(&mut memory, Arch::Cayman)
        };
        let filler = dev.alloc(&AllocRequest::staging(10, 0)).unwrap();
        let payload = pattern(448, 1);
        let staged = dev.alloc(&AllocRequest::staging(448, 0)).unwrap();
        assert_eq!(dev.address(staged), Ok(10));
        write_chunked(&mut dev, staged, &payload, 64);

        // Address 10 is not 64-aligned: copied device-side, staged released.
        let adopted = dev.adopt(staged, &req(448, 64, UsageClass::InstrPool, 0)).unwrap();
        let record = *dev.region(adopted).unwrap();
        assert_eq!(record.address % 64, 0);
        assert_ne!(record.address, 10);
        assert_eq!(record.adopted_from, Some(Adoption { from: staged, in_place: false }));
        assert_eq!(record.written, 448);
        assert_eq!(dev.digest(adopted), Some(digest64(&payload)));
        assert_eq!(dev.region(staged).unwrap().state, RegionState::Adopted { into: adopted });
        assert_eq!(dev.peak_bytes(), 10 + 448 + 448, "both copies were live during the copy");
        assert_eq!(dev.live_bytes(), 10 + 448);
        assert_eq!(dev.bytes_in(UsageClass::InstrPool), 448);
        assert_eq!(dev.bytes_in(UsageClass::Generic), 10);
        if !digest_only {
            assert_eq!(dev.contents(adopted), Some(&payload[..]));
        }

        // A larger role: copied, the tail is zero.
        let adopted_again = dev.adopt(adopted, &req(500, 1, UsageClass::Weight, 0)).unwrap();
        let record = *dev.region(adopted_again).unwrap();
        assert_eq!(record.size, 500);
        assert!(!record.adopted_from.unwrap().in_place);
        assert_eq!(dev.digest(adopted_again), Some(digest64(&payload)), "digest covers what was written");
        if !digest_only {
            let contents = dev.contents(adopted_again).unwrap();
            assert_eq!(&contents[..448], &payload[..]);
            assert!(contents[448..].iter().all(|&b| b == 0));
        }
        dev.release(filler).unwrap();
    }
}

#[test]
fn failed_adopt_leaves_the_staged_region_live() {
    let mut memory = vec![0u8; 1024];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Cayman);
    let _filler = dev.alloc(&AllocRequest::staging(1, 0)).unwrap();
    let staged = dev.alloc(&AllocRequest::staging(600, 0)).unwrap();
    dev.write(staged, 0, &[4; 600]).unwrap();
    let err = dev.adopt(staged, &req(599, 1, UsageClass::Weight, 0)).unwrap_err();
    assert_eq!(err, HalError::AdoptTooSmall { region: staged, staged: 600, requested: 599 });
    // A copy is needed (address 1 is not 8-aligned) and there is no room for it.
    let err = dev.adopt(staged, &req(600, 8, UsageClass::Weight, 0)).unwrap_err();
    assert!(matches!(err, HalError::OutOfMemory { requested: 600, .. }), "{err:?}");
    assert_eq!(dev.region(staged).unwrap().state, RegionState::Live);
    assert_eq!(dev.bytes_in(UsageClass::Generic), 601);
    assert_eq!(dev.contents(staged), Some(&[4u8; 600][..]));
    dev.release(staged).unwrap();
}

#[test]
fn accounting_by_usage_class() {
    let mut dev: SimDevice = SimDevice::digest_only(64 << 30, Arch::Cayman);
    let io = dev.alloc(&req(4 << 30, 4096, UsageClass::Io, 0)).unwrap();
    let w1 = dev.alloc(&req(32768, 64, UsageClass::Weight, 0)).unwrap();
    let w2 = dev.alloc(&req(32768, 64, UsageClass::Weight, 1)).unwrap();
    let pe = dev.alloc(&req(1_361_216, 64, UsageClass::InstrPe, 0)).unwrap();
    let usage = dev.usage_bytes();
    assert_eq!(usage[usage_index(UsageClass::Io)], 4 << 30);
    assert_eq!(usage[usage_index(UsageClass::Weight)], 65536);
    assert_eq!(usage[usage_index(UsageClass::InstrPe)], 1_361_216);
    assert_eq!(usage.iter().sum::<u64>(), dev.live_bytes());
    assert_eq!(usage.len(), USAGE_CLASS_COUNT);
    dev.release(w1).unwrap();
    dev.release(io).unwrap();
    assert_eq!(dev.bytes_in(UsageClass::Weight), 32768);
    assert_eq!(dev.bytes_in(UsageClass::Io), 0);
    assert_eq!(dev.peak_usage_bytes()[usage_index(UsageClass::Io)], 4 << 30);
    assert_eq!(dev.peak_usage_bytes()[usage_index(UsageClass::Weight)], 65536);
    assert_eq!(dev.peak_bytes(), (4 << 30) + 65536 + 1_361_216);
    assert_eq!(dev.free_bytes(), (64 << 30) - 32768 - 1_361_216);
    let live: Vec<RegionId> = dev.live_regions().map(|r| r.id).collect();
    assert_eq!(live, [w2, pe]);
}

#[test]
fn the_log_keeps_released_records_until_their_slot_is_needed() {
    let mut dev: SimDevice<'_, 4> = SimDevice::digest_only(1 << 20, Arch::Cayman);
    let ids: Vec<RegionId> = (0..4).map(|_| dev.alloc(&AllocRequest::staging(8, 0)).unwrap()).collect();
    assert_eq!(
        dev.alloc(&AllocRequest::staging(8, 0)),
        Err(HalError::RegionTableFull { limit: "REGIONS", capacity: 4 })
    );
    dev.release(ids[2]).unwrap();
    dev.release(ids[0]).unwrap();
    let e = dev.alloc(&AllocRequest::staging(8, 0)).unwrap();
    // The oldest released record (ids[0]) made room; ids[2] is still in the log.
    assert_eq!(dev.forgotten(), 1);
    assert!(dev.region(ids[0]).is_none());
    assert_eq!(dev.region(ids[2]).unwrap().state, RegionState::Released);
    let log: Vec<RegionId> = dev.log().map(|r| r.id).collect();
    assert_eq!(log, [ids[1], ids[2], ids[3], e], "the log stays in id order");
    // Ids are never reused.
    assert!(e > ids[3]);
}

fn stage_through_a_reference<H: Hal>(mut hal: H, bytes: &[u8]) -> RegionId {
    let id = hal.alloc(&AllocRequest::staging(bytes.len() as u64, 0)).unwrap();
    hal.write(id, 0, bytes).unwrap();
    id
}

#[test]
fn hal_is_implemented_for_mutable_references() {
    let mut memory = vec![0u8; 64];
    let mut dev: SimDevice = SimDevice::new(&mut memory, Arch::Sunda);
    let id = stage_through_a_reference(&mut dev, b"staged");
    let by_ref: &mut SimDevice = &mut dev;
    assert_eq!(<&mut SimDevice as Hal>::arch(&by_ref), Arch::Sunda);
    assert_eq!(dev.contents(id), Some(&b"staged"[..]));
}

/// xorshift64*: a deterministic sequence, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Live {
    id: RegionId,
    bytes: Vec<u8>,
    written: usize,
}

fn check_invariants(dev: &SimDevice<'_, 64, 64>, model: &[Live], capacity: u64, check_digests: bool) {
    let mut spans: Vec<(u64, u64, RegionId)> = dev.live_regions().map(|r| (r.address, r.end(), r.id)).collect();
    assert_eq!(spans.len(), model.len());
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "live regions overlap: {pair:?}");
    }
    assert!(spans.last().is_none_or(|s| s.1 <= capacity));
    for live in model {
        let record = dev.region(live.id).unwrap();
        assert_eq!(record.address % record.align, 0);
        assert_eq!(record.written, live.written as u64);
        if check_digests {
            assert_eq!(dev.digest(live.id), Some(digest64(&live.bytes[..live.written])));
        }
    }
    assert_eq!(dev.live_bytes(), model.iter().map(|l| l.bytes.len() as u64).sum::<u64>());
    assert_eq!(dev.usage_bytes().iter().sum::<u64>(), dev.live_bytes());
}

fn random_workload(digest_only: bool, seed: u64) {
    const CAPACITY: u64 = 1 << 16;
    let mut memory = vec![0u8; CAPACITY as usize];
    let mut dev: SimDevice<'_, 64, 64> = if digest_only {
        SimDevice::digest_only(CAPACITY, Arch::Cayman)
    } else {
        SimDevice::new(&mut memory, Arch::Cayman)
    };
    let mut rng = Rng(seed);
    let mut model: Vec<Live> = Vec::new();
    let mut released_spans: Vec<(u64, u64)> = Vec::new();
    let mut reused = 0usize;
    let mut allocated_total = 0u64;
    let mut adoptions = [0usize; 2]; // [copied, in place]
    for step in 0..3000 {
        match rng.below(10) {
            0..=3 => {
                let size = 1 + rng.below(4096);
                let align = 1 << rng.below(8);
                let usage = neff::hal::USAGE_CLASSES[rng.below(USAGE_CLASS_COUNT as u64) as usize];
                match dev.alloc(&req(size, align, usage, rng.below(2) as u8)) {
                    Ok(id) => {
                        let record = *dev.region(id).unwrap();
                        if released_spans.iter().any(|&(s, e)| record.address < e && s < record.end()) {
                            reused += 1;
                        }
                        allocated_total += size;
                        let seed = rng.next() as u8;
                        model.push(Live { id, bytes: pattern(size as usize, seed), written: 0 });
                    }
                    Err(HalError::OutOfMemory { requested, free, .. }) => {
                        assert_eq!(requested, size);
                        assert_eq!(free, dev.free_bytes());
                    }
                    Err(HalError::RegionTableFull { .. }) => assert_eq!(model.len(), 64),
                    Err(e) => panic!("unexpected {e:?}"),
                }
            }
            4..=6 if !model.is_empty() => {
                let i = rng.below(model.len() as u64) as usize;
                let live = &mut model[i];
                let len = (rng.below(600) as usize).min(live.bytes.len() - live.written);
                let start = live.written;
                dev.write(live.id, start as u64, &live.bytes[start..start + len]).unwrap();
                live.written += len;
                // A chunk running one byte past the end is refused whole.
                let remaining = live.bytes.len() - live.written;
                let err = dev.write(live.id, live.written as u64, &vec![0xaa; remaining + 1]).unwrap_err();
                assert!(matches!(err, HalError::OutOfBounds { .. }), "{err:?}");
            }
            7..=8 if !model.is_empty() => {
                let live = model.swap_remove(rng.below(model.len() as u64) as usize);
                let record = *dev.region(live.id).unwrap();
                released_spans.push((record.address, record.end()));
                dev.release(live.id).unwrap();
                assert!(dev.region(live.id).is_none_or(|r| r.state == RegionState::Released));
            }
            9 if !model.is_empty() => {
                let i = rng.below(model.len() as u64) as usize;
                let size = model[i].bytes.len() as u64 + rng.below(2) * rng.below(64);
                let align = 1 << rng.below(8);
                let old = model[i].id;
                match dev.adopt(old, &req(size, align, UsageClass::Weight, 0)) {
                    Ok(new) => {
                        let in_place = dev.region(new).unwrap().adopted_from.unwrap().in_place;
                        adoptions[usize::from(in_place)] += 1;
                        model[i].id = new;
                        model[i].bytes.resize(size as usize, 0);
                        if let Some(record) = dev.region(old) {
                            assert_eq!(record.state, RegionState::Adopted { into: new });
                        }
                    }
                    Err(HalError::OutOfMemory { .. } | HalError::RegionTableFull { .. }) => {
                        assert_eq!(dev.region(old).unwrap().state, RegionState::Live);
                    }
                    Err(e) => panic!("unexpected {e:?}"),
                }
            }
            _ => {}
        }
        check_invariants(&dev, &model, CAPACITY, step % 16 == 0);
    }
    check_invariants(&dev, &model, CAPACITY, true);
    assert!(allocated_total > 4 * CAPACITY, "the workload allocated {allocated_total} bytes in all");
    assert!(reused > 100, "freed memory was reused only {reused} times");
    assert!(adoptions[0] > 10 && adoptions[1] > 10, "adoptions [copied, in place] = {adoptions:?}");
    if !digest_only {
        for live in &model {
            assert_eq!(&dev.contents(live.id).unwrap()[..live.written], &live.bytes[..live.written]);
        }
    }
}

#[test]
fn random_workload_memory_mode() {
    for seed in [1, 0x5eed, 0xdead_beef] {
        random_workload(false, seed);
    }
}

#[test]
fn random_workload_digest_only_mode() {
    for seed in [2, 0xfeed, 0x1234_5678] {
        random_workload(true, seed);
    }
}
