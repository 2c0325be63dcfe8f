#!/usr/bin/env python3
"""Hostile inputs for the fuzz replay (issue 26 items 7 and 8): files of a
few KB that once cost gigabytes or minutes. Writes them into
tests/fuzz/regressions/TARGET/ (the replay runs each through TARGET under
the memory bound of tests/fuzz/replay.c). Deterministic: the same bytes on
every run (zip times fixed). Takes ~40 s (bzip2 of 4.4 GB of zeros).

    python3 tests/fuzz/hostile.py [FUZZ_DIR]

The torch files are torch.save archives (torch/serialization.py _save:
ARCHIVE/data.pkl, ARCHIVE/data/KEY, ARCHIVE/version) built by hand, with
the pickle opcodes torch.save writes (protocol 2). The replay's first byte
picks the loader (tests/fuzz/fuzz-torch.c: bit 0 map, bits 1-2 GPUs).
"""
import bz2
import io
import os
import struct
import sys
import zipfile
import zlib

FUZZ = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def uni(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def num(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -2**31 <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw  # LONG1


def tup(items):
    return b"(" + b"".join(items) + b"t"


def tensor(key, numel, shape, cls="IntStorage", offset=0):
    stride = []
    acc = 1
    for d in reversed(shape):
        stride.insert(0, acc)
        acc *= d
    pid = tup([uni("storage"), b"ctorch\n" + cls.encode() + b"\n", uni(key), uni("cpu"), num(numel)])
    args = tup([pid + b"Q", num(offset), tup([num(d) for d in shape]), tup([num(s) for s in stride]),
                b"\x89", b"ccollections\nOrderedDict\n)R"])
    return b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R"


def pickle_dict(pairs):
    return b"\x80\x02}(" + b"".join(uni(k) + v for k, v in pairs) + b"u."


class Member:
    def __init__(self, name, data=b"", method=zipfile.ZIP_STORED, stream=None, size=None):
        self.name, self.data, self.method, self.stream, self.size = name, data, method, stream, size


def archive(members):
    """A zip of the members; a member with stream= is compressed from that
    iterator of chunks (bzip2 or deflate) without holding it whole."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for m in members:
            info = zipfile.ZipInfo("archive/" + m.name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = m.method
            if m.stream is None:
                z.writestr(info, m.data)
            else:
                with z.open(info, "w", force_zip64=True) as f:
                    for chunk in m.stream():
                        f.write(chunk)
    return buf.getvalue()


def zeros(total, chunk=1 << 24):
    def gen():
        left = total
        while left > 0:
            n = min(left, chunk)
            yield b"\0" * n
            left -= n
    return gen


def declared_size(data, name, size):
    """Rewrite a stored member's sizes (local header and central directory)
    to `size`, leaving its real bytes short: an archive that claims a
    member far larger than the file."""
    data = bytearray(data)
    full = ("archive/" + name).encode()
    for sig, off_c, off_u, off_n in ((b"PK\x03\x04", 18, 22, 26), (b"PK\x01\x02", 20, 24, 28)):
        at = 0
        while True:
            at = data.find(sig, at)
            if at < 0:
                break
            n = struct.unpack_from("<H", data, at + off_n)[0]
            start = at + (30 if sig == b"PK\x03\x04" else 46)
            if bytes(data[start:start + n]) == full:
                struct.pack_into("<II", data, at + off_c, size, size)
            at += 4
    return bytes(data)


def write(target, name, data):
    d = os.path.join(FUZZ, "regressions", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    print(f"{target}/{name}: {len(data)} bytes")


LOADS, MAP2 = b"\x00", b"\x05"  # fuzz-torch.c: loads; map with 2 GPUs


def torch_files():
    version = Member("version", b"3\n")
    # 1. SGLang's dump of 70,000 windows x 61 layers x 256 experts, int32
    #    zeros, as one bzip2 member: 4.37 GB from ~3 KB.
    B, L, E = 70000, 61, 256
    pkl = pickle_dict([("rank", num(0)), ("logical_count", tensor("0", B * L * E, [B, L, E]))])
    write("torch", "loads-bzip2-4.4GB-of-zeros", LOADS + archive(
        [Member("data.pkl", pkl), Member("data/0", method=zipfile.ZIP_BZIP2, stream=zeros(B * L * E * 4)),
         version]))
    # 2. the same layout, deflate, 4 MiB: any compressed member is refused.
    B2 = (4 << 20) // (L * E * 4)
    pkl2 = pickle_dict([("logical_count", tensor("0", B2 * L * E, [B2, L, E]))])
    write("torch", "loads-deflate-member", LOADS + archive(
        [Member("data.pkl", pkl2), Member("data/0", method=zipfile.ZIP_DEFLATED,
                                          stream=zeros(B2 * L * E * 4)), version]))
    # 3. a map of 2^28 expert ids (4096 layers x 65536 slots), bzip2 zeros:
    #    1 GiB of ids from ~800 bytes.
    R, C = 4096, 65536
    mpkl = pickle_dict([("physical_to_logical_map", tensor("0", R * C, [R, C]))])
    write("torch", "map-bzip2-1GiB-of-ids", MAP2 + archive(
        [Member("data.pkl", mpkl), Member("data/0", method=zipfile.ZIP_BZIP2, stream=zeros(R * C * 4)),
         version]))
    # 4. the same map stored, its member claiming 1 GiB in a file of 1 KB:
    #    the ids must not be allocated before the size is checked against
    #    the file.
    small = archive([Member("data.pkl", mpkl), Member("data/0", b"\0" * 64), version])
    write("torch", "map-stored-claims-1GiB", MAP2 + declared_size(small, "data/0", R * C * 4))
    # 5. the pickle compressed: 64 MiB of EMPTY_LIST opcodes (4M objects
    #    before the object limit), bzip2.
    bomb = b"\x80\x02" + b"]" * ((64 << 20) - 4) + b"."
    write("torch", "pickle-bzip2-64MiB-of-lists", LOADS + archive(
        [Member("data.pkl", bomb, method=zipfile.ZIP_BZIP2), version]))
    # 6. a memo index of 4 million in a 40-byte pickle (LONG_BINPUT): the
    #    memo table must not grow to it.
    memo = b"\x80\x02}r" + struct.pack("<I", 3999999) + b"."
    write("torch", "pickle-memo-index-4M", LOADS + archive([Member("data.pkl", memo), version]))
    # 7. a shape of 2^20 x 2^20 over a storage of 16 elements.
    hpkl = pickle_dict([("logical_count", tensor("0", 1 << 40, [1 << 20, 1 << 20]))])
    write("torch", "loads-shape-2-pow-40", LOADS + archive(
        [Member("data.pkl", hpkl), Member("data/0", b"\0" * 64), version]))


def yaml_laughs(top, depth=9):
    """Billion laughs: each level a list of 9 aliases of the one below."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, depth + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"{top}: *a{depth}")
    return ("\n".join(lines) + "\n").encode()


def text_files():
    # YAML aliases that expand to 9^10 scalars if walked as a tree.
    write("model", "billion-laughs.yaml", yaml_laughs("experts"))
    write("hardware", "billion-laughs.yaml", yaml_laughs("hbm_bytes"))
    write("scenario", "billion-laughs.yaml", yaml_laughs("phases"))
    write("loads", "billion-laughs.yaml", b"\x02" + yaml_laughs("loads"))
    write("map", "billion-laughs.yaml", b"\x00" + yaml_laughs("layers"))
    # A JSON loads document nested 2,000 deep.
    write("loads", "json-nesting-2k", b"\x01" + b"[" * 2000 + b"]" * 2000)


if __name__ == "__main__":
    torch_files()
    text_files()
