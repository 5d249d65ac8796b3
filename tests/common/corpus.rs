//! The malformed-NEFF corpus, generated from the real small NEFF: damaged manifests, damaged
//! `.npy` payloads, damaged tar streams and cuts. `tests/malformed.rs` loads every one (no
//! panic, a typed error); the CLI's inflate-path test loads every one both ways.
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

/// Applies one random damage to `body`: flip a byte, cut it, or splice in garbage.
pub fn damage(body: &mut Vec<u8>, rng: &mut Rng) {
    if body.is_empty() {
        body.push(b'{');
        return;
    }
    match rng.below(4) {
        0 => {
            let i = rng.below(body.len());
            body[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(body.len());
            body[i] = b"{}[]\",:0-e.\\ntu\x00\xff"[rng.below(16)];
        }
        2 => body.truncate(rng.below(body.len())),
        _ => {
            let i = rng.below(body.len());
            let junk: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            body.splice(i..i, junk);
        }
    }
}

/// 400 NEFFs with one manifest member damaged.
pub fn damaged_manifests(neff: &[u8]) -> Vec<Vec<u8>> {
    let original = members(neff);
    let manifests: Vec<usize> =
        original.iter().enumerate().filter(|(_, (n, _))| n.ends_with(".json")).map(|(i, _)| i).collect();
    let mut rng = Rng(0x5eed_0001);
    (0..400)
        .map(|_| {
            let mut list = original.clone();
            let target = manifests[rng.below(manifests.len())];
            damage(&mut list[target].1, &mut rng);
            pack(neff, &list)
        })
        .collect()
}

/// 150 NEFFs with the `.npy` weight's header damaged (its first 128 bytes) or its data cut.
pub fn damaged_npy_payloads(neff: &[u8]) -> Vec<Vec<u8>> {
    let original = members(neff);
    let npy = original.iter().position(|(n, _)| n.ends_with(".npy")).unwrap();
    let mut rng = Rng(0x5eed_0002);
    (0..150)
        .map(|_| {
            let mut list = original.clone();
            let body = &mut list[npy].1;
            if rng.below(2) == 0 {
                let i = rng.below(128);
                body[i] ^= 1 << rng.below(8);
            } else {
                body.truncate(128 + rng.below(body.len() - 128));
            }
            pack(neff, &list)
        })
        .collect()
}

/// 200 NEFFs whose inflated tar has one bit flipped (half of them in a header block), gzip'd
/// again under the same header.
pub fn damaged_tar_streams(neff: &[u8]) -> Vec<Vec<u8>> {
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(&neff[1024..]).read_to_end(&mut tar_bytes).unwrap();
    let mut rng = Rng(0x5eed_0003);
    (0..200)
        .map(|round| {
            let mut tar = tar_bytes.clone();
            let block = rng.below(tar.len() / 512);
            let at = if round % 2 == 0 { block * 512 + rng.below(512) } else { rng.below(tar.len()) };
            tar[at] ^= 1 << rng.below(8);
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&tar).unwrap();
            let payload = gz.finish().unwrap();
            let mut out = neff[..1024].to_vec();
            out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            out.extend_from_slice(&payload);
            out
        })
        .collect()
}

/// The NEFF cut every 997 bytes (each cut is a truncated file).
pub fn cuts(neff: &[u8]) -> Vec<Vec<u8>> {
    (0..neff.len()).step_by(997).map(|cut| neff[..cut].to_vec()).collect()
}
