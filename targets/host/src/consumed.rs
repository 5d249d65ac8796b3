//! Every consumed manifest value of a NEFF, by member and key path (`sg00/def.json`,
//! `var.q_ref.size` -> `262144`), for `neff diff`.
//!
//! The loader hands its observer each manifest's scalar keys (the generated document struct)
//! and, before them, the elements of its streamed keys ([`Entry`]), children before their
//! parent (a var's `list` ids, then the var; a node's `output_names`, then the node). Each
//! generated struct hands its values over typed, by JSON key, through its generated
//! `visit_fields` ([`FieldVisitor`]), so this module needs no key names of its own: it keeps
//! each value as a small tree, gives each streamed field (`Streamed { count: n }`) its `n`
//! children from the ones that came before, and flattens the tree into key paths: a map entry
//! by its name (`var.q_ref`), an array element by its position (`dma[2].desc[0]`). An absent
//! key is not listed, nor is a `present` key. Strings keep their quotes and escapes (as Rust's
//! `{:?}` writes them), a number is shown as an `f64`'s `{:?}` (`1.0`).
//!
//! What is kept is the consumed values themselves (as `info` keeps every var), nothing of the
//! skipped JSON.

use std::collections::BTreeMap;

use neff::loader::{Manifest, Observer};
use neff::manifest::{Entry, FieldValue, FieldVisitor};

/// A consumed value, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A value as one line of text (a number, a bool, a quoted string, `(n elements)` for a
    /// counted array).
    Leaf(String),
    /// A value that is not listed (a `present` key).
    Silent,
    /// An array's elements.
    Array(Vec<Node>),
    /// An object: its name in its parent (a map entry's), and its values by JSON key.
    Object {
        /// The entry's name, when it is an entry of an object keyed by name.
        name: Option<String>,
        /// Its values, by JSON key, in schema order.
        fields: Vec<(&'static str, Node)>,
    },
    /// A streamed key (`each<..>`, `each_map<..>`).
    Streamed {
        /// Its JSON key (which its elements were handed on under).
        key: Option<&'static str>,
        /// An object keyed by name.
        map: bool,
        /// Its elements, once given (`count` of them).
        items: Vec<Node>,
        /// How many there were.
        count: u64,
    },
}

impl Node {
    fn leaf(value: FieldValue<'_>, key: Option<&'static str>) -> Node {
        match value {
            FieldValue::Unsigned(n) => Node::Leaf(n.to_string()),
            FieldValue::Signed(n) => Node::Leaf(n.to_string()),
            FieldValue::Bool(b) => Node::Leaf(b.to_string()),
            FieldValue::Number(x) => Node::Leaf(format!("{:?}", x.value())),
            FieldValue::Str(s) => Node::Leaf(format!("{s:?}")),
            FieldValue::Other(t) => Node::Leaf(format!("<{t:?}>")),
            FieldValue::Count(n) => Node::Leaf(format!("({n} elements)")),
            FieldValue::Present { .. } => Node::Silent,
            FieldValue::Streamed { count, map } => Node::Streamed { key, map, items: Vec::new(), count },
        }
    }
}

/// Builds a [`Node`] from a generated struct's visitor calls.
#[derive(Default)]
pub struct Builder {
    /// The objects and arrays open, each with its key.
    open: Vec<(Option<&'static str>, Node)>,
    /// The value built, once the outermost one closed (or was a scalar).
    done: Option<Node>,
}

impl Builder {
    /// The value built (an object whose fields the caller visited inside `open`/`close`, or
    /// an element).
    pub fn finish(self) -> Option<Node> {
        self.done
    }

    fn add(&mut self, key: Option<&'static str>, node: Node) {
        match self.open.last_mut() {
            None => self.done = Some(node),
            Some((_, Node::Object { fields, .. })) => fields.push((key.unwrap_or_default(), node)),
            Some((_, Node::Array(items))) => items.push(node),
            Some(_) => {}
        }
    }
}

impl FieldVisitor for Builder {
    fn value(&mut self, key: Option<&'static str>, value: FieldValue<'_>) {
        self.add(key, Node::leaf(value, key));
    }

    fn open(&mut self, key: Option<&'static str>, array: bool) {
        let node = if array { Node::Array(Vec::new()) } else { Node::Object { name: None, fields: Vec::new() } };
        self.open.push((key, node));
    }

    fn close(&mut self) {
        if let Some((key, node)) = self.open.pop() {
            self.add(key, node);
        }
    }

    fn name(&mut self, name: &str) {
        if let Some((_, Node::Object { name: slot, .. })) = self.open.last_mut() {
            *slot = Some(name.to_owned());
        }
    }
}

/// A manifest document (its fields visited by `visit`) as a [`Node`].
pub fn document(visit: impl FnOnce(&mut Builder)) -> Node {
    let mut b = Builder::default();
    b.open(None, false);
    visit(&mut b);
    b.close();
    b.finish().unwrap_or(Node::Silent)
}

/// A streamed element as a [`Node`].
pub fn element(entry: &Entry<'_>) -> Node {
    let mut b = Builder::default();
    entry.visit(&mut b);
    b.finish().unwrap_or(Node::Silent)
}

/// One streamed element waiting for its parent.
struct Pending {
    key: &'static str,
    value: Node,
}

/// The observer: every consumed value of every manifest member read.
#[derive(Default)]
pub struct ConsumedValues {
    member: String,
    pending: Vec<Pending>,
    /// `member -> key path -> value`, for every manifest read (a later copy of a member
    /// replaces an earlier one).
    pub values: BTreeMap<String, BTreeMap<String, String>>,
    /// Streamed keys whose elements were not all handed on before their parent (a bug to
    /// report, never silent).
    pub incomplete: Vec<String>,
}

impl ConsumedValues {
    /// An empty collection.
    pub fn new() -> Self {
        ConsumedValues::default()
    }

    fn start(&mut self, member: &str) {
        if self.member != member {
            self.member = member.to_owned();
            self.pending.clear();
        }
    }

    /// Gives each streamed field of `v` its children: the last `count` pending elements of
    /// its key, in their order. Children of later fields came later: they are taken from the
    /// end, last field first.
    fn adopt(&mut self, v: &mut Node, owner: &str) {
        match v {
            Node::Object { fields, .. } => {
                for (_, value) in fields.iter_mut().rev() {
                    self.adopt(value, owner);
                }
            }
            Node::Array(items) => {
                for item in items.iter_mut().rev() {
                    self.adopt(item, owner);
                }
            }
            Node::Streamed { key: Some(key), items, count, .. } => {
                let key = *key;
                let mut taken = Vec::new();
                let mut i = self.pending.len();
                while (taken.len() as u64) < *count && i > 0 {
                    i -= 1;
                    if self.pending[i].key == key {
                        taken.push(self.pending.remove(i).value);
                    }
                }
                if (taken.len() as u64) < *count {
                    self.incomplete.push(format!("{owner}: {key}: {} of {count} elements seen", taken.len()));
                }
                taken.reverse();
                *items = taken;
            }
            _ => {}
        }
    }
}

fn flatten(path: &str, value: &Node, out: &mut BTreeMap<String, String>) {
    let join = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match value {
        Node::Object { fields, .. } => {
            for (key, v) in fields {
                flatten(&join(key), v, out);
            }
        }
        Node::Silent => {}
        Node::Streamed { map, items, count, .. } => {
            let seen = items.len() as u64;
            if seen < *count || items.iter().all(|i| !matches!(i, Node::Object { .. })) {
                // Scalars (ids, names, shapes): one value; elements not seen: their count.
                let text = if seen < *count { format!("({count} elements)") } else { render_list(items) };
                out.insert(path.to_owned(), text);
                return;
            }
            for (i, item) in items.iter().enumerate() {
                let at = match (map, item) {
                    (true, Node::Object { name: Some(name), .. }) => {
                        // The name as its `{:?}` shows it, without the quotes.
                        format!("{path}.{}", format!("{name:?}").trim_matches('"'))
                    }
                    (true, _) => format!("{path}.{i}"),
                    _ => format!("{path}[{i}]"),
                };
                flatten(&at, item, out);
            }
        }
        other => {
            out.insert(path.to_owned(), render(other));
        }
    }
}

fn render_list(items: &[Node]) -> String {
    format!("[{}]", items.iter().map(render).collect::<Vec<_>>().join(", "))
}

/// A value as one line of text.
pub fn render(v: &Node) -> String {
    match v {
        Node::Leaf(t) => t.clone(),
        Node::Silent => String::new(),
        Node::Array(items) => render_list(items),
        Node::Object { fields, .. } => {
            format!(
                "{{ {} }}",
                fields.iter().map(|(k, v)| format!("{k}: {}", render(v))).collect::<Vec<_>>().join(", ")
            )
        }
        Node::Streamed { items, count, .. } => {
            if items.len() as u64 == *count {
                render_list(items)
            } else {
                format!("({count} elements)")
            }
        }
    }
}

impl Observer for ConsumedValues {
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.start(member);
        let mut value = element(entry);
        self.adopt(&mut value, member);
        self.pending.push(Pending { key: entry.key(), value });
    }

    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.start(member);
        let mut doc = match manifest {
            Manifest::Neff(d) => document(|b| d.visit_fields(b)),
            Manifest::Kelf(d) => document(|b| d.visit_fields(b)),
            Manifest::Def(d, _) => document(|b| d.visit_fields(b)),
            Manifest::Engine(d) => document(|b| d.visit_fields(b)),
        };
        self.adopt(&mut doc, member);
        let mut out = BTreeMap::new();
        flatten("", &doc, &mut out);
        self.pending.clear();
        self.values.insert(member.to_owned(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neff::manifest::{DmaBlock, DmaDesc, Var};

    fn leaf(s: &str) -> Node {
        Node::Leaf(s.into())
    }

    #[test]
    fn a_generated_struct_hands_over_its_values_typed_by_json_key() {
        let mut var = Var::default();
        var.name.push_str("k\"ref").unwrap();
        var.var_type.push_str("input").unwrap();
        var.size = Some(262144);
        let Node::Object { name, fields } = element(&Entry::Var(&var)) else { panic!() };
        assert_eq!(name.as_deref(), Some("k\"ref"));
        let get = |k: &str| fields.iter().find(|(f, _)| *f == k).map(|(_, v)| v.clone());
        assert_eq!(get("type"), Some(leaf(r#""input""#)));
        assert_eq!(get("size"), Some(leaf("262144")));
        assert_eq!(get("fabric_path"), None, "an absent optional key is not visited");
        assert!(fields.iter().all(|(k, _)| *k != "name"), "a map entry's name is its key, not a field");
    }

    #[test]
    fn streamed_children_are_adopted_by_their_parent_and_listed_by_position() {
        let mut consumed = ConsumedValues::new();
        let mut desc = DmaDesc::default();
        for _ in 0..2 {
            consumed.entry("m", &Entry::DmaDesc(&desc));
            desc.op.push_str("x").unwrap();
        }
        // A block of 2 descs takes the 2 pending ones, in order.
        let mut block = DmaBlock::default();
        let mut descs = neff::manifest::rt::Each::default();
        descs.count = 2;
        block.desc = Some(descs);
        let mut block_node = element(&Entry::DmaBlock(&block));
        consumed.adopt(&mut block_node, "m");
        assert!(consumed.incomplete.is_empty(), "{:?}", consumed.incomplete);
        let mut out = BTreeMap::new();
        flatten("dma[0]", &block_node, &mut out);
        assert!(consumed.pending.is_empty());
        assert_eq!(out.get("dma[0].desc[0].op").map(String::as_str), Some(r#""copy""#), "{out:?}");
        assert_eq!(out.get("dma[0].desc[1].op").map(String::as_str), Some(r#""copyx""#), "{out:?}");
        // One more than was handed on: the key shows its count, and the bug is reported.
        let mut short = Node::Streamed { key: Some("desc"), map: false, items: Vec::new(), count: 1 };
        consumed.adopt(&mut short, "m");
        assert_eq!(consumed.incomplete, ["m: desc: 0 of 1 elements seen"]);
        let mut out = BTreeMap::new();
        flatten("desc", &short, &mut out);
        assert_eq!(out["desc"], "(1 elements)");
    }

    #[test]
    fn scalars_arrays_and_counts_render_as_one_line() {
        assert_eq!(render(&Node::Array(vec![leaf("1"), leaf("2")])), "[1, 2]");
        assert_eq!(Node::leaf(FieldValue::Count(3), None), leaf("(3 elements)"));
        assert_eq!(Node::leaf(FieldValue::Str("a\"b"), None), leaf(r#""a\"b""#));
        assert_eq!(Node::leaf(FieldValue::Signed(-1), None), leaf("-1"));
        assert_eq!(Node::leaf(FieldValue::Present { is_false: false }, None), Node::Silent);
        let empty = Node::Streamed { key: Some("var"), map: true, items: Vec::new(), count: 0 };
        let mut out = BTreeMap::new();
        flatten("var", &empty, &mut out);
        assert_eq!(out["var"], "[]");
    }
}
