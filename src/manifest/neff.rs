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
//!
//! **Arithmetic.** What comes from the document (EIDs, node and output indices, dimensions,
//! sizes) goes through checked arithmetic ending in a [`ManifestError`] or an arena error;
//! counts of logged items saturate (each takes at least one byte of the arena), and a lookup
//! steps down its remaining count with `checked_sub`, ending where it reaches zero.
#![deny(clippy::arithmetic_side_effects)]

#[cfg(not(target_os = "none"))]
use core::cell::Cell;

use embedded_io::BufRead;

use super::DocFault;
use super::{
    semantic, warn, Document, Entry, EntryAt, IoNodeInfo, ManifestError, ManifestWarning, NeffJson, Node, NodeAttrs,
    NrtDtype, Visitor, MAX_DIMS,
};
use crate::arena::{Arena, Span};
use crate::error::{push_all, push_decimal, ErrorKind, Text};
use crate::json::Tokenizer;
use crate::varlog::{push_head, push_text, push_varint, Cursor};
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
    node.attrs.as_ref()?.kelf.as_ref()?.as_str()
}

/// The type of a node's `attrs.kelf` when it is not a string.
fn kelf_not_string(node: &Node) -> Option<super::JsonType> {
    node.attrs.as_ref()?.kelf.as_ref()?.other
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
    /// Index of the first node marked by `attrs.func_name` that names no member.
    pub unnamed_by_func: Option<u64>,
    /// Index of the first node marked by `op` that names no member.
    pub unnamed_by_op: Option<u64>,
    /// The first KELF node (either mark) whose `attrs.kelf` is not a string, and its type.
    pub kelf_not_string: Option<(u64, super::JsonType)>,
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
        let (slot, unnamed) = match kelf_mark(node) {
            Some(KelfMark::FuncName) => (&mut self.first_by_func, &mut self.unnamed_by_func),
            Some(KelfMark::Op) => (&mut self.first_by_op, &mut self.unnamed_by_op),
            None => {
                self.nodes = self.nodes.saturating_add(1);
                return;
            }
        };
        let named = kelf_member(node).is_some();
        if let (None, Some(found)) = (self.kelf_not_string, kelf_not_string(node)) {
            self.kelf_not_string = Some((self.nodes, found));
        }
        if slot.is_none() {
            *slot = Some((self.nodes, named));
        }
        if !named && unnamed.is_none() {
            *unnamed = Some(self.nodes);
        }
        self.nodes = self.nodes.saturating_add(1);
    }
}

/// Writes `prefix[index].key.key...` into a short path buffer (context only).
fn indexed(prefix: &str, index: u64, keys: &[&str]) -> heapless::String<64> {
    let mut s = heapless::String::new();
    let _ = push_all(&mut s, &[prefix, "["])
        && push_decimal(&mut s, index)
        && s.push(']').is_ok()
        && keys.iter().all(|k| push_all(&mut s, &[".", k]));
    s
}

/// Checks each node as it passes, then hands it on.
struct Checks<'v> {
    facts: NeffFacts,
    inner: &'v mut dyn Visitor,
}

impl Visitor for Checks<'_> {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        if let Entry::Node(node) = entry {
            self.facts.see(node);
        }
        self.inner.entry(entry, at)
    }

    fn failed(&mut self, member: &str, path: Option<&str>, key: Option<&'static str>) {
        self.inner.failed(member, path, key);
    }
}

impl Document for NeffJson {
    type Facts = NeffFacts;

    fn parse_into<R: BufRead>(
        &mut self,
        tok: &mut Tokenizer<'_>,
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
        let (index, by_op, unnamed) = match (facts.first_by_func, facts.first_by_op) {
            (Some((i, _)), _) => (i, false, facts.unnamed_by_func),
            (None, Some((i, _))) => (i, true, facts.unnamed_by_op),
            (None, None) => return Err(fail(Self::KEY_NODES, ManifestError::NoKelfNode)),
        };
        // The KELF node's `attrs.kelf` is a string; another node's is not read.
        if let Some((node, found)) = facts.kelf_not_string {
            let path = indexed(Self::KEY_NODES, node, &[Node::KEY_ATTRS, NodeAttrs::KEY_KELF]);
            return Err(fail(&path, ManifestError::KelfAttributeNotString { found }));
        }
        // Every KELF node must name its member, not only the first (spec §5.2).
        if let Some(unnamed) = unnamed {
            let path = indexed(Self::KEY_NODES, unnamed, &[Node::KEY_ATTRS, NodeAttrs::KEY_KELF]);
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

/// Item tags of the join's log: the low three bits of an item's first varint.
mod tag {
    /// A node's output name (they stream before their node): length, then the bytes.
    pub const OUTPUT: u8 = 0;
    /// A node's name: twice its length plus one (0: the node has no `name`), then the bytes.
    pub const NODE: u8 = 1;
    /// An `arg_nodes` entry: the node id.
    pub const ARG: u8 = 2;
    /// A `heads` entry: the node id, then a varint of the output index.
    pub const HEAD: u8 = 3;
    /// A `node_row_ptr` entry: the EID.
    pub const ROW: u8 = 4;
    /// An `attrs.dltype` entry: `nrt_dtype_t + 1` when the string is the dtype's own name,
    /// else 0 followed by the length and the bytes of the string.
    pub const DTYPE: u8 = 5;
    /// An `attrs.shape` entry: the dimension count, then a varint per dimension.
    pub const SHAPE: u8 = 6;
}

/// Bytes the join notes of each head while checking them: its name's span and its EID (a
/// `u32`: an EID that resolved indexes the log's entries, which the arena's `u32` offsets
/// bound). 1,300 heads take 13 KB: the larger part of a training NEFF's join.
const HEAD_NOTE: usize = Span::ENCODED + 4;

/// Items between two entries of a skip table (a lookup walks at most this many of its kind).
const SKIP: u64 = 64;

/// One item of the log, as read back.
#[derive(Debug, Clone, Copy)]
enum Item {
    Output(Span),
    Node(Span, bool),
    Arg(u64),
    Head {
        node: u64,
        output: u64,
    },
    Row(u64),
    Dtype {
        code: u32,
        name: Span,
    },
    /// The dimension count and the cursor position of the first dimension.
    Shape {
        dims: u64,
        at: u32,
    },
}

/// The next item of the join's log, or `None` at its end.
fn next_item(c: &mut Cursor<'_, '_>) -> Option<Item> {
    let (item_tag, value) = c.head()?;
    Some(match item_tag {
        tag::OUTPUT => Item::Output(c.text(value)?),
        tag::NODE => Item::Node(c.text(value / 2)?, value % 2 == 1),
        tag::ARG => Item::Arg(value),
        tag::HEAD => Item::Head { node: value, output: c.u64()? },
        tag::ROW => Item::Row(value),
        tag::DTYPE => {
            let code = u32::try_from(value).ok()?;
            let name = if code == 0 {
                let len = c.u64()?;
                c.text(len)?
            } else {
                Span::EMPTY
            };
            Item::Dtype { code, name }
        }
        tag::SHAPE => {
            let at = c.pos();
            for _ in 0..value {
                c.varint()?;
            }
            Item::Shape { dims: value, at }
        }
        _ => return None,
    })
}

fn tag_of(item: &Item) -> u8 {
    match item {
        Item::Output(_) => tag::OUTPUT,
        Item::Node(..) => tag::NODE,
        Item::Arg(_) => tag::ARG,
        Item::Head { .. } => tag::HEAD,
        Item::Row(_) => tag::ROW,
        Item::Dtype { .. } => tag::DTYPE,
        Item::Shape { .. } => tag::SHAPE,
    }
}

/// Buckets of [`Join::distinct`]'s name filter (`name-tables`): 4 KiB of stack.
#[cfg(feature = "name-tables")]
const NAME_BUCKETS: usize = 4096;

/// The bucket of a name: FNV-1a, folded to [`NAME_BUCKETS`].
#[cfg(feature = "name-tables")]
fn name_bucket(name: &[u8]) -> usize {
    let hash = name.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    (hash ^ (hash >> 16)) as usize % NAME_BUCKETS
}

/// Every [`SKIP`]th position of one kind of item, laid out once the log is complete, so that
/// a lookup by index walks a bounded stretch whatever the document's size.
#[derive(Debug, Clone, Copy, Default)]
struct Skip {
    at: u32,
    /// Items of this kind in the log.
    count: u64,
}

impl Skip {
    fn entries(count: u64) -> usize {
        usize::try_from(count.div_ceil(SKIP)).unwrap_or(usize::MAX)
    }

    fn get(&self, arena: &Arena<'_>, k: u64) -> u32 {
        let off = u32::try_from(k).unwrap_or(u32::MAX).saturating_mul(4);
        arena.u32_at(self.at.saturating_add(off))
    }
}

/// Derives the I/O tensors of a `neff.json` from its streamed arrays: feed it every entry of
/// the document ([`IoJoin::see`]), then [`IoJoin::finish`].
///
/// The arrays can come in any key order (real files put `node_row_ptr` last), so nothing can
/// be joined before the end: the join logs what it needs as tagged varints and strings in the
/// arena's top (scratch) part, a few bytes per entry (`float16` is one byte, a 4-dimension
/// shape five). At the end, small skip tables make each lookup by index walk at most
/// `SKIP` items. The scratch is released by `finish`; what the caller keeps in the bottom
/// part meanwhile stays.
#[derive(Debug)]
pub struct IoJoin {
    mark: usize,
    error: Option<ErrorKind>,
}

impl IoJoin {
    /// A join whose scratch starts at the arena's current end.
    pub fn new(arena: &Arena<'_>) -> Self {
        Self { mark: arena.mark_top(), error: None }
    }

    /// Records one entry of the document (entries of other tiers are ignored). A full arena
    /// is remembered and returned by [`IoJoin::finish`].
    pub fn see(&mut self, arena: &mut Arena<'_>, entry: &Entry<'_>) -> Result<(), ErrorKind> {
        let r = Self::record(arena, entry);
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
        r
    }

    fn record(arena: &mut Arena<'_>, entry: &Entry<'_>) -> Result<(), ErrorKind> {
        match *entry {
            Entry::OutputName(name) => push_text(arena, tag::OUTPUT, name),
            Entry::Node(node) => {
                // The length is doubled and the low bit says whether the node had a name at all:
                // an input node without one is refused, one named "" is not.
                let name = node.name.as_deref();
                let len = name.map_or(0, |n| (n.len() as u64).saturating_mul(2).saturating_add(1));
                push_head(arena, tag::NODE, len)?;
                arena.push_str_top(name.unwrap_or("")).map(|_| ())
            }
            Entry::ArgNode(&n) => push_head(arena, tag::ARG, n),
            Entry::Head(h) => {
                push_head(arena, tag::HEAD, h.first().copied().unwrap_or(0))?;
                push_varint(arena, u128::from(h.get(1).copied().unwrap_or(0)))
            }
            Entry::RowPtr(&r) => push_head(arena, tag::ROW, r),
            Entry::Dltype(d) => match NrtDtype::from_json(d).filter(|t| t.as_str() == d.as_str()) {
                Some(t) => push_head(arena, tag::DTYPE, u64::from(t.value()).saturating_add(1)),
                None => {
                    push_head(arena, tag::DTYPE, 0)?;
                    push_varint(arena, d.len() as u128)?;
                    arena.push_str_top(d).map(|_| ())
                }
            },
            Entry::Shape(shape) => {
                push_head(arena, tag::SHAPE, shape.len() as u64)?;
                shape.iter().try_for_each(|&d| push_varint(arena, u128::from(d)))
            }
            _ => Ok(()),
        }
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
        let hi = u32::try_from(self.mark).unwrap_or(u32::MAX);
        let lo = u32::try_from(arena.mark_top()).unwrap_or(0);
        let skips = Join::build_skips(arena, hi, lo).map_err(at_file)?;
        let mut join = Join {
            arena,
            hi,
            lo,
            skips,
            #[cfg(not(target_os = "none"))]
            fingers: Cell::default(),
        };
        let fail = |path: &str, e: ManifestError| semantic(Stage::NeffJson, member, end, path, e);
        let mut shape_buf = [0u32; MAX_DIMS as usize];
        // Inputs: every `arg_nodes` entry is resolved and checked in order, and its name and EID
        // noted; then one tensor per distinct name, as libnrt's map keys them
        // (`inputs[name] = info`, seed §3: a later entry of a name replaces the earlier one's
        // values), at the position of the name's first entry.
        let args = join.skips.args;
        let mut n_args: u32 = 0;
        let mut pos = join.hi;
        while let Some((arg, next)) = join.next_arg(pos) {
            pos = next;
            let path = indexed(NeffJson::KEY_ARG_NODES, u64::from(n_args), &[]);
            let node = join.node(arg).ok_or_else(|| fail(&path, ManifestError::InputNodeOutOfBounds(arg)))?;
            if !node.named {
                // libnrt looks the input up by its node's name, which throws without one.
                let path = indexed(NeffJson::KEY_NODES, arg, &[Node::KEY_NAME]);
                return Err(fail(&path, ManifestError::InputWithoutName(arg)));
            }
            let eid = join.row(arg).map_err(|e| fail(&path, e))?;
            join.tensor(IoKind::Input, join.arena.str(node.name), eid, &mut shape_buf).map_err(|e| fail(&path, e))?;
            join.note(args, n_args, node.name, eid);
            n_args = n_args.saturating_add(1);
        }
        join.distinct(args, n_args, IoKind::Input, NeffJson::KEY_ARG_NODES, &mut |t| {
            warn_dtype(t, sink, member, end);
            f(t);
        })
        .map_err(|(path, e)| fail(&path, e))?;
        // Outputs: every head is resolved and checked in order, as the runtime resolves each
        // one, and its name and EID noted ([`HEAD_NOTE`] bytes a head). Then one tensor per
        // distinct name (`outputs[name] = info`), at the position of its first head, with the
        // values of its last.
        let table = join.skips.heads;
        let mut pos = join.hi;
        let mut i: u32 = 0;
        while let Some((head, next)) = join.next_head(pos) {
            pos = next;
            let path = indexed(NeffJson::KEY_HEADS, u64::from(i), &[]);
            let (name, eid) = join.head(head).map_err(|e| fail(&path, e))?;
            join.tensor(IoKind::Output, join.arena.str(name), eid, &mut shape_buf).map_err(|e| fail(&path, e))?;
            join.note(table, i, name, eid);
            i = i.saturating_add(1);
        }
        join.distinct(table, i, IoKind::Output, NeffJson::KEY_HEADS, &mut |t| {
            warn_dtype(t, sink, member, end);
            f(t);
        })
        .map_err(|(path, e)| fail(&path, e))
    }
}

fn warn_dtype(t: &IoTensor<'_>, sink: &mut dyn WarningSink, member: &str, end: u64) {
    if t.nrt_dtype == NrtDtype::Unknown {
        let mut path: heapless::String<32> = heapless::String::new();
        let _ = push_all(&mut path, &[NeffJson::KEY_ATTRS, ".", super::GraphAttrs::KEY_DLTYPE]);
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

/// A node found in the log: where its group (output names, then the node) starts, how many
/// output names it has, and its name.
#[derive(Debug, Clone, Copy)]
struct NodeView {
    group: u32,
    outputs: u64,
    name: Span,
    /// The node has a `name` key.
    named: bool,
}

/// The skip tables of a finished join, by kind.
#[derive(Debug, Clone, Copy, Default)]
struct Skips {
    /// Positions of every [`SKIP`]th node's group.
    nodes: Skip,
    rows: Skip,
    dtypes: Skip,
    shapes: Skip,
    /// Not a skip table: the name and EID of each head, noted while checking them.
    heads: Skip,
    /// Not a skip table: the name and EID of each input, noted the same way (in the heads'
    /// table, which the inputs are done with before the heads are noted).
    args: Skip,
}

/// A finished join: the log and its skip tables.
struct Join<'j, 'b> {
    arena: &'j mut Arena<'b>,
    hi: u32,
    lo: u32,
    skips: Skips,
    /// Where the last lookup of each kind found its item: nodes, rows, dtypes, shapes (a
    /// host's: a controller walks from the skip entries alone, its flash measured and its
    /// NEFFs' joins small).
    #[cfg(not(target_os = "none"))]
    fingers: Cell<[Finger; 4]>,
}

/// The last item a lookup of one kind found: its index and where its walk may start again.
/// The join looks tensors up in rising order (the inputs' EIDs, then the outputs'), so the
/// next lookup goes on from here: a step or two, not half a skip table's stride.
#[cfg(not(target_os = "none"))]
#[derive(Debug, Clone, Copy, Default)]
struct Finger {
    /// The index plus one (0: no lookup yet).
    next: u64,
    pos: u32,
}

#[cfg(not(target_os = "none"))]
impl Finger {
    /// Where to walk from for item `i`, and how many items of the kind to pass there: the
    /// finger, when it is at or before `i` and nearer than the skip entry (`i % SKIP` items
    /// before `i`).
    fn start(self, i: u64) -> Option<(u32, u64)> {
        let found = self.next.checked_sub(1)?;
        let left = i.checked_sub(found)?;
        (left < i % SKIP).then_some((self.pos, left))
    }
}

impl<'j, 'b> Join<'j, 'b> {
    fn cursor(&self, pos: u32) -> Cursor<'_, 'b> {
        Cursor::new(self.arena, pos, self.lo)
    }

    /// Where the lookup of item `i` of kind `which` walks from, and how many items of the
    /// kind it passes there: its finger when nearer, else `skip_entry`.
    #[cfg(not(target_os = "none"))]
    fn start(&self, which: usize, i: u64, skip_entry: (u32, u64)) -> (u32, u64) {
        let finger = self.fingers.get().get(which).copied().unwrap_or_default();
        finger.start(i).unwrap_or(skip_entry)
    }

    #[cfg(target_os = "none")]
    fn start(&self, _which: usize, _i: u64, skip_entry: (u32, u64)) -> (u32, u64) {
        skip_entry
    }

    /// Item `i` of kind `which` was found at `pos`.
    #[cfg(not(target_os = "none"))]
    fn set_finger(&self, which: usize, i: u64, pos: u32) {
        let mut fingers = self.fingers.get();
        if let Some(f) = fingers.get_mut(which) {
            *f = Finger { next: i.saturating_add(1), pos };
        }
        self.fingers.set(fingers);
    }

    #[cfg(target_os = "none")]
    fn set_finger(&self, _which: usize, _i: u64, _pos: u32) {}

    /// The first `arg_nodes` entry at or below `pos`, and the position after it.
    fn next_arg(&self, pos: u32) -> Option<(u64, u32)> {
        let mut c = self.cursor(pos);
        while let Some(item) = next_item(&mut c) {
            if let Item::Arg(node) = item {
                return Some((node, c.pos()));
            }
        }
        None
    }

    /// The first head at or below `pos`, and the position after it.
    fn next_head(&self, pos: u32) -> Option<((u64, u64), u32)> {
        let mut c = self.cursor(pos);
        while let Some(item) = next_item(&mut c) {
            if let Item::Head { node, output } = item {
                return Some(((node, output), c.pos()));
            }
        }
        None
    }

    /// Counts the items of each kind, then lays out their skip tables below the log.
    fn build_skips(arena: &mut Arena<'_>, hi: u32, lo: u32) -> Result<Skips, ErrorKind> {
        let mut skips = Skips::default();
        let mut c = Cursor::new(arena, hi, lo);
        while let Some(item) = next_item(&mut c) {
            let count = match item {
                Item::Node(..) => &mut skips.nodes.count,
                Item::Row(_) => &mut skips.rows.count,
                Item::Dtype { .. } => &mut skips.dtypes.count,
                Item::Shape { .. } => &mut skips.shapes.count,
                Item::Head { .. } => &mut skips.heads.count,
                Item::Arg(_) => &mut skips.args.count,
                _ => continue,
            };
            *count = count.saturating_add(1);
        }
        // The inputs' notes are done with before the heads' are taken: one table serves both.
        let notes = usize::try_from(skips.heads.count.max(skips.args.count)).unwrap_or(usize::MAX);
        skips.heads.at = arena.alloc_top(notes.saturating_mul(HEAD_NOTE))?;
        skips.args.at = skips.heads.at;
        for skip in [&mut skips.nodes, &mut skips.rows, &mut skips.dtypes, &mut skips.shapes] {
            skip.at = arena.alloc_top(Skip::entries(skip.count).saturating_mul(4))?;
        }
        let (mut seen, mut group, mut pos) = ([0u64; 4], hi, hi);
        // Entries are buffered a few at a time: the cursor borrows the arena they go into.
        let mut marks: heapless::Vec<(u32, u64), 8> = heapless::Vec::new();
        loop {
            let start = pos;
            let mut c = Cursor::new(arena, pos, lo);
            let Some(item) = next_item(&mut c) else { break };
            pos = c.pos();
            let (kind, at) = match item {
                // A node's entry is where its group starts, just after the previous node.
                Item::Node(..) => (0, group),
                Item::Row(_) => (1, start),
                Item::Dtype { .. } => (2, start),
                Item::Shape { .. } => (3, start),
                _ => continue,
            };
            if kind == 0 {
                group = pos;
            }
            if let Some(k) = seen.get_mut(kind) {
                if *k % SKIP == 0 {
                    // Never full here: a full buffer is flushed below.
                    let _ = marks.push((at, ((kind as u64) << 60) | (*k / SKIP)));
                }
                *k = k.saturating_add(1);
            }
            if marks.is_full() {
                Self::flush(arena, &skips, &marks);
                marks.clear();
            }
        }
        Self::flush(arena, &skips, &marks);
        Ok(skips)
    }

    /// Notes entry `k` of a name table (the inputs', the heads'): its name and EID.
    fn note(&mut self, table: Skip, k: u32, name: Span, eid: u64) {
        let mut rec = [0u8; HEAD_NOTE];
        let (a, b) = rec.split_at_mut(Span::ENCODED);
        a.copy_from_slice(&name.encode());
        b.copy_from_slice(&u32::try_from(eid).unwrap_or(u32::MAX).to_le_bytes());
        self.arena.write(table.at.saturating_add(k.saturating_mul(HEAD_NOTE as u32)), &rec);
    }

    /// Calls `f` with one tensor per distinct name of the `n` entries noted in `table`, at the
    /// position of the name's first entry, with the EID of its last: a `std::map` keyed by name
    /// that each entry assigns, as libnrt's. A failure names the entry's key path.
    fn distinct(
        &self,
        table: Skip,
        n: u32,
        kind: IoKind,
        key: &str,
        f: &mut dyn FnMut(&IoTensor<'_>),
    ) -> Result<(), (heapless::String<64>, ManifestError)> {
        let noted = |k: u32| {
            let at = table.at.saturating_add(k.saturating_mul(HEAD_NOTE as u32));
            (self.arena.span_at(at), u64::from(self.arena.u32_at(at.saturating_add(Span::ENCODED as u32))))
        };
        let same = |a: Span, b: Span| self.arena.bytes(a) == self.arena.bytes(b);
        let mut shape_buf = [0u32; MAX_DIMS as usize];
        let mut emitted: u32 = 0;
        #[cfg(feature = "name-tables")]
        let counts = self.name_counts(table, n);
        for k in 0..n {
            let (name, eid) = noted(k);
            // A name alone in its bucket has no other entry: its first is this one, and its last.
            #[cfg(feature = "name-tables")]
            let alone = counts.get(name_bucket(self.arena.bytes(name))).is_some_and(|&c| c == 1);
            #[cfg(not(feature = "name-tables"))]
            let alone = false;
            let last = if alone {
                eid
            } else {
                if (0..k).any(|j| same(noted(j).0, name)) {
                    continue;
                }
                (k..n).rev().map(noted).find(|(n, _)| same(*n, name)).map_or(0, |(_, e)| e)
            };
            let mut t = self
                .tensor(kind, self.arena.str(name), last, &mut shape_buf)
                .map_err(|e| (indexed(key, u64::from(k), &[]), e))?;
            t.index = emitted;
            emitted = emitted.saturating_add(1);
            f(&t);
        }
        Ok(())
    }

    /// How many of the `n` names noted in `table` fall in each [`name_bucket`] (saturating):
    /// a fixed table on the stack, so that [`Join::distinct`] compares only the names that
    /// share a bucket, in linear time when names are distinct (hosts only: `name-tables`).
    #[cfg(feature = "name-tables")]
    fn name_counts(&self, table: Skip, n: u32) -> [u8; NAME_BUCKETS] {
        let mut counts = [0u8; NAME_BUCKETS];
        for k in 0..n {
            let name = self.arena.span_at(table.at.saturating_add(k.saturating_mul(HEAD_NOTE as u32)));
            if let Some(c) = counts.get_mut(name_bucket(self.arena.bytes(name))) {
                *c = c.saturating_add(1);
            }
        }
        counts
    }

    /// Writes buffered skip entries `(position, kind << 60 | entry)`.
    fn flush(arena: &mut Arena<'_>, skips: &Skips, marks: &[(u32, u64)]) {
        for &(pos, code) in marks {
            let table = match code >> 60 {
                0 => skips.nodes,
                1 => skips.rows,
                2 => skips.dtypes,
                _ => skips.shapes,
            };
            let k = u32::try_from(code & ((1 << 60) - 1)).unwrap_or(u32::MAX);
            arena.write(table.at.saturating_add(k.saturating_mul(4)), &pos.to_le_bytes());
        }
    }

    /// Item `i` of one kind (rows, dtypes, shapes), from its finger or its skip table.
    fn nth(&self, skip: &Skip, kind: u8, i: u64) -> Option<Item> {
        if i >= skip.count {
            return None;
        }
        // The fingers: nodes, rows, dtypes, shapes.
        let which = match kind {
            tag::ROW => 1,
            tag::DTYPE => 2,
            _ => 3,
        };
        let (start, mut left) = self.start(which, i, (skip.get(self.arena, i / SKIP), i % SKIP));
        let mut c = self.cursor(start);
        loop {
            let at = c.pos();
            let item = next_item(&mut c)?;
            if tag_of(&item) != kind {
                continue;
            }
            match left.checked_sub(1) {
                Some(rest) => left = rest,
                None => {
                    self.set_finger(which, i, at);
                    return Some(item);
                }
            }
        }
    }

    fn node(&self, id: u64) -> Option<NodeView> {
        if id >= self.skips.nodes.count {
            return None;
        }
        // A node's walk starts where a group starts: a skip entry's, or the finger's.
        let (mut group, mut left) = self.start(0, id, (self.skips.nodes.get(self.arena, id / SKIP), id % SKIP));
        let mut c = self.cursor(group);
        let mut outputs = 0u64;
        while let Some(item) = next_item(&mut c) {
            match item {
                Item::Output(_) => outputs = outputs.saturating_add(1),
                Item::Node(name, named) => match left.checked_sub(1) {
                    Some(rest) => {
                        left = rest;
                        group = c.pos();
                        outputs = 0;
                    }
                    None => {
                        self.set_finger(0, id, group);
                        return Some(NodeView { group, outputs, name, named });
                    }
                },
                _ => {}
            }
        }
        None
    }

    /// Output name `o` of a node.
    fn output_name(&self, node: &NodeView, o: u64) -> Option<Span> {
        let mut c = self.cursor(node.group);
        let mut left = o;
        while let Some(item) = next_item(&mut c) {
            match item {
                Item::Output(name) => match left.checked_sub(1) {
                    Some(rest) => left = rest,
                    None => return Some(name),
                },
                Item::Node(..) => return None,
                _ => {}
            }
        }
        None
    }

    fn row(&self, node: u64) -> Result<u64, ManifestError> {
        match self.nth(&self.skips.rows, tag::ROW, node) {
            Some(Item::Row(eid)) => Ok(eid),
            _ => Err(ManifestError::RowPtrOutOfBounds(node)),
        }
    }

    /// The name and EID of a head `(node, output)`.
    fn head(&self, (node_id, output): (u64, u64)) -> Result<(Span, u64), ManifestError> {
        let node = self.node(node_id).ok_or(ManifestError::OutputNodeOutOfBounds(node_id))?;
        let eid = self.row(node_id)?.checked_add(output).ok_or(ManifestError::EidOutOfBounds(u64::MAX))?;
        let from_outputs = (output < node.outputs).then(|| self.output_name(&node, output)).flatten();
        Ok((from_outputs.unwrap_or(node.name), eid))
    }

    fn tensor<'s>(
        &'s self,
        kind: IoKind,
        name: &'s str,
        eid: u64,
        shape_buf: &'s mut [u32; MAX_DIMS as usize],
    ) -> Result<IoTensor<'s>, ManifestError> {
        let Some(Item::Dtype { code, name: literal }) = self.nth(&self.skips.dtypes, tag::DTYPE, eid) else {
            return Err(ManifestError::EidOutOfBounds(eid));
        };
        let Some(Item::Shape { dims, at }) = self.nth(&self.skips.shapes, tag::SHAPE, eid) else {
            return Err(ManifestError::EidOutOfBounds(eid));
        };
        if dims > MAX_DIMS {
            return Err(ManifestError::TooManyDimensions(dims));
        }
        let dims = dims as usize;
        let mut c = self.cursor(at);
        for d in shape_buf.iter_mut().take(dims) {
            *d = c.varint().and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
        }
        let (dtype, nrt_dtype) = match code.checked_sub(1).and_then(NrtDtype::from_value) {
            Some(t) => (t.as_str(), t),
            None => {
                let s = self.arena.str(literal);
                (s, NrtDtype::from_json(s).unwrap_or(NrtDtype::Unknown))
            }
        };
        let shape = shape_buf.get(..dims).unwrap_or(&[]);
        let size = shape
            .iter()
            .try_fold(nrt_dtype.element_size(), |acc, &d| acc.checked_mul(u64::from(d)))
            .ok_or(ManifestError::SizeOverflow)?;
        Ok(IoTensor { kind, index: 0, name, dtype, nrt_dtype, shape, size })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    extern crate std;
    use std::string::{String, ToString};
    use std::vec::Vec;

    use super::*;
    use crate::error::IgnoreWarnings;

    /// `(kind, name, dtype, shape, size)` of every tensor, and the KELF members named.
    type Io = Vec<(IoKind, String, String, Vec<u32>, u64)>;

    fn parse(doc: &str) -> Result<(Io, Vec<String>), Error> {
        let mut scratch = [0; 256];
        let mut tok = Tokenizer::new(&mut scratch, 64);
        let mut src = doc.as_bytes();
        let mut buf = std::vec![0u8; 1 << 20];
        let mut arena = Arena::new(&mut buf);
        let mut join = IoJoin::new(&arena);
        let mut kelfs = Vec::new();
        let mut visit = |e: Entry<'_>, _: &EntryAt<'_>| {
            if let Entry::Node(n) = e {
                if kelf_mark(n) == Some(KelfMark::FuncName) {
                    kelfs.push(kelf_member(n).unwrap_or("").to_string());
                }
            }
            join.see(&mut arena, &e).map_err(|k| DocFault::new(0, k))
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

    /// A generated graph of `inputs` input nodes and one KELF node of `outputs` outputs, whose
    /// names repeat (`x{i % in_names}`, `o{i * 7 % out_names}`), and the tensors libnrt's maps
    /// keyed by name give for it: one per distinct name, at its first position, with the
    /// values of its last entry. `arg_nodes` and `heads` list the inputs and the outputs in
    /// the order `order(k, count)` gives (`k`: the entry's position).
    fn repeated_names(
        inputs: usize,
        in_names: usize,
        outputs: usize,
        out_names: usize,
        order: fn(usize, usize) -> usize,
    ) -> (String, Io) {
        use std::format;
        const DTYPES: [(&str, u64); 3] = [("float16", 2), ("float32", 4), ("int8", 1)];
        let shape = |e: usize| std::vec![(e % 5 + 1) as u32, 2];
        let tensor = |kind: IoKind, name: String, e: usize| {
            let (dtype, size) = DTYPES[e % 3];
            (kind, name, dtype.to_string(), shape(e), size * (e % 5 + 1) as u64 * 2)
        };
        let in_name = |i: usize| format!("x{}", i % in_names);
        let out_name = |i: usize| format!("o{}", i * 7 % out_names);
        let mut nodes: Vec<String> =
            (0..inputs).map(|i| format!(r#"{{"op":"null","name":"{}"}}"#, in_name(i))).collect();
        let outs: Vec<String> = (0..outputs).map(|i| format!("\"{}\"", out_name(i))).collect();
        nodes.push(format!(
            r#"{{"op":"tvm_op","name":"k","attrs":{{"func_name":"__kelf","kelf":"kelf-0.json"}},"output_names":[{}]}}"#,
            outs.join(",")
        ));
        let eids = inputs + outputs;
        let args: Vec<String> = (0..inputs).map(|k| order(k, inputs).to_string()).collect();
        let heads: Vec<String> = (0..outputs).map(|k| format!("[{inputs},{},0]", order(k, outputs))).collect();
        let rows: Vec<String> = (0..=inputs).map(|i| i.to_string()).chain([eids.to_string()]).collect();
        let dltypes: Vec<String> = (0..eids).map(|e| format!("\"{}\"", DTYPES[e % 3].0)).collect();
        let shapes: Vec<String> = (0..eids).map(|e| format!("[{},2]", e % 5 + 1)).collect();
        let doc = format!(
            r#"{{"nodes":[{}],"arg_nodes":[{}],"heads":[{}],"node_row_ptr":[{}],"attrs":{{"dltype":["list_str",[{}]],"shape":["list_shape",[{}]]}}}}"#,
            nodes.join(","),
            args.join(","),
            heads.join(","),
            rows.join(","),
            dltypes.join(","),
            shapes.join(",")
        );
        // The model: a map keyed by name, assigned in order, listed in first-position order.
        let mut want: Io = Vec::new();
        for (kind, entries) in [
            (IoKind::Input, (0..inputs).map(|k| order(k, inputs)).map(|i| (in_name(i), i)).collect::<Vec<_>>()),
            (IoKind::Output, (0..outputs).map(|k| order(k, outputs)).map(|o| (out_name(o), inputs + o)).collect()),
        ] {
            let mut order: Vec<(String, usize)> = Vec::new();
            for (name, e) in entries {
                match order.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = e,
                    None => order.push((name, e)),
                }
            }
            want.extend(order.into_iter().map(|(name, e)| tensor(kind, name, e)));
        }
        (doc, want)
    }

    #[test]
    fn io_table_of_many_repeated_names_is_the_name_keyed_map() {
        // Thousands of entries, so that names share buckets of the `name-tables` filter as well
        // as repeat: the join gives what the map gives, with the filter (default features) and
        // without it (`--no-default-features`).
        for (inputs, in_names, outputs, out_names) in
            [(1, 1, 1, 1), (40, 40, 40, 40), (700, 313, 2600, 1999), (900, 900, 3000, 3000)]
        {
            let (doc, want) = repeated_names(inputs, in_names, outputs, out_names, |k, _| k);
            let (io, kelfs) = parse(&doc).unwrap();
            assert_eq!(io.len(), want.len(), "{inputs} {in_names} {outputs} {out_names}");
            assert_eq!(io, want, "{inputs} {in_names} {outputs} {out_names}");
            assert_eq!(kelfs, ["kelf-0.json"]);
        }
    }

    #[test]
    fn io_table_in_any_order_of_arg_nodes_and_heads_is_the_name_keyed_map() {
        // The join's lookups go on from the last one found when the next lies ahead (real
        // NEFFs list both in rising order); falling, striding and jumping orders walk from the
        // skip tables, each against the map.
        let orders: [fn(usize, usize) -> usize; 4] = [
            |k, n| n - 1 - k,
            |k, n| if n % 7 == 0 { k } else { k * 7 % n },
            |k, n| if k % 2 == 0 { k / 2 } else { n - 1 - k / 2 },
            |k, n| (k + n / 2) % n,
        ];
        for order in orders {
            for (inputs, in_names, outputs, out_names) in [(1, 1, 1, 1), (130, 130, 200, 97), (700, 313, 900, 900)] {
                let (doc, want) = repeated_names(inputs, in_names, outputs, out_names, order);
                let (io, _) = parse(&doc).unwrap();
                assert_eq!(io, want, "{inputs} {in_names} {outputs} {out_names}");
            }
        }
    }

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
    fn io_table_keys_inputs_by_name_as_libnrt_s_map() {
        // Two `arg_nodes` entries named `x` (nodes 0 and 2) and one named `y` between them:
        // libnrt's `inputs[name] = info` keeps one `x`, with the values of the later entry.
        let doc = r#"{"nodes":[{"op":"null","name":"x"},{"op":"null","name":"y"},{"op":"null","name":"x"},
            {"op":"tvm_op","name":"k","attrs":{"func_name":"__kelf","kelf":"kelf-0.json"},"output_names":["o"]}],
            "arg_nodes":[0,1,2],"heads":[[3,0,0]],"node_row_ptr":[0,1,2,3,4],
            "attrs":{"dltype":["list_str",["float16","int8","float32","int32"]],"shape":["list_shape",[[2],[3],[4,4],[1]]]}}"#;
        let (io, _) = parse(doc).unwrap();
        let inputs: Vec<_> = io.iter().filter(|t| t.0 == IoKind::Input).cloned().collect();
        assert_eq!(
            inputs,
            [
                (IoKind::Input, "x".into(), "float32".into(), std::vec![4, 4], 64),
                (IoKind::Input, "y".into(), "int8".into(), std::vec![3], 3),
            ]
        );
        // Every entry is still checked: a later duplicate past the tables is refused.
        let bad = doc.replace("[0,1,2,3,4]", "[0,1,9,3,4]");
        assert_eq!(parse(&bad).unwrap_err().kind, ErrorKind::Manifest(ManifestError::EidOutOfBounds(9)));
    }

    /// A generated graph of `n` inputs and `m` outputs (arg and head order shuffled, dtypes
    /// known, aliased and unknown, up to 32 dims), and the tensors a plain table join gives.
    fn generated(n: usize, m: usize, nodes_last: bool) -> (String, Io) {
        let dtypes = ["float16", "float32", "int8", "bfloat16", "fp8_e4m3", "weird_t", "uint64"];
        let mut nodes: Vec<String> =
            (0..n).map(|i| std::format!(r#"{{"op":"null","name":"input_{i}_{}"}}"#, "x".repeat(i % 40))).collect();
        let outs: Vec<String> = (0..m).map(|o| std::format!(r#""out_{o}""#)).collect();
        nodes.push(std::format!(
            r#"{{"op":"tvm_op","name":"k","attrs":{{"func_name":"__kelf","kelf":"kelf-0.json"}},"output_names":[{}]}}"#,
            outs.join(",")
        ));
        let eids = n + m;
        let mut rows: Vec<usize> = (0..=n).collect();
        rows.push(eids);
        let shape = |e: usize| -> Vec<u32> { (0..(e * 7) % 33).map(|d| 1 + ((e + d) % 3) as u32).collect() };
        let dtype = |e: usize| dtypes[(e * 5) % dtypes.len()];
        let args: Vec<usize> = (0..n).map(|i| (i * 37) % n).collect();
        let heads: Vec<usize> = (0..m).map(|o| (o * 11) % m).collect();
        let list = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
        let shapes: Vec<String> = (0..eids)
            .map(|e| std::format!("[{}]", list(&shape(e).iter().map(|&d| d as usize).collect::<Vec<_>>())))
            .collect();
        let dts: Vec<String> = (0..eids).map(|e| std::format!(r#""{}""#, dtype(e))).collect();
        let head_list: Vec<String> = heads.iter().map(|o| std::format!("[{n},{o},0]")).collect();
        let rest = std::format!(
            r#""arg_nodes":[{}],"heads":[{}],"attrs":{{"shape":["list_shape",[{}]],"dltype":["list_str",[{}]]}},"node_row_ptr":[{}]"#,
            list(&args),
            head_list.join(","),
            shapes.join(","),
            dts.join(","),
            list(&rows)
        );
        let nodes = std::format!(r#""nodes":[{}]"#, nodes.join(","));
        let doc = if nodes_last { std::format!("{{{rest},{nodes}}}") } else { std::format!("{{{nodes},{rest}}}") };
        let size = |e: usize| {
            let t = NrtDtype::from_json(dtype(e)).unwrap_or(NrtDtype::Unknown);
            shape(e).iter().fold(t.element_size(), |a, &d| a * u64::from(d))
        };
        let mut io: Io = args
            .iter()
            .map(|&a| {
                (IoKind::Input, std::format!("input_{a}_{}", "x".repeat(a % 40)), dtype(a).into(), shape(a), size(a))
            })
            .collect();
        io.extend(
            heads
                .iter()
                .map(|&o| (IoKind::Output, std::format!("out_{o}"), dtype(n + o).into(), shape(n + o), size(n + o))),
        );
        (doc, io)
    }

    #[test]
    fn a_generated_graph_joins_as_a_plain_table_does() {
        for (n, m, nodes_last) in [(1, 1, false), (64, 63, false), (65, 64, true), (300, 129, false), (1000, 500, true)]
        {
            let (doc, want) = generated(n, m, nodes_last);
            let (io, kelfs) = parse(&doc).unwrap();
            assert_eq!(kelfs, ["kelf-0.json"]);
            assert_eq!(io.len(), want.len(), "{n} inputs, {m} outputs");
            for (got, want) in io.iter().zip(&want) {
                assert_eq!(got, want, "{n} inputs, {m} outputs");
            }
        }
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
        let mut scratch = [0; 256];
        let mut tok = Tokenizer::new(&mut scratch, 64);
        let mut src = GOOD.as_bytes();
        let mut buf = [0u8; 16];
        let mut arena = Arena::new(&mut buf);
        let mut join = IoJoin::new(&arena);
        let mut visit = |e: Entry<'_>, at: &EntryAt<'_>| join.see(&mut arena, &e).map_err(|k| at.error(k));
        let e = NeffJson::parse(&mut tok, &mut src, "neff.json", &mut IgnoreWarnings, &mut visit).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::ArenaFull { capacity: 16, .. }), "{e:?}");
    }
}
