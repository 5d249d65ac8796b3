//! Fuzz target `unpack_path`: see `neff_fuzz::host_targets::unpack_path`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::host_targets::unpack_path(data));
