"""`neff.cache()` against `neff cache --json`: the real 2.14 training cache of
../shared/fixtures/training-cache and generated caches of every layout and age (the
`scale-cache` example, $SCALE_CACHE_BIN, default target/debug/examples/scale-cache); the typed
result (`neff.Cache`) names every field the command prints; docs/python.md's recipe "is my model in
the cache?" finds the model on every layout."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import neff
from conftest import REPO, need, run_neff

TRAINING_CACHE = REPO.parent / "shared" / "fixtures" / "training-cache"
SCALE_CACHE_BIN = pathlib.Path(
    os.environ.get("SCALE_CACHE_BIN", REPO / "target" / "debug" / "examples" / "scale-cache")
).resolve()
V214 = "neuronxcc-2.14.227.0+2d4f85be"


def cli_json(*args):
    _, out, _ = run_neff(*args)
    return json.loads(out)


def generated(tmp_path, preset):
    """A cache written by the `scale-cache` example's `preset`."""
    binary = need(SCALE_CACHE_BIN, "the scale-cache example (cargo build -p neff-cli --examples)")
    root = tmp_path / preset
    subprocess.run([str(binary), str(root), preset], check=True, capture_output=True)
    return root


def assert_typed(doc):
    """Every key of the result is one the TypedDicts name, and every one they name is there."""
    assert set(doc) == set(neff.Cache.__annotations__)
    assert set(doc["totals"]) == set(neff.CacheTotals.__annotations__)
    states = set(neff.CacheState.__args__)
    for entry in doc["entries"]:
        assert set(entry) == set(neff.CacheEntry.__annotations__), entry
        assert entry["state"] in states
        if entry["neff"] is not None:
            assert set(entry["neff"]) == set(neff.CacheNeff.__annotations__)
        if entry["flags"] is not None:
            assert set(entry["flags"]) == set(neff.CacheFlags.__annotations__)
        for lock in entry["locks"]:
            assert set(lock) == set(neff.CacheLock.__annotations__)


def test_the_real_214_cache_is_read_as_the_command_reads_it():
    root = need(TRAINING_CACHE, "../shared/fixtures/training-cache")
    got = neff.cache(root)
    assert got == cli_json("cache", root, "--json")
    assert_typed(got)
    by_state = {}
    for entry in got["entries"]:
        by_state.setdefault(entry["state"], []).append(entry)
    assert {s: len(e) for s, e in by_state.items()} == {"ok": 4, "failed": 1, "uncompiled": 2}
    failed = by_state["failed"][0]
    assert failed["reason"] == "BrokenPipeError: [Errno 32] Broken pipe"
    assert failed["markers"] == ["model.neff is ERROR", "model.log"]
    for ok in by_state["ok"]:
        assert ok["done"] is False and ok["target"] == "sunda" and ok["neff"]["size"] > 0
        assert ok["flags"] == {"file": "compile_flags.txt", "flags": ["--model-type=cnn-training"]}
    stale = [lock for e in got["entries"] for lock in e["locks"]]
    assert [lock["held"] for lock in stale] == [False]
    assert got["locks"] == [{"path": "lock", "held": False}]
    assert got["totals"]["stale_locks"] == 1


def test_a_generated_cache_of_every_layout_and_age(tmp_path):
    root = generated(tmp_path, "mixed")
    got = neff.cache(root)
    assert got == cli_json("cache", root, "--json")
    assert_typed(got)
    counts = {s: got["totals"][s] for s in ("ok", "failed", "broken", "uncompiled", "incomplete", "locked")}
    assert counts == {"ok": 8, "failed": 3, "broken": 2, "uncompiled": 4, "incomplete": 1, "locked": 0}
    reasons = sorted(e["reason"] for e in got["entries"] if e["state"] == "failed")
    assert reasons[0] == "BrokenPipeError: [Errno 32] Broken pipe"
    assert reasons[1] == "[F137] neuronx-cc was forcibly killed - This most commonly occurs due to insufficient system memory. Using a smaller data type, dimensions, batch size, or a larger instance type may help."
    assert reasons[2] == "[NCC_INLA001] Unhandled exception in checkDMATranspose"
    assert sorted(e["error_code"] for e in got["entries"] if e["error_code"]) == ["F137", "NCC_INLA001"]
    assert {e["layout"] for e in got["entries"]} == {"libneuronxla", "vllm-neuron"}


def docs_recipe():
    """The Python block of docs/python.md's "is it in my cache?" recipe."""
    text = (REPO / "docs" / "python.md").read_text()
    at = text.index("How much device memory does this cached model need, and is it in my cache?")
    match = re.search(r"```python\n(.*?)```", text[at:], re.S)
    assert match, "the recipe's code block"
    return match.group(1)


@pytest.mark.parametrize("preset", ["training-2.14-small", "mixed"])
def test_the_docs_recipe_finds_the_model_on_every_layout(tmp_path, preset):
    root = generated(tmp_path, preset)
    doc = cli_json("cache", root, "--json")
    ok = [e["path"] for e in doc["entries"] if e["state"] == "ok"]
    assert ok, "the generated cache holds good entries"
    # The model: the NEFF the good entries hold (each holds the same one).
    first = next(e for e in doc["entries"] if e["state"] == "ok")
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.neff").write_bytes((root / first["neff"]["path"]).read_bytes())
    env = dict(os.environ, NEURON_COMPILE_CACHE_URL=str(root))
    done = subprocess.run([sys.executable, "-c", docs_recipe()], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("in the cache: "), done.stdout
    assert last[len("in the cache: ") :].split(", ") == ok
    # Layouts of every age among them: no done marker (2.14), model.done, vllm-neuron.
    layouts = {(e["layout"], e["done"]) for e in doc["entries"] if e["state"] == "ok"}
    want = {("libneuronxla", False)} if preset == "training-2.14-small" else {
        ("libneuronxla", False),
        ("libneuronxla", True),
        ("vllm-neuron", True),
    }
    assert layouts == want
