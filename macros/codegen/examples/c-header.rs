//! Prints `targets/c/include/neff_schema.h`, the C form of a schema directory's enums and layouts:
//! `cargo run -p neff-schema-codegen --example c-header -- schema` (scripts/gen-header.sh).
fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "schema".into());
    let dir = std::path::Path::new(&dir);
    let header = neff_schema_codegen::model::load_dir(dir, "schema/")
        .and_then(|files| neff_schema_codegen::c::header(&files, &neff_schema_codegen::load_kinds(dir, "schema/")?));
    match header {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
