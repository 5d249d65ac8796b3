//! Fuzz target `json`: see `neff_fuzz::core_targets::json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::json(data));
