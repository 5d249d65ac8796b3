"""`import neff` against the `neff` command on the real NEFFs and damaged copies of them."""

import io
import json
import pathlib
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import neff
from conftest import FIXTURES, fixture, neff_id, real_neffs, run_neff

# Stable codes (docs/error-codes.md): a number keeps its meaning for good.
SHORT_FILE = 501  # Header(ShortFile)
HEADER_SIZE_NOT_1024 = 502  # Header(HeaderSizeNot1024)
WRONG_TYPE = 902  # Manifest(WrongType)
ARCH_MISMATCH = 919  # Manifest(ArchMismatch)
TRAILING_BYTES_WARNING = 501  # warning Header(TrailingBytes)
INTEGRITY_MISMATCH = 503  # warning Header(IntegrityMismatch), a refusal under verify


def cli_json(*args, ok=(0,)):
    _, out, _ = run_neff(*args, ok=ok)
    return json.loads(out)


@pytest.mark.parametrize("path", real_neffs(), ids=neff_id)
def test_info_is_neff_info_json(path):
    path = fixture(path)
    got = neff.info(path)
    want = cli_json("info", path, "--json")
    assert got == want
    # Same keys in the same order, all the way down.
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize("path", real_neffs(), ids=neff_id)
def test_check_accepts_every_real_neff(path):
    path = fixture(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", neff.NeffWarning)
        report = neff.check(path)
    _, out, _ = run_neff("check", path)
    assert report.payloads > 0 and report.subgraphs > 0
    assert f"{report.subgraphs} subgraphs, {report.members} members: {report.manifests} manifests" in out.decode()
    assert f"{report.payloads} payloads ({report.payload_bytes} bytes), tar {report.tar_bytes} bytes" in out.decode()


def test_check_verify_and_arch(small):
    report = neff.check(small, arch="cayman", verify=True)
    assert report.arch == "cayman" and report.target == "cayman"
    assert report.verify is not None and report.verify.startswith("MD5 match")


def damaged(tmp_path, data, name):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def refusal(path, **kwargs):
    """`neff.check`'s NeffError on `path`, checked against `neff check`'s error line."""
    with pytest.raises(neff.NeffError) as caught:
        neff.check(path, **kwargs)
    e = caught.value
    flags = []
    if "arch" in kwargs:
        flags += ["--arch", kwargs["arch"]]
    if kwargs.get("verify"):
        flags.append("--verify")
    _, _, err = run_neff("check", path, *flags, ok=(1,))
    assert err.splitlines()[-1 - sum(1 for l in err.splitlines() if l.startswith("hint:"))] == f"error: {e.message}"
    assert str(e) == e.message
    return e


def test_error_short_file(tmp_path, small):
    path = damaged(tmp_path, small.read_bytes()[:500], "short.neff")
    e = refusal(path)
    assert (e.code, e.stage, e.status, e.status_code) == (SHORT_FILE, "header", "NRT_INVALID", 2)
    assert (e.member, e.key_path) == (None, None)
    assert (e.offset, e.offset_base) == (0, "file")
    assert "1f4" in e.reason


def test_error_header_size(tmp_path, small):
    data = bytearray(small.read_bytes())
    # header_size is the u64 at byte 8 (spec §2): 1024 becomes 1025.
    assert int.from_bytes(data[8:16], "little") == 1024
    data[8:16] = (1025).to_bytes(8, "little")
    e = refusal(damaged(tmp_path, bytes(data), "header-size.neff"))
    assert (e.code, e.stage, e.member, e.key_path) == (HEADER_SIZE_NOT_1024, "header", None, None)
    assert (e.offset, e.offset_base) == (8, "file")


def test_error_in_a_manifest(tmp_path, small):
    """A def.json value of the wrong type: member, key path and byte of the value."""
    tree = tmp_path / "tree"
    run_neff("unpack", small, "-o", tree)
    definition = tree / "sg00" / "def.json"
    text = definition.read_text()
    at = text.index('"size": 32768', text.index('"output0"'))
    definition.write_text(text[:at] + '"size": "x"' + text[at + len('"size": 32768') :])
    path = tmp_path / "size-as-string.neff"
    run_neff("pack", tree, "-o", path)
    e = refusal(path)
    assert (e.code, e.stage, e.status) == (WRONG_TYPE, "def.json", "NRT_INVALID")
    assert (e.member, e.key_path) == ("sg00/def.json", "var.output0.size")
    assert (e.offset, e.offset_base) == (at + len('"size": '), "member")
    assert e.reason == "expected an unsigned integer, found string"


def test_error_arch_mismatch(small):
    e = refusal(small, arch="sunda")
    assert (e.code, e.stage, e.status, e.member, e.key_path) == (ARCH_MISMATCH, "kelf", "NRT_INVALID", "kelf-0.json", "target")
    assert e.offset is None and e.offset_base is None
    # Legacy mode accepts an older arch only: a v3 NEFF on v2 stays refused.
    with pytest.raises(neff.NeffError):
        neff.check(small, arch="sunda", allow_legacy=True)


def test_error_verify_mismatch(tmp_path, small):
    data = bytearray(small.read_bytes())
    stored = bytes.fromhex(cli_json("info", small, "--json")["hash"]["stored"])
    at = data.index(stored)
    data[at] ^= 0xFF
    path = damaged(tmp_path, bytes(data), "hash.neff")
    e = refusal(path, verify=True)
    assert (e.code, e.stage, e.status, e.member, e.key_path) == (INTEGRITY_MISMATCH, "header", "NRT_INVALID", None, None)
    assert (e.offset, e.offset_base) == (at, "file")
    assert e.reason.startswith("MD5 mismatch!")
    neff.check(path)  # without verify, the hash is not computed


def test_warning_goes_to_warnings_warn(tmp_path, small):
    path = damaged(tmp_path, small.read_bytes() + b"xxxx", "trailing.neff")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        report = neff.check(path)
    found = [w for w in seen if issubclass(w.category, neff.NeffWarning)]
    assert len(found) == 1 and report.warnings == 1
    w = found[0].message
    assert isinstance(w, neff.NeffWarning) and isinstance(w, UserWarning)
    _, _, err = run_neff("check", path)
    assert f"warning: {w.message}" in err.splitlines()
    assert (w.code, w.stage, w.member, w.key_path) == (TRAILING_BYTES_WARNING, "header", None, None)
    # This file's line, not the package's: the warning points at the caller.
    assert found[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", neff.NeffWarning)
        with pytest.raises(neff.NeffWarning):
            neff.check(path)
    # The walk of read() warns the same way.
    with pytest.warns(neff.NeffWarning) as seen:
        assert neff.read(path, "neff.json") == neff.read(small, "neff.json")
    assert [w.message.code for w in seen] == [TRAILING_BYTES_WARNING]


def test_warnings_before_a_refusal_are_warned(tmp_path, small):
    path = damaged(tmp_path, small.read_bytes() + b"xxxx", "trailing.neff")
    with pytest.warns(neff.NeffWarning) as seen:
        with pytest.raises(neff.NeffError) as caught:
            neff.check(path, arch="sunda")
    assert caught.value.code == ARCH_MISMATCH
    assert [w.message.code for w in seen] == [TRAILING_BYTES_WARNING]
    assert [w.code for w in caught.value.warnings] == [TRAILING_BYTES_WARNING]
    assert seen[0].filename == __file__


def test_paths_that_cannot_be_read(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        neff.check(tmp_path / "missing.neff")
    assert caught.value.filename == str(tmp_path / "missing.neff")
    with pytest.raises(OSError):
        neff.info(tmp_path)
    with pytest.raises(ValueError):
        neff.check(tmp_path / "missing.neff", arch="v9")


@pytest.mark.parametrize("path", real_neffs(), ids=neff_id)
def test_load_is_neff_load_json(path):
    path = fixture(path)
    report = neff.load(path)
    want = cli_json("load", path, "--digest-only", "--json")
    got = dict(report.json)
    for doc in (got, want):
        doc.pop("time_ms")
    assert got == want
    assert [(p.member, p.usage, p.core, p.size, p.digest) for p in report.payloads] == [
        (p["member"], p["usage"], p["core"], p["len"], p["digest"]) for p in want["payloads"]
    ]
    assert report.bytes_placed == want["bytes_placed"] > 0


def test_load_into_memory(small):
    report = neff.load(small, digest_only=False, arch="v3")
    assert report.json["device"]["mode"] == "memory" and report.device_arch == "cayman"
    assert all(p.address is not None and p.state == "placed" for p in report.payloads)


@pytest.mark.parametrize("path", real_neffs(), ids=neff_id)
def test_members_and_read_are_ls_and_cat(path):
    path = fixture(path)
    rows = list(neff.members(path))
    want = cli_json("ls", path, "--json")["members"]
    assert [m._asdict() for m in rows] == [
        {**r, "reached_by": None if r["reached_by"] is None else [(x["member"], x["key"]) for x in r["reached_by"]]}
        for r in want
    ]
    assert {m.role for m in rows} >= {"manifest", "payload"}
    for m in rows[:3] + rows[-3:]:
        _, out, _ = run_neff("cat", path, m.name)
        data = neff.read(path, m.name)
        assert data == out and len(data) == m.size


def test_read_a_missing_member(small):
    with pytest.raises(KeyError):
        neff.read(small, "no/such/member.json")


def npy_members(path, tmp_path):
    tree = tmp_path / "tree"
    run_neff("unpack", path, "-o", tree)
    return tree


@pytest.mark.parametrize("path", real_neffs(), ids=neff_id)
def test_weights_are_numpy_load_of_the_npy_members(path, tmp_path):
    path = fixture(path)
    import ml_dtypes

    tree = npy_members(path, tmp_path)
    doc = neff.info(path)
    expected = []
    for sg in doc["subgraphs"]:
        folder = pathlib.PurePosixPath(sg["definition"]).parent
        for v in sg["vars"]:
            if v.get("file_name"):
                # Keyed by subgraph directory and var name: var names repeat across subgraphs.
                key = f"{folder}/{v['name']}" if str(folder) != "." else v["name"]
                expected.append((key, np.load(tree / folder / v["file_name"])))
    got = list(neff.weights(path))
    assert len(got) == len(expected) > 0
    assert sorted(n for n, _ in got) == sorted(n for n, _ in expected)
    by_name = {}
    for name, array in expected:
        by_name.setdefault(name, []).append(array)
    for name, array in got:
        want = by_name[name].pop(0)
        assert array.shape == want.shape
        if want.dtype.kind == "V":
            # ml_dtypes writes bfloat16 as `<V2`: the package gives it back as bfloat16.
            assert want.dtype.itemsize == 2 and array.dtype == ml_dtypes.bfloat16
            assert np.array_equal(array.view(np.uint16), want.view(np.uint16))
        else:
            assert array.dtype == want.dtype
            assert np.array_equal(array, want)


def test_weights_without_ml_dtypes_are_raw_bytes(bf16, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` now fails
    got = list(neff.weights(bf16))
    raw = [(n, w) for n, w in got if isinstance(w, neff.RawWeight)]
    # The bf16 ones are raw; the float32 ones are still NumPy arrays.
    arrays = [w for _, w in got if not isinstance(w, neff.RawWeight)]
    assert len(raw) == 2 and len(arrays) == 2 and all(w.dtype == np.float32 for w in arrays)
    tree = npy_members(bf16, tmp_path)
    name, w = raw[0]
    assert w.descr == "<V2" and not w.fortran_order
    on_disk = np.load(tree / "sg00" / "value_sg0000_identity_56_CRSM.npy")
    first = next(w for n, w in raw if n == "sg00/identity_56_sg0000")
    assert first.shape == on_disk.shape and first.data == on_disk.tobytes()


def test_weights_stop_early(large):
    stream = neff.weights(large)
    name, array = next(stream)
    assert array.size > 0
    stream.close()  # the walk thread ends: the channel's other side is gone


def test_mem_diff_are_the_verbs_json(small, large):
    assert neff.mem(str(small)) == cli_json("mem", small, "--json")
    assert neff.mem(large, profiling=True) == cli_json("mem", large, "--profiling", "--json")
    assert neff.diff(str(small), str(large)) == cli_json("diff", small, large, "--json", ok=(1,))
    assert neff.diff(small, small)["same"] is True


def test_cache_is_neff_cache_json(tmp_path, small):
    entry = tmp_path / "neuronxcc-2.21.33363.0" / "MODULE_1234+abcd"
    entry.mkdir(parents=True)
    (entry / "model.neff").write_bytes(small.read_bytes())
    (entry / "model.done").write_bytes(b"")
    broken = tmp_path / "neuronxcc-2.21.33363.0" / "MODULE_5678+abcd"
    broken.mkdir()
    (broken / "model.neff").write_bytes(small.read_bytes()[:2000])
    (broken / "model.done").write_bytes(b"")
    got = neff.cache(tmp_path)
    assert got == cli_json("cache", tmp_path, "--json")
    assert sorted(e["state"] for e in got["entries"]) == ["broken", "ok"]


def test_bytes_and_file_objects(small):
    by_path = neff.info(small)
    data = small.read_bytes()
    assert neff.info(data) == by_path
    assert neff.info(bytearray(data)) == by_path
    assert neff.info(memoryview(data)) == by_path
    with open(small, "rb") as f:
        assert neff.info(f) == by_path
    # From the file object's current position.
    f = io.BytesIO(b"garbage!" + data)
    f.seek(8)
    assert neff.info(f) == by_path
    f.seek(8)
    assert [n for n, _ in neff.weights(f)] == [n for n, _ in neff.weights(small)]
    assert neff.load(data).json["payloads"] == neff.load(small).json["payloads"]
    assert neff.read(io.BytesIO(data), "neff.json") == neff.read(small, "neff.json")
    with pytest.raises(neff.NeffError) as caught:
        neff.check(data[:500])
    assert caught.value.code == SHORT_FILE
    with pytest.raises(TypeError):
        neff.check(io.StringIO("text"))


def test_the_gil_is_released(large):
    """Another Python thread runs while the core checks a NEFF."""
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    worker = threading.Thread(target=count)
    worker.start()
    try:
        time.sleep(0.05)
        samples = []
        for _ in range(3):
            before = counter[0]
            started = time.perf_counter()
            neff.check(large)
            samples.append((counter[0] - before, time.perf_counter() - started))
    finally:
        stop.set()
        worker.join()
    # Holding the GIL, the counter could move only at the call's edges (a few switches).
    assert max(n for n, _ in samples) > 1000, samples
