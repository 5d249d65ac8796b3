//! `neff cache [DIR]` and `neff cache clean`: a doctor for Neuron compile caches.
//!
//! The layouts it knows, wherever they sit under DIR (what each writer's code says about its
//! markers, with the places it was read, is in docs/cache.md):
//!
//! * libneuronxla (torch-neuronx, JAX, and optimum-neuron, which drives libneuronxla's cache):
//!   `neuronxcc-<version>/MODULE_<hlo hash>+<flags hash>/` holding `model.hlo_module.pb`, the
//!   flags (`compile_flags.txt` in the 2.14 age, `compile_flags.json` later), `model.neff`,
//!   `model.log` when the compile failed, `model.hlo_module.pb.lock` while one compiles it, and
//!   in later ages the `model.done` marker. Its root holds a `lock` file; it is
//!   `/var/tmp/neuron-compile-cache`, or the local path in `NEURON_COMPILE_CACHE_URL`.
//! * vllm-neuron: `<hash>/graph_<hash>.neff` with a `.compilation_complete` marker.
//!
//! Each entry gets one state, the same for every layout and age:
//!
//! * `locked`: a lock file in it is held (another process has its `flock` or an `fcntl` lock).
//! * `ok` / `broken`: it has a NEFF, which is opened and checked whether or not a done marker
//!   exists; `broken` gives the refusal line.
//! * `incomplete`: its NEFF is refused and it has no done marker where its compiler directory
//!   writes them (another entry there has one): a NEFF whose write never finished.
//! * `failed`: the compile failed: `model.neff` is libneuronxla's failed-compile marker (the
//!   five bytes `ERROR`), or a log and no NEFF. The reason is the compiler's own line from the
//!   log (an error code such as `[F137]`, else the last exception line).
//! * `uncompiled`: no NEFF and no log: HLO and flags only. The next run compiles it again;
//!   `clean --uncompiled` removes it.
//!
//! A lock file nobody holds is stale: it is reported, and changes no state. An ok entry also
//! shows its compiler version and KELF target and its device memory (`neff mem`'s total over
//! its NeuronCores); every entry its size on disk.
//!
//! `clean` removes each kind of leftover on its own (`--failed`, `--broken`, `--uncompiled`,
//! `--stale-locks`, `--older-than VERSION` by the compiler version), only inside DIR: the walk
//! never follows a symbolic link (a link is neither an entry nor a way into one), and an entry
//! (or a stale lock) is removed while this command holds the `flock` of each of its lock files,
//! so an entry whose lock another process holds is left alone. `--dry-run` says what would go.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{capture_warnings, print_warnings, CliError};
use crate::progress::ItemProgress;

use crate::mem::mem_of_source;

/// The default root of libneuronxla's cache.
pub const DEFAULT_ROOT: &str = "/var/tmp/neuron-compile-cache";
/// The environment variable that moves it.
pub const CACHE_URL_ENV: &str = "NEURON_COMPILE_CACHE_URL";
/// How deep under DIR entries are looked for.
pub const MAX_DEPTH: usize = 4;

/// The files libneuronxla writes in a `MODULE_*` entry (lock files aside): a `MODULE_*`
/// directory holding none of them is no compile-cache entry (optimum-neuron also keeps
/// exported models, TorchScript and no NEFF file, in `MODULE_<hash>` directories).
const LIBNEURONXLA_FILES: [&str; 6] =
    ["model.neff", "model.hlo_module.pb", "model.log", "model.done", "compile_flags.json", "compile_flags.txt"];

/// Which cache wrote an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `neuronxcc-<version>/MODULE_<hash>/model.neff`.
    Libneuronxla,
    /// `<hash>/graph_<hash>.neff`.
    Vllm,
}

impl Layout {
    /// The layout's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Libneuronxla => "libneuronxla",
            Layout::Vllm => "vllm-neuron",
        }
    }

    /// The name of its done marker.
    fn done_marker(self) -> &'static str {
        match self {
            Layout::Libneuronxla => "model.done",
            Layout::Vllm => ".compilation_complete",
        }
    }
}

/// An entry's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// `check` accepts its NEFF.
    Ok,
    /// The compile failed: the `ERROR` marker, or a log and no NEFF.
    Failed,
    /// `check` refuses its NEFF.
    Broken,
    /// No NEFF and no log: HLO and flags only (the next run compiles it again).
    Uncompiled,
    /// Its NEFF is refused and the done marker its compiler writes is missing.
    Incomplete,
    /// A lock file in it is held.
    Locked,
}

impl State {
    /// Every state, in the order the totals give them.
    pub const ALL: [State; 6] =
        [State::Ok, State::Failed, State::Broken, State::Uncompiled, State::Incomplete, State::Locked];

    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Failed => "failed",
            State::Broken => "broken",
            State::Uncompiled => "uncompiled",
            State::Incomplete => "incomplete",
            State::Locked => "locked",
        }
    }
}

/// A lock file, and whether another process holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockFile {
    /// Its path.
    pub path: PathBuf,
    /// Whether a process holds it (a `flock` or an `fcntl` lock we cannot take).
    pub held: bool,
}

/// One cache entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its directory.
    pub path: PathBuf,
    /// Its layout.
    pub layout: Layout,
    /// Its state.
    pub state: State,
    /// The compiler version (libneuronxla: the `neuronxcc-<version>` directory; else the
    /// NEFF's `info.json`).
    pub version: Option<String>,
    /// The NEFF's KELF target (ok entries).
    pub target: Option<String>,
    /// Bytes of its files.
    pub size: u64,
    /// `neff mem`'s total over the NEFF's NeuronCores (ok entries).
    pub device_memory: Option<u64>,
    /// Why `check` refused the NEFF (broken and incomplete entries).
    pub error: Option<String>,
    /// Why the entry is in its state, in one line: the compiler's own line for a failed one,
    /// the refusal for a broken one; `None` for an ok one.
    pub reason: Option<String>,
    /// The compiler's error code in that line (`F137`, `NCC_INLA001`), when it has one.
    pub error_code: Option<String>,
    /// What says a failed compile failed: `model.neff is ERROR`, `model.log`.
    pub markers: Vec<String>,
    /// The NEFF file and its size.
    pub neff: Option<(PathBuf, u64)>,
    /// The size of `model.hlo_module.pb`.
    pub hlo_size: Option<u64>,
    /// The flags file's name and the flags in it.
    pub flags: Option<(String, Vec<String>)>,
    /// Whether the layout's done marker is there.
    pub done: bool,
    /// Its lock files.
    pub locks: Vec<LockFile>,
}

/// What a scan found: the entries, and the lock files outside them (the root's `lock`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The entries, by path.
    pub entries: Vec<Entry>,
    /// Lock files in the directories above the entries, by path.
    pub locks: Vec<LockFile>,
}

/// The cache root: DIR, or the local path of `NEURON_COMPILE_CACHE_URL`, or the default.
pub fn root(dir: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(d) = dir {
        return Ok(d.to_path_buf());
    }
    match std::env::var(CACHE_URL_ENV) {
        Ok(url) if !url.is_empty() => {
            if let Some(path) = url.strip_prefix("file://") {
                Ok(PathBuf::from(path))
            } else if url.contains("://") {
                Err(CliError::usage(format!(
                    "{CACHE_URL_ENV}={url} is not a local path; give the cache directory as DIR"
                )))
            } else {
                Ok(PathBuf::from(url))
            }
        }
        _ => Ok(PathBuf::from(DEFAULT_ROOT)),
    }
}

/// Files directly in `dir` (no links, no directories), as `(name, size)`, by name.
fn files_in(dir: &Path) -> Vec<(String, u64)> {
    let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(String, u64)> = read
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.path().symlink_metadata().ok()?;
            meta.is_file().then(|| (e.file_name().to_string_lossy().into_owned(), meta.len()))
        })
        .collect();
    files.sort();
    files
}

/// Bytes of the regular files under `dir`, links not followed.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = fs::read_dir(&d) else { continue };
        for e in read.filter_map(Result::ok) {
            let Ok(meta) = e.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}

/// Whether a file name is a lock file: `*.lock`, or the root's `lock`.
fn is_lock_name(name: &str) -> bool {
    name == "lock" || name.ends_with(".lock")
}

/// The entry directories under `root`, sorted, and the lock files of the directories walked
/// above them. An entry is a `MODULE_*` directory holding something libneuronxla writes (or
/// nothing), or one holding a `graph_*.neff` or `.compilation_complete`. Symbolic links are
/// never followed.
pub fn find(root: &Path) -> (Vec<(PathBuf, Layout)>, Vec<PathBuf>) {
    let mut out = Vec::new();
    let mut locks = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        locks.extend(files_in(&dir).into_iter().filter(|(f, _)| is_lock_name(f)).map(|(f, _)| dir.join(f)));
        let Ok(read) = fs::read_dir(&dir) else { continue };
        for e in read.filter_map(Result::ok) {
            let path = e.path();
            // `symlink_metadata`: a link is a link, whatever it points at.
            let Ok(meta) = path.symlink_metadata() else { continue };
            if !meta.is_dir() {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let files = files_in(&path);
            if name.starts_with("MODULE_") {
                let nothing_else = fs::read_dir(&path).map(|mut r| r.next().is_none()).unwrap_or(true);
                let ours = files.iter().any(|(f, _)| LIBNEURONXLA_FILES.contains(&f.as_str()) || is_lock_name(f));
                if ours || nothing_else {
                    out.push((path, Layout::Libneuronxla));
                }
            } else if files.iter().any(|(f, _)| f == ".compilation_complete" || is_graph_neff(f)) {
                out.push((path, Layout::Vllm));
            } else if depth + 1 < MAX_DEPTH {
                stack.push((path, depth + 1));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    locks.sort();
    (out, locks)
}

/// The entry directories under `root`, sorted ([`find`] without the locks).
pub fn find_entries(root: &Path) -> Vec<(PathBuf, Layout)> {
    find(root).0
}

fn is_graph_neff(name: &str) -> bool {
    name.starts_with("graph_") && name.ends_with(".neff")
}

/// `2.23.6484.0+3b612583` -> `[2, 23, 6484, 0]` (the build tag after `+` ignored).
pub fn version_key(version: &str) -> Vec<u64> {
    let core = version.split('+').next().unwrap_or(version);
    core.split('.')
        .map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0))
        .collect()
}

/// `a` is older than `b`, comparing the numbers each has (`2.22.9` < `2.23`; `2.23.1` is not
/// older than `2.23`).
pub fn older(a: &str, b: &str) -> bool {
    let (ka, kb) = (version_key(a), version_key(b));
    let n = ka.len().min(kb.len());
    ka[..n] < kb[..n]
}

/// Whether another process holds `lock`: the writers lock with `flock` (Python's `filelock`,
/// which libneuronxla uses) or with `fcntl` record locks (`fcntl.lockf`), so both are tried,
/// shared and without waiting, which any writer's exclusive lock refuses. A lock file that
/// cannot be opened counts as held (never remove what may be in use); so does every lock file
/// on a host without these locks.
#[cfg(unix)]
pub fn lock_held(lock: &Path) -> bool {
    use rustix::fs::{fcntl_lock, flock, FlockOperation};
    let Ok(file) = fs::File::open(lock) else { return true };
    if flock(&file, FlockOperation::NonBlockingLockShared).is_err() {
        return true;
    }
    // Our own shared flock does not stand in the way of an fcntl lock.
    let free = fcntl_lock(&file, FlockOperation::NonBlockingLockShared).is_ok();
    // Closing the file drops both of ours.
    drop(file);
    !free
}

/// Takes the `flock` of `lock` without waiting: `Some(file)` holds it until dropped, `None`
/// when another process holds it (a `flock`, or an `fcntl` lock).
#[cfg(unix)]
pub fn try_lock(lock: &Path) -> std::io::Result<Option<fs::File>> {
    use rustix::fs::{fcntl_lock, flock, FlockOperation};
    let file = fs::OpenOptions::new().read(true).open(lock)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    match fcntl_lock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok(Some(file)),
        Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Without `flock`, every lock file counts as held.
#[cfg(not(unix))]
pub fn lock_held(_lock: &Path) -> bool {
    true
}

/// What libneuronxla writes as `model.neff` when a compile fails (`Got a cached failed neff`
/// when torch-neuronx or JAX meets it again): the five bytes `ERROR`.
pub const FAILED_MARKER: &[u8] = b"ERROR";

/// Whether the file at `path` is a compile cache's failed-compile marker (surrounding white
/// space aside). Reads at most a few bytes.
pub fn is_failed_marker(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = fs::File::open(path) else { return false };
    let mut head = Vec::new();
    // One byte past a plausible marker: anything longer is not one.
    if file.take(64).read_to_end(&mut head).is_err() || head.len() >= 64 {
        return false;
    }
    head.trim_ascii() == FAILED_MARKER
}

/// The hint a refusal of a failed-compile marker gets, whatever verb read it.
pub const MARKER_HINT: &str = "this file is a compile cache's marker for a failed compile (libneuronxla writes `ERROR` as model.neff; model.log beside it says why; `neff cache clean --failed` removes such entries)";

/// `e` with a hint saying what `path` is when it is a failed-compile marker, not a NEFF.
pub fn with_marker_hint(e: CliError, path: &Path) -> CliError {
    with_marker_hints(e, &[path])
}

/// `e` with the failed-compile hint for each of `inputs` that is a failed-compile marker
/// (named when there are several): what every verb's refusal goes through
/// ([`super::run`]), so each verb that meets the marker says so. `diff` makes a side it
/// cannot read a usage error (exit 2, no hint lines): that error names the file, and gets the
/// hint on its line.
pub fn with_marker_hints(e: CliError, inputs: &[&Path]) -> CliError {
    match e {
        CliError::Usage { message }
            if inputs.iter().any(|p| message.starts_with(&format!("{}: ", p.display())) && is_failed_marker(p)) =>
        {
            CliError::Usage { message: format!("{message}; {MARKER_HINT}") }
        }
        CliError::Rejected { message, mut hints, fault } => {
            let markers: Vec<&&Path> = inputs.iter().filter(|p| is_failed_marker(p)).collect();
            for (i, path) in markers.iter().enumerate() {
                let hint = if inputs.len() == 1 {
                    MARKER_HINT.to_owned()
                } else {
                    format!("{}: {MARKER_HINT}", path.display())
                };
                if !hints.contains(&hint) {
                    hints.insert(i, hint);
                }
            }
            CliError::Rejected { message, hints, fault }
        }
        other => other,
    }
}

/// The bytes of a log read for its reason: its tail, where the compiler's last word is.
const LOG_TAIL: u64 = 1 << 20;
/// The longest reason line kept.
const REASON_CHARS: usize = 400;

/// The compiler's own reason in a failed compile's log: the first line carrying an error code
/// (`[F137] neuronx-cc was forcibly killed ...`, `[NCC_INLA001] ...`), from the code on; else
/// the last exception line of a traceback (`BrokenPipeError: [Errno 32] Broken pipe`); else
/// the last line that says anything. With the code, when there is one.
pub fn log_reason(text: &str) -> Option<(Option<String>, String)> {
    let clip = |s: &str| -> String {
        let s = s.trim();
        match s.char_indices().nth(REASON_CHARS) {
            Some((cut, _)) => format!("{}...", &s[..cut]),
            None => s.to_owned(),
        }
    };
    for line in text.lines() {
        if let Some((at, code)) = error_code(line) {
            return Some((Some(code), clip(&line[at..])));
        }
    }
    if let Some(line) = text.lines().rev().find(|l| is_exception_line(l)) {
        return Some((None, clip(line)));
    }
    text.lines().rev().find(|l| !l.trim().is_empty()).map(|l| (None, clip(l)))
}

/// Where an error code such as `[F137]` or `[NCC_INLA001]` starts in `line`, and the code:
/// capitals, digits and `_` in brackets, starting with a capital, with a digit.
fn error_code(line: &str) -> Option<(usize, String)> {
    let mut from = 0;
    while let Some(open) = line[from..].find('[').map(|i| i + from) {
        let rest = &line[open + 1..];
        if let Some(close) = rest.find(']') {
            let code = &rest[..close];
            let shaped = code.len() <= 24
                && code.starts_with(|c: char| c.is_ascii_uppercase())
                && code.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && code.chars().any(|c| c.is_ascii_digit());
            if shaped {
                return Some((open, code.to_owned()));
            }
        }
        from = open + 1;
    }
    None
}

/// A Python exception line: `Name: message` or `Name` where the (dotted) name ends in
/// `Error`, `Exception`, `Interrupt`, `Exit` or `Killed`.
fn is_exception_line(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or("");
    !name.is_empty()
        && !name.starts_with(' ')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && ["Error", "Exception", "Interrupt", "Exit", "Killed"].iter().any(|end| name.ends_with(end))
}

/// The tail of the log at `path`, as text.
fn read_log(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL))).ok()?;
    let mut bytes = Vec::new();
    file.take(LOG_TAIL).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The flags in a flags file: a JSON list (`compile_flags.json`), or words (`compile_flags.txt`).
fn read_flags(path: &Path) -> Vec<String> {
    let Ok(text) = fs::read_to_string(path) else { return Vec::new() };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(list)) => {
            list.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).collect()
        }
        _ => text.split_whitespace().map(str::to_owned).collect(),
    }
}

/// Looks at one entry (and checks its NEFF). `done_written`: whether its compiler directory
/// writes done markers (another entry there has one), which makes a refused NEFF without one
/// a write that never finished.
pub fn inspect(path: &Path, layout: Layout, done_written: bool) -> Entry {
    let files = files_in(path);
    let find = |name: &str| files.iter().find(|(f, _)| f == name);
    let locks: Vec<LockFile> = files
        .iter()
        .filter(|(f, _)| is_lock_name(f))
        .map(|(f, _)| LockFile { path: path.join(f), held: lock_held(&path.join(f)) })
        .collect();
    let neff = match layout {
        Layout::Libneuronxla => find("model.neff"),
        Layout::Vllm => files.iter().find(|(f, _)| is_graph_neff(f)),
    };
    let done = find(layout.done_marker()).is_some();
    let log = find("model.log").or_else(|| files.iter().find(|(f, _)| f.ends_with(".log")));
    let flags = ["compile_flags.json", "compile_flags.txt"]
        .iter()
        .find(|n| find(n).is_some())
        .map(|n| ((*n).to_owned(), read_flags(&path.join(n))));
    let dir_version = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("neuronxcc-"))
        .map(str::to_owned);
    let mut entry = Entry {
        path: path.to_path_buf(),
        layout,
        state: State::Uncompiled,
        version: dir_version,
        target: None,
        size: size_of(path),
        device_memory: None,
        error: None,
        reason: None,
        error_code: None,
        markers: Vec::new(),
        neff: neff.map(|(name, size)| (path.join(name), *size)),
        hlo_size: find("model.hlo_module.pb").map(|(_, size)| *size),
        flags,
        done,
        locks,
    };
    if let Some(lock) = entry.locks.iter().find(|l| l.held) {
        entry.state = State::Locked;
        let name = lock.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        entry.reason = Some(format!("{name} is held: a compile is under way"));
        return entry;
    }
    // The failed-compile marker is no NEFF: the entry failed, whatever else it holds.
    let marker = neff.is_some_and(|(name, size)| *size < 64 && is_failed_marker(&path.join(name)));
    if marker {
        entry.markers.push("model.neff is ERROR".into());
    }
    if marker || (neff.is_none() && log.is_some()) {
        entry.state = State::Failed;
        let said = log.and_then(|(name, _)| {
            entry.markers.push(name.clone());
            read_log(&path.join(name)).and_then(|t| log_reason(&t))
        });
        match said {
            Some((code, line)) => {
                entry.error_code = code;
                entry.reason = Some(line);
            }
            None => {
                entry.reason = Some(if log.is_some() {
                    "the compile failed; its log says nothing".into()
                } else {
                    "the compile failed; no log says why".into()
                })
            }
        }
        return entry;
    }
    let Some((name, _)) = neff else {
        entry.reason = Some("no NEFF: HLO and flags only; the next run compiles it again".into());
        return entry;
    };
    // No bar of its own: entries are checked several at once, and the cache's count of
    // entries is the progress shown.
    let file = path.join(name);
    match crate::source::open_input_quiet(&file)
        .and_then(|source| mem_of_source(source, file.display().to_string(), false))
    {
        Ok(m) => {
            entry.state = State::Ok;
            entry.target = Some(m.target.clone());
            entry.version = entry.version.take().or(m.compiler_version.clone());
            entry.device_memory = Some(m.cores.iter().map(|c| c.total()).fold(0, u64::saturating_add));
        }
        Err(e) => {
            let refusal = e.to_string();
            if !done && done_written {
                entry.state = State::Incomplete;
                entry.reason = Some(format!(
                    "no {} and the NEFF is refused: a write that never finished ({refusal})",
                    layout.done_marker()
                ));
            } else {
                entry.state = State::Broken;
                entry.reason = Some(refusal.clone());
            }
            entry.error = Some(refusal);
        }
    }
    entry
}

/// `path` relative to the cache root, as reports show it.
pub fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

fn lock_json(root: &Path, l: &LockFile) -> Value {
    json!({ "path": rel(root, &l.path), "held": l.held })
}

fn entry_json(root: &Path, e: &Entry) -> Value {
    json!({
        "path": rel(root, &e.path),
        "layout": e.layout.as_str(),
        "state": e.state.as_str(),
        "reason": e.reason,
        "error_code": e.error_code,
        "markers": e.markers,
        "compiler_version": e.version,
        "target": e.target,
        "size": e.size,
        "device_memory": e.device_memory,
        "error": e.error,
        "neff": e.neff.as_ref().map(|(p, size)| json!({ "path": rel(root, p), "size": size })),
        "hlo_size": e.hlo_size,
        "flags": e.flags.as_ref().map(|(file, flags)| json!({ "file": file, "flags": flags })),
        "done": e.done,
        "locks": e.locks.iter().map(|l| lock_json(root, l)).collect::<Vec<_>>(),
    })
}

/// The counts of a scan by state, and its sizes, as `neff cache --json` gives them.
pub fn totals(scan: &Scan) -> Value {
    let entries = &scan.entries;
    let mut t = serde_json::Map::new();
    t.insert("entries".into(), entries.len().into());
    for s in State::ALL {
        t.insert(s.as_str().into(), entries.iter().filter(|e| e.state == s).count().into());
    }
    let stale = entries.iter().flat_map(|e| &e.locks).filter(|l| !l.held).count();
    t.insert("stale_locks".into(), stale.into());
    t.insert("size".into(), entries.iter().map(|e| e.size).sum::<u64>().into());
    t.insert("device_memory".into(), entries.iter().filter_map(|e| e.device_memory).sum::<u64>().into());
    Value::Object(t)
}

/// Every entry under `root`, inspected one after another, with no progress drawn (what the
/// bindings call).
pub fn scan(root: &Path) -> Result<Scan, CliError> {
    scan_entries(root, 1, false)
}

/// Every entry under `root`, inspected `threads` at a time ([`crate::parallel`]), in the
/// order of [`find_entries`] whatever the thread count. The warnings of each entry's check
/// are printed in that order too, and on a terminal a count of entries done goes to stderr
/// once the scan has run for a second.
pub fn scan_with(root: &Path, threads: usize) -> Result<Scan, CliError> {
    scan_entries(root, threads, true)
}

fn scan_entries(root: &Path, threads: usize, show_progress: bool) -> Result<Scan, CliError> {
    let meta = fs::metadata(root).map_err(|e| CliError::path(root, &e))?;
    if !meta.is_dir() {
        return Err(CliError::usage(format!("{}: not a directory", root.display())));
    }
    let (found, locks) = find(root);
    // The directories whose entries carry done markers: there, a refused NEFF without one is
    // a write that never finished.
    let done_written: BTreeSet<PathBuf> = found
        .iter()
        .filter(|(p, l)| p.join(l.done_marker()).symlink_metadata().is_ok_and(|m| m.is_file()))
        .filter_map(|(p, _)| p.parent().map(Path::to_path_buf))
        .collect();
    let mut progress = ItemProgress::new("cache", found.len() as u64, show_progress);
    let mut entries = Vec::with_capacity(found.len());
    crate::parallel::map_ordered(
        found,
        threads,
        |(p, l)| {
            let written = p.parent().is_some_and(|d| done_written.contains(d));
            capture_warnings(|| inspect(&p, l, written))
        },
        |(entry, warnings)| {
            print_warnings(&warnings);
            progress.inc();
            entries.push(entry);
        },
    );
    progress.finish();
    let locks = locks.into_iter().map(|p| LockFile { held: lock_held(&p), path: p }).collect();
    Ok(Scan { entries, locks })
}

/// The thread count of `--threads`, else the cores available.
pub fn threads_of(flag: Option<u16>) -> usize {
    flag.map_or_else(crate::parallel::default_threads, usize::from)
}

/// The `--json` object of a scan of `root`.
pub fn document(root: &Path, scan: &Scan) -> Value {
    json!({
        "root": root.display().to_string(),
        "entries": scan.entries.iter().map(|e| entry_json(root, e)).collect::<Vec<_>>(),
        "locks": scan.locks.iter().map(|l| lock_json(root, l)).collect::<Vec<_>>(),
        "totals": totals(scan),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_their_numbers() {
        assert!(older("2.22.1.0", "2.23"));
        assert!(older("2.9", "2.23"));
        assert!(!older("2.23.6484.0+3b612583", "2.23"));
        assert!(!older("2.24", "2.23.6484"));
        assert!(older("1.19.0.5", "2.0"));
        assert_eq!(version_key("2.23.6484.0+3b612583"), [2, 23, 6484, 0]);
    }

    #[test]
    fn the_root_comes_from_the_url_when_local() {
        assert_eq!(root(Some(Path::new("/x"))).unwrap(), PathBuf::from("/x"));
    }

    #[test]
    fn a_log_gives_the_compilers_code_or_its_last_exception() {
        let killed = "2024-08-28T10:00:00Z INFO 1234 [root]: starting\n\
                      ERROR 1234 [neuronx-cc]: ***************************************************************\n\
                      ERROR 1234 [neuronx-cc]:  [F137] neuronx-cc was forcibly killed - This most commonly occurs due to insufficient system memory.\n\
                      ERROR 1234 [neuronx-cc]: ***************************************************************\n";
        let (code, line) = log_reason(killed).unwrap();
        assert_eq!(code.as_deref(), Some("F137"));
        assert!(line.starts_with("[F137] neuronx-cc was forcibly killed - This most"), "{line}");
        let traceback = "Failed compilation with ['neuronx-cc', 'compile']: Process Process-1:1:\n\
                         Traceback (most recent call last):\n  File \"x.py\", line 1, in run\n    self.run()\n\
                         BrokenPipeError: [Errno 32] Broken pipe\n2024-08-28T22:46:59Z [Errno 32] Broken pipe\n";
        assert_eq!(log_reason(traceback), Some((None, "BrokenPipeError: [Errno 32] Broken pipe".to_owned())));
        assert_eq!(log_reason("compiler said\nsomething odd\n\n"), Some((None, "something odd".to_owned())));
        assert_eq!(log_reason("  \n"), None);
        assert!(!is_exception_line("    raise ValueError(x)"));
        assert!(is_exception_line("torch.multiprocessing.ProcessExitedException: process 0 terminated"));
        // `[Errno 32]` and `[neuronx-cc]` are no codes.
        assert_eq!(error_code("[Errno 32] x [neuronx-cc] y"), None);
        assert_eq!(error_code("x [NCC_INLA001] y"), Some((2, "NCC_INLA001".into())));
    }

    #[test]
    fn flags_come_from_json_or_words() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("compile_flags.json");
        fs::write(&json, r#"["--target=trn2", "-O2"]"#).unwrap();
        assert_eq!(read_flags(&json), ["--target=trn2", "-O2"]);
        let txt = dir.path().join("compile_flags.txt");
        fs::write(&txt, "--model-type=cnn-training").unwrap();
        assert_eq!(read_flags(&txt), ["--model-type=cnn-training"]);
    }
}
