//! The refusal table (`schema/errors.toml`): every error and warning of the core, one row each,
//! and what is generated from it: the layers' enums with `code()` and `status()`, their
//! `Display`, the rows as data, `docs/refusals.md`, `docs/error-codes.md` and the C header
//! `targets/c/include/neff_codes.h`.
//!
//! The enums keep the `defmt::Format` derive, so a firmware log prints them as before; the
//! `Display` arms are the messages of the rows, a Rust format string each.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use serde::Deserialize;
use toml::Spanned;

use crate::model::{error_in, parse_toml, read_text, SchemaError};
use crate::tokens::{doc_attrs, is_ident, track};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorsToml {
    /// docs/refusals.md: the text above the counts table.
    pub refusals_intro: String,
    /// docs/refusals.md: the text between the counts table and the refusals.
    pub refusals_legend: String,
    /// docs/refusals.md: the line under `## Warnings`.
    pub warnings_intro: String,
    /// docs/error-codes.md: the text above the tables.
    pub codes_intro: String,
    /// The layers, each an `ErrorKind` / `WarningKind` variant wrapping its own enums.
    #[serde(default, rename = "layer")]
    pub layers: Vec<LayerToml>,
    /// The values of the constants (UPPER_CASE placeholders) messages name: the docs print
    /// them, and the `Display` expansion asserts them at compile time.
    #[serde(default)]
    pub constants: BTreeMap<String, u64>,
    /// The refusals.
    #[serde(default, rename = "refusal")]
    pub refusals: Vec<RowToml>,
    /// The warnings.
    #[serde(default, rename = "warning")]
    pub warnings: Vec<RowToml>,
}

/// A layer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerToml {
    /// The `ErrorKind` / `WarningKind` variant (`Header`); upper case, the C names' layer part.
    pub name: Spanned<String>,
    /// The layer's hundred: its codes are `hundred * 100 + 1 ..= hundred * 100 + 99`.
    pub hundred: u16,
    /// The error enum.
    pub error: String,
    /// Its doc comment.
    pub error_doc: String,
    /// The warning enum, if the layer warns.
    #[serde(default)]
    pub warning: Option<String>,
    /// Its doc comment.
    #[serde(default)]
    pub warning_doc: String,
    /// Derives beyond `Debug, Clone, Copy, PartialEq, Eq`.
    #[serde(default)]
    pub derive: Vec<String>,
    /// The `Display` arms bind the fields by reference (`match self`), not by value: smaller
    /// code where the fields are texts (the arguments then dereference what they compute on).
    #[serde(default)]
    pub by_ref: bool,
}

/// A refusal or a warning.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowToml {
    /// The layer; absent for a variant of `ErrorKind` itself.
    #[serde(default)]
    pub layer: Option<Spanned<String>>,
    /// The variant.
    pub variant: Spanned<String>,
    /// The stable code.
    pub code: Spanned<u16>,
    /// The runtime status (refusals only).
    #[serde(default)]
    pub status: Option<Spanned<String>>,
    /// The message: a format string (or, with `display`, the docs' text).
    pub message: Spanned<String>,
    /// An expression that writes the message instead.
    #[serde(default)]
    pub display: Option<String>,
    /// Named arguments of the message, in the order written (the order they are passed in).
    #[serde(default)]
    pub args: Args,
    /// What the rule rests on.
    pub basis: Spanned<String>,
    /// Sections of docs/format.md.
    pub spec: Spanned<String>,
    /// Where the rule comes from.
    pub source: Spanned<String>,
    /// The runtime's error cause.
    #[serde(default)]
    pub cause: Option<String>,
    /// Docs only: text after the message (what an argument can be).
    #[serde(default)]
    pub note: Option<String>,
    /// The variant's doc comment.
    pub doc: Spanned<String>,
    /// Positional fields.
    #[serde(default)]
    pub tuple: bool,
    /// The fields.
    #[serde(default)]
    pub fields: Vec<FieldToml>,
    /// Codes `code + 1 ..` named after these (the byte source's error kinds).
    #[serde(default)]
    pub subcodes: Vec<String>,
    /// Earlier `Display` arms.
    #[serde(default, rename = "case")]
    pub cases: Vec<CaseToml>,
    /// A part written before the message (and its cases), when its `when` holds.
    #[serde(default)]
    pub prefix: Option<PrefixToml>,
}

/// A part written before a message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixToml {
    /// The condition; absent: always.
    #[serde(default)]
    pub when: Option<String>,
    /// What it writes (a format string, as `message`).
    pub message: String,
}

/// Named Rust expressions, in the order the table writes them.
#[derive(Debug, Default)]
pub struct Args(pub Vec<(String, String)>);

impl Args {
    fn get(&self, name: &str) -> Option<&String> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, e)| e)
    }

    fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Args;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table of named Rust expressions")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Args, A::Error> {
                // The deserializer hands the keys over sorted; their spans give the written order.
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Spanned<String>>()? {
                    out.push((v.span().start, k, v.into_inner()));
                }
                out.sort_by_key(|(at, _, _)| *at);
                Ok(Args(out.into_iter().map(|(_, k, v)| (k, v)).collect()))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A field of a variant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldToml {
    /// Its name (for a tuple variant, the message's binding).
    pub name: String,
    /// Its Rust type.
    #[serde(rename = "type")]
    pub ty: String,
    /// A pattern it is bound by in the `Display` arms.
    #[serde(default)]
    pub bind: Option<String>,
    /// Doc comment (struct variants).
    #[serde(default)]
    pub doc: String,
}

/// An earlier `Display` arm.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseToml {
    /// The guard.
    pub when: String,
    /// Patterns for fields in this arm.
    #[serde(default)]
    pub bind: BTreeMap<String, String>,
    /// Its message.
    pub message: String,
}

/// The loaded table.
#[derive(Debug)]
pub struct Errors {
    /// As given to messages.
    pub display: String,
    /// For `include_bytes!`.
    pub path: PathBuf,
    text: String,
    /// Its contents.
    pub toml: ErrorsToml,
}

/// The values of the basis column, in the order of the counts table.
pub const BASES: &[&str] = &["seed", "official", "secondary only", "decision"];
const STATUSES: &[(&str, &str, u32)] = &[
    ("Failure", "NRT_FAILURE", 1),
    ("Invalid", "NRT_INVALID", 2),
    ("Resource", "NRT_RESOURCE", 4),
    ("UnsupportedNeffVersion", "NRT_UNSUPPORTED_NEFF_VERSION", 10),
];

impl Errors {
    /// Reads and checks the table at `path`, named `display` in messages.
    pub fn load(path: &Path, display: &str) -> Result<Self, SchemaError> {
        Self::parse(display, path.to_path_buf(), read_text(path, display)?)
    }

    /// Parses and checks `text`.
    pub fn parse(display: &str, path: PathBuf, text: String) -> Result<Self, SchemaError> {
        let toml = parse_toml::<ErrorsToml>(display, &text)?;
        let errors = Self { display: display.to_string(), path, text, toml };
        errors.check()?;
        Ok(errors)
    }

    fn error_at(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> SchemaError {
        error_in(&self.display, &self.text, span.start, msg)
    }

    fn layer(&self, name: &str) -> Option<&LayerToml> {
        self.toml.layers.iter().find(|l| l.name.get_ref() == name)
    }

    /// Every row: refusals (`false`) then warnings (`true`).
    fn rows(&self) -> impl Iterator<Item = (bool, &RowToml)> {
        self.toml.refusals.iter().map(|r| (false, r)).chain(self.toml.warnings.iter().map(|r| (true, r)))
    }

    fn check(&self) -> Result<(), SchemaError> {
        let mut hundreds = BTreeSet::new();
        for l in &self.toml.layers {
            let at = l.name.span();
            if !is_ident(l.name.get_ref()) || !is_ident(&l.error) || l.warning.as_deref().is_some_and(|w| !is_ident(w))
            {
                return Err(self.error_at(at, "a layer's name and enums must be Rust identifiers"));
            }
            if !(5..100).contains(&l.hundred) || !hundreds.insert(l.hundred) {
                return Err(self.error_at(at, format!("hundred {} is taken or outside 5..100", l.hundred)));
            }
            if l.warning.is_some() == l.warning_doc.is_empty() {
                return Err(self.error_at(at, "`warning_doc` goes with `warning`"));
            }
        }
        let mut codes = BTreeSet::new();
        let mut ids = BTreeSet::new();
        for (warning, r) in self.rows() {
            let code = *r.code.get_ref();
            let at = r.variant.span();
            let err = |msg: String| Err(self.error_at(at.clone(), format!("`{}`: {msg}", r.variant.get_ref())));
            if !is_ident(r.variant.get_ref()) {
                return err("not a Rust identifier".into());
            }
            match &r.layer {
                Some(name) => {
                    let Some(l) = self.layer(name.get_ref()) else {
                        return Err(self.error_at(name.span(), format!("no layer `{}`", name.get_ref())));
                    };
                    if warning && l.warning.is_none() {
                        return err(format!("layer {} has no warning enum", name.get_ref()));
                    }
                    if code / 100 != l.hundred || code % 100 == 0 {
                        return Err(self.error_at(
                            r.code.span(),
                            format!("code {code} is not in layer {}'s {h}01..={h}99", name.get_ref(), h = l.hundred),
                        ));
                    }
                }
                None if warning => return err("a warning needs a layer".into()),
                None => {
                    if code % 100 != 0 || !(1..5).contains(&(code / 100)) {
                        return Err(self.error_at(r.code.span(), "`ErrorKind`'s own variants are 100, 200, 300, 400"));
                    }
                }
            }
            if !r.subcodes.is_empty() && r.layer.is_some() {
                return err("only `ErrorKind`'s own variants have subcodes".into());
            }
            if !codes.insert((warning, code)) {
                return Err(self.error_at(r.code.span(), format!("code {code} is given twice")));
            }
            if !ids.insert((warning, r.layer.as_ref().map(|l| l.get_ref().clone()), r.variant.get_ref().clone())) {
                return err("a second row".into());
            }
            match (&r.status, warning) {
                (Some(s), true) => return Err(self.error_at(s.span(), "a warning has no status")),
                (None, false) => return err("a refusal needs a status".into()),
                (Some(s), false) if !STATUSES.iter().any(|(n, _, _)| n == s.get_ref()) => {
                    return Err(self.error_at(s.span(), format!("unknown status `{}`", s.get_ref())))
                }
                _ => {}
            }
            if !BASES.contains(&r.basis.get_ref().as_str()) {
                return Err(
                    self.error_at(r.basis.span(), format!("basis {:?} is not one of {BASES:?}", r.basis.get_ref()))
                );
            }
            if !r.spec.get_ref().contains('§') {
                return Err(self.error_at(r.spec.span(), "the spec names no section (`§N`)"));
            }
            if r.source.get_ref().trim().is_empty() || r.doc.get_ref().trim().is_empty() {
                return err("empty source or doc".into());
            }
            if (r.basis.get_ref() == "secondary only") != r.source.get_ref().contains("secondary only") {
                return Err(
                    self.error_at(r.source.span(), "the source must say \"secondary only\" exactly when the basis is")
                );
            }
            if r.message.get_ref().trim().is_empty() {
                return err("empty message".into());
            }
            if r.layer.is_none() {
                // `ErrorKind`'s own variants are written by hand: their rows are data and docs.
                continue;
            }
            self.check_code(r).map_err(|m| self.error_at(at.clone(), format!("`{}`: {m}", r.variant.get_ref())))?;
        }
        Ok(())
    }

    /// The Rust parts of a layer's row: types, patterns, expressions, placeholders.
    fn check_code(&self, r: &RowToml) -> Result<(), String> {
        let mut names = BTreeSet::new();
        for f in &r.fields {
            syn::parse_str::<syn::Type>(&f.ty).map_err(|e| format!("field {}: type {:?}: {e}", f.name, f.ty))?;
            if !is_ident(&f.name) || !names.insert(f.name.clone()) {
                return Err(format!("field name {:?} is not an identifier or is given twice", f.name));
            }
            if !r.tuple && f.doc.trim().is_empty() {
                return Err(format!("field {} has no doc", f.name));
            }
            if let Some(p) = &f.bind {
                pattern(p)?;
            }
        }
        for (name, expr) in &r.args.0 {
            if !is_ident(name) {
                return Err(format!("argument {name:?} is not an identifier"));
            }
            tokens(expr).map_err(|e| format!("argument {name}: {e}"))?;
        }
        if let Some(d) = &r.display {
            tokens(d).map_err(|e| format!("display: {e}"))?;
            return Ok(());
        }
        if let Some(prefix) = &r.prefix {
            if let Some(when) = &prefix.when {
                tokens(when).map_err(|e| format!("prefix: {e}"))?;
            }
            if r.cases.iter().any(|c| !c.bind.is_empty()) {
                return Err("a row with a prefix binds its fields once: its cases cannot `bind`".into());
            }
            self.check_message(r, &prefix.message, &BTreeMap::new())?;
        }
        for case in &r.cases {
            tokens(&case.when).map_err(|e| format!("case: {e}"))?;
            for (field, p) in &case.bind {
                if !names.contains(field) {
                    return Err(format!("case binds {field}, not a field"));
                }
                pattern(p)?;
            }
            self.check_message(r, &case.message, &case.bind)?;
        }
        self.check_message(r, r.message.get_ref(), &BTreeMap::new())
    }

    fn check_message(&self, r: &RowToml, message: &str, binds: &BTreeMap<String, String>) -> Result<(), String> {
        let bound = bindings(r, binds);
        for p in placeholders(message)? {
            let constant = p.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if constant && !self.toml.constants.contains_key(&p) {
                return Err(format!("message {message:?}: constant `{p}` has no value in `[constants]`"));
            }
            if constant && placeholders(&inline_constants(message, &self.toml.constants))?.contains(&p) {
                return Err(format!("message {message:?}: a constant is written `{{{p}}}` or `{{{p}:x}}`"));
            }
            if !(bound.contains(&p) || r.args.contains_key(&p) || constant) {
                return Err(format!(
                    "message {message:?}: `{{{p}}}` is no field, binding, argument or constant (UPPER_CASE)"
                ));
            }
        }
        Ok(())
    }
}

/// Rust code of the table (a pattern, an expression) as tokens: lexed here, checked by the
/// compiler where it is expanded.
fn tokens(code: &str) -> Result<TokenStream, String> {
    let ts = TokenStream::from_str(code).map_err(|e| format!("{code:?}: {e}"))?;
    if ts.is_empty() {
        return Err("empty Rust code".into());
    }
    Ok(ts)
}

fn pattern(p: &str) -> Result<TokenStream, String> {
    tokens(p)
}

/// The identifiers of a token stream (an expression or a pattern), nested groups included.
fn idents(code: &str) -> BTreeSet<String> {
    fn walk(ts: TokenStream, out: &mut BTreeSet<String>) {
        for t in ts {
            match t {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = BTreeSet::new();
    if let Ok(ts) = TokenStream::from_str(code) {
        walk(ts, &mut out);
    }
    out
}

/// The names a message may use in an arm: fields bound whole, and the identifiers of patterns.
fn bindings(r: &RowToml, binds: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in &r.fields {
        match binds.get(&f.name).or(f.bind.as_ref()) {
            Some(p) => out.extend(idents(p)),
            None => {
                out.insert(f.name.clone());
            }
        }
    }
    out
}

/// The named placeholders of a format string (`{name}`, `{name:x}`); positional ones are refused.
pub fn placeholders(message: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
            }
            '}' => return Err(format!("message {message:?}: a lone `}}` (write `}}}}`)")),
            '{' => {
                let inner: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let name = inner.split(':').next().unwrap_or("").trim().to_string();
                if !is_ident(&name) {
                    return Err(format!("message {message:?}: `{{{inner}}}` is not a named placeholder"));
                }
                out.push(name);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// A message as text: `{{` and `}}` as single braces.
fn unescape(message: &str) -> String {
    message.replace("{{", "{").replace("}}", "}")
}

/// `code` parsed as a `T` (a type, a path), or the parse error as a compile error.
fn parse<T: syn::parse::Parse + quote::ToTokens>(code: &str) -> TokenStream {
    match syn::parse_str::<T>(code) {
        Ok(t) => quote!(#t),
        Err(e) => e.to_compile_error(),
    }
}

/// An expression of the table.
fn rust_expr(code: &str) -> TokenStream {
    match tokens(code) {
        Ok(ts) => ts,
        Err(e) => syn::Error::new(Span::call_site(), e).to_compile_error(),
    }
}

/// Which items of a layer to expand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerPart {
    /// The enums, `code()` and `status()`.
    Types,
    /// The `Display` impls.
    Messages,
}

impl Errors {
    /// The rows of `layer`: its refusals, then its warnings.
    fn layer_rows<'a>(&'a self, layer: &'a str, warning: bool) -> impl Iterator<Item = &'a RowToml> + 'a {
        self.rows()
            .filter(move |(w, r)| *w == warning && r.layer.as_ref().is_some_and(|l| l.get_ref() == layer))
            .map(|(_, r)| r)
    }

    /// Expands `part` of layer `name`.
    pub fn generate_layer(&self, name: &str, part: LayerPart) -> Result<TokenStream, SchemaError> {
        let Some(layer) = self.layer(name) else {
            return Err(SchemaError(format!("{}: no layer `{name}`", self.display)));
        };
        let mut out = TokenStream::new();
        for (warning, enum_name, doc) in
            [(false, Some(&layer.error), &layer.error_doc), (true, layer.warning.as_ref(), &layer.warning_doc)]
        {
            let Some(enum_name) = enum_name else { continue };
            let rows: Vec<&RowToml> = self.layer_rows(name, warning).collect();
            let id = format_ident!("{}", enum_name);
            out.extend(match part {
                LayerPart::Types => self.enum_tokens(layer, &id, doc, warning, &rows),
                LayerPart::Messages => display_tokens(&id, &rows, layer.by_ref, &self.toml.constants),
            });
            if part == LayerPart::Messages {
                // The values the docs print for the constants these messages name.
                let mut named = BTreeSet::new();
                for r in rows.iter().filter(|r| r.display.is_none()) {
                    for m in std::iter::once(r.message.get_ref()).chain(r.cases.iter().map(|c| &c.message)) {
                        named.extend(
                            placeholders(m)
                                .unwrap_or_default()
                                .into_iter()
                                .filter(|p| self.toml.constants.contains_key(p)),
                        );
                    }
                }
                for name in named {
                    let id = format_ident!("{}", name);
                    let value = proc_macro2::Literal::u64_unsuffixed(self.toml.constants[&name]);
                    out.extend(quote!(
                        ::static_assertions::const_assert_eq!(#id, #value);
                    ));
                }
            }
        }
        Ok(out)
    }

    fn enum_tokens(
        &self,
        layer: &LayerToml,
        id: &syn::Ident,
        doc: &str,
        warning: bool,
        rows: &[&RowToml],
    ) -> TokenStream {
        let doc = doc_attrs(doc);
        let extra: Vec<TokenStream> = layer.derive.iter().map(|d| parse::<syn::Path>(d)).collect();
        let variants = rows.iter().map(|r| {
            let v = format_ident!("{}", r.variant.get_ref());
            let vdoc = doc_attrs(r.doc.get_ref());
            let fields = r.fields.iter().map(|f| {
                let ty = parse::<syn::Type>(&f.ty);
                if r.tuple {
                    quote!(#ty)
                } else {
                    let name = format_ident!("{}", f.name);
                    let fdoc = doc_attrs(&f.doc);
                    quote!(#fdoc #name: #ty)
                }
            });
            match (r.fields.is_empty(), r.tuple) {
                (true, _) => quote!(#vdoc #v),
                (false, true) => quote!(#vdoc #v(#(#fields),*)),
                (false, false) => quote!(#vdoc #v { #(#fields),* }),
            }
        });
        let code_arms = rows.iter().map(|r| {
            let pat = wildcard(id, r);
            let n = (*r.code.get_ref() % 100) as u8;
            quote!(#pat => #n)
        });
        let what = if warning { "warning" } else { "error" };
        let kind = if warning { "WarningKind" } else { "ErrorKind" };
        let code_doc = format!(
            " A stable number for this {what} within its layer, for bindings (C, Python): fixed once given, \
             never reused, listed in `docs/error-codes.md` ([`{kind}::code`](crate::{kind}::code))."
        );
        let status = if warning {
            quote!()
        } else {
            let mut by_status: Vec<(String, Vec<TokenStream>)> = Vec::new();
            for r in rows {
                let s = r.status.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default();
                let pat = wildcard(id, r);
                match by_status.iter_mut().find(|(k, _)| *k == s) {
                    Some((_, pats)) => pats.push(pat),
                    None => by_status.push((s, vec![pat])),
                }
            }
            let body = match by_status.as_slice() {
                [(only, _)] => {
                    let s = format_ident!("{}", only);
                    quote!(crate::Status::#s)
                }
                many => {
                    let arms = many.iter().map(|(s, pats)| {
                        let s = format_ident!("{}", s);
                        quote!(#(#pats)|* => crate::Status::#s)
                    });
                    quote!(match self { #(#arms,)* })
                }
            };
            quote!(
                /// The runtime status (`NRT_STATUS`) this error maps to.
                pub fn status(&self) -> crate::Status {
                    #body
                }
            )
        };
        quote!(
            #doc
            #[derive(Debug, Clone, Copy, PartialEq, Eq #(, #extra)*)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub enum #id {
                #(#variants,)*
            }

            impl #id {
                #[doc = #code_doc]
                pub const fn code(&self) -> u8 {
                    match self {
                        #(#code_arms,)*
                    }
                }
                #status
            }
        )
    }
}

/// `Enum::Variant`, `Enum::Variant(..)` or `Enum::Variant { .. }`.
fn wildcard(id: &syn::Ident, r: &RowToml) -> TokenStream {
    let v = format_ident!("{}", r.variant.get_ref());
    match (r.fields.is_empty(), r.tuple) {
        (true, _) => quote!(#id::#v),
        (false, true) => quote!(#id::#v(..)),
        (false, false) => quote!(#id::#v { .. }),
    }
}

fn display_tokens(id: &syn::Ident, rows: &[&RowToml], by_ref: bool, constants: &BTreeMap<String, u64>) -> TokenStream {
    let mut arms = Vec::new();
    for r in rows {
        if let Some(d) = &r.display {
            let used = idents(d);
            let pat = binding_pattern(id, r, &BTreeMap::new(), &used);
            let expr = rust_expr(d);
            arms.push(quote!(#pat => #expr));
            continue;
        }
        if let Some(prefix) = &r.prefix {
            // One arm: the prefix, then the cases as `if`s and the message last.
            let (head, mut used) = write_tokens(r, &prefix.message, constants);
            let head = match &prefix.when {
                Some(when) => {
                    used.extend(idents(when));
                    let when = rust_expr(when);
                    quote!(if #when { #head?; })
                }
                None => quote!(#head?;),
            };
            let (mut body, last) = write_tokens(r, r.message.get_ref(), constants);
            used.extend(last);
            for case in r.cases.iter().rev() {
                let (write, u) = write_tokens(r, &case.message, constants);
                used.extend(u);
                used.extend(idents(&case.when));
                let when = rust_expr(&case.when);
                body = quote!(if #when { #write } else { #body });
            }
            let pat = binding_pattern(id, r, &BTreeMap::new(), &used);
            arms.push(quote!(#pat => { #head #body }));
            continue;
        }
        for case in &r.cases {
            let (write, mut used) = write_tokens(r, &case.message, constants);
            used.extend(idents(&case.when));
            let pat = binding_pattern(id, r, &case.bind, &used);
            let when = rust_expr(&case.when);
            arms.push(quote!(#pat if #when => #write));
        }
        let (write, used) = write_tokens(r, r.message.get_ref(), constants);
        let pat = binding_pattern(id, r, &BTreeMap::new(), &used);
        arms.push(quote!(#pat => #write));
    }
    let scrutinee = if by_ref { quote!(self) } else { quote!(*self) };
    quote!(
        impl ::core::fmt::Display for #id {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match #scrutinee {
                    #(#arms,)*
                }
            }
        }
    )
}

/// The expression writing `message`, and the identifiers it reads.
fn write_tokens(r: &RowToml, message: &str, constants: &BTreeMap<String, u64>) -> (TokenStream, BTreeSet<String>) {
    // The constants are written into the text (asserted equal to the crate's at compile time):
    // nothing to format at run time.
    let message = inline_constants(message, constants);
    let message = message.as_str();
    let names = placeholders(message).unwrap_or_default();
    let mut used: BTreeSet<String> = BTreeSet::new();
    if names.is_empty() {
        let text = unescape(message);
        return (quote!(f.write_str(#text)), used);
    }
    // A message that is one placeholder alone: the value's own `Display`.
    if message.starts_with('{') && message.ends_with('}') && names.len() == 1 && message == format!("{{{}}}", names[0])
    {
        let name = &names[0];
        used.insert(name.clone());
        let value = match r.args.get(name) {
            Some(expr) => {
                used.extend(idents(expr));
                rust_expr(expr)
            }
            None => {
                let id = format_ident!("{}", name);
                // A text field is written as it is.
                if r.fields.iter().any(|f| f.name == *name && f.ty.starts_with('&') && f.ty.ends_with("str")) {
                    return (quote!(f.write_str(#id)), used);
                }
                quote!(#id)
            }
        };
        return (quote!(::core::fmt::Display::fmt(&#value, f)), used);
    }
    // The table's arguments first, as written, then the fields and constants, as named: the
    // order the hand-written `write!`s passed them in (a positional `{}` before the captures).
    let mut args: Vec<TokenStream> = Vec::new();
    for (name, expr) in r.args.0.iter().filter(|(n, _)| names.contains(n)) {
        let id = format_ident!("{}", name);
        used.extend(idents(expr));
        let e = rust_expr(expr);
        args.push(quote!(#id = #e));
    }
    let mut seen = BTreeSet::new();
    for n in names.iter().filter(|n| !r.args.contains_key(n) && seen.insert((*n).clone())) {
        let id = format_ident!("{}", n);
        used.insert(n.clone());
        args.push(quote!(#id = #id));
    }
    let lit = syn::LitStr::new(message, Span::call_site());
    (quote!(::core::write!(f, #lit, #(#args),*)), used)
}

/// `message` with `{NAME}` and `{NAME:x}` of the constants replaced by their values.
fn inline_constants(message: &str, constants: &BTreeMap<String, u64>) -> String {
    let mut m = message.to_string();
    for (name, value) in constants {
        m = m
            .replace(&format!("{{{name}}}"), &value.to_string())
            .replace(&format!("{{{name}:x}}"), &format!("{value:x}"));
    }
    m
}

/// The arm's pattern, binding only the fields that `used` names (through their patterns).
fn binding_pattern(
    id: &syn::Ident,
    r: &RowToml,
    binds: &BTreeMap<String, String>,
    used: &BTreeSet<String>,
) -> TokenStream {
    let v = format_ident!("{}", r.variant.get_ref());
    if r.fields.is_empty() {
        return quote!(#id::#v);
    }
    let bound: Vec<(&FieldToml, Option<TokenStream>)> = r
        .fields
        .iter()
        .map(|f| {
            let name = format_ident!("{}", f.name);
            let binding = match binds.get(&f.name).or(f.bind.as_ref()) {
                Some(p) if idents(p).iter().any(|i| used.contains(i)) => {
                    Some(pattern(p).unwrap_or_else(|e| syn::Error::new(Span::call_site(), e).to_compile_error()))
                }
                Some(_) => None,
                None if used.contains(&f.name) => Some(quote!(#name)),
                None => None,
            };
            (f, binding)
        })
        .collect();
    if r.tuple {
        let parts = bound.iter().map(|(_, b)| b.clone().unwrap_or_else(|| quote!(_)));
        quote!(#id::#v(#(#parts),*))
    } else {
        let parts: Vec<TokenStream> = bound
            .iter()
            .filter_map(|(f, b)| {
                let name = format_ident!("{}", f.name);
                b.as_ref().map(|b| if b.to_string() == f.name { quote!(#name) } else { quote!(#name: #b) })
            })
            .collect();
        if parts.len() == r.fields.len() {
            quote!(#id::#v { #(#parts),* })
        } else {
            quote!(#id::#v { #(#parts,)* .. })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The rows as data, and the rendered documents.

/// A code's name in C: `NEFF_ERR_` / `NEFF_WARN_`, the layer, the variant in upper snake case.
pub fn c_name(warning: bool, layer: Option<&str>, variant: &str) -> String {
    let mut out = String::from(if warning { "NEFF_WARN_" } else { "NEFF_ERR_" });
    if let Some(l) = layer {
        out.push_str(&screaming(l));
        out.push('_');
    }
    out.push_str(&screaming(variant));
    out
}

/// `HeaderSizeNot1024` -> `HEADER_SIZE_NOT1024`: a word starts at an upper-case letter after a
/// lower-case letter or a digit, or before a lower-case letter after upper-case ones (`ABCDef`
/// -> `ABC_DEF`); digits stay with the word before them.
pub fn screaming(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase() || prev.is_ascii_digit() || (prev.is_ascii_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// One published code.
struct Code {
    code: u16,
    c_name: String,
    /// `Header(ShortFile)`, `Io(Other)`, `Truncated`.
    kind: String,
    status: Option<String>,
    /// The docs' message (a template).
    message: String,
    meaning: String,
    basis: String,
    spec: String,
}

/// A rustdoc paragraph as one line of Markdown: links as their text, without the final period.
fn meaning(doc: &str) -> String {
    let mut text = doc.split("\n\n").next().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
    // `[`X`](path)` -> `X`.
    while let Some(start) = text.find("[`") {
        let Some(mid) = text[start..].find("`](").map(|m| start + m) else { break };
        let Some(end) = text[mid..].find(')').map(|e| mid + e) else { break };
        text = format!("{}{}{}", &text[..start], &text[start + 1..mid + 1], &text[end + 1..]);
    }
    text.trim_end_matches('.').to_string()
}

impl Errors {
    /// The row's message as the docs show it: the template with single braces, the earlier
    /// arms' messages after it.
    fn doc_message(&self, r: &RowToml) -> String {
        if r.display.is_some() {
            return r.message.get_ref().clone();
        }
        let (head, optional) = match &r.prefix {
            Some(p) => (p.message.as_str(), p.when.is_some()),
            None => ("", false),
        };
        let mut forms: Vec<String> = std::iter::once(r.message.get_ref())
            .chain(r.cases.iter().map(|c| &c.message))
            .map(|m| format!("`{}`", self.doc_template(&format!("{head}{m}"))))
            .collect();
        if optional {
            forms.push(format!("`{}`", self.doc_template(r.message.get_ref())));
        }
        let mut out = forms.remove(0);
        if !forms.is_empty() {
            let _ = write!(out, " (or {})", forms.join(", "));
        }
        if let Some(note) = &r.note {
            let _ = write!(out, " {note}");
        }
        out
    }

    /// A message for the docs: constants as their values, single braces.
    fn doc_template(&self, message: &str) -> String {
        unescape(&inline_constants(message, &self.toml.constants))
    }

    fn codes(&self, warning: bool) -> Vec<Code> {
        let mut out = Vec::new();
        let rows = if warning { &self.toml.warnings } else { &self.toml.refusals };
        for r in rows {
            let layer = r.layer.as_ref().map(|l| l.get_ref().as_str());
            let variant = r.variant.get_ref();
            let code = Code {
                code: *r.code.get_ref(),
                c_name: c_name(warning, layer, variant),
                kind: match layer {
                    Some(l) => format!("{l}({variant})"),
                    None => variant.clone(),
                },
                status: r.status.as_ref().map(|s| s.get_ref().clone()),
                message: self.doc_message(r),
                meaning: meaning(r.doc.get_ref()),
                basis: r.basis.get_ref().clone(),
                spec: r.spec.get_ref().clone(),
            };
            for (i, sub) in r.subcodes.iter().enumerate() {
                out.push(Code {
                    code: code.code + 1 + i as u16,
                    c_name: format!("{}_{}", code.c_name, screaming(sub)),
                    kind: format!("{variant}({sub})"),
                    meaning: format!("{}: `embedded_io::ErrorKind::{sub}`", code.meaning),
                    message: code.message.clone(),
                    status: code.status.clone(),
                    basis: code.basis.clone(),
                    spec: code.spec.clone(),
                });
            }
            out.push(code);
        }
        out.sort_by_key(|c| c.code);
        out
    }

    /// The rows as `CodeRow` constants, and the rendered documents as strings: `ERRORS`,
    /// `WARNINGS`, `REFUSALS_MD`, `ERROR_CODES_MD`, `C_HEADER`.
    pub fn generate_table(&self) -> TokenStream {
        let rows = |warning: bool| {
            let rows = self.codes(warning).into_iter().map(|c| {
                let Code { code, c_name, kind, message, basis, spec, .. } = c;
                let status = match c.status {
                    Some(s) => {
                        let s = format_ident!("{}", s);
                        quote!(Some(crate::Status::#s))
                    }
                    None => quote!(None),
                };
                quote!(CodeRow { code: #code, c_name: #c_name, kind: #kind, status: #status, message: #message, basis: #basis, spec: #spec })
            });
            quote!(&[#(#rows),*])
        };
        let (errors, warnings) = (rows(false), rows(true));
        let refusals = self.render_refusals();
        let codes = self.render_error_codes();
        let header = self.render_c_header();
        let track = track(&self.path);
        quote!(
            /// Every error code, in order: `ErrorKind::code()`'s values.
            pub const ERRORS: &[CodeRow] = #errors;
            /// Every warning code, in order: `WarningKind::code()`'s values.
            pub const WARNINGS: &[CodeRow] = #warnings;
            /// `docs/refusals.md` as the table renders it.
            pub const REFUSALS_MD: &str = #refusals;
            /// `docs/error-codes.md` as the table renders it.
            pub const ERROR_CODES_MD: &str = #codes;
            /// `targets/c/include/neff_codes.h` as the table renders it.
            pub const C_HEADER: &str = #header;
            #track
        )
    }

    /// `docs/refusals.md`.
    pub fn render_refusals(&self) -> String {
        let t = &self.toml;
        let mut s = String::new();
        let _ = writeln!(s, "# Every refusal and its source\n\n<!-- Generated from schema/errors.toml (`NEFF_UPDATE_SCHEMA_DOC=1 cargo test -p neff --test refusals_table`); do not edit. -->\n");
        s.push_str(t.refusals_intro.trim());
        s.push_str("\n\n| basis | refusals | warnings |\n|---|---|---|\n");
        let count = |rows: &[RowToml], basis: Option<&str>| {
            rows.iter().filter(|r| basis.is_none_or(|b| r.basis.get_ref() == b)).count()
        };
        for b in BASES.iter().copied().map(Some).chain([None]) {
            let _ = writeln!(s, "| {} | {} | {} |", b.unwrap_or("total"), count(&t.refusals, b), count(&t.warnings, b));
        }
        s.push('\n');
        s.push_str(t.refusals_legend.trim());
        s.push_str("\n\n## Refusals\n\n");
        let table = |s: &mut String, rows: &[RowToml], warning: bool| {
            s.push_str("| id | message | status | spec | source | basis |\n|---|---|---|---|---|---|\n");
            for r in rows {
                let id = match (&r.layer, warning) {
                    (Some(l), false) => {
                        format!("{}::{}", self.layer(l.get_ref()).map_or("", |l| l.error.as_str()), r.variant.get_ref())
                    }
                    (Some(l), true) => format!(
                        "{}::{}",
                        self.layer(l.get_ref()).and_then(|l| l.warning.as_deref()).unwrap_or(""),
                        r.variant.get_ref()
                    ),
                    (None, _) => format!("ErrorKind::{}", r.variant.get_ref()),
                };
                let status = match &r.status {
                    Some(st) => {
                        let (_, c, n) =
                            STATUSES.iter().find(|(n, _, _)| n == st.get_ref()).copied().unwrap_or(("", "?", 0));
                        match &r.cause {
                            Some(cause) => format!("`{c}` ({n}), cause `{cause}`"),
                            None => format!("`{c}` ({n})"),
                        }
                    }
                    None => "none (warning)".to_string(),
                };
                let cell = |x: &str| x.replace('|', "\\|");
                let _ = writeln!(
                    s,
                    "| `{id}` | {} | {status} | {} | {} | {} |",
                    cell(&self.doc_message(r)),
                    cell(r.spec.get_ref()),
                    cell(r.source.get_ref()),
                    r.basis.get_ref()
                );
            }
        };
        table(&mut s, &t.refusals, false);
        let _ = write!(s, "\n## Warnings\n\n{}\n\n", t.warnings_intro.trim());
        table(&mut s, &t.warnings, true);
        s
    }

    /// `docs/error-codes.md`.
    pub fn render_error_codes(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Error and warning codes\n\n<!-- Generated from schema/errors.toml (`NEFF_UPDATE_SCHEMA_DOC=1 cargo test -p neff --test refusals_table`); do not edit. -->\n");
        s.push_str(self.toml.codes_intro.trim());
        for (warning, heading) in [(false, "Errors"), (true, "Warnings")] {
            let _ = write!(s, "\n\n## {heading}\n\n| code | kind | C name | meaning |\n|---:|---|---|---|\n");
            for c in self.codes(warning) {
                let _ =
                    writeln!(s, "| {} | `{}` | `{}` | {} |", c.code, c.kind, c.c_name, c.meaning.replace('|', "\\|"));
            }
            s.pop();
        }
        s.push('\n');
        s
    }

    /// `targets/c/include/neff_codes.h`.
    pub fn render_c_header(&self) -> String {
        let mut s = String::new();
        s.push_str(
            "/* neff's stable error and warning codes (`ErrorKind::code()`, `WarningKind::code()`).\n \
             *\n \
             * Generated from schema/errors.toml by neff's codegen\n \
             * (`NEFF_UPDATE_SCHEMA_DOC=1 cargo test -p neff --test refusals_table`); do not edit.\n \
             * A code keeps its meaning and is never reused (docs/error-codes.md). Each comment is the\n \
             * message template (the placeholders name the error's fields) and the runtime status\n \
             * (`NRT_STATUS`) the error maps to. */\n\
             #ifndef NEFF_CODES_H\n#define NEFF_CODES_H\n",
        );
        for (warning, name) in [(false, "neff_error_code"), (true, "neff_warning_code")] {
            let what = if warning { "warning" } else { "error" };
            let _ = write!(s, "\n/** The code of each {what} the core can give. */\ntypedef enum {name} {{\n");
            for c in self.codes(warning) {
                let status = match &c.status {
                    Some(st) => {
                        let (_, cn, n) = STATUSES.iter().find(|(n, _, _)| n == st).copied().unwrap_or(("", "?", 0));
                        format!("{cn} ({n})")
                    }
                    None => "warning".to_string(),
                };
                let message = c.message.replace("*/", "* /");
                let _ = writeln!(s, "    /** {message}; {status}. */\n    {} = {},", c.c_name, c.code);
            }
            let _ = writeln!(s, "}} {name};");
        }
        s.push_str("\n#endif /* NEFF_CODES_H */\n");
        s
    }

    /// The `include_bytes!` that rebuilds the crate when the table changes.
    pub fn track(&self) -> TokenStream {
        track(&self.path)
    }
}
