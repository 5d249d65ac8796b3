"""Memory stays flat on big NEFFs: Python's allocations (tracemalloc) and the process's peak
resident set (RSS, in a fresh interpreter per run) do not grow with the NEFF."""

import json
import pathlib
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import neff
from conftest import FIXTURES, SCALE_NEFF_BIN, fixture, need, run_neff

MIB = 1 << 20
#: Weights added per subgraph, and the bytes of each (float16).
EXTRA_WEIGHTS = 12
WEIGHT_SHAPE = (1024, 1024)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """matmul_small with 2 x 12 extra 2 MiB weights: a 48 MiB NEFF of random (incompressible)
    float16 arrays, each its own `.npy` member named by a `def.json` var."""
    small = fixture(FIXTURES / "nkipy" / "matmul_small.neff")
    root = tmp_path_factory.mktemp("big")
    tree = root / "tree"
    run_neff("unpack", small, "-o", tree)
    rng = np.random.default_rng(7)
    for definition in sorted(tree.glob("sg*/def.json")):
        doc = json.loads(definition.read_text())
        next_id = max(v["var_id"] for v in doc["var"].values()) + 1
        for i in range(EXTRA_WEIGHTS):
            array = rng.standard_normal(WEIGHT_SHAPE).astype(np.float16)
            name = f"big_{i:02d}.npy"
            np.save(definition.parent / name, array)
            doc["var"][f"big_{i:02d}"] = {
                "alignment": 64,
                "file_name": name,
                "ops": [],
                "size": array.nbytes,
                "type": "file",
                "var_id": next_id + i,
            }
        definition.write_text(json.dumps(doc, indent=4))
    path = root / "big.neff"
    run_neff("pack", tree, "-o", path)
    return path


@pytest.fixture(scope="module")
def host_preset(tmp_path_factory):
    """The scale generator's `host` preset: 2,500 I/O tensors, 100,000 vars, 3,000 weights,
    16 subgraphs, 300-byte directory names."""
    binary = need(SCALE_NEFF_BIN, "the NEFF generator (cargo build -p neff-cli --example scale-neff)")
    path = tmp_path_factory.mktemp("host") / "host.neff"
    subprocess.run([str(binary), "host", str(path)], check=True, capture_output=True)
    return path


def peak_python_bytes(work):
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peak_rss_bytes(call, path):
    """Peak RSS of a fresh interpreter that imports neff and runs `call` on `path` once."""
    script = (
        "import resource, sys, neff\n"
        f"{call}\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, check=True, text=True)
    return int(done.stdout.split()[-1])


def test_python_memory_is_flat_on_the_big_neff(big, small):
    assert big.stat().st_size > 40 * MIB
    for work in (
        lambda: neff.check(big),
        lambda: neff.load(big),
        lambda: neff.load(big, digest_only=False, device_mem=128 * MIB),
        lambda: list(neff.members(big)),
    ):
        assert peak_python_bytes(work) < 1 * MIB
    # weights(): one array at a time, however many there are.
    largest = WEIGHT_SHAPE[0] * WEIGHT_SHAPE[1] * 2
    total = [0]

    def drain():
        for _, array in neff.weights(big):
            total[0] += array.nbytes

    peak = peak_python_bytes(drain)
    assert total[0] > 2 * EXTRA_WEIGHTS * largest
    # The array being made, the one the caller still holds, and their bytes on the way: a few
    # arrays' worth, never all 24.
    assert peak < 4 * largest + MIB, (peak, total[0])


@pytest.mark.parametrize(
    "call",
    [
        "neff.check(sys.argv[1])",
        "neff.load(sys.argv[1])",
        "sum(a.nbytes for _, a in neff.weights(sys.argv[1]))",
    ],
)
def test_rss_is_flat_on_the_big_neff(big, small, call):
    grown = peak_rss_bytes(call, big) - peak_rss_bytes(call, small)
    # The big NEFF's payloads are 48 MiB; a check or load streams them through fixed buffers,
    # and weights() holds one 2 MiB array (plus its bytes on the way) at a time.
    assert grown < 16 * MIB, grown


def test_rss_is_flat_on_the_host_preset(host_preset, small):
    neff.check(host_preset)  # the generated NEFF is valid
    grown = peak_rss_bytes("neff.check(sys.argv[1])", host_preset) - peak_rss_bytes("neff.check(sys.argv[1])", small)
    assert grown < 64 * MIB, grown
