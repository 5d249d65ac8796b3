//! The payload digest: XXH3-64 (seed 0, default secret), from the `xxhash-rust` crate.
//!
//! Every payload the loader streams to a device is digested on the way ([`Digest64`]), and
//! the simulated device keeps the same digest per region, so a load report can be checked
//! against the bytes that landed, and against the member itself: for a `.bin` member,
//! `xxhsum -H3 sg00/PE.bin` (Debian's `xxhash` package) over a file that `neff unpack` wrote
//! prints the digest the report gives. A `.npy` weight lands without its header, so its digest
//! is that of the array data.
//!
//! This module depends on nothing else in the crate: the loader digests payloads without the
//! simulator, and the simulator without the loader.
//!
//! XXH3 is a check that the right bytes landed in the right place, not a defence against a
//! forger. It needs no heap; the streaming state is about 400 bytes (an internal 256-byte
//! block buffer and eight 64-bit accumulators), and the result is the same for any chunking.

use core::fmt;

use xxhash_rust::xxh3::Xxh3Default;

/// The digest of `bytes` in one call; equal to feeding them to a [`Digest64`] in any chunking,
/// and to `xxhsum -H3`.
pub fn digest64(bytes: &[u8]) -> u64 {
    // A host (`name-tables`) digests every DMA and payload name it meets, tens of thousands
    // per real NEFF: the one-shot function skips building and finishing a 600-byte state.
    #[cfg(feature = "name-tables")]
    {
        xxhash_rust::xxh3::xxh3_64(bytes)
    }
    // Through the streaming state, not `xxh3_64`: the one-shot function is a second copy of
    // the whole algorithm in flash (1.3 KB on a Cortex-M4), for the short names it digests.
    #[cfg(not(feature = "name-tables"))]
    {
        let mut digest = Digest64::new();
        digest.update(bytes);
        digest.finish()
    }
}

/// A running XXH3-64 digest.
#[derive(Clone)]
pub struct Digest64 {
    state: Xxh3Default,
}

impl Digest64 {
    /// The digest of no bytes so far.
    #[inline(never)]
    pub const fn new() -> Self {
        Self { state: Xxh3Default::new() }
    }

    /// Starts over, as [`Digest64::new`] but in place: no second state is built on the stack.
    pub fn reset(&mut self) {
        self.state.reset();
    }

    /// Feeds more bytes.
    // Not inlined, nor is `finish`: their temporaries would otherwise join the frame of a
    // caller that also writes to the device and reads the archive (the deepest paths).
    #[inline(never)]
    pub fn update(&mut self, bytes: &[u8]) {
        self.state.update(bytes);
    }

    /// The digest of every byte fed so far (the digest can still be fed afterwards).
    #[inline(never)]
    pub fn finish(&self) -> u64 {
        self.state.digest()
    }
}

impl Default for Digest64 {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Digest64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest64({:016x})", self.finish())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    /// 1000 bytes of `(i * 31 + 7) % 251`.
    fn sample() -> [u8; 1000] {
        core::array::from_fn(|i| ((i * 31 + 7) % 251) as u8)
    }

    #[test]
    fn known_values_are_those_of_xxhsum_h3() {
        // From `xxhsum -H3` (xxHash 0.8.1) over files holding these bytes.
        assert_eq!(digest64(b""), 0x2d06_8005_38d3_94c2);
        assert_eq!(digest64(b"a"), 0xe6c6_32b6_1e96_4e1f);
        assert_eq!(digest64(b"foobar"), 0xd78f_da63_144c_5c84);
        assert_eq!(digest64(&sample()), 0x84b0_c79e_3e1a_c40e);
    }

    #[test]
    fn the_same_in_any_chunking() {
        let bytes = sample();
        // Lengths around XXH3's internal sizes (16, 128, 240, 256-byte blocks, 1024-byte stripes).
        for len in [0, 1, 3, 8, 16, 17, 128, 129, 240, 241, 256, 257, 512, 999, 1000] {
            let whole = digest64(&bytes[..len]);
            // The reference: XXH3's one-shot function (what `digest64` calls with `name-tables`).
            assert_eq!(whole, xxhash_rust::xxh3::xxh3_64(&bytes[..len]), "len {len}");
            // The streaming state (what `digest64` uses without it) gives the same.
            let mut streamed = Digest64::new();
            streamed.update(&bytes[..len]);
            assert_eq!(streamed.finish(), whole, "len {len}");
            for chunk in [1, 7, 64, 255, 256, 1000] {
                let mut d = Digest64::new();
                for piece in bytes[..len].chunks(chunk) {
                    d.update(piece);
                }
                assert_eq!(d.finish(), whole, "len {len} chunk {chunk}");
            }
        }
    }

    /// `digest64`'s two paths (one-shot with `name-tables`, the streaming state without)
    /// agree at every length a name can have, and past XXH3's 240-byte short-input limit.
    #[test]
    fn digest64_is_the_streaming_digest_at_every_name_length() {
        let bytes = sample();
        for len in 0..=600 {
            let mut streamed = Digest64::new();
            streamed.update(&bytes[..len]);
            assert_eq!(digest64(&bytes[..len]), streamed.finish(), "len {len}");
        }
    }

    #[test]
    fn reset_starts_over() {
        let bytes = sample();
        let mut d = Digest64::new();
        d.update(&bytes[..300]);
        d.reset();
        assert_eq!(d.finish(), digest64(b""));
        d.update(&bytes);
        assert_eq!(d.finish(), digest64(&bytes));
    }

    #[test]
    fn finish_does_not_end_the_digest() {
        let bytes = sample();
        let mut d = Digest64::new();
        d.update(&bytes[..300]);
        assert_eq!(d.finish(), digest64(&bytes[..300]));
        d.update(&bytes[300..]);
        assert_eq!(d.finish(), digest64(&bytes));
        // Length matters: a trailing zero byte changes the digest.
        assert_ne!(digest64(&[0u8; 8]), digest64(&[0u8; 9]));
    }
}
