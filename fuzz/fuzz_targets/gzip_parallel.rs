//! Fuzz target `gzip_parallel`: see `neff_fuzz::host_targets::gzip_parallel`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| neff_fuzz::host_targets::gzip_parallel(data));
