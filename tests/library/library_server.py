#!/usr/bin/python3
"""A Library API server for capsa's tests: no packaged one exists.

Written from the community specification (singularityhub/library-api) and what
SingularityCE's client (scs-library-client) asks of it:
  GET /v1/images/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH
      -> 200 {"data": {"hash": "sha256.HEX", "size": N, "arch": ARCH, ...}}, 404 unknown
  GET /v1/imagefile/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH
      -> 303 to the blob store (a second server, named by another host name), or 200 with
         the bytes for images marked "direct"
  GET /blobs/INDEX/HEX on the blob store, with Range (206) or without (200)

  GET /v1/token-status, /version and /assets/config/config.json: what a client's
      `remote login` and `remote status` ask (SingularityCE's token check, the library's
      version, Sylabs' list of services)

  library_server.py CATALOG PORT_FILE [TOKEN_FILE]
With TOKEN_FILE, every /v1/ request must carry "Authorization: Bearer TOKEN" (the file's
first line); others get 401. Requests that carried a token are counted in PORT_FILE.tokens
(one line each) so tests can tell the token was sent; the blob store never needs one.
CATALOG is a JSON list of images: {"path": "entity/collection/container:tag", "file": F,
"arch": "amd64", "mode": M}; M is one of
  normal      record and file agree
  direct      the file is served by the library itself, no redirect
  badsum      the record's hash is not the file's
  wrongarch   the record says ARCH whatever arch is asked for (an old library)
  drop        the blob store breaks the first answer for each part (each range end) off
              halfway; the resumed request is answered
Both servers listen on 127.0.0.1 on free ports; "LIBRARY BLOBS" is written to PORT_FILE
once they serve. Runs until killed.
"""
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

catalog_file, port_file = sys.argv[1], sys.argv[2]
required_token = None
if len(sys.argv) > 3:
    with open(sys.argv[3]) as f:
        required_token = f.readline().strip()
token_log_lock = threading.Lock()
images = {}
for index, entry in enumerate(json.load(open(catalog_file))):
    with open(entry["file"], "rb") as f:
        content = f.read()
    entry["hex"] = hashlib.sha256(content).hexdigest()
    entry["size"] = len(content)
    entry["blob"] = "%d/%s" % (index, entry["hex"])  # the same file may be in several modes
    images[entry["path"]] = entry
blobs = {entry["blob"]: entry for entry in images.values()}
dropped = set()
dropped_lock = threading.Lock()
blob_port = None


class Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def answer_json(self, status, value):
        self.answer(status, json.dumps(value).encode(), [("Content-Type", "application/json")])


class Library(Quiet):
    def do_GET(self):
        url = urlparse(self.path)
        arch = parse_qs(url.query).get("arch", ["amd64"])[0]
        if url.path == "/version":
            return self.answer_json(200, {"data": {"version": "1.0.0-capsa-test", "apiVersion": "1.0.0"}})
        if url.path == "/assets/config/config.json":
            base = "http://127.0.0.1:%d" % self.server.server_address[1]
            return self.answer_json(200, {"libraryAPI": {"uri": base}, "tokenAPI": {"uri": base}})
        authorization = self.headers.get("Authorization", "")
        if authorization.startswith("Bearer "):
            with token_log_lock, open(port_file + ".tokens", "a") as log:
                log.write(url.path + "\n")
        if url.path.startswith("/v1/") and required_token is not None and \
                authorization != "Bearer " + required_token:
            return self.answer_json(401, {"error": {"code": 401, "message": "invalid token"}})
        if url.path == "/v1/token-status":
            return self.answer_json(200, {"data": {"status": "valid"}})
        for prefix in ("/v1/images/", "/v1/imagefile/"):
            if url.path.startswith(prefix):
                image = images.get(url.path[len(prefix):])
                break
        else:
            return self.answer_json(404, {"error": {"code": 404, "message": "no such endpoint"}})
        if image is None or (image["mode"] != "wrongarch" and image["arch"] != arch):
            return self.answer_json(404, {"error": {"code": 404, "message": "image not found"}})
        if url.path.startswith("/v1/images/"):
            digest = image["hex"] if image["mode"] != "badsum" else hashlib.sha256(b"another file").hexdigest()
            return self.answer_json(200, {"data": {
                "id": image["hex"][:24], "hash": "sha256." + digest, "size": image["size"],
                "arch": image["arch"], "uploaded": True, "containerName": image["path"]}})
        if image["mode"] == "direct":
            with open(image["file"], "rb") as f:
                return self.answer(200, f.read(), [("Content-Type", "application/octet-stream")])
        # The blob store is "another host": another name for this machine, another port.
        return self.answer(303, b"", [("Location", "http://localhost:%d/blobs/%s" % (blob_port, image["blob"]))])


class BlobStore(Quiet):
    def do_GET(self):
        url = urlparse(self.path)
        image = blobs.get(url.path[len("/blobs/"):]) if url.path.startswith("/blobs/") else None
        if image is None:
            return self.answer(404)
        with open(image["file"], "rb") as f:
            content = f.read()
        ranged = self.headers.get("Range")
        if not ranged:
            return self.answer(200, content)
        first, last = ranged.split("=", 1)[1].split("-")
        first, last = int(first), min(int(last), len(content) - 1)
        part = content[first:last + 1]
        if image["mode"] == "drop":
            with dropped_lock:
                drop = last not in dropped
                dropped.add(last)
            if drop:  # promise the whole range, send half, hang up
                self.send_response(206)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(content)))
                self.send_header("Content-Length", str(len(part)))
                self.end_headers()
                self.wfile.write(part[:len(part) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
        self.answer(206, part, [("Content-Range", "bytes %d-%d/%d" % (first, last, len(content)))])


library = ThreadingHTTPServer(("127.0.0.1", 0), Library)
store = ThreadingHTTPServer(("127.0.0.1", 0), BlobStore)
blob_port = store.server_address[1]
threading.Thread(target=store.serve_forever, daemon=True).start()
with open(port_file + ".tmp", "w") as f:
    f.write("%d %d\n" % (library.server_address[1], blob_port))
os.rename(port_file + ".tmp", port_file)
library.serve_forever()
