//! The kinds table (`schema/kinds.toml`): the data path's stages with the manifest tiers among
//! them, the JSON tokens and the JSON value types, one list each. Every enum that lists one of
//! them is expanded from it ([`Kinds::generate`]), where that enum belongs, so that a layer low
//! in the crate (`error`) and one high in it (`loader`) share the list without naming each other.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde::Deserialize;
use toml::Spanned;

use crate::model::{error_in, parse_toml, read_text, SchemaError, SchemaFile};

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
}

impl KindEnum {
    /// Every enum, by the name the macro takes.
    pub const ALL: [(&'static str, KindEnum); 7] = [
        ("Stage", KindEnum::Stage),
        ("ManifestKind", KindEnum::ManifestKind),
        ("Scratch", KindEnum::Scratch),
        ("Manifest", KindEnum::Manifest),
        ("TokenKind", KindEnum::TokenKind),
        ("Event", KindEnum::Event),
        ("JsonType", KindEnum::JsonType),
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

fn doc_attr(text: &str) -> TokenStream {
    let lines = text.lines().map(|l| format!(" {l}"));
    quote!(#(#[doc = #lines])*)
}

fn is_ident(s: &str) -> bool {
    syn::parse_str::<syn::Ident>(s).is_ok()
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
            .chain(t.types.iter().map(|k| &k.name));
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
            if let Some(o) = &tier.tier.observed {
                if syn::parse_str::<syn::Type>(o.get_ref()).is_err() {
                    return Err(self.error_at(o.span(), format!("`{}` is not a Rust type", o.get_ref())));
                }
            }
        }
        if self.tiers().next().is_none() {
            return Err(SchemaError(format!("{}: no stage has a `tier`", self.display)));
        }
        for token in &t.tokens {
            if let Some(e) = &token.event {
                if syn::parse_str::<syn::Type>(e.get_ref()).is_err() {
                    return Err(self.error_at(e.span(), format!("`{}` is not a Rust type", e.get_ref())));
                }
            }
        }
        Ok(())
    }

    /// The manifest tiers, in order.
    pub fn tiers(&self) -> impl Iterator<Item = Tier<'_>> {
        self.toml.stages.iter().filter_map(|stage| stage.tier.as_ref().map(|tier| Tier { stage, tier }))
    }

    /// The stage row named `name`, if it is a tier's.
    pub fn tier_stage(&self, name: &str) -> Option<&StageToml> {
        self.tiers().map(|t| t.stage).find(|s| s.name.get_ref() == name)
    }

    /// An `include_bytes!` of the table, so that editing it rebuilds the crate.
    pub fn track(&self) -> TokenStream {
        let path = self.path.to_string_lossy().into_owned();
        quote!(
            const _: &[u8] = include_bytes!(#path);
        )
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
        };
        out.extend(self.track());
        Ok(out)
    }

    fn stage(&self) -> TokenStream {
        let stages = &self.toml.stages;
        let names: Vec<_> = stages.iter().map(|s| format_ident!("{}", s.name.get_ref())).collect();
        let docs = stages.iter().map(|s| doc_attr(&s.doc));
        let printed = stages.iter().map(|s| &s.printed);
        quote! {
            /// Where in the data path something happened (`schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum Stage {
                #(#docs #names,)*
            }

            impl Stage {
                /// A short lowercase name, as printed in messages.
                pub const fn name(self) -> &'static str {
                    match self {
                        #(Stage::#names => #printed,)*
                    }
                }
            }

            impl ::core::fmt::Display for Stage {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(self.name())
                }
            }
        }
    }

    fn manifest_kind(&self) -> TokenStream {
        let tiers: Vec<_> = self.tiers().collect();
        let kinds: Vec<_> = tiers.iter().map(|t| format_ident!("{}", t.tier.kind.get_ref())).collect();
        let docs = tiers.iter().map(|t| doc_attr(&t.tier.doc));
        let codes: Vec<_> = tiers.iter().map(|t| *t.tier.code.get_ref()).collect();
        let stages = tiers.iter().map(|t| format_ident!("{}", t.stage.name.get_ref()));
        let printed = tiers.iter().map(|t| &t.tier.printed);
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

                /// As printed.
                pub const fn as_str(self) -> &'static str {
                    match self {
                        #(ManifestKind::#kinds => #printed,)*
                    }
                }
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
        let kinds: Vec<_> = docs.iter().map(|(t, _)| format_ident!("{}", t.tier.kind.get_ref())).collect();
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
        let mut kinds = Vec::new();
        for (t, root) in &docs {
            let kind = format_ident!("{}", t.tier.kind.get_ref());
            let (doc, fields, pattern) = match &t.tier.observed {
                Some(o) => {
                    let ty: syn::Type = syn::parse_str(o.get_ref())
                        .map_err(|_| self.error_at(o.span(), format!("`{}` is not a Rust type", o.get_ref())))?;
                    let doc = doc_attr(&format!("{} {}", t.tier.doc, t.tier.observed_doc));
                    (doc, quote!((&'a crate::manifest::#root, &'a #ty)), quote!((..)))
                }
                None => (doc_attr(&t.tier.doc), quote!((&'a crate::manifest::#root)), quote!((_))),
            };
            variants.push(quote!(#doc #kind #fields));
            kinds.push(quote!(Manifest::#kind #pattern => crate::error::ManifestKind::#kind));
        }
        Ok(quote! {
            /// A manifest as read: its scalar keys (streamed keys went to
            /// [`Observer::entry`](crate::loader::Observer::entry)); one variant per tier of
            /// `schema/kinds.toml`.
            #[derive(Debug, Clone, Copy)]
            pub enum Manifest<'a> {
                #(#variants,)*
            }

            impl Manifest<'_> {
                /// Its tier.
                pub fn kind(&self) -> crate::error::ManifestKind {
                    match self {
                        #(#kinds,)*
                    }
                }
            }
        })
    }

    fn token_kind(&self) -> TokenStream {
        let tokens = &self.toml.tokens;
        let names: Vec<_> = tokens.iter().map(|t| format_ident!("{}", t.name.get_ref())).collect();
        let docs = tokens.iter().map(|t| doc_attr(&t.doc));
        let printed = tokens.iter().map(|t| &t.printed);
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
                /// A short name for messages: `"object"`, `"string"`, `"number"`, ...
                pub const fn name(self) -> &'static str {
                    match self {
                        #(TokenKind::#names => #printed,)*
                    }
                }
            }

            impl ::core::fmt::Display for TokenKind {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(self.name())
                }
            }
        }
    }

    fn event(&self) -> Result<TokenStream, SchemaError> {
        let mut variants = Vec::new();
        let mut kinds = Vec::new();
        for t in &self.toml.tokens {
            let name = format_ident!("{}", t.name.get_ref());
            let doc = doc_attr(t.event_doc.as_deref().unwrap_or(&t.doc));
            match &t.event {
                Some(e) => {
                    let ty: syn::Type = syn::parse_str(e.get_ref())
                        .map_err(|_| self.error_at(e.span(), format!("`{}` is not a Rust type", e.get_ref())))?;
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

    fn json_type(&self) -> TokenStream {
        let types = &self.toml.types;
        let names: Vec<_> = types.iter().map(|t| format_ident!("{}", t.name.get_ref())).collect();
        let docs = types.iter().map(|t| doc_attr(&t.doc));
        let articles = types.iter().map(|t| &t.article);
        let found = types.iter().map(|t| &t.found);
        quote! {
            /// JSON value types, as named in type errors (`schema/kinds.toml`).
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum JsonType {
                #(#docs #names,)*
            }

            impl JsonType {
                /// The name with its article, as expected: `an unsigned integer`.
                pub const fn with_article(self) -> &'static str {
                    match self {
                        #(JsonType::#names => #articles,)*
                    }
                }

                /// The bare name, as found: `string`.
                pub const fn name(self) -> &'static str {
                    match self {
                        #(JsonType::#names => #found,)*
                    }
                }
            }
        }
    }
}
