"""The README's and docs' Python snippets run, so they cannot drift: each ```python block runs in
a fresh interpreter, in a folder where `model.neff` is matmul_small.neff and the compile cache
($NEURON_COMPILE_CACHE_URL) holds it; a ```text block that follows a snippet (after one line of
prose at most) is its expected output, exactly."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO, fixture

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def snippets():
    """(label, code, expected stdout or None) of every Python block in README.md and docs/."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text()
        blocks = list(FENCE.finditer(text))
        for i, block in enumerate(blocks):
            if block.group(1) != "python":
                continue
            expected = None
            if i + 1 < len(blocks) and blocks[i + 1].group(1) == "text":
                between = text[block.end() : blocks[i + 1].start()].strip()
                if between.count("\n") == 0:
                    expected = blocks[i + 1].group(2)
            line = text[: block.start()].count("\n") + 1
            found.append((f"{doc.relative_to(REPO)}:{line}", block.group(2), expected))
    return found


ALL = snippets()


def test_there_are_snippets():
    # The snippets shown with their output (README.md's, docs/python.md's two): a paragraph
    # slipped between a snippet and its output would leave the output unchecked.
    assert sum(1 for _, _, expected in ALL if expected is not None) >= 3, ALL


@pytest.mark.parametrize("label,code,expected", ALL, ids=[s[0] for s in ALL])
def test_snippet_runs(tmp_path, label, code, expected):
    small = fixture(FIXTURES / "nkipy" / "matmul_small.neff")
    shutil.copy(small, tmp_path / "model.neff")
    # A compile cache holding the model, as neuronx-cc leaves one.
    entry = tmp_path / "cache" / "neuronxcc-2.21.0" / "MODULE_1+a"
    entry.mkdir(parents=True)
    shutil.copy(small, entry / "model.neff")
    (entry / "model.done").write_bytes(b"")
    env = {**os.environ, "NEURON_COMPILE_CACHE_URL": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{label}:\n{done.stderr}"
    if expected is not None:
        assert done.stdout == expected, label
