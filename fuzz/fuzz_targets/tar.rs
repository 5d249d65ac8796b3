//! Fuzz target `tar`: see `neff_fuzz::core_targets::tar`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::tar(data));
