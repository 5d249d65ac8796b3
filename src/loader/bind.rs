//! Binding, once the archive is finished: the chain walked from `neff.json`, every member it
//! names checked, every payload given its final role.
//!
//! The checks, in the runtime's order: the KELFs `neff.json` names are present (§15.18), the
//! target gate against the device (with the runtime's `NEFF_ARCH_INCOMPAT` cause), the graph
//! count against `lnc_size`, each graph's definition present and readable, the target's
//! architecture rules (§15.19: the cayman state-buffer carveouts apply because the KELF
//! targets cayman, not because the device is), each engine JSON and activation set present and
//! readable. Then each payload: its role from the chain (placing what was staged), instruction
//! and weight sizes; what nothing references is released. Last, every payload the chain names
//! must be present, and the placements go to the observer.

use super::book::Book;
use super::chain::{self, ChainError, ChainWarning, MemberText};
use super::index::{
    dir_of, usage_of_code, DefExt, FileVarRec, Landing, ManifestKind, ManifestRec, PayloadRec, RefKind, VarState,
    KELF_FALLBACK_NAMES, NO_SLOT,
};
use super::pass::{Counting, MEMBER_PATH};
use super::report::{DebugLine, LoadReport, Observer, PayloadReport, PayloadState, SubgraphReport};
use crate::arena::{List, NIL};
use crate::error::{CapacityError, Error, ErrorKind, Stage, Text, Warning, WarningKind, WarningSink};
use crate::hal::{AllocRequest, DeviceError, Hal, RegionId, USAGE_CLASS_COUNT};
use crate::manifest::def::{EngineKey, TargetCheck, ENGINE_KEYS};
use crate::manifest::{EngineJson, EngineType, Kelf, ManifestError, ManifestWarning};

fn missing(by: &str, stage: Stage, key: &str, path: &str) -> Error {
    Error::about_member(stage, by, ErrorKind::Chain(ChainError::MemberMissing { member: MemberText::new(path) }))
        .with_key_path(key)
}

/// Writes a placed landing back to `slot`; whether it is kept. When the device's notebook
/// refuses, the region the landing now names (adopted, perhaps, in place of the staged one the
/// stored landing still names) is released here: `release_all` would not know of it.
fn write_back<H: Hal>(
    hal: &mut H,
    arena: &mut crate::arena::Arena<'_>,
    landings: &super::index::Landings,
    slot: u32,
    landing: &Landing,
) -> Result<bool, ErrorKind> {
    if let Err(k) = landings.set(hal, arena, slot, landing) {
        if landing.region != NIL {
            let _ = hal.release(RegionId(landing.region));
        }
        return Err(k);
    }
    Ok(landing.is_kept())
}

/// `instr`, which an engine JSON needs when its `def.json` gives no `<eng>_instr` (§15.15).
static INSTR: crate::manifest::RequiredKey = crate::manifest::RequiredKey { key: EngineJson::KEY_INSTR, message: "" };

/// True when `address` is not a multiple of `align` (an alignment that is not a power of two,
/// which no record holds, counts as not met, as a failed `checked_rem` did).
fn misaligned(address: u64, align: u64) -> bool {
    !align.is_power_of_two() || address & align.wrapping_sub(1) != 0
}

/// A reached member whose read failed, when its error was not kept: the deferred store was
/// full. The store's limit, never a wrong result.
fn lost_error(stage: Stage, member: &str, slots: usize) -> Error {
    let capacity = CapacityError { limit: "DEFERRED_ERRORS", capacity: slots as u64 };
    Error::about_member(stage, member, ErrorKind::Capacity(capacity))
}

impl Book<'_> {
    /// The error a manifest the chain reaches gave when it was read (or that it was read as
    /// another kind than the chain names it as).
    fn reached(&self, rec: &ManifestRec, named_as: ManifestKind) -> Result<(), Error> {
        let member = self.arena.str(rec.member);
        if rec.kind != named_as {
            let e = ChainError::ReadAsOther { read_as: rec.kind, named_as };
            return Err(Error::about_member(named_as.stage(), member, ErrorKind::Chain(e)));
        }
        match rec.failed {
            None => Ok(()),
            Some(slot) => Err(self.kept_error(slot, rec.kind.stage(), member)),
        }
    }

    /// The error kept in deferred `slot` for `member`, or, when the store was full
    /// ([`NO_SLOT`]), the capacity error that says so.
    fn kept_error(&self, slot: u16, stage: Stage, member: &str) -> Error {
        match self.deferred.get(slot) {
            Some(e) if slot != NO_SLOT => *e,
            _ => lost_error(stage, member, self.deferred.capacity()),
        }
    }

    /// The manifest at `path` that the chain names as `kind`, checked; `Ok(None)` when absent.
    fn named(&self, path: &str, kind: ManifestKind) -> Result<Option<(u32, ManifestRec)>, Error> {
        match self.index.manifest(&self.arena, path) {
            Some((pos, rec)) => self.reached(&rec, kind).map(|()| Some((pos, rec))),
            None => Ok(None),
        }
    }

    /// Picks the KELFs of the chain: those `neff.json` names, or without it the one found by
    /// its conventional name.
    fn choose_kelfs(&mut self, sink: &mut impl WarningSink, observer: &mut impl Observer) -> Result<(), Error> {
        if self.index.neff.is_none() {
            let fallback = KELF_FALLBACK_NAMES.into_iter().find_map(|n| {
                self.index.manifest(&self.arena, n).filter(|(_, m)| m.kind == ManifestKind::Kelf).map(|(p, _)| (n, p))
            });
            let Some((name, pos)) = fallback else {
                let e = ChainError::NeffJsonMissing { neff: self.neff_name };
                return Err(Error::at_file(Stage::Chain, 0, ErrorKind::Chain(e)));
            };
            sink.warn(&Warning::about_member(Stage::Chain, name, WarningKind::Chain(ChainWarning::KelfFallback)));
            self.fallback_kelf = Some(pos);
            return Ok(());
        }
        let neff_member = self.index.neff.map(|p| self.index.manifests.get(&self.arena, p).member);
        let neff_member = neff_member.map_or("neff.json", |m| self.arena.str(m));
        for (_, rec) in self.index.kelf_names.iter(&self.arena).filter(|(_, k)| Some(k.mark) == self.kelf_mark) {
            let name = self.arena.str(rec.name);
            // libnrt logs the node as it finds it, before it looks the member up.
            observer.debug(&DebugLine::KelfNode { kelf: name });
            if self.named(name, ManifestKind::Kelf)?.is_none() {
                return Err(missing(neff_member, Stage::NeffJson, &RefKind::Kelf.key_path(rec.index), name));
            }
        }
        for (pos, rec) in self.index.manifests.iter(&self.arena) {
            let unnamed = rec.kind == ManifestKind::Kelf
                && !rec.superseded
                && rec.failed.is_none()
                && !self.index.chain_kelfs(&self.arena, self.kelf_mark, None).any(|(p, _)| p == pos);
            if unnamed {
                let member = self.arena.str(rec.member);
                sink.warn(&Warning::about_member(Stage::Kelf, member, WarningKind::Chain(ChainWarning::KelfNotNamed)));
            }
        }
        Ok(())
    }

    /// The chain checks, then placement of what was staged, then the report.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    pub(super) fn bind<H: Hal, S: WarningSink>(
        &mut self,
        hal: &mut H,
        report: &mut LoadReport,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        self.device_arch = hal.device_arch();
        self.choose_kelfs(sink, observer)?;
        self.check_manifests(sink)?;
        self.place_all(hal, sink)?;
        self.check_payload_references()?;
        self.report(hal, report, observer)
    }

    /// Every KELF, definition, engine JSON and activation set the chain names: present,
    /// readable, and what the KELF target asks.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn check_manifests(&self, sink: &mut impl WarningSink) -> Result<(), Error> {
        let arena = &self.arena;
        for (kpos, kelf) in self.index.chain_kelfs(arena, self.kelf_mark, self.fallback_kelf) {
            self.reached(&kelf, ManifestKind::Kelf)?;
            let kname = arena.str(kelf.member);
            let target = kelf.target_arch();
            if let (Some(device), Some(neff)) = (self.device_arch, target) {
                let legacy_ok = self.options.allow_legacy && neff.value() < device.value();
                if neff != device && !legacy_ok {
                    let e = ManifestError::ArchMismatch { neff: neff.value(), device: device.value() };
                    return Err(
                        Error::about_member(Stage::Kelf, kname, ErrorKind::Manifest(e)).with_key_path(Kelf::KEY_TARGET)
                    );
                }
            }
            if kelf.graphs != self.lnc_size {
                let w = ChainWarning::GraphCount { graphs: kelf.graphs, lnc_size: self.lnc_size };
                sink.warn(
                    &Warning::about_member(Stage::Kelf, kname, WarningKind::Chain(w)).with_key_path(Kelf::KEY_GRAPHS),
                );
            }
            // §15.19: the rules of the target; `*` takes the device's, and with no device none.
            let rules = match target.or(self.device_arch) {
                Some(arch) => TargetCheck::Device(arch),
                None => TargetCheck::None,
            };
            for (_, graph) in self.index.graphs.iter(arena).filter(|(_, g)| g.kelf == kpos) {
                let definition = arena.str(graph.definition);
                let def_key = RefKind::Definition.key_path(graph.index);
                let fail = |k| Error::about_member(Stage::Kelf, kname, k).with_key_path(&def_key);
                let dir = dir_of(definition);
                let earlier = self
                    .index
                    .chain_graphs(arena, self.kelf_mark, self.fallback_kelf)
                    .map(|(_, g)| g)
                    .take_while(|g| *g != graph)
                    .any(|g| dir_of(arena.str(g.definition)) == dir);
                if earlier {
                    return Err(fail(ErrorKind::Chain(ChainError::DuplicateSubgraph)));
                }
                let Some((_, def)) = self.named(definition, ManifestKind::Def)? else {
                    return Err(missing(kname, Stage::Kelf, &def_key, definition));
                };
                self.check_def(&def, rules, sink)?;
            }
        }
        Ok(())
    }

    /// One reached definition: its carveouts under the target's rules, its engine JSONs and
    /// activation sets.
    fn check_def(&self, def: &ManifestRec, rules: TargetCheck, sink: &mut impl WarningSink) -> Result<(), Error> {
        let arena = &self.arena;
        let member = arena.str(def.member);
        self.index.def_ext(arena, def).carveouts.to_def().check_carveouts(rules, self.options.allow_legacy).map_err(
            |(path, e)| Error::about_member(Stage::DefJson, member, ErrorKind::Manifest(e)).with_key_path(&path),
        )?;
        let dir = dir_of(member);
        // A library added twice (spec §7.6): the runtime's `UCode Library %s has already been added`.
        let def_pos = self.index.def(arena, member).map_or(NIL, |(p, _)| p);
        // The libraries' manifest a `ucode_lib` string names, in the definition's directory:
        // then it holds the libraries, else the definition does.
        let mut libs = (def_pos, RefKind::UcodeLib, member);
        if let Some((pos, rec)) = self.named_manifests((def_pos, member, Stage::DefJson), RefKind::UcodeLibJson, dir)? {
            libs = (pos, RefKind::ListedUcodeLib, arena.str(rec.member));
        }
        let names = || self.index.names_by(arena, libs.0, libs.1);
        for (i, (lib, index)) in names().enumerate() {
            if names().take(i).any(|(earlier, _)| arena.bytes(earlier) == arena.bytes(lib)) {
                let e = ManifestError::UcodeLibTwice(crate::error::Text::new(arena.str(lib)));
                let stage = if libs.2 == member { Stage::DefJson } else { Stage::Engine };
                return Err(
                    Error::about_member(stage, libs.2, ErrorKind::Manifest(e)).with_key_path(&libs.1.key_path(index))
                );
            }
        }
        for engine in ENGINE_KEYS {
            let name = self.index.def_ext(arena, def).engines.get(engine.slot()).map_or("", |s| arena.str(*s));
            if name.is_empty() {
                continue;
            }
            let path = Self::joined(dir, name);
            let Some((json_pos, json)) = self.named(path.as_str(), ManifestKind::Engine)? else {
                return Err(missing(member, Stage::DefJson, engine.as_str(), path.as_str()));
            };
            self.check_instr(def, engine, &json, path.as_str(), sink)?;
            if engine != EngineKey::Tpb(EngineType::Act) {
                continue;
            }
            self.named_manifests((json_pos, path.as_str(), Stage::Engine), RefKind::ActSet, dir)?;
        }
        Ok(())
    }

    /// The manifests of `kind` that the manifest `by` (position, member, stage) names in
    /// `dir` (a row of the table that names manifests: activation sets, the libraries'
    /// manifest), each reached; the error of the first that is missing, else the last.
    // Not inlined: one copy for every such row.
    #[inline(never)]
    fn named_manifests(
        &self,
        by: (u32, &str, Stage),
        kind: RefKind,
        dir: &str,
    ) -> Result<Option<(u32, ManifestRec)>, Error> {
        let arena = &self.arena;
        let suffix = kind.row().map_or("", |r| r.suffix);
        let mut last = None;
        for (name, index) in self.index.names_by(arena, by.0, kind) {
            let mut path = Self::joined(dir, arena.str(name));
            let _ = path.push_str(suffix);
            match self.named(path.as_str(), ManifestKind::Engine)? {
                Some(found) => last = Some(found),
                None => return Err(missing(by.1, by.2, &kind.key_path(index), &path)),
            }
        }
        Ok(last)
    }

    /// §15.15: the engine JSON's `instr` wins over `<eng>_instr`; a difference is worth a
    /// warning, and with neither the stream cannot be found.
    // A frame of its own: its warning and error stay off the deeper paths of `check_def`.
    #[inline(never)]
    fn check_instr(
        &self,
        def: &ManifestRec,
        engine: EngineKey,
        json: &ManifestRec,
        path: &str,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        let arena = &self.arena;
        let def_instr = self.index.def_ext(arena, def).engine_instrs.get(engine.slot()).map_or("", |s| arena.str(*s));
        match (json.has_instr, def_instr) {
            (false, "") => {
                let e = ManifestError::MissingKey { key: &INSTR, within: Text::new(path) };
                let e = Error::about_member(Stage::Engine, path, ErrorKind::Manifest(e));
                Err(e.with_key_path(EngineJson::KEY_INSTR))
            }
            (true, d) if !d.is_empty() && d != arena.str(json.instr) => {
                if let EngineKey::Tpb(engine) = engine {
                    let (def_instr, engine_instr) = (Text::new(d), Text::new(arena.str(json.instr)));
                    let w = ManifestWarning::InstrMismatch { engine: engine.value(), def_instr, engine_instr };
                    let w = Warning::about_member(Stage::Engine, path, WarningKind::Manifest(w));
                    sink.warn(&w.with_key_path(EngineJson::KEY_INSTR));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `dir/name` for messages and lookups (a longer path is cut: it then matches nothing).
    fn joined(dir: &str, name: &str) -> heapless::String<{ MEMBER_PATH }> {
        let mut out = heapless::String::new();
        Self::join_into(&mut out, dir, name);
        out
    }

    /// [`Self::joined`] into `out`, for a loop that names one member after another: a path
    /// returned by value is copied whole (`MEMBER_PATH` bytes, 16 KiB on a host) at each call.
    fn join_into(out: &mut heapless::String<{ MEMBER_PATH }>, dir: &str, name: &str) {
        out.clear();
        if !dir.is_empty() {
            let _ = out.push_str(dir);
            let _ = out.push('/');
        }
        let _ = out.push_str(name);
    }

    /// Every payload: its role from the chain (placing what was staged), its size checks; what
    /// nothing references is released.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn place_all<H: Hal>(&mut self, hal: &mut H, sink: &mut impl WarningSink) -> Result<(), Error> {
        let mut pos = self.index.payloads.first();
        for _ in 0..self.index.payloads.len() {
            if pos == NIL {
                break;
            }
            let next = List::<PayloadRec>::next_after(&self.arena, pos);
            let mut p = self.index.payloads.get(&self.arena, pos);
            let member = self.arena.str(p.member);
            if let Some(slot) = p.failed {
                // Its read failed before anything named it: an error only if it is reached.
                if self.role_of(member).is_some() {
                    return Err(self.kept_error(slot, Stage::Payload, member));
                }
                let warning = WarningKind::Chain(ChainWarning::Unreferenced);
                sink.warn(&Warning::about_member(Stage::Chain, member, warning));
            } else {
                let landing = self.place_one(hal, member, p.landed, p.quiet, sink)?;
                p.kept = write_back(hal, &mut self.arena, &self.index.landings, p.landed, &landing)
                    .map_err(|k| Error::about_member(Stage::Hal, self.arena.str(p.member), k))?;
                self.index.payloads.set(&mut self.arena, pos, &p);
            }
            pos = next;
        }
        let mut member = heapless::String::new();
        let mut ext_pos = self.index.def_exts.first();
        for _ in 0..self.index.def_exts.len() {
            if ext_pos == NIL {
                break;
            }
            let ext = self.index.def_exts.get(&self.arena, ext_pos);
            let mut pos = ext.vars.first();
            for _ in 0..ext.vars.len() {
                if pos == NIL {
                    break;
                }
                let next = List::<FileVarRec>::next_after(&self.arena, pos);
                let mut v = self.index.var(&self.arena, pos);
                if v.has_landed() {
                    self.var_member_into(ext.def, &v, &mut member);
                    let landing = self.place_one(hal, &member, v.landed, false, sink)?;
                    v.kept = write_back(hal, &mut self.arena, &self.index.landings, v.landed, &landing)
                        .map_err(|k| Error::about_member(Stage::Hal, &member, k))?;
                    self.index.set_var(&mut self.arena, pos, &v);
                }
                pos = next;
            }
            ext_pos = List::<DefExt>::next_after(&self.arena, ext_pos);
        }
        Ok(())
    }

    /// The member path of a file variable of the definition at `def` (`dir/name`).
    fn var_member(&self, def: u32, v: &FileVarRec) -> heapless::String<{ MEMBER_PATH }> {
        let mut out = heapless::String::new();
        self.var_member_into(def, v, &mut out);
        out
    }

    /// [`Self::var_member`] into `out` ([`Self::join_into`] says why).
    fn var_member_into(&self, def: u32, v: &FileVarRec, out: &mut heapless::String<{ MEMBER_PATH }>) {
        let def = self.index.manifests.get(&self.arena, def);
        Self::join_into(out, dir_of(self.arena.str(def.member)), self.arena.str(v.file));
    }

    /// Places one landed member (its landing in `slot`) by the role the chain gives it, or
    /// releases it when it has none (quietly when it was read as a manifest too: then the chain
    /// may name it as one); the landing as it is now, to write back.
    fn place_one<H: Hal>(
        &self,
        hal: &mut H,
        member: &str,
        slot: u32,
        quiet: bool,
        sink: &mut impl WarningSink,
    ) -> Result<Landing, Error> {
        let fail = |stage, k| Error::about_member(stage, member, k);
        let mut p = self.index.landings.get(hal, &self.arena, slot).map_err(|k| fail(Stage::Hal, k))?;
        let state = PayloadState::from_code(p.state);
        let Some(role) = self.role_of(member) else {
            if p.region != NIL {
                hal.release(RegionId(p.region)).map_err(|e| fail(Stage::Hal, ErrorKind::Hal(e.kind())))?;
            }
            p.region = NIL;
            p.state = PayloadState::Released.code();
            if !quiet {
                let warning = WarningKind::Chain(ChainWarning::Unreferenced);
                sink.warn(&Warning::about_member(Stage::Chain, member, warning));
            }
            return Ok(p);
        };
        if role.instr {
            let warning =
                chain::check_instr_size(p.len, member).map_err(|e| fail(Stage::Chain, ErrorKind::Chain(e)))?;
            if let Some(w) = warning {
                sink.warn(&Warning::about_member(Stage::Chain, member, WarningKind::Chain(w)));
            }
        }
        if let Some(declared) = role.expect_len {
            if declared != p.len {
                let e = ChainError::VarSizeMismatch { declared, actual: p.len };
                return Err(fail(Stage::Chain, ErrorKind::Chain(e)));
            }
        }
        // Staged payloads take their role now; a payload placed on arrival is placed again if
        // the full chain gives it another class, core or alignment.
        let usage = super::index::usage_code(role.usage);
        let address = |hal: &H| hal.address(RegionId(p.region)).map_err(|e| fail(Stage::Hal, ErrorKind::Hal(e.kind())));
        let misplaced = state == PayloadState::Staged
            || p.usage != usage
            || p.core != role.core
            // `align` is a power of two (a var's is `1 << log2`, an instruction stream's 64):
            // a mask, not a 64-bit division (the software divider on a Cortex-M4).
            || (p.region != NIL && misaligned(address(hal)?, role.align));
        if misplaced && p.region != NIL {
            let req = AllocRequest { size: p.len, align: role.align, usage: role.usage, core: role.core };
            let region = hal.adopt(RegionId(p.region), &req).map_err(|e| fail(Stage::Hal, ErrorKind::Hal(e.kind())))?;
            p.region = region.0;
        }
        if state == PayloadState::Staged {
            // An empty payload has no region: its role is all it needed.
            p.state = PayloadState::Placed.code();
        }
        p.usage = usage;
        p.core = role.core;
        Ok(p)
    }

    /// The error for a payload the chain reaches at `path` that is not kept: the error its
    /// read gave (kept while nothing named it), or `missing from the archive`.
    fn missing_payload(&self, by: &str, key: &str, path: &str) -> Error {
        let arena = &self.arena;
        let failed =
            self.index.payloads.iter(arena).filter(|(_, p)| arena.eq(p.member, path)).find_map(|(_, p)| p.failed);
        match failed {
            Some(slot) => self.kept_error(slot, Stage::Payload, path),
            None => missing(by, Stage::Chain, key, path),
        }
    }

    /// Whether the payload at member path `path` is present and kept.
    fn has_payload(&self, path: &str) -> bool {
        let arena = &self.arena;
        self.index.payload_named(arena, path).is_some_and(|(_, p)| p.kept)
            || self.index.var_named(arena, path, VarState::Kept).is_some()
    }

    /// Every payload a reached manifest names must be in the archive: the references
    /// placement reads ([`Index::payload_refs`](super::index::Index::payload_refs)), each
    /// present, or the error of the first that is not.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn check_payload_references(&self) -> Result<(), Error> {
        let arena = &self.arena;
        let index = &self.index;
        for (_, graph) in index.chain_graphs(arena, self.kelf_mark, self.fallback_kelf) {
            let Some((def_pos, def)) = index.def(arena, arena.str(graph.definition)) else { continue };
            let dir = dir_of(arena.str(def.member));
            let missing = index.payload_refs(arena, def_pos, &def, None, &mut |r| {
                if r.var.is_some_and(|(_, v)| v.is_kept()) {
                    return None;
                }
                let path = Self::joined(dir, arena.str(r.name));
                let by = arena.str(r.by.member);
                (!self.has_payload(&path)).then(|| self.missing_payload(by, &r.row.kind.key_path(r.index), &path))
            });
            if let Some(e) = missing {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The placements (the other payloads in tar order, then the weights in the order their
    /// `def.json`s declare them; [`PayloadReport::seq`] gives the tar order) and each
    /// subgraph's accounting, in core order.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn report<H: Hal>(&self, hal: &H, report: &mut LoadReport, observer: &mut impl Observer) -> Result<(), Error> {
        let arena = &self.arena;
        let landings = &self.index.landings;
        let recall = |member: &str, slot: u32| {
            landings.get(hal, arena, slot).map_err(|k| Error::about_member(Stage::Hal, member, k))
        };
        let mut emit = |member: &str, p: &Landing| -> Result<(), Error> {
            let state = PayloadState::from_code(p.state);
            let region = (p.region != NIL).then_some(RegionId(p.region));
            let address = match region {
                Some(r) => Some(
                    hal.address(r).map_err(|e| Error::about_member(Stage::Hal, member, ErrorKind::Hal(e.kind())))?,
                ),
                None => None,
            };
            let entry = PayloadReport {
                member,
                seq: p.seq,
                core: (p.core != u8::MAX).then_some(p.core),
                usage: usage_of_code(p.usage),
                len: p.len,
                member_len: p.member_len(),
                digest: p.digest,
                region,
                address,
                state,
            };
            match state {
                PayloadState::Released => report.released = report.released.saturating_add(1),
                _ => {
                    report.placed = report.placed.saturating_add(1);
                    report.bytes_placed = report.bytes_placed.saturating_add(p.len);
                }
            }
            observer.payload(&entry);
            Ok(())
        };
        // A member read both ways that the chain took as a manifest is no payload to report.
        let released = PayloadState::Released.code();
        for (_, p) in self.index.payloads.iter(arena) {
            let member = arena.str(p.member);
            let landing = recall(member, p.landed)?;
            if !(p.quiet && landing.state == released) {
                emit(member, &landing)?;
            }
        }
        let mut emitted = Ok(());
        let mut member = heapless::String::new();
        self.index.find_var(arena, &mut |ext, v| {
            if v.has_landed() {
                self.var_member_into(ext.def, v, &mut member);
                emitted = recall(&member, v.landed).and_then(|landing| emit(&member, &landing));
            }
            emitted.is_err()
        });
        emitted?;
        for (core, graph) in self.index.chain_graphs(arena, self.kelf_mark, self.fallback_kelf) {
            let mut sg = SubgraphReport {
                name: arena.str(graph.name),
                core,
                allocations: 0,
                bytes_placed: 0,
                bytes_by_usage: [0; USAGE_CLASS_COUNT],
            };
            let mut add = |p: &Landing| {
                if p.core == core && p.is_kept() {
                    sg.add(usage_of_code(p.usage), p.len);
                }
            };
            for (_, p) in self.index.payloads.iter(arena).filter(|(_, p)| p.kept) {
                add(&recall(arena.str(p.member), p.landed)?);
            }
            let mut added = Ok(());
            self.index.find_var(arena, &mut |ext, v| {
                if v.is_kept() {
                    added = landings
                        .get(hal, arena, v.landed)
                        .map(|landing| add(&landing))
                        .map_err(|k| Error::about_member(Stage::Hal, &self.var_member(ext.def, v), k));
                }
                added.is_err()
            });
            added?;
            report.subgraphs = report.subgraphs.saturating_add(1);
            observer.subgraph(&sg);
        }
        if let Some((_, k)) = self.index.chain_kelfs(arena, self.kelf_mark, self.fallback_kelf).next() {
            report.target.clear();
            let target = match k.target_arch() {
                Some(a) => a.as_str(),
                None => "*",
            };
            let _ = report.target.push_str(target);
        }
        Ok(())
    }
}
