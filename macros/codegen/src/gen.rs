//! Checks a loaded schema and turns it into Rust tokens.
//!
//! The generated code refers to the hand-written reader support in `crate::manifest::rt`
//! (the `JsonValue` trait and the tokenizer glue), to `crate::json::Event` and to
//! `crate::manifest::ManifestError`; it is meant to be expanded inside `neff::manifest`.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::kinds::Kinds;
use crate::model::{EnumToml, KeyToml, LayoutToml, ObjectToml, SchemaError, SchemaFile};
use crate::tokens::{doc_attrs, is_ident};
use crate::ty::{Cap, Scalar, Ty};

/// Where an object is declared.
struct ObjRef<'a> {
    file: &'a SchemaFile,
    obj: &'a ObjectToml,
    /// Resolved key types, in key order.
    tys: Vec<Ty>,
    /// The key field's type, for map entries.
    key_ty: Option<Ty>,
}

/// The whole checked schema.
pub struct Checked<'a> {
    files: &'a [SchemaFile],
    /// Capacities in declaration order: name -> (default, doc).
    caps: Vec<(String, usize, Option<usize>, String)>,
    objects: BTreeMap<String, ObjRef<'a>>,
    enums: BTreeMap<String, (&'a SchemaFile, &'a EnumToml)>,
    layouts: BTreeMap<String, (&'a SchemaFile, &'a LayoutToml)>,
    /// The `Entry` variants of streamed keys: (variant, owning object, key index).
    entries: Vec<(String, String, usize)>,
    /// The manifest tiers' stages (`schema/kinds.toml`): name -> as printed, the label of
    /// their keys in the consumed-key table.
    tier_stages: BTreeMap<String, String>,
}
const REPRS: &[&str] = &["u8", "u16", "u32", "i32", "u64"];

/// Checks every cross-reference of the schema; the first problem is returned with its
/// `file:line:col`.
pub fn check<'a>(files: &'a [SchemaFile], kinds: &Kinds) -> Result<Checked<'a>, SchemaError> {
    let tier_stages: BTreeMap<String, String> =
        kinds.tiers().map(|t| (t.stage.name.get_ref().clone(), t.stage.printed.clone())).collect();
    let mut caps: Vec<(String, usize, Option<usize>, String)> = Vec::new();
    let mut type_names: BTreeSet<String> = BTreeSet::new();
    let mut enums = BTreeMap::new();
    let mut layouts = BTreeMap::new();
    let mut raw_objects: Vec<(&SchemaFile, &ObjectToml)> = Vec::new();

    for f in files {
        if let Some(stage) = &f.toml.stage {
            if !tier_stages.contains_key(stage.get_ref()) {
                let known: Vec<&str> = tier_stages.keys().map(String::as_str).collect();
                return Err(f.error_at(
                    stage.span(),
                    format!("unknown stage `{}` (expected a tier's: {})", stage.get_ref(), known.join(", ")),
                ));
            }
        }
        for c in &f.toml.capacities {
            let name = c.name.get_ref();
            if !is_ident(name) || name.chars().any(|ch| ch.is_ascii_lowercase()) {
                return Err(f.error_at(c.name.span(), format!("capacity `{name}` must be an UPPER_CASE identifier")));
            }
            if caps.iter().any(|(n, ..)| n == name) {
                return Err(f.error_at(c.name.span(), format!("capacity `{name}` is declared twice")));
            }
            if c.default == 0 {
                return Err(f.error_at(c.name.span(), format!("capacity `{name}` needs a default above 0")));
            }
            if c.hosted.is_some_and(|h| h < c.default) {
                return Err(f.error_at(c.name.span(), format!("capacity `{name}`: `hosted` is below the default")));
            }
            caps.push((name.clone(), c.default, c.hosted, c.doc.clone()));
        }
        for e in &f.toml.enums {
            let name = e.name.get_ref();
            if !is_ident(name) || !type_names.insert(name.clone()) {
                return Err(f.error_at(e.name.span(), format!("type name `{name}` is invalid or declared twice")));
            }
            check_enum(f, e)?;
            enums.insert(name.clone(), (f, e));
        }
        for l in &f.toml.layouts {
            let name = l.name.get_ref();
            if !is_ident(name) || !type_names.insert(name.clone()) {
                return Err(f.error_at(l.name.span(), format!("type name `{name}` is invalid or declared twice")));
            }
            for field in &l.fields {
                if !is_ident(field.name.get_ref()) {
                    return Err(
                        f.error_at(field.name.span(), format!("`{}` is not a field name", field.name.get_ref()))
                    );
                }
                let nested = f
                    .toml
                    .layouts
                    .iter()
                    .chain(files.iter().flat_map(|g| g.toml.layouts.iter()))
                    .any(|o| o.name.get_ref() == field.ty.get_ref());
                if !nested && !layout_type_ok(field.ty.get_ref()) {
                    return Err(f.error_at(field.ty.span(), format!("layout field type `{}` must be a fixed-width integer, bool, an array of them (`[u32; 32]`) or another layout", field.ty.get_ref())));
                }
            }
            layouts.insert(name.clone(), (f, l));
        }
        for o in &f.toml.objects {
            let name = o.name.get_ref();
            if !is_ident(name) || !type_names.insert(name.clone()) {
                return Err(f.error_at(o.name.span(), format!("type name `{name}` is invalid or declared twice")));
            }
            if o.root && f.toml.stage.is_none() {
                return Err(f.error_at(o.name.span(), "a root object needs the file's `stage`"));
            }
            raw_objects.push((f, o));
        }
    }

    let cap_known = |c: &str| caps.iter().any(|(n, ..)| n == c);
    let mut objects: BTreeMap<String, ObjRef> = BTreeMap::new();
    let mut entry_names: BTreeSet<String> = BTreeSet::new();
    for (f, o) in &raw_objects {
        if o.keys.len() > 64 {
            return Err(f.error_at(o.name.span(), "an object may consume at most 64 keys"));
        }
        let mut tys = Vec::new();
        let mut fields = BTreeSet::new();
        let mut json_keys = BTreeSet::new();
        let key_ty = match (&o.key_field, &o.key_type) {
            (Some(kf), Some(kt)) => {
                let ty = Ty::parse(kt.get_ref()).map_err(|e| f.error_at(kt.span(), e))?;
                if !matches!(ty, Ty::Str(_)) {
                    return Err(f.error_at(kt.span(), "key_type must be a string<CAP>"));
                }
                if !is_ident(kf.get_ref()) {
                    return Err(f.error_at(kf.span(), "key_field must be a field name"));
                }
                fields.insert(kf.get_ref().clone());
                Some(ty)
            }
            (None, None) => None,
            (Some(s), None) | (None, Some(s)) => return Err(f.error_at(s.span(), "key_field and key_type go together")),
        };
        for k in &o.keys {
            let ty = Ty::parse(k.ty.get_ref()).map_err(|e| f.error_at(k.ty.span(), e))?;
            let mut used = Vec::new();
            ty.caps(&mut used);
            for c in &used {
                if !cap_known(c) {
                    return Err(f.error_at(
                        k.ty.span(),
                        format!("unknown capacity `{c}` (declare it in a [[capacity]] table)"),
                    ));
                }
            }
            let mut objs = Vec::new();
            ty.objects(&mut objs);
            for n in &objs {
                if !raw_objects.iter().any(|(_, o)| o.name.get_ref() == n) {
                    return Err(f.error_at(k.ty.span(), format!("unknown object `{n}`")));
                }
            }
            if let Ty::Map(n, _) | Ty::EachMap(n) = &ty {
                if raw_objects.iter().any(|(_, o)| o.name.get_ref() == n && o.key_field.is_none()) {
                    return Err(f.error_at(k.ty.span(), format!("`{n}` is used in a map<..> but has no key_field")));
                }
            }
            let streamed = matches!(ty, Ty::Each(_) | Ty::EachOrName(..) | Ty::EachMap(_))
                || matches!(&ty, Ty::Tagged(_, t) if matches!(t.as_ref(), Ty::Each(_)));
            match (&k.entry, streamed) {
                (Some(e), true) => {
                    if !is_ident(e.get_ref()) || !entry_names.insert(e.get_ref().clone()) {
                        return Err(f.error_at(e.span(), format!("entry `{}` is invalid or used twice", e.get_ref())));
                    }
                }
                (None, true) => {
                    return Err(f.error_at(k.ty.span(), "an each<..> or each_map<..> key needs an `entry` name"));
                }
                (Some(e), false) => {
                    return Err(f.error_at(e.span(), "`entry` applies to each<..> and each_map<..> keys"));
                }
                (None, false) => {}
            }
            let field = k.field.get_ref();
            if !is_ident(field) || field.starts_with("r#") {
                return Err(f.error_at(k.field.span(), format!("`{field}` is not a field name")));
            }
            if !fields.insert(field.clone()) {
                return Err(f.error_at(k.field.span(), format!("field `{field}` is used twice")));
            }
            for key in std::iter::once(&k.key).chain(&k.aliases) {
                if !json_keys.insert(key.get_ref().clone()) {
                    return Err(f.error_at(key.span(), format!("key `{}` is consumed twice", key.get_ref())));
                }
            }
            if k.required && k.default.is_some() {
                return Err(f.error_at(k.field.span(), "a key is either required or has a default"));
            }
            if let Some(d) = &k.default {
                default_tokens(&ty, d.get_ref()).map_err(|e| f.error_at(d.span(), e))?;
            }
            if let Some(m) = &k.map {
                if !matches!(ty, Ty::Str(_)) {
                    return Err(f.error_at(m.span(), "`map` applies to string keys"));
                }
                if !raw_enum_exists(files, m.get_ref()) {
                    return Err(f.error_at(m.span(), format!("unknown enum `{}`", m.get_ref())));
                }
                if let Some(v) = &k.strict {
                    if !is_ident(v.get_ref()) {
                        return Err(f.error_at(
                            v.span(),
                            "`strict` names the ManifestError variant (taking the value) to return",
                        ));
                    }
                }
            } else if k.strict.is_some() || k.accessor.is_some() {
                return Err(f.error_at(k.key.span(), "`strict` and `accessor` need a `map`"));
            }
            if let Some(ovf) = &k.overflow_error {
                if k.runtime_max.is_none() || innermost_array_cap(&ty).is_none() || !is_ident(ovf.get_ref()) {
                    return Err(f.error_at(ovf.span(), "overflow_error needs an array type and `runtime_max`"));
                }
            }
            if k.format_error.is_some() && !matches!(ty, Ty::Tagged(..)) {
                return Err(f.error_at(k.key.span(), "format_error applies to tagged<..> lists"));
            }
            tys.push(ty);
        }
        objects.insert(o.name.get_ref().clone(), ObjRef { file: f, obj: o, tys, key_ty });
    }

    for name in objects.keys() {
        check_not_recursive(name, &objects, &mut Vec::new())?;
    }
    let mut entries = Vec::new();
    for (name, o) in &objects {
        for (i, k) in o.obj.keys.iter().enumerate() {
            if let Some(e) = &k.entry {
                entries.push((e.get_ref().clone(), name.clone(), i));
            }
        }
    }

    Ok(Checked { files, caps, objects, enums, layouts, entries, tier_stages })
}

fn raw_enum_exists(files: &[SchemaFile], name: &str) -> bool {
    files.iter().any(|f| f.toml.enums.iter().any(|e| e.name.get_ref() == name))
}

/// An object may not contain itself: its struct would have no size.
fn check_not_recursive(
    name: &str,
    objects: &BTreeMap<String, ObjRef>,
    stack: &mut Vec<String>,
) -> Result<(), SchemaError> {
    let o = &objects[name];
    if stack.iter().any(|s| s == name) {
        return Err(o.file.error_at(
            o.obj.name.span(),
            format!("object `{name}` contains itself ({} -> {name})", stack.join(" -> ")),
        ));
    }
    stack.push(name.to_string());
    for ty in &o.tys {
        let mut objs = Vec::new();
        ty.objects(&mut objs);
        for n in objs {
            check_not_recursive(&n, objects, stack)?;
        }
    }
    stack.pop();
    Ok(())
}

fn check_enum(f: &SchemaFile, e: &EnumToml) -> Result<(), SchemaError> {
    if !REPRS.contains(&e.repr.get_ref().as_str()) {
        return Err(
            f.error_at(e.repr.span(), format!("repr `{}` must be one of {}", e.repr.get_ref(), REPRS.join(", ")))
        );
    }
    let mut names = BTreeSet::new();
    let mut values = BTreeSet::new();
    let mut strings = BTreeSet::new();
    let sized = e.variants.iter().filter(|v| v.size.is_some()).count();
    for v in &e.variants {
        if !is_ident(v.name.get_ref()) || !names.insert(v.name.get_ref().clone()) {
            return Err(
                f.error_at(v.name.span(), format!("variant `{}` is invalid or declared twice", v.name.get_ref()))
            );
        }
        if !values.insert(v.value) {
            return Err(f.error_at(v.name.span(), format!("value {} is used twice in `{}`", v.value, e.name.get_ref())));
        }
        if e.repr.get_ref().starts_with('u') && v.value < 0 {
            return Err(f.error_at(v.name.span(), "negative value in an unsigned enum"));
        }
        for s in &v.json {
            if !strings.insert(s.get_ref().clone()) {
                return Err(f.error_at(s.span(), format!("string \"{}\" selects two variants", s.get_ref())));
            }
        }
        for s in &v.names {
            if s.get_ref().is_empty() || !strings.insert(s.get_ref().clone()) {
                return Err(f.error_at(s.span(), format!("name \"{}\" is empty or names two variants", s.get_ref())));
            }
        }
        if sized != 0 && v.size.is_none() {
            return Err(f.error_at(v.name.span(), "give every variant a `size`, or none"));
        }
    }
    Ok(())
}

fn layout_type_ok(t: &str) -> bool {
    let scalar = |s: &str| matches!(s.trim(), "u8" | "u16" | "u32" | "u64" | "i32" | "i64" | "bool");
    if scalar(t) {
        return true;
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        if let Some((elem, n)) = inner.split_once(';') {
            return scalar(elem) && n.trim().parse::<usize>().is_ok_and(|n| n <= 32);
        }
    }
    false
}

fn innermost_array_cap(ty: &Ty) -> Option<&Cap> {
    match ty {
        Ty::Array(inner, cap) => innermost_array_cap(inner).or(Some(cap)),
        Ty::Tagged(_, inner) | Ty::Each(inner) | Ty::EachOrName(inner, _) => innermost_array_cap(inner),
        _ => None,
    }
}

fn default_tokens(ty: &Ty, v: &toml::Value) -> Result<TokenStream, String> {
    match (ty, v) {
        (Ty::Scalar(Scalar::Bool), toml::Value::Boolean(b)) => Ok(quote!(#b)),
        (Ty::Scalar(Scalar::F64), toml::Value::Float(x)) if x.is_finite() => {
            // Kept as JSON number text, as a document's value is (`{:?}` of a finite f64 is one).
            let text = format!("{x:?}");
            Ok(quote!(crate::json::Float::literal(#text)))
        }
        (Ty::Scalar(s), toml::Value::Integer(i)) if *s != Scalar::Bool && *s != Scalar::F64 => {
            let t: syn::Type = syn::parse_str(s.rust()).map_err(|e| e.to_string())?;
            let lit = Literal::i64_unsuffixed(*i);
            if *i < 0 && *s != Scalar::I64 {
                return Err("negative default for an unsigned key".into());
            }
            Ok(quote!(#lit as #t))
        }
        (Ty::Str(_), toml::Value::String(s)) => Ok(quote!(crate::manifest::rt::str_default(#s))),
        (Ty::Array(..) | Ty::Map(..) | Ty::Tagged(..), toml::Value::Array(a)) if a.is_empty() => {
            Ok(quote!(::core::default::Default::default()))
        }
        _ => Err(format!("default `{v}` does not fit type {}", ty.json_name())),
    }
}

fn cap_tokens(c: &Cap) -> TokenStream {
    match c {
        Cap::Param(p) => {
            let id = format_ident!("{}", p);
            quote!({ crate::manifest::cap::#id })
        }
        Cap::Lit(n) => {
            let lit = Literal::usize_unsuffixed(*n);
            quote!(#lit)
        }
    }
}

impl Checked<'_> {
    /// The consumed-key table's label of `file`'s keys: its stage, as printed.
    fn tier_label(&self, file: &SchemaFile) -> String {
        file.toml.stage.as_ref().and_then(|s| self.tier_stages.get(s.get_ref())).cloned().unwrap_or_default()
    }

    fn object_type(&self, name: &str) -> TokenStream {
        let id = format_ident!("{}", name);
        quote!(#id)
    }

    fn rust_type(&self, ty: &Ty) -> TokenStream {
        match ty {
            // A number is kept as its checked text: a reader that does not ask for the value
            // links no float parser.
            Ty::Scalar(Scalar::F64) => quote!(crate::json::Float),
            Ty::Scalar(s) => {
                let id = format_ident!("{}", s.rust());
                quote!(#id)
            }
            Ty::Str(c) => {
                let c = cap_tokens(c);
                quote!(::heapless::String<#c>)
            }
            Ty::Array(t, c) => {
                let t = self.rust_type(t);
                let c = cap_tokens(c);
                quote!(::heapless::Vec<#t, #c>)
            }
            Ty::Map(o, c) => {
                let t = self.object_type(o);
                let c = cap_tokens(c);
                quote!(crate::manifest::rt::Map<#t, #c>)
            }
            // A streamed key's type names its marker too (`field_type`): this is never a field's.
            Ty::Each(t) => {
                let t = self.rust_type(t);
                quote!(crate::manifest::rt::Each<#t, ()>)
            }
            Ty::EachOrName(t, c) => {
                let t = self.rust_type(t);
                let c = cap_tokens(c);
                quote!(crate::manifest::rt::EachOrName<#t, (), #c>)
            }
            Ty::EachMap(o) => {
                let t = self.object_type(o);
                quote!(crate::manifest::rt::EachMap<#t, ()>)
            }
            Ty::Count => quote!(crate::manifest::rt::ArrayLen),
            Ty::Present => quote!(crate::manifest::rt::Present),
            Ty::StrOrOther(c) => {
                let c = cap_tokens(c);
                quote!(crate::manifest::rt::StrOrOther<#c>)
            }
            Ty::Tagged(_, t) => self.rust_type(t),
            Ty::Object(o) => self.object_type(o),
        }
    }

    /// A key's field type: [`Checked::rust_type`], with a streamed key's marker (which
    /// [`Entry`] variant its elements are handed on as) as the `Each` / `EachMap` parameter.
    fn field_type(&self, ty: &Ty, entry: Option<&str>) -> TokenStream {
        match (ty, entry) {
            (Ty::Each(t), Some(e)) => {
                let t = self.rust_type(t);
                let m = format_ident!("{}", e);
                quote!(crate::manifest::rt::Each<#t, crate::manifest::streamed::#m>)
            }
            (Ty::EachMap(o), Some(e)) => {
                let t = self.object_type(o);
                let m = format_ident!("{}", e);
                quote!(crate::manifest::rt::EachMap<#t, crate::manifest::streamed::#m>)
            }
            (Ty::EachOrName(t, c), Some(e)) => {
                let t = self.rust_type(t);
                let c = cap_tokens(c);
                let m = format_ident!("{}", e);
                quote!(crate::manifest::rt::EachOrName<#t, crate::manifest::streamed::#m, #c>)
            }
            (Ty::Tagged(_, t), _) => self.field_type(t, entry),
            _ => self.rust_type(ty),
        }
    }

    /// Capacity names in nesting order, as the reader consumes them.
    fn limit_names(&self, ty: &Ty, key: &str, out: &mut Vec<String>) {
        let name = |c: &Cap| match c {
            Cap::Param(p) => p.clone(),
            Cap::Lit(n) => format!("{key} length {n}"),
        };
        match ty {
            Ty::Str(c) | Ty::StrOrOther(c) => out.push(name(c)),
            Ty::Array(t, c) => {
                out.push(name(c));
                self.limit_names(t, key, out);
            }
            Ty::Map(o, c) => {
                out.push(name(c));
                if let Some(Ty::Str(kc)) = &self.objects[o].key_ty {
                    out.push(name(kc));
                }
            }
            Ty::EachMap(o) => {
                if let Some(Ty::Str(kc)) = &self.objects[o].key_ty {
                    out.push(name(kc));
                }
            }
            Ty::Tagged(_, t) | Ty::Each(t) => self.limit_names(t, key, out),
            Ty::EachOrName(t, c) => {
                out.push(name(c));
                self.limit_names(t, key, out);
            }
            _ => {}
        }
    }

    /// The element type a streamed key hands to the visitor.
    fn entry_type(&self, ty: &Ty) -> Option<TokenStream> {
        match ty {
            Ty::Each(t) | Ty::EachOrName(t, _) => Some(self.rust_type(t)),
            Ty::EachMap(o) => Some(self.object_type(o)),
            Ty::Tagged(_, t) => self.entry_type(t),
            _ => None,
        }
    }

    fn gen_object(&self, name: &str) -> TokenStream {
        let o = &self.objects[name];
        let obj = o.obj;
        let id = format_ident!("{}", name);
        let doc = doc_attrs(&obj.doc);

        let mut fields = Vec::new();
        let mut defaults = Vec::new();
        let mut clears = Vec::new();
        let mut accessors = Vec::new();
        if let (Some(kf), Some(kt)) = (&obj.key_field, &o.key_ty) {
            let f = format_ident!("{}", kf.get_ref());
            let t = self.rust_type(kt);
            let d = doc_attrs(obj.key_doc.as_deref().unwrap_or("The name this entry has in its parent object."));
            fields.push(quote!(#d pub #f: #t,));
            defaults.push(quote!(#f: ::core::default::Default::default(),));
            clears.push(quote!(self.#f.clear();));
        }
        let mut arms = Vec::new();
        let mut names_of = Vec::new();
        let mut keys = Vec::new();
        let mut missing = Vec::new();
        let mut lims = Vec::new();
        let mut required_mask: u64 = 0;
        for (slot, (k, ty)) in obj.keys.iter().zip(&o.tys).enumerate() {
            let f = format_ident!("{}", k.field.get_ref());
            let t = self.field_type(ty, k.entry.as_ref().map(|e| e.get_ref().as_str()));
            let optional = !k.required && k.default.is_none();
            let fdoc = doc_attrs(&field_doc(k, ty));
            if optional {
                fields.push(quote!(#fdoc pub #f: ::core::option::Option<#t>,));
                defaults.push(quote!(#f: ::core::option::Option::None,));
                clears.push(quote!(self.#f = ::core::option::Option::None;));
            } else {
                fields.push(quote!(#fdoc pub #f: #t,));
                match &k.default {
                    Some(d) => {
                        let dt = default_tokens(ty, d.get_ref()).unwrap_or_default();
                        defaults.push(quote!(#f: #dt,));
                        // A string default is written in place: a descriptor's fields are
                        // cleared for each of its tens of thousands, and a whole string built
                        // and moved in costs a copy of its capacity.
                        match (ty, d.get_ref()) {
                            (Ty::Str(_), toml::Value::String(text)) => {
                                clears.push(quote!(crate::manifest::rt::reset_str(&mut self.#f, #text);));
                            }
                            _ => clears.push(quote!(self.#f = #dt;)),
                        }
                    }
                    None => {
                        defaults.push(quote!(#f: ::core::default::Default::default(),));
                        clears.push(quote!(crate::manifest::rt::JsonValue::clear(&mut self.#f);));
                    }
                }
            }
            if k.required {
                required_mask |= 1 << slot;
            }
            let key = k.key.get_ref();
            keys.push(key.clone());
            missing.push(k.missing.clone().unwrap_or_default());
            let slot_lit = Literal::u8_unsuffixed(slot as u8);
            for name in std::iter::once(&k.key).chain(&k.aliases) {
                let name = name.get_ref();
                names_of.push(quote!((#name, #slot_lit),));
            }

            let mut names = Vec::new();
            self.limit_names(ty, key, &mut names);
            let type_error = k.type_error.clone().unwrap_or_default();
            let format_error = k.format_error.clone().unwrap_or_default();
            let (overflow_limit, overflow, runtime_max) = match (&k.overflow_error, k.runtime_max) {
                (Some(v), Some(max)) => {
                    let v = format_ident!("{}", v.get_ref());
                    let lim = match innermost_array_cap(ty) {
                        Some(Cap::Param(p)) => p.clone(),
                        Some(Cap::Lit(n)) => format!("{key} length {n}"),
                        None => String::new(),
                    };
                    (lim, quote!(::core::option::Option::Some(crate::manifest::ManifestError::#v)), max)
                }
                _ => (String::new(), quote!(::core::option::Option::None), 0),
            };
            let tag = match ty {
                Ty::Tagged(tag, _) => quote!(::core::option::Option::Some(#tag)),
                _ => quote!(::core::option::Option::None),
            };
            let mut strict = quote!(::core::option::Option::None);
            if let Some(m) = &k.map {
                let e = format_ident!("{}", m.get_ref());
                let acc =
                    k.accessor.as_ref().map_or_else(|| format!("{}_kind", k.field.get_ref()), |a| a.get_ref().clone());
                let acc = format_ident!("{}", acc);
                let adoc = format!(" `{key}` as a [`{}`]; `None` when absent or not in the map.", m.get_ref());
                if optional {
                    accessors.push(quote! {
                        #[doc = #adoc]
                        pub fn #acc(&self) -> ::core::option::Option<#e> {
                            self.#f.as_ref().and_then(|s| #e::from_json(s.as_str()))
                        }
                    });
                } else {
                    accessors.push(quote! {
                        #[doc = #adoc]
                        pub fn #acc(&self) -> ::core::option::Option<#e> {
                            #e::from_json(self.#f.as_str())
                        }
                    });
                }
                if let Some(variant) = &k.strict {
                    let v = format_ident!("{}", variant.get_ref());
                    strict = quote! {
                        ::core::option::Option::Some(crate::manifest::rt::Strict {
                            known: |s| #e::from_json(s).is_some(),
                            error: crate::manifest::ManifestError::#v,
                        })
                    };
                }
            }
            lims.push(quote! {
                crate::manifest::rt::Lim {
                    names: &[#(#names),*],
                    rules: &crate::manifest::rt::Rules {
                        type_error: #type_error,
                        format_error: #format_error,
                        overflow_limit: #overflow_limit,
                        runtime_max: #runtime_max,
                        overflow: #overflow,
                        tag: #tag,
                        strict: #strict,
                    },
                },
            });
            arms.push(quote!(#slot_lit => ::core::option::Option::Some(&mut self.#f),));
        }
        let required_mask = Literal::u64_unsuffixed(required_mask);

        let map_entry = match (&obj.key_field, &o.key_ty) {
            (Some(kf), Some(_)) => {
                let f = format_ident!("{}", kf.get_ref());
                quote! {
                    impl crate::manifest::rt::MapEntry for #id {
                        fn set_key(&mut self, key: &str, limit: &'static str) -> ::core::result::Result<(), crate::manifest::rt::Issue> {
                            crate::manifest::rt::copy_str(self.#f.as_mut_view(), key, limit)
                        }
                    }
                }
            }
            _ => quote!(),
        };

        let root = if obj.root {
            let stage =
                format_ident!("{}", o.file.toml.stage.as_ref().map(|s| s.get_ref().as_str()).unwrap_or("DefJson"));
            let tier = self.tier_label(o.file);
            let sdoc = format!(" The stage of errors in `{tier}`.");
            quote! {
                impl #id {
                    #[doc = #sdoc]
                    pub const STAGE: crate::Stage = crate::Stage::#stage;
                    /// Reads one whole document into `self` (cleared first): the consumed keys only,
                    /// every other value skipped but validated, every element of a streamed key
                    /// handed to `visitor` as it is read. Semantic checks are not made here.
                    pub fn read_document<R: ::embedded_io::BufRead>(
                        &mut self,
                        tok: &mut crate::json::Tokenizer<'_>,
                        src: &mut R,
                        member: &str,
                        visitor: &mut dyn crate::manifest::Visitor,
                    ) -> ::core::result::Result<(), crate::Error> {
                        crate::manifest::rt::JsonValue::clear(self);
                        let mut cx = crate::manifest::rt::Cx::new(tok, src, Self::STAGE, member, visitor);
                        crate::manifest::rt::read_document(&mut cx, self)
                    }
                }
            }
        } else {
            quote!()
        };

        let key_consts: Vec<TokenStream> = obj
            .keys
            .iter()
            .map(|k| {
                let c = format_ident!("KEY_{}", k.field.get_ref().to_uppercase());
                let key = k.key.get_ref();
                let d = format!(" The JSON key `{key}`.");
                quote!(#[doc = #d] pub const #c: &'static str = #key;)
            })
            .collect();
        let accessor_block = quote!(impl #id { #(#key_consts)* #(#accessors)* });

        // The value visitor: each field by its JSON key, in schema order; a map entry's name first.
        let visit_name = match &obj.key_field {
            Some(kf) => {
                let f = format_ident!("{}", kf.get_ref());
                quote!(v.name(self.#f.as_str());)
            }
            None => quote!(),
        };
        let visits: Vec<TokenStream> = obj
            .keys
            .iter()
            .map(|k| {
                let f = format_ident!("{}", k.field.get_ref());
                let key = k.key.get_ref();
                quote!(crate::manifest::fields::VisitValue::visit_value(&self.#f, ::core::option::Option::Some(#key), v);)
            })
            .collect();
        let visit_block = quote! {
            impl #id {
                /// Hands every consumed value to `v`, by its JSON key in schema order (an absent
                /// optional key is skipped; a streamed key gives its count, its elements having
                /// been handed on as they were read).
                pub fn visit_fields<V: crate::manifest::fields::FieldVisitor + ?Sized>(&self, v: &mut V) {
                    #visit_name
                    #(#visits)*
                }
            }

            impl crate::manifest::fields::VisitValue for #id {
                fn visit_value<V: crate::manifest::fields::FieldVisitor + ?Sized>(
                    &self,
                    key: ::core::option::Option<&'static str>,
                    v: &mut V,
                ) {
                    v.open(key, false);
                    self.visit_fields(v);
                    v.close();
                }
            }
        };

        quote! {
            #doc
            #[derive(Debug, Clone, PartialEq)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub struct #id {
                #(#fields)*
            }

            impl ::core::default::Default for #id {
                fn default() -> Self {
                    Self { #(#defaults)* }
                }
            }

            #accessor_block

            #visit_block

            impl crate::manifest::rt::JsonValue for #id {
                fn start(&mut self, ev: &crate::json::Event<'_>, _lim: crate::manifest::rt::Lim) -> ::core::result::Result<crate::manifest::rt::Flow, crate::manifest::rt::Issue> {
                    crate::manifest::rt::start_object(ev)
                }

                fn clear(&mut self) {
                    #(#clears)*
                }

                fn body(
                    &mut self,
                    cx: &mut crate::manifest::rt::Cx<'_, '_>,
                    _lim: crate::manifest::rt::Lim,
                ) -> ::core::result::Result<(), crate::manifest::rt::Stop> {
                    static KEYS: crate::manifest::rt::ObjectKeys = crate::manifest::rt::ObjectKeys {
                        names: &[#(#names_of)*],
                        keys: &[#(crate::manifest::RequiredKey { key: #keys, message: #missing }),*],
                        lims: &[#(#lims)*],
                        required: #required_mask,
                    };
                    crate::manifest::rt::read_object(cx, &KEYS, self)
                }
            }

            impl crate::manifest::rt::Fields for #id {
                fn field(&mut self, slot: u8) -> ::core::option::Option<&mut dyn crate::manifest::rt::JsonValue> {
                    match slot {
                        #(#arms)*
                        _ => ::core::option::Option::None,
                    }
                }
            }

            #map_entry
            #root
        }
    }

    fn gen_enum(&self, e: &EnumToml) -> TokenStream {
        let id = format_ident!("{}", e.name.get_ref());
        let repr = format_ident!("{}", e.repr.get_ref());
        let doc = doc_attrs(&format!("{}\n\nThe runtime's `{}`.", e.doc, e.c_name));
        let c_name = &e.c_name;
        let mut variants = Vec::new();
        let mut all = Vec::new();
        let mut from_json = Vec::new();
        let mut as_str = Vec::new();
        let mut c_names = Vec::new();
        let mut from_value = Vec::new();
        let mut sizes = Vec::new();
        for v in &e.variants {
            let vid = format_ident!("{}", v.name.get_ref());
            let value = Literal::i64_unsuffixed(v.value);
            let vdoc = {
                let mut d = v.doc.clone();
                if let Some(c) = &v.c_name {
                    d = format!("{d}{}`{c}` = {}", if d.is_empty() { "" } else { " " }, v.value);
                }
                if !v.json.is_empty() {
                    let js: Vec<String> = v.json.iter().map(|s| format!("\"{}\"", s.get_ref())).collect();
                    d = format!("{d} (JSON {})", js.join(", "));
                }
                doc_attrs(&d)
            };
            variants.push(quote!(#vdoc #vid = #value,));
            all.push(quote!(Self::#vid));
            for js in &v.json {
                let js = js.get_ref();
                from_json.push(quote!((#js, Self::#vid),));
            }
            let s = v
                .json
                .first()
                .map_or_else(|| v.c_name.clone().unwrap_or_else(|| v.name.get_ref().clone()), |s| s.get_ref().clone());
            as_str.push(quote!(Self::#vid => #s,));
            let c = v.c_name.clone().unwrap_or_default();
            c_names.push(quote!(Self::#vid => #c,));
            let vlit = Literal::i64_unsuffixed(v.value);
            from_value.push(quote!(#vlit => ::core::option::Option::Some(Self::#vid),));
            if let Some(sz) = v.size {
                let sz = Literal::u64_unsuffixed(sz);
                sizes.push(quote!(Self::#vid => #sz,));
            }
        }
        // Names a person gives a variant, where the schema gives any beyond the JSON strings.
        let names_fn = if e.variants.iter().any(|v| !v.names.is_empty()) {
            let rows: Vec<TokenStream> = e
                .variants
                .iter()
                .flat_map(|v| {
                    let vid = format_ident!("{}", v.name.get_ref());
                    v.json
                        .iter()
                        .chain(&v.names)
                        .map(|n| n.get_ref())
                        .filter(|n| !n.is_empty())
                        .map(move |n| quote!((#n, Self::#vid),))
                        .collect::<Vec<_>>()
                })
                .collect();
            quote! {
                /// Every name a person may give a variant (a command's flag, a binding's argument),
                /// variant by variant: its JSON strings, then its other names (`names` in
                /// `schema/`); the first of a variant's is its `as_str`.
                pub const NAMES: &'static [(&'static str, Self)] = &[#(#rows)*];

                /// The variant `name` names (one of [`Self::NAMES`], exactly).
                pub fn from_name(name: &str) -> ::core::option::Option<Self> {
                    Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
                }
            }
        } else {
            quote!()
        };
        let size_fn = if sizes.is_empty() {
            quote!()
        } else {
            quote! {
                /// Bytes per element.
                pub const fn element_size(self) -> u64 {
                    match self { #(#sizes)* }
                }
            }
        };
        quote! {
            #doc
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            #[repr(#repr)]
            pub enum #id {
                #(#variants)*
            }

            impl #id {
                /// Every variant, in schema order.
                pub const ALL: &'static [Self] = &[#(#all),*];
                /// The runtime's C enum name.
                pub const C_NAME: &'static str = #c_name;

                /// Every JSON string with the variant it selects (a table: one search serves
                /// every map, where a `match` per map would be code).
                const JSON: &'static [(&'static str, Self)] = &[#(#from_json)*];

                /// The variant a JSON string selects, `None` for strings the map does not know.
                pub fn from_json(s: &str) -> ::core::option::Option<Self> {
                    Self::JSON.iter().find(|(json, _)| *json == s).map(|&(_, v)| v)
                }

                /// The canonical JSON string (the runtime's enumerator when no string selects it).
                pub const fn as_str(self) -> &'static str {
                    match self { #(#as_str)* }
                }

                /// The runtime's enumerator name (empty when unpublished).
                pub const fn c_name(self) -> &'static str {
                    match self { #(#c_names)* }
                }

                /// The numeric value.
                pub const fn value(self) -> #repr {
                    self as #repr
                }

                /// The variant with numeric value `v`.
                pub const fn from_value(v: #repr) -> ::core::option::Option<Self> {
                    match v {
                        #(#from_value)*
                        _ => ::core::option::Option::None,
                    }
                }

                #size_fn
                #names_fn
            }

            impl ::core::fmt::Display for #id {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(self.as_str())
                }
            }
        }
    }

    fn gen_layout(&self, l: &LayoutToml) -> TokenStream {
        let id = format_ident!("{}", l.name.get_ref());
        let doc = doc_attrs(&format!(
            "{}\n\nThe runtime's `{}`, {} bytes on x86-64 (asserted at compile time, on every target).",
            l.doc, l.c_name, l.size
        ));
        let c_name = &l.c_name;
        let size = Literal::usize_unsuffixed(l.size as usize);
        let mut fields = Vec::new();
        let mut asserts = Vec::new();
        let mut infos = Vec::new();
        for f in &l.fields {
            let fid = format_ident!("{}", f.name.get_ref());
            let ty: syn::Type = syn::parse_str(f.ty.get_ref()).unwrap_or_else(|_| syn::parse_quote!(u8));
            let off = Literal::usize_unsuffixed(f.offset as usize);
            let fdoc = doc_attrs(&format!("{} (offset {}).", f.doc.trim_end_matches('.'), f.offset));
            fields.push(quote!(#fdoc pub #fid: #ty,));
            asserts.push(quote!(
                ::static_assertions::const_assert_eq!(::core::mem::offset_of!(#id, #fid), #off);
            ));
            let fname = f.name.get_ref();
            let fty = f.ty.get_ref();
            infos.push(quote!(crate::manifest::LayoutField { name: #fname, ty: #fty, offset: #off },));
        }
        quote! {
            #doc
            #[repr(C)]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
            #[cfg_attr(feature = "defmt", derive(defmt::Format))]
            pub struct #id {
                #(#fields)*
            }

            impl #id {
                /// The runtime's C struct name.
                pub const C_NAME: &'static str = #c_name;
                /// `sizeof` in bytes.
                pub const SIZE: usize = #size;
                /// Field names, types and offsets.
                pub const FIELDS: &'static [crate::manifest::LayoutField] = &[#(#infos)*];
            }

            ::static_assertions::assert_eq_size!(#id, [u8; #size]);
            #(#asserts)*
        }
    }

    fn key_rows(&self, tier: &str, obj: &str, prefix: &str, out: &mut Vec<TokenStream>, depth: usize) {
        if depth > 16 {
            return;
        }
        let o = &self.objects[obj];
        for (k, ty) in o.obj.keys.iter().zip(&o.tys) {
            let key = k.key.get_ref();
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            let aliases: Vec<&String> = k.aliases.iter().map(|a| a.get_ref()).collect();
            let json_type = ty.json_name();
            let required = k.required;
            let default = k.default.as_ref().map(|d| d.get_ref().to_string()).unwrap_or_default();
            let field = format!("{obj}.{}", k.field.get_ref());
            let map = k.map.as_ref().map(|m| m.get_ref().clone()).unwrap_or_default();
            let missing = k.missing.clone().unwrap_or_default();
            let doc = k.doc.trim().replace('\n', " ");
            let notes = k.notes.trim().replace('\n', " ");
            out.push(quote! {
                crate::manifest::ConsumedKey {
                    tier: #tier, path: #path, aliases: &[#(#aliases),*], json_type: #json_type,
                    required: #required, default: #default, field: #field, map: #map,
                    missing: #missing, doc: #doc, notes: #notes,
                },
            });
            match ty {
                Ty::Object(n) => self.key_rows(tier, n, &path, out, depth + 1),
                Ty::Map(n, _) => self.key_rows(tier, n, &format!("{path}.<name>"), out, depth + 1),
                Ty::EachMap(n) => self.key_rows(tier, n, &format!("{path}.<name>"), out, depth + 1),
                Ty::Each(t) | Ty::EachOrName(t, _) => {
                    if let Ty::Object(n) = t.as_ref() {
                        self.key_rows(tier, n, &format!("{path}[]"), out, depth + 1);
                    }
                }
                Ty::Array(t, _) => {
                    if let Ty::Object(n) = t.as_ref() {
                        self.key_rows(tier, n, &format!("{path}[]"), out, depth + 1);
                    }
                }
                _ => {}
            }
        }
    }

    /// The `Entry` enum: one variant per streamed key, borrowing the element just read.
    fn gen_entry(&self) -> TokenStream {
        let mut variants = Vec::new();
        let mut names = Vec::new();
        let mut visits = Vec::new();
        let mut markers = Vec::new();
        let mut marker_impls = Vec::new();
        for (variant, obj, i) in &self.entries {
            let o = &self.objects[obj];
            let (k, ty) = (&o.obj.keys[*i], &o.tys[*i]);
            let v = format_ident!("{}", variant);
            let t = self.entry_type(ty).unwrap_or_default();
            let d = doc_attrs(&format!("An element of `{obj}` key `{}`: {}", k.key.get_ref(), k.doc.trim()));
            variants.push(quote!(#d #v(&'a #t),));
            let key = k.key.get_ref();
            names.push(quote!(Entry::#v(_) => #key,));
            visits.push(quote!(Entry::#v(e) => crate::manifest::fields::VisitValue::visit_value(*e, ::core::option::Option::None, v),));
            let md = doc_attrs(&format!("The elements of `{obj}` key `{key}`: handed on as [`Entry::{variant}`]."));
            markers.push(quote! {
                #md
                #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
                #[cfg_attr(feature = "defmt", derive(defmt::Format))]
                pub struct #v;
            });
            marker_impls.push(quote! {
                impl crate::manifest::rt::EntryOf<#t> for streamed::#v {
                    fn entry(value: &#t) -> Entry<'_> {
                        Entry::#v(value)
                    }
                }
            });
        }
        quote! {
            /// One element of a streamed key (`each<..>`, `each_map<..>` in `schema/`), handed to a
            /// [`Visitor`](crate::manifest::Visitor) as soon as it is read. The borrow ends with
            /// the call: the next element is read into the same slot.
            #[derive(Debug, Clone, Copy)]
            pub enum Entry<'a> {
                #(#variants)*
            }

            impl Entry<'_> {
                /// The JSON key this element belongs to.
                pub const fn key(&self) -> &'static str {
                    match self {
                        #(#names)*
                    }
                }

                /// Hands the element's values to `v` (as a value with no key: an object opens
                /// and closes around its fields).
                pub fn visit<V: crate::manifest::fields::FieldVisitor + ?Sized>(&self, v: &mut V) {
                    match self {
                        #(#visits)*
                    }
                }
            }

            /// One marker per streamed key, named as its [`Entry`] variant: the parameter of the
            /// key's `Each` / `EachMap` that says how its elements are handed on.
            pub mod streamed {
                #(#markers)*
            }

            #(#marker_impls)*
        }
    }

    /// Every generated item.
    /// Every item: [`Checked::generate_enums`] and [`Checked::generate_readers`].
    pub fn generate(&self) -> TokenStream {
        let mut out = self.generate_enums();
        out.extend(self.generate_readers());
        out
    }

    /// The discriminator enums alone: they name nothing of the crate, so they can be expanded
    /// in a leaf module that every layer may use (the device's `Arch` and `UsageClass`).
    pub fn generate_enums(&self) -> TokenStream {
        let mut out = TokenStream::new();
        for (_, e) in self.enums.values() {
            out.extend(self.gen_enum(e));
        }
        out
    }

    /// Everything but the enums: capacities, entries, layouts, objects and their readers, the
    /// key tables. Expanded inside `neff::manifest`, with the enums in scope.
    pub fn generate_readers(&self) -> TokenStream {
        let mut out = TokenStream::new();
        let caps: Vec<TokenStream> = self
            .caps
            .iter()
            .map(|(name, value, hosted, doc)| {
                let id = format_ident!("{}", name);
                let lit = Literal::usize_unsuffixed(*value);
                match hosted {
                    None => {
                        let d = doc_attrs(doc);
                        quote!(#d pub const #id: usize = #lit;)
                    }
                    Some(hosted) => {
                        let d = doc_attrs(&format!(
                            "{doc} {value} on bare-metal targets (the firmware profile), {hosted} on hosted ones."
                        ));
                        let host = Literal::usize_unsuffixed(*hosted);
                        quote! {
                            #d
                            #[cfg(target_os = "none")]
                            pub const #id: usize = #lit;
                            #d
                            #[cfg(not(target_os = "none"))]
                            pub const #id: usize = #host;
                        }
                    }
                }
            })
            .collect();
        let bare: Vec<TokenStream> = self
            .caps
            .iter()
            .map(|(name, value, _, _)| {
                let id = format_ident!("{}", name);
                let lit = Literal::usize_unsuffixed(*value);
                quote!(#[allow(missing_docs)] pub const #id: usize = #lit;)
            })
            .collect();
        out.extend(quote! {
            /// The capacities of the one slot each value is read into, from `schema/`: what grows
            /// with a model is streamed, so these bound single values (a name's bytes, a shape's
            /// dimensions), never counts of entries.
            pub mod cap {
                #(#caps)*
                /// Every capacity as a bare-metal target (the firmware profile) has it, on any
                /// target: what a host says a controller needs.
                pub mod bare_metal {
                    #(#bare)*
                }
            }
        });
        out.extend(self.gen_entry());
        for (_, l) in self.layouts.values() {
            out.extend(self.gen_layout(l));
        }
        for name in self.objects.keys() {
            out.extend(self.gen_object(name));
        }
        let mut rows = Vec::new();
        for f in self.files {
            let tier = self.tier_label(f);
            for o in f.toml.objects.iter().filter(|o| o.root) {
                self.key_rows(&tier, o.name.get_ref(), "", &mut rows, 0);
            }
        }
        let layouts: Vec<_> = self
            .layouts
            .keys()
            .map(|n| {
                let id = format_ident!("{}", n);
                quote!(crate::manifest::LayoutInfo { name: #n, c_name: #id::C_NAME, size: #id::SIZE, fields: #id::FIELDS },)
            })
            .collect();
        out.extend(quote! {
            /// Every key the loader consumes, generated from `schema/` (the root objects of each
            /// tier, walked depth-first in schema order).
            pub static CONSUMED_KEYS: &[crate::manifest::ConsumedKey] = &[#(#rows)*];
            /// Every published `#[repr(C)]` layout, generated from `schema/`.
            pub static LAYOUTS: &[crate::manifest::LayoutInfo] = &[#(#layouts)*];
        });
        out
    }
}

fn field_doc(k: &KeyToml, ty: &Ty) -> String {
    let mut d = k.doc.trim().to_string();
    let all: Vec<String> = std::iter::once(&k.key).chain(&k.aliases).map(|s| format!("`{}`", s.get_ref())).collect();
    d.push_str(&format!("\n\nJSON {} ({}", all.join(" or "), ty.json_name()));
    if k.required {
        d.push_str(", required");
    } else if let Some(v) = &k.default {
        d.push_str(&format!(", default {}", v.get_ref()));
    } else {
        d.push_str(", optional: `None` when absent");
    }
    if let Some(m) = &k.map {
        d.push_str(&format!(", selects a [`{}`]", m.get_ref()));
    }
    d.push_str(").");
    d
}
