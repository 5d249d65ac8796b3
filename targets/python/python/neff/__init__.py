"""Read, check and load AWS Neuron NEFF files: the ``neff`` loader as a Python package.

Every function runs the same Rust code as the matching verb of the ``neff`` command, with the
GIL released, and returns what that verb's ``--json`` prints (same keys, same order, same
values). A NEFF the loader refuses raises :class:`NeffError`; what it notices without refusing
goes to :func:`warnings.warn` as a :class:`NeffWarning`.

Inputs: a path (``str`` or ``os.PathLike``), the bytes of a NEFF (``bytes``, ``bytearray``,
``memoryview``) or a binary file object open for reading (read from its current position; it
must be seekable, so its size is known). Files stream through a fixed buffer: memory stays
flat whatever the size of the NEFF.
"""

from __future__ import annotations

import io
import os
import sys
import warnings as _warnings
from typing import IO, Any, Dict, Iterator, List, Literal, NamedTuple, Optional, Tuple, TypedDict, Union

from . import _neff
from ._neff import NeffError, NeffWarning

__all__ = [
    "NeffError",
    "NeffWarning",
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
]

__version__ = "0.1.0"

#: What every function accepts as a NEFF.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]


def _native(src: Any) -> Any:
    """The input as the native module takes it: a path, bytes, or (file object, size)."""
    if isinstance(src, (str, os.PathLike)):
        return os.fsdecode(os.fspath(src))
    if isinstance(src, bytes):
        return src
    if isinstance(src, (bytearray, memoryview)):
        return bytes(src)
    if isinstance(src, io.TextIOBase):
        raise TypeError("a NEFF is binary: open the file with 'rb'")
    if hasattr(src, "read") and hasattr(src, "seek") and hasattr(src, "tell"):
        start = src.tell()
        end = src.seek(0, os.SEEK_END)
        src.seek(start)
        return (src, end - start)
    raise TypeError(f"expected a path, bytes or a binary file object, not {type(src).__name__}")


def _rewind(src: Any) -> Optional[int]:
    """Where a file object stands, so a second pass can start there again."""
    if not isinstance(src, (str, os.PathLike, bytes, bytearray, memoryview)) and hasattr(src, "tell"):
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


def info(path: Source, verify: bool = False) -> Dict[str, Any]:
    """What ``neff info --json`` prints: header, KELF nodes, I/O tensors, subgraphs, hash.

    ``verify`` checks the header hash while the payload streams (a mismatch raises)."""
    return _answer(_call(_neff.info, _native(path), verify))  # type: ignore[no-any-return]


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


def check(path: Source, arch: Optional[str] = None, allow_legacy: bool = False, verify: bool = False) -> Report:
    """Everything the loader validates, without a device (``neff check``).

    ``arch`` (``sunda``/``v2``, ``cayman``/``v3``, ``mariana``/``v4``) also rejects a NEFF whose
    KELF target does not run on it; ``allow_legacy`` accepts what
    ``NEURON_RT_ALLOW_LEGACY_NEFF=1`` accepts; ``verify`` checks the header hash."""
    doc = _answer(_call(_neff.check, _native(path), arch, allow_legacy, verify))
    return Report(**doc)


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
    default). ``arch`` pins the device's arch; without it, the NEFF's own target."""
    doc = _answer(_call(_neff.load, _native(path), arch, digest_only, device_mem, verify))
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


def mem(path: Source, profiling: bool = False) -> Dict[str, Any]:
    """Device memory per physical NeuronCore before loading (``neff mem --json``)."""
    return _answer(_call(_neff.mem, _native(path), profiling))  # type: ignore[no-any-return]


def diff(a: Source, b: Source) -> Dict[str, Any]:
    """What differs between two NEFFs (``neff diff --json``); ``["same"]`` says whether nothing."""
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


def members(path: Source) -> Iterator[Member]:
    """Every member in tar order with its size and role (``neff ls --json``).

    A role is known once the chain is read, so the one pass over the NEFF runs first (memory
    flat: the member list, not the members); the rows then come one at a time."""
    rows = _answer(_call(_neff.members, _native(path)))
    for r in rows:
        reached = r["reached_by"]
        yield Member(
            r["name"],
            r["size"],
            r["role"],
            r["digest"],
            r["usage"],
            r["core"],
            None if reached is None else [(x["member"], x["key"]) for x in reached],
        )


def read(path: Source, member: str) -> bytes:
    """One member's bytes (``neff cat``); ``KeyError`` when the archive has no such member."""
    data: bytes
    data, found = _call(_neff.read, _native(path), member)
    _warn(found)
    return data


class RawWeight(NamedTuple):
    """A weight NumPy has no dtype for (without ml_dtypes, or an fp8 ``|V1`` whose variant the
    file does not say): its array bytes, its ``.npy`` ``descr``, shape and order."""

    data: bytes
    descr: str
    shape: Tuple[int, ...]
    fortran_order: bool


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


def weights(path: Source) -> Iterator[Tuple[str, Any]]:
    """Yields ``(var name, array)`` for every weight (a ``def.json`` var with a ``file_name``),
    in archive order, one member in memory at a time.

    Arrays are read-only NumPy arrays of the ``.npy``'s dtype and shape; bf16 (``<V2``) is
    ``ml_dtypes.bfloat16`` when ml_dtypes is installed, else a :class:`RawWeight`."""
    start = _rewind(path)
    pairs, found = _call(_neff.weight_vars, _native(path))
    _warn(found)
    vars_of: Dict[str, List[str]] = {}
    for member, name in pairs:
        vars_of.setdefault(member, []).append(name)
    if start is not None:
        path.seek(start)  # type: ignore[union-attr]
    import numpy as np

    for member, descr, shape, fortran, data in _neff.npy_members(_native(path), list(vars_of)):
        dtype = _dtype(descr)
        value: Any
        if dtype is None:
            value = RawWeight(data, descr, tuple(shape), fortran)
        else:
            value = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        for name in vars_of[member]:
            yield name, value
