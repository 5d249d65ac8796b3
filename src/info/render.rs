//! [`InfoLog::render`]: the document, written from the log of a successful check.

use crate::header::{HashAlgorithm, Integrity, NeffHeader};
use crate::json::{Event, TokenKind, Tokenizer};
use crate::loader::{dir_of_bytes, is_joined_bytes};
use crate::manifest::def::ENGINE_KEYS;
use crate::manifest::Var;

use super::log::InfoLog;
use super::out::Out;
use super::records::{
    def_view, entries, instr_of, last, Group, Rec, Records, CARVEOUT, DEF, GRAPH, KELF, NEFF, NODE, PAYLOAD, QUEUE,
    TENSOR, VAR,
};
use super::{InfoError, LogBuffer};

impl<B: LogBuffer> InfoLog<B> {
    /// Writes the document into `json` from the log of a successful check of the NEFF whose
    /// header is `header` (and integrity outcome `integrity`); its length. Writing again gives
    /// the same bytes: a caller that learns the size from [`InfoError::Document`] lends that
    /// much and asks again.
    pub fn render(
        &mut self,
        header: &NeffHeader,
        integrity: Option<Integrity>,
        json: &mut [u8],
    ) -> Result<usize, InfoError> {
        // Besides the log and `info.json`: the sorting index, then room to unescape `info.json`'s
        // strings (as long as it, at most).
        let info_len = self.buf.bytes().len().saturating_sub(self.top);
        let after = self.most_in_group.saturating_mul(4).max(info_len);
        if self.overflow {
            let b = &self.bound;
            let unread = b.fixed.saturating_add(b.slots.saturating_mul(b.longest_instr)).saturating_add(b.payloads);
            return Err(InfoError::Work { needed: self.peak.saturating_add(unread).saturating_add(after) });
        }
        // A buffer that grows makes room for the index (a lent one is what it is).
        let _ = self.room(self.front.saturating_add(after), info_len);
        let info_len = self.buf.bytes().len().saturating_sub(self.top);
        let (front, top, have_info) = (self.front, self.top, self.have_info);
        if top.saturating_sub(front) < info_len {
            return Err(InfoError::Work { needed: front.saturating_add(info_len).saturating_add(info_len) });
        }
        // The sorting index holds 4-byte offsets into the log.
        if u32::try_from(front).is_err() {
            return Err(InfoError::Work { needed: front });
        }
        let buf = self.buf.bytes_mut();
        let Some((log_and_free, info)) = buf.split_at_mut_checked(top) else {
            return Err(InfoError::Work { needed: top });
        };
        let Some((log, free)) = log_and_free.split_at_mut_checked(front) else {
            return Err(InfoError::Work { needed: front });
        };
        render_log(log, free, if have_info { info } else { &[] }, header, integrity, json, info_len)
    }
}

/// [`InfoLog::render`] over the log's parts: the log, the free middle, `info.json`.
fn render_log(
    log: &[u8],
    free: &mut [u8],
    info: &[u8],
    header: &NeffHeader,
    integrity: Option<Integrity>,
    json: &mut [u8],
    info_len: usize,
) -> Result<usize, InfoError> {
    let front = log.len();
    let mut out = Out::new(json);
    let need_index = |n: usize| front.saturating_add(n.saturating_mul(4)).saturating_add(info_len);

    out.raw(b"{");
    out.key(true, "header");
    write_header(&mut out, header);

    // The chain's KELFs: neff.json's KELF nodes (by func name where any has it, else by op),
    // or without neff.json the one found by its conventional name.
    let neff = last(log, NEFF, None);
    let mut kelf_names: [Option<&[u8]>; 2] = [None, None];
    if neff.is_none() {
        kelf_names[0] = [&b"kelf-0.json"[..], b"kelf-a.json"].into_iter().find(|n| last(log, KELF, Some(n)).is_some());
    }
    let by_func = neff.is_some_and(|g| entries(log, &g).any(|r| r.tag == NODE && r.body.first() == Some(&1)));
    let chain = |f: &mut dyn FnMut(&'_ [u8])| match &neff {
        Some(g) => entries(log, g).filter(|r| r.tag == NODE).for_each(|r| {
            let mut fields = r.reader();
            if let (Some(mark), Some(member)) = (fields.u8(), fields.str()) {
                if (mark == 1) == by_func {
                    f(member);
                }
            }
        }),
        None => kelf_names.iter().flatten().for_each(|m| f(m)),
    };

    out.key(false, "kelf");
    out.raw(b"[");
    let mut first = true;
    chain(&mut |member| {
        if !first {
            out.raw(b",");
        }
        first = false;
        let k = last(log, KELF, Some(member));
        let mut f = k.map(|k| k.commit.reader());
        let fields = f.as_mut().and_then(|f| {
            let (_, has_target, arch) = (f.u8()?, f.u8()? != 0, f.opt_u32()?);
            let (version, target) = (f.str()?, f.str()?);
            Some((version, has_target.then_some(target), arch))
        });
        out.raw(b"{");
        out.key(true, "member");
        out.lossy(member);
        out.key(false, "version");
        out.opt(fields.map(|f| f.0), |o, v| o.lossy(v));
        out.key(false, "target");
        out.opt(fields.and_then(|f| f.1), |o, v| o.lossy(v));
        out.key(false, "arch");
        out.opt(fields.and_then(|f| f.2), |o, v| o.u64(v.into()));
        out.raw(b"}");
    });
    out.raw(b"]");

    for (key, output) in [("inputs", 0u8), ("outputs", 1)] {
        out.key(false, key);
        out.raw(b"[");
        let mut first = true;
        for r in neff.iter().flat_map(|g| entries(log, g)).filter(|r| r.tag == TENSOR) {
            let mut f = r.reader();
            let Some((kind, nrt, size, name, dtype, shape)) =
                (|| Some((f.u8()?, f.u32()?, f.u64()?, f.str()?, f.str()?, f.str()?)))()
            else {
                continue;
            };
            if kind != output {
                continue;
            }
            if !first {
                out.raw(b",");
            }
            first = false;
            out.raw(b"{");
            out.key(true, "name");
            out.lossy(name);
            out.key(false, "dtype");
            out.lossy(dtype);
            out.key(false, "nrt_dtype");
            out.u64(nrt.into());
            out.key(false, "shape");
            out.raw(b"[");
            for (i, d) in shape.chunks_exact(4).enumerate() {
                if i > 0 {
                    out.raw(b",");
                }
                out.u64(u32::from_le_bytes(d.try_into().unwrap_or([0; 4])).into());
            }
            out.raw(b"]");
            out.key(false, "size");
            out.u64(size);
            out.raw(b"}");
        }
        out.raw(b"]");
    }

    out.key(false, "subgraphs");
    out.raw(b"[");
    let mut first = true;
    let mut short_index = None;
    // Each graph of each chain KELF, in order; `(kelf, graph)` positions so far, to find the
    // definitions shown before (the host moves a definition's vars into the first subgraph
    // that names it: a later one shows none).
    let mut seen_graphs = 0usize;
    chain(&mut |member| {
        let Some(k) = last(log, KELF, Some(member)) else { return };
        for g in entries(log, &k).filter(|r| r.tag == GRAPH) {
            let mut f = g.reader();
            let (Some(name), Some(definition)) = (f.str(), f.str()) else { continue };
            if !first {
                out.raw(b",");
            }
            first = false;
            let shown_before = graph_defs_before(log, &neff, &kelf_names, by_func, seen_graphs, definition);
            seen_graphs += 1;
            if let Err(n) = write_subgraph(&mut out, log, free, name, definition, shown_before) {
                short_index.get_or_insert(need_index(n));
            }
        }
    });
    out.raw(b"]");
    if let Some(needed) = short_index {
        return Err(InfoError::Work { needed });
    }

    out.key(false, "hash");
    write_hash(&mut out, header, integrity);

    out.key(false, "compiler_version");
    write_tool_version(&mut out, info, free);
    out.raw(b"}");
    if out.fits() {
        Ok(out.len())
    } else {
        Err(InfoError::Document { needed: out.len() })
    }
}

/// Whether a graph before position `upto` (over the chain's KELFs) names `definition`.
fn graph_defs_before(
    log: &[u8],
    neff: &Option<Group<'_>>,
    kelf_names: &[Option<&[u8]>; 2],
    by_func: bool,
    upto: usize,
    definition: &[u8],
) -> bool {
    let mut seen = 0usize;
    let mut found = false;
    let mut visit = |member: &[u8]| {
        let Some(k) = last(log, KELF, Some(member)) else { return };
        for g in entries(log, &k).filter(|r| r.tag == GRAPH) {
            if seen >= upto {
                return;
            }
            seen += 1;
            let mut f = g.reader();
            let _ = f.str();
            if f.str() == Some(definition) && last(log, DEF, Some(definition)).is_some() {
                found = true;
            }
        }
    };
    match neff {
        Some(g) => entries(log, g).filter(|r| r.tag == NODE).for_each(|r| {
            let mut fields = r.reader();
            if let (Some(mark), Some(member)) = (fields.u8(), fields.str()) {
                if (mark == 1) == by_func {
                    visit(member);
                }
            }
        }),
        None => kelf_names.iter().flatten().for_each(|m| visit(m)),
    }
    found
}

/// The `header` object.
fn write_header(out: &mut Out<'_>, h: &NeffHeader) {
    out.raw(b"{");
    out.key(true, "pkg_version");
    out.u64(h.pkg_version);
    out.key(false, "header_size");
    out.u64(h.header_size);
    out.key(false, "data_size");
    out.u64(h.data_size);
    out.key(false, "neff_version");
    out.raw(b"\"");
    out.u64(h.version_major);
    out.raw(b".");
    out.u64(h.version_minor);
    out.raw(b"\"");
    out.key(false, "build_version");
    out.lossy(h.build_version_bytes());
    out.key(false, "num_tpb");
    out.u64(h.num_tpb.into());
    out.key(false, "uuid");
    out.hex(&h.uuid.0);
    out.key(false, "name");
    out.lossy(h.name_bytes());
    out.key(false, "requested_tpb_count");
    out.u64(h.requested_tpb_count.into());
    out.key(false, "feature_bits");
    out.u64(h.feature_bits);
    out.key(false, "lnc_size");
    out.u64(h.lnc_size.into());
    out.raw(b"}");
}

/// The `hash` object: the stored digest and the outcome of the check.
fn write_hash(out: &mut Out<'_>, h: &NeffHeader, integrity: Option<Integrity>) {
    let integrity = integrity.unwrap_or(Integrity::NotRequested);
    let algorithm = h.hash_algorithm();
    out.raw(b"{");
    out.key(true, "algorithm");
    out.opt(algorithm, |o, a| {
        o.str(match a {
            HashAlgorithm::Md5 => "md5",
            HashAlgorithm::Sha256 => "sha256",
        })
    });
    out.key(false, "stored");
    out.hex(algorithm.map_or(&h.hash[..], |a| h.expected_digest(a)));
    out.key(false, "result");
    out.str(integrity.as_str());
    let (order, computed) = match integrity {
        Integrity::Match { order, computed } => (Some(order), Some(computed)),
        Integrity::Mismatch { computed, .. } => (None, Some(computed)),
        Integrity::NotRequested | Integrity::NotApplicable => (None, None),
    };
    out.key(false, "order");
    out.opt(order, |o, order| o.str(order.as_str()));
    out.key(false, "computed");
    out.opt(computed, |o, c| o.hex(c.as_bytes()));
    out.raw(b"}");
}

/// One subgraph object. `Err(n)`: the sorting index for `n` entries did not fit in `free`.
fn write_subgraph(
    out: &mut Out<'_>,
    log: &[u8],
    free: &mut [u8],
    name: &[u8],
    definition: &[u8],
    vars_shown_before: bool,
) -> Result<(), usize> {
    let def = last(log, DEF, Some(definition));
    let view = def.as_ref().and_then(def_view);
    out.raw(b"{");
    out.key(true, "name");
    out.lossy(name);
    out.key(false, "definition");
    out.lossy(definition);
    out.key(false, "version");
    out.opt(view.as_ref().and_then(|v| v.version), |o, v| o.lossy(v));

    // Vars by `var_id`, queues by name; ties keep the order read (the index is the record's
    // offset, which grows with it).
    let by_var_id = |r: &Rec<'_>| r.reader().u32().unwrap_or(0);
    out.key(false, "vars");
    out.raw(b"[");
    if let (Some(g), false) = (&def, vars_shown_before) {
        let n = sorted(log, free, g, VAR, |a, b| (by_var_id(a), a.at).cmp(&(by_var_id(b), b.at)))?;
        for (i, r) in index(free, n).filter_map(|at| Records { log, at }.next()).enumerate() {
            if i > 0 {
                out.raw(b",");
            }
            write_var(out, &r);
        }
    }
    out.raw(b"]");
    out.key(false, "dma_queues");
    out.raw(b"[");
    if let Some(g) = &def {
        let n = sorted(log, free, g, QUEUE, |a, b| (by_name(a), a.at).cmp(&(by_name(b), b.at)))?;
        for (i, r) in index(free, n).filter_map(|at| Records { log, at }.next()).enumerate() {
            if i > 0 {
                out.raw(b",");
            }
            write_queue(out, &r);
        }
    }
    out.raw(b"]");

    out.key(false, "engines");
    out.raw(b"[");
    if let (Some(g), Some(view)) = (&def, &view) {
        let dir = dir_of_bytes(definition);
        let mut first = true;
        for (slot, key) in ENGINE_KEYS.iter().enumerate() {
            let Some((Some(json), _)) = view.engines.get(slot).copied() else { continue };
            if !first {
                out.raw(b",");
            }
            first = false;
            out.raw(b"{");
            out.key(true, "engine");
            out.str(key.as_str());
            out.key(false, "json");
            joined(out, dir, json);
            let instr = instr_of(log, g, view, slot);
            out.key(false, "instr");
            out.opt(instr, |o, (d, n)| joined(o, d, n));
            // The member's size as the check reported it: its first copy in tar order.
            let size = instr.and_then(|(d, n)| {
                Records { log, at: 0 }
                    .filter(|r| r.tag == PAYLOAD)
                    .filter_map(|r| {
                        let mut f = r.reader();
                        let (seq, len, member) = (f.u32()?, f.u64()?, f.str()?);
                        is_joined_bytes(member, d, n).then_some((seq, len))
                    })
                    .min_by_key(|&(seq, _)| seq)
                    .map(|(_, len)| len)
            });
            out.key(false, "instr_size");
            out.opt(size, |o, s| o.u64(s));
            out.key(false, "ninstr");
            out.opt(size, |o, s| o.u64(s / 64));
            out.raw(b"}");
        }
    }
    out.raw(b"]");

    out.key(false, "carveouts");
    out.raw(b"[");
    let mut first = true;
    for r in def.iter().flat_map(|g| entries(log, g)).filter(|r| r.tag == CARVEOUT) {
        let mut f = r.reader();
        let Some((offset, size, start, num, kind)) = (|| Some((f.u64()?, f.u64()?, f.u64()?, f.u64()?, f.str()?)))()
        else {
            continue;
        };
        if !first {
            out.raw(b",");
        }
        first = false;
        out.raw(b"{");
        out.key(true, "type");
        out.lossy(kind);
        out.key(false, "offset");
        out.u64(offset);
        out.key(false, "size");
        out.u64(size);
        out.key(false, "start_partition");
        out.u64(start);
        out.key(false, "num_partitions");
        out.u64(num);
        out.raw(b"}");
    }
    out.raw(b"]");

    out.key(false, "fp8");
    out.opt(view.as_ref().and_then(|v| v.fp8), |o, (range, e4m3, e5m2, ocp, sis, sns)| {
        o.raw(b"{");
        o.key(true, "fp8_range_extension");
        o.bool(range);
        o.key(false, "emax_fp8_e4m3");
        o.u64(e4m3.into());
        o.key(false, "emax_fp8_e5m2");
        o.u64(e5m2.into());
        o.key(false, "ocp_sat");
        o.bool(ocp);
        o.key(false, "fp8_sis");
        o.bool(sis);
        o.key(false, "fp8_sns");
        o.bool(sns);
        o.raw(b"}");
    });
    out.raw(b"}");
    Ok(())
}

/// A queue record's name (after its fixed part).
fn by_name<'a>(r: &Rec<'a>) -> &'a [u8] {
    let mut f = r.reader();
    let _ = (f.opt_u32(), f.u32(), f.u8(), f.u32());
    f.str().unwrap_or(&[])
}

/// `dir/name`, or `name` at the root, as a JSON string.
fn joined(out: &mut Out<'_>, dir: &[u8], name: &[u8]) {
    if dir.is_empty() {
        out.lossy(name);
        return;
    }
    // Both parts are UTF-8 (member paths the core accepted): one string of three parts.
    let (Ok(dir), Ok(name)) = (core::str::from_utf8(dir), core::str::from_utf8(name)) else {
        out.null();
        return;
    };
    out.str_parts(&[dir, "/", name]);
}

fn write_var(out: &mut Out<'_>, r: &Rec<'_>) {
    let mut f = r.reader();
    let Some((var_id, mr, size, align, backing, has_file, name, var_type, file)) = (|| {
        Some((
            f.u32()?,
            f.opt_u32()?,
            f.opt_u64()?,
            f.opt_u64()?,
            f.opt_u64()?,
            f.u8()? != 0,
            f.str()?,
            f.str()?,
            f.str()?,
        ))
    })() else {
        return;
    };
    out.raw(b"{");
    out.key(true, "name");
    out.lossy(name);
    // The var's own keys as `def.json` names them (the contract's fields mirror them); `name`
    // is its key in `var` and `mr_type` is derived, so neither is a key of the var.
    out.key(false, Var::KEY_VAR_TYPE);
    out.lossy(var_type);
    out.key(false, "mr_type");
    out.opt(mr, |o, v| o.u64(v.into()));
    out.key(false, Var::KEY_VAR_ID);
    out.u64(var_id.into());
    out.key(false, Var::KEY_SIZE);
    out.opt(size, |o, v| o.u64(v));
    out.key(false, Var::KEY_ALIGNMENT);
    out.opt(align, |o, v| o.u64(v));
    out.key(false, Var::KEY_FILE_NAME);
    out.opt(has_file.then_some(file), |o, v| o.lossy(v));
    out.key(false, Var::KEY_BACKING_VARIABLE_OFF);
    out.opt(backing, |o, v| o.u64(v));
    out.raw(b"}");
}

fn write_queue(out: &mut Out<'_>, r: &Rec<'_>) {
    let mut f = r.reader();
    let Some((ring, num, has_owner, _, name, kind, owner, sems)) =
        (|| Some((f.opt_u32()?, f.u32()?, f.u8()? != 0, f.u32()?, f.str()?, f.str()?, f.str()?, f.str()?)))()
    else {
        return;
    };
    out.raw(b"{");
    out.key(true, "name");
    out.lossy(name);
    out.key(false, "type");
    out.lossy(kind);
    out.key(false, "ring_type");
    out.opt(ring, |o, v| o.u64(v.into()));
    out.key(false, "owner");
    out.opt(has_owner.then_some(owner), |o, v| o.lossy(v));
    out.key(false, "num_queues");
    out.u64(num.into());
    out.key(false, "semaphores");
    out.raw(b"[");
    for (i, s) in sems.chunks_exact(4).enumerate() {
        if i > 0 {
            out.raw(b",");
        }
        out.u64(u32::from_le_bytes(s.try_into().unwrap_or([0; 4])).into());
    }
    out.raw(b"]");
    out.raw(b"}");
}

/// Writes the offsets of `g`'s `tag` records into `free` (4 bytes each) sorted by `cmp`; their
/// count. `Err(n)`: `free` cannot hold `n` offsets.
fn sorted(
    log: &[u8],
    free: &mut [u8],
    g: &Group<'_>,
    tag: u8,
    cmp: impl Fn(&Rec<'_>, &Rec<'_>) -> core::cmp::Ordering,
) -> Result<usize, usize> {
    let n = entries(log, g).filter(|r| r.tag == tag).count();
    if n.saturating_mul(4) > free.len() {
        return Err(n);
    }
    for (i, r) in entries(log, g).filter(|r| r.tag == tag).enumerate() {
        set(free, i, r.at as u32);
    }
    // Heapsort in place: no memory beyond the index, and no recursion.
    let less = |free: &[u8], a: usize, b: usize| -> bool {
        let (ra, rb) =
            (Records { log, at: get(free, a) as usize }.next(), Records { log, at: get(free, b) as usize }.next());
        match (ra, rb) {
            (Some(ra), Some(rb)) => cmp(&ra, &rb) == core::cmp::Ordering::Less,
            _ => false,
        }
    };
    let sift = |free: &mut [u8], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            break;
        }
        if child + 1 < end && less(free, child, child + 1) {
            child += 1;
        }
        if !less(free, root, child) {
            break;
        }
        swap(free, root, child);
        root = child;
    };
    for start in (0..n / 2).rev() {
        sift(free, start, n);
    }
    for end in (1..n).rev() {
        swap(free, 0, end);
        sift(free, 0, end);
    }
    Ok(n)
}

/// The `i`-th offset of an index.
fn get(index: &[u8], i: usize) -> u32 {
    index.get(i * 4..i * 4 + 4).and_then(|b| b.try_into().ok()).map_or(u32::MAX, u32::from_le_bytes)
}

fn set(index: &mut [u8], i: usize, v: u32) {
    if let Some(b) = index.get_mut(i * 4..i * 4 + 4) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

fn swap(index: &mut [u8], a: usize, b: usize) {
    let (va, vb) = (get(index, a), get(index, b));
    set(index, a, vb);
    set(index, b, va);
}

/// The offsets of a sorted index of `n` entries.
fn index(free: &[u8], n: usize) -> impl Iterator<Item = usize> + '_ {
    (0..n).map(move |i| get(free, i) as usize)
}

/// `compiler_version`: `info.json`'s `tool_version`, when `info.json` is a JSON object with
/// that key holding a string (the last one, if it repeats), else `null`. `scratch` unescapes
/// its strings.
fn write_tool_version(out: &mut Out<'_>, info: &[u8], scratch: &mut [u8]) {
    // First the whole document is read (an invalid one gives `null`), counting the keys; then
    // the last `tool_version` is read again.
    let Some(nth) = last_tool_version(info, scratch) else {
        out.null();
        return;
    };
    let mut src = info;
    let mut tok = Tokenizer::new(scratch, DEPTH);
    let mut seen = 0usize;
    if tok.begin_object(&mut src).is_err() {
        out.null();
        return;
    }
    while let Ok(Some(key)) = tok.next_key(&mut src) {
        if key == "tool_version" {
            if seen == nth {
                match tok.read_str(&mut src) {
                    Ok(text) => out.str(text),
                    Err(_) => out.null(),
                }
                return;
            }
            seen += 1;
        }
        if tok.skip_value(&mut src).is_err() {
            break;
        }
    }
    out.null();
}

/// Nesting the host's JSON reader accepts (serde_json's recursion limit).
const DEPTH: u16 = 128;

/// Which `tool_version` key of `info` is the last, when `info` is a valid JSON object and that
/// key's value is a string.
fn last_tool_version(info: &[u8], scratch: &mut [u8]) -> Option<usize> {
    let mut src = info;
    let mut tok = Tokenizer::new(scratch, DEPTH);
    tok.begin_object(&mut src).ok()?;
    let (mut seen, mut last) = (0usize, None);
    while let Some(key) = tok.next_key(&mut src).ok()? {
        if key == "tool_version" {
            last = Some((seen, tok.peek_kind(&mut src).ok()? == TokenKind::Str));
            seen += 1;
        }
        tok.skip_value(&mut src).ok()?;
    }
    // Nothing but whitespace after the object.
    matches!(tok.next(&mut src).ok()?, Event::End).then_some(())?;
    match last {
        Some((n, true)) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::header::{field, word_swapped, DigestOrder, HashValue, HEADER_SIZE};

    fn header(pkg_version: u64, hash: [u8; 32]) -> NeffHeader {
        let mut bytes = [0u8; HEADER_SIZE];
        bytes[field::PKG_VERSION].copy_from_slice(&pkg_version.to_le_bytes());
        bytes[field::HASH].copy_from_slice(&hash);
        NeffHeader::parse(&bytes)
    }

    fn hash_object(h: &NeffHeader, integrity: Option<Integrity>) -> heapless::String<512> {
        let mut buf = [0u8; 512];
        let mut out = Out::new(&mut buf);
        write_hash(&mut out, h, integrity);
        assert!(out.fits());
        let len = out.len();
        heapless::String::try_from(core::str::from_utf8(&buf[..len]).unwrap()).unwrap()
    }

    /// matmul_small's MD5; its header stores it word-swapped (spec §2.6).
    const MD5: [u8; 16] =
        [0xef, 0xe9, 0xb3, 0xbc, 0x98, 0x16, 0x30, 0x77, 0xb9, 0x4c, 0x8b, 0xcd, 0xac, 0xf5, 0x1f, 0x47];

    #[test]
    fn the_hash_object_names_the_outcome_its_order_and_both_values() {
        let mut stored = [0u8; 32];
        stored[..16].copy_from_slice(&word_swapped(&MD5));
        let h = header(2, stored);
        let computed = HashValue::new(HashAlgorithm::Md5, &MD5);
        let matched = Integrity::Match { order: DigestOrder::WordSwapped, computed };
        assert_eq!(
            hash_object(&h, Some(matched)),
            r#"{"algorithm":"md5","stored":"bcb3e9ef77301698cd8b4cb9471ff5ac","result":"match","order":"word-swapped","computed":"efe9b3bc98163077b94c8bcdacf51f47"}"#
        );
        assert_eq!(
            hash_object(&h, None),
            r#"{"algorithm":"md5","stored":"bcb3e9ef77301698cd8b4cb9471ff5ac","result":"not-requested","order":null,"computed":null}"#
        );
        // pkg 1: the 32 bytes of a SHA-256; a mismatch shows what was computed, no order.
        let sha = Integrity::Mismatch {
            computed: HashValue::new(HashAlgorithm::Sha256, &[0x22; 32]),
            stored: HashValue::new(HashAlgorithm::Sha256, &[0x33; 32]),
        };
        let text = hash_object(&header(1, [0x33; 32]), Some(sha));
        let want = [
            r#"{"algorithm":"sha256","stored":""#,
            &"33".repeat_heapless(),
            r#"","result":"mismatch","order":null,"computed":""#,
            &"22".repeat_heapless(),
            r#""}"#,
        ];
        let mut expected = heapless::String::<512>::new();
        want.iter().for_each(|part| expected.push_str(part).unwrap());
        assert_eq!(text, expected);
    }

    trait RepeatHeapless {
        fn repeat_heapless(&self) -> heapless::String<64>;
    }

    impl RepeatHeapless for str {
        /// `self` 32 times (a 32-byte digest of one repeated byte, in hex).
        fn repeat_heapless(&self) -> heapless::String<64> {
            let mut s = heapless::String::new();
            (0..32).for_each(|_| s.push_str(self).unwrap());
            s
        }
    }
}
