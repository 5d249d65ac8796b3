//! The C side of the schema: `targets/c/include/neff_schema.h`, the published `repr(C)` layouts and the
//! discriminator enums, as C declarations with `_Static_assert`s on every size and offset. The
//! same checked schema feeds the Rust items ([`crate::gen`]), so one line of `schema/` reaches
//! Rust, C and the docs. `scripts/gen-header.sh` writes the file (through the `c-header`
//! example); `--check` fails when the checked-in copy is stale.

use std::fmt::Write;

use crate::errors::screaming;
use crate::gen;
use crate::model::{EnumToml, LayoutToml, SchemaError, SchemaFile};

/// `UsageClass` -> `usage_class`, `InstrPe` -> `instr_pe`, `E4m3` -> `e4m3`: the words of
/// [`screaming`], in lower case.
fn snake(name: &str) -> String {
    screaming(name).to_ascii_lowercase()
}

/// `text` without its citations of the spec's sections (`§11.1`, ` (§7.7)`, `, §15.13`): the
/// header does not ship with the spec.
fn without_sections(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('§') {
        let after = &rest[at + '§'.len_utf8()..];
        let digits = after.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(after.len());
        // A trailing period ends the sentence, not the section number.
        let digits = if after[..digits].ends_with('.') { digits - 1 } else { digits };
        let mut head = &rest[..at];
        let mut tail = &after[digits..];
        if head.ends_with(" (") && tail.starts_with(')') {
            (head, tail) = (&head[..head.len() - 2], &tail[1..]);
        } else if head.ends_with(", ") {
            head = &head[..head.len() - 2];
        } else if head.ends_with('(') && tail.starts_with(')') {
            (head, tail) = (&head[..head.len() - 1], &tail[1..]);
        }
        out.push_str(head);
        rest = tail;
    }
    out.push_str(rest);
    // What a list of sections leaves: `(§7.5, §11.5)` -> ` ()`, `(§11.2, 19-entry map)` -> `(, `.
    out.replace(" ()", "").replace("(, ", "(")
}

/// A doc comment, with nothing in it that could close it early.
fn doc(out: &mut String, indent: &str, text: &str) {
    let text = without_sections(text.trim()).replace("*/", "* /").replace("/*", "/ *");
    if text.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in text.lines() {
        let _ = writeln!(out, "{indent} * {}", line.trim_end());
    }
    let _ = writeln!(out, "{indent} */");
}

/// The C type of a layout field's scalar type, or the C name of a nested layout.
fn c_scalar(t: &str, layouts: &[&LayoutToml]) -> Result<String, String> {
    Ok(match t.trim() {
        "u8" => "uint8_t".into(),
        "u16" => "uint16_t".into(),
        "u32" => "uint32_t".into(),
        "u64" => "uint64_t".into(),
        "i32" => "int32_t".into(),
        "i64" => "int64_t".into(),
        "bool" => "bool".into(),
        other => match layouts.iter().find(|l| l.name.get_ref() == other) {
            Some(l) => l.c_name.clone(),
            None => return Err(format!("layout field type `{other}` has no C form")),
        },
    })
}

/// One field declaration: `uint32_t shape[32];`. A 64-bit field is aligned to 8 bytes
/// explicitly (`NEFF_SCHEMA_ALIGN8`): i386 and some 32-bit ABIs align `uint64_t` to 4, and the
/// layouts are the runtime's on x86-64.
fn c_field(name: &str, ty: &str, layouts: &[&LayoutToml]) -> Result<String, String> {
    let align = |elem: &str| if matches!(elem.trim(), "u64" | "i64") { "NEFF_SCHEMA_ALIGN8 " } else { "" };
    if let Some(inner) = ty.trim().strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let (elem, n) = inner.split_once(';').ok_or_else(|| format!("bad array type `{ty}`"))?;
        return Ok(format!("{}{} {name}[{}];", align(elem), c_scalar(elem, layouts)?, n.trim()));
    }
    Ok(format!("{}{} {name};", align(ty), c_scalar(ty, layouts)?))
}

fn c_enum(out: &mut String, e: &EnumToml) {
    let name = format!("neff_{}", snake(e.name.get_ref()));
    let prefix = name.to_ascii_uppercase();
    doc(out, "", &format!("{}\n\nThe runtime's `{}` (schema `{}`).", e.doc, e.c_name, e.name.get_ref()));
    // 32 bits on every target, as neff.h's enums (cbindgen's form): arm-none-eabi-gcc sizes a
    // plain enum by its values (-fshort-enums), and these values are stored in uint32_t fields.
    let _ = writeln!(out, "enum {name}\n#if NEFF_SCHEMA_FIXED_ENUMS\n  : uint32_t\n#endif\n{{");
    for v in &e.variants {
        doc(out, "  ", &v.doc);
        let _ = writeln!(out, "  {prefix}_{} = {},", screaming(v.name.get_ref()), v.value);
    }
    let _ = writeln!(
        out,
        "}};\n#ifndef __cplusplus\n#if NEFF_SCHEMA_FIXED_ENUMS\ntypedef enum {name} {name};\n#else\n\
         typedef uint32_t {name};\n#endif\n#endif\n"
    );
}

fn c_layout(out: &mut String, l: &LayoutToml, layouts: &[&LayoutToml]) -> Result<(), String> {
    let c = &l.c_name;
    doc(out, "", &format!("{}\n\nThe runtime's `{c}` (schema `{}`), {} bytes.", l.doc, l.name.get_ref(), l.size));
    let _ = writeln!(out, "typedef struct {c} {{");
    for f in &l.fields {
        doc(out, "  ", &format!("{} (offset {}).", f.doc.trim_end_matches('.'), f.offset));
        let _ = writeln!(out, "  {}", c_field(f.name.get_ref(), f.ty.get_ref(), layouts)?);
    }
    let _ = writeln!(out, "}} {c};");
    let _ = writeln!(out, "NEFF_SCHEMA_ASSERT(sizeof({c}) == {}, \"sizeof({c})\");", l.size);
    for f in &l.fields {
        let fname = f.name.get_ref();
        let _ =
            writeln!(out, "NEFF_SCHEMA_ASSERT(offsetof({c}, {fname}) == {}, \"offsetof({c}, {fname})\");", f.offset);
    }
    out.push('\n');
    Ok(())
}

/// The whole header for `files` (checked first, as the Rust side checks them).
pub fn header(files: &[SchemaFile], kinds: &crate::kinds::Kinds) -> Result<String, SchemaError> {
    gen::check(files, kinds)?;
    let layouts: Vec<&LayoutToml> = files.iter().flat_map(|f| f.toml.layouts.iter()).collect();
    let mut out = String::from(
        "/* neff_schema.h: the discriminator enums and published repr(C) layouts of schema/.\n \
         *\n \
         * Generated from the TOML files of schema/ by scripts/gen-header.sh (macros/codegen, the\n \
         * generator of the Rust side): do not edit. Sizes and offsets are the runtime's on x86-64; the\n \
         * assertions below hold them on every target this header is compiled for. */\n\
         #ifndef NEFF_SCHEMA_H\n#define NEFF_SCHEMA_H\n\n\
         #include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n\
         /* C11 and C++11 assert with _Static_assert and static_assert; C99 with an array whose\n \
         * size is negative when the condition fails. */\n\
         #if defined(__cplusplus)\n#define NEFF_SCHEMA_ASSERT(cond, what) static_assert(cond, what)\n\
         #elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n\
         #define NEFF_SCHEMA_ASSERT(cond, what) _Static_assert(cond, what)\n\
         #else\n#define NEFF_SCHEMA_CAT_(a, b) a##b\n#define NEFF_SCHEMA_CAT(a, b) NEFF_SCHEMA_CAT_(a, b)\n\
         #define NEFF_SCHEMA_ASSERT(cond, what) \\\n  \
         typedef char NEFF_SCHEMA_CAT(neff_schema_assert_, __LINE__)[(cond) ? 1 : -1]\n#endif\n\n\
         /* 8-byte alignment for 64-bit fields, as on x86-64 (i386 aligns uint64_t to 4). */\n\
         #if defined(__cplusplus) && __cplusplus >= 201103L\n#define NEFF_SCHEMA_ALIGN8 alignas(8)\n\
         #elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n#define NEFF_SCHEMA_ALIGN8 _Alignas(8)\n\
         #elif defined(__GNUC__)\n#define NEFF_SCHEMA_ALIGN8 __attribute__((aligned(8)))\n\
         #elif defined(_MSC_VER)\n#define NEFF_SCHEMA_ALIGN8 __declspec(align(8))\n\
         #else\n#error \"neff_schema.h: no way to align a field to 8 bytes with this compiler\"\n#endif\n\n\
         /* Enums with a fixed 32-bit type where the language has them (C++11, C23); else their\n \
         * values in a uint32_t. */\n\
         #if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L)\n\
         #define NEFF_SCHEMA_FIXED_ENUMS 1\n#else\n#define NEFF_SCHEMA_FIXED_ENUMS 0\n#endif\n\n",
    );
    for f in files {
        for e in &f.toml.enums {
            c_enum(&mut out, e);
        }
    }
    // In declaration order: a nested layout is declared (in its file) before its user.
    let mut emitted: Vec<&str> = Vec::new();
    let mut pending: Vec<&LayoutToml> = layouts.clone();
    while !pending.is_empty() {
        let before = pending.len();
        let mut rest = Vec::new();
        for l in pending {
            let ready = l.fields.iter().all(|f| {
                let t = f.ty.get_ref();
                !layouts.iter().any(|o| o.name.get_ref() == t) || emitted.contains(&t.as_str())
            });
            if ready {
                c_layout(&mut out, l, &layouts).map_err(SchemaError)?;
                emitted.push(l.name.get_ref());
            } else {
                rest.push(l);
            }
        }
        if rest.len() == before {
            return Err(SchemaError("layouts nest in a cycle".into()));
        }
        pending = rest;
    }
    out.push_str("#endif /* NEFF_SCHEMA_H */\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::snake;

    #[test]
    fn names_become_snake_case() {
        assert_eq!(snake("UsageClass"), "usage_class");
        assert_eq!(snake("InstrPe"), "instr_pe");
        assert_eq!(snake("DmaRingIo"), "dma_ring_io");
        assert_eq!(snake("E4m3"), "e4m3");
        assert_eq!(snake("Fp8ConversionInfo"), "fp8_conversion_info");
        assert_eq!(snake("V2"), "v2");
        assert_eq!(snake("DGETable"), "dge_table");
    }
}
