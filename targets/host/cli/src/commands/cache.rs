//! `neff cache` and `neff cache clean`: prints [`neff_host::cache`]'s scan of a compile cache,
//! and removes the leftovers `clean` selects, each under the flock of its lock files.

use std::fs;
use std::path::Path;

use neff_host::cache::{document, older, rel, root, scan_with, threads_of, totals, try_lock, Entry, LockFile, State};
use neff_host::error::{print_stdout, CliError};
use neff_host::mem::thousands;

use crate::cli::{CacheAction, CacheArgs, CleanArgs};

/// Runs `neff cache` (and `neff cache clean`).
pub fn run(args: &CacheArgs) -> Result<(), CliError> {
    if let Some(CacheAction::Clean(clean_args)) = &args.action {
        return clean(clean_args);
    }
    let root = root(args.dir.as_deref())?;
    let scan = scan_with(&root, threads_of(args.threads))?;
    if args.json {
        let doc = document(&root, &scan);
        let mut t = serde_json::to_string_pretty(&doc).map_err(|e| CliError::usage(e.to_string()))?;
        t.push('\n');
        return print_stdout(&t);
    }
    let mut out = format!("{}\n", root.display());
    for l in &scan.locks {
        out.push_str(&format!(
            "  {:<10} {}  ({})\n",
            "lock",
            rel(&root, &l.path),
            if l.held { "held: a process is using the cache" } else { "free" }
        ));
    }
    for e in &scan.entries {
        out.push_str(&entry_line(&root, e));
    }
    let t = totals(&scan);
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    let counts: Vec<String> = State::ALL.iter().map(|s| format!("{} {}", n(s.as_str()), s.as_str())).collect();
    out.push_str(&format!(
        "{} entries: {}; {} stale lock files; {} bytes on disk, {} bytes of device memory in the ok ones\n",
        n("entries"),
        counts.join(", "),
        n("stale_locks"),
        thousands(n("size")),
        thousands(n("device_memory")),
    ));
    print_stdout(&out)
}

/// Whether `clean` removes the whole entry `e`.
fn selected(e: &Entry, args: &CleanArgs) -> bool {
    (args.failed && e.state == State::Failed)
        || (args.broken && e.state == State::Broken)
        || (args.uncompiled && e.state == State::Uncompiled)
        || args
            .older_than
            .as_deref()
            .is_some_and(|v| e.state != State::Locked && e.version.as_deref().is_some_and(|ev| older(ev, v)))
}

/// Whether `path` is a directory (not a link) inside `root`.
fn inside(root: &Path, path: &Path) -> Result<(), CliError> {
    let meta = path.symlink_metadata().map_err(|e| CliError::path(path, &e))?;
    let canonical_root = root.canonicalize().map_err(|e| CliError::path(root, &e))?;
    let parent = path.parent().and_then(|p| p.canonicalize().ok());
    // Never a link, never outside the root.
    if !meta.is_dir() || !parent.is_some_and(|p| p.starts_with(&canonical_root)) {
        return Err(CliError::usage(format!("{}: not a directory inside {}", path.display(), root.display())));
    }
    Ok(())
}

/// Takes the lock of each of `locks`, or `None` when another process holds one.
#[cfg(unix)]
fn hold_all(locks: &[LockFile]) -> Option<Vec<fs::File>> {
    let mut held = Vec::new();
    for lock in locks {
        match try_lock(&lock.path) {
            Ok(Some(f)) => held.push(f),
            _ => return None,
        }
    }
    Some(held)
}

/// Without `flock`, any lock counts as held.
#[cfg(not(unix))]
fn hold_all(locks: &[LockFile]) -> Option<Vec<fs::File>> {
    locks.is_empty().then(Vec::new)
}

/// Removes `entry` (a directory inside `root`, no link) while holding the lock of each of
/// its lock files; `Ok(false)` when a lock is held elsewhere (nothing removed).
fn remove_entry(root: &Path, entry: &Entry) -> Result<bool, CliError> {
    inside(root, &entry.path)?;
    let Some(_held) = hold_all(&entry.locks) else { return Ok(false) };
    // `remove_dir_all` removes a link inside the entry, never what it points at.
    fs::remove_dir_all(&entry.path).map_err(|e| CliError::path(&entry.path, &e))?;
    Ok(true)
}

/// Removes the stale lock file `lock` of `entry` while holding its lock; `Ok(false)` when a
/// process took it meanwhile.
fn remove_stale_lock(root: &Path, entry: &Entry, lock: &LockFile) -> Result<bool, CliError> {
    inside(root, &entry.path)?;
    let Some(_held) = hold_all(std::slice::from_ref(lock)) else { return Ok(false) };
    // `files_in` lists regular files only: the lock is no link.
    fs::remove_file(&lock.path).map_err(|e| CliError::path(&lock.path, &e))?;
    Ok(true)
}

/// Runs `neff cache clean`.
pub fn clean(args: &CleanArgs) -> Result<(), CliError> {
    if !args.failed && !args.broken && !args.uncompiled && !args.stale_locks && args.older_than.is_none() {
        return Err(CliError::usage(
            "say what to clean: --failed, --broken, --uncompiled, --stale-locks and/or --older-than VERSION",
        ));
    }
    let root = root(args.dir.as_deref())?;
    let scan = scan_with(&root, threads_of(args.threads))?;
    let mut out = String::new();
    let (mut removed, mut freed, mut kept_locked, mut locks_removed) = (0u64, 0u64, 0u64, 0u64);
    for e in scan.entries.iter() {
        let at = rel(&root, &e.path);
        if selected(e, args) {
            let verb = if args.dry_run {
                "would remove"
            } else if remove_entry(&root, e)? {
                "removed"
            } else {
                kept_locked += 1;
                out.push_str(&format!("  locked     {at}  (left alone: its lock is held)\n"));
                continue;
            };
            removed += 1;
            freed += e.size;
            out.push_str(&format!(
                "  {verb} {} {at}  ({} bytes, compiler {})\n",
                e.state.as_str(),
                thousands(e.size),
                e.version.as_deref().unwrap_or("?")
            ));
        } else if args.stale_locks && e.state != State::Locked {
            for lock in e.locks.iter().filter(|l| !l.held) {
                let name = rel(&root, &lock.path);
                let verb = if args.dry_run {
                    "would remove"
                } else if remove_stale_lock(&root, e, lock)? {
                    "removed"
                } else {
                    out.push_str(&format!("  locked     {name}  (left alone: a process took it)\n"));
                    continue;
                };
                locks_removed += 1;
                out.push_str(&format!("  {verb} stale lock {name}\n"));
            }
        }
    }
    let locked = scan.entries.iter().filter(|e| e.state == State::Locked).count() as u64 + kept_locked;
    let lock_note = if args.stale_locks { format!("; {locks_removed} stale lock files") } else { String::new() };
    out.push_str(&format!(
        "{} {removed} entries, {} bytes{lock_note}{}; {locked} locked entries left alone\n",
        if args.dry_run { "would remove" } else { "removed" },
        thousands(freed),
        if args.dry_run { " (dry run: nothing removed)" } else { "" },
    ));
    print_stdout(&out)
}
/// One entry's line of `neff cache`.
fn entry_line(root: &Path, e: &Entry) -> String {
    let mem = e.device_memory.map_or_else(String::new, |m| format!(", device memory {}", thousands(m)));
    let target = e.target.as_ref().map_or_else(String::new, |t| format!(", target {t}"));
    let stale: Vec<String> = e
        .locks
        .iter()
        .filter(|l| !l.held)
        .filter_map(|l| l.path.file_name().map(|n| format!(", stale lock {}", n.to_string_lossy())))
        .collect();
    let why = match (e.state, &e.reason) {
        (State::Ok, _) | (_, None) => String::new(),
        (State::Failed, Some(r)) => format!(": {}: {r}", e.markers.join(", ")),
        (_, Some(r)) => format!(": {r}"),
    };
    format!(
        "  {:<10} {}  ({}, compiler {}, {} bytes{mem}{target}{}{why})\n",
        e.state.as_str(),
        rel(root, &e.path),
        e.layout.as_str(),
        e.version.as_deref().unwrap_or("?"),
        thousands(e.size),
        stale.concat(),
    )
}
