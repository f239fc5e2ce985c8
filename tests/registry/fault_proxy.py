#!/usr/bin/python3
"""An HTTP proxy in front of a test registry that misbehaves on request, for the registry
client tests. Bounded: every fault has a count, every stall a deadline, and the proxy exits
when its stdin closes (the test process died or finished).

  fault_proxy.py UPSTREAM_URL CONFIG_FILE LOG_FILE

Listens on 127.0.0.1 (the "front", registry API) and 127.0.0.2 (the "storage" origin that
blob redirects point to), both on free ports, and prints {"front": PORT, "storage": PORT}.
CONFIG_FILE (JSON, re-read on every request; counters restart when it changes):
  fail:          {"status": 429, "count": N, "retry_after": "1", "path": "/blobs/"}
  stall:         {"after_bytes": N, "count": N, "seconds": S}  blob body stops after N bytes
  truncate:      {"after_bytes": N, "count": N}  blob connection closed after N bytes
  corrupt:       {"count": N, "path": "sha256:…"} one byte of a blob body flipped (only
                                                 blobs whose path holds "path", if given)
  ignore_range:  true                            Range removed before forwarding
  bad_range:     {"count": N}                    206 with a Content-Range for another offset
  manifest_content_type: "T"                     manifests answered with this Content-Type
  redirect_blobs: true                           blob GETs answered 307 -> storage origin
  basic:         {"user": U, "password": P}      front requires these Basic credentials
  bearer:        {"expires_in": N, "reject_after_uses": K, "refresh_token": R}  front
                 requires a token from its /token (GET: anonymous; POST: the OAuth2
                 refresh_token grant with refresh token R); a token is refused after K uses
  corrupt_manifest: true                         a space appended to manifest bodies
  throttle:      {"bytes_per_second": N}         blob bodies sent at about this rate
  cut_upload:    {"after_bytes": N, "count": N,  a blob upload's PATCH: connection closed
                  "skip": K}                     after N bytes of its body, none of which
                                                 reaches the registry (the first K PATCHes
                                                 pass untouched; "cancel": true also
                                                 deletes the upload in the registry)
Uploads (POST, PATCH, PUT under /v2/) are passed through, their Location rewritten to the
front.
LOG_FILE gets one JSON line per request: listener, method, path, authorization (bool),
range, status.
"""
import base64
import hashlib
import http.client
import http.server
import json
import os
import secrets
import socketserver
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

UPSTREAM, CONFIG_FILE, LOG_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
LOCK = threading.Lock()
STATE = {"config_hash": None, "config": {}, "counters": {}, "tokens": {}}


def config():
    try:
        with open(CONFIG_FILE, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b"{}"
    digest = hashlib.sha256(data).hexdigest()
    with LOCK:
        if digest != STATE["config_hash"]:
            STATE.update(config_hash=digest, config=json.loads(data or b"{}") or {}, counters={}, tokens={})
        return STATE["config"]


def take(fault):
    """True while the fault named `fault` still has uses left (and counts one)."""
    spec = config().get(fault)
    if not spec:
        return None
    with LOCK:
        used = STATE["counters"].get(fault, 0)
        if used >= spec.get("count", 1):
            return None
        STATE["counters"][fault] = used + 1
    return spec


def log(entry):
    with LOCK, open(LOG_FILE, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    listener = "front"
    storage_port = 0

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=b"", headers=None):
        self.record(status)  # before answering: the client reads the log as soon as it has the answer
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def record(self, status):
        log({"listener": self.listener, "method": self.command, "path": self.path,
             "authorization": "Authorization" in self.headers, "range": self.headers.get("Range"),
             "content_range": self.headers.get("Content-Range"),
             "accept": self.headers.get("Accept"),
             "status": status})

    def authorised(self, cfg):
        header = self.headers.get("Authorization", "")
        if "basic" in cfg:
            want = "Basic " + base64.b64encode(
                ("%s:%s" % (cfg["basic"]["user"], cfg["basic"]["password"])).encode()).decode()
            if header != want:
                self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                            {"WWW-Authenticate": 'Basic realm="fault-proxy"'})
                return False
        if "bearer" in cfg:
            token = header[len("Bearer "):] if header.startswith("Bearer ") else None
            with LOCK:
                uses = STATE["tokens"].get(token)
                if uses is not None:
                    STATE["tokens"][token] = uses + 1
            limit = cfg["bearer"].get("reject_after_uses", 1 << 30)
            if uses is None or uses >= limit:
                realm = "http://127.0.0.1:%d/token" % self.server.server_address[1]
                self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"token required"}]}',
                            {"WWW-Authenticate": 'Bearer realm="%s",service="fault-proxy",'
                                                 'scope="repository:placeholder:pull,push"' % realm})
                return False
        return True

    def issue_token(self, cfg):
        token = secrets.token_hex(16)
        with LOCK:
            STATE["tokens"][token] = 0
        body = {"access_token": token, "expires_in": cfg.get("bearer", {}).get("expires_in", 60)}
        self.answer(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def do_POST(self):
        cfg = config()
        if self.path.startswith("/v2/"):
            return self.forward_upload(cfg)
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        expected = cfg.get("bearer", {}).get("refresh_token")
        if (self.path != "/token" or form.get("grant_type") != ["refresh_token"] or not expected
                or form.get("refresh_token") != [expected]):
            return self.answer(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"bad refresh token"}]}')
        self.issue_token(cfg)

    def do_HEAD(self):
        self.do_GET()

    def do_PATCH(self):
        self.forward_upload(config())

    def do_PUT(self):
        self.forward_upload(config())

    def front_url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def forward_upload(self, cfg):
        length = int(self.headers.get("Content-Length", "0"))
        if not self.authorised(cfg):
            self.close_connection = True  # the body is left unread
            return
        cut = None
        if self.command == "PATCH" and config().get("cut_upload"):
            with LOCK:
                seen = STATE["counters"].get("patches", 0)
                STATE["counters"]["patches"] = seen + 1
            if seen >= config()["cut_upload"].get("skip", 0):
                cut = take("cut_upload")
        if cut:
            self.rfile.read(min(length, cut.get("after_bytes", 0)))
            if cut.get("cancel"):
                try:
                    urllib.request.urlopen(urllib.request.Request(UPSTREAM + self.path, method="DELETE"), timeout=30)
                except urllib.error.HTTPError:
                    pass
            self.record(0)
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        request = urllib.request.Request(UPSTREAM + self.path, data=body, method=self.command)
        for name in ("Content-Type", "Content-Range"):
            if name in self.headers:
                request.add_header(name, self.headers[name])
        try:
            upstream = urllib.request.urlopen(request, timeout=30)
        except urllib.error.HTTPError as error:
            upstream = error
        answer = upstream.read()
        status = upstream.status if hasattr(upstream, "status") else upstream.code
        self.answer(status, answer, self.passed_headers(upstream))

    def passed_headers(self, upstream):
        names = ("content-type", "docker-content-digest", "content-range", "www-authenticate", "location", "range",
                 "docker-upload-uuid")
        headers = {k: v for k, v in upstream.headers.items() if k.lower() in names}
        for name in list(headers):
            if name.lower() == "location":
                headers[name] = headers[name].replace(UPSTREAM, self.front_url())
        return headers

    def do_GET(self):
        cfg = config()
        if self.listener == "front":
            if self.path.startswith("/token"):
                return self.issue_token(cfg)
            if not self.authorised(cfg):
                return
            fail = take("fail")
            if fail and fail.get("path", "") in self.path:
                headers = {"Retry-After": fail["retry_after"]} if "retry_after" in fail else {}
                return self.answer(fail["status"], b'{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}',
                                   headers)
            if cfg.get("redirect_blobs") and "/blobs/" in self.path:
                return self.answer(307, b"", {"Location": "http://127.0.0.2:%d%s" % (self.storage_port, self.path)})
        self.forward(cfg)

    def forward(self, cfg):
        request = urllib.request.Request(UPSTREAM + self.path, method=self.command)
        for name in ("Accept", "Range"):
            if name in self.headers and not (name == "Range" and cfg.get("ignore_range")):
                request.add_header(name, self.headers[name])
        try:
            upstream = urllib.request.urlopen(request, timeout=30)
        except urllib.error.HTTPError as error:
            upstream = error
        try:
            body = upstream.read()
        except http.client.IncompleteRead as short:  # distribution's 416 overstates its length
            body = short.partial
        status = upstream.status if hasattr(upstream, "status") else upstream.code
        headers = self.passed_headers(upstream)
        if "/manifests/" in self.path:
            if cfg.get("manifest_content_type"):
                headers["Content-Type"] = cfg["manifest_content_type"]
            if cfg.get("corrupt_manifest") and status == 200 and self.command == "GET":
                body += b" "
        is_blob = "/blobs/" in self.path and self.command == "GET" and status in (200, 206)
        if is_blob:
            bad = take("bad_range")
            if bad and status == 206:
                headers["Content-Range"] = "bytes 1-%d/%d" % (len(body), len(body) + 1)
            corrupt_path = (cfg.get("corrupt") or {}).get("path", "")
            if corrupt_path in self.path and take("corrupt") and body:
                body = bytes([body[0] ^ 0xFF]) + body[1:]
            stall = take("stall")
            cut = take("truncate")
            if stall or cut:
                spec = stall or cut
                self.record(status)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:spec["after_bytes"]])
                self.wfile.flush()
                if stall:
                    deadline = time.time() + spec.get("seconds", 20)
                    while time.time() < deadline:
                        time.sleep(0.1)
                self.close_connection = True
                return
            throttle = cfg.get("throttle")
            if throttle:
                return self.send_slowly(status, body, headers, throttle["bytes_per_second"])
        self.answer(status, body, headers)

    def send_slowly(self, status, body, headers, rate):
        self.record(status)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = max(1, rate // 20)
        for start in range(0, len(body), step):
            self.wfile.write(body[start:start + step])
            self.wfile.flush()
            time.sleep(0.05)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients abort stalled transfers on purpose; a reset connection is expected


def main():
    storage = Server(("127.0.0.2", 0), type("Storage", (Handler,), {"listener": "storage"}))
    front = Server(("127.0.0.1", 0), type("Front", (Handler,), {"storage_port": storage.server_address[1]}))
    for server in (front, storage):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"front": front.server_address[1], "storage": storage.server_address[1]}), flush=True)
    sys.stdin.read()  # until the test closes our stdin or dies


if __name__ == "__main__":
    main()
