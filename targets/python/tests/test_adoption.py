"""What an ML engineer meets first: errors that behave like Python's (OSError, pickling through
process pools, hints, which file), a NEFF opened once, inputs of every buffer kind, arch by
instance family, a clean namespace, short reprs and eager errors."""

import concurrent.futures
import errno
import mmap
import multiprocessing
import pickle
import sys
import typing

import numpy as np
import pytest

import neff
from conftest import need, real_neffs, run_neff, FIXTURES


def _is_typeddict(kind):
    """`typing.is_typeddict`, which Python 3.9 lacks (the wheel's floor: its tests run there too)."""
    check = getattr(typing, "is_typeddict", None)
    if check is not None:
        return check(kind)
    return isinstance(kind, type) and issubclass(kind, dict) and hasattr(kind, "__total__")


NEFF_ERROR_FIELDS = (
    "message", "code", "status", "status_code", "stage", "member", "key_path", "offset",
    "offset_base", "reason", "hints", "filename",
)


def test_a_missing_file_is_an_oserror_like_opens(tmp_path):
    missing = tmp_path / "x.neff"
    with pytest.raises(FileNotFoundError) as caught:
        neff.info(missing)
    with pytest.raises(FileNotFoundError) as like_open:
        open(missing, "rb")
    e, want = caught.value, like_open.value
    assert (e.errno, e.strerror, e.filename) == (errno.ENOENT, want.strerror, str(missing))
    assert e.errno is not None and e.strerror is not None
    for call in (neff.check, neff.members, neff.mem, neff.open, neff.weights):
        with pytest.raises(FileNotFoundError):
            call(missing)  # at the call, not at a first next()


def short(tmp_path, small):
    path = tmp_path / "short.neff"
    path.write_bytes(small.read_bytes()[:500])
    return path


def refused(path):
    with pytest.raises(neff.NeffError) as caught:
        neff.check(path)
    return caught.value


def test_neff_error_lives_in_neff_and_carries_hints_and_filename(tmp_path, small):
    path = short(tmp_path, small)
    e = refused(path)
    assert type(e).__module__ == "neff" and neff.NeffError.__module__ == "neff"
    assert e.filename == str(path)
    _, _, err = run_neff("check", path, ok=(1,))
    hints = [l[len("hint: "):] for l in err.splitlines() if l.startswith("hint: ")]
    assert e.hints == hints and "the file is truncated, or not a NEFF" in e.hints


def test_diff_says_which_file(tmp_path, small):
    bad = short(tmp_path, small)
    with pytest.raises(neff.NeffError) as caught:
        neff.diff(small, bad)
    assert caught.value.filename == str(bad)
    with pytest.raises(neff.NeffError) as caught:
        neff.diff(bad, small)
    assert caught.value.filename == str(bad)


def fields(e):
    return {k: getattr(e, k) for k in NEFF_ERROR_FIELDS}


def test_neff_error_pickles_with_every_field(tmp_path, small):
    e = refused(short(tmp_path, small))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is neff.NeffError and str(back) == str(e)
    assert fields(back) == fields(e)
    assert fields(e)["code"] is not None and fields(e)["offset"] is not None


def check_in_worker(path):
    return neff.check(path)


def test_neff_error_round_trips_through_process_pools(tmp_path, small):
    path = str(short(tmp_path, small))
    want = fields(refused(path))
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        with pytest.raises(neff.NeffError) as caught:
            pool.submit(check_in_worker, path).result()
    assert fields(caught.value) == want
    with context.Pool(1) as pool:
        with pytest.raises(neff.NeffError) as caught:
            pool.map(check_in_worker, [path])
    assert fields(caught.value) == want


def test_no_binding_wording_reaches_the_user(small):
    with pytest.raises(TypeError) as caught:
        neff.read(small, None)
    assert str(caught.value) == "member must be str, not NoneType"
    for e in (caught.value,):
        assert "PyString" not in str(e) and "pyo3" not in str(e).lower()
    with pytest.raises(TypeError, match="arch must be str"):
        neff.check(small, arch=3)
    with pytest.raises(TypeError, match="expected a path"):
        neff.info(None)


def test_arch_takes_instance_families(small):
    assert neff.check(small, arch="trn2").arch == "cayman"
    for family in ("trn1", "inf2"):
        with pytest.raises(neff.NeffError):
            neff.check(small, arch=family)  # a Trn2 NEFF on a sunda device
    with pytest.raises(ValueError, match="trn2"):
        neff.check(small, arch="trn9")
    # The command takes the same names.
    run_neff("check", small, "--arch", "trn2")
    run_neff("check", small, "--arch", "inf2", ok=(1,))


def test_arch_names_are_the_loaders_table(small):
    # One list per arch, every name of a list meaning that arch; the small NEFF's KELF targets
    # cayman, so exactly the cayman list checks clean.
    names = [name for group in neff.ARCH_NAMES for name in group]
    assert len(names) == len(set(names)) and {"sunda", "cayman", "trn2", "v3", "inf2"} <= set(names)
    canonical = {group[0]: group for group in neff.ARCH_NAMES}
    assert canonical["cayman"] == ["cayman", "v3", "trn2"]
    for group in neff.ARCH_NAMES:
        for name in group:
            if group is canonical["cayman"]:
                assert neff.check(small, arch=name).arch == "cayman"
            else:
                with pytest.raises(neff.NeffError):
                    neff.check(small, arch=name)
    # The refusal of an unknown name lists the same table.
    with pytest.raises(ValueError) as caught:
        neff.check(small, arch="trn9")
    for group in neff.ARCH_NAMES:
        assert "|".join(group) in str(caught.value)


def test_buffers_of_every_kind(small):
    want = neff.info(small)
    data = small.read_bytes()
    with open(small, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert neff.info(mapped) == want
    assert neff.info(np.frombuffer(data, dtype=np.uint8)) == want
    assert neff.check(np.frombuffer(data, dtype=np.uint8)).members > 0


def test_the_namespace_is_clean():
    names = dir(neff)
    for private in ("Any", "Dict", "os", "sys", "io", "Optional", "Union"):
        assert private not in names
    assert "open" in names and "NeffError" in names and "Neff" in names


def test_lists_and_unique_weight_keys(small):
    rows = neff.members(small)
    assert isinstance(rows, list) and len(rows) == len(neff.members(small)) > 0
    pairs = list(neff.weights(small))
    keys = [k for k, _ in pairs]
    assert len(set(keys)) == len(keys) == len(dict(pairs))
    # Both subgraphs have a var of this name: neither is lost.
    assert {"sg00/identity_82_sg0000", "sg01/identity_82_sg0000"} <= set(keys)


def test_raw_weight_repr_is_short(bf16, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    raw = [w for _, w in neff.weights(bf16) if isinstance(w, neff.RawWeight)]
    assert raw and len(raw[0].data) > 10_000
    text = repr(raw[0])
    assert len(text) < 200 and f"<{len(raw[0].data)} bytes>" in text and "<V2" in text


def test_open_once_answers_as_the_functions_do(small):
    with neff.open(small) as opened:
        assert opened.info == neff.info(small)
        assert opened.mem() == neff.mem(small)
        assert opened.mem(profiling=True) == neff.mem(small, profiling=True)
        assert opened.members == neff.members(small)
        for m in opened.members:
            assert opened.read(m.name) == neff.read(small, m.name)
        got = [(k, a) for k, a in opened.weights()]
        want = list(neff.weights(small))
        assert [k for k, _ in got] == [k for k, _ in want]
        for (_, a), (_, b) in zip(got, want):
            assert np.array_equal(a, b) and a.dtype == b.dtype
        with pytest.raises(KeyError):
            opened.read("no/such/member")
        with pytest.raises(TypeError):
            opened.read(None)
    with pytest.raises(ValueError):
        opened.read("neff.json")


def test_open_bytes_and_file_objects(small):
    data = small.read_bytes()
    by_bytes = neff.open(data)
    assert by_bytes.info == neff.info(small)
    assert by_bytes.read("neff.json") == neff.read(small, "neff.json")
    with open(small, "rb") as f:
        assert neff.open(f).read("kelf-0.json") == neff.read(small, "kelf-0.json")


def test_open_reads_members_of_a_big_neff_from_checkpoints(big_generated):
    opened = neff.open(big_generated)
    checkpoints, spacing = opened._opened.index_size()
    assert checkpoints > 1 and spacing == neff._neff.INDEX_SPACING
    assert checkpoints <= neff._neff.INDEX_MAX_CHECKPOINTS
    rows = opened.members
    for m in rows[-3:] + rows[:2] + rows[len(rows) // 2 : len(rows) // 2 + 2]:
        assert opened.read(m.name) == neff.read(big_generated, m.name)


def test_typed_dicts_catch_a_misspelt_key(tmp_path):
    """`neff.mem(p)["totl"]` fails mypy (the stubs give TypedDicts, not Dict[str, Any])."""
    mypy = pytest.importorskip("mypy.api")
    good = tmp_path / "good.py"
    good.write_text('import neff\nprint(neff.mem("m.neff")["total"] + 1, neff.info("m.neff")["header"])\n')
    bad = tmp_path / "bad.py"
    bad.write_text('import neff\nprint(neff.mem("m.neff")["totl"], neff.diff("a", "b")["sme"])\n')
    out, _, status = mypy.run(["--strict", "--cache-dir=/dev/null", str(good)])
    assert status == 0, out
    out, _, status = mypy.run(["--strict", "--cache-dir=/dev/null", str(bad)])
    assert status == 1 and '"totl"' in out and '"sme"' in out, out


def test_a_failed_compiles_marker_says_so_in_the_error(tmp_path):
    # libneuronxla writes the 5 bytes `ERROR` as model.neff when a compile fails.
    marker = tmp_path / "model.neff"
    marker.write_bytes(b"ERROR")
    for call in (neff.check, neff.info, neff.mem, neff.members):
        with pytest.raises(neff.NeffError) as caught:
            call(marker)
        e = caught.value
        assert e.filename == str(marker)
        assert any("marker for a failed compile" in h for h in e.hints), (call, e.hints)
    # The same hint as the command's.
    status, _, stderr = run_neff("check", str(marker), ok=(1, 2))
    assert "marker for a failed compile" in stderr


def _keys_match(doc, typed, where):
    """Every key of `doc` is one `typed` names, and every one it names is there; nested
    TypedDicts (and lists and Optionals of them) are followed."""
    hints = typing.get_type_hints(typed)
    assert set(doc) == set(hints), (where, sorted(doc), sorted(hints))
    for key, hint in hints.items():
        value, kinds = doc[key], [hint]
        if typing.get_origin(hint) is typing.Union:
            kinds = [k for k in typing.get_args(hint) if k is not type(None)]
        for kind in kinds:
            if typing.get_origin(kind) is list and _is_typeddict(typing.get_args(kind)[0]):
                for i, item in enumerate(value or []):
                    _keys_match(item, typing.get_args(kind)[0], f"{where}.{key}[{i}]")
            elif _is_typeddict(kind) and value is not None:
                _keys_match(value, kind, f"{where}.{key}")


def test_nested_typed_dicts_name_every_key_of_the_real_documents():
    need(FIXTURES, "../shared/fixtures/public")
    paths = real_neffs()
    for path in paths:
        _keys_match(neff.info(path), neff.Info, f"info({path.name})")
        _keys_match(neff.mem(path), neff.Mem, f"mem({path.name})")
    # A pair that differs in every view: header, members, values, I/O and payloads.
    a, b = paths[0], paths[-1]
    d = neff.diff(a, b)
    assert not d["same"] and d["header"] and d["members"]["added"] + d["members"]["removed"]
    _keys_match(d, neff.Diff, "diff")


def test_typed_dicts_catch_a_misspelt_nested_key(tmp_path):
    mypy = pytest.importorskip("mypy.api")
    good = tmp_path / "good.py"
    good.write_text(
        "import neff\n"
        'i = neff.info("m.neff")\n'
        'print(i["subgraphs"][0]["vars"][0]["var_id"] + 1, i["header"]["lnc_size"] + 1)\n'
        'print(neff.mem("m.neff")["cores"][0]["usage"]["Weights"] + 1)\n'
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import neff\n"
        'i = neff.info("m.neff")\n'
        'print(i["subgraphs"][0]["vras"], i["header"]["lnc"], neff.mem("m.neff")["cores"][0]["totl"])\n'
    )
    out, _, status = mypy.run(["--strict", "--cache-dir=/dev/null", str(good)])
    assert status == 0, out
    out, _, status = mypy.run(["--strict", "--cache-dir=/dev/null", str(bad)])
    assert status == 1 and '"vras"' in out and '"lnc"' in out and '"totl"' in out, out
