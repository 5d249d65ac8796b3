//! `neff cat FILE MEMBER... [--data]`: members to stdout; one is streamed, several go through a
//! member index ([`neff_host::index`]) built by one walk, each read from its nearest checkpoint.
//!
//! The archive is walked as `unpack` walks it (header gates, gzip, tar, the trailer checked
//! at the end); the member's bytes go to stdout as they are inflated, through a fixed buffer.
//! `--data` writes a `.npy` member's array data only (what the loader places on the device),
//! its header parsed by the core's `.npy` parser and its length checked against the shape. A
//! name that appears twice in the tar: the first copy is written, and a warning says so.

use std::collections::HashMap;
use std::io::{self, Read, Write};

use neff::npy::{NpyFeed, NpyParser};

use crate::cli::CatArgs;
use neff_host::error::{io_message, print_warning, CliError};
use neff_host::header_view::HeaderView;
use neff_host::walk::{self, body_error, Visitor};

/// Bytes read from a member at a time.
const CHUNK: usize = 64 * 1024;

struct Cat<W: Write> {
    want: String,
    data: bool,
    copies: u32,
    out: W,
    /// stdout was closed (`neff cat ... | head -c 10`): stop writing, quietly.
    closed: bool,
}

impl<W: Write> Cat<W> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), CliError> {
        if self.closed {
            return Ok(());
        }
        match self.out.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(CliError::Path { path: "<stdout>".into(), message: io_message(&e) }),
        }
    }

    fn copy(&mut self, name: &str, body: &mut dyn Read) -> Result<(), CliError> {
        let mut buf = vec![0u8; CHUNK];
        let mut npy = self.data.then(NpyParser::<256>::new);
        let mut header = None;
        let mut data_bytes = 0u64;
        loop {
            let n = body.read(&mut buf).map_err(|e| body_error(name, &e))?;
            if n == 0 {
                break;
            }
            let chunk = &buf[..n];
            let Some(parser) = npy.as_mut() else {
                self.write(chunk)?;
                continue;
            };
            let data = match parser.feed(chunk).map_err(|e| CliError::rejected(format!("{name}: --data: {e}")))? {
                NpyFeed::NeedMore => &[][..],
                NpyFeed::Complete { header: h, header_bytes } => {
                    header = Some(h);
                    &chunk[header_bytes..]
                }
            };
            data_bytes += data.len() as u64;
            self.write(data)?;
        }
        if let Some(parser) = &npy {
            let h = match header {
                Some(h) => h,
                None => parser.finish().map_err(|e| CliError::rejected(format!("{name}: --data: {e}")))?,
            };
            let want = h.data_len().map_err(|e| CliError::rejected(format!("{name}: --data: {e}")))?;
            if data_bytes != want {
                return Err(CliError::rejected(format!(
                    "{name}: --data: the shape says {want} bytes of array data, the member holds {data_bytes}"
                )));
            }
        }
        Ok(())
    }
}

impl<W: Write> Visitor for Cat<W> {
    fn header(&mut self, _header: &HeaderView) -> Result<(), CliError> {
        Ok(())
    }

    fn member(&mut self, name: &[u8], _size: u64, body: &mut dyn Read) -> Result<(), CliError> {
        // A name that is not UTF-8 cannot be asked for on the command line as text: no match.
        let Ok(name) = std::str::from_utf8(name) else { return Ok(()) };
        if name != self.want {
            return Ok(());
        }
        self.copies += 1;
        if self.copies > 1 {
            print_warning(&format!("{name}: the archive holds this name again; the first copy was written"));
            return Ok(());
        }
        self.copy(name, body)
    }
}

/// Runs `neff cat`: one member streamed as the walk passes it; several through a member index.
pub fn run(args: &CatArgs) -> Result<(), CliError> {
    match args.members.as_slice() {
        [one] => run_one(args, one),
        several => run_several(args, several),
    }
}

fn no_such_member(name: &str, members: u64) -> CliError {
    CliError::rejected_with_hint(
        format!("{name}: no such member ({members} members)"),
        "`neff ls FILE` lists the members",
    )
}

fn stdout_cat(want: &str, data: bool) -> Cat<io::BufWriter<io::StdoutLock<'static>>> {
    let out = io::BufWriter::with_capacity(CHUNK, io::stdout().lock());
    Cat { want: want.to_owned(), data, copies: 0, out, closed: false }
}

fn flush<W: Write>(cat: &mut Cat<W>) -> Result<(), CliError> {
    if !cat.closed {
        if let Err(e) = cat.out.flush() {
            if e.kind() != io::ErrorKind::BrokenPipe {
                return Err(CliError::Path { path: "<stdout>".into(), message: io_message(&e) });
            }
        }
    }
    Ok(())
}

fn run_one(args: &CatArgs, member: &str) -> Result<(), CliError> {
    let source = neff_host::source::open_input(&args.file, "cat")?;
    let size = source.size();
    let mut cat = stdout_cat(member, args.data);
    let summary = walk::walk(source, size, &mut cat)?;
    flush(&mut cat)?;
    if cat.copies == 0 {
        return Err(no_such_member(member, summary.members));
    }
    Ok(())
}

/// Counts the copies of each name, while the walk builds the index.
struct Names(HashMap<Vec<u8>, u32>);

impl Visitor for Names {
    fn header(&mut self, _header: &HeaderView) -> Result<(), CliError> {
        Ok(())
    }

    fn member(&mut self, name: &[u8], _size: u64, _body: &mut dyn Read) -> Result<(), CliError> {
        *self.0.entry(name.to_vec()).or_default() += 1;
        Ok(())
    }
}

/// Several members: one walk builds the member index (and checks the archive to its end), then
/// each member is inflated from the index's last checkpoint before it, in the order asked.
fn run_several(args: &CatArgs, members: &[String]) -> Result<(), CliError> {
    let source = neff_host::source::open_input(&args.file, "cat")?;
    let size = source.size();
    let recorder = neff_host::index::Recorder::default();
    let mut names = Names(HashMap::new());
    let (summary, places) = walk::walk_indexing(source, size, &mut names, recorder.clone())?;
    let mut file = std::fs::File::open(&args.file).map_err(|e| CliError::path(&args.file, &e))?;
    let index = neff_host::index::MemberIndex::with_places(&recorder, places, &mut file);
    for member in members {
        if !names.0.contains_key(member.as_bytes()) {
            return Err(no_such_member(member, summary.members));
        }
    }
    let mut cat = stdout_cat("", args.data);
    for member in members {
        if names.0.get(member.as_bytes()).copied().unwrap_or(0) > 1 {
            print_warning(&format!("{member}: the archive holds this name again; the first copy was written"));
        }
        match index.read(member, &mut file).map_err(|e| CliError::path(&args.file, &e))? {
            Some(bytes) => cat.copy(member, &mut bytes.as_slice())?,
            // No checkpoints (an uncompressed tar, several gzip members): a walk per member.
            None => {
                flush(&mut cat)?;
                run_one(args, member)?;
            }
        }
    }
    flush(&mut cat)
}
