#!/usr/bin/python3
"""A plain HTTP client's view of a manifest, for the push tests (capsa is not asked):
  manifest_of.py http://HOST:PORT/v2/REPOSITORY/manifests/TAG
prints {"status": N, "content_type": "...", "manifest": {...} or null, "digest": "sha256:..."}."""
import hashlib
import json
import sys
import urllib.error
import urllib.request

request = urllib.request.Request(sys.argv[1], headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        status, content_type, body = answer.status, answer.headers.get("Content-Type", ""), answer.read()
except urllib.error.HTTPError as error:
    status, content_type, body = error.code, error.headers.get("Content-Type", ""), b""
print(json.dumps({"status": status, "content_type": content_type,
                  "manifest": json.loads(body) if status == 200 else None,
                  "digest": "sha256:" + hashlib.sha256(body).hexdigest()}))
