//! Prints `targets/c/include/neff_schema.h`, the C form of a schema directory's enums and layouts:
//! `cargo run -p neff-schema-codegen --example c-header -- schema`; with `ffi-kinds` after the
//! directory, `targets/c/src/kinds.rs` instead (the C ABI's status and stage enums, from its
//! kinds table). scripts/gen-header.sh runs both.
fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "schema".into());
    let dir = std::path::Path::new(&dir);
    let text = match std::env::args().nth(2).as_deref() {
        Some("ffi-kinds") => {
            neff_schema_codegen::load_kinds(dir, "schema/").map(|k| neff_schema_codegen::c::ffi_kinds(&k))
        }
        _ => neff_schema_codegen::model::load_dir(dir, "schema/").and_then(|files| {
            neff_schema_codegen::c::header(&files, &neff_schema_codegen::load_kinds(dir, "schema/")?)
        }),
    };
    match text {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
