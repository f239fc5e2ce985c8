#!/usr/bin/python3
"""Pushes a small image with fresh random content to a plain-HTTP registry, through the
registry API itself (POST /v2/NAME/blobs/uploads/ + PUT ?digest=, PUT manifests), and
prints what the client tests need as JSON.

  push_test_image.py HOST:PORT REPOSITORY

Tags: oci (OCI manifest), docker (Docker schema 2), index (OCI index of both).
The layer is 3 MiB of random bytes (so resume, stall and truncation have room), the config
a small JSON document.
"""
import hashlib
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from registry_push import push_blob, request  # noqa: E402  (tests/support)


def push_manifest(base, repo, tag, media_type, document):
    data = json.dumps(document, indent=3).encode()  # multi-line on purpose: hash bytes, not JSON
    request("PUT", "%s/v2/%s/manifests/%s" % (base, repo, tag), data, {"Content-Type": media_type})
    return {"digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data), "media_type": media_type}


def main():
    host, repo = sys.argv[1], sys.argv[2]
    base = "http://" + host
    layer = push_blob(base, repo, os.urandom(3 << 20))
    config = push_blob(base, repo, json.dumps({"architecture": "amd64", "os": "linux",
                                                "rootfs": {"type": "layers", "diff_ids": []}}).encode())
    oci_type = "application/vnd.oci.image.manifest.v1+json"
    oci = push_manifest(base, repo, "oci", oci_type, {
        "schemaVersion": 2, "mediaType": oci_type,
        "config": dict(config, mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": [dict(layer, mediaType="application/vnd.oci.image.layer.v1.tar+gzip")]})
    docker_type = "application/vnd.docker.distribution.manifest.v2+json"
    docker = push_manifest(base, repo, "docker", docker_type, {
        "schemaVersion": 2, "mediaType": docker_type,
        "config": dict(config, mediaType="application/vnd.docker.container.image.v1+json"),
        "layers": [dict(layer, mediaType="application/vnd.docker.image.rootfs.diff.tar.gzip")]})
    index_type = "application/vnd.oci.image.index.v1+json"
    index = push_manifest(base, repo, "index", index_type, {
        "schemaVersion": 2, "mediaType": index_type,
        "manifests": [dict(oci_manifest, platform={"architecture": "amd64", "os": "linux"})
                      for oci_manifest in [{"mediaType": oci_type, "digest": oci["digest"], "size": oci["size"]}]]})
    print(json.dumps({"repository": repo, "layer": layer, "config": config,
                      "oci": oci, "docker": docker, "index": index}))


if __name__ == "__main__":
    main()
