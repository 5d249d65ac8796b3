//! The shared library's SONAME: `libneff.so.0`, the name `scripts/install-c.sh` installs it
//! under (with `libneff.so` beside it for the linker), so that a program linked against it
//! asks for that file at run time, never for the build tree's `libneff_ffi.so`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libneff.so.{}", env!("CARGO_PKG_VERSION_MAJOR"));
    }
}
