//! Fuzz target `gzip`: see `neff_fuzz::core_targets::gzip`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::gzip(data));
