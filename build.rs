//! Rebuilds the crate when a file is added to or removed from `schema/` (the `schema!` macro
//! tracks edits to existing files itself, through `include_bytes!`).
fn main() {
    println!("cargo:rerun-if-changed=schema");
}
