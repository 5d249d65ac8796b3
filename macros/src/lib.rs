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

/// The calling crate's directory, which the tables' paths are relative to.
fn crate_root(span: proc_macro2::Span) -> Result<std::path::PathBuf, TokenStream> {
    std::env::var("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .map_err(|_| syn::Error::new(span, "CARGO_MANIFEST_DIR is not set").to_compile_error().into())
}

fn expand(input: TokenStream, part: neff_schema_codegen::Part) -> TokenStream {
    let lit = syn::parse_macro_input!(input as syn::LitStr);
    let rel = lit.value();
    let root = match crate_root(lit.span()) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let prefix = format!("{}/", rel.trim_end_matches('/'));
    match neff_schema_codegen::expand_dir(&root.join(&rel), &prefix, part) {
        Ok(tokens) => tokens.into(),
        Err(e) => syn::Error::new(lit.span(), e.0).to_compile_error().into(),
    }
}

/// `refusals!("schema/errors.toml", Header)`: the layer's error and warning enums of the refusal
/// table, with their `code()` and `status()`, in the calling module.
#[proc_macro]
pub fn refusals(input: TokenStream) -> TokenStream {
    expand_errors(input, Some(neff_schema_codegen::errors::LayerPart::Types))
}

/// `refusal_messages!("schema/errors.toml", Header)`: the `Display` of the layer's enums (where
/// the names their messages use are in scope).
#[proc_macro]
pub fn refusal_messages(input: TokenStream) -> TokenStream {
    expand_errors(input, Some(neff_schema_codegen::errors::LayerPart::Messages))
}

/// `refusal_table!("schema/errors.toml")`: the rows as `CodeRow` constants and the rendered
/// documents (docs/refusals.md, docs/error-codes.md, targets/c/include/neff_codes.h) as strings.
#[proc_macro]
pub fn refusal_table(input: TokenStream) -> TokenStream {
    expand_errors(input, None)
}

/// `kinds!("schema/kinds.toml", Stage)`: one enum of the kinds table (the stages and the manifest
/// tiers among them, the JSON tokens, the JSON value types) with its methods, in the calling
/// module: `Stage`, `ManifestKind`, `Scratch`, `Manifest`, `TokenKind`, `Event` or `JsonType`.
#[proc_macro]
pub fn kinds(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as TableArgs);
    let span = args.path.span();
    let rel = args.path.value();
    let Some(which) = args.layer else {
        return syn::Error::new(span, "name the enum: (\"schema/kinds.toml\", Stage)").to_compile_error().into();
    };
    let root = match crate_root(span) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match neff_schema_codegen::expand_kinds(&root.join(&rel), &rel, &which.to_string()) {
        Ok(tokens) => tokens.into(),
        Err(e) => syn::Error::new(which.span(), e.0).to_compile_error().into(),
    }
}

/// A table's path and, for the macros that expand one part of it, the part's name.
struct TableArgs {
    path: syn::LitStr,
    layer: Option<syn::Ident>,
}

impl syn::parse::Parse for TableArgs {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let path = input.parse()?;
        let layer = if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Self { path, layer })
    }
}

fn expand_errors(input: TokenStream, part: Option<neff_schema_codegen::errors::LayerPart>) -> TokenStream {
    let args = syn::parse_macro_input!(input as TableArgs);
    let span = args.path.span();
    let rel = args.path.value();
    let root = match crate_root(span) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let table = match neff_schema_codegen::errors::Errors::load(&root.join(&rel), &rel) {
        Ok(t) => t,
        Err(e) => return syn::Error::new(span, e.0).to_compile_error().into(),
    };
    let out = match (part, &args.layer) {
        (None, None) => Ok(table.generate_table()),
        (Some(part), Some(layer)) => table.generate_layer(&layer.to_string(), part).map(|mut ts| {
            ts.extend(table.track());
            ts
        }),
        (None, Some(l)) => {
            return syn::Error::new(l.span(), "refusal_table! takes the path alone").to_compile_error().into()
        }
        (Some(_), None) => {
            return syn::Error::new(span, "name the layer: (\"schema/errors.toml\", Header)").to_compile_error().into()
        }
    };
    match out {
        Ok(tokens) => tokens.into(),
        Err(e) => syn::Error::new(span, e.0).to_compile_error().into(),
    }
}
