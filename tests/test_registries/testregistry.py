#!/usr/bin/python3
"""Starts, stops and fills the registries the tests pull from (all on 127.0.0.1).

  testregistry.py start STATE_DIR     start (or reuse) the servers, write STATE_DIR/env
  testregistry.py push STATE_DIR FIXTURES_DIR
                                      push every OCI layout FIXTURES_DIR/oci-NAME as
                                      public/NAME and private/NAME (skipped when the
                                      storage already holds these exact fixture builds)
  testregistry.py stop STATE_DIR      stop exactly the processes `start` started

Servers (ports from the environment, defaults in brackets):
  plain  CAPSA_TEST_REGISTRY_PLAIN_PORT [5100]  HTTP, no auth; fixtures are pushed here
  token  CAPSA_TEST_REGISTRY_TOKEN_PORT [5101]  HTTPS + Bearer tokens from the token service
  auth   CAPSA_TEST_REGISTRY_AUTH_PORT  [5102]  HTTPS token service (token_service.py)
  basic  CAPSA_TEST_REGISTRY_BASIC_PORT [5103]  HTTPS + Basic auth (htpasswd, bcrypt)
The three registries share one storage directory. Each is Debian's docker-registry
(CNCF distribution 2.8) run with a generated config; the packaged one listens on every
interface. Secrets (API key, Basic password) reach servers through files and the
environment only, never argv.
"""
import datetime
import hashlib
import ipaddress
import json
import os
import secrets
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import bcrypt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

import push

HERE = os.path.dirname(os.path.abspath(__file__))
REGISTRY_BINARY = "/usr/bin/docker-registry"
ISSUER = "capsa-test-token-service"
SERVICE = "capsa-test-registry"
BASIC_USER = "capsa-basic"
HOST = "127.0.0.1"
SERVERS = ("plain", "token", "auth", "basic")
DEFAULT_PORTS = {"plain": 5100, "token": 5101, "auth": 5102, "basic": 5103}


def ports_from_env():
    return {name: int(os.environ.get("CAPSA_TEST_REGISTRY_%s_PORT" % name.upper(), default))
            for name, default in DEFAULT_PORTS.items()}


def write_file(path, data, mode=0o644):
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


# ---- certificates -----------------------------------------------------------------

def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def cert_pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def build_cert(subject_cn, key, issuer_name, issuer_key, ca, sans=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]))
               .issuer_name(issuer_name)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def ensure_certificates(state):
    """CA, a server certificate for 127.0.0.1 signed by it, and a self-signed token
    signing certificate. Kept across restarts so the CA path stays valid for clients."""
    if all(os.path.exists(os.path.join(state, f))
           for f in ("ca.pem", "server.pem", "server.key", "token-signing.pem", "token-signing.key")):
        return
    ca_key = new_key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "capsa test CA")])
    ca = build_cert("capsa test CA", ca_key, ca_name, ca_key, ca=True)
    server_key = new_key()
    # distribution and Go clients want the address in a SAN; CN is ignored.
    server = build_cert(HOST, server_key, ca_name, ca_key, ca=False,
                        sans=[x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName("localhost")])
    signing_key = new_key()
    signing_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
    signing = build_cert(ISSUER, signing_key, signing_name, signing_key, ca=False)
    write_file(os.path.join(state, "server.key"), key_pem(server_key), 0o600)
    write_file(os.path.join(state, "server.pem"), cert_pem(server) + cert_pem(ca))
    write_file(os.path.join(state, "token-signing.key"), key_pem(signing_key), 0o600)
    write_file(os.path.join(state, "token-signing.pem"), cert_pem(signing))
    write_file(os.path.join(state, "ca.pem"), cert_pem(ca))


def ensure_secrets(state):
    api_key_path = os.path.join(state, "api-key")
    if not os.path.exists(api_key_path):
        write_file(api_key_path, "nvapi-" + secrets.token_urlsafe(24) + "\n", 0o644)
    password_path = os.path.join(state, "basic-password")
    if not os.path.exists(password_path):
        # A ':' inside: Basic credentials split at the first colon only.
        write_file(password_path, secrets.token_urlsafe(12) + ":pw\n", 0o644)
    with open(password_path, encoding="utf-8") as f:
        password = f.read().strip()
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()
    write_file(os.path.join(state, "htpasswd"), "%s:%s\n" % (BASIC_USER, hashed), 0o644)


# ---- configs ----------------------------------------------------------------------

def registry_config(state, port, auth):
    lines = [
        "version: 0.1",
        "log:",
        "  level: info",
        "storage:",
        "  filesystem:",
        "    rootdirectory: %s" % json.dumps(os.path.join(state, "storage")),
        "  delete:",
        "    enabled: true",
        # No blob descriptor cache: blobs are re-read from disk on every request, so a
        # test may tamper with a stored blob and see the effect.
        "http:",
        "  addr: %s:%d" % (HOST, port),
        "  secret: %s" % secrets.token_hex(16),
    ]
    if auth:
        lines += ["  tls:",
                  "    certificate: %s" % json.dumps(os.path.join(state, "server.pem")),
                  "    key: %s" % json.dumps(os.path.join(state, "server.key"))]
        lines += ["auth:"] + ["  " + line for line in auth]
    return "\n".join(lines) + "\n"


def write_configs(state, ports):
    write_file(os.path.join(state, "plain.yml"), registry_config(state, ports["plain"], None), 0o600)
    token_auth = ["token:",
                  "  realm: https://%s:%d/token" % (HOST, ports["auth"]),
                  "  service: %s" % SERVICE,
                  "  issuer: %s" % ISSUER,
                  "  rootcertbundle: %s" % json.dumps(os.path.join(state, "token-signing.pem"))]
    write_file(os.path.join(state, "token.yml"), registry_config(state, ports["token"], token_auth), 0o600)
    basic_auth = ["htpasswd:",
                  "  realm: capsa-test-basic",
                  "  path: %s" % json.dumps(os.path.join(state, "htpasswd"))]
    write_file(os.path.join(state, "basic.yml"), registry_config(state, ports["basic"], basic_auth), 0o600)


# ---- processes --------------------------------------------------------------------

def command_for(state, name):
    if name == "auth":
        return ["/usr/bin/python3", os.path.join(HERE, "token_service.py")]
    return [REGISTRY_BINARY, "serve", os.path.join(state, name + ".yml")]


def token_service_env(state, ports):
    env = dict(os.environ)
    env.update({
        "CAPSA_TOKEN_ADDR": HOST,
        "CAPSA_TOKEN_PORT": str(ports["auth"]),
        "CAPSA_TOKEN_TLS_CERT": os.path.join(state, "server.pem"),
        "CAPSA_TOKEN_TLS_KEY": os.path.join(state, "server.key"),
        "CAPSA_TOKEN_SIGNING_CERT": os.path.join(state, "token-signing.pem"),
        "CAPSA_TOKEN_SIGNING_KEY": os.path.join(state, "token-signing.key"),
        "CAPSA_TOKEN_ISSUER": ISSUER,
        "CAPSA_TOKEN_SERVICE": SERVICE,
        "CAPSA_TOKEN_API_KEY_FILE": os.path.join(state, "api-key"),
    })
    return env


def pid_file(state, name):
    return os.path.join(state, name + ".pid")


def running_pid(state, name):
    """The pid recorded for `name` if that process still runs the command we started
    (guards against a recycled pid), else None."""
    try:
        with open(pid_file(state, name), encoding="utf-8") as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
    except (OSError, ValueError):
        return None
    return pid if argv == command_for(state, name) else None


def spawn(state, name, ports):
    log = open(os.path.join(state, name + ".log"), "wb")  # a fresh log per start
    env = token_service_env(state, ports) if name == "auth" else None
    # A new session and no inherited pipes: ctest must not wait for the daemons.
    process = subprocess.Popen(command_for(state, name), stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                               cwd=state, env=env)
    log.close()
    write_file(pid_file(state, name), "%d\n" % process.pid)
    return process


def answers(name, port, ca_path):
    """True once the server answers HTTP(S) on its port (any status counts)."""
    scheme = "http" if name == "plain" else "https"
    path = "/token" if name == "auth" else "/v2/"
    context = ssl.create_default_context(cafile=ca_path) if scheme == "https" else None
    try:
        urllib.request.urlopen("%s://%s:%d%s" % (scheme, HOST, port, path), timeout=2, context=context)
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False
    return True


def wait_until_answering(state, name, port, process=None, timeout=30):
    deadline = time.monotonic() + timeout
    ca_path = os.path.join(state, "ca.pem")
    while time.monotonic() < deadline:
        if answers(name, port, ca_path):
            return
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.1)
    sys.exit("testregistry: %s server on %s:%d did not answer; see %s"
             % (name, HOST, port, os.path.join(state, name + ".log")))


def port_in_use(port):
    with socket.socket() as s:
        return s.connect_ex((HOST, port)) == 0


def shell_quote_env(values):
    return "".join("%s=%s\n" % (k, shlex.quote(v)) for k, v in values.items())


def write_env(state, ports):
    with open(os.path.join(state, "api-key"), encoding="utf-8") as f:
        api_key = f.read().strip()
    with open(os.path.join(state, "basic-password"), encoding="utf-8") as f:
        password = f.read().strip()
    values = {
        "CAPSA_TEST_REGISTRY": "%s:%d" % (HOST, ports["plain"]),
        "CAPSA_TEST_REGISTRY_TOKEN": "%s:%d" % (HOST, ports["token"]),
        "CAPSA_TEST_REGISTRY_AUTH": "https://%s:%d/token" % (HOST, ports["auth"]),
        "CAPSA_TEST_REGISTRY_BASIC": "%s:%d" % (HOST, ports["basic"]),
        "CAPSA_TEST_REGISTRY_SERVICE": SERVICE,
        "CAPSA_TEST_CA": os.path.join(state, "ca.pem"),
        "CAPSA_TEST_API_KEY": api_key,
        "CAPSA_TEST_BASIC_USER": BASIC_USER,
        "CAPSA_TEST_BASIC_PASSWORD": password,
    }
    # The same values for shells (env) and for the C++ tests (env.json).
    write_file(os.path.join(state, "env"), shell_quote_env(values), 0o644)
    write_file(os.path.join(state, "env.json"), json.dumps(values, indent=1) + "\n", 0o644)


def servers_version(ports):
    """The ports and the servers' code: running servers are reused only while both match
    (a changed token_service.py must not keep answering from an old process)."""
    digest = hashlib.sha256()
    for name in ("testregistry.py", "token_service.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    return dict(ports, code=digest.hexdigest())


def start(state):
    os.makedirs(state, exist_ok=True)
    # The unprivileged test user reads env, ca.pem and the logs; keys stay 0600.
    os.chmod(state, 0o755)
    ports = ports_from_env()
    ports_path = os.path.join(state, "ports.json")
    try:
        with open(ports_path, encoding="utf-8") as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        recorded = None
    running = {name: running_pid(state, name) for name in SERVERS}
    if recorded == servers_version(ports) and all(running.values()) and os.path.exists(os.path.join(state, "env.json")):
        for name in SERVERS:
            wait_until_answering(state, name, ports[name])
        print("testregistry: reusing the servers in %s" % state)
        return
    stop(state, quiet=True)
    for name in SERVERS:
        if port_in_use(ports[name]):
            sys.exit("testregistry: port %d (%s) is taken by another process; pick other ports with "
                     "-DCAPSA_TEST_REGISTRY_%s_PORT=..." % (ports[name], name, name.upper()))
    ensure_certificates(state)
    ensure_secrets(state)
    write_configs(state, ports)
    os.makedirs(os.path.join(state, "storage"), exist_ok=True)
    processes = {name: spawn(state, name, ports) for name in SERVERS}
    for name in SERVERS:
        wait_until_answering(state, name, ports[name], processes[name])
    write_file(ports_path, json.dumps(servers_version(ports)) + "\n")
    write_env(state, ports)
    print("testregistry: started plain %d, token %d, auth %d, basic %d (state %s)"
          % (ports["plain"], ports["token"], ports["auth"], ports["basic"], state))


def stop(state, quiet=False):
    for name in SERVERS:
        pid = running_pid(state, name)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if running_pid(state, name) is None or not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.05)
            else:
                os.kill(pid, signal.SIGKILL)
            if not quiet:
                print("testregistry: stopped %s (pid %d)" % (name, pid))
        try:
            os.unlink(pid_file(state, name))
        except FileNotFoundError:
            pass


def main(argv):
    if len(argv) < 3 or argv[1] not in ("start", "stop", "push"):
        sys.exit(__doc__)
    state = os.path.abspath(argv[2])
    if argv[1] == "start":
        start(state)
    elif argv[1] == "stop":
        stop(state)
    else:
        if len(argv) != 4:
            sys.exit(__doc__)
        push.push_all(state, os.path.abspath(argv[3]), "%s:%d" % (HOST, ports_from_env()["plain"]))


if __name__ == "__main__":
    main(sys.argv)
