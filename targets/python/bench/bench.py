"""Timings of the package against the naive script, in one run, printed as ratios.

    python targets/python/bench/bench.py [--mib 400] [--neff PATH] [--repeat 3]

Without --neff it generates a big NEFF: matmul_small.neff (from ../shared/fixtures) unpacked
with `neff unpack`, given float16 weights of random values (incompressible, 4 MiB each) up to
--mib MiB, and packed with `neff pack`; and the scale generator's `weights` preset (3,000
weights: many small members). It times, on each NEFF:

* `neff.info(path)` against the naive script: `gzip` + `tarfile` over the bytes after the
  1,024-byte header, `json.loads` of every `.json` member;
* `neff.open(path)` (the one pass that builds the member index), then `.read(member)` of the
  last member and of one in the middle, against the naive script reading that member with
  `tarfile`;

and prints each time (the best of --repeat) and the ratios. No assertion: figures, not a test.
The `neff` command is $NEFF_BIN (default target/release/neff, else target/debug/neff), the
generator $SCALE_NEFF_BIN (default target/release/examples/scale-neff, else the debug one).
"""

import argparse
import gzip
import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

import neff

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO.parent / "shared" / "fixtures" / "public"


def tool(env, name):
    if os.environ.get(env):
        return os.environ[env]
    for profile in ("release", "debug"):
        path = REPO / "target" / profile / name
        if path.exists():
            return str(path)
    sys.exit(f"error: {name} not found: cargo build --release -p neff-cli --bin neff --example scale-neff")


def big_neff(root, mib):
    """matmul_small plus random float16 weights of 4 MiB each, `mib` MiB of them."""
    binary = tool("NEFF_BIN", "neff")
    tree = root / "tree"
    subprocess.run([binary, "unpack", str(FIXTURES / "nkipy" / "matmul_small.neff"), "-o", str(tree)], check=True)
    rng = np.random.default_rng(7)
    definitions = sorted(tree.glob("sg*/def.json"))
    count = max(1, mib // 4)
    docs = {d: json.loads(d.read_text()) for d in definitions}
    for i in range(count):
        definition = definitions[i % len(definitions)]
        doc = docs[definition]
        next_id = max(v["var_id"] for v in doc["var"].values()) + 1
        array = rng.standard_normal((2048, 1024)).astype(np.float16)
        name = f"bench_{i:04d}.npy"
        np.save(definition.parent / name, array)
        doc["var"][f"bench_{i:04d}"] = {
            "alignment": 64,
            "file_name": name,
            "ops": [],
            "size": array.nbytes,
            "type": "file",
            "var_id": next_id,
        }
    for definition, doc in docs.items():
        definition.write_text(json.dumps(doc, indent=4))
    path = root / "big.neff"
    subprocess.run([binary, "pack", str(tree), "-o", str(path)], check=True, capture_output=True)
    return path


def many_members(root):
    path = root / "weights.neff"
    subprocess.run(
        [tool("SCALE_NEFF_BIN", "examples/scale-neff"), "weights", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def naive_tar(path):
    f = open(path, "rb")
    f.seek(1024)
    return tarfile.open(fileobj=gzip.GzipFile(fileobj=f), mode="r|")


def naive_info(path):
    """What a user writes without the package: every JSON manifest parsed."""
    docs = {}
    with naive_tar(path) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".json"):
                docs[member.name] = json.loads(tar.extractfile(member).read())
    return docs


def naive_read(path, name):
    with naive_tar(path) as tar:
        for member in tar:
            if member.name.lstrip("./") == name or member.name == name:
                return tar.extractfile(member).read()
    raise KeyError(name)


def best(repeat, work):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def report(label, path, repeat):
    size = path.stat().st_size
    print(f"\n{label}: {path.name}, {size / 2**20:.1f} MiB")
    t_info, _ = best(repeat, lambda: neff.info(path))
    t_naive_info, _ = best(repeat, lambda: naive_info(path))
    t_open, opened = best(repeat, lambda: neff.open(path))
    rows = opened.members
    last, middle = rows[-1].name, rows[len(rows) // 2].name
    largest = max(rows, key=lambda m: m.size)
    t_last, data = best(repeat, lambda: opened.read(last))
    t_middle, _ = best(repeat, lambda: opened.read(middle))
    t_largest, _ = best(repeat, lambda: opened.read(largest.name))
    t_naive_last, want = best(repeat, lambda: naive_read(path, last))
    assert data == want, "the bytes differ"
    checkpoints, spacing = opened._opened.index_size()
    print(f"  index: {len(rows)} members, {checkpoints} checkpoints {spacing >> 20} MiB apart")
    print(f"  neff.info(path)               {t_info * 1e3:10.1f} ms")
    print(f"  naive info (gzip+tarfile+json){t_naive_info * 1e3:10.1f} ms   ratio naive/neff.info {t_naive_info / t_info:6.1f}x")
    print(f"  neff.open(path) (first pass)  {t_open * 1e3:10.1f} ms")
    print(f"  Neff.read(last member)        {t_last * 1e3:10.1f} ms   ratio first pass/read {t_open / t_last:6.1f}x")
    print(f"  Neff.read(middle member)      {t_middle * 1e3:10.1f} ms")
    print(f"  Neff.read(largest member)     {t_largest * 1e3:10.1f} ms   ({largest.size / 2**20:.1f} MiB)")
    print(f"  naive read of the last member {t_naive_last * 1e3:10.1f} ms   ratio naive/Neff.read {t_naive_last / t_last:6.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=400, help="size of the generated big NEFF's weights")
    parser.add_argument("--neff", type=pathlib.Path, help="time this NEFF instead of generating")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.neff:
        report("given", args.neff, args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        report("random float16 weights (4 MiB members)", big_neff(root, args.mib), args.repeat)
        report("scale-neff weights preset, 3,000 weights", many_members(root), args.repeat)


if __name__ == "__main__":
    main()
