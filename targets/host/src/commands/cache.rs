//! `neff cache [DIR]` and `neff cache clean`: a doctor for Neuron compile caches.
//!
//! Two layouts are recognised, wherever they sit under DIR:
//!
//! * libneuronxla (torch-neuronx, JAX): `neuronxcc-<version>/MODULE_<hlo hash>+<flags hash>/`
//!   holding `model.neff`, the `model.done` marker, `model.log`, `compile_flags.json`,
//!   `model.hlo_module.pb` and `*.lock` files. Its root is `/var/tmp/neuron-compile-cache`, or
//!   the local path in `NEURON_COMPILE_CACHE_URL`.
//! * vllm-neuron: `<hash>/graph_<hash>.neff` with a `.compilation_complete` marker.
//!
//! Each entry gets one state: `locked` (a `*.lock` file in it is held: `flock`), `ok` (its NEFF
//! is done and `check` accepts it), `broken` (done, but `check` refuses the NEFF: the error is
//! shown), `incomplete` (no done marker), `failed` (a log and no usable NEFF, or the NEFF is
//! libneuronxla's failed-compile marker: the five bytes `ERROR`). An ok entry also
//! shows its compiler version and KELF target and its device memory (`neff mem`'s total over
//! its NeuronCores); every entry its size on disk.
//!
//! `clean` removes whole entries (`--failed`, `--broken`, `--older-than VERSION` by the
//! compiler version), only inside DIR: the walk never follows a symbolic link (a link is
//! neither an entry nor a way into one), and an entry is removed while this command holds the
//! `flock` of each of its lock files, so an entry whose lock another process holds is left
//! alone. `--dry-run` says what would go.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::cli::{CacheAction, CacheArgs, CleanArgs};
use crate::error::{capture_warnings, print_stdout, print_warnings, CliError};
use crate::progress::ItemProgress;

use super::mem::{mem_of_source, thousands};

/// The default root of libneuronxla's cache.
pub const DEFAULT_ROOT: &str = "/var/tmp/neuron-compile-cache";
/// The environment variable that moves it.
pub const CACHE_URL_ENV: &str = "NEURON_COMPILE_CACHE_URL";
/// How deep under DIR entries are looked for.
pub const MAX_DEPTH: usize = 4;

/// Which cache wrote an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `neuronxcc-<version>/MODULE_<hash>/model.neff`.
    Libneuronxla,
    /// `<hash>/graph_<hash>.neff`.
    Vllm,
}

impl Layout {
    fn as_str(self) -> &'static str {
        match self {
            Layout::Libneuronxla => "libneuronxla",
            Layout::Vllm => "vllm-neuron",
        }
    }
}

/// An entry's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Done, and `check` accepts the NEFF.
    Ok,
    /// A log and no usable NEFF.
    Failed,
    /// Done, but `check` refuses the NEFF.
    Broken,
    /// No done marker.
    Incomplete,
    /// A lock file in it is held.
    Locked,
}

impl State {
    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Failed => "failed",
            State::Broken => "broken",
            State::Incomplete => "incomplete",
            State::Locked => "locked",
        }
    }
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
    /// Why `check` refused the NEFF (broken entries).
    pub error: Option<String>,
    /// Its lock files.
    pub locks: Vec<PathBuf>,
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

/// Files directly in `dir` (no links, no directories), as `(name, size)`.
fn files_in(dir: &Path) -> Vec<(String, u64)> {
    let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
    read.filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.path().symlink_metadata().ok()?;
            meta.is_file().then(|| (e.file_name().to_string_lossy().into_owned(), meta.len()))
        })
        .collect()
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

/// The entry directories under `root`, sorted: a `MODULE_*` directory, or one holding a
/// `graph_*.neff` or `.compilation_complete`. Symbolic links are never followed.
pub fn find_entries(root: &Path) -> Vec<(PathBuf, Layout)> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
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
                out.push((path, Layout::Libneuronxla));
            } else if files.iter().any(|(f, _)| f == ".compilation_complete" || is_graph_neff(f)) {
                out.push((path, Layout::Vllm));
            } else if depth + 1 < MAX_DEPTH {
                stack.push((path, depth + 1));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
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

/// Whether another process holds `lock` (a `flock` on it that we cannot take). On a host
/// without `flock` every lock file counts as held.
#[cfg(unix)]
pub fn lock_held(lock: &Path) -> bool {
    match try_lock(lock) {
        Ok(Some(_)) => false,
        // Held elsewhere, or unopenable: treat as held (never remove what may be in use).
        _ => true,
    }
}

/// Takes the `flock` of `lock` without waiting: `Some(file)` holds it until dropped, `None`
/// when another process holds it.
#[cfg(unix)]
pub fn try_lock(lock: &Path) -> std::io::Result<Option<fs::File>> {
    use rustix::fs::{flock, FlockOperation};
    let file = fs::OpenOptions::new().read(true).open(lock)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(file)),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
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

/// `e` with a hint saying what `path` is when it is a failed-compile marker, not a NEFF.
pub fn with_marker_hint(e: CliError, path: &Path) -> CliError {
    match e {
        CliError::Rejected { message, mut hints, fault } if is_failed_marker(path) => {
            hints.insert(
                0,
                "this file is a compile cache's marker for a failed compile (libneuronxla writes `ERROR` as model.neff; `neff cache clean --failed` removes such entries)".into(),
            );
            CliError::Rejected { message, hints, fault }
        }
        other => other,
    }
}

/// Looks at one entry (and checks its NEFF).
pub fn inspect(path: &Path, layout: Layout) -> Entry {
    let files = files_in(path);
    let has = |name: &str| files.iter().any(|(f, _)| f == name);
    let locks: Vec<PathBuf> = files.iter().filter(|(f, _)| f.ends_with(".lock")).map(|(f, _)| path.join(f)).collect();
    let (neff, done) = match layout {
        Layout::Libneuronxla => (files.iter().find(|(f, _)| f == "model.neff"), has("model.done")),
        Layout::Vllm => (files.iter().find(|(f, _)| is_graph_neff(f)), has(".compilation_complete")),
    };
    let log = files.iter().any(|(f, _)| f.ends_with(".log"));
    let dir_version = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("neuronxcc-"))
        .map(str::to_owned);
    let mut entry = Entry {
        path: path.to_path_buf(),
        layout,
        state: State::Incomplete,
        version: dir_version,
        target: None,
        size: size_of(path),
        device_memory: None,
        error: None,
        locks,
    };
    if entry.locks.iter().any(|l| lock_held(l)) {
        entry.state = State::Locked;
        return entry;
    }
    // The failed-compile marker is no NEFF: the entry failed, whatever else it holds.
    let marker = neff.is_some_and(|(name, size)| *size < 64 && is_failed_marker(&path.join(name)));
    let usable = neff.filter(|(_, size)| *size > 0 && !marker);
    entry.state = match (usable, done, log || marker) {
        (None, _, true) => State::Failed,
        (None, _, false) | (Some(_), false, _) => State::Incomplete,
        // No bar of its own: entries are checked several at once, and the cache's count of
        // entries is the progress shown.
        (Some((name, _)), true, _) => match super::open_input_quiet(&path.join(name))
            .and_then(|source| mem_of_source(source, path.join(name).display().to_string(), false))
        {
            Ok(m) => {
                entry.target = Some(m.target.clone());
                entry.version = entry.version.take().or(m.compiler_version.clone());
                entry.device_memory = Some(m.cores.iter().map(|c| c.total()).fold(0, u64::saturating_add));
                State::Ok
            }
            Err(e) => {
                entry.error = Some(e.to_string());
                State::Broken
            }
        },
    };
    entry
}

fn entry_json(root: &Path, e: &Entry) -> Value {
    json!({
        "path": e.path.strip_prefix(root).unwrap_or(&e.path).display().to_string(),
        "layout": e.layout.as_str(),
        "state": e.state.as_str(),
        "compiler_version": e.version,
        "target": e.target,
        "size": e.size,
        "device_memory": e.device_memory,
        "error": e.error,
    })
}

fn totals(entries: &[Entry]) -> Value {
    let count = |s: State| entries.iter().filter(|e| e.state == s).count();
    json!({
        "entries": entries.len(),
        "ok": count(State::Ok),
        "failed": count(State::Failed),
        "broken": count(State::Broken),
        "incomplete": count(State::Incomplete),
        "locked": count(State::Locked),
        "size": entries.iter().map(|e| e.size).sum::<u64>(),
        "device_memory": entries.iter().filter_map(|e| e.device_memory).sum::<u64>(),
    })
}

/// Every entry under `root`, inspected one after another, with no progress drawn (what the
/// bindings call).
pub fn scan(root: &Path) -> Result<Vec<Entry>, CliError> {
    scan_entries(root, 1, false)
}

/// Every entry under `root`, inspected `threads` at a time ([`crate::parallel`]), in the
/// order of [`find_entries`] whatever the thread count. The warnings of each entry's check
/// are printed in that order too, and on a terminal a count of entries done goes to stderr
/// once the scan has run for a second.
pub fn scan_with(root: &Path, threads: usize) -> Result<Vec<Entry>, CliError> {
    scan_entries(root, threads, true)
}

fn scan_entries(root: &Path, threads: usize, show_progress: bool) -> Result<Vec<Entry>, CliError> {
    let meta = fs::metadata(root).map_err(|e| CliError::path(root, &e))?;
    if !meta.is_dir() {
        return Err(CliError::usage(format!("{}: not a directory", root.display())));
    }
    let found = find_entries(root);
    let mut progress = ItemProgress::new("cache", found.len() as u64, show_progress);
    let mut entries = Vec::with_capacity(found.len());
    crate::parallel::map_ordered(
        found,
        threads,
        |(p, l)| capture_warnings(|| inspect(&p, l)),
        |(entry, warnings)| {
            print_warnings(&warnings);
            progress.inc();
            entries.push(entry);
        },
    );
    progress.finish();
    Ok(entries)
}

/// The thread count of `--threads`, else the cores available.
pub fn threads_of(flag: Option<u16>) -> usize {
    flag.map_or_else(crate::parallel::default_threads, usize::from)
}

/// The `--json` object of the entries under `root`.
pub fn document(root: &Path, entries: &[Entry]) -> Value {
    json!({
        "root": root.display().to_string(),
        "entries": entries.iter().map(|e| entry_json(root, e)).collect::<Vec<_>>(),
        "totals": totals(entries),
    })
}

/// Runs `neff cache` (and `neff cache clean`).
pub fn run(args: &CacheArgs) -> Result<(), CliError> {
    if let Some(CacheAction::Clean(clean_args)) = &args.action {
        return clean(clean_args);
    }
    let root = root(args.dir.as_deref())?;
    let entries = scan_with(&root, threads_of(args.threads))?;
    if args.json {
        let doc = document(&root, &entries);
        let mut t = serde_json::to_string_pretty(&doc).map_err(|e| CliError::usage(e.to_string()))?;
        t.push('\n');
        return print_stdout(&t);
    }
    let mut out = format!("{}\n", root.display());
    for e in &entries {
        let rel = e.path.strip_prefix(&root).unwrap_or(&e.path).display().to_string();
        let mem = e.device_memory.map_or_else(String::new, |m| format!(", device memory {}", thousands(m)));
        let what = match (&e.error, &e.target) {
            (Some(err), _) => format!(": {err}"),
            (None, Some(t)) => format!(", target {t}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {:<10} {rel}  ({}, compiler {}, {} bytes{mem}{what})\n",
            e.state.as_str(),
            e.layout.as_str(),
            e.version.as_deref().unwrap_or("?"),
            thousands(e.size)
        ));
    }
    let t = totals(&entries);
    out.push_str(&format!(
        "{} entries: {} ok, {} failed, {} broken, {} incomplete, {} locked; {} bytes on disk, {} bytes of device memory in the ok ones\n",
        t["entries"], t["ok"], t["failed"], t["broken"], t["incomplete"], t["locked"],
        thousands(t["size"].as_u64().unwrap_or(0)),
        thousands(t["device_memory"].as_u64().unwrap_or(0)),
    ));
    print_stdout(&out)
}

/// Whether `clean` selects `e`.
fn selected(e: &Entry, args: &CleanArgs) -> bool {
    (args.failed && e.state == State::Failed)
        || (args.broken && e.state == State::Broken)
        || args
            .older_than
            .as_deref()
            .is_some_and(|v| e.state != State::Locked && e.version.as_deref().is_some_and(|ev| older(ev, v)))
}

/// Removes `entry` (a directory inside `root`, no link) while holding the flock of each of
/// its lock files; `Ok(false)` when a lock is held elsewhere (nothing removed).
fn remove_entry(root: &Path, entry: &Entry) -> Result<bool, CliError> {
    let meta = entry.path.symlink_metadata().map_err(|e| CliError::path(&entry.path, &e))?;
    let canonical_root = root.canonicalize().map_err(|e| CliError::path(root, &e))?;
    let parent = entry.path.parent().and_then(|p| p.canonicalize().ok());
    // Never a link, never outside the root.
    if !meta.is_dir() || !parent.is_some_and(|p| p.starts_with(&canonical_root)) {
        return Err(CliError::usage(format!("{}: not a directory inside {}", entry.path.display(), root.display())));
    }
    #[cfg(unix)]
    let _held = {
        let mut held = Vec::new();
        for lock in &entry.locks {
            match try_lock(lock) {
                Ok(Some(f)) => held.push(f),
                _ => return Ok(false),
            }
        }
        held
    };
    #[cfg(not(unix))]
    if !entry.locks.is_empty() {
        return Ok(false);
    }
    // `remove_dir_all` removes a link inside the entry, never what it points at.
    fs::remove_dir_all(&entry.path).map_err(|e| CliError::path(&entry.path, &e))?;
    Ok(true)
}

/// Runs `neff cache clean`.
pub fn clean(args: &CleanArgs) -> Result<(), CliError> {
    if !args.failed && !args.broken && args.older_than.is_none() {
        return Err(CliError::usage("say what to clean: --failed, --broken and/or --older-than VERSION"));
    }
    let root = root(args.dir.as_deref())?;
    let entries = scan_with(&root, threads_of(args.threads))?;
    let mut out = String::new();
    let (mut removed, mut freed, mut kept_locked) = (0u64, 0u64, 0u64);
    for e in entries.iter().filter(|e| selected(e, args)) {
        let rel = e.path.strip_prefix(&root).unwrap_or(&e.path).display().to_string();
        let verb = if args.dry_run {
            "would remove"
        } else if remove_entry(&root, e)? {
            "removed"
        } else {
            kept_locked += 1;
            out.push_str(&format!("  locked     {rel}  (left alone: its lock is held)\n"));
            continue;
        };
        removed += 1;
        freed += e.size;
        out.push_str(&format!(
            "  {verb} {} {rel}  ({} bytes, compiler {})\n",
            e.state.as_str(),
            thousands(e.size),
            e.version.as_deref().unwrap_or("?")
        ));
    }
    let locked = entries.iter().filter(|e| e.state == State::Locked).count() as u64 + kept_locked;
    out.push_str(&format!(
        "{} {removed} entries, {} bytes{}; {locked} locked entries left alone\n",
        if args.dry_run { "would remove" } else { "removed" },
        thousands(freed),
        if args.dry_run { " (dry run: nothing removed)" } else { "" },
    ));
    print_stdout(&out)
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
}
