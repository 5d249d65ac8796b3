#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into fuzz/seeds/<target>/ (not committed).

Seeds are derived from the real NEFFs in ../shared/fixtures (never copied whole: payloads are
cut to a few dozen bytes and the big manifests left out) and from the repository's own tar
fixtures, plus generated variants that reach the corners of each layer. `cargo fuzz cmin`
then minimises them into fuzz/corpus/<target>/, which is what the repository keeps.

Deterministic: running it twice writes the same bytes.

    python3 fuzz/make_seeds.py            # from the repository root
"""

import gzip
import hashlib
import io
import os
import struct
import sys
import tarfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "..", "shared", "fixtures", "public", "nkipy")
OUT = os.path.join(ROOT, "fuzz", "seeds")
HEADER_SIZE = 1024
# Manifests bigger than this stay out of the derived archives (the JSON seeds keep them small).
SMALL_JSON = 4096
# Payload bodies are cut to this many bytes (a .npy keeps its header too).
PAYLOAD_KEEP = 48


def write(target, name, data):
    path = os.path.join(OUT, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def members_of(neff):
    """(name, body) of every member of a real NEFF, in tar order."""
    raw = zlib.decompressobj(31).decompress(neff[HEADER_SIZE:])
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        return [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]


def shrink(members):
    """The members with payloads cut short and big manifests left out."""
    out = []
    for name, body in members:
        if name.endswith(".json"):
            if len(body) <= SMALL_JSON:
                out.append((name, body))
        elif name.endswith(".npy"):
            header_len = 10 + struct.unpack_from("<H", body, 8)[0] if body[6:7] == b"\x01" else 128
            out.append((name, body[: header_len + PAYLOAD_KEEP]))
        elif not name.endswith(".dbg") and not name.endswith(".dbg_sg000000"):
            out.append((name, body[:PAYLOAD_KEEP]))
    return out


def make_tar(members, fmt=tarfile.GNU_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, body in members:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            info.mtime = 1700000000
            info.mode = 0o644
            t.addfile(info, io.BytesIO(body))
        end = buf.tell()
    # Keep the two end-of-archive blocks, not tarfile's padding to a 10 KiB record.
    return buf.getvalue()[: end + 1024]


def make_gzip(data, name=None):
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name or "", mode="wb", fileobj=buf, mtime=0) as g:
        g.write(data)
    return buf.getvalue()


def make_neff(real_header, payload, pkg_version, padding=0):
    """A NEFF around `payload`, its header taken from a real one with sizes and hash redone."""
    header = bytearray(real_header[:HEADER_SIZE])
    data = payload + b"\0" * padding
    struct.pack_into("<Q", header, 0, pkg_version)
    struct.pack_into("<Q", header, 16, len(data))
    digest = hashlib.md5(data).digest() + b"\0" * 16 if pkg_version == 2 else hashlib.sha256(data).digest()
    header[172:204] = digest
    return bytes(header) + data


def tar_header(name, size_field, typeflag=b"0", magic=b"ustar\x0000"):
    """A single ustar header block with a raw 12-byte size field and a correct checksum."""
    h = bytearray(512)
    h[0 : len(name)] = name
    h[100:108] = b"0000644\0"
    h[124:136] = size_field
    h[156:157] = typeflag
    h[257:265] = magic
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


# The `manifest` target's first byte picks the document: neff.json, a KELF, a def.json, an
# engine (or activation) JSON.
ENGINE_JSON = ("Activation.json", "DVE.json", "PE.json", "Pool.json", "SP.json", "act_info.json", "exp_and_others.json")


def manifest_selector(member):
    base = member.rsplit("/", 1)[-1]
    if member == "neff.json":
        return 0
    if base.startswith("kelf-") and base.endswith(".json"):
        return 1
    if base == "def.json":
        return 2
    if base in ENGINE_JSON:
        return 3
    return None


def seeds_from_real(name, neff):
    members = members_of(neff)
    small = shrink(members)
    gz = make_gzip(make_tar(small))
    # Uncompressed, a few members are enough (each costs at least two 512-byte blocks).
    tar_bytes = make_tar(small[:12])
    write("header", f"{name}-header", neff[:HEADER_SIZE] + b"\0" * 16)
    write("header", f"{name}-valid-16", make_neff(neff, b"\x1f\x8b" + b"\0" * 14, 2))
    write("archive", f"{name}-mini-gzip.neff", make_neff(neff, gz, 2, padding=100))
    write("archive", f"{name}-mini-raw.neff", make_neff(neff, tar_bytes, 1))
    write("gzip", f"{name}-mini.tar.gz", gz)
    write("tar", f"{name}-mini-gnu.tar", tar_bytes)
    write("tar", f"{name}-mini-pax.tar", make_tar(small[:6], tarfile.PAX_FORMAT))
    for member, body in members:
        base = member.replace("/", "_")
        if member.endswith(".json") and len(body) <= SMALL_JSON:
            write("json", f"{name}-{base}", body)
        if member.endswith(".npy"):
            write("npy", f"{name}-{base}", body[:160])
        write("unpack_path", f"{name}-{base}", member.encode())
        selector = manifest_selector(member)
        if selector is not None:
            write("manifest", f"{name}-{base}", bytes([selector]) + body)
    # loader_check: the real NEFF whole, the one with its payloads cut short, and each manifest
    # member in turn cut in half (the loader stops at a different stage each time).
    write("loader_check", f"{name}.neff", neff)
    write("loader_check", f"{name}-mini.neff", make_neff(neff, gz, 2))
    for i, (member, body) in enumerate(small):
        if manifest_selector(member) is not None:
            cut = [(m, b[: len(b) // 2] if j == i else b) for j, (m, b) in enumerate(small)]
            write("loader_check", f"{name}-mini-cut-{member.replace('/', '_')}.neff", make_neff(neff, make_gzip(make_tar(cut)), 2))


def generated():
    # gzip: header flags, several members, a stored block, trailing bytes.
    write("gzip", "fname-fextra", make_gzip(b"{}" * 40, name="neff.tar"))
    write("gzip", "two-members", make_gzip(b"first") + make_gzip(b"second"))
    stored = zlib.compressobj(0, zlib.DEFLATED, -15)
    write("gzip", "stored", b"\x1f\x8b\x08\0\0\0\0\0\0\xff" + stored.compress(b"x" * 300) + stored.flush()
          + struct.pack("<II", zlib.crc32(b"x" * 300), 300) + b"\0\0garbage")
    write("gzip", "raw-tar", tar_header(b"a.json", b"00000000002\0") + b"{}" + b"\0" * 1534)
    # tar: the base-256 regression, PAX sizes and paths, GNU long names, a lone zero block.
    write("tar", "base256-near-max", tar_header(b"huge.bin", b"\x80\0\0\0" + b"\xff" * 8) + b"\0" * 1024)
    write("tar", "base256-dir", tar_header(b"d/", b"\x80\0\0\0\0\0\0\0\0\0\x02\0", b"5") + b"\0" * 1536)
    pax = b"30 path=sg00/long/name/x.npy\n" + b"11 size=5\n"
    write("tar", "pax-path-size", tar_header(b"PaxHeader", b"%011o\0" % len(pax), b"x") + pax.ljust(512, b"\0")
          + tar_header(b"short", b"00000000000\0") + b"12345".ljust(512, b"\0") + b"\0" * 1024)
    long_name = b"debug_info/" * 12 + b"x.dbg\0"
    write("tar", "gnu-long-name", tar_header(b"././@LongLink", b"%011o\0" % len(long_name), b"L", b"ustar  \0")
          + long_name.ljust(512, b"\0") + tar_header(b"trunc", b"00000000001\0", b"0", b"ustar  \0")
          + b"z".ljust(512, b"\0") + b"\0" * 512)
    for fixture in sorted(os.listdir(os.path.join(ROOT, "tests", "fixtures", "tar"))):
        if fixture.endswith(".tar.gz"):
            with open(os.path.join(ROOT, "tests", "fixtures", "tar", fixture), "rb") as f:
                write("tar", fixture[: -len(".gz")], gzip.decompress(f.read()))
    # json: every token kind, escapes, surrogate pairs, numbers at the edges, deep nesting.
    docs = {
        "escapes": rb'{"a\n\"b":"\u00e9\ud83d\ude00\\\/\b\f\r\t","c":["x",{"d":null}]}',
        "numbers": b"[0,-0,1.5e-3,-2.5E+10,18446744073709551615,18446744073709551616,-9223372036854775808]",
        "literals": b" [true , false,null ]\n",
        "deep": b"[" * 20 + b"]" * 20,
        "utf8": '{"k":"\u00e9\u4e2d\U0001f600"}'.encode(),
        "trailing-comma": b'{"a":1,}',
    }
    for name, doc in docs.items():
        write("json", name, doc)
    # npy: versions 1, 2 and 3, Fortran order, a scalar, big dimensions.
    def npy(major, d):
        d = d + " " * ((64 - (len(d) + 11) % 64) % 64) + "\n"
        if major == 1:
            return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode()
        return b"\x93NUMPY" + bytes([major, 0]) + struct.pack("<I", len(d)) + d.encode()
    write("npy", "v1", npy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (128, 256), }") + b"\0" * 8)
    write("npy", "v2-fortran", npy(2, "{'descr': '>i8', 'fortran_order': True, 'shape': (3,), }"))
    write("npy", "v3-scalar", npy(3, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"))
    write("npy", "overflow", npy(1, "{'descr': '<c16', 'fortran_order': False, 'shape': (4294967296, 4294967296L), }"))
    # unpack paths: every refusal.
    for i, path in enumerate([b"../evil", b"/abs", b"a//b", b"a/./b", b"a\\b", b"a\0b", b"", b"a/", b"ok/x.bin"]):
        write("unpack_path", f"generated-{i}", path)


def main():
    if not os.path.isdir(FIXTURES):
        sys.exit(f"error: {FIXTURES} is missing (the real NEFFs live in ../shared beside the repository)")
    for name in ("matmul_small", "matmul_large"):
        with open(os.path.join(FIXTURES, f"{name}.neff"), "rb") as f:
            seeds_from_real(name, f.read())
    # loader_members rebuilds matmul_small.neff with one JSON member (picked by the first byte,
    # in tar order) replaced: each member as it is, and cut in half.
    with open(os.path.join(FIXTURES, "matmul_small.neff"), "rb") as f:
        json_members = [(m, b) for m, b in members_of(f.read()) if m.endswith(".json")]
    for i, (member, body) in enumerate(json_members):
        base = member.replace("/", "_")
        write("loader_members", base, bytes([i]) + body)
        write("loader_members", f"{base}-cut", bytes([i]) + body[: len(body) // 2])
    generated()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print(f"seeds written to {OUT}: {total} bytes")


if __name__ == "__main__":
    main()
