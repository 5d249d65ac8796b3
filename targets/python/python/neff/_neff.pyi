"""Type stubs of the native module (the public API is ``neff``'s; these return JSON text)."""

from typing import IO, Iterator, List, Optional, Tuple, Union

_Native = Union[str, bytes, Tuple[IO[bytes], int]]

class NeffError(Exception):
    """The loader refused the NEFF."""

    #: The whole line, as ``neff`` prints it after ``error:``.
    message: str
    #: The stable code of docs/error-codes.md (``ErrorKind::code``), ``None`` for a refusal of
    #: the host side (a member the walk could not parse, ...).
    code: Optional[int]
    #: The runtime status it maps to (``NRT_INVALID``, ...).
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
    #: The warnings raised before the refusal (``neff``'s functions also pass them to
    #: ``warnings.warn`` before raising).
    warnings: List["NeffWarning"]

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

class NpyStream(Iterator[Tuple[str, str, List[int], bool, bytes]]):
    def __iter__(self) -> "NpyStream": ...
    def __next__(self) -> Tuple[str, str, List[int], bool, bytes]: ...

def info(src: _Native, verify: bool = False) -> Tuple[str, List[NeffWarning]]: ...
def check(
    src: _Native, arch: Optional[str] = None, allow_legacy: bool = False, verify: bool = False
) -> Tuple[str, List[NeffWarning]]: ...
def load(
    src: _Native,
    arch: Optional[str] = None,
    digest_only: bool = True,
    device_mem: Optional[int] = None,
    verify: bool = False,
) -> Tuple[str, List[NeffWarning]]: ...
def mem(src: _Native, profiling: bool = False) -> Tuple[str, List[NeffWarning]]: ...
def diff(a: _Native, b: _Native) -> Tuple[str, List[NeffWarning]]: ...
def cache(dir: Optional[str] = None) -> Tuple[str, List[NeffWarning]]: ...
def members(src: _Native) -> Tuple[str, List[NeffWarning]]: ...
def read(src: _Native, member: str) -> Tuple[bytes, List[NeffWarning]]: ...
def weight_vars(src: _Native) -> Tuple[List[Tuple[str, str]], List[NeffWarning]]: ...
def npy_members(src: _Native, wanted: List[str]) -> NpyStream: ...
