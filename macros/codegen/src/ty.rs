//! Type expressions of consumed keys.
//!
//! ```text
//! ty   := scalar | "string<" cap ">" | "array<" ty "," cap ">" | "map<" Object "," cap ">"
//!       | "each<" ty ">" | "each_map<" Object ">" | "count" | "present" | "tagged<" tag "," ty ">"
//!       | "string_or_other<" cap ">" | "each_or_name<" ty "," cap ">"
//!       | Object
//! scalar := u8 | u16 | u32 | u64 | i64 | bool | f64
//! cap  := CAPACITY_NAME | integer
//! ```
//!
//! `map<O, CAP>` is a JSON object keyed by name whose values are `O` objects (the name goes to
//! `O`'s `key_field`), stored whole. `each<T>` is an array of any length and `each_map<O>` an
//! object keyed by name of any size: both are parsed one element at a time into a single slot,
//! and every element is handed to the reader's visitor as the key's `entry` variant, so memory
//! does not grow with the document. `count` is an array of anything whose elements are
//! validated and counted. `tagged<list_str, T>` is TVM's typed list `["list_str", T]`.

/// A capacity: a const parameter or a literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cap {
    /// A const generic parameter name.
    Param(String),
    /// A fixed number.
    Lit(usize),
}

/// Scalar JSON types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `i64`
    I64,
    /// `bool`
    Bool,
    /// `f64`
    F64,
}

impl Scalar {
    /// The Rust type name.
    pub fn rust(self) -> &'static str {
        match self {
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::I64 => "i64",
            Scalar::Bool => "bool",
            Scalar::F64 => "f64",
        }
    }
}

/// A resolved type expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// A number or a bool.
    Scalar(Scalar),
    /// A string of at most `Cap` bytes.
    Str(Cap),
    /// A string of at most `Cap` bytes, or any other value (skipped, its type kept): for a key
    /// whose type matters only on some elements (`attrs.kelf`, on the KELF node alone).
    StrOrOther(Cap),
    /// An array.
    Array(Box<Ty>, Cap),
    /// An object keyed by name.
    Map(String, Cap),
    /// An array of any length, streamed one element at a time.
    Each(Box<Ty>),
    /// An [`Ty::Each`] array, or a string of at most `Cap` bytes naming the member that holds
    /// it.
    EachOrName(Box<Ty>, Cap),
    /// An object keyed by name of any size, streamed one entry at a time.
    EachMap(String),
    /// An array whose elements are only counted.
    Count,
    /// Any value: only its presence (and whether it is `false`) is kept.
    Present,
    /// A TVM typed list.
    Tagged(String, Box<Ty>),
    /// A nested object.
    Object(String),
}

impl Ty {
    /// Parses a type expression.
    pub fn parse(s: &str) -> Result<Ty, String> {
        let tokens = lex(s)?;
        let mut p = Parser { tokens: &tokens, pos: 0 };
        let ty = p.ty()?;
        if p.pos != tokens.len() {
            return Err(format!("unexpected `{}` after the type", tokens[p.pos]));
        }
        Ok(ty)
    }

    /// A short JSON type name for the key table.
    pub fn json_name(&self) -> String {
        match self {
            Ty::Scalar(Scalar::Bool) => "bool".into(),
            Ty::Scalar(Scalar::F64) => "number".into(),
            Ty::Scalar(Scalar::I64) => "integer".into(),
            Ty::Scalar(_) => "unsigned integer".into(),
            Ty::Str(_) => "string".into(),
            Ty::StrOrOther(_) => "string (other types kept as such)".into(),
            Ty::Array(t, _) => format!("array of {}", t.json_name()),
            Ty::Map(o, _) => format!("object of name -> {o}"),
            Ty::Each(t) => match t.as_ref() {
                Ty::Object(o) => format!("array of {o}"),
                other => format!("array of {}", other.json_name()),
            },
            Ty::EachOrName(t, _) => format!("{}, or a member name", Ty::Each(t.clone()).json_name()),
            Ty::EachMap(o) => format!("object of name -> {o}"),
            Ty::Count => "array (counted)".into(),
            Ty::Present => "any (presence)".into(),
            Ty::Tagged(tag, t) => format!("[\"{tag}\", {}]", t.json_name()),
            Ty::Object(o) => format!("object {o}"),
        }
    }

    /// The capacities this type uses directly (not through nested objects).
    pub fn caps(&self, out: &mut Vec<String>) {
        match self {
            Ty::Str(Cap::Param(c)) | Ty::StrOrOther(Cap::Param(c)) | Ty::Map(_, Cap::Param(c)) => out.push(c.clone()),
            Ty::Array(t, c) => {
                if let Cap::Param(c) = c {
                    out.push(c.clone());
                }
                t.caps(out);
            }
            Ty::Tagged(_, t) | Ty::Each(t) => t.caps(out),
            Ty::EachOrName(t, c) => {
                if let Cap::Param(c) = c {
                    out.push(c.clone());
                }
                t.caps(out);
            }
            _ => {}
        }
    }

    /// The objects this type refers to.
    pub fn objects(&self, out: &mut Vec<String>) {
        match self {
            Ty::Map(o, _) | Ty::EachMap(o) | Ty::Object(o) => out.push(o.clone()),
            Ty::Array(t, _) | Ty::Tagged(_, t) | Ty::Each(t) | Ty::EachOrName(t, _) => t.objects(out),
            _ => {}
        }
    }
}

fn lex(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if matches!(c, '<' | '>' | ',') {
            out.push(c.to_string());
            chars.next();
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    word.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(word);
        } else {
            return Err(format!("unexpected character `{c}` in type expression"));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [String],
    pos: usize,
}

impl Parser<'_> {
    fn next(&mut self) -> Result<&str, String> {
        let t = self.tokens.get(self.pos).ok_or("unexpected end of type expression")?;
        self.pos += 1;
        Ok(t)
    }

    fn expect(&mut self, want: &str) -> Result<(), String> {
        let got = self.next()?;
        if got == want {
            Ok(())
        } else {
            Err(format!("expected `{want}`, found `{got}`"))
        }
    }

    fn word(&mut self) -> Result<String, String> {
        let w = self.next()?.to_string();
        if matches!(w.as_str(), "<" | ">" | ",") {
            return Err(format!("expected a name, found `{w}`"));
        }
        Ok(w)
    }

    fn cap(&mut self) -> Result<Cap, String> {
        let w = self.word()?;
        if let Ok(n) = w.parse::<usize>() {
            return Ok(Cap::Lit(n));
        }
        if w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
            Ok(Cap::Param(w))
        } else {
            Err(format!("capacity `{w}` must be an UPPER_CASE name or a number"))
        }
    }

    fn ty(&mut self) -> Result<Ty, String> {
        let w = self.word()?;
        let scalar = match w.as_str() {
            "u8" => Some(Scalar::U8),
            "u16" => Some(Scalar::U16),
            "u32" => Some(Scalar::U32),
            "u64" => Some(Scalar::U64),
            "i64" => Some(Scalar::I64),
            "bool" => Some(Scalar::Bool),
            "f64" => Some(Scalar::F64),
            _ => None,
        };
        if let Some(s) = scalar {
            return Ok(Ty::Scalar(s));
        }
        match w.as_str() {
            "string" => {
                self.expect("<")?;
                let c = self.cap()?;
                self.expect(">")?;
                Ok(Ty::Str(c))
            }
            "string_or_other" => {
                self.expect("<")?;
                let c = self.cap()?;
                self.expect(">")?;
                Ok(Ty::StrOrOther(c))
            }
            "array" => {
                self.expect("<")?;
                let t = self.ty()?;
                self.expect(",")?;
                let c = self.cap()?;
                self.expect(">")?;
                Ok(Ty::Array(Box::new(t), c))
            }
            "map" => {
                self.expect("<")?;
                let o = self.object_name()?;
                self.expect(",")?;
                let c = self.cap()?;
                self.expect(">")?;
                Ok(Ty::Map(o, c))
            }
            "each" => {
                self.expect("<")?;
                let t = self.ty()?;
                self.expect(">")?;
                Ok(Ty::Each(Box::new(t)))
            }
            "each_or_name" => {
                self.expect("<")?;
                let t = self.ty()?;
                self.expect(",")?;
                let c = self.cap()?;
                self.expect(">")?;
                Ok(Ty::EachOrName(Box::new(t), c))
            }
            "each_map" => {
                self.expect("<")?;
                let o = self.object_name()?;
                self.expect(">")?;
                Ok(Ty::EachMap(o))
            }
            "count" => Ok(Ty::Count),
            "present" => Ok(Ty::Present),
            "tagged" => {
                self.expect("<")?;
                let tag = self.word()?;
                self.expect(",")?;
                let t = self.ty()?;
                self.expect(">")?;
                Ok(Ty::Tagged(tag, Box::new(t)))
            }
            _ if w.starts_with(|c: char| c.is_ascii_uppercase()) => Ok(Ty::Object(w)),
            _ => Err(format!("unknown type `{w}` (expected u8, u16, u32, u64, i64, bool, f64, string<..>, array<..>, map<..>, each<..>, each_or_name<..>, each_map<..>, count, present, tagged<..> string_or_other<..> or an Object name)")),
        }
    }

    fn object_name(&mut self) -> Result<String, String> {
        let w = self.word()?;
        if w.starts_with(|c: char| c.is_ascii_uppercase()) {
            Ok(w)
        } else {
            Err(format!("expected an Object name, found `{w}`"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_expressions() {
        assert_eq!(
            Ty::parse("tagged<list_shape, array<array<u32, DIMS>, EIDS>>").unwrap(),
            Ty::Tagged(
                "list_shape".into(),
                Box::new(Ty::Array(
                    Box::new(Ty::Array(Box::new(Ty::Scalar(Scalar::U32)), Cap::Param("DIMS".into()))),
                    Cap::Param("EIDS".into())
                ))
            )
        );
        assert_eq!(Ty::parse("array<u64, 3>").unwrap(), Ty::Array(Box::new(Ty::Scalar(Scalar::U64)), Cap::Lit(3)));
        assert_eq!(Ty::parse("map<Var, VARS>").unwrap(), Ty::Map("Var".into(), Cap::Param("VARS".into())));
        assert_eq!(Ty::parse("each_map<Var>").unwrap(), Ty::EachMap("Var".into()));
        assert_eq!(
            Ty::parse("each_or_name<UcodeLib, FILE_NAME>").unwrap(),
            Ty::EachOrName(Box::new(Ty::Object("UcodeLib".into())), Cap::Param("FILE_NAME".into()))
        );
        assert_eq!(Ty::parse("each_or_name<UcodeLib, 8>").unwrap().json_name(), "array of UcodeLib, or a member name");
        assert_eq!(
            Ty::parse("each<array<u32, 32>>").unwrap(),
            Ty::Each(Box::new(Ty::Array(Box::new(Ty::Scalar(Scalar::U32)), Cap::Lit(32))))
        );
    }

    #[test]
    fn rejects_bad_expressions() {
        assert!(Ty::parse("array<u64>").unwrap_err().contains("expected `,`"));
        assert!(Ty::parse("strin<NAME>").unwrap_err().contains("unknown type `strin`"));
        assert!(Ty::parse("string<name>").unwrap_err().contains("UPPER_CASE"));
        assert!(Ty::parse("u64 u64").unwrap_err().contains("unexpected"));
    }
}
