"""Read, check and load AWS Neuron NEFF files: the ``neff`` loader as a Python package.

Every function runs the same Rust code as the matching verb of the ``neff`` command, with the
GIL released, and returns what that verb's ``--json`` prints (same keys, same order, same
values). A NEFF the loader refuses raises :class:`NeffError`; what it notices without refusing
goes to :func:`warnings.warn` as a :class:`NeffWarning`. A path that cannot be read raises the
``OSError`` that ``open()`` would (``FileNotFoundError``, with ``errno``, ``strerror`` and
``filename``).

Inputs: a path (``str`` or ``os.PathLike``), the bytes of a NEFF (``bytes``, ``bytearray``,
``memoryview``, ``mmap.mmap``, a NumPy ``uint8`` array or any object with the buffer protocol)
or a binary file object open for reading (read from its current position; it must be
seekable, so its size is known). Files stream through a fixed buffer: memory stays flat
whatever the size of the NEFF.

To ask several things of one NEFF, :func:`open` it: one pass gives ``info``, ``mem()``,
``members`` and a member index, and ``read(name)`` then inflates from the nearest checkpoint,
not from the start.
"""

from __future__ import annotations

import io
import os
import sys
import warnings as _warnings
from typing import IO, Any, Dict, Iterator, List, Literal, NamedTuple, Optional, Tuple, TypedDict, Union

from typing import TypedDict as _TypedDict

from . import _neff

__all__ = [
    "NeffError",
    "NeffWarning",
    "Neff",
    "open",
    "Info",
    "Header",
    "Kelf",
    "Tensor",
    "Subgraph",
    "Var",
    "DmaQueue",
    "Engine",
    "Carveout",
    "Fp8",
    "Hash",
    "Mem",
    "MemCore",
    "Diff",
    "DiffField",
    "DiffMembers",
    "DiffMember",
    "DiffMemberBody",
    "DiffChangedMember",
    "DiffValue",
    "DiffTensor",
    "DiffTensorSide",
    "DiffPayload",
    "DiffPayloadSide",
    "Report",
    "LoadReport",
    "Payload",
    "Member",
    "RawWeight",
    "Source",
    "info",
    "check",
    "load",
    "mem",
    "diff",
    "cache",
    "Cache",
    "CacheEntry",
    "CacheLock",
    "CacheNeff",
    "CacheFlags",
    "CacheTotals",
    "CacheState",
    "members",
    "read",
    "weights",
    "ARCH_NAMES",
]

__version__ = "0.1.0"

#: The names ``arch`` takes, one list per architecture (codename, version, instance families),
#: from the loader's own table: ``[["sunda", "v2", "trn1", "inf2"], ...]``.
ARCH_NAMES: List[List[str]] = [list(names) for names in _neff.ARCH_NAMES]


def __dir__() -> List[str]:
    """The public names only (PEP 562): not the modules and typing names used inside."""
    return sorted(__all__ + ["__version__"])


def _restore(cls: Any, message: str, fields: Dict[str, Any]) -> Any:
    """Rebuilds a pickled :class:`NeffError` or :class:`NeffWarning` with every field."""
    return cls(message, **fields)


class NeffError(Exception):
    """The loader refused the NEFF.

    It pickles with every field, so a refusal in a ``ProcessPoolExecutor`` or
    ``multiprocessing.Pool`` worker reaches the parent whole."""

    #: The whole line, as ``neff`` prints it after ``error:`` (also ``str(e)``).
    message: str
    #: The stable code of docs/error-codes.md (``ErrorKind::code``), ``None`` for a refusal of
    #: the host side (a member the walk could not parse, ...).
    code: Optional[int]
    #: The runtime status it maps to (``NRT_INVALID``, ...) and its number.
    status: Optional[str]
    status_code: Optional[int]
    #: The stage that refused (``header``, ``gzip``, ``tar``, ``def.json``, ...).
    stage: Optional[str]
    member: Optional[str]
    key_path: Optional[str]
    offset: Optional[int]
    #: What ``offset`` counts from: ``file``, ``archive`` (the inflated tar) or ``member``.
    offset_base: Optional[str]
    #: What went wrong, without the place.
    reason: Optional[str]
    #: What the command prints after the error as ``hint: ...`` lines.
    hints: List[str]
    #: The file refused (``diff``: ``a`` or ``b``); ``None`` for bytes and file objects.
    filename: Optional[str]
    #: The warnings raised before the refusal (``neff``'s functions also pass them to
    #: ``warnings.warn`` before raising).
    warnings: List["NeffWarning"]

    _FIELDS = (
        "code",
        "status",
        "status_code",
        "stage",
        "member",
        "key_path",
        "offset",
        "offset_base",
        "reason",
        "hints",
        "filename",
        "warnings",
    )

    def __init__(
        self,
        message: str,
        *,
        code: Optional[int] = None,
        status: Optional[str] = None,
        status_code: Optional[int] = None,
        stage: Optional[str] = None,
        member: Optional[str] = None,
        key_path: Optional[str] = None,
        offset: Optional[int] = None,
        offset_base: Optional[str] = None,
        reason: Optional[str] = None,
        hints: Optional[List[str]] = None,
        filename: Optional[str] = None,
        warnings: Optional[List["NeffWarning"]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.status_code = status_code
        self.stage = stage
        self.member = member
        self.key_path = key_path
        self.offset = offset
        self.offset_base = offset_base
        self.reason = reason
        self.hints = list(hints or [])
        self.filename = filename
        self.warnings = list(warnings or [])

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (_restore, (type(self), self.message, {k: getattr(self, k) for k in self._FIELDS}))


class NeffWarning(UserWarning):
    """Something the loader noticed that does not fail a load."""

    message: str
    #: The stable code of docs/error-codes.md (``WarningKind::code``); ``None`` for a warning
    #: of the host side.
    code: Optional[int]
    stage: Optional[str]
    member: Optional[str]
    key_path: Optional[str]
    offset: Optional[int]
    offset_base: Optional[str]

    _FIELDS = ("code", "stage", "member", "key_path", "offset", "offset_base")

    def __init__(
        self,
        message: str,
        *,
        code: Optional[int] = None,
        stage: Optional[str] = None,
        member: Optional[str] = None,
        key_path: Optional[str] = None,
        offset: Optional[int] = None,
        offset_base: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.stage = stage
        self.member = member
        self.key_path = key_path
        self.offset = offset
        self.offset_base = offset_base

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (_restore, (type(self), self.message, {k: getattr(self, k) for k in self._FIELDS}))


#: What every function accepts as a NEFF.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes], Any]


class Header(_TypedDict):
    """The NEFF header (:class:`Info`'s ``header``), field by field."""

    pkg_version: int
    header_size: int
    data_size: int
    neff_version: str
    build_version: str
    num_tpb: int
    uuid: str
    name: str
    requested_tpb_count: int
    feature_bits: int
    lnc_size: int


class Kelf(_TypedDict):
    """One KELF node (:class:`Info`'s ``kelf``): its member, version and target as written, and
    the target's ``al_hal_tpb_arch_type`` (``None`` for ``*``)."""

    member: str
    version: Optional[str]
    target: Optional[str]
    arch: Optional[int]


class Tensor(_TypedDict):
    """An input or output of ``neff.json`` (:class:`Info`'s ``inputs`` and ``outputs``)."""

    name: str
    dtype: str
    nrt_dtype: int
    shape: List[int]
    size: int


#: A variable of a ``def.json`` (``type`` is a Python keyword, hence the functional form).
Var = _TypedDict(
    "Var",
    {
        "name": str,
        "type": str,
        "mr_type": Optional[int],
        "var_id": int,
        "size": Optional[int],
        "alignment": Optional[int],
        "file_name": Optional[str],
        "backing_variable_off": Optional[int],
    },
)

#: A DMA queue set of a ``def.json``.
DmaQueue = _TypedDict(
    "DmaQueue",
    {
        "name": str,
        "type": str,
        "ring_type": Optional[int],
        "owner": Optional[str],
        "num_queues": int,
        "semaphores": List[int],
    },
)


class Engine(_TypedDict):
    """An engine of a subgraph: its JSON member and instruction stream."""

    engine: str
    json: str
    instr: Optional[str]
    instr_size: Optional[int]
    ninstr: Optional[int]


#: A state-buffer carveout of a ``def.json``.
Carveout = _TypedDict(
    "Carveout",
    {"type": str, "offset": int, "size": int, "start_partition": int, "num_partitions": int},
)


class Fp8(_TypedDict):
    """The FP8 policy of a subgraph."""

    fp8_range_extension: bool
    emax_fp8_e4m3: int
    emax_fp8_e5m2: int
    ocp_sat: bool
    fp8_sis: bool
    fp8_sns: bool


class Subgraph(_TypedDict):
    """One graph of a KELF and its ``def.json`` (:class:`Info`'s ``subgraphs``)."""

    name: str
    definition: str
    version: Optional[str]
    vars: List[Var]
    dma_queues: List[DmaQueue]
    engines: List[Engine]
    carveouts: List[Carveout]
    fp8: Optional[Fp8]


class Hash(_TypedDict):
    """The header hash: the stored value and the outcome of ``verify``."""

    algorithm: Optional[str]
    stored: str
    result: str
    order: Optional[str]
    computed: Optional[str]


class Info(_TypedDict):
    """What :func:`info` returns (``neff info --json``)."""

    header: Header
    kelf: List[Kelf]
    inputs: List[Tensor]
    outputs: List[Tensor]
    subgraphs: List[Subgraph]
    hash: Hash
    compiler_version: Optional[str]


class MemCore(_TypedDict):
    """One physical NeuronCore of :class:`Mem` (``neff mem --json``'s ``cores``): bytes by the
    runtime's category, what the NEFF places and the runtime's own overhead (``None`` where the
    arch has no measured constants)."""

    core: int
    subgraph: Optional[str]
    usage: Dict[str, int]
    from_neff: Dict[str, int]
    runtime_overhead: Optional[Dict[str, int]]
    total: int


class Mem(_TypedDict):
    """What :func:`mem` returns (``neff mem --json``)."""

    file: str
    target: str
    compiler_version: Optional[str]
    runtime_overhead_source: str
    cores: List[MemCore]
    total: int


class DiffField(_TypedDict):
    """A header field that differs."""

    field: str
    a: Any
    b: Any


class DiffMember(_TypedDict):
    """A member only one side has: its name, size and XXH3-64 digest."""

    name: str
    size: int
    digest: str


class DiffMemberBody(_TypedDict):
    """One side of a changed member."""

    size: int
    digest: str


class DiffChangedMember(_TypedDict):
    """A member both sides have, with other bytes."""

    name: str
    a: DiffMemberBody
    b: DiffMemberBody


class DiffMembers(_TypedDict):
    """The members added, removed and changed, and how many are the same."""

    added: List[DiffMember]
    removed: List[DiffMember]
    changed: List[DiffChangedMember]
    same: int


class DiffValue(_TypedDict):
    """A consumed manifest value that differs (``None`` where one side lacks it)."""

    member: str
    key: str
    a: Any
    b: Any


class DiffTensorSide(_TypedDict):
    """One side of an input or output."""

    dtype: str
    shape: List[int]
    size: int


class DiffTensor(_TypedDict):
    """An input or output that differs (``None`` on the side that lacks it)."""

    kind: str
    name: str
    a: Optional[DiffTensorSide]
    b: Optional[DiffTensorSide]


class DiffPayloadSide(_TypedDict):
    """One side of a payload as the loader placed it."""

    digest: str
    len: int
    usage: str
    core: Optional[int]


class DiffPayload(_TypedDict):
    """A payload that differs (``None`` on the side that lacks it)."""

    member: str
    a: Optional[DiffPayloadSide]
    b: Optional[DiffPayloadSide]


class Diff(_TypedDict):
    """What :func:`diff` returns (``neff diff --json``)."""

    a: str
    b: str
    same: bool
    header: List[DiffField]
    members: DiffMembers
    manifests: List[DiffValue]
    io: List[DiffTensor]
    io_order_differs: bool
    payloads: List[DiffPayload]


def _native(src: Any) -> Any:
    """The input as the native module takes it: a path, bytes, or (file object, size)."""
    if isinstance(src, (str, os.PathLike)):
        return os.fsdecode(os.fspath(src))
    if isinstance(src, bytes):
        return src
    if isinstance(src, io.TextIOBase):
        raise TypeError("a NEFF is binary: open the file with 'rb'")
    # Anything with the buffer protocol (bytearray, memoryview, mmap, a NumPy uint8 array),
    # before the file-object test: an mmap has read/seek/tell, but its seek returns None
    # before Python 3.13.
    try:
        view = memoryview(src)
    except TypeError:
        view = None
    if view is not None:
        with view:
            return view.tobytes()
    if hasattr(src, "read") and hasattr(src, "seek") and hasattr(src, "tell"):
        start = src.tell()
        end = src.seek(0, os.SEEK_END)
        src.seek(start)
        return (src, end - start)
    raise TypeError(f"expected a path, bytes or a binary file object, not {type(src).__name__}")


def _text(value: Any, what: str) -> str:
    """`value` when it is a ``str``; a ``TypeError`` naming `what` otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}")
    return value


def _arch(value: Any) -> Optional[str]:
    if value is None:
        return None
    return _text(value, "arch")


def _rewind(src: Any) -> Optional[int]:
    """Where a file object stands, so a second pass can start there again."""
    if not isinstance(src, (str, os.PathLike, bytes, bytearray, memoryview)) and hasattr(src, "tell"):
        try:
            memoryview(src)
            return None
        except TypeError:
            return int(src.tell())
    return None


def _warn(found: List[NeffWarning]) -> None:
    """Hands each warning to ``warnings.warn``, pointing at the caller's line (the first frame
    outside this module)."""
    if not found:
        return
    level, frame = 1, sys._getframe(0)
    while frame is not None and frame.f_code.co_filename == __file__:
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    for w in found:
        _warnings.warn(w, stacklevel=level)


def _call(native: Any, *args: Any) -> Any:
    """Calls the native module; a refusal warns the warnings raised before it, then raises."""
    try:
        return native(*args)
    except NeffError as e:
        _warn(getattr(e, "warnings", []))
        raise


def _answer(result: Tuple[str, List[NeffWarning]]) -> Any:
    import json  # here, not at the top: `import neff` stays quick

    text, found = result
    _warn(found)
    return json.loads(text)


def info(path: Source, verify: bool = False) -> Info:
    """What ``neff info --json`` prints: header, KELF nodes, I/O tensors, subgraphs, hash.

    ``verify`` checks the header hash while the payload streams (a mismatch raises)."""
    return _answer(_call(_neff.info, _native(path), bool(verify)))  # type: ignore[no-any-return]


class Report(NamedTuple):
    """What ``neff check`` found: the NEFF is valid (else :class:`NeffError` was raised)."""

    file: str
    #: The KELF target (``cayman``, ``*``, ...).
    target: str
    #: The arch the NEFF was checked against (``check(arch=...)``), else ``None``.
    arch: Optional[str]
    subgraphs: int
    members: int
    manifests: int
    payloads: int
    payload_bytes: int
    tar_bytes: int
    #: How many warnings the check raised (each also went to ``warnings.warn``).
    warnings: int
    #: ``verify=True``: the outcome, as ``neff check --verify`` prints it.
    verify: Optional[str]
    #: Time of the pass in milliseconds.
    time_ms: float
    #: The whole ``neff check --json`` object (its ``warnings`` is the list of warning objects).
    json: Dict[str, Any]


def check(path: Source, arch: Optional[str] = None, allow_legacy: bool = False, verify: bool = False) -> Report:
    """Everything the loader validates, without a device (``neff check``).

    ``arch`` (any name in :data:`ARCH_NAMES`: a codename, version or instance family such as
    ``trn2``) also rejects a NEFF whose KELF target does not run on it; ``allow_legacy`` accepts what ``NEURON_RT_ALLOW_LEGACY_NEFF=1``
    accepts; ``verify`` checks the header hash."""
    doc = _answer(_call(_neff.check, _native(path), _arch(arch), bool(allow_legacy), bool(verify)))
    return Report(**{**doc, "warnings": len(doc["warnings"]), "json": doc})


class Payload(NamedTuple):
    """One payload the load placed: its member, usage class, core, size and XXH3-64 digest."""

    member: str
    usage: str
    core: Optional[int]
    size: int
    digest: str
    address: Optional[int]
    state: str


class LoadReport(NamedTuple):
    """What ``neff load --json`` prints; ``payloads`` as :class:`Payload` tuples."""

    device_arch: Optional[str]
    target: str
    bytes_placed: int
    payloads: List[Payload]
    warnings: int
    time_ms: float
    #: The whole ``neff load --json`` object.
    json: Dict[str, Any]


def load(
    path: Source,
    arch: Optional[str] = None,
    digest_only: bool = True,
    device_mem: Optional[int] = None,
    verify: bool = False,
) -> LoadReport:
    """Loads the NEFF into the simulated device (``neff load``).

    ``digest_only`` (the default) keeps allocation records and digests without storing the
    bytes; ``digest_only=False`` places them in ``device_mem`` bytes of host memory (64 MiB by
    default). ``arch`` (as :func:`check` takes it) pins the device's arch; without it, the
    NEFF's own target."""
    if device_mem is not None and (isinstance(device_mem, bool) or not isinstance(device_mem, int)):
        raise TypeError(f"device_mem must be int, not {type(device_mem).__name__}")
    doc = _answer(_call(_neff.load, _native(path), _arch(arch), bool(digest_only), device_mem, bool(verify)))
    payloads = [
        Payload(p["member"], p["usage"], p["core"], p["len"], p["digest"], p.get("address"), p["state"])
        for p in doc["payloads"]
    ]
    return LoadReport(
        device_arch=doc["device_arch"],
        target=doc["target"],
        bytes_placed=doc["bytes_placed"],
        payloads=payloads,
        warnings=doc["warnings"],
        time_ms=doc["time_ms"],
        json=doc,
    )


def mem(path: Source, profiling: bool = False) -> Mem:
    """Device memory per physical NeuronCore before loading (``neff mem --json``)."""
    return _answer(_call(_neff.mem, _native(path), bool(profiling)))  # type: ignore[no-any-return]


def diff(a: Source, b: Source) -> Diff:
    """What differs between two NEFFs (``neff diff --json``); ``["same"]`` says whether nothing.

    A refusal's :attr:`NeffError.filename` says which file was refused."""
    return _answer(_call(_neff.diff, _native(a), _native(b)))  # type: ignore[no-any-return]


class CacheNeff(TypedDict):
    """A cache entry's NEFF file."""

    #: Relative to the cache root.
    path: str
    size: int


class CacheFlags(TypedDict):
    """The compiler flags an entry was compiled with."""

    #: ``compile_flags.txt`` (libneuronxla of the 2.14 age) or ``compile_flags.json``.
    file: str
    flags: List[str]


class CacheLock(TypedDict):
    """A lock file, and whether a process holds it (a ``flock`` or an ``fcntl`` lock)."""

    #: Relative to the cache root.
    path: str
    #: ``False``: stale, nobody holds it.
    held: bool


#: An entry's state: ``ok`` and ``broken`` (its NEFF, checked whether or not a done marker
#: exists, is accepted or refused), ``failed`` (the ``ERROR`` marker, or a log and no NEFF),
#: ``uncompiled`` (HLO and flags only), ``incomplete`` (a refused NEFF without the done marker
#: its compiler writes), ``locked`` (a lock file is held).
CacheState = Literal["ok", "failed", "broken", "uncompiled", "incomplete", "locked"]


class CacheEntry(TypedDict):
    """One entry of ``neff cache --json``."""

    #: Its directory, relative to the cache root.
    path: str
    #: ``libneuronxla`` or ``vllm-neuron``.
    layout: str
    state: CacheState
    #: Why it is in its state, in one line: for ``failed``, the compiler's own line from its log
    #: (``[F137] neuronx-cc was forcibly killed ...``, ``BrokenPipeError: ...``); for ``broken``,
    #: the refusal; ``None`` when ``ok``.
    reason: Optional[str]
    #: The compiler's error code in ``reason`` (``F137``), when it has one.
    error_code: Optional[str]
    #: What says a failed compile failed: ``model.neff is ERROR``, ``model.log``.
    markers: List[str]
    compiler_version: Optional[str]
    #: The NEFF's KELF target (``ok`` entries).
    target: Optional[str]
    #: Bytes of its files.
    size: int
    #: ``neff mem``'s total over the NEFF's NeuronCores (``ok`` entries).
    device_memory: Optional[int]
    #: The refusal of its NEFF (``broken`` and ``incomplete`` entries).
    error: Optional[str]
    neff: Optional[CacheNeff]
    #: The size of ``model.hlo_module.pb``.
    hlo_size: Optional[int]
    flags: Optional[CacheFlags]
    #: Whether its done marker (``model.done``, ``.compilation_complete``) is there.
    done: bool
    locks: List[CacheLock]


class CacheTotals(TypedDict):
    """The counts of ``neff cache --json``."""

    entries: int
    ok: int
    failed: int
    broken: int
    uncompiled: int
    incomplete: int
    locked: int
    #: Lock files in the entries that nobody holds.
    stale_locks: int
    size: int
    device_memory: int


class Cache(TypedDict):
    """What ``neff cache --json`` prints."""

    root: str
    entries: List[CacheEntry]
    #: Lock files outside the entries (the root's ``lock``).
    locks: List[CacheLock]
    totals: CacheTotals


def cache(dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> Cache:
    """A Neuron compile cache's entries: state and why, NEFF, HLO, flags, locks, compiler, target,
    size, device memory (``neff cache --json``).

    Without ``dir``: ``$NEURON_COMPILE_CACHE_URL``, else ``/var/tmp/neuron-compile-cache``."""
    return _answer(_call(_neff.cache, None if dir is None else os.fsdecode(os.fspath(dir))))  # type: ignore[no-any-return]


class Member(NamedTuple):
    """One member of the archive, as ``neff ls --json`` lists it."""

    name: str
    size: int
    #: ``manifest``, ``payload``, ``named`` (reached by a key, not placed), or ``None``.
    role: Optional[str]
    digest: str
    usage: Optional[str]
    core: Optional[int]
    #: The ``(member, key)`` pairs that reached it.
    reached_by: Optional[List[Tuple[str, str]]]


def _members_of(rows: List[Dict[str, Any]]) -> List[Member]:
    out = []
    for r in rows:
        reached = r["reached_by"]
        out.append(
            Member(
                r["name"],
                r["size"],
                r["role"],
                r["digest"],
                r["usage"],
                r["core"],
                None if reached is None else [(x["member"], x["key"]) for x in reached],
            )
        )
    return out


def members(path: Source) -> List[Member]:
    """Every member in tar order with its size and role (``neff ls --json``), as a list."""
    return _members_of(_answer(_call(_neff.members, _native(path))))


def read(path: Source, member: str) -> bytes:
    """One member's bytes (``neff cat``); ``KeyError`` when the archive has no such member.

    Each call reads the NEFF from the start: to read several members, :func:`open` it."""
    data: bytes
    data, found = _call(_neff.read, _native(path), _text(member, "member"))
    _warn(found)
    return data


class RawWeight(NamedTuple):
    """A weight NumPy has no dtype for (without ml_dtypes, or an fp8 ``|V1`` whose variant the
    file does not say): ``(data, descr, shape, fortran_order)``: its array bytes, its ``.npy``
    ``descr``, shape and order."""

    data: bytes
    descr: str
    shape: Tuple[int, ...]
    fortran_order: bool

    def __repr__(self) -> str:
        # Not the bytes: a bf16 weight's repr would be megabytes.
        return (
            f"RawWeight(data=<{len(self.data)} bytes>, descr={self.descr!r}, shape={self.shape!r}, "
            f"fortran_order={self.fortran_order!r})"
        )


def _dtype(descr: str) -> Any:
    """The NumPy dtype of a ``.npy`` descr, or ``None`` for raw bytes."""
    import numpy as np

    if "V" not in descr:
        return np.dtype(descr)
    # ml_dtypes writes bfloat16 as `<V2`; a one-byte `|V1` is an fp8 type, but which one
    # (e4m3, e5m2, ...) the file does not say: those stay raw.
    if descr.endswith("V2"):
        try:
            import ml_dtypes
        except ImportError:
            return None
        return np.dtype(ml_dtypes.bfloat16)
    return None


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as e:
        raise ImportError("weights() returns NumPy arrays: pip install 'neff[numpy]'") from e
    return numpy


def _array(descr: str, shape: List[int], fortran: bool, data: bytes) -> Any:
    np = _numpy()
    dtype = _dtype(descr)
    if dtype is None:
        return RawWeight(data, descr, tuple(shape), fortran)
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def _weight_key(subgraph: str, name: str) -> str:
    """A weight's key: its subgraph's directory and its var name (var names repeat across
    subgraphs: ``sg00/identity_82_sg0000`` and ``sg01/identity_82_sg0000``)."""
    return f"{subgraph}/{name}" if subgraph else name


def _weights_stream(vars_of: Dict[str, List[str]], stream: Any) -> Iterator[Tuple[str, Any]]:
    for member, descr, shape, fortran, data in stream:
        value = _array(descr, shape, fortran, data)
        for key in vars_of[member]:
            yield key, value


def weights(path: Source) -> Iterator[Tuple[str, Any]]:
    """``(key, array)`` for every weight (a ``def.json`` var with a ``file_name``), in archive
    order, one member in memory at a time; ``dict(neff.weights(p))`` keeps them all.

    The key is the subgraph's directory and the var name (``sg00/identity_82_sg0000``): var
    names repeat across subgraphs. The NEFF's manifests are read when this is called (errors
    come here, not at the first ``next()``); the arrays then stream. Arrays are read-only NumPy
    arrays of the ``.npy``'s dtype and shape (``pip install 'neff[numpy]'``); bf16 (``<V2``) is
    ``ml_dtypes.bfloat16`` when ml_dtypes is installed, else a :class:`RawWeight`."""
    _numpy()
    start = _rewind(path)
    native = _native(path)
    pairs, found = _call(_neff.weight_vars, native)
    _warn(found)
    vars_of: Dict[str, List[str]] = {}
    for member, subgraph, name in pairs:
        vars_of.setdefault(member, []).append(_weight_key(subgraph, name))
    if start is not None:
        path.seek(start)  # type: ignore[union-attr]
        native = _native(path)
    return _weights_stream(vars_of, _neff.npy_members(native, list(vars_of)))


class Neff:
    """A NEFF opened once (:func:`open`): one pass gave :attr:`info`, :meth:`mem`,
    :attr:`members` and a member index, so :meth:`read` inflates from the nearest checkpoint
    before the member (a 32 KiB window every 4 MiB of tar stream, at most 256 of them, about
    11 MiB at most), not from the start of the file. A context manager."""

    def __init__(self, opened: Any, name: str) -> None:
        self._opened = opened
        self._name = name
        self._info: Optional[Info] = None
        self._members: Optional[List[Member]] = None
        self._closed = False

    def __enter__(self) -> "Neff":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Forgets the index; later calls raise ``ValueError``."""
        self._closed = True
        self._opened = None

    def _live(self) -> Any:
        if self._closed:
            raise ValueError("I/O operation on a closed NEFF")
        return self._opened

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self.members)} members"
        return f"<neff.Neff {self._name!r} ({state})>"

    @property
    def info(self) -> Info:
        """What :func:`info` returns, from the first pass."""
        import json

        if self._info is None:
            self._info = json.loads(self._live().info)
        return self._info

    @property
    def members(self) -> List[Member]:
        """What :func:`members` returns, from the first pass."""
        import json

        if self._members is None:
            self._members = _members_of(json.loads(self._live().members))
        return self._members

    def mem(self, profiling: bool = False) -> Mem:
        """What :func:`mem` returns, from the first pass."""
        import json

        return json.loads(self._live().mem(bool(profiling)))  # type: ignore[no-any-return]

    def read(self, member: str) -> bytes:
        """One member's bytes, inflated from the index's last checkpoint before it;
        ``KeyError`` when the archive has no such member."""
        data: bytes
        data, found = _call(self._live().read, _text(member, "member"))
        _warn(found)
        return data

    def weights(self) -> Iterator[Tuple[str, Any]]:
        """As :func:`weights` (same keys, same order of the vars), each member read through the
        index."""
        _numpy()
        opened = self._live()
        vars_of: Dict[str, List[str]] = {}
        for member, subgraph, name in opened.weight_vars:
            vars_of.setdefault(member, []).append(_weight_key(subgraph, name))

        def stream() -> Iterator[Tuple[str, Any]]:
            for member, keys in vars_of.items():
                _, descr, shape, fortran, data = _call(opened.npy, member)
                value = _array(descr, shape, fortran, data)
                for key in keys:
                    yield key, value

        return stream()


def open(path: Source) -> Neff:
    """Reads a NEFF once and keeps what every question about it needs (:class:`Neff`).

    A file object is read into memory (the index reads its bytes again); a path is opened
    again by each :meth:`Neff.read`."""
    native = _native(path)
    opened, found = _call(_neff.open, native)
    _warn(found)
    name = native if isinstance(native, str) else "<bytes>"
    return Neff(opened, name)
