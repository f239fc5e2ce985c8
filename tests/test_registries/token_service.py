#!/usr/bin/python3
"""Token service for the test registry, answering the way nvcr.io's /proxy_auth does.

  GET /token?service=SVC&scope=repository:NAME:pull[&scope=...][&account=...]

Distribution's token protocol (docs/content/spec/auth/token.md) with NGC's credential
convention: user `$oauthtoken`, password = the API key. Grants:
  * no Authorization header: pull on repositories under `public/` only; a scope for any
    other repository is refused with 401 (what the tests of anonymous pulls expect);
  * Basic `$oauthtoken:<API key>`: pull on every repository;
  * Basic `short-lived:<API key>`: like `$oauthtoken`, but the registry accepts the
    token for only CAPSA_TEST_TOKEN_SHORT_LIFETIME seconds (default 3), so a client must
    fetch a new one mid-pull (tests of token refresh);
  * Basic `refresh-ANYTHING:<API key>`: like `$oauthtoken`, except that the first token
    issued for each (account, scopes) is already expired: the registry answers 401 to it
    and a correct client fetches a new token and retries. Deterministic; a test picks a
    fresh ANYTHING so that parallel tests do not share the "first";
  * anything else: 401.
What is granted is the intersection of what is asked and what is allowed, as real token
servers do: `pull`, plus `push` for `$oauthtoken` alone (the tests of `capsa push`);
`?expires_in=N` shortens a token's life for direct tests.

The response carries both `token` and `access_token` (clients accept either) and
`expires_in`. Tokens are RS256 JWTs whose `x5c` header holds the signing certificate,
which the registry finds in its `auth.token.rootcertbundle`.

Configuration comes from the environment (never argv, so the API key is not visible in
the process list): CAPSA_TOKEN_ADDR, CAPSA_TOKEN_PORT, CAPSA_TOKEN_TLS_CERT,
CAPSA_TOKEN_TLS_KEY, CAPSA_TOKEN_SIGNING_CERT, CAPSA_TOKEN_SIGNING_KEY,
CAPSA_TOKEN_ISSUER, CAPSA_TOKEN_SERVICE, CAPSA_TOKEN_API_KEY_FILE.
"""
import base64
import binascii
import hmac
import http.server
import json
import os
import secrets
import ssl
import sys
import threading
import time
import urllib.parse

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization

# distribution 2.8 accepts `exp` up to this many seconds in the past (token.Leeway).
REGISTRY_LEEWAY = 60
NORMAL_LIFETIME = 300
OAUTH_USER = "$oauthtoken"
SHORT_LIVED_USER = "short-lived"
REFRESH_PREFIX = "refresh-"


class Settings:
    def __init__(self, env):
        self.addr = env.get("CAPSA_TOKEN_ADDR", "127.0.0.1")
        self.port = int(env["CAPSA_TOKEN_PORT"])
        self.tls_cert = env["CAPSA_TOKEN_TLS_CERT"]
        self.tls_key = env["CAPSA_TOKEN_TLS_KEY"]
        self.issuer = env["CAPSA_TOKEN_ISSUER"]
        self.service = env["CAPSA_TOKEN_SERVICE"]
        self.short_lifetime = int(env.get("CAPSA_TEST_TOKEN_SHORT_LIFETIME", "3"))
        with open(env["CAPSA_TOKEN_API_KEY_FILE"], encoding="utf-8") as f:
            self.api_key = f.read().strip()
        with open(env["CAPSA_TOKEN_SIGNING_KEY"], "rb") as f:
            self.signing_key = serialization.load_pem_private_key(f.read(), password=None)
        with open(env["CAPSA_TOKEN_SIGNING_CERT"], "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
        self.x5c = [base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()]


def parse_scope(scope):
    """`repository:NAME:a,b` -> (NAME, [a, b]); None for anything else (ignored)."""
    kind, sep, rest = scope.partition(":")
    name, sep2, actions = rest.rpartition(":")
    if kind != "repository" or not sep or not sep2 or not name:
        return None
    return name, [a for a in actions.split(",") if a]


def basic_credentials(header):
    """(user, password) from an `Authorization: Basic` header, None if malformed."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")  # passwords may contain ':'
    return (user, password) if sep else None


class TokenHandler(http.server.BaseHTTPRequestHandler):
    settings = None  # set before serving
    protocol_version = "HTTP/1.1"
    refreshed = set()  # (account, scopes) that already got their expired first token
    refreshed_lock = threading.Lock()

    def log_message(self, fmt, *args):  # the request line never holds a secret
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            return self.reply(404, {"errors": [{"code": "NOT_FOUND", "message": "only /token is served"}]})
        query = urllib.parse.parse_qs(url.query)
        if query.get("service", [self.settings.service])[0] != self.settings.service:
            return self.reply(400, {"errors": [{"code": "INVALID_REQUEST", "message": "unknown service"}]})
        account, lifetime = self.authenticate()
        if account is False:
            return self.unauthorized("bad credentials")
        access = []
        # Several `scope` parameters, each possibly several space-separated scopes.
        for scope in (s for value in query.get("scope", []) for s in value.split()):
            parsed = parse_scope(scope)
            if parsed is None:
                continue
            name, actions = parsed
            if account is None and not name.startswith("public/"):
                return self.unauthorized("anonymous access to %s is not allowed" % name)
            granted = [a for a in actions if a == "pull" or (a == "push" and account == OAUTH_USER)]
            access.append({"type": "repository", "name": name, "actions": granted})
        if "expires_in" in query:
            if not query["expires_in"][0].isdigit():
                return self.reply(400, {"errors": [{"code": "INVALID_REQUEST", "message": "bad expires_in"}]})
            lifetime = max(1, min(lifetime, int(query["expires_in"][0])))
        # Reported as valid for `lifetime`: the client learns otherwise only from the 401.
        expired = bool(account) and account.startswith(REFRESH_PREFIX) \
            and self.first_for(account, query.get("scope", []))
        self.reply(200, self.issue(account or "", access, lifetime, expired))

    def first_for(self, account, scopes):
        key = (account, tuple(sorted(scopes)))
        with self.refreshed_lock:
            if key in self.refreshed:
                return False
            self.refreshed.add(key)
            return True

    def authenticate(self):
        """(account, lifetime): account None = anonymous, False = rejected."""
        header = self.headers.get("Authorization")
        if header is None:
            return None, NORMAL_LIFETIME
        creds = basic_credentials(header)
        if creds is None:
            return False, 0
        user, password = creds
        if not hmac.compare_digest(password.encode(), self.settings.api_key.encode()):
            return False, 0
        if user == OAUTH_USER:
            return user, NORMAL_LIFETIME
        if user == SHORT_LIVED_USER:
            return user, self.settings.short_lifetime
        if user.startswith(REFRESH_PREFIX) and len(user) > len(REFRESH_PREFIX):
            return user, NORMAL_LIFETIME
        return False, 0

    def issue(self, subject, access, lifetime, expired=False):
        now = int(time.time())
        # The registry tolerates an expired `exp` for REGISTRY_LEEWAY seconds; lifetimes
        # shorter than that are only observable if `exp` is moved back by the leeway.
        exp = now + lifetime if lifetime >= REGISTRY_LEEWAY else now + lifetime - REGISTRY_LEEWAY
        if expired:
            exp = now - 2 * REGISTRY_LEEWAY
        claims = {
            "iss": self.settings.issuer,
            "sub": subject,
            "aud": self.settings.service,  # a string: distribution 2.8 rejects an array
            "exp": exp,
            "nbf": now - 1,
            "iat": now,
            "jti": secrets.token_hex(16),
            "access": access,
        }
        token = jwt.encode(claims, self.settings.signing_key, algorithm="RS256",
                           headers={"x5c": self.settings.x5c})
        issued = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        return {"token": token, "access_token": token, "expires_in": lifetime, "issued_at": issued}

    def unauthorized(self, why):
        self.reply(401, {"errors": [{"code": "UNAUTHORIZED", "message": why}]},
                   {"WWW-Authenticate": 'Basic realm="capsa test token service"'})

    def reply(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def main():
    settings = Settings(os.environ)
    TokenHandler.settings = settings
    server = http.server.ThreadingHTTPServer((settings.addr, settings.port), TokenHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(settings.tls_cert, settings.tls_key)
    # The handshake then runs in each request's thread, so a client that connects and
    # stalls cannot block the accept loop.
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.serve_forever()


if __name__ == "__main__":
    main()
