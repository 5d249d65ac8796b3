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

use embedded_io::BufRead;

use super::Document;

use super::{semantic, warn, IoNodeInfo, ManifestError, ManifestWarning, NeffJson, Node, NrtDtype, MAX_DIMS};
use crate::error::{CapacityError, Text};
use crate::json::Tokenizer;
use crate::{Error, ErrorKind, Stage, WarningSink};

/// The marker of the KELF node, in `attrs.func_name` (or `op`, as a fallback).
const KELF_MARKER: &str = "__kelf";

/// One input or output tensor of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IoTensor<
    const NAME: usize = { super::DEFAULT_NODE_NAME },
    const DTYPE: usize = { super::DEFAULT_DTYPE_NAME },
    const DIMS: usize = { super::DEFAULT_DIMS },
> {
    /// Tensor name.
    pub name: heapless::String<NAME>,
    /// The dtype string of `attrs.dltype`.
    pub dtype: heapless::String<DTYPE>,
    /// Its `nrt_dtype_t` ([`NrtDtype::Unknown`] for strings the runtime does not know).
    pub nrt_dtype: NrtDtype,
    /// The shape of `attrs.shape`.
    pub shape: heapless::Vec<u32, DIMS>,
    /// Bytes: product of the shape times the element size.
    pub size: u64,
}

impl<const NAME: usize, const DTYPE: usize, const DIMS: usize> IoTensor<NAME, DTYPE, DIMS> {
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

/// The graph's inputs and outputs (at most `IO` each).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IoTable<
    const IO: usize = 16,
    const NAME: usize = { super::DEFAULT_NODE_NAME },
    const DTYPE: usize = { super::DEFAULT_DTYPE_NAME },
    const DIMS: usize = { super::DEFAULT_DIMS },
> {
    /// Inputs in `arg_nodes` order.
    pub inputs: heapless::Vec<IoTensor<NAME, DTYPE, DIMS>, IO>,
    /// Outputs in `heads` order, one per distinct name.
    pub outputs: heapless::Vec<IoTensor<NAME, DTYPE, DIMS>, IO>,
}

/// Writes `prefix[index].key.key...` into a short path buffer (context only).
fn indexed(prefix: &str, index: usize, keys: &[&str]) -> heapless::String<48> {
    let mut s = heapless::String::new();
    let _ = core::fmt::write(&mut s, format_args!("{prefix}[{index}]"));
    for k in keys {
        let _ = core::fmt::write(&mut s, format_args!(".{k}"));
    }
    s
}

impl<
        const NODES: usize,
        const NODE_ROWS: usize,
        const NODE_NAME: usize,
        const NODE_OUTPUTS: usize,
        const ARG_NODES: usize,
        const HEADS: usize,
        const EIDS: usize,
        const DTYPE_NAME: usize,
        const DIMS: usize,
    > NeffJson<NODES, NODE_ROWS, NODE_NAME, NODE_OUTPUTS, ARG_NODES, HEADS, EIDS, DTYPE_NAME, DIMS>
{
    fn warn_dtype(&self, dtype: &str, nrt: NrtDtype, sink: &mut impl WarningSink, member: &str, end: u64) {
        if nrt == NrtDtype::Unknown {
            let mut path: heapless::String<32> = heapless::String::new();
            let _ = core::fmt::write(
                &mut path,
                format_args!("{}.{}", Self::KEY_ATTRS, super::GraphAttrs::<EIDS, DTYPE_NAME, DIMS>::KEY_DLTYPE),
            );
            warn(sink, Stage::NeffJson, member, end, &path, ManifestWarning::UnknownDtype(Text::new(dtype)));
        }
    }

    /// The index of the KELF node and whether it was found by the `op` fallback.
    pub fn kelf_node_index(&self) -> Option<(usize, bool)> {
        let by_func = self.kelf_nodes_by_func().next();
        by_func.map(|i| (i, false)).or_else(|| self.nodes.iter().position(Self::is_kelf_by_op).map(|i| (i, true)))
    }

    fn is_kelf_by_func(n: &Node<NODE_NAME, NODE_OUTPUTS, DTYPE_NAME>) -> bool {
        n.attrs.as_ref().and_then(|a| a.func_name.as_ref()).is_some_and(|f| f == KELF_MARKER)
    }

    fn is_kelf_by_op(n: &Node<NODE_NAME, NODE_OUTPUTS, DTYPE_NAME>) -> bool {
        n.op.as_ref().is_some_and(|o| o == KELF_MARKER)
    }

    fn kelf_nodes_by_func(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().enumerate().filter(|(_, n)| Self::is_kelf_by_func(n)).map(|(i, _)| i)
    }

    fn kelf_member_of(&self, index: usize) -> Option<&str> {
        self.nodes.get(index)?.attrs.as_ref()?.kelf.as_ref().map(|k| k.as_str())
    }

    /// The KELF member names, in node order: every node whose `attrs.func_name` is
    /// `"__kelf"`, or, where there is none, every node whose `op` is `"__kelf"`. Nodes without
    /// a `kelf` attribute are left out (parse rejects a document whose first one has none).
    pub fn kelf_members(&self) -> impl Iterator<Item = &str> + '_ {
        let any_by_func = self.nodes.iter().any(Self::is_kelf_by_func);
        self.nodes
            .iter()
            .filter(move |n| if any_by_func { Self::is_kelf_by_func(n) } else { Self::is_kelf_by_op(n) })
            .filter_map(|n| n.attrs.as_ref()?.kelf.as_ref().map(|k| k.as_str()))
    }

    /// The tensor of entry `eid`, named `name`.
    fn tensor<const NAME: usize>(
        &self,
        name: &str,
        eid: u64,
    ) -> Result<IoTensor<NAME, DTYPE_NAME, DIMS>, ManifestError> {
        let idx = usize::try_from(eid).map_err(|_| ManifestError::EidOutOfBounds(eid))?;
        let dtype = self.attrs.dltype.get(idx).ok_or(ManifestError::EidOutOfBounds(eid))?;
        let shape = self.attrs.shape.get(idx).ok_or(ManifestError::EidOutOfBounds(eid))?;
        if shape.len() as u64 > MAX_DIMS {
            return Err(ManifestError::TooManyDimensions(shape.len() as u64));
        }
        let nrt_dtype = NrtDtype::from_json(dtype).unwrap_or(NrtDtype::Unknown);
        let size = shape
            .iter()
            .try_fold(nrt_dtype.element_size(), |acc, &d| acc.checked_mul(u64::from(d)))
            .ok_or(ManifestError::SizeOverflow)?;
        let mut t =
            IoTensor { name: heapless::String::new(), dtype: dtype.clone(), nrt_dtype, shape: shape.clone(), size };
        // Names come from NODE_NAME strings, so they fit whenever NAME >= NODE_NAME.
        if t.name.push_str(name).is_err() {
            return Err(ManifestError::OutOfRange { max: NAME as u64 });
        }
        Ok(t)
    }

    fn row(&self, node: u64) -> Result<u64, ManifestError> {
        usize::try_from(node)
            .ok()
            .and_then(|n| self.node_row_ptr.get(n))
            .copied()
            .ok_or(ManifestError::RowPtrOutOfBounds(node))
    }

    /// Input `i` (in `arg_nodes` order).
    pub fn input<const NAME: usize>(&self, i: usize) -> Result<IoTensor<NAME, DTYPE_NAME, DIMS>, ManifestError> {
        let node_id = *self.arg_nodes.get(i).ok_or(ManifestError::InputNodeOutOfBounds(i as u64))?;
        let node = usize::try_from(node_id)
            .ok()
            .and_then(|n| self.nodes.get(n))
            .ok_or(ManifestError::InputNodeOutOfBounds(node_id))?;
        let eid = self.row(node_id)?;
        self.tensor(node.name.as_deref().unwrap_or(""), eid)
    }

    /// The tensor of head `i` (before merging heads with the same name).
    pub fn head<const NAME: usize>(&self, i: usize) -> Result<IoTensor<NAME, DTYPE_NAME, DIMS>, ManifestError> {
        let head = self.heads.get(i).ok_or(ManifestError::OutputNodeOutOfBounds(i as u64))?;
        let node_id = head.first().copied().unwrap_or(0);
        let out_idx = head.get(1).copied().unwrap_or(0);
        let node = usize::try_from(node_id)
            .ok()
            .and_then(|n| self.nodes.get(n))
            .ok_or(ManifestError::OutputNodeOutOfBounds(node_id))?;
        let eid = self.row(node_id)?.checked_add(out_idx).ok_or(ManifestError::EidOutOfBounds(u64::MAX))?;
        let from_outputs =
            node.output_names.as_ref().and_then(|names| usize::try_from(out_idx).ok().and_then(|o| names.get(o)));
        let name = from_outputs.or(node.name.as_ref()).map_or("", |s| s.as_str());
        self.tensor(name, eid)
    }

    /// The I/O table: inputs in `arg_nodes` order, outputs in `heads` order with one entry per
    /// distinct name (a later head replaces the values, the first keeps its position).
    /// More than `IO` inputs or outputs is a capacity error `IO_TENSORS`.
    pub fn io_table<const IO: usize>(&self) -> Result<IoTable<IO, NODE_NAME, DTYPE_NAME, DIMS>, ErrorKind> {
        let full = || ErrorKind::Capacity(CapacityError { limit: "IO_TENSORS", capacity: IO as u64 });
        let mut table = IoTable::default();
        for i in 0..self.arg_nodes.len() {
            let t = self.input(i).map_err(ErrorKind::Manifest)?;
            table.inputs.push(t).map_err(|_| full())?;
        }
        for i in 0..self.heads.len() {
            let t = self.head(i).map_err(ErrorKind::Manifest)?;
            match table.outputs.iter_mut().find(|o| o.name == t.name) {
                Some(existing) => *existing = t,
                None => table.outputs.push(t).map_err(|_| full())?,
            }
        }
        Ok(table)
    }
}

impl<
        const NODES: usize,
        const NODE_ROWS: usize,
        const NODE_NAME: usize,
        const NODE_OUTPUTS: usize,
        const ARG_NODES: usize,
        const HEADS: usize,
        const EIDS: usize,
        const DTYPE_NAME: usize,
        const DIMS: usize,
    > Document for NeffJson<NODES, NODE_ROWS, NODE_NAME, NODE_OUTPUTS, ARG_NODES, HEADS, EIDS, DTYPE_NAME, DIMS>
{
    fn parse_into<R: BufRead, const S: usize, const D: u16>(
        &mut self,
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.read_document(tok, src, member)?;
        let end = tok.offset();
        let fail = |path: &str, e: ManifestError| semantic(Stage::NeffJson, member, end, path, e);
        let (index, by_op) = self.kelf_node_index().ok_or_else(|| fail(Self::KEY_NODES, ManifestError::NoKelfNode))?;
        type N<const A: usize, const B: usize, const C: usize> = Node<A, B, C>;
        if self.kelf_member_of(index).is_none() {
            let path = indexed(
                Self::KEY_NODES,
                index,
                &[N::<NODE_NAME, NODE_OUTPUTS, DTYPE_NAME>::KEY_ATTRS, super::NodeAttrs::<NODE_NAME>::KEY_KELF],
            );
            return Err(fail(&path, ManifestError::KelfAttributeMissing));
        }
        if by_op {
            let path = indexed(Self::KEY_NODES, index, &[N::<NODE_NAME, NODE_OUTPUTS, DTYPE_NAME>::KEY_OP]);
            warn(sink, Stage::NeffJson, member, end, &path, ManifestWarning::KelfNodeByOp);
        }
        // Every input and output must resolve; unknown dtypes are reported once per tensor.
        for i in 0..self.arg_nodes.len() {
            let t = self.input::<NODE_NAME>(i).map_err(|e| fail(&indexed(Self::KEY_ARG_NODES, i, &[]), e))?;
            self.warn_dtype(&t.dtype, t.nrt_dtype, sink, member, end);
        }
        for i in 0..self.heads.len() {
            let t = self.head::<NODE_NAME>(i).map_err(|e| fail(&indexed(Self::KEY_HEADS, i, &[]), e))?;
            self.warn_dtype(&t.dtype, t.nrt_dtype, sink, member, end);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;
    use crate::error::IgnoreWarnings;

    fn parse(doc: &str) -> Result<NeffJson, Error> {
        let mut tok = Tokenizer::<256, 64>::new();
        let mut src = doc.as_bytes();
        NeffJson::parse(&mut tok, &mut src, "neff.json", &mut IgnoreWarnings)
    }

    const GOOD: &str = r#"{"nodes":[{"op":"null","name":"x","inputs":[],"output_names":["x"]},
        {"op":"tvm_op","name":"k","attrs":{"func_name":"__kelf","kelf":"kelf-0.json"},"output_names":["o","o"]}],
        "arg_nodes":[0],"heads":[[1,0,0],[1,1,0]],"node_row_ptr":[0,1,3],
        "attrs":{"dltype":["list_str",["float16","float32","int8"]],"shape":["list_shape",[[2,3],[4],[5,5]]]}}"#;

    #[test]
    fn io_table_merges_outputs_by_name_keeping_first_position() {
        let doc = parse(GOOD).unwrap();
        let io = doc.io_table::<4>().unwrap();
        assert_eq!(io.inputs.len(), 1);
        assert_eq!(io.inputs[0].name.as_str(), "x");
        assert_eq!(io.inputs[0].size, 12);
        assert_eq!(io.outputs.len(), 1);
        // The second head (eid 2, int8 [5,5]) replaced the first one's values.
        assert_eq!(io.outputs[0].dtype.as_str(), "int8");
        assert_eq!(io.outputs[0].size, 25);
        assert_eq!(doc.kelf_members().collect::<heapless::Vec<&str, 4>>().as_slice(), &["kelf-0.json"]);
    }

    #[test]
    fn eid_past_the_tables_is_the_runtime_error() {
        let bad = GOOD.replace("[0,1,3]", "[0,5,7]");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest(ManifestError::EidOutOfBounds(5)));
        assert_eq!(e.key_path.as_str(), "heads[0]");
        assert_eq!(e.kind.to_string(), "EID 5 out of bounds for dtypes/shapes");
    }
}
