//! Fuzz target `loader_check`: see `neff_fuzz::core_targets::loader_check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::loader_check(data));
