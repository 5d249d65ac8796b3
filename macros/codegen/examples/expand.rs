//! Prints the expansion of a schema directory (for reviewing generated code):
//! `cargo run -p neff-schema-codegen --example expand -- schema`.
fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "schema".into());
    let dir = std::path::Path::new(&dir);
    let files = neff_schema_codegen::model::load_dir(dir, "schema/").unwrap_or_else(|e| panic!("{e}"));
    let kinds = neff_schema_codegen::load_kinds(dir, "schema/").unwrap_or_else(|e| panic!("{e}"));
    match neff_schema_codegen::generate(&files, &kinds) {
        Ok(ts) => println!("{ts}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
