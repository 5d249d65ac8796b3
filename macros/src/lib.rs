//! `schema!("schema")` and `schema_enums!("schema")`: expand the TOML files of a schema directory (relative to the calling
//! crate's `CARGO_MANIFEST_DIR`) into the manifest types, enums, layouts, parsers and the
//! consumed-key table. Schema errors are compile errors whose message starts with
//! `file:line:col`. The generation itself lives in `neff-schema-codegen`.

extern crate proc_macro;

use proc_macro::TokenStream;

/// Expands every `*.toml` of the directory named by the string literal argument, but the
/// discriminator enums ([`schema_enums!`](schema_enums)), which must be in scope.
#[proc_macro]
pub fn schema(input: TokenStream) -> TokenStream {
    expand(input, neff_schema_codegen::Part::Readers)
}

/// Expands the discriminator enums of the schema directory named by the string literal
/// argument: they name nothing of the crate, so a leaf module holds them.
#[proc_macro]
pub fn schema_enums(input: TokenStream) -> TokenStream {
    expand(input, neff_schema_codegen::Part::Enums)
}

fn expand(input: TokenStream, part: neff_schema_codegen::Part) -> TokenStream {
    let lit = syn::parse_macro_input!(input as syn::LitStr);
    let rel = lit.value();
    let root = match std::env::var("CARGO_MANIFEST_DIR") {
        Ok(r) => std::path::PathBuf::from(r),
        Err(_) => return syn::Error::new(lit.span(), "CARGO_MANIFEST_DIR is not set").to_compile_error().into(),
    };
    let prefix = format!("{}/", rel.trim_end_matches('/'));
    match neff_schema_codegen::expand_dir(&root.join(&rel), &prefix, part) {
        Ok(tokens) => tokens.into(),
        Err(e) => syn::Error::new(lit.span(), e.0).to_compile_error().into(),
    }
}
