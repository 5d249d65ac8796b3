//! Rebuilds the crate when a file is added to or removed from `schema/` (the `schema!` macro
//! tracks edits to existing files itself, through `include_bytes!`), and says once which build
//! keeps the waiting DMA references' bucket heads in the loader's state (`host_wait_heads`: a
//! host with `name-tables`; bare metal keeps its loader state under 64 KiB, see `loader::dma`).
fn main() {
    println!("cargo:rerun-if-changed=schema");
    println!("cargo::rustc-check-cfg=cfg(host_wait_heads)");
    let name_tables = std::env::var_os("CARGO_FEATURE_NAME_TABLES").is_some();
    let bare_metal = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "none");
    if name_tables && !bare_metal {
        println!("cargo:rustc-cfg=host_wait_heads");
    }
}
