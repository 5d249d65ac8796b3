//! `neff unpack FILE -o DIR`: every member under DIR, plus `DIR/header.json`.
//!
//! Safety on the host side, whatever the core already refused: a member path must be
//! relative, made of normal components (no empty, `.` or `..` component, no backslash, no
//! NUL); no path component under DIR may be a symlink (checked before each use, directories
//! are created one level at a time); files are created with `create_new`, so nothing that
//! was in DIR before is overwritten and no dangling symlink is followed. A member that occurs
//! twice is rewritten (the later copy wins, as in the runtime's member map) with a warning.
//! A name that is not UTF-8 (no manifest can name it, but it is in the archive) is written
//! under its raw bytes on Unix, with the same checks; elsewhere it is refused. Messages show
//! it lossy. Each body streams to its file through one fixed buffer.
#![deny(clippy::arithmetic_side_effects)]

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::cli::UnpackArgs;
use neff_host::error::{print_warning, CliError};
use neff_host::header_view::HeaderView;
use neff_host::safe_path::safe_components_raw;
use neff_host::walk::{self, body_error, Visitor};

/// Name of the header document unpack writes at the top of DIR.
pub const HEADER_JSON: &str = "header.json";
/// Size of the copy buffer between a member body and its file.
pub const COPY_BUFFER: usize = 64 * 1024;

/// A path component from a member name's raw bytes: as they are on Unix; elsewhere only UTF-8.
fn os_component<'a>(shown: &str, part: &'a [u8]) -> Result<&'a OsStr, CliError> {
    #[cfg(unix)]
    {
        let _ = shown;
        Ok(std::os::unix::ffi::OsStrExt::from_bytes(part))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(part).map(OsStr::new).map_err(|_| {
            CliError::rejected(format!("{shown}: a member name that is not UTF-8 has no path on this host"))
        })
    }
}

/// A path relative to DIR, as raw bytes (the key that tells a repeated member).
fn rel_bytes(rel: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStrExt::as_bytes(rel.as_os_str()).to_vec()
    }
    #[cfg(not(unix))]
    {
        rel.to_string_lossy().into_owned().into_bytes()
    }
}

/// Writes members under `root` as they stream past.
pub struct Unpacker {
    root: PathBuf,
    header: Option<HeaderView>,
    members: Vec<String>,
    written: HashSet<Vec<u8>>,
    made_dirs: HashSet<PathBuf>,
    buffer: Vec<u8>,
}

impl Unpacker {
    /// Unpacks into `root`, which must exist.
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            header: None,
            members: Vec::new(),
            written: HashSet::new(),
            made_dirs: HashSet::new(),
            buffer: vec![0u8; COPY_BUFFER],
        }
    }

    /// Creates (or walks into) the directories of `parts[..last]`, refusing symlinks.
    fn parent_dir(&mut self, name: &str, parts: &[&[u8]]) -> Result<PathBuf, CliError> {
        let mut dir = self.root.clone();
        for part in parts {
            dir.push(os_component(name, part)?);
            match fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(CliError::Path {
                        path: dir.display().to_string(),
                        message: format!("is a symlink; unpack never writes through one (member {name})"),
                    })
                }
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    let message = format!("{name}: a member's directory {} is a file", dir.display());
                    return Err(if self.made_by_us(&dir) {
                        CliError::rejected(message)
                    } else {
                        CliError::Path {
                            path: dir.display().to_string(),
                            message: format!("is a file, member {name} needs a directory"),
                        }
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&dir).map_err(|e| CliError::path(&dir, &e))?;
                    self.made_dirs.insert(dir.clone());
                }
                Err(e) => return Err(CliError::path(&dir, &e)),
            }
        }
        Ok(dir)
    }

    fn made_by_us(&self, path: &Path) -> bool {
        path.strip_prefix(&self.root).ok().is_some_and(|rel| self.written.contains(&rel_bytes(rel)))
    }

    fn create(&mut self, name: &str, raw: &[u8], path: &Path) -> Result<File, CliError> {
        if self.written.contains(raw) {
            print_warning(&format!("{name}: duplicate member: the later copy replaces the earlier one"));
            // We made this regular file ourselves; still never follow a symlink put there since.
            let meta = fs::symlink_metadata(path).map_err(|e| CliError::path(path, &e))?;
            if !meta.is_file() {
                return Err(CliError::Path {
                    path: path.display().to_string(),
                    message: "changed under unpack".into(),
                });
            }
            return OpenOptions::new().write(true).truncate(true).open(path).map_err(|e| CliError::path(path, &e));
        }
        OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                CliError::Path {
                    path: path.display().to_string(),
                    message: "already exists; unpack never overwrites (use an empty directory)".into(),
                }
            } else {
                CliError::path(path, &e)
            }
        })
    }
}

impl Visitor for Unpacker {
    fn header(&mut self, header: &HeaderView) -> Result<(), CliError> {
        self.header = Some(header.clone());
        Ok(())
    }

    fn member(&mut self, raw: &[u8], size: u64, body: &mut dyn Read) -> Result<(), CliError> {
        let shown = String::from_utf8_lossy(raw);
        let name: &str = &shown;
        let parts = safe_components_raw(raw).map_err(|why| {
            CliError::rejected_with_hint(format!("{name}: {why}"), "unpack writes only inside the output directory")
        })?;
        if name == HEADER_JSON {
            return Err(CliError::rejected(format!(
                "{name}: a member named {HEADER_JSON} would collide with the header document unpack writes"
            )));
        }
        let (file_name, dirs) =
            parts.split_last().ok_or_else(|| CliError::rejected(format!("{name}: empty member path")))?;
        let dir = self.parent_dir(name, dirs)?;
        let path = dir.join(os_component(name, file_name)?);
        let mut file = self.create(name, raw, &path)?;
        let mut copied = 0u64;
        loop {
            let n = body.read(&mut self.buffer).map_err(|e| body_error(name, &e))?;
            if n == 0 {
                break;
            }
            file.write_all(&self.buffer[..n]).map_err(|e| CliError::path(&path, &e))?;
            // Bytes really written: never near 2^64.
            copied = copied.saturating_add(n as u64);
        }
        if copied != size {
            return Err(CliError::rejected(format!(
                "{name}: unexpected end of input: {copied} of {size} bytes (byte {copied})"
            )));
        }
        if self.written.insert(raw.to_owned()) {
            self.members.push(name.to_owned());
        }
        Ok(())
    }
}

/// Runs `neff unpack`.
pub fn run(args: &UnpackArgs) -> Result<(), CliError> {
    let source = neff_host::source::open_input(&args.file, "unpack")?;
    let size = source.size();
    fs::create_dir_all(&args.output).map_err(|e| CliError::path(&args.output, &e))?;
    // Reserve header.json first: a DIR that already has one is not empty enough.
    let header_path = args.output.join(HEADER_JSON);
    let mut header_file = OpenOptions::new().write(true).create_new(true).open(&header_path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            CliError::Path {
                path: header_path.display().to_string(),
                message: "already exists; unpack never overwrites (use an empty directory)".into(),
            }
        } else {
            CliError::path(&header_path, &e)
        }
    })?;
    let mut unpacker = Unpacker::new(args.output.clone());
    let walked = walk::walk(source, size, &mut unpacker);
    let summary = match walked {
        Ok(s) => s,
        Err(e) => {
            // Leave no empty header.json behind to block a second try.
            drop(header_file);
            let _ = fs::remove_file(&header_path);
            return Err(e);
        }
    };
    let header = unpacker.header.as_ref().ok_or_else(|| CliError::rejected("header: not read"))?;
    let document = header.to_file(unpacker.members.clone());
    let text = serde_json::to_string_pretty(&document).map_err(|e| CliError::rejected(e.to_string()))?;
    header_file.write_all(format!("{text}\n").as_bytes()).map_err(|e| CliError::path(&header_path, &e))?;
    neff_host::error::print_stdout(&format!(
        "unpacked {} members ({} bytes) into {}\n",
        summary.members,
        summary.member_bytes,
        args.output.display()
    ))
}
