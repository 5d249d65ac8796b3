//! Fuzz target `header`: see `neff_fuzz::core_targets::header`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::header(data));
