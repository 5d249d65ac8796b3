//! `neff_info`: the `neff info --json` document (spec `cli-contract.md`) written into a
//! caller's buffer, from one check of the NEFF. The document is the core's
//! ([`neff::info`]: the record log in the caller's work buffer, sorted and written after the
//! check); this file runs the check with that log as its observer, the caller's observer
//! getting the placements as in a check.

use neff::header::{Integrity, NeffHeader};
use neff::info::InfoLog;
use neff::loader::{LoadReport, Loader, Manifest, MemberReport, Observer, PayloadReport, Storage};
use neff::manifest::{Arch, Entry, IoTensor};
use neff::Error;

use crate::{CObserver, Lent, BUILTIN_ARENA};

/// The info log in the caller's work buffer.
pub(crate) type Work<'b> = InfoLog<&'b mut [u8]>;

/// The observer of an info pass: the document's log, and the caller's observer for
/// placements.
pub(crate) struct InfoObserver<'w, 'b> {
    work: &'w mut Work<'b>,
    c: CObserver,
}

impl Observer for InfoObserver<'_, '_> {
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        self.work.member(member)
    }
    fn member_bytes(&mut self, bytes: &[u8]) {
        self.work.member_bytes(bytes);
    }
    fn member_end(&mut self) {
        self.work.member_end();
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.work.entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        self.work.io_tensor(tensor);
    }
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.work.manifest(member, manifest);
    }
    fn payload(&mut self, p: &PayloadReport<'_>) {
        self.c.payload(p);
        self.work.payload(p);
    }
    fn subgraph(&mut self, s: &neff::loader::SubgraphReport<'_>) {
        self.c.subgraph(s);
    }
}

/// The check of an info call: the archive (borrowed out of its `Result`, as a load's) and the
/// loader, each a local of this frame for the call. The header and the integrity outcome are
/// returned for the document.
#[inline(never)]
pub(crate) fn run(
    lent: Lent<'_>,
    arch: Option<Arch>,
    work: &mut Work<'_>,
    report: &mut LoadReport,
) -> Result<(NeffHeader, Option<Integrity>), Error> {
    let Lent { reader, file_size, arena, replay, options, observer, .. } = lent;
    let mut sink = CObserver { ctx: observer.ctx, payload: None, warning: observer.warning };
    let mut opened = crate::open(reader, file_size, options.verify_integrity, &mut sink);
    let archive = match &mut opened {
        Ok(archive) => archive,
        Err(e) => return Err(*e),
    };
    let header = *archive.header();
    let mut own = [0u8; BUILTIN_ARENA];
    let arena = match arena {
        Some(lent) => lent,
        None => &mut own[..],
    };
    let storage = Storage { arena, replay, deferred: &mut [], whole_names: &mut [] };
    let mut loader = Loader::with_storage(storage, options.load_options());
    let mut info = InfoObserver { work, c: observer };
    loader.check(archive, arch, report, &mut info, &mut sink)?;
    Ok((header, report.integrity))
}
