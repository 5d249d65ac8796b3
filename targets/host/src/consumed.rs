//! Every consumed manifest value of a NEFF, by member and key path (`sg00/def.json`,
//! `var.q_ref.size` -> `262144`), for `neff diff`.
//!
//! The loader hands its observer each manifest's scalar keys (the generated document struct)
//! and, before them, the elements of its streamed keys ([`Entry`]), children before their
//! parent (a var's `list` ids, then the var; a node's `output_names`, then the node). The
//! generated structs derive `Debug`, and the generated [`CONSUMED_KEYS`] table says which JSON
//! key each struct field holds (`Var.size` is `var.<name>.size`), so this module needs no key
//! names of its own: it reads each value's `Debug` text back into a small tree, gives each
//! streamed field (`Each { count: n }` in the parent's text) its `n` children from the ones
//! that came before, and flattens the tree into key paths: a map entry by its name
//! (`var.q_ref`), an array element by its position (`dma[2].desc[0]`). An absent key is not
//! listed; `Some(x)` is `x`. Strings keep their quotes, as the JSON has them.
//!
//! What is kept is the consumed values themselves (as `info` keeps every var), nothing of the
//! skipped JSON.

use std::collections::{BTreeMap, HashMap};

use neff::loader::{Manifest, Observer};
use neff::manifest::{Entry, CONSUMED_KEYS};

/// A value as its `Debug` text shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string or char literal, quotes and escapes as `Debug` wrote them.
    Text(String),
    /// A number, a bool, a unit variant.
    Atom(String),
    /// `[a, b]`.
    List(Vec<Value>),
    /// `Name { field: value, .. }`.
    Struct(String, Vec<(String, Value)>),
    /// `Name(a, b)` (`Some(x)`, a tuple variant).
    Tuple(String, Vec<Value>),
    /// A streamed field: `Each { count }` (an array) or `EachMap { count }` (an object).
    Streamed {
        /// An object keyed by name.
        map: bool,
        /// Its elements, once given (`count` of them).
        items: Vec<Value>,
        /// How many there were.
        count: usize,
    },
}

/// Reads `Debug` text (as `#[derive(Debug)]` writes it) into a [`Value`].
pub fn parse(text: &str) -> Option<Value> {
    let mut p = Parser { s: text.as_bytes(), i: 0 };
    let v = p.value()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn text(&self, from: usize) -> String {
        String::from_utf8_lossy(self.s.get(from..self.i).unwrap_or_default()).into_owned()
    }

    fn quoted(&mut self, quote: u8) -> Option<Value> {
        let from = self.i;
        self.i += 1;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                c if c == quote => {
                    self.i += 1;
                    return Some(Value::Text(self.text(from)));
                }
                _ => self.i += 1,
            }
        }
    }

    /// Values up to `close`, separated by commas (a trailing `..` is skipped).
    fn seq(&mut self, close: u8) -> Option<Vec<Value>> {
        let mut out = Vec::new();
        loop {
            if self.eat(close) {
                return Some(out);
            }
            out.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(out);
            }
        }
    }

    fn ident(&mut self) -> String {
        let from = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' {
                self.i += 1;
            } else if self.s.get(self.i..self.i + 2) == Some(b"::") {
                self.i += 2;
            } else {
                break;
            }
        }
        self.text(from)
    }

    /// Skips a generic argument list `<...>` (which may hold `->`, `[T; N]`, nested `<>`).
    fn generics(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'<' => depth += 1,
                b'>' if self.i > 0 && self.s.get(self.i - 1) == Some(&b'-') => {}
                b'>' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.ws();
        match self.peek()? {
            b'"' => self.quoted(b'"'),
            b'\'' => self.quoted(b'\''),
            b'[' => {
                self.i += 1;
                self.seq(b']').map(Value::List)
            }
            b'(' => {
                self.i += 1;
                self.seq(b')').map(|v| Value::Tuple(String::new(), v))
            }
            b'.' if self.s.get(self.i..self.i + 2) == Some(b"..") => {
                self.i += 2;
                Some(Value::Atom("..".into()))
            }
            c if c == b'-' || c.is_ascii_digit() => {
                let from = self.i;
                self.i += 1;
                while self.peek().is_some_and(|c| !matches!(c, b',' | b')' | b']' | b'}') && !c.is_ascii_whitespace()) {
                    self.i += 1;
                }
                Some(Value::Atom(self.text(from)))
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let name = self.ident();
                if self.peek() == Some(b'<') {
                    self.generics()?;
                }
                let at = self.i;
                self.ws();
                match self.peek() {
                    Some(b'{') => {
                        self.i += 1;
                        self.fields(name)
                    }
                    Some(b'(') => {
                        self.i += 1;
                        self.seq(b')').map(|v| Value::Tuple(name, v))
                    }
                    _ => {
                        self.i = at;
                        Some(Value::Atom(name))
                    }
                }
            }
            _ => None,
        }
    }

    fn fields(&mut self, name: String) -> Option<Value> {
        let mut fields = Vec::new();
        loop {
            if self.eat(b'}') {
                break;
            }
            self.ws();
            if self.s.get(self.i..self.i + 2) == Some(b"..") {
                self.i += 2;
                continue;
            }
            let field = self.ident();
            if field.is_empty() || !self.eat(b':') {
                return None;
            }
            fields.push((field, self.value()?));
            if !self.eat(b',') {
                if !self.eat(b'}') {
                    return None;
                }
                break;
            }
        }
        if name == "Each" || name == "EachMap" {
            let count = fields.iter().find(|(f, _)| f == "count").and_then(|(_, v)| match v {
                Value::Atom(n) => n.parse().ok(),
                _ => None,
            })?;
            return Some(Value::Streamed { map: name == "EachMap", items: Vec::new(), count });
        }
        Some(Value::Struct(name, fields))
    }
}

/// The JSON key of each generated struct field (`"Var.size"` -> `"size"`), from
/// [`CONSUMED_KEYS`].
pub fn key_names() -> HashMap<&'static str, &'static str> {
    CONSUMED_KEYS
        .iter()
        .map(|k| {
            let last = k.path.rsplit('.').next().unwrap_or(k.path);
            (k.field, last.trim_end_matches("[]"))
        })
        .collect()
}

/// One streamed element waiting for its parent.
struct Pending {
    key: &'static str,
    value: Value,
}

/// The observer: every consumed value of every manifest member read.
#[derive(Default)]
pub struct ConsumedValues {
    keys: HashMap<&'static str, &'static str>,
    member: String,
    pending: Vec<Pending>,
    /// `member -> key path -> value`, for every manifest read (a later copy of a member
    /// replaces an earlier one).
    pub values: BTreeMap<String, BTreeMap<String, String>>,
    /// Values whose `Debug` text could not be read back (a bug to report, never silent).
    pub unreadable: Vec<String>,
}

impl ConsumedValues {
    /// An empty collection.
    pub fn new() -> Self {
        ConsumedValues { keys: key_names(), ..Default::default() }
    }

    fn start(&mut self, member: &str) {
        if self.member != member {
            self.member = member.to_owned();
            self.pending.clear();
        }
    }

    /// Gives each streamed field of `v` its children: the last `count` pending elements of
    /// its key, in their order.
    fn adopt(&mut self, v: &mut Value, owner: &str) {
        match v {
            Value::Struct(name, fields) => {
                let name = name.clone();
                // Children of later fields came later: take them from the end, last field first.
                for (field, value) in fields.iter_mut().rev() {
                    let key = self.keys.get(format!("{name}.{field}").as_str()).copied();
                    self.adopt_field(value, key, owner);
                }
            }
            Value::Tuple(_, items) | Value::List(items) => {
                for item in items.iter_mut().rev() {
                    self.adopt(item, owner);
                }
            }
            _ => {}
        }
    }

    fn adopt_field(&mut self, value: &mut Value, key: Option<&'static str>, owner: &str) {
        match value {
            Value::Streamed { items, count, .. } => {
                let Some(key) = key else { return };
                let mut taken = Vec::new();
                let mut i = self.pending.len();
                while taken.len() < *count && i > 0 {
                    i -= 1;
                    if self.pending[i].key == key {
                        taken.push(self.pending.remove(i).value);
                    }
                }
                if taken.len() < *count {
                    self.unreadable.push(format!("{owner}: {key}: {} of {count} elements seen", taken.len()));
                }
                taken.reverse();
                *items = taken;
            }
            Value::Tuple(name, inner) if name == "Some" => {
                for v in inner.iter_mut() {
                    self.adopt_field(v, key, owner);
                }
            }
            other => self.adopt(other, owner),
        }
    }

    fn flatten(&self, path: &str, value: &Value, out: &mut BTreeMap<String, String>) {
        let join = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
        match value {
            Value::Struct(name, fields) => {
                for (field, v) in fields {
                    // Fields that hold no key (a map entry's own name, markers) are not listed.
                    if let Some(key) = self.keys.get(format!("{name}.{field}").as_str()) {
                        self.flatten(&join(key), v, out);
                    }
                }
            }
            Value::Tuple(name, inner) if name == "Some" && inner.len() == 1 => self.flatten(path, &inner[0], out),
            Value::Atom(a) if a == "None" => {}
            Value::Streamed { map, items, count } => {
                if items.len() < *count || items.iter().all(|i| !matches!(i, Value::Struct(..))) {
                    // Scalars (ids, names, shapes): one value; elements not seen: their count.
                    let text = if items.len() < *count {
                        format!("({count} elements)")
                    } else {
                        render(&Value::List(items.clone()))
                    };
                    out.insert(path.to_owned(), text);
                    return;
                }
                for (i, item) in items.iter().enumerate() {
                    let at = match (map, item) {
                        (true, Value::Struct(_, f)) => {
                            let name =
                                f.iter().find(|(k, _)| k == "name").map_or_else(|| i.to_string(), |(_, v)| unquote(v));
                            format!("{path}.{name}")
                        }
                        _ => format!("{path}[{i}]"),
                    };
                    self.flatten(&at, item, out);
                }
            }
            Value::Tuple(name, inner) if name == "ArrayLen" => {
                out.insert(path.to_owned(), format!("({} elements)", inner.first().map(render).unwrap_or_default()));
            }
            other => {
                out.insert(path.to_owned(), render(other));
            }
        }
    }
}

/// A map entry's name without its quotes.
fn unquote(v: &Value) -> String {
    match v {
        Value::Text(t) => t.trim_matches('"').to_owned(),
        other => render(other),
    }
}

/// A value as one line of text (`Some` and `None` dropped).
pub fn render(v: &Value) -> String {
    match v {
        Value::Text(t) | Value::Atom(t) => t.clone(),
        Value::List(items) => format!("[{}]", items.iter().map(render).collect::<Vec<_>>().join(", ")),
        Value::Tuple(name, inner) if name == "Some" && inner.len() == 1 => render(&inner[0]),
        Value::Tuple(name, inner) => format!("{name}({})", inner.iter().map(render).collect::<Vec<_>>().join(", ")),
        Value::Struct(name, fields) => format!(
            "{name} {{ {} }}",
            fields.iter().map(|(k, v)| format!("{k}: {}", render(v))).collect::<Vec<_>>().join(", ")
        ),
        Value::Streamed { items, count, .. } => {
            if items.len() == *count {
                render(&Value::List(items.clone()))
            } else {
                format!("({count} elements)")
            }
        }
    }
}

impl Observer for ConsumedValues {
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.start(member);
        // `Variant(payload)`: the payload is the element.
        let value = match parse(&format!("{entry:?}")) {
            Some(Value::Tuple(_, mut inner)) if inner.len() == 1 => inner.remove(0),
            _ => {
                self.unreadable.push(format!("{member}: {}", entry.key()));
                return;
            }
        };
        let mut value = value;
        self.adopt(&mut value, member);
        self.pending.push(Pending { key: entry.key(), value });
    }

    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.start(member);
        let text = match manifest {
            Manifest::Neff(d) => format!("{d:?}"),
            Manifest::Kelf(d) => format!("{d:?}"),
            Manifest::Def(d, _) => format!("{d:?}"),
            Manifest::Engine(d) => format!("{d:?}"),
        };
        let Some(mut doc) = parse(&text) else {
            self.unreadable.push(member.to_owned());
            return;
        };
        self.adopt(&mut doc, member);
        let mut out = BTreeMap::new();
        self.flatten("", &doc, &mut out);
        self.pending.clear();
        self.values.insert(member.to_owned(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_text_reads_back() {
        let v = parse(r#"Var { name: "k\"ref", var_type: "input", var_id: 2, size: Some(262144), list: Some(Each { count: 4, _slot: PhantomData<fn() -> heapless::string::StringInner<usize, [u8; 256]>> }), shape: None, x: -1.5 }"#)
            .unwrap();
        let Value::Struct(name, fields) = v else { panic!("{v:?}") };
        assert_eq!(name, "Var");
        assert_eq!(fields[0], ("name".into(), Value::Text(r#""k\"ref""#.into())));
        assert_eq!(fields[3].1, Value::Tuple("Some".into(), vec![Value::Atom("262144".into())]));
        assert_eq!(
            fields[4].1,
            Value::Tuple("Some".into(), vec![Value::Streamed { map: false, items: vec![], count: 4 }])
        );
        assert_eq!(fields[5].1, Value::Atom("None".into()));
        assert_eq!(fields[6].1, Value::Atom("-1.5".into()));
        assert_eq!(
            parse("Head([3, 0, 0])"),
            Some(Value::Tuple(
                "Head".into(),
                vec![Value::List(vec![Value::Atom("3".into()), Value::Atom("0".into()), Value::Atom("0".into())])]
            ))
        );
        assert_eq!(
            parse("Foo { a: 1, .. }"),
            Some(Value::Struct("Foo".into(), vec![("a".into(), Value::Atom("1".into()))]))
        );
        assert_eq!(parse("Foo { a: 1"), None);
        assert_eq!(parse("\"open"), None);
    }

    #[test]
    fn every_struct_field_of_the_schema_has_a_key() {
        let keys = key_names();
        assert_eq!(keys.get("Var.size"), Some(&"size"));
        assert_eq!(keys.get("DefJson.vars"), Some(&"var"));
        assert_eq!(keys.get("DmaDesc.op"), Some(&"op"));
        assert_eq!(keys.get("NodeAttrs.kelf"), Some(&"kelf"));
        assert_eq!(keys.get("Var.name"), None, "a map entry's name is its key, not a field");
    }
}
