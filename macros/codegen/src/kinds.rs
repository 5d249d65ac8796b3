//! The kinds table (`schema/kinds.toml`): the data path's stages with the manifest tiers among
//! them, the JSON tokens and the JSON value types, one list each. Every enum that lists one of
//! them is expanded from it ([`Kinds::generate`]), where that enum belongs, so that a layer low
//! in the crate (`error`) and one high in it (`loader`) share the list without naming each other.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use serde::Deserialize;
use toml::Spanned;

use crate::model::{error_in, parse_toml, read_text, SchemaError, SchemaFile};
use crate::tokens::{doc_attrs, is_ident, track};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindsToml {
    /// The stages, in data-path order.
    #[serde(rename = "stage")]
    pub stages: Vec<StageToml>,
    /// The JSON tokens.
    #[serde(rename = "token")]
    pub tokens: Vec<TokenToml>,
    /// The JSON value types.
    #[serde(rename = "type")]
    pub types: Vec<TypeToml>,
    /// The outcomes of a load (the runtime's `NRT_STATUS`), the C ABI's own among them.
    #[serde(rename = "status", default)]
    pub statuses: Vec<StatusToml>,
    /// The C ABI's stages beyond the data path's.
    #[serde(rename = "c_stage", default)]
    pub c_stages: Vec<CStageToml>,
}

/// An outcome: `Status` and the C ABI's `neff_status`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusToml {
    /// The `Status` variant (`NEFF_STATUS_<NAME>` in C).
    pub name: Spanned<String>,
    /// The number (the runtime's, for its statuses).
    pub value: Spanned<u32>,
    /// The runtime's enumerator (`NRT_INVALID`).
    #[serde(default)]
    pub nrt: String,
    /// The C ABI's own outcome: no core error has it, and `Status` does not list it.
    #[serde(default)]
    pub c_only: bool,
    /// Its doc.
    pub doc: String,
}

/// A stage of the C ABI's `neff_stage` outside the data path (an argument, no error).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CStageToml {
    /// `NEFF_STAGE_<NAME>`.
    pub name: Spanned<String>,
    /// The number, clear of the data path's stages (numbered from 0).
    pub value: Spanned<u32>,
    /// What `neff_stage_name()` returns.
    pub printed: String,
    /// Its doc.
    pub doc: String,
}

/// A stage of the data path.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageToml {
    /// The `Stage` variant.
    pub name: Spanned<String>,
    /// As printed in messages.
    pub printed: String,
    /// Its doc.
    pub doc: String,
    /// The manifest tier whose errors are of this stage.
    #[serde(default)]
    pub tier: Option<TierToml>,
}

/// A manifest tier.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierToml {
    /// The variant of `ManifestKind`, `Scratch` and `Manifest`.
    pub kind: Spanned<String>,
    /// The stable code (the loader's index keeps it).
    pub code: Spanned<u8>,
    /// As printed (`ManifestKind::as_str`).
    pub printed: String,
    /// Its doc.
    pub doc: String,
    /// A type the `Manifest` variant carries beside the document.
    #[serde(default)]
    pub observed: Option<Spanned<String>>,
    /// What `observed` is, for the `Manifest` variant's doc.
    #[serde(default)]
    pub observed_doc: String,
}

/// A JSON token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenToml {
    /// The `TokenKind` and `Event` variant.
    pub name: Spanned<String>,
    /// As printed in messages.
    pub printed: String,
    /// Its doc.
    pub doc: String,
    /// The `Event` variant's field type.
    #[serde(default)]
    pub event: Option<Spanned<String>>,
    /// The `Event` variant's doc, where it says more than `doc`.
    #[serde(default)]
    pub event_doc: Option<String>,
}

/// A JSON value type, as type errors name it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeToml {
    /// The `JsonType` variant.
    pub name: Spanned<String>,
    /// As expected, with its article.
    pub article: String,
    /// As found.
    pub found: String,
    /// Its doc.
    pub doc: String,
}

/// The enums expanded from the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindEnum {
    /// `Stage`.
    Stage,
    /// `ManifestKind`.
    ManifestKind,
    /// `Scratch`.
    Scratch,
    /// `Manifest<'a>`.
    Manifest,
    /// `TokenKind`.
    TokenKind,
    /// `Event<'a>`.
    Event,
    /// `JsonType`.
    JsonType,
    /// `Status`.
    Status,
}

impl KindEnum {
    /// Every enum, by the name the macro takes.
    pub const ALL: [(&'static str, KindEnum); 8] = [
        ("Stage", KindEnum::Stage),
        ("ManifestKind", KindEnum::ManifestKind),
        ("Scratch", KindEnum::Scratch),
        ("Manifest", KindEnum::Manifest),
        ("TokenKind", KindEnum::TokenKind),
        ("Event", KindEnum::Event),
        ("JsonType", KindEnum::JsonType),
        ("Status", KindEnum::Status),
    ];

    /// The enum named `name`.
    pub fn named(name: &str) -> Option<KindEnum> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|&(_, k)| k)
    }
}

/// The loaded and checked table.
#[derive(Debug)]
pub struct Kinds {
    display: String,
    path: PathBuf,
    text: String,
    /// The table.
    pub toml: KindsToml,
}

/// A tier with its stage.
pub struct Tier<'a> {
    /// The stage row.
    pub stage: &'a StageToml,
    /// Its tier.
    pub tier: &'a TierToml,
}

/// `pub const fn #method(self) -> &'static str`: the string of each of `ty`'s `variants`.
fn str_method(ty: &str, method: &str, doc: &str, variants: &[Ident], strings: &[&String]) -> TokenStream {
    let (ty, method, doc) = (format_ident!("{ty}"), format_ident!("{method}"), doc_attrs(doc));
    quote! {
        #doc
        pub const fn #method(self) -> &'static str {
            match self {
                #(#ty::#variants => #strings,)*
            }
        }
    }
}

/// `Display` for `ty`, printing its `name()`.
fn display_by_name(ty: &str) -> TokenStream {
    let ty = format_ident!("{ty}");
    quote! {
        impl ::core::fmt::Display for #ty {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.name())
            }
        }
    }
}

fn idents<'a>(names: impl Iterator<Item = &'a Spanned<String>>) -> Vec<Ident> {
    names.map(|n| format_ident!("{}", n.get_ref())).collect()
}

impl Kinds {
    /// Reads and checks the table at `path`, named `display` in messages.
    pub fn load(path: &Path, display: &str) -> Result<Self, SchemaError> {
        Self::parse(display, path.to_path_buf(), read_text(path, display)?)
    }

    /// Parses and checks `text`.
    pub fn parse(display: &str, path: PathBuf, text: String) -> Result<Self, SchemaError> {
        let toml = parse_toml::<KindsToml>(display, &text)?;
        let kinds = Self { display: display.to_string(), path, text, toml };
        kinds.check()?;
        Ok(kinds)
    }

    fn error_at(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> SchemaError {
        error_in(&self.display, &self.text, span.start, msg)
    }

    fn check(&self) -> Result<(), SchemaError> {
        let t = &self.toml;
        let names = t
            .stages
            .iter()
            .map(|s| &s.name)
            .chain(t.stages.iter().filter_map(|s| s.tier.as_ref().map(|t| &t.kind)))
            .chain(t.tokens.iter().map(|k| &k.name))
            .chain(t.types.iter().map(|k| &k.name))
            .chain(t.statuses.iter().map(|k| &k.name))
            .chain(t.c_stages.iter().map(|k| &k.name));
        for name in names {
            if !is_ident(name.get_ref()) || !name.get_ref().starts_with(|c: char| c.is_ascii_uppercase()) {
                return Err(self.error_at(name.span(), format!("`{}` is not a CamelCase identifier", name.get_ref())));
            }
        }
        for list in [
            t.stages.iter().map(|s| &s.name).collect::<Vec<_>>(),
            self.tiers().map(|t| &t.tier.kind).collect(),
            t.tokens.iter().map(|k| &k.name).collect(),
            t.types.iter().map(|k| &k.name).collect(),
            t.statuses.iter().map(|k| &k.name).collect(),
            t.stages.iter().map(|k| &k.name).chain(t.c_stages.iter().map(|k| &k.name)).collect(),
        ] {
            let mut seen = BTreeSet::new();
            for name in list {
                if !seen.insert(name.get_ref()) {
                    return Err(self.error_at(name.span(), format!("`{}` is listed twice", name.get_ref())));
                }
            }
        }
        // The loader's index keeps a tier as its code: 1, 2, ... in order, 0 being none.
        for (i, tier) in self.tiers().enumerate() {
            let want = i + 1;
            if usize::from(*tier.tier.code.get_ref()) != want {
                return Err(
                    self.error_at(tier.tier.code.span(), format!("tier codes run 1, 2, ... in order: expected {want}"))
                );
            }
        }
        // The numbers are ABI: one meaning each. The data path's stages take 0, 1, ... in order.
        let stage_values = (0..t.stages.len()).map(|i| (i as u32, None));
        for list in [
            t.statuses.iter().map(|k| (*k.value.get_ref(), Some(k.value.span()))).collect::<Vec<_>>(),
            stage_values.chain(t.c_stages.iter().map(|k| (*k.value.get_ref(), Some(k.value.span())))).collect(),
        ] {
            let mut seen = BTreeSet::new();
            for (value, span) in list {
                if !seen.insert(value) {
                    let span = span.unwrap_or(0..0);
                    return Err(
                        self.error_at(span, format!("value {value} is taken (the stages take 0, 1, ... in order)"))
                    );
                }
            }
        }
        if let Some(status) = t.statuses.iter().find(|k| !k.c_only && k.nrt.is_empty()) {
            return Err(self.error_at(status.name.span(), "a status of the core needs its runtime enumerator (`nrt`)"));
        }
        if self.tiers().next().is_none() {
            return Err(SchemaError(format!("{}: no stage has a `tier`", self.display)));
        }
        let types = self
            .tiers()
            .filter_map(|t| t.tier.observed.as_ref())
            .chain(t.tokens.iter().filter_map(|k| k.event.as_ref()));
        for ty in types {
            self.rust_type(ty)?;
        }
        Ok(())
    }

    /// `ty` parsed as a Rust type (checked at load, so generation does not fail on it).
    fn rust_type(&self, ty: &Spanned<String>) -> Result<syn::Type, SchemaError> {
        syn::parse_str(ty.get_ref())
            .map_err(|_| self.error_at(ty.span(), format!("`{}` is not a Rust type", ty.get_ref())))
    }

    /// The manifest tiers, in order.
    pub fn tiers(&self) -> impl Iterator<Item = Tier<'_>> {
        self.toml.stages.iter().filter_map(|stage| stage.tier.as_ref().map(|tier| Tier { stage, tier }))
    }

    /// An `include_bytes!` of the table, so that editing it rebuilds the crate.
    pub fn track(&self) -> TokenStream {
        track(&self.path)
    }

    /// Expands `which`. `schema` is the schema directory's files (the tiers' documents are the
    /// root objects of the files whose `stage` is theirs).
    pub fn generate(&self, which: KindEnum, schema: &[SchemaFile]) -> Result<TokenStream, SchemaError> {
        let mut out = match which {
            KindEnum::Stage => self.stage(),
            KindEnum::ManifestKind => self.manifest_kind(),
            KindEnum::Scratch => self.scratch(schema)?,
            KindEnum::Manifest => self.manifest(schema)?,
            KindEnum::TokenKind => self.token_kind(),
            KindEnum::Event => self.event()?,
            KindEnum::JsonType => self.json_type(),
            KindEnum::Status => self.status(),
        };
        out.extend(self.track());
        Ok(out)
    }

    fn stage(&self) -> TokenStream {
        let stages = &self.toml.stages;
        let names = idents(stages.iter().map(|s| &s.name));
        let docs = stages.iter().map(|s| doc_attrs(&s.doc));
        let printed: Vec<_> = stages.iter().map(|s| &s.printed).collect();
        let name = str_method("Stage", "name", "A short lowercase name, as printed in messages.", &names, &printed);
        let display = display_by_name("Stage");
        quote! {
            /// Where in the data path something happened (`schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum Stage {
                #(#docs #names,)*
            }

            impl Stage {
                #name
            }

            #display
        }
    }

    fn manifest_kind(&self) -> TokenStream {
        let tiers: Vec<_> = self.tiers().collect();
        let kinds = idents(tiers.iter().map(|t| &t.tier.kind));
        let docs = tiers.iter().map(|t| doc_attrs(&t.tier.doc));
        let codes: Vec<_> = tiers.iter().map(|t| *t.tier.code.get_ref()).collect();
        let stages = idents(tiers.iter().map(|t| &t.stage.name));
        let printed: Vec<_> = tiers.iter().map(|t| &t.tier.printed).collect();
        let as_str = str_method("ManifestKind", "as_str", "As printed.", &kinds, &printed);
        quote! {
            /// What a manifest member is, by the key that names it (or, read before that, by its
            /// name): a tier of the chain (`schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum ManifestKind {
                #(#docs #kinds,)*
            }

            impl ManifestKind {
                /// The stable code the loader's index keeps (never 0).
                pub(crate) fn code(self) -> u8 {
                    match self {
                        #(ManifestKind::#kinds => #codes,)*
                    }
                }

                /// The kind of `code`, if any.
                pub(crate) fn from_code(c: u8) -> Option<Self> {
                    match c {
                        #(#codes => Some(ManifestKind::#kinds),)*
                        _ => None,
                    }
                }

                /// The stage of errors in a manifest of this kind.
                pub const fn stage(self) -> crate::error::Stage {
                    match self {
                        #(ManifestKind::#kinds => crate::error::Stage::#stages,)*
                    }
                }

                #as_str
            }
        }
    }

    /// Each tier with the root object of the schema file of its stage.
    fn documents<'a>(&'a self, schema: &'a [SchemaFile]) -> Result<Vec<(Tier<'a>, syn::Ident)>, SchemaError> {
        self.tiers()
            .map(|t| {
                let stage = t.stage.name.get_ref();
                let roots: Vec<_> = schema
                    .iter()
                    .filter(|f| f.toml.stage.as_ref().is_some_and(|s| s.get_ref() == stage))
                    .flat_map(|f| f.toml.objects.iter().filter(|o| o.root))
                    .collect();
                match roots.as_slice() {
                    [one] => {
                        let root = format_ident!("{}", one.name.get_ref());
                        Ok((t, root))
                    }
                    _ => Err(self.error_at(
                        t.tier.kind.span(),
                        format!(
                            "tier `{}` needs one root object in a schema file of stage `{stage}`, found {}",
                            t.tier.kind.get_ref(),
                            roots.len()
                        ),
                    )),
                }
            })
            .collect()
    }

    fn scratch(&self, schema: &[SchemaFile]) -> Result<TokenStream, SchemaError> {
        let docs = self.documents(schema)?;
        let kinds = idents(docs.iter().map(|(t, _)| &t.tier.kind));
        let roots: Vec<_> = docs.iter().map(|(_, r)| r).collect();
        Ok(quote! {
            /// The scalar keys of the manifest being read: one at a time, so they share memory
            /// (one variant per tier of `schema/kinds.toml`).
            #[allow(clippy::large_enum_variant)]
            pub(crate) enum Scratch {
                /// No manifest is being read.
                Empty,
                #(#kinds(crate::manifest::#roots),)*
            }

            impl Scratch {
                /// An empty document of `kind`.
                pub(crate) fn empty(kind: crate::error::ManifestKind) -> Self {
                    match kind {
                        #(crate::error::ManifestKind::#kinds => Scratch::#kinds(Default::default()),)*
                    }
                }
            }
        })
    }

    fn manifest(&self, schema: &[SchemaFile]) -> Result<TokenStream, SchemaError> {
        let docs = self.documents(schema)?;
        let mut variants = Vec::new();
        for (t, root) in &docs {
            let kind = format_ident!("{}", t.tier.kind.get_ref());
            variants.push(match &t.tier.observed {
                Some(o) => {
                    let (ty, doc) = (self.rust_type(o)?, doc_attrs(&format!("{} {}", t.tier.doc, t.tier.observed_doc)));
                    quote!(#doc #kind(&'a crate::manifest::#root, &'a #ty))
                }
                None => {
                    let doc = doc_attrs(&t.tier.doc);
                    quote!(#doc #kind(&'a crate::manifest::#root))
                }
            });
        }
        Ok(quote! {
            /// A manifest as read: its scalar keys (streamed keys went to
            /// [`Observer::entry`](crate::loader::Observer::entry)); one variant per tier of
            /// `schema/kinds.toml`.
            #[derive(Debug, Clone, Copy)]
            pub enum Manifest<'a> {
                #(#variants,)*
            }
        })
    }

    fn token_kind(&self) -> TokenStream {
        let tokens = &self.toml.tokens;
        let names = idents(tokens.iter().map(|t| &t.name));
        let docs = tokens.iter().map(|t| doc_attrs(&t.doc));
        let printed: Vec<_> = tokens.iter().map(|t| &t.printed).collect();
        let name = str_method(
            "TokenKind",
            "name",
            "A short name for messages: `\"object\"`, `\"string\"`, `\"number\"`, ...",
            &names,
            &printed,
        );
        let display = display_by_name("TokenKind");
        quote! {
            /// The kind of the next token, as
            /// [`Tokenizer::peek_kind`](crate::json::Tokenizer::peek_kind) reports it without
            /// consuming anything. One per [`Event`](crate::json::Event) variant (both from
            /// `schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum TokenKind {
                #(#docs #names,)*
            }

            impl TokenKind {
                #name
            }

            #display
        }
    }

    fn event(&self) -> Result<TokenStream, SchemaError> {
        let mut variants = Vec::new();
        let mut kinds = Vec::new();
        for t in &self.toml.tokens {
            let name = format_ident!("{}", t.name.get_ref());
            let doc = doc_attrs(t.event_doc.as_deref().unwrap_or(&t.doc));
            match &t.event {
                Some(e) => {
                    let ty = self.rust_type(e)?;
                    variants.push(quote!(#doc #name(#ty)));
                    kinds.push(quote!(Event::#name(_) => crate::error::TokenKind::#name));
                }
                None => {
                    variants.push(quote!(#doc #name));
                    kinds.push(quote!(Event::#name => crate::error::TokenKind::#name));
                }
            }
        }
        Ok(quote! {
            /// One token (`schema/kinds.toml`). Strings and number text borrow the tokenizer's
            /// buffers until the next call.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub enum Event<'a> {
                #(#variants,)*
            }

            impl Event<'_> {
                /// The kind of this token.
                pub fn kind(&self) -> crate::error::TokenKind {
                    match self {
                        #(#kinds,)*
                    }
                }
            }
        })
    }

    fn status(&self) -> TokenStream {
        let rows: Vec<_> = self.toml.statuses.iter().filter(|s| !s.c_only).collect();
        let names = idents(rows.iter().map(|s| &s.name));
        let docs = rows.iter().map(|s| doc_attrs(&s.doc));
        let values: Vec<u32> = rows.iter().map(|s| *s.value.get_ref()).collect();
        let nrt: Vec<_> = rows.iter().map(|s| &s.nrt).collect();
        let name = str_method("Status", "name", "The runtime's enumerator name.", &names, &nrt);
        quote! {
            /// The runtime's status codes (`NRT_STATUS` in `nrt_status.h`) that a load error maps
            /// to (`schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            #[repr(u32)]
            pub enum Status {
                #(#docs #names = #values,)*
            }

            impl Status {
                /// The numeric `NRT_STATUS` value.
                pub const fn code(self) -> u32 {
                    self as u32
                }

                #name
            }
        }
    }

    fn json_type(&self) -> TokenStream {
        let types = &self.toml.types;
        let names = idents(types.iter().map(|t| &t.name));
        let docs = types.iter().map(|t| doc_attrs(&t.doc));
        let articles: Vec<_> = types.iter().map(|t| &t.article).collect();
        let found: Vec<_> = types.iter().map(|t| &t.found).collect();
        let with_article = str_method(
            "JsonType",
            "with_article",
            "The name with its article, as expected: `an unsigned integer`.",
            &names,
            &articles,
        );
        let name = str_method("JsonType", "name", "The bare name, as found: `string`.", &names, &found);
        quote! {
            /// JSON value types, as named in type errors (`schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum JsonType {
                #(#docs #names,)*
            }

            impl JsonType {
                #with_article
                #name
            }
        }
    }
}
