#!/usr/bin/python3
"""Builds one hostile OCI image from a JSON spec and pushes it to a plain-HTTP registry
through the registry API itself (blob uploads, then the manifest), for tests/hostile.

  hostile_image.py HOST:PORT REPOSITORY TAG < SPEC.json

Prints {"manifest": DIGEST, "config": BLOB, "layers": [BLOB, ...]}, BLOB = {"digest",
"size"} (the real blob, whatever the manifest claims).

SPEC:
  {"layers": [LAYER, ...],
   "config": {...},                        copied into the image config's "config"
   "claim_size": {"layer": I, "size": N},  the manifest gives layer I this size (a lie)
   "delete_layer": I,                      layer I is deleted from the repository after
                                           the push: the manifest names a missing blob
   "wrong_diff_id": I}                     the config gives layer I an all-zero diff_id
  LAYER = {"compression": "gzip" | "zstd" | "none" (default gzip), "entries": [ENTRY, ...]}
        | {"zeros_bomb": {"name": PATH, "bytes": N, "truncate_after": M}}   one regular
          file of N zero bytes, gzip-compressed as concatenated members that each hold
          the same run of zeros: a blob of about N/1000 bytes, written without
          compressing N bytes; with truncate_after, the stream ends after M bytes of the
          file (a header that lies), and the diff_id is all zeros
  ENTRY, written exactly as given (no normalisation, so names may escape the root):
    {"name": N (or "name_hex"), "type": "file" | "dir" | "symlink" | "hardlink" | "char" |
     "block" | "fifo", "data": TEXT, "source": HOST_FILE (file contents), "random_bytes": N
     (N random bytes: incompressible), "mode": INT,
     "uid", "gid", "target" (link target), "major", "minor"}
    {"many_files": PREFIX, "count": N, "per_dir": K}   N empty files in N/K directories
    {"deep_dirs": PREFIX, "depth": D, "name": COMPONENT, "file": NAME}   D nested
                                           directories, a file at the bottom
The image config's diff_ids are the layers' true uncompressed digests.
"""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from registry_push import push_blob, request  # noqa: E402  (tests/support)

TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
         "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "char": tarfile.CHRTYPE,
         "block": tarfile.BLKTYPE}
MTIME = 1700000000
ZERO_DIGEST = "sha256:" + "0" * 64
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER_TYPES = {"gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
               "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
               "none": "application/vnd.oci.image.layer.v1.tar"}


def tar_info(path, kind, mode=None, attrs=None):
    attrs = attrs or {}
    info = tarfile.TarInfo(path)
    info.type = TYPES[kind]
    info.mode = mode if mode is not None else (0o755 if kind == "dir" else 0o644)
    info.uid, info.gid = attrs.get("uid", 0), attrs.get("gid", 0)
    info.mtime = MTIME
    info.linkname = attrs.get("target", "")
    info.devmajor, info.devminor = attrs.get("major", 0), attrs.get("minor", 0)
    return info


def write_entries(tar, entries):
    for e in entries:
        if "many_files" in e:
            per_dir = e.get("per_dir", 1000)
            for d in range((e["count"] + per_dir - 1) // per_dir):
                directory = "%s/%d" % (e["many_files"], d)
                tar.addfile(tar_info(directory, "dir"))
                for i in range(min(per_dir, e["count"] - d * per_dir)):
                    tar.addfile(tar_info("%s/%d" % (directory, i), "file"))
            continue
        if "deep_dirs" in e:
            path = e["deep_dirs"]
            tar.addfile(tar_info(path, "dir"))
            for _ in range(e["depth"]):
                path += "/" + e["name"]
                tar.addfile(tar_info(path, "dir"))
            info = tar_info(path + "/" + e["file"], "file")
            info.size = 5
            tar.addfile(info, io.BytesIO(b"deep\n"))
            continue
        name = e.get("name", "")
        if "name_hex" in e:
            name = bytes.fromhex(e["name_hex"]).decode("utf-8", "surrogateescape")
        kind = e.get("type", "file")
        info = tar_info(name, kind, e.get("mode"), e)
        if kind == "file":
            if "random_bytes" in e:
                data = os.urandom(e["random_bytes"])
            elif "source" in e:
                with open(e["source"], "rb") as f:
                    data = f.read()
            else:
                data = e.get("data", "").encode()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        else:
            tar.addfile(info)


def plain_layer(spec):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT, errors="surrogateescape") as tar:
        write_entries(tar, spec.get("entries", []))
    tar_bytes = raw.getvalue()
    diff_id = "sha256:" + hashlib.sha256(tar_bytes).hexdigest()
    compression = spec.get("compression", "gzip")
    if compression == "gzip":
        blob = gzip.compress(tar_bytes, compresslevel=6, mtime=0)
    elif compression == "zstd":
        blob = subprocess.run(["zstd", "-q", "-c"], input=tar_bytes, stdout=subprocess.PIPE, check=True).stdout
    else:
        blob = tar_bytes
    return blob, diff_id, LAYER_TYPES[compression]


def gzip_member(data):
    """One complete gzip member (RFC 1952) holding `data`."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = compressor.compress(data) + compressor.flush()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = zlib.crc32(data).to_bytes(4, "little") + (len(data) & 0xFFFFFFFF).to_bytes(4, "little")
    return header + body + trailer


def zeros_bomb(spec):
    """A tar holding one file of `bytes` zeros, then the end-of-archive blocks: after the
    header everything is zero bytes, so the stream is the header's gzip member followed by
    one precomputed member of zeros repeated (gzip readers must accept concatenated
    members), and the uncompressed digest is hashed from the same run of zeros."""
    size = spec["bytes"]
    header = tar_info(spec["name"], "file")
    header.size = size
    header_bytes = header.tobuf(tarfile.PAX_FORMAT)
    tail = (-size) % 512 + 1024  # padding of the file's last block, then two empty blocks
    total_zeros = size + tail
    truncated = "truncate_after" in spec
    if truncated:
        total_zeros = min(total_zeros, spec["truncate_after"])
    chunk = 16 << 20
    zero_chunk = bytes(chunk)
    chunk_member = gzip_member(zero_chunk)
    sha = hashlib.sha256(header_bytes)
    parts = [gzip_member(header_bytes)]
    full, rest = divmod(total_zeros, chunk)
    for _ in range(full):
        sha.update(zero_chunk)
    parts.append(chunk_member * full)
    if rest:
        sha.update(bytes(rest))
        parts.append(gzip_member(bytes(rest)))
    return b"".join(parts), ZERO_DIGEST if truncated else "sha256:" + sha.hexdigest(), LAYER_TYPES["gzip"]


def main():
    host, repo, tag = sys.argv[1], sys.argv[2], sys.argv[3]
    spec = json.load(sys.stdin)
    base = "http://" + host
    layers, diff_ids, descriptors = [], [], []
    for layer_spec in spec.get("layers", []):
        blob, diff_id, media_type = zeros_bomb(layer_spec["zeros_bomb"]) if "zeros_bomb" in layer_spec \
            else plain_layer(layer_spec)
        pushed = push_blob(base, repo, blob)
        layers.append(pushed)
        diff_ids.append(diff_id)
        descriptors.append(dict(pushed, mediaType=media_type))
    if "wrong_diff_id" in spec:
        diff_ids[spec["wrong_diff_id"]] = ZERO_DIGEST
    claim = spec.get("claim_size")
    if claim:
        descriptors[claim["layer"]]["size"] = claim["size"]
    config = push_blob(base, repo, json.dumps({
        "architecture": "amd64", "os": "linux", "created": "2023-11-14T22:13:20Z",
        "config": spec.get("config", {}),
        "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode())
    manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                           "config": dict(config, mediaType=OCI_CONFIG),
                           "layers": descriptors}).encode()
    request("PUT", "%s/v2/%s/manifests/%s" % (base, repo, tag), manifest, {"Content-Type": OCI_MANIFEST})
    if "delete_layer" in spec:
        request("DELETE", "%s/v2/%s/blobs/%s" % (base, repo, layers[spec["delete_layer"]]["digest"]))
    print(json.dumps({"manifest": "sha256:" + hashlib.sha256(manifest).hexdigest(),
                      "config": config, "layers": layers}))


if __name__ == "__main__":
    main()
