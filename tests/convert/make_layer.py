#!/usr/bin/python3
"""Writes one OCI layer blob for the convert tests.

usage: make_layer.py OUTPUT {plain|gzip|zstd} [pax|gnu] < entries.json

entries.json is a list of objects: name (or name_hex, for names that are not UTF-8), type (file, dir, symlink, hardlink, fifo,
char, block, socket), data, mode, uid, gid, target, xattrs (object). Entries are
written in the given order, exactly as named (no normalisation), so tests can build
hostile layers too.
"""
import io
import json
import subprocess
import sys
import tarfile

TYPES = {
    "file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "char": tarfile.CHRTYPE,
    "block": tarfile.BLKTYPE,
}


def main():
    output, compression = sys.argv[1], sys.argv[2]
    fmt = tarfile.GNU_FORMAT if len(sys.argv) > 3 and sys.argv[3] == "gnu" else tarfile.PAX_FORMAT
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt, errors="surrogateescape") as tar:
        for e in json.load(sys.stdin):
            name = e.get("name", "")
            if "name_hex" in e:
                name = bytes.fromhex(e["name_hex"]).decode("utf-8", "surrogateescape")
            info = tarfile.TarInfo(name)
            kind = e.get("type", "file")
            info.type = TYPES[kind]
            info.mode = e.get("mode", 0o755 if kind == "dir" else 0o644)
            info.uid, info.gid = e.get("uid", 0), e.get("gid", 0)
            info.mtime = e.get("mtime", 1700000000)
            info.linkname = e.get("target", "")
            if e.get("xattrs"):
                info.pax_headers = {"SCHILY.xattr." + k: v for k, v in e["xattrs"].items()}
            data = e.get("data", "").encode()
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    blob = raw.getvalue()
    if compression == "gzip":
        import gzip
        blob = gzip.compress(blob)
    elif compression == "zstd":
        blob = subprocess.run(["zstd", "-q", "-c"], input=blob, stdout=subprocess.PIPE, check=True).stdout
    with open(output, "wb") as f:
        f.write(blob)


main()
