//! Fuzz target `loader_members`: see `neff_fuzz::core_targets::loader_members`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::core_targets::loader_members(data));
