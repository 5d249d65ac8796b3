//! The malformed-NEFF corpus, generated from the real small NEFF: damaged manifests, damaged
//! `.npy` payloads, damaged tar streams and cuts. `tests/malformed.rs` loads every one and
//! checks each against what its damage must give; the CLI's inflate-path test loads every one
//! both ways.
//!
//! Each generator has a `*_cases` form (`damaged_manifest_cases`) that says what was damaged and where, so a test can
//! work out the expected outcome of each case from its damage.
#![allow(dead_code)]

use std::io::{Read, Write};

use super::neff::{members, pack};

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One damage done to a byte string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// Bit `bit` of byte `at` flipped.
    Flip { at: usize, bit: u8 },
    /// Byte `at` replaced by `byte`.
    Set { at: usize, byte: u8 },
    /// Cut to its first `at` bytes.
    Cut { at: usize },
    /// `junk` inserted before byte `at`.
    Splice { at: usize, junk: Vec<u8> },
}

/// Applies one random damage to `body`: flip a bit, replace a byte, cut it, or splice in
/// garbage. Returns what it did.
pub fn damage(body: &mut Vec<u8>, rng: &mut Rng) -> Damage {
    if body.is_empty() {
        body.push(b'{');
        return Damage::Splice { at: 0, junk: vec![b'{'] };
    }
    match rng.below(4) {
        0 => {
            let at = rng.below(body.len());
            let bit = rng.below(8) as u8;
            body[at] ^= 1 << bit;
            Damage::Flip { at, bit }
        }
        1 => {
            let at = rng.below(body.len());
            let byte = b"{}[]\",:0-e.\\ntu\x00\xff"[rng.below(16)];
            body[at] = byte;
            Damage::Set { at, byte }
        }
        2 => {
            let at = rng.below(body.len());
            body.truncate(at);
            Damage::Cut { at }
        }
        _ => {
            let at = rng.below(body.len());
            let junk: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            body.splice(at..at, junk.iter().copied());
            Damage::Splice { at, junk }
        }
    }
}

/// A NEFF with one member's body damaged.
#[derive(Debug, Clone)]
pub struct DamagedMember {
    /// The damaged member.
    pub member: String,
    /// What was done to its body.
    pub damage: Damage,
    /// Its body before and after.
    pub original: Vec<u8>,
    pub body: Vec<u8>,
    /// The NEFF, packed again around the damaged member.
    pub neff: Vec<u8>,
}

impl DamagedMember {
    /// Member `at` of `list` (damaged from `original`'s), repacked into a NEFF with `neff`'s header.
    fn new(neff: &[u8], original: &[(String, Vec<u8>)], list: &[(String, Vec<u8>)], at: usize, damage: Damage) -> Self {
        DamagedMember {
            member: list[at].0.clone(),
            damage,
            original: original[at].1.clone(),
            body: list[at].1.clone(),
            neff: pack(neff, list),
        }
    }
}

/// 400 NEFFs with one manifest member damaged, with their damage.
pub fn damaged_manifest_cases(neff: &[u8]) -> Vec<DamagedMember> {
    let original = members(neff);
    let manifests: Vec<usize> =
        original.iter().enumerate().filter(|(_, (n, _))| n.ends_with(".json")).map(|(i, _)| i).collect();
    let mut rng = Rng(0x5eed_0001);
    (0..400)
        .map(|_| {
            let mut list = original.clone();
            let target = manifests[rng.below(manifests.len())];
            let damage = damage(&mut list[target].1, &mut rng);
            DamagedMember::new(neff, &original, &list, target, damage)
        })
        .collect()
}

/// 400 NEFFs with one manifest member damaged.
pub fn damaged_manifests(neff: &[u8]) -> Vec<Vec<u8>> {
    damaged_manifest_cases(neff).into_iter().map(|c| c.neff).collect()
}

/// 150 NEFFs with the `.npy` weight's header damaged (a bit of its first 128 bytes flipped) or
/// its data cut, with their damage.
pub fn damaged_npy_cases(neff: &[u8]) -> Vec<DamagedMember> {
    let original = members(neff);
    let npy = original.iter().position(|(n, _)| n.ends_with(".npy")).unwrap();
    let mut rng = Rng(0x5eed_0002);
    (0..150)
        .map(|_| {
            let mut list = original.clone();
            let body = &mut list[npy].1;
            let damage = if rng.below(2) == 0 {
                let at = rng.below(128);
                let bit = rng.below(8) as u8;
                body[at] ^= 1 << bit;
                Damage::Flip { at, bit }
            } else {
                let at = 128 + rng.below(body.len() - 128);
                body.truncate(at);
                Damage::Cut { at }
            };
            DamagedMember::new(neff, &original, &list, npy, damage)
        })
        .collect()
}

/// 150 NEFFs with the `.npy` weight's header damaged (its first 128 bytes) or its data cut.
pub fn damaged_npy_payloads(neff: &[u8]) -> Vec<Vec<u8>> {
    damaged_npy_cases(neff).into_iter().map(|c| c.neff).collect()
}

/// A NEFF whose inflated tar has one bit flipped.
#[derive(Debug, Clone)]
pub struct DamagedTar {
    /// The flipped byte's offset in the inflated tar, and the bit.
    pub at: usize,
    pub bit: u8,
    /// The NEFF: the damaged tar gzip'd again under the same header.
    pub neff: Vec<u8>,
}

/// 200 NEFFs whose inflated tar has one bit flipped (half of them in a header block), gzip'd
/// again under the same header, with where the flip is.
pub fn damaged_tar_cases(neff: &[u8]) -> Vec<DamagedTar> {
    let tar_bytes = inflated(neff);
    let mut rng = Rng(0x5eed_0003);
    (0..200)
        .map(|round| {
            let mut tar = tar_bytes.clone();
            let block = rng.below(tar.len() / 512);
            let at = if round % 2 == 0 { block * 512 + rng.below(512) } else { rng.below(tar.len()) };
            let bit = rng.below(8) as u8;
            tar[at] ^= 1 << bit;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&tar).unwrap();
            let payload = gz.finish().unwrap();
            let mut out = neff[..1024].to_vec();
            out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            out.extend_from_slice(&payload);
            DamagedTar { at, bit, neff: out }
        })
        .collect()
}

/// 200 NEFFs whose inflated tar has one bit flipped, gzip'd again under the same header.
pub fn damaged_tar_streams(neff: &[u8]) -> Vec<Vec<u8>> {
    damaged_tar_cases(neff).into_iter().map(|c| c.neff).collect()
}

/// The inflated tar of a gzip'd NEFF.
pub fn inflated(neff: &[u8]) -> Vec<u8> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&neff[1024..]).read_to_end(&mut tar).unwrap();
    tar
}

/// The NEFF cut every 997 bytes (each cut is a truncated file).
pub fn cuts(neff: &[u8]) -> Vec<Vec<u8>> {
    (0..neff.len()).step_by(997).map(|cut| neff[..cut].to_vec()).collect()
}
