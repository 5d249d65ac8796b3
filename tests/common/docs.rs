//! Parsing a manifest in a test: the document, its facts, every streamed entry collected (owned)
//! and the warnings; for `neff.json`, the I/O tensors through the core's join.
#![allow(clippy::result_large_err, clippy::type_complexity)]

use neff::arena::Arena;
use neff::json::Tokenizer;
use neff::manifest::neff::{kelf_mark, kelf_member, IoJoin, KelfMark};

use neff::manifest::{
    Carveout, DmaBlock, DmaDesc, DmaQueue, Document, DveTables, Entry, EntryAt, Graph, IoKind, NeffJson, Node,
    UcodeLib, Var, Visitor,
};
use neff::{Error, Warning};

/// Every streamed entry of one document, owned.
#[derive(Debug, Default, Clone)]
pub struct Entries {
    pub vars: Vec<Var>,
    /// `list` of each `dge-table` var, by var name.
    pub var_lists: Vec<(String, Vec<u32>)>,
    pending_list: Vec<u32>,
    pub queues: Vec<DmaQueue>,
    pub carveouts: Vec<Carveout>,
    pub ucode_libs: Vec<UcodeLib>,
    pub graphs: Vec<Graph>,
    pub nodes: Vec<Node>,
    pub act_sets: Vec<String>,
    pub dve_tables: Vec<DveTables>,
    pub dma_blocks: Vec<DmaBlock>,
    pub descs: Vec<DmaDesc>,
    pub count: u64,
}

impl Entries {
    /// The var named `name`.
    pub fn var(&self, name: &str) -> Option<&Var> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// The KELF members `neff.json` names, as the loader selects them.
    pub fn kelf_members(&self) -> Vec<String> {
        let by_func = self.nodes.iter().any(|n| kelf_mark(n) == Some(KelfMark::FuncName));
        let want = if by_func { KelfMark::FuncName } else { KelfMark::Op };
        self.nodes
            .iter()
            .filter(|n| kelf_mark(n) == Some(want))
            .filter_map(|n| kelf_member(n).map(str::to_owned))
            .collect()
    }
}

impl Visitor for Entries {
    fn entry(&mut self, entry: Entry<'_>, _at: &EntryAt<'_>) -> Result<(), neff::manifest::DocFault> {
        self.count += 1;
        match entry {
            Entry::Var(v) => {
                if !self.pending_list.is_empty() {
                    self.var_lists.push((v.name.to_string(), std::mem::take(&mut self.pending_list)));
                }
                self.vars.push(v.clone());
            }
            Entry::VarListId(&id) => self.pending_list.push(id),
            Entry::DmaQueue(q) => self.queues.push(q.clone()),
            Entry::Carveout(c) => self.carveouts.push(c.clone()),
            Entry::UcodeLib(l) => self.ucode_libs.push(l.clone()),
            Entry::Graph(g) => self.graphs.push(g.clone()),
            Entry::Node(n) => self.nodes.push(n.clone()),
            Entry::ActSet(s) => self.act_sets.push(s.to_string()),
            Entry::DveTables(t) => self.dve_tables.push(t.clone()),
            Entry::DmaBlock(b) | Entry::DefDmaBlock(b) => self.dma_blocks.push(b.clone()),
            Entry::DmaDesc(d) => self.descs.push(d.clone()),
            _ => {}
        }
        Ok(())
    }
}

/// A parsed document with its facts, entries and warnings.
#[derive(Debug)]
pub struct Parsed<D: Document> {
    pub doc: D,
    pub facts: D::Facts,
    pub entries: Entries,
    pub warnings: Vec<Warning>,
}

/// Parses `bytes` as member `member`.
pub fn parse<D: Document>(bytes: &[u8], member: &str) -> Result<Parsed<D>, Error> {
    let mut src = bytes;
    parse_from(&mut src, member)
}

/// [`parse`], the bytes shown `chunk` at a time: with 1, no token, array or value lies whole
/// in what the source shows, so a host's whole-token paths never take one.
pub fn parse_chunked<D: Document>(bytes: &[u8], member: &str, chunk: usize) -> Result<Parsed<D>, Error> {
    parse_from(&mut Chunked { bytes, chunk }, member)
}

fn parse_from<D: Document>(src: &mut impl embedded_io::BufRead, member: &str) -> Result<Parsed<D>, Error> {
    let mut scratch = [0; 256];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    let mut warnings = Vec::new();
    let mut entries = Entries::default();
    let (doc, facts) = D::parse(&mut tok, src, member, &mut |w: &Warning| warnings.push(*w), &mut entries)?;
    Ok(Parsed { doc, facts, entries, warnings })
}

/// A source that shows at most `chunk` bytes at a time.
struct Chunked<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl embedded_io::ErrorType for Chunked<'_> {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = buf.len().min(self.chunk).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

impl embedded_io::BufRead for Chunked<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], Self::Error> {
        Ok(&self.bytes[..self.chunk.min(self.bytes.len())])
    }

    fn consume(&mut self, amount: usize) {
        self.bytes = &self.bytes[amount..];
    }
}

/// One I/O tensor, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    pub kind: IoKind,
    pub name: String,
    pub dtype: String,
    pub nrt_dtype: neff::manifest::NrtDtype,
    pub shape: Vec<u32>,
    pub size: u64,
}

/// The I/O tensors of a `neff.json` and the KELF members it names.
pub type IoAndKelfs = (Vec<Tensor>, Vec<String>);

/// Parses a `neff.json` and derives its I/O tensors with the core's join; returns the tensors
/// and the KELF members, and the warnings (also on failure).
pub fn neff_io(bytes: &[u8]) -> (Result<IoAndKelfs, Error>, Vec<Warning>) {
    let mut warnings = Vec::new();
    let r = neff_io_into(bytes, &mut warnings);
    (r, warnings)
}

fn neff_io_into(bytes: &[u8], warnings: &mut Vec<Warning>) -> Result<IoAndKelfs, Error> {
    let mut scratch = [0; 256];
    let mut tok = Tokenizer::new(&mut scratch, 128);
    let mut buf = vec![0u8; 1 << 20];
    let mut arena = Arena::new(&mut buf);
    let mut join = IoJoin::new(&arena);
    let mut entries = Entries::default();
    let mut visit = |e: Entry<'_>, at: &EntryAt<'_>| {
        join.see(&mut arena, &e).map_err(|k| at.error(k))?;
        entries.entry(e, at)
    };
    let mut src = bytes;
    NeffJson::parse(&mut tok, &mut src, "neff.json", &mut |w: &Warning| warnings.push(*w), &mut visit)?;
    let mut io = Vec::new();
    join.finish(&mut arena, "neff.json", 0, &mut |w: &Warning| warnings.push(*w), &mut |t| {
        io.push(Tensor {
            kind: t.kind,
            name: t.name.to_owned(),
            dtype: t.dtype.to_owned(),
            nrt_dtype: t.nrt_dtype,
            shape: t.shape.to_vec(),
            size: t.size,
        })
    })?;
    Ok((io, entries.kelf_members()))
}
