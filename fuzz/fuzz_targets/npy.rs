//! Fuzz target `npy`: see `neff_fuzz::core_targets::npy`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::npy(data));
