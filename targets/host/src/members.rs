//! What the loader's own pass shows of every member: each member's name, size, digest and
//! offset (debug data and producer metadata included, which the loader skips), and the bytes of
//! a few small members it skips (`info.json`, whose `tool_version` names the compiler).
//!
//! [`MemberLogger`] is an observer: the loader shows it every member as its walk meets it
//! ([`Observer::member`]) and, when it asks, the member's body as it streams past
//! ([`Observer::member_bytes`]). The tar rules (PAX, GNU long names, dropped and skipped members)
//! are the core's, applied once, in the one pass: nothing reads the tar stream a second time.
//! Each member is digested as it streams past; nothing is held whole except the members asked
//! for, up to [`MemberOptions::capture_limit`] bytes each (the member list, when asked for,
//! grows with the number of members, as `tar -t` does).

use neff::digest::Digest64;
use neff::loader::{DebugLine, Manifest, MemberReport, Observer, PayloadReport, SubgraphReport, SubgraphTables};
use neff::manifest::{Entry, IoTensor, KbinDmaHeader, SbCarveout};

/// The producer metadata member whose `tool_version` names the compiler (spec §10.1).
pub const INFO_JSON: &str = "info.json";

/// What the member log keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberOptions {
    /// Keep a [`MemberRecord`] (name, size, digest) for every member.
    pub list: bool,
    /// Members whose bytes are kept, by exact name.
    pub capture: Vec<String>,
    /// The most bytes kept of a captured member; a longer one is marked cut, not kept.
    pub capture_limit: u64,
}

impl MemberOptions {
    /// Keeps `info.json` (up to 1 MiB: real ones are well under 1 KiB).
    pub fn producer() -> Self {
        MemberOptions { list: false, capture: vec![INFO_JSON.to_owned()], capture_limit: 1 << 20 }
    }

    /// Keeps `info.json` and a record of every member.
    pub fn members() -> Self {
        MemberOptions { list: true, ..Self::producer() }
    }
}

/// One regular member of the tar stream, as the core's tar walker yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRecord {
    /// Its path (one leading `./` stripped, as the core does).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// XXH3-64 of its bytes (what `xxhsum -H3` prints for the member as `neff unpack` writes it).
    pub digest: u64,
    /// Where its bytes start in the tar stream (what [`crate::index::MemberIndex`] seeks to).
    pub offset: u64,
}

/// A captured member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The member's path.
    pub name: String,
    /// Its bytes, or `None` when it was longer than the capture limit.
    pub bytes: Option<Vec<u8>>,
}

/// What the pass showed of its members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberLog {
    /// Every regular member in tar order (when [`MemberOptions::list`] asked for them).
    pub members: Vec<MemberRecord>,
    /// The captured members, in tar order (a later copy of a name comes after an earlier one).
    pub captured: Vec<Captured>,
}

impl MemberLog {
    /// The bytes of the last copy of member `name`, if captured whole.
    pub fn captured(&self, name: &str) -> Option<&[u8]> {
        self.captured.iter().rev().find(|c| c.name == name).and_then(|c| c.bytes.as_deref())
    }

    /// `tool_version` of `info.json` (the compiler that wrote the NEFF, e.g.
    /// `2.23.6484.0+3b612583`), when the member was captured and holds that string.
    pub fn tool_version(&self) -> Option<String> {
        tool_version(self.captured(INFO_JSON)?)
    }
}

/// `tool_version` of an `info.json` document, if it is a JSON object with that string.
pub fn tool_version(info_json: &[u8]) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_slice(info_json).ok()?;
    doc.get("tool_version")?.as_str().map(str::to_owned)
}

/// The member being shown.
struct Open {
    record: MemberRecord,
    digest: Digest64,
    capture: bool,
    kept: Option<Vec<u8>>,
}

/// The observer that keeps a [`MemberLog`] as [`MemberOptions`] asks.
pub struct MemberLogger {
    options: MemberOptions,
    log: MemberLog,
    open: Option<Open>,
}

impl MemberLogger {
    /// A log keeping what `options` asks for.
    pub fn new(options: MemberOptions) -> Self {
        MemberLogger { options, log: MemberLog::default(), open: None }
    }

    /// What was logged (a member whose body was not shown whole is left out).
    pub fn finish(self) -> MemberLog {
        self.log
    }
}

impl Observer for MemberLogger {
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        let capture = self.options.capture.iter().any(|c| c == member.name);
        self.open = (self.options.list || capture).then(|| Open {
            record: MemberRecord {
                name: member.name.to_owned(),
                size: member.size,
                digest: 0,
                offset: member.data_offset,
            },
            digest: Digest64::new(),
            capture,
            kept: (capture && member.size <= self.options.capture_limit).then(Vec::new),
        });
        self.open.is_some()
    }

    fn member_bytes(&mut self, bytes: &[u8]) {
        if let Some(open) = self.open.as_mut() {
            if self.options.list {
                open.digest.update(bytes);
            }
            if let Some(kept) = open.kept.as_mut() {
                kept.extend_from_slice(bytes);
            }
        }
    }

    fn member_end(&mut self) {
        let Some(Open { mut record, digest, capture, kept }) = self.open.take() else { return };
        if capture {
            self.log.captured.push(Captured { name: record.name.clone(), bytes: kept });
        }
        if self.options.list {
            record.digest = digest.finish();
            self.log.members.push(record);
        }
    }
}

/// Two observers as one: each call goes to both, in order; a member's bytes go to whichever
/// asked for them.
pub struct Tee<'a, A: ?Sized, B: ?Sized> {
    /// The first observer.
    pub first: &'a mut A,
    /// The second observer.
    pub second: &'a mut B,
    /// Which of them asked for the current member's bytes.
    asked: (bool, bool),
}

impl<'a, A: ?Sized, B: ?Sized> Tee<'a, A, B> {
    /// `first`, then `second`.
    pub fn new(first: &'a mut A, second: &'a mut B) -> Self {
        Tee { first, second, asked: (false, false) }
    }
}

impl<A: Observer + ?Sized, B: Observer + ?Sized> Observer for Tee<'_, A, B> {
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        self.asked = (self.first.member(member), self.second.member(member));
        self.asked.0 || self.asked.1
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        if self.asked.0 {
            self.first.member_bytes(bytes);
        }
        if self.asked.1 {
            self.second.member_bytes(bytes);
        }
    }
    fn member_end(&mut self) {
        if self.asked.0 {
            self.first.member_end();
        }
        if self.asked.1 {
            self.second.member_end();
        }
    }
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.first.manifest(member, manifest);
        self.second.manifest(member, manifest);
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.first.entry(member, entry);
        self.second.entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        self.first.io_tensor(tensor);
        self.second.io_tensor(tensor);
    }
    fn payload(&mut self, payload: &PayloadReport<'_>) {
        self.first.payload(payload);
        self.second.payload(payload);
    }
    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        self.first.subgraph(subgraph);
        self.second.subgraph(subgraph);
    }
    fn debug(&mut self, line: &DebugLine<'_>) {
        self.first.debug(line);
        self.second.debug(line);
    }
    fn dma_queue(&mut self, member: &str, name: &str, queue: &KbinDmaHeader) {
        self.first.dma_queue(member, name, queue);
        self.second.dma_queue(member, name, queue);
    }
    fn carveout(&mut self, member: &str, index: u16, carveout: &SbCarveout) {
        self.first.carveout(member, index, carveout);
        self.second.carveout(member, index, carveout);
    }
    fn subgraph_tables(&mut self, member: &str, tables: &SubgraphTables) {
        self.first.subgraph_tables(member, tables);
        self.second.subgraph_tables(member, tables);
    }
}
