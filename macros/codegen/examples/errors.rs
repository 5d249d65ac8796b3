//! Prints what the refusal table renders (for reviewing): `cargo run -p neff-schema-codegen
//! --example errors -- schema/errors.toml [refusals|codes|header|Header|Header-messages|table]`.
fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "schema/errors.toml".into());
    let what = std::env::args().nth(2).unwrap_or_else(|| "refusals".into());
    let table =
        neff_schema_codegen::errors::Errors::load(std::path::Path::new(&path), &path).unwrap_or_else(|e| panic!("{e}"));
    use neff_schema_codegen::errors::LayerPart;
    let out = match what.as_str() {
        "refusals" => table.render_refusals(),
        "codes" => table.render_error_codes(),
        "header" => table.render_c_header(),
        "table" => table.generate_table().to_string(),
        layer => match layer.strip_suffix("-messages") {
            Some(l) => table.generate_layer(l, LayerPart::Messages).unwrap_or_else(|e| panic!("{e}")).to_string(),
            None => table.generate_layer(layer, LayerPart::Types).unwrap_or_else(|e| panic!("{e}")).to_string(),
        },
    };
    print!("{out}");
}
