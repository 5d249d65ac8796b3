"""Shared set-up of the package's tests: where the real NEFFs and the `neff` command are.

The real NEFFs live in ../shared/fixtures (never copied into the repository). Absent, a test
that needs them is skipped with a note, except under CI=true, where that is a failure. The
`neff` command the tests compare against is $NEFF_BIN (default: target/debug/neff), the
generator of big NEFFs $SCALE_NEFF_BIN (default: target/debug/examples/scale-neff).
"""

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures" / "public"
NEFF_BIN = pathlib.Path(os.environ.get("NEFF_BIN", REPO / "target" / "debug" / "neff")).resolve()
SCALE_NEFF_BIN = pathlib.Path(
    os.environ.get("SCALE_NEFF_BIN", REPO / "target" / "debug" / "examples" / "scale-neff")
).resolve()


def need(path: pathlib.Path, what: str) -> pathlib.Path:
    """`path`, or a skip with a note (a failure under CI=true) when it is absent."""
    if path.exists():
        return path
    message = f"{what} is absent ({path})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"error: {message}: required under CI=true")
    print(f"note: skipped: {message}", file=sys.stderr)
    pytest.skip(message)


def real_neffs():
    """Every real NEFF under the fixtures, or one `None` (the test then skips or fails)."""
    found = sorted(FIXTURES.rglob("*.neff")) if FIXTURES.is_dir() else []
    return found or [None]


def neff_id(path):
    return "absent" if path is None else str(path.relative_to(FIXTURES))


def fixture(path):
    """A real NEFF a test was given (skip or fail when the fixtures are absent)."""
    if path is None:
        need(FIXTURES, "../shared/fixtures (the real NEFFs)")
    return need(path, "a real NEFF")


def run_neff(*args, ok=(0,)):
    """Runs the `neff` command; returns (exit status, stdout, stderr)."""
    binary = need(NEFF_BIN, "the neff command (cargo build -p neff-cli)")
    done = subprocess.run([str(binary), *map(str, args)], capture_output=True)
    assert done.returncode in ok, done.stderr.decode(errors="replace")
    return done.returncode, done.stdout, done.stderr.decode(errors="replace")


@pytest.fixture
def small():
    return fixture(FIXTURES / "nkipy" / "matmul_small.neff")


@pytest.fixture
def large():
    return fixture(FIXTURES / "nkipy" / "matmul_large.neff")


@pytest.fixture
def bf16():
    return fixture(FIXTURES / "trainium-kernel-fusion" / "baseline_bf16_s512" / "baseline.neff")


@pytest.fixture(scope="session")
def big_generated(tmp_path_factory):
    """The scale generator's `weights` preset with 12,000 weights: a tar stream of about 13 MiB,
    which spans several index checkpoints."""
    binary = need(SCALE_NEFF_BIN, "the NEFF generator (cargo build -p neff-cli --example scale-neff)")
    path = tmp_path_factory.mktemp("weights") / "weights.neff"
    subprocess.run([str(binary), "weights", str(path), "weights=12000"], check=True, capture_output=True)
    return path
