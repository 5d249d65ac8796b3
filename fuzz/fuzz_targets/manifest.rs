//! Fuzz target `manifest`: see `neff_fuzz::core_targets::manifest`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::manifest(data));
