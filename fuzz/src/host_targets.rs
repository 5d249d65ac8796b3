//! Fuzz target bodies for the `neff` command: `unpack`'s member-path sanitiser.
//!
//! This file is also compiled by `targets/host/cli/tests/fuzz_replay.rs` with `#[path]`.

use std::path::{Component, Path};

use neff_host::safe_path::safe_components;

/// `unpack_path`: whatever the member path, an accepted one stays under the output directory:
/// relative, only normal components, none of them empty, `.`, `..`, or holding `\` or NUL, and
/// the components joined with `/` are the path again. A refusal always says why.
pub fn unpack_path(data: &[u8]) {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    match safe_components(name) {
        Ok(parts) => {
            assert_eq!(parts.join("/"), name);
            for part in &parts {
                assert!(!part.is_empty() && *part != "." && *part != "..", "{name:?}: {part:?}");
                assert!(!part.contains(['/', '\\', '\0']), "{name:?}: {part:?}");
            }
            let path = Path::new(name);
            assert!(path.is_relative(), "{name:?}");
            assert!(path.components().all(|c| matches!(c, Component::Normal(_))), "{name:?}");
            assert_eq!(path.components().count(), parts.len(), "{name:?}");
        }
        Err(reason) => assert!(!reason.to_string().is_empty()),
    }
}

/// `gzip_parallel`: `data` as the gzip payload of a NEFF file, inflated by the serial path and
/// by the parallel one (2 and 3 workers, chunks of 64 to 575 bytes, so that even small inputs
/// are cut): the same tar stream (up to less than a 32 KiB window before a refusal) and the same
/// end, error and offset included.
pub fn gzip_parallel(data: &[u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let fields = neff_host::writer::HeaderFields::new("fuzz.neff", [7; 16], 1);
    let Ok(header) = fields.encode(data.len() as u64, &[0; 32]) else { return };
    let path = std::env::temp_dir().join(format!(
        "neff-fuzz-gzip-{}-{}.neff",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut bytes = header.to_vec();
    bytes.extend_from_slice(data);
    if std::fs::write(&path, &bytes).is_err() {
        return;
    }
    let chunk = 64 + u64::from(data.first().copied().unwrap_or(0)) * 2;
    let (serial, serial_end) = inflate_file(&path, None, 1 << 24);
    for threads in [2, 3] {
        let par = neff_host::inflate::parallel::Parallelism { threads, chunk };
        let (out, end) = inflate_file(&path, Some(par), 1 << 24);
        assert_eq!(end, serial_end, "{threads} threads, chunk {chunk}");
        let common = out.len().min(serial.len());
        assert!(out[..common] == serial[..common], "{threads} threads, chunk {chunk}: streams differ");
        if serial_end.starts_with("finish: Ok") {
            assert_eq!(out.len(), serial.len());
        } else {
            assert!(out.len().abs_diff(serial.len()) < 32 * 1024);
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// The tar stream of the NEFF at `path` and how it ended (the error with its offset, or the
/// closing result, and the warnings raised), inflated serially (`None`) or in parallel, the
/// inflated stream limited to `max_inflated` bytes. The parallel inflate tests use it too.
pub fn inflate_file(
    path: &Path,
    par: Option<neff_host::inflate::parallel::Parallelism>,
    max_inflated: u64,
) -> (Vec<u8>, String) {
    use embedded_io::BufRead as _;
    use neff::archive::{Container, OpenOptions};
    use neff_host::inflate::parallel::{Deferred, HostInflater, ParallelInflate};
    use neff_host::source::{FileSource, InputSource};
    let Ok(source) = FileSource::open(path) else { return (Vec::new(), "unreadable".into()) };
    let size = source.size();
    let opts = OpenOptions { max_inflated, ..OpenOptions::default() };
    let deferred = Deferred::default();
    let inflater = match (par, source.file().try_clone()) {
        (Some(par), Ok(file)) => {
            HostInflater::Parallel(Box::new(ParallelInflate::new(file, size, &opts, par, &deferred)))
        }
        _ => HostInflater::Serial(neff_host::inflate::ZlibRs::new()),
    };
    let mut warnings = Vec::new();
    let mut sink = |w: &neff::Warning| warnings.push(format!("{w:?}"));
    let mut container = match Container::open(InputSource::File(source), Some(size), &opts, inflater, &mut sink) {
        Ok(c) => c,
        Err(e) => return (Vec::new(), format!("open: {e:?}")),
    };
    deferred.set_data_size(container.header().data_size);
    let mut out = Vec::new();
    loop {
        match container.fill_buf() {
            Ok([]) => break,
            Ok(b) => {
                let n = b.len();
                out.extend_from_slice(b);
                container.consume(n);
            }
            Err(e) => return (out, format!("stream: {e:?}")),
        }
    }
    let end = format!("finish: {:?} {warnings:?}", container.finish(&mut sink));
    (out, end)
}
