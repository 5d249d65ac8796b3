//! `neff._neff`: the native half of the Python package `neff`.
//!
//! Each function runs the same code as a verb of the `neff` command (the `neff_host` library)
//! with the GIL released, and hands back what that verb's `--json` prints, as JSON text the
//! Python half parses (`json.loads` keeps the key order), plus the warnings the pass raised as
//! `NeffWarning` objects. A refusal is a `NeffError` with the core's fields; a path that cannot
//! be read is an `OSError`. The Python half (`python/neff/__init__.py`) normalises inputs and
//! turns these into the public API.

use std::collections::HashSet;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use neff::npy::{NpyFeed, NpyParser};
use neff_host::error::{CliError, Fault};
use neff_host::header_view::HeaderView;
use neff_host::index::MemberIndex;
use neff_host::loading::{self, PassOptions, Request, Target};
use neff_host::source::{FileSource, InputSource, READ_BUFFER};
use neff_host::walk::{self, body_error, Visitor};
use pyo3::exceptions::{PyException, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

/// A class of the Python half (`neff.NeffError`, `neff.NeffWarning`): they live in module
/// `neff`, so they pickle by name and a process pool hands them back whole.
fn python_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("neff")?.getattr(name)
}

/// What a call failed with, before it becomes a Python exception.
enum Failure {
    /// A verb's error.
    Cli(CliError),
    /// The input path could not be opened (becomes the matching `OSError` subclass).
    Open(io::Error, String),
    /// A member that is not in the archive.
    NoMember(String),
    /// A failure of the input named here (`diff`'s a or b).
    Of(Option<String>, Box<Failure>),
}

impl From<CliError> for Failure {
    fn from(e: CliError) -> Self {
        Failure::Cli(e)
    }
}

/// A refusal as a `neff.NeffError`, field by field.
fn neff_error(
    py: Python<'_>,
    message: &str,
    hints: &[String],
    fault: Option<&Fault>,
    filename: Option<&str>,
) -> PyResult<PyErr> {
    let fields = PyDict::new(py);
    fields.set_item("code", fault.map(|f| f.code))?;
    fields.set_item("status", fault.map(|f| f.status.name()))?;
    fields.set_item("status_code", fault.map(|f| f.status.code()))?;
    fields.set_item("stage", fault.map(|f| f.stage))?;
    fields.set_item("member", fault.and_then(|f| f.member.clone()))?;
    fields.set_item("key_path", fault.and_then(|f| f.key_path.clone()))?;
    fields.set_item("offset", fault.and_then(|f| f.offset.map(|(o, _)| o)))?;
    fields.set_item("offset_base", fault.and_then(|f| f.offset.map(|(_, b)| b)))?;
    fields.set_item("reason", fault.map(|f| f.reason.clone()))?;
    fields.set_item("hints", hints.to_vec())?;
    fields.set_item("filename", filename)?;
    // The warnings raised before the refusal (the Python half warns them, then raises).
    let records = fault.map(|f| f.warnings.as_slice()).unwrap_or_default();
    let texts: Vec<String> = records.iter().map(ToString::to_string).collect();
    fields.set_item("warnings", warning_objects(py, records, &texts)?)?;
    let value = python_class(py, "NeffError")?.call((message,), Some(&fields))?;
    Ok(PyErr::from_value(value))
}

/// An `OSError` built as `open()` builds one: `OSError(errno, strerror, filename)` (which
/// picks the subclass, `FileNotFoundError`, ...), or the message alone without an errno.
fn os_error(py: Python<'_>, e: &io::Error, filename: &str) -> PyResult<PyErr> {
    let Some(errno) = e.raw_os_error() else {
        let err = PyOSError::new_err(format!("{filename}: {}", neff_host::error::io_message(e)));
        err.value(py).setattr("filename", filename)?;
        return Ok(err);
    };
    let strerror: String = py.import("os")?.getattr("strerror")?.call1((errno,))?.extract()?;
    Ok(PyOSError::new_err((errno, strerror, filename.to_owned())))
}

impl Failure {
    fn into_py(self, py: Python<'_>) -> PyErr {
        self.into_py_of(py, None)
    }

    fn into_py_of(self, py: Python<'_>, filename: Option<&str>) -> PyErr {
        let made = match self {
            Failure::Of(name, inner) => return inner.into_py_of(py, name.as_deref().or(filename)),
            Failure::Cli(CliError::Rejected { message, hints, fault }) => {
                // The same hints as the command's (the failed-compile marker's too).
                let (message, hints, fault) = match filename {
                    Some(path) => match neff_host::cache::with_marker_hint(
                        CliError::Rejected { message, hints, fault },
                        std::path::Path::new(path),
                    ) {
                        CliError::Rejected { message, hints, fault } => (message, hints, fault),
                        other => return Failure::Cli(other).into_py_of(py, Some(path)),
                    },
                    None => (message, hints, fault),
                };
                neff_error(py, &message, &hints, fault.as_deref(), filename)
            }
            Failure::Cli(CliError::Path { path, message }) => {
                let err = PyOSError::new_err(format!("{path}: {message}"));
                err.value(py).setattr("filename", filename.unwrap_or(&path)).map(|()| err)
            }
            Failure::Cli(CliError::Usage { message }) => Ok(PyValueError::new_err(message)),
            Failure::Open(e, path) => os_error(py, &e, &path),
            Failure::NoMember(name) => Ok(PyKeyError::new_err(name)),
        };
        made.unwrap_or_else(|e| e)
    }
}

/// The input of a call: a path, the bytes of a NEFF, or a binary file object and the bytes
/// left in it (the Python half finds that size with `seek`/`tell`).
enum Input {
    Path(PathBuf),
    Bytes(Vec<u8>),
    File(Py<PyAny>, u64),
}

impl Input {
    fn extract(src: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(s) = src.downcast::<PyString>() {
            return Ok(Input::Path(PathBuf::from(s.extract::<String>()?)));
        }
        if let Ok(b) = src.downcast::<PyBytes>() {
            return Ok(Input::Bytes(b.as_bytes().to_vec()));
        }
        if let Ok(t) = src.downcast::<PyTuple>() {
            let (file, size): (Py<PyAny>, u64) = t.extract()?;
            return Ok(Input::File(file, size));
        }
        Err(PyValueError::new_err("expected a path, bytes, or a (file object, size) pair"))
    }

    /// How the input is named in reports (`info`'s label, `mem`'s `file`).
    fn label(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Bytes(_) => "<bytes>".to_owned(),
            Input::File(..) => "<file>".to_owned(),
        }
    }

    /// The path of a path input (what an error's `filename` says).
    fn filename(&self) -> Option<String> {
        match self {
            Input::Path(p) => Some(p.display().to_string()),
            _ => None,
        }
    }

    fn open(self) -> Result<InputSource, Failure> {
        match self {
            Input::Path(p) => match FileSource::open(&p) {
                Ok(f) => Ok(InputSource::File(f)),
                Err(e) => Err(Failure::Open(e, p.display().to_string())),
            },
            Input::Bytes(b) => {
                let size = b.len() as u64;
                Ok(InputSource::Reader(Box::new(io::Cursor::new(b)), size))
            }
            Input::File(file, size) => {
                Ok(InputSource::Reader(Box::new(io::BufReader::with_capacity(READ_BUFFER, PyFile(file))), size))
            }
        }
    }
}

/// A Python binary file object as a `Read`: each read takes the GIL for one `read(n)` call.
struct PyFile(Py<PyAny>);

impl Read for PyFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::with_gil(|py| {
            let data =
                self.0.bind(py).call_method1("read", (buf.len(),)).map_err(|e| io::Error::other(e.to_string()))?;
            let bytes = data
                .downcast::<PyBytes>()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read() did not return bytes (a text file?)"))?
                .as_bytes();
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            Ok(n)
        })
    }
}

/// Warnings of a pass as `neff.NeffWarning` objects (the Python half passes them to
/// `warnings.warn`).
fn warning_objects(py: Python<'_>, records: &[neff::Warning], texts: &[String]) -> PyResult<Vec<PyObject>> {
    let class = python_class(py, "NeffWarning")?;
    let mut out = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let record = records.get(i);
        let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let fields = PyDict::new(py);
        fields.set_item("code", record.map(|r| r.kind.code()))?;
        fields.set_item("stage", record.map(|r| r.stage.name()))?;
        fields.set_item("member", record.and_then(|r| nonempty(r.member.as_str())))?;
        fields.set_item("key_path", record.and_then(|r| nonempty(r.key_path.as_str())))?;
        let position = record.and_then(|r| match r.offset_base {
            neff::error::OffsetBase::None => None,
            neff::error::OffsetBase::File => Some((r.offset, "file")),
            neff::error::OffsetBase::Archive => Some((r.offset, "archive")),
            neff::error::OffsetBase::Member => Some((r.offset, "member")),
        });
        fields.set_item("offset", position.map(|(o, _)| o))?;
        fields.set_item("offset_base", position.map(|(_, b)| b))?;
        out.push(class.call((text,), Some(&fields))?.unbind());
    }
    Ok(out)
}

/// JSON text of a verb's object and the warnings of its pass.
type Answer = (String, Vec<neff::Warning>, Vec<String>);

/// Runs `work` without the GIL and returns its JSON text and warnings to Python.
fn answer(py: Python<'_>, work: impl FnOnce() -> Result<Answer, Failure> + Send) -> PyResult<(String, Vec<PyObject>)> {
    answer_of(py, None, work)
}

/// [`answer`], a failure naming `filename` (the path of a path input).
fn answer_of(
    py: Python<'_>,
    filename: Option<String>,
    work: impl FnOnce() -> Result<Answer, Failure> + Send,
) -> PyResult<(String, Vec<PyObject>)> {
    match py.allow_threads(work) {
        Ok((text, records, texts)) => Ok((text, warning_objects(py, &records, &texts)?)),
        Err(e) => Err(e.into_py_of(py, filename.as_deref())),
    }
}

fn json_text(value: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string(value).map_err(|e| Failure::Cli(CliError::rejected(e.to_string())))
}

/// The arch named `name` as the command's `--arch` takes it (codename, version or instance
/// family: `cayman`, `v3`, `trn2`).
fn arch_named(name: Option<&str>) -> PyResult<Option<neff::manifest::Arch>> {
    let Some(name) = name else { return Ok(None) };
    match neff::manifest::Arch::from_name(name) {
        Some(arch) => Ok(Some(arch)),
        None => {
            // `sunda|v2|trn1|inf2, cayman|v3|trn2 or mariana|v4|trn3`, from the core's table.
            let mut groups = loading::arch_name_groups();
            let last = groups.pop().unwrap_or_default();
            Err(PyValueError::new_err(format!("arch {name:?}: expected {} or {last}", groups.join(", "))))
        }
    }
}

/// `neff info --json`'s object, as JSON text, and the warnings.
#[pyfunction]
#[pyo3(signature = (src, verify=false))]
fn info(py: Python<'_>, src: &Bound<'_, PyAny>, verify: bool) -> PyResult<(String, Vec<PyObject>)> {
    let input = Input::extract(src)?;
    answer_of(py, input.filename(), move || {
        let source = input.open()?;
        let options = PassOptions { verify, keep_warning_records: true, ..PassOptions::default() };
        let mut pass = loading::run(source, Request::info().with(options))?;
        let doc = neff_host::info::info_json(&mut pass);
        Ok((json_text(&doc)?, std::mem::take(&mut pass.warning_records), std::mem::take(&mut pass.warnings)))
    })
}

/// What `neff check` reports, as JSON text, and the warnings.
#[pyfunction]
#[pyo3(signature = (src, arch=None, allow_legacy=false, verify=false))]
fn check(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    arch: Option<&str>,
    allow_legacy: bool,
    verify: bool,
) -> PyResult<(String, Vec<PyObject>)> {
    let input = Input::extract(src)?;
    let arch = arch_named(arch)?;
    answer_of(py, input.filename(), move || {
        let label = input.label();
        let source = input.open()?;
        let options = PassOptions { allow_legacy, verify, keep_warning_records: true, ..PassOptions::default() };
        let mut pass = loading::run(source, Request::check().onto(Target::Check(arch)).with(options))?;
        let doc = neff_host::report::check_json(&label, arch, &pass, verify);
        Ok((json_text(&doc)?, std::mem::take(&mut pass.warning_records), std::mem::take(&mut pass.warnings)))
    })
}

/// `neff load --json`'s object, as JSON text, and the warnings.
#[pyfunction]
#[pyo3(signature = (src, arch=None, digest_only=true, device_mem=None, verify=false))]
fn load(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    arch: Option<&str>,
    digest_only: bool,
    device_mem: Option<u64>,
    verify: bool,
) -> PyResult<(String, Vec<PyObject>)> {
    let input = Input::extract(src)?;
    let device_arch = match arch_named(arch)? {
        Some(a) => loading::DeviceArch::Pinned(a),
        None => loading::DeviceArch::NeffTarget,
    };
    let target = if digest_only {
        Target::DigestOnly { arch: device_arch, capacity: neff_host::report::DIGEST_ONLY_CAPACITY, notebook: 0 }
    } else {
        Target::Memory { arch: device_arch, bytes: device_mem.unwrap_or(neff_host::report::DEFAULT_DEVICE_MEM) }
    };
    answer_of(py, input.filename(), move || {
        let source = input.open()?;
        let options = PassOptions { verify, keep_warning_records: true, ..PassOptions::default() };
        let mut pass = loading::run(source, Request::check().onto(target).with(options))?;
        let doc = neff_host::report::report_json(&pass)?;
        Ok((json_text(&doc)?, std::mem::take(&mut pass.warning_records), std::mem::take(&mut pass.warnings)))
    })
}

/// `neff mem --json`'s object of one file, as JSON text.
#[pyfunction]
#[pyo3(signature = (src, profiling=false))]
fn mem(py: Python<'_>, src: &Bound<'_, PyAny>, profiling: bool) -> PyResult<(String, Vec<PyObject>)> {
    let input = Input::extract(src)?;
    answer_of(py, input.filename(), move || {
        let label = input.label();
        let file = neff_host::mem::mem_of_source(input.open()?, label, profiling)?;
        Ok((json_text(&neff_host::mem::document(&[file]))?, Vec::new(), Vec::new()))
    })
}

/// `neff diff --json`'s object, as JSON text.
#[pyfunction]
fn diff(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(String, Vec<PyObject>)> {
    let (a, b) = (Input::extract(a)?, Input::extract(b)?);
    answer(py, move || {
        let mut sides = Vec::with_capacity(2);
        for input in [a, b] {
            let label = input.label();
            let filename = input.filename();
            let side = (|| -> Result<_, Failure> {
                let (pass, consumed) = loading::consumed_pass_of(input.open()?)?;
                Ok(neff_host::diff::side(label, &pass, consumed)?)
            })();
            sides.push(side.map_err(|e| Failure::Of(filename, Box::new(e)))?);
        }
        Ok((json_text(&neff_host::diff::compare(&sides[0], &sides[1]))?, Vec::new(), Vec::new()))
    })
}

/// `neff cache --json`'s object, as JSON text.
#[pyfunction]
#[pyo3(signature = (dir=None))]
fn cache(py: Python<'_>, dir: Option<PathBuf>) -> PyResult<(String, Vec<PyObject>)> {
    answer(py, move || {
        let root = neff_host::cache::root(dir.as_deref())?;
        let entries = neff_host::cache::scan(&root)?;
        Ok((json_text(&neff_host::cache::document(&root, &entries))?, Vec::new(), Vec::new()))
    })
}

/// `neff ls --json`'s member rows, as JSON text (a list), and the warnings.
#[pyfunction]
fn members(py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<(String, Vec<PyObject>)> {
    let input = Input::extract(src)?;
    answer_of(py, input.filename(), move || {
        let (mut pass, consumed) = loading::consumed_pass_of(input.open()?)?;
        let rows = neff_host::ls::rows(&pass, &consumed);
        Ok((json_text(&rows)?, std::mem::take(&mut pass.warning_records), std::mem::take(&mut pass.warnings)))
    })
}

/// Collects one member's bytes (the first copy of its name).
struct ReadOne {
    want: String,
    found: Option<Vec<u8>>,
}

impl Visitor for ReadOne {
    fn header(&mut self, _header: &HeaderView) -> Result<(), CliError> {
        Ok(())
    }

    fn member(&mut self, name: &[u8], size: u64, body: &mut dyn Read) -> Result<(), CliError> {
        if self.found.is_some() || name != self.want.as_bytes() {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        body.read_to_end(&mut bytes).map_err(|e| body_error(&self.want, &e))?;
        self.found = Some(bytes);
        Ok(())
    }
}

/// One member's bytes, as `neff cat` writes them, and the warnings of the walk.
#[pyfunction]
fn read(py: Python<'_>, src: &Bound<'_, PyAny>, member: String) -> PyResult<(PyObject, Vec<PyObject>)> {
    let input = Input::extract(src)?;
    let filename = input.filename();
    let walked = py.allow_threads(move || -> Result<(Vec<u8>, walk::WalkSummary), Failure> {
        let source = input.open()?;
        let size = source.size();
        let mut one = ReadOne { want: member, found: None };
        let summary = walk::walk_keeping(source, size, &mut one, true)?;
        match one.found {
            Some(bytes) => Ok((bytes, summary)),
            None => Err(Failure::NoMember(one.want)),
        }
    });
    match walked {
        Ok((bytes, summary)) => Ok((
            PyBytes::new(py, &bytes).into_any().unbind(),
            warning_objects(py, &summary.warning_records, &summary.warnings)?,
        )),
        Err(e) => Err(e.into_py_of(py, filename.as_deref())),
    }
}

/// The `(member, subgraph directory, var name)` of [`weight_vars`] and the warnings.
type WeightVars = (Vec<(String, String, String)>, Vec<PyObject>);

/// `(member, subgraph directory, var name)` of every weight (a `def.json` var with a `file_name`), from `info`'s
/// pass, and the warnings: what `weights()` needs of the manifests, without handing Python
/// every var of the NEFF.
#[pyfunction]
fn weight_vars(py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<WeightVars> {
    let input = Input::extract(src)?;
    let filename = input.filename();
    let found = py.allow_threads(move || -> Result<_, Failure> {
        let source = input.open()?;
        let options = PassOptions { keep_warning_records: true, ..PassOptions::default() };
        let mut pass = loading::run(source, Request::info().with(options))?;
        let doc = neff_host::info::info_json(&mut pass);
        let mut pairs = Vec::new();
        for sg in doc.subgraphs {
            let dir = neff::loader::dir_of(&sg.definition);
            for v in sg.vars {
                if let Some(file) = v.file_name {
                    pairs.push((loading::join(dir, &file), dir.to_owned(), v.name));
                }
            }
        }
        Ok((pairs, std::mem::take(&mut pass.warning_records), std::mem::take(&mut pass.warnings)))
    });
    match found {
        Ok((pairs, records, texts)) => Ok((pairs, warning_objects(py, &records, &texts)?)),
        Err(e) => Err(e.into_py_of(py, filename.as_deref())),
    }
}

/// One `.npy` member: its name, `descr`, shape, order and array data.
type NpyItem = (String, String, Vec<u64>, bool, Vec<u8>);

/// An [`NpyItem`] as Python receives it (the data as `bytes`).
type NpyTuple = (String, String, Vec<u64>, bool, PyObject);

/// Sends each wanted `.npy` member's parsed header and data down a channel of one, so the
/// walk runs at most one member ahead of the Python consumer.
struct NpySender {
    wanted: HashSet<String>,
    tx: SyncSender<NpyItem>,
}

impl NpySender {
    fn npy(name: &str, body: &mut dyn Read, size: u64) -> Result<NpyItem, CliError> {
        let bad = |e: neff::npy::NpyError| CliError::rejected(format!("{name}: {e}"));
        let mut parser = NpyParser::<256>::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut header = None;
        let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        loop {
            let n = body.read(&mut chunk).map_err(|e| body_error(name, &e))?;
            if n == 0 {
                break;
            }
            let got = &chunk[..n];
            if header.is_some() {
                data.extend_from_slice(got);
                continue;
            }
            if let NpyFeed::Complete { header: h, header_bytes } = parser.feed(got).map_err(bad)? {
                header = Some(h);
                data.extend_from_slice(&got[header_bytes..]);
            }
        }
        let h = match header {
            Some(h) => h,
            None => parser.finish().map_err(bad)?,
        };
        let want = h.data_len().map_err(bad)?;
        if data.len() as u64 != want {
            return Err(CliError::rejected(format!(
                "{name}: the shape says {want} bytes of array data, the member holds {}",
                data.len()
            )));
        }
        let d = h.descr;
        let descr = format!("{}{}{}", d.byte_order.as_char(), d.kind.as_char(), d.item_size);
        Ok((name.to_owned(), descr, h.shape().to_vec(), h.fortran_order, data))
    }
}

impl Visitor for NpySender {
    fn header(&mut self, _header: &HeaderView) -> Result<(), CliError> {
        Ok(())
    }

    fn member(&mut self, name: &[u8], size: u64, body: &mut dyn Read) -> Result<(), CliError> {
        let Ok(name) = std::str::from_utf8(name) else { return Ok(()) };
        // The first copy of a name only, as the loader binds it.
        if !self.wanted.remove(name) {
            return Ok(());
        }
        let item = Self::npy(name, body, size)?;
        // The consumer went away (the generator was closed): stop walking.
        self.tx.send(item).map_err(|_| CliError::usage("weights: the consumer stopped"))
    }
}

/// The `.npy` members of a NEFF, one at a time, in archive order.
#[pyclass(module = "neff._neff")]
struct NpyStream {
    rx: Mutex<Receiver<NpyItem>>,
    worker: Mutex<Option<JoinHandle<Result<walk::WalkSummary, Failure>>>>,
}

#[pymethods]
impl NpyStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next member as `(member, descr, shape, fortran_order, data)`; at the end, the walk's
    /// outcome (a refusal raises).
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<NpyTuple>> {
        let received = py.allow_threads(|| self.rx.lock().map(|rx| rx.recv().ok()).ok().flatten());
        if let Some((name, descr, shape, fortran, data)) = received {
            let bytes = PyBytes::new(py, &data).into_any().unbind();
            return Ok(Some((name, descr, shape, fortran, bytes)));
        }
        let worker = self.worker.lock().ok().and_then(|mut w| w.take());
        if let Some(worker) = worker {
            match py.allow_threads(|| worker.join()) {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e.into_py(py)),
                Err(_) => return Err(PyException::new_err("the walk of the NEFF panicked (a bug)")),
            }
        }
        Ok(None)
    }
}

/// Streams the `.npy` members named in `wanted` (member paths), parsed, one at a time.
#[pyfunction]
fn npy_members(src: &Bound<'_, PyAny>, wanted: Vec<String>) -> PyResult<NpyStream> {
    let input = Input::extract(src)?;
    let (tx, rx) = sync_channel(0);
    let wanted: HashSet<String> = wanted.into_iter().collect();
    let worker = std::thread::Builder::new()
        .name("neff-weights".into())
        .spawn(move || -> Result<walk::WalkSummary, Failure> {
            let filename = input.filename();
            let walked = (|| -> Result<walk::WalkSummary, Failure> {
                let source = input.open()?;
                let size = source.size();
                let mut sender = NpySender { wanted, tx };
                Ok(walk::walk_keeping(source, size, &mut sender, true)?)
            })();
            walked.map_err(|e| Failure::Of(filename, Box::new(e)))
        })
        .map_err(|e| PyOSError::new_err(format!("cannot start the walk thread: {e}")))?;
    Ok(NpyStream { rx: Mutex::new(rx), worker: Mutex::new(Some(worker)) })
}

/// Where an opened NEFF's bytes are read again from: its file, or its bytes.
enum Stored {
    Path(PathBuf),
    Bytes(Vec<u8>),
}

impl Stored {
    /// The bytes of `name` through the index; `Ok(None)` when the index cannot read members.
    fn read_indexed(&self, index: &MemberIndex, name: &str) -> io::Result<Option<Vec<u8>>> {
        match self {
            Stored::Path(p) => index.read(name, &mut std::fs::File::open(p)?),
            Stored::Bytes(b) => index.read(name, &mut io::Cursor::new(b.as_slice())),
        }
    }

    /// The NEFF again, as a source for a walk.
    fn input(&self) -> Input {
        match self {
            Stored::Path(p) => Input::Path(p.clone()),
            Stored::Bytes(b) => Input::Bytes(b.clone()),
        }
    }
}

/// A NEFF read once: the documents of `info`, `ls` and `mem`, the weights' vars and a member
/// index ([`MemberIndex`]) to read members without inflating from the start.
#[pyclass(module = "neff._neff", frozen)]
struct Opened {
    #[pyo3(get)]
    info: String,
    #[pyo3(get)]
    members: String,
    mem: [String; 2],
    #[pyo3(get)]
    weight_vars: Vec<(String, String, String)>,
    #[pyo3(get)]
    filename: Option<String>,
    index: MemberIndex,
    stored: Stored,
}

#[pymethods]
impl Opened {
    /// `neff mem --json`'s object (`profiling`: with the profiler's buffers).
    fn mem(&self, profiling: bool) -> String {
        self.mem[usize::from(profiling)].clone()
    }

    /// One member's bytes and the warnings of the walk (none when read through the index).
    fn read(&self, py: Python<'_>, member: String) -> PyResult<(PyObject, Vec<PyObject>)> {
        if self.index.place(&member).is_none() {
            return Err(PyKeyError::new_err(member));
        }
        let read = py.allow_threads(|| self.stored.read_indexed(&self.index, &member));
        match read {
            Ok(Some(bytes)) => Ok((PyBytes::new(py, &bytes).into_any().unbind(), Vec::new())),
            // No checkpoints (an uncompressed tar, several gzip members): walk the archive.
            Ok(None) => read_walking(py, self.stored.input(), member, self.filename.clone()),
            Err(e) => Err(os_error(py, &e, self.filename.as_deref().unwrap_or("<bytes>")).unwrap_or_else(|e| e)),
        }
    }

    /// A `.npy` member parsed: `(member, descr, shape, fortran_order, data)`.
    fn npy(&self, py: Python<'_>, member: String) -> PyResult<NpyTuple> {
        let (bytes, _) = self.read(py, member.clone())?;
        let bytes = bytes.bind(py).downcast::<PyBytes>()?.as_bytes().to_vec();
        let size = bytes.len() as u64;
        let parsed = py.allow_threads(|| NpySender::npy(&member, &mut bytes.as_slice(), size));
        match parsed {
            Ok((name, descr, shape, fortran, data)) => {
                Ok((name, descr, shape, fortran, PyBytes::new(py, &data).into_any().unbind()))
            }
            Err(e) => Err(Failure::Cli(e).into_py_of(py, self.filename.as_deref())),
        }
    }

    /// How many inflate checkpoints the index keeps, and the output bytes between them.
    fn index_size(&self) -> (usize, u64) {
        (self.index.checkpoints(), self.index.spacing())
    }
}

/// One member's bytes by a walk of the archive, and the walk's warnings.
fn read_walking(
    py: Python<'_>,
    input: Input,
    member: String,
    filename: Option<String>,
) -> PyResult<(PyObject, Vec<PyObject>)> {
    let walked = py.allow_threads(move || -> Result<(Vec<u8>, walk::WalkSummary), Failure> {
        let source = input.open()?;
        let size = source.size();
        let mut one = ReadOne { want: member, found: None };
        let summary = walk::walk_keeping(source, size, &mut one, true)?;
        match one.found {
            Some(bytes) => Ok((bytes, summary)),
            None => Err(Failure::NoMember(one.want)),
        }
    });
    match walked {
        Ok((bytes, summary)) => Ok((
            PyBytes::new(py, &bytes).into_any().unbind(),
            warning_objects(py, &summary.warning_records, &summary.warnings)?,
        )),
        Err(e) => Err(e.into_py_of(py, filename.as_deref())),
    }
}

/// Opens a NEFF: one pass gives what `info`, `ls` and `mem` print and the member index. A
/// file object's bytes are read into memory first (the index reads them again).
#[pyfunction]
fn open(py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<(Opened, Vec<PyObject>)> {
    let input = match Input::extract(src)? {
        Input::File(file, size) => {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            let read = py.allow_threads(|| {
                io::BufReader::with_capacity(READ_BUFFER, PyFile(file)).take(size).read_to_end(&mut bytes)
            });
            read.map_err(|e| PyOSError::new_err(e.to_string()))?;
            Input::Bytes(bytes)
        }
        other => other,
    };
    let filename = input.filename();
    let label = input.label();
    let stored = match &input {
        Input::Path(p) => Stored::Path(p.clone()),
        Input::Bytes(b) => Stored::Bytes(b.clone()),
        Input::File(..) => Stored::Bytes(Vec::new()),
    };
    let opened = py.allow_threads(move || -> Result<_, Failure> {
        let source = input.open()?;
        let recorder = neff_host::index::Recorder::default();
        let request = Request {
            details: true,
            members: Some(neff_host::members::MemberOptions::members()),
            index: Some(recorder.clone()),
            options: PassOptions { keep_warning_records: true, ..PassOptions::default() },
            ..Request::check()
        };
        let both = loading::Both(neff_host::consumed::ConsumedValues::new(), neff_host::mem::VirtualExtents::default());
        let (mut pass, both) = loading::run_observed(source, request, both)?;
        let loading::Both(consumed, extents) = both;
        let rows = neff_host::ls::rows(&pass, &consumed);
        let mem = [false, true].map(|profiling| {
            json_text(&neff_host::mem::document(&[neff_host::mem::file_mem(label.clone(), &pass, &extents, profiling)]))
        });
        let [Ok(mem_plain), Ok(mem_profiling)] = mem else {
            return Err(Failure::Cli(CliError::rejected("the mem document could not be written")));
        };
        let records = pass.members.as_ref().map(|log| log.members.as_slice()).unwrap_or_default();
        let index = match &stored {
            Stored::Path(p) => {
                let mut file = std::fs::File::open(p).map_err(|e| Failure::Open(e, p.display().to_string()))?;
                MemberIndex::new(&recorder, records, &mut file)
            }
            Stored::Bytes(b) => MemberIndex::new(&recorder, records, &mut io::Cursor::new(b.as_slice())),
        };
        let doc = neff_host::info::info_json(&mut pass);
        let mut weight_vars = Vec::new();
        for sg in &doc.subgraphs {
            let dir = neff::loader::dir_of(&sg.definition);
            for v in &sg.vars {
                if let Some(file) = &v.file_name {
                    weight_vars.push((loading::join(dir, file), dir.to_owned(), v.name.clone()));
                }
            }
        }
        let opened = Opened {
            info: json_text(&doc)?,
            members: json_text(&rows)?,
            mem: [mem_plain, mem_profiling],
            weight_vars,
            filename: None,
            index,
            stored,
        };
        Ok((opened, std::mem::take(&mut pass.warning_records), std::mem::take(&mut pass.warnings)))
    });
    match opened {
        Ok((mut opened, records, texts)) => {
            opened.filename = filename;
            Ok((opened, warning_objects(py, &records, &texts)?))
        }
        Err(e) => Err(e.into_py_of(py, filename.as_deref())),
    }
}

/// The native module `neff._neff`.
#[pymodule]
fn _neff(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Warnings reach Python through `warnings.warn`, not as lines on stderr.
    neff_host::error::set_warnings_to_stderr(false);
    m.add_function(wrap_pyfunction!(info, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(mem, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(cache, m)?)?;
    m.add_function(wrap_pyfunction!(members, m)?)?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(weight_vars, m)?)?;
    m.add_function(wrap_pyfunction!(npy_members, m)?)?;
    m.add_class::<NpyStream>()?;
    m.add_class::<Opened>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    // The core's table of arch names, grouped per arch: one list for all three faces.
    m.add("ARCH_NAMES", loading::arch_names())?;
    m.add("INDEX_SPACING", neff_host::index::SPACING)?;
    m.add("INDEX_MAX_CHECKPOINTS", neff_host::index::MAX_CHECKPOINTS)?;
    Ok(())
}
