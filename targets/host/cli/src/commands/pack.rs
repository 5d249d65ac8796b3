//! `neff pack DIR -o FILE [--pkg-version 1|2]`: the inverse of unpack (`neuron-packager create`).
//!
//! Members are every regular file under DIR except the top-level `header.json`. Their order:
//! the `members` list of `DIR/header.json` when unpack recorded one (files it does not list
//! follow in the real NEFFs' order, before a final `neff.json`); otherwise the real NEFFs'
//! order (byte-wise sorted paths, `neff.json` last). Symlinks are refused, never followed.
//!
//! The header comes from `header.json` when present; else from `info.json` (`name`,
//! `num_tpb`, `num_tpb_requested`, `num_tpb_per_node`, as the compiler seeds it) and defaults:
//! NEFF version 2.0, `lnc_size` = the number of `graphs` in `kelf-0.json` (else 1), the
//! `neff_feature_vnc` bit when that is above 1, and a UUID derived from the content (MD5 of
//! every member's path and bytes, with the version-4 bits), so packing is deterministic.
//! `hash` is always computed; `data_size` too, except that a repack in the same packaging
//! keeps `header.json`'s `data_size` when the new stream fits in it (zero padding fills it),
//! so that unpack then pack reproduces the header. The output is written to a temporary file
//! beside FILE and renamed into place, so a failed pack leaves no half-written NEFF.
#![deny(clippy::arithmetic_side_effects)]

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

use crate::cli::PackArgs;
use neff_host::error::{print_stdout, print_warning, CliError};
use neff_host::header_view::HeaderFile;
use neff_host::progress::Progress;
use neff_host::sample::real_order_key;
use neff_host::writer::{HeaderFields, NeffWriter, TPB_PER_NODE_LEN};

use super::unpack::HEADER_JSON;

/// One file to pack: its member path and where it is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackMember {
    /// The member path (`/`-separated, relative).
    pub name: String,
    /// The file on disk.
    pub path: PathBuf,
    /// Its size when listed.
    pub size: u64,
}

/// Lists the regular files under `dir` (member paths sorted byte-wise), refusing symlinks
/// and special files.
pub fn list_files(dir: &Path) -> Result<Vec<PackMember>, CliError> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = pending.pop() {
        let entries = fs::read_dir(&path).map_err(|e| CliError::path(&path, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| CliError::path(&path, &e))?;
            let file_type = entry.file_type().map_err(|e| CliError::path(&entry.path(), &e))?;
            let name = entry.file_name().into_string().map_err(|raw| {
                CliError::rejected(format!("{}: member paths must be UTF-8", Path::new(&raw).display()))
            })?;
            let member = format!("{prefix}{name}");
            if file_type.is_symlink() {
                return Err(CliError::rejected(format!("{member}: is a symlink; pack does not follow symlinks")));
            } else if file_type.is_dir() {
                pending.push((entry.path(), format!("{member}/")));
            } else if file_type.is_file() {
                if member == HEADER_JSON {
                    continue;
                }
                let size = entry.metadata().map_err(|e| CliError::path(&entry.path(), &e))?.len();
                out.push(PackMember { name: member, path: entry.path(), size });
            } else {
                return Err(CliError::rejected(format!("{member}: not a regular file")));
            }
        }
    }
    out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(out)
}

/// Puts `files` in tar order: `listed` first (each must exist), the rest in the real order,
/// before a trailing `neff.json` of the list.
pub fn order_members(mut files: Vec<PackMember>, listed: &[String]) -> Result<Vec<PackMember>, CliError> {
    files.sort_by(|a, b| real_order_key(&a.name).cmp(&real_order_key(&b.name)));
    if listed.is_empty() {
        return Ok(files);
    }
    let mut ordered = Vec::with_capacity(files.len());
    for name in listed {
        let at = files.iter().position(|f| &f.name == name).ok_or_else(|| {
            CliError::rejected_with_hint(
                format!("{HEADER_JSON}: members lists {name}, which is not in the directory"),
                format!("restore the file, or remove it from the members list of {HEADER_JSON}"),
            )
        })?;
        ordered.push(files.remove(at));
    }
    let insert_at = match ordered.last() {
        // `ordered` has a last element here.
        Some(last) if last.name == "neff.json" => ordered.len().saturating_sub(1),
        _ => ordered.len(),
    };
    ordered.splice(insert_at..insert_at, files);
    Ok(ordered)
}

fn read_json(path: &Path) -> Result<Option<serde_json::Value>, CliError> {
    match fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map(Some).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::path(path, &e)),
    }
}

/// The header fields when DIR has no `header.json` (see the module doc).
pub fn default_fields(dir: &Path, members: &[PackMember]) -> Result<HeaderFields, CliError> {
    let lnc_size = match read_json(&dir.join("kelf-0.json")) {
        Ok(Some(kelf)) => kelf.get("graphs").and_then(|g| g.as_array()).map_or(1, |g| g.len().max(1)),
        Ok(None) => 1,
        Err(e) => {
            print_warning(&format!("{e}; lnc_size defaults to 1"));
            1
        }
    };
    let lnc_size = u32::try_from(lnc_size).unwrap_or(u32::MAX);
    let mut fields = HeaderFields::new("", content_uuid(members)?, lnc_size);
    if lnc_size > 1 {
        fields.feature_bits = 0x400;
    }
    let info = match read_json(&dir.join("info.json")) {
        Ok(info) => info,
        Err(e) => {
            print_warning(&format!("{e}; header fields take defaults"));
            None
        }
    };
    if let Some(info) = info {
        let int = |key: &str| info.get(key).and_then(|v| v.as_u64()).and_then(|v| u32::try_from(v).ok());
        if let Some(name) = info.get("name").and_then(|v| v.as_str()) {
            fields.name = name.to_owned();
        }
        if let Some(n) = int("num_tpb") {
            fields.num_tpb = n;
        }
        if let Some(n) = int("num_tpb_requested") {
            fields.requested_tpb_count = n;
        }
        if let Some(list) = info.get("num_tpb_per_node").and_then(|v| v.as_array()) {
            let mut tpb = [0u8; TPB_PER_NODE_LEN];
            for (slot, v) in tpb.iter_mut().zip(list) {
                *slot = v.as_u64().and_then(|v| u8::try_from(v).ok()).unwrap_or(0);
            }
            fields.tpb_per_node = tpb;
        }
    }
    Ok(fields)
}

/// A version-4 UUID from the MD5 of every member's path, size and bytes.
pub fn content_uuid(members: &[PackMember]) -> Result<[u8; 16], CliError> {
    let mut md5 = Md5::new();
    let mut buffer = vec![0u8; 64 * 1024];
    for m in members {
        md5.update(m.name.as_bytes());
        md5.update([0u8]);
        md5.update(m.size.to_le_bytes());
        let mut file = File::open(&m.path).map_err(|e| CliError::path(&m.path, &e))?;
        loop {
            let n = file.read(&mut buffer).map_err(|e| CliError::path(&m.path, &e))?;
            if n == 0 {
                break;
            }
            md5.update(&buffer[..n]);
        }
    }
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&md5.finalize());
    uuid[6] = (uuid[6] & 0x0f) | 0x40;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    Ok(uuid)
}

/// Reads a file while advancing a progress bar.
struct Counted<'a, R> {
    inner: R,
    progress: &'a Progress,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.inc(n as u64);
        Ok(n)
    }
}

/// Runs `neff pack`.
pub fn run(args: &PackArgs) -> Result<(), CliError> {
    let meta = fs::metadata(&args.dir).map_err(|e| CliError::path(&args.dir, &e))?;
    if !meta.is_dir() {
        return Err(CliError::Path { path: args.dir.display().to_string(), message: "is not a directory".into() });
    }
    let files = list_files(&args.dir)?;
    let header_file: Option<HeaderFile> = match read_json(&args.dir.join(HEADER_JSON))? {
        Some(value) => Some(serde_json::from_value(value).map_err(|e| {
            CliError::rejected_with_hint(
                format!("{HEADER_JSON}: {e}"),
                "header.json is the document `neff unpack` writes",
            )
        })?),
        None => None,
    };
    let listed = header_file.as_ref().map(|h| h.members.clone()).unwrap_or_default();
    let members = order_members(files, &listed)?;
    let mut fields = match &header_file {
        Some(h) => h.to_fields(args.pkg_version).map_err(|e| CliError::rejected(format!("{HEADER_JSON}: {e}")))?,
        None => default_fields(&args.dir, &members)?,
    };
    if let Some(v) = args.pkg_version {
        fields.pkg_version = v;
    }
    if fields.pkg_version != 1 && fields.pkg_version != 2 {
        return Err(CliError::rejected(format!(
            "{HEADER_JSON}: pkg_version must be 1 or 2, found {}",
            fields.pkg_version
        )));
    }
    if members.is_empty() {
        return Err(CliError::rejected(format!("{}: no files to pack", args.dir.display())));
    }

    // Sizes of files on one disk: their sum cannot reach 2^64, but a size is input all the same.
    let total: u64 = members.iter().fold(0u64, |total, m| total.saturating_add(m.size));
    let progress = Progress::for_bytes("pack", total);
    let temp = temp_path(&args.output);
    // Keep the recorded payload span when repacking in the same packaging (see writer).
    let keep = header_file.as_ref().filter(|h| h.header.pkg_version == fields.pkg_version).map(|h| h.header.data_size);
    let result = write_neff(&temp, fields, keep, &members, &progress);
    progress.finish();
    match result {
        Ok(written) => {
            fs::rename(&temp, &args.output).map_err(|e| {
                let _ = fs::remove_file(&temp);
                CliError::path(&args.output, &e)
            })?;
            print_stdout(&format!(
                "packed {} members ({total} bytes) into {} (pkg_version {}, data_size {})\n",
                written.members,
                args.output.display(),
                fields_pkg(&written.header),
                written.data_size
            ))
        }
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

fn fields_pkg(header: &[u8; 1024]) -> u64 {
    u64::from_le_bytes(header[..8].try_into().unwrap_or([0; 8]))
}

fn temp_path(output: &Path) -> PathBuf {
    let mut name = output.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".partial-{}", std::process::id()));
    output.with_file_name(name)
}

fn write_neff(
    temp: &Path,
    fields: HeaderFields,
    keep_data_size: Option<u64>,
    members: &[PackMember],
    progress: &Progress,
) -> Result<neff_host::writer::Written, CliError> {
    let out = File::create(temp).map_err(|e| CliError::path(temp, &e))?;
    let write_err = |e: io::Error| CliError::path(temp, &e);
    let mut writer = NeffWriter::new(io::BufWriter::with_capacity(64 * 1024, out), fields).map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidInput {
            CliError::rejected(format!("{HEADER_JSON}: {}", neff_host::error::io_message(&e)))
        } else {
            CliError::path(temp, &e)
        }
    })?;
    if let Some(span) = keep_data_size {
        writer.keep_data_size(span);
    }
    for m in members {
        let file = File::open(&m.path).map_err(|e| CliError::path(&m.path, &e))?;
        let mut body = Counted { inner: BufReader::with_capacity(64 * 1024, file), progress };
        writer.append(&m.name, m.size, &mut body).map_err(|e| CliError::path(&m.path, &e))?;
    }
    let (out, written) = writer.finish().map_err(write_err)?;
    let file = out.into_inner().map_err(|e| CliError::path(temp, e.error()))?;
    file.sync_all().map_err(|e| CliError::path(temp, &e))?;
    Ok(written)
}
