//! Tier 1, `neff.json`: the TVM graph the runtime reads its I/O tensors and KELF node from.
//!
//! # Wire format
//!
//! `{"nodes": [...], "arg_nodes": [i...], "heads": [[node, index, version]...],
//! "node_row_ptr": [eid...], "attrs": {"dltype": ["list_str", [...]], "shape": ["list_shape",
//! [[...]...]]}}`. The entry id (EID) of output `i` of node `n` is `node_row_ptr[n] + i`, and
//! `attrs.dltype[eid]` / `attrs.shape[eid]` describe it. Inputs are the `arg_nodes` in order
//! (named by the node's `name`); outputs are the `heads` in order, named by the node-level
//! `output_names[i]` (or the node's name), one entry per distinct name: a later head with the
//! same name replaces the values but keeps the first position (the runtime keys its map by
//! name). The KELF node is the first node whose `attrs.func_name` is `"__kelf"`, or, where
//! there is none, whose `op` is `"__kelf"`; its `attrs.kelf` names the tier-2 member.
//!
//! # Streaming
//!
//! Every array is streamed ([`Entry::Node`], [`Entry::ArgNode`], ...): a graph with thousands of
//! tensors needs no table here. The document's own checks ([`NeffJson`]'s [`Document`] impl)
//! keep O(1) state: which node is the KELF node. Deriving the I/O tensors joins five arrays that
//! can come in any key order, so [`IoJoin`] records them compactly in the caller's [`Arena`]
//! and, at the end of the document, checks every reference (`EID out of bounds`, ...) and hands
//! each tensor on; the scratch is then released.

use embedded_io::BufRead;

use super::{
    semantic, warn, Document, Entry, EntryAt, IoNodeInfo, ManifestError, ManifestWarning, NeffJson, Node, NodeAttrs,
    NrtDtype, Visitor, MAX_DIMS,
};
use crate::arena::{Arena, List, Reader, Record, Span, Writer, NIL};
use crate::error::{ErrorKind, Text};
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

/// The marker of the KELF node, in `attrs.func_name` (or `op`, as a fallback).
const KELF_MARKER: &str = "__kelf";

/// How a node is marked as a KELF node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KelfMark {
    /// `attrs.func_name == "__kelf"` (real files).
    FuncName,
    /// `op == "__kelf"` (producer-RE documents; used only where no node has the func name).
    Op,
}

/// Whether `node` is a KELF node, and how.
pub fn kelf_mark(node: &Node) -> Option<KelfMark> {
    if node.attrs.as_ref().and_then(|a| a.func_name.as_ref()).is_some_and(|f| f == KELF_MARKER) {
        Some(KelfMark::FuncName)
    } else if node.op.as_ref().is_some_and(|o| o == KELF_MARKER) {
        Some(KelfMark::Op)
    } else {
        None
    }
}

/// The `attrs.kelf` member a node names.
pub fn kelf_member(node: &Node) -> Option<&str> {
    node.attrs.as_ref()?.kelf.as_deref()
}

/// What the checks of one `neff.json` learned: the KELF node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NeffFacts {
    /// Nodes read.
    pub nodes: u64,
    /// Index of the first node marked by `attrs.func_name`, and whether it names a member.
    pub first_by_func: Option<(u64, bool)>,
    /// Index of the first node marked by `op`, and whether it names a member.
    pub first_by_op: Option<(u64, bool)>,
}

impl NeffFacts {
    /// The mark that selects the KELF nodes: the func name where any node has it, else `op`.
    pub fn kelf_mark(&self) -> Option<KelfMark> {
        match (self.first_by_func, self.first_by_op) {
            (Some(_), _) => Some(KelfMark::FuncName),
            (None, Some(_)) => Some(KelfMark::Op),
            (None, None) => None,
        }
    }

    fn see(&mut self, node: &Node) {
        let slot = match kelf_mark(node) {
            Some(KelfMark::FuncName) => &mut self.first_by_func,
            Some(KelfMark::Op) => &mut self.first_by_op,
            None => {
                self.nodes = self.nodes.saturating_add(1);
                return;
            }
        };
        if slot.is_none() {
            *slot = Some((self.nodes, kelf_member(node).is_some()));
        }
        self.nodes = self.nodes.saturating_add(1);
    }
}

/// Writes `prefix[index].key.key...` into a short path buffer (context only).
fn indexed(prefix: &str, index: u64, keys: &[&str]) -> heapless::String<64> {
    let mut s = heapless::String::new();
    let _ = core::fmt::write(&mut s, format_args!("{prefix}[{index}]"));
    for k in keys {
        let _ = core::fmt::write(&mut s, format_args!(".{k}"));
    }
    s
}

/// Checks each node as it passes, then hands it on.
struct Checks<'v> {
    facts: NeffFacts,
    inner: &'v mut dyn Visitor,
}

impl Visitor for Checks<'_> {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), Error> {
        if let Entry::Node(node) = entry {
            self.facts.see(node);
        }
        self.inner.entry(entry, at)
    }
}

impl Document for NeffJson {
    type Facts = NeffFacts;

    fn parse_into<R: BufRead, const S: usize, const D: u16>(
        &mut self,
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<NeffFacts, Error> {
        let mut checks = Checks { facts: NeffFacts::default(), inner: visitor };
        self.read_document(tok, src, member, &mut checks)?;
        let facts = checks.facts;
        let end = tok.offset();
        let fail = |path: &str, e: ManifestError| semantic(Stage::NeffJson, member, end, path, e);
        let (index, named, by_op) = match (facts.first_by_func, facts.first_by_op) {
            (Some((i, named)), _) => (i, named, false),
            (None, Some((i, named))) => (i, named, true),
            (None, None) => return Err(fail(Self::KEY_NODES, ManifestError::NoKelfNode)),
        };
        if !named {
            let path = indexed(Self::KEY_NODES, index, &[Node::KEY_ATTRS, NodeAttrs::KEY_KELF]);
            return Err(fail(&path, ManifestError::KelfAttributeMissing));
        }
        if by_op {
            let path = indexed(Self::KEY_NODES, index, &[Node::KEY_OP]);
            warn(sink, Stage::NeffJson, member, end, &path, ManifestWarning::KelfNodeByOp);
        }
        Ok(facts)
    }
}

/// Whether a tensor is a graph input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IoKind {
    /// An `arg_nodes` entry.
    Input,
    /// A `heads` entry (one per distinct name).
    Output,
}

/// One input or output tensor of the graph, borrowed from the join's scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoTensor<'a> {
    /// Input or output.
    pub kind: IoKind,
    /// Its position among the inputs, or among the distinct outputs.
    pub index: u32,
    /// Tensor name.
    pub name: &'a str,
    /// The dtype string of `attrs.dltype`.
    pub dtype: &'a str,
    /// Its `nrt_dtype_t` ([`NrtDtype::Unknown`] for strings the runtime does not know).
    pub nrt_dtype: NrtDtype,
    /// The shape of `attrs.shape`.
    pub shape: &'a [u32],
    /// Bytes: product of the shape times the element size.
    pub size: u64,
}

impl IoTensor<'_> {
    /// The runtime's `io_node_info_t` for this tensor.
    pub fn info(&self) -> IoNodeInfo {
        let mut info = IoNodeInfo {
            size: self.size,
            dtype: self.nrt_dtype.value(),
            ndim: self.shape.len() as u32,
            ..IoNodeInfo::default()
        };
        for (dst, &d) in info.shape.iter_mut().zip(self.shape.iter()) {
            *dst = d;
        }
        info
    }
}

/// A node of the join: its name and its output names (`outputs` names from index
/// `first_output` of the output-name list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NodeRec {
    name: Span,
    first_output: u32,
    outputs: u32,
}

impl Record for NodeRec {
    const SIZE: usize = 16;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).span(self.name).u32(self.first_output).u32(self.outputs);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        NodeRec { name: r.span(), first_output: r.u32(), outputs: r.u32() }
    }
}

/// A string of the join (an output name, a dtype).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StrRec(Span);

impl Record for StrRec {
    const SIZE: usize = Span::ENCODED;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).span(self.0);
    }
    fn decode(bytes: &[u8]) -> Self {
        StrRec(Reader::new(bytes).span())
    }
}

/// A number of the join (an `arg_nodes` or `node_row_ptr` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NumRec(u64);

impl Record for NumRec {
    const SIZE: usize = 8;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).u64(self.0);
    }
    fn decode(bytes: &[u8]) -> Self {
        NumRec(Reader::new(bytes).u64())
    }
}

/// A `heads` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeadRec {
    node: u64,
    output: u64,
}

impl Record for HeadRec {
    const SIZE: usize = 16;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).u64(self.node).u64(self.output);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        HeadRec { node: r.u64(), output: r.u64() }
    }
}

/// The positions of a list's records, laid out densely once the list is complete, so that
/// the join finds element `i` in O(1).
struct Dense {
    at: u32,
    len: u32,
}

impl Dense {
    fn build<T: Record>(list: &List<T>, arena: &mut Arena<'_>) -> Result<Dense, ErrorKind> {
        let len = list.len();
        let at = arena.alloc_top((len as usize).saturating_mul(4))?;
        let mut pos = list.first();
        let mut i: u32 = 0;
        while pos != NIL && i < len {
            arena.write(at.saturating_add(i.saturating_mul(4)), &pos.to_le_bytes());
            i = i.saturating_add(1);
            pos = List::<T>::next_after(arena, pos);
        }
        Ok(Dense { at, len })
    }

    fn get(&self, arena: &Arena<'_>, i: u64) -> Option<u32> {
        let i = u32::try_from(i).ok().filter(|&i| i < self.len)?;
        Some(arena.u32_at(self.at.saturating_add(i.saturating_mul(4))))
    }
}

/// Derives the I/O tensors of a `neff.json` from its streamed arrays: feed it every entry of
/// the document ([`IoJoin::see`]), then [`IoJoin::finish`]. Scratch lives in the arena from
/// [`IoJoin::new`]'s mark on, in the arena's top (scratch) part, and is released by `finish`:
/// what the caller keeps in the bottom part meanwhile stays.
#[derive(Debug)]
pub struct IoJoin {
    mark: usize,
    nodes: List<NodeRec>,
    outputs: List<StrRec>,
    pending_outputs: u32,
    args: List<NumRec>,
    heads: List<HeadRec>,
    rows: List<NumRec>,
    dtypes: List<StrRec>,
    shapes: List<StrRec>,
    error: Option<ErrorKind>,
}

impl IoJoin {
    /// A join whose scratch starts at the arena's current end.
    pub fn new(arena: &Arena<'_>) -> Self {
        Self {
            mark: arena.mark_top(),
            nodes: List::new(),
            outputs: List::new(),
            pending_outputs: 0,
            args: List::new(),
            heads: List::new(),
            rows: List::new(),
            dtypes: List::new(),
            shapes: List::new(),
            error: None,
        }
    }

    /// Records one entry of the document (entries of other tiers are ignored). A full arena
    /// is remembered and returned by [`IoJoin::finish`].
    pub fn see(&mut self, arena: &mut Arena<'_>, entry: &Entry<'_>) -> Result<(), ErrorKind> {
        let r = self.record(arena, entry);
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
        r
    }

    fn record(&mut self, arena: &mut Arena<'_>, entry: &Entry<'_>) -> Result<(), ErrorKind> {
        match *entry {
            Entry::OutputName(name) => {
                let span = arena.push_str_top(name)?;
                self.outputs.push_top(arena, &StrRec(span))?;
                self.pending_outputs = self.pending_outputs.saturating_add(1);
            }
            Entry::Node(node) => {
                let name = arena.push_str_top(node.name.as_deref().unwrap_or(""))?;
                // A node's output names stream before the node itself.
                let rec = NodeRec {
                    name,
                    first_output: self.outputs.len().saturating_sub(self.pending_outputs),
                    outputs: self.pending_outputs,
                };
                self.pending_outputs = 0;
                self.nodes.push_top(arena, &rec)?;
            }
            Entry::ArgNode(&n) => {
                self.args.push_top(arena, &NumRec(n))?;
            }
            Entry::Head(h) => {
                let node = h.first().copied().unwrap_or(0);
                let output = h.get(1).copied().unwrap_or(0);
                self.heads.push_top(arena, &HeadRec { node, output })?;
            }
            Entry::RowPtr(&r) => {
                self.rows.push_top(arena, &NumRec(r))?;
            }
            Entry::Dltype(d) => {
                let span = arena.push_str_top(d)?;
                self.dtypes.push_top(arena, &StrRec(span))?;
            }
            Entry::Shape(shape) => {
                let at = arena.alloc_top(shape.len().saturating_mul(4))?;
                for (i, d) in shape.iter().enumerate() {
                    arena.write(at.saturating_add((i as u32).saturating_mul(4)), &d.to_le_bytes());
                }
                self.shapes.push_top(arena, &StrRec(Span { at, len: (shape.len() as u32).saturating_mul(4) }))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks every reference and calls `f` with each input (in `arg_nodes` order), then each
    /// distinct output (in `heads` order; a later head with the same name replaces the values).
    /// Unknown dtypes are warned once per tensor. The scratch is released whatever the outcome.
    pub fn finish(
        self,
        arena: &mut Arena<'_>,
        member: &str,
        end: u64,
        sink: &mut dyn WarningSink,
        f: &mut dyn FnMut(&IoTensor<'_>),
    ) -> Result<(), Error> {
        let mark = self.mark;
        let result = self.run(arena, member, end, sink, f);
        arena.release_top(mark);
        result
    }

    fn run(
        self,
        arena: &mut Arena<'_>,
        member: &str,
        end: u64,
        sink: &mut dyn WarningSink,
        f: &mut dyn FnMut(&IoTensor<'_>),
    ) -> Result<(), Error> {
        let at_file = |k: ErrorKind| Error::in_member(Stage::NeffJson, member, end, k);
        if let Some(e) = self.error {
            return Err(at_file(e));
        }
        let nodes = Dense::build(&self.nodes, arena).map_err(at_file)?;
        let outputs = Dense::build(&self.outputs, arena).map_err(at_file)?;
        let rows = Dense::build(&self.rows, arena).map_err(at_file)?;
        let dtypes = Dense::build(&self.dtypes, arena).map_err(at_file)?;
        let shapes = Dense::build(&self.shapes, arena).map_err(at_file)?;
        let join = Join { arena, nodes, outputs, rows, dtypes, shapes, node_list: &self.nodes };
        let fail = |path: &str, e: ManifestError| semantic(Stage::NeffJson, member, end, path, e);
        let mut shape_buf = [0u32; MAX_DIMS as usize];
        for (i, (_, arg)) in self.args.iter(join.arena).enumerate() {
            let path = indexed(NeffJson::KEY_ARG_NODES, i as u64, &[]);
            let node = join.node(arg.0).ok_or_else(|| fail(&path, ManifestError::InputNodeOutOfBounds(arg.0)))?;
            let eid = join.row(arg.0).map_err(|e| fail(&path, e))?;
            let mut t = join
                .tensor(IoKind::Input, join.arena.str(node.name), eid, &mut shape_buf)
                .map_err(|e| fail(&path, e))?;
            t.index = i as u32;
            warn_dtype(&t, sink, member, end);
            f(&t);
        }
        // Outputs: one per distinct name, at the position of its first head, with the values of
        // its last. Found by looking around for heads of the same name: no table of names.
        let mut emitted: u32 = 0;
        for (i, (_, head)) in self.heads.iter(join.arena).enumerate() {
            let path = indexed(NeffJson::KEY_HEADS, i as u64, &[]);
            let (name, eid) = join.head(&head).map_err(|e| fail(&path, e))?;
            // Checked for every head, as the runtime resolves each one.
            join.tensor(IoKind::Output, name, eid, &mut shape_buf).map_err(|e| fail(&path, e))?;
            let earlier = self.heads.iter(join.arena).take(i).any(|(_, h)| join.head(&h).is_ok_and(|(n, _)| n == name));
            if earlier {
                continue;
            }
            let last = self
                .heads
                .iter(join.arena)
                .skip(i)
                .filter_map(|(_, h)| join.head(&h).ok())
                .filter(|(n, _)| *n == name)
                .last()
                .map_or(eid, |(_, e)| e);
            let mut t = join.tensor(IoKind::Output, name, last, &mut shape_buf).map_err(|e| fail(&path, e))?;
            t.index = emitted;
            emitted = emitted.saturating_add(1);
            warn_dtype(&t, sink, member, end);
            f(&t);
        }
        Ok(())
    }
}

fn warn_dtype(t: &IoTensor<'_>, sink: &mut dyn WarningSink, member: &str, end: u64) {
    if t.nrt_dtype == NrtDtype::Unknown {
        let mut path: heapless::String<32> = heapless::String::new();
        let _ = core::fmt::write(&mut path, format_args!("{}.{}", NeffJson::KEY_ATTRS, super::GraphAttrs::KEY_DLTYPE));
        let w = crate::Warning::in_member(
            Stage::NeffJson,
            member,
            end,
            crate::WarningKind::Manifest(ManifestWarning::UnknownDtype(Text::new(t.dtype))),
        )
        .with_key_path(&path);
        sink.warn(&w);
    }
}

/// The dense tables of a finished join.
struct Join<'j, 'b> {
    arena: &'j mut Arena<'b>,
    nodes: Dense,
    outputs: Dense,
    rows: Dense,
    dtypes: Dense,
    shapes: Dense,
    node_list: &'j List<NodeRec>,
}

impl Join<'_, '_> {
    fn node(&self, id: u64) -> Option<NodeRec> {
        self.nodes.get(self.arena, id).map(|pos| self.node_list.get(self.arena, pos))
    }

    fn row(&self, node: u64) -> Result<u64, ManifestError> {
        let pos = self.rows.get(self.arena, node).ok_or(ManifestError::RowPtrOutOfBounds(node))?;
        Ok(self.arena.u64_at(pos.saturating_add(4)))
    }

    fn str_at(&self, table: &Dense, i: u64) -> Option<Span> {
        table.get(self.arena, i).map(|pos| self.arena.span_at(pos.saturating_add(4)))
    }

    /// The name and EID of a head.
    fn head(&self, head: &HeadRec) -> Result<(&str, u64), ManifestError> {
        let node = self.node(head.node).ok_or(ManifestError::OutputNodeOutOfBounds(head.node))?;
        let eid = self.row(head.node)?.checked_add(head.output).ok_or(ManifestError::EidOutOfBounds(u64::MAX))?;
        let from_outputs = (head.output < u64::from(node.outputs))
            .then(|| self.str_at(&self.outputs, u64::from(node.first_output).saturating_add(head.output)))
            .flatten();
        let name = from_outputs.map_or_else(|| self.arena.str(node.name), |s| self.arena.str(s));
        Ok((name, eid))
    }

    fn tensor<'s>(
        &'s self,
        kind: IoKind,
        name: &'s str,
        eid: u64,
        shape_buf: &'s mut [u32; MAX_DIMS as usize],
    ) -> Result<IoTensor<'s>, ManifestError> {
        let dtype = self.str_at(&self.dtypes, eid).ok_or(ManifestError::EidOutOfBounds(eid))?;
        let shape = self.str_at(&self.shapes, eid).ok_or(ManifestError::EidOutOfBounds(eid))?;
        let dims = (shape.len / 4) as usize;
        if dims as u64 > MAX_DIMS {
            return Err(ManifestError::TooManyDimensions(dims as u64));
        }
        for (i, d) in shape_buf.iter_mut().take(dims).enumerate() {
            *d = self.arena.u32_at(shape.at.saturating_add((i as u32).saturating_mul(4)));
        }
        let dtype = self.arena.str(dtype);
        let nrt_dtype = NrtDtype::from_json(dtype).unwrap_or(NrtDtype::Unknown);
        let shape = shape_buf.get(..dims).unwrap_or(&[]);
        let size = shape
            .iter()
            .try_fold(nrt_dtype.element_size(), |acc, &d| acc.checked_mul(u64::from(d)))
            .ok_or(ManifestError::SizeOverflow)?;
        Ok(IoTensor { kind, index: 0, name, dtype, nrt_dtype, shape, size })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    extern crate std;
    use std::string::{String, ToString};
    use std::vec::Vec;

    use super::*;
    use crate::error::IgnoreWarnings;

    /// `(kind, name, dtype, shape, size)` of every tensor, and the KELF members named.
    type Io = Vec<(IoKind, String, String, Vec<u32>, u64)>;

    fn parse(doc: &str) -> Result<(Io, Vec<String>), Error> {
        let mut tok = Tokenizer::<256, 64>::new();
        let mut src = doc.as_bytes();
        let mut buf = [0u8; 4096];
        let mut arena = Arena::new(&mut buf);
        let mut join = IoJoin::new(&arena);
        let mut kelfs = Vec::new();
        let mut visit = |e: Entry<'_>, _: &EntryAt<'_>| {
            if let Entry::Node(n) = e {
                if kelf_mark(n) == Some(KelfMark::FuncName) {
                    kelfs.push(kelf_member(n).unwrap_or("").to_string());
                }
            }
            join.see(&mut arena, &e).map_err(|k| Error::at_file(Stage::NeffJson, 0, k))
        };
        NeffJson::parse(&mut tok, &mut src, "neff.json", &mut IgnoreWarnings, &mut visit)?;
        let mut io = Vec::new();
        join.finish(&mut arena, "neff.json", 0, &mut IgnoreWarnings, &mut |t| {
            io.push((t.kind, t.name.to_string(), t.dtype.to_string(), t.shape.to_vec(), t.size))
        })?;
        assert_eq!(arena.used(), 0, "the join releases its scratch");
        Ok((io, kelfs))
    }

    const GOOD: &str = r#"{"nodes":[{"op":"null","name":"x","inputs":[],"output_names":["x"]},
        {"op":"tvm_op","name":"k","attrs":{"func_name":"__kelf","kelf":"kelf-0.json"},"output_names":["o","o"]}],
        "arg_nodes":[0],"heads":[[1,0,0],[1,1,0]],"node_row_ptr":[0,1,3],
        "attrs":{"dltype":["list_str",["float16","float32","int8"]],"shape":["list_shape",[[2,3],[4],[5,5]]]}}"#;

    #[test]
    fn io_table_merges_outputs_by_name_keeping_first_position() {
        let (io, kelfs) = parse(GOOD).unwrap();
        assert_eq!(io.len(), 2);
        assert_eq!(io[0], (IoKind::Input, "x".into(), "float16".into(), std::vec![2, 3], 12));
        // The second head (eid 2, int8 [5,5]) replaced the first one's values.
        assert_eq!(io[1], (IoKind::Output, "o".into(), "int8".into(), std::vec![5, 5], 25));
        assert_eq!(kelfs, ["kelf-0.json"]);
    }

    #[test]
    fn key_order_does_not_matter() {
        let reordered = r#"{"attrs":{"shape":["list_shape",[[2,3],[4],[5,5]]],"dltype":["list_str",["float16","float32","int8"]]},
            "node_row_ptr":[0,1,3],"heads":[[1,0,0]],"arg_nodes":[0],
            "nodes":[{"op":"null","name":"x"},{"name":"k","attrs":{"func_name":"__kelf","kelf":"kelf-0.json"},"output_names":["o","p"]}]}"#;
        let (io, _) = parse(reordered).unwrap();
        assert_eq!(io[1], (IoKind::Output, "o".into(), "float32".into(), std::vec![4], 16));
    }

    #[test]
    fn eid_past_the_tables_is_the_runtime_error() {
        let bad = GOOD.replace("[0,1,3]", "[0,5,7]");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::EidOutOfBounds(5)));
        assert_eq!(e.key_path.as_str(), "heads[0]");
        assert_eq!(e.kind.to_string(), "EID 5 out of bounds for dtypes/shapes");
    }

    #[test]
    fn missing_kelf_node_and_attribute_are_the_runtime_errors() {
        let none = GOOD.replace("__kelf", "other");
        assert_eq!(parse(&none).unwrap_err().kind, ErrorKind::Manifest(ManifestError::NoKelfNode));
        let unnamed = GOOD.replace(r#","kelf":"kelf-0.json""#, "");
        let e = parse(&unnamed).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::KelfAttributeMissing));
        assert_eq!(e.key_path.as_str(), "nodes[1].attrs.kelf");
    }

    #[test]
    fn a_full_arena_is_an_error_not_a_truncation() {
        let mut tok = Tokenizer::<256, 64>::new();
        let mut src = GOOD.as_bytes();
        let mut buf = [0u8; 40];
        let mut arena = Arena::new(&mut buf);
        let mut join = IoJoin::new(&arena);
        let mut visit = |e: Entry<'_>, at: &EntryAt<'_>| join.see(&mut arena, &e).map_err(|k| at.error(k));
        let e = NeffJson::parse(&mut tok, &mut src, "neff.json", &mut IgnoreWarnings, &mut visit).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::ArenaFull { capacity: 40, .. }), "{e:?}");
    }
}
