"""Pushing to a plain-HTTP registry through the registry API itself, for the test
scripts that build images (tests/registry/push_test_image.py,
tests/hostile/hostile_image.py). Those run as scripts and import this module by
putting tests/support on sys.path."""
import hashlib
import urllib.request


def request(method, url, data=None, headers=None):
    """One HTTP request; an error status raises urllib.error.HTTPError."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=120) as response:
        return response


def push_blob(base, repo, data):
    """A monolithic upload (POST /v2/REPO/blobs/uploads/, then PUT ?digest=); returns the
    blob's descriptor fields {"digest", "size"}."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    location = request("POST", "%s/v2/%s/blobs/uploads/" % (base, repo)).headers["Location"]
    if location.startswith("/"):
        location = base + location
    separator = "&" if "?" in location else "?"
    request("PUT", "%s%sdigest=%s" % (location, separator, digest), data,
            {"Content-Type": "application/octet-stream"})
    return {"digest": digest, "size": len(data)}
