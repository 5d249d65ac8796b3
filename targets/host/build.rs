//! Writes the built-in sample NEFF into `OUT_DIR/sample.neff`, from the same generator that
//! the tests use (`src/sample.rs` over `src/writer.rs`), so the binary embeds it.

#[allow(dead_code)]
#[path = "src/writer.rs"]
mod writer;

#[allow(dead_code)]
#[path = "src/sample.rs"]
mod sample;

fn main() {
    println!("cargo:rerun-if-changed=src/sample.rs");
    println!("cargo:rerun-if-changed=src/writer.rs");
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let bytes = sample::SampleBuilder::new().build().expect("the sample NEFF generator failed");
    let path = std::path::Path::new(&out_dir).join("sample.neff");
    std::fs::write(&path, bytes).expect("cannot write the sample NEFF into OUT_DIR");
}
