//! Prints the expansion of a schema directory (for reviewing generated code):
//! `cargo run -p neff-schema-codegen --example expand -- schema`.
fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "schema".into());
    match neff_schema_codegen::generate(
        &neff_schema_codegen::model::load_dir(std::path::Path::new(&dir), "schema/").unwrap_or_else(|e| panic!("{e}")),
    ) {
        Ok(ts) => println!("{ts}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
