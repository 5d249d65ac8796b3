//! What can end a command, and how it is told: one `error: ...` line on stderr, optional
//! `hint: ...` lines, and the exit status of `spec/cli-contract.md`.

use std::fmt;
use std::path::Path;

/// Exit status: success.
pub const EXIT_OK: i32 = 0;
/// Exit status: the input was rejected (bad NEFF, unsafe member, ...).
pub const EXIT_REJECTED: i32 = 1;
/// Exit status: a usage error or a path that cannot be read or written.
pub const EXIT_USAGE: i32 = 2;

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments (exit 2).
    Usage {
        /// The one-line message.
        message: String,
    },
    /// A path that cannot be opened, read, created or written (exit 2).
    Path {
        /// The path as given.
        path: String,
        /// What went wrong with it.
        message: String,
    },
    /// The input was rejected (exit 1). `message` already names stage, member, key and byte.
    Rejected {
        /// The one-line message (a core `neff::Error` prints as `member: key.path: message (byte N)`).
        message: String,
        /// Lines printed after it as `hint: ...`.
        hints: Vec<String>,
        /// The core's refusal field by field, when the core refused (for bindings).
        fault: Option<Box<Fault>>,
    },
}

/// A core refusal field by field, as bindings (the Python package's `NeffError`) give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The stable code (`ErrorKind::code`, docs/error-codes.md).
    pub code: u16,
    /// The runtime status it maps to.
    pub status: neff::Status,
    /// The stage that refused (`Stage::name`).
    pub stage: &'static str,
    /// The member, whole; `None` outside one.
    pub member: Option<String>,
    /// The JSON key path, whole; `None` outside JSON.
    pub key_path: Option<String>,
    /// The byte offset and what it counts from (`file`, `archive`, `member`); `None` without one.
    pub offset: Option<(u64, &'static str)>,
    /// What went wrong (the kind's text, without the place).
    pub reason: String,
    /// The warnings the pass raised before it refused (already printed as `warning: ...`).
    pub warnings: Vec<neff::Warning>,
}

impl Fault {
    /// The fields of core error `e`, with the member and key path as given (whole names).
    pub fn of(e: &neff::Error, member: Option<&str>, key_path: Option<&str>) -> Self {
        let text = |given: Option<&str>, kept: &str| {
            given.map(str::to_owned).or_else(|| (!kept.is_empty()).then(|| kept.to_owned()))
        };
        let base = |b| match b {
            neff::error::OffsetBase::File => "file",
            neff::error::OffsetBase::Archive => "archive",
            _ => "member",
        };
        Fault {
            code: e.kind.code(),
            status: e.status(),
            stage: e.stage.name(),
            member: text(member, e.member.as_str()),
            key_path: text(key_path, e.key_path.as_str()),
            offset: e.position().map(|(offset, b)| (offset, base(b))),
            reason: e.kind.to_string(),
            warnings: Vec::new(),
        }
    }
}

/// Whether [`print_warning`] writes to stderr (the command's way); bindings turn it off and
/// hand warnings to their caller instead.
static WARNINGS_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns the `warning: ...` lines on stderr on or off, for the whole process.
pub fn set_warnings_to_stderr(on: bool) {
    WARNINGS_TO_STDERR.store(on, std::sync::atomic::Ordering::Relaxed);
}

impl CliError {
    /// A rejection with no hint.
    pub fn rejected(message: impl Into<String>) -> Self {
        CliError::Rejected { message: message.into(), hints: Vec::new(), fault: None }
    }

    /// A rejection with one hint.
    pub fn rejected_with_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        CliError::Rejected { message: message.into(), hints: vec![hint.into()], fault: None }
    }

    /// A path error from an I/O error.
    pub fn path(path: &Path, err: &std::io::Error) -> Self {
        CliError::Path { path: path.display().to_string(), message: io_message(err) }
    }

    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Self {
        CliError::Usage { message: message.into() }
    }

    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage { .. } | CliError::Path { .. } => EXIT_USAGE,
            CliError::Rejected { .. } => EXIT_REJECTED,
        }
    }

    /// Prints the error (and its hints) on stderr, one line each.
    pub fn print(&self) {
        stderr_line("error", &self.to_string());
        if let CliError::Rejected { hints, .. } = self {
            for hint in hints {
                stderr_line("hint", hint);
            }
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage { message } => f.write_str(message),
            CliError::Path { path, message } => write!(f, "{path}: {message}"),
            CliError::Rejected { message, .. } => f.write_str(message),
        }
    }
}

impl From<neff::Error> for CliError {
    /// A core error is a rejection (exit 1), printed as the core's `Display` with a hint
    /// where one helps; a failing read of the input is a path error (exit 2).
    fn from(e: neff::Error) -> Self {
        let line = e.to_string();
        CliError::from_core(e, line)
    }
}

impl CliError {
    /// The CLI error of core error `e`, printed as `line` (its `Display`, or the same with
    /// the loader's whole names) with a hint where one helps.
    pub fn from_core(e: neff::Error, line: String) -> Self {
        use neff::header::HeaderError as H;
        use neff::manifest::ManifestError as M;
        use neff::ErrorKind as K;
        if let K::Io(_) = e.kind {
            return CliError::Path { path: "input".into(), message: line };
        }
        let not_a_neff = "this does not look like a NEFF: its first 1024 bytes are no plausible neff_header_t (a NEFF is a 1024-byte header, then a gzip'd tar)";
        let hint = match e.kind {
            K::Truncated | K::Header(H::ShortFile { .. }) => Some("the file is truncated, or not a NEFF"),
            K::Header(H::HeaderSizeNot1024 { .. } | H::HeaderSizePastEnd { .. }) => Some(not_a_neff),
            K::Header(H::DataSizePastEnd { .. }) => Some("the file is shorter than its header says: truncated?"),
            K::Header(H::UnsupportedVersion { .. } | H::NewerFeatures { .. } | H::UnsupportedPackager { .. }) => {
                Some("the NEFF was made by a newer compiler than this loader supports")
            }
            K::Capacity(_) => Some("a fixed capacity of the loader was exceeded; nothing was truncated"),
            K::Manifest(M::ArchMismatch { .. }) => {
                Some("the KELF target must match the device arch (--arch; without it `load` takes the NEFF's own target); --allow-legacy accepts a NEFF for an older arch (NEURON_RT_ALLOW_LEGACY_NEFF=1)")
            }
            K::Manifest(M::MissingCarveout) => Some("--allow-legacy accepts a legacy NEFF without the carveout (NEURON_RT_ALLOW_LEGACY_NEFF=1)"),
            K::Hal(neff::hal::HalError::OutOfMemory { .. }) => {
                Some("the simulated device is too small: give a larger --device-mem, or use --digest-only")
            }
            K::Hal(neff::hal::HalError::RegionTableFull { .. }) => Some("the simulated device's region table is full (a fixed capacity)"),
            _ => None,
        };
        let mut hints: Vec<String> = hint.map(String::from).into_iter().collect();
        if let Some(cause) = e.kind.cause() {
            hints.push(format!("runtime status {} ({}), error cause {cause}", e.status().name(), e.status().code()));
        }
        let fault = Some(Box::new(Fault::of(&e, None, None)));
        CliError::Rejected { message: line, hints, fault }
    }
}

/// Prints a core warning as `warning: ...` (warnings never change the exit status), or keeps
/// it when this thread is inside [`capture_warnings`].
pub fn print_warning(message: &str) {
    if !WARNINGS_TO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let kept = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(list) => {
            list.push(message.to_owned());
            true
        }
        None => false,
    });
    if !kept {
        stderr_line("warning", message);
    }
}

std::thread_local! {
    /// The warnings of the job this thread runs for [`crate::parallel`], when it keeps them.
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f`, keeping the warnings it prints instead of writing them, and returns them with
/// its result: a job run on another thread hands them back, to be printed in the jobs'
/// order ([`print_warnings`]) so that stderr reads as in a one-thread run.
pub fn capture_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let outer = CAPTURED.with(|c| c.borrow_mut().replace(Vec::new()));
    let result = f();
    let kept = CAPTURED.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer)).unwrap_or_default();
    (result, kept)
}

/// Whether this thread keeps its warnings ([`capture_warnings`]): a pass it hands to a thread
/// of its own keeps that thread's warnings too ([`keep_warnings`]).
pub fn capturing_warnings() -> bool {
    CAPTURED.with(|c| c.borrow().is_some())
}

/// Adds `kept` (warnings another thread kept for this one) to this thread's kept warnings,
/// or prints them when it keeps none.
pub fn keep_warnings(kept: Vec<String>) {
    let rest = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(list) => {
            list.extend(kept);
            Vec::new()
        }
        None => kept,
    });
    print_warnings(&rest);
}

/// Prints warnings kept by [`capture_warnings`].
pub fn print_warnings(kept: &[String]) {
    for message in kept {
        print_warning(message);
    }
}

/// Writes `label: message` on stderr. A closed stderr is ignored (`eprintln!` would panic).
fn stderr_line(label: &str, message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{label}: {}", one_line(message));
}

/// Writes `text` on stdout. A closed pipe (`neff info | head -1`) ends output quietly;
/// other failures are errors (exit 2).
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    let mut out = StdoutText::new();
    let _ = std::fmt::Write::write_str(&mut out, text);
    out.finish()
}

/// Text written to stdout as it is made, through a buffer: a report of megabytes is never held
/// whole. A closed pipe ends the output quietly, as [`print_stdout`] does.
pub struct StdoutText {
    /// The buffered stdout (serializers write to it directly).
    pub out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    /// The first write error; later writes are skipped.
    pub error: Option<std::io::Error>,
}

impl StdoutText {
    /// A buffered writer over the locked stdout.
    pub fn new() -> Self {
        Self { out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock()), error: None }
    }

    /// Flushes, and turns the first error (other than a closed pipe) into the command's error.
    pub fn finish(mut self) -> Result<(), CliError> {
        use std::io::Write as _;
        let flushed = if self.error.is_none() { self.out.flush().err() } else { None };
        match self.error.take().or(flushed) {
            None => Ok(()),
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Some(e) => Err(CliError::Path { path: "<stdout>".into(), message: io_message(&e) }),
        }
    }
}

impl Default for StdoutText {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Write for StdoutText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        use std::io::Write as _;
        if self.error.is_some() {
            return Err(std::fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            std::fmt::Error
        })
    }
}

/// The OS message without the `(os error N)` tail, which says nothing more to a person.
pub fn io_message(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// Control characters (a newline in a member name) would break the one-line rule.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}
