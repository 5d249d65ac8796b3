//! Fuzz target `archive`: see `neff_fuzz::core_targets::archive`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::archive(data));
