#!/usr/bin/python3
"""A Library API server for capsa's tests: no packaged one exists.

Written from the community specification (singularityhub/library-api) and what
SingularityCE's client (scs-library-client) asks of it.

Pulling:
  GET /v1/images/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH
      -> 200 {"data": {"hash": "sha256.HEX", "size": N, "arch": ARCH, ...}}, 404 unknown
  GET /v1/imagefile/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH
      -> 303 to the blob store (a second server, named by another host name), or 200 with
         the bytes for images marked "direct"
  GET /blobs/INDEX/HEX on the blob store, with Range (206) or without (200)

Pushing (what scs-library-client's UploadImage sends; every write needs a token):
  GET/POST /v1/entities[/E], /v1/collections[/E/C], /v1/containers[/E/C/K]  find or create
  POST /v1/images {hash, description, container}                       the image record
  POST /v2/imagefile/ID/_multipart {filesize} -> {uploadID, totalParts, partSize, options}
  PUT  /v2/imagefile/ID/_multipart {partSize, uploadID, partNumber, sha256sum} -> {presignedURL}
  PUT  presignedURL (the blob store) with the part; x-amz-content-sha256 checked -> ETag
  PUT  /v2/imagefile/ID/_multipart_complete {uploadID, completedParts} -> the parts are joined
       and their sha256 must be the image's hash (400 otherwise); then the image is uploaded
  PUT  /v2/imagefile/ID/_multipart_abort {uploadID}
  POST /v2/imagefile/ID {filesize, sha256sum, md5sum} -> {uploadURL}; PUT uploadURL (the whole
       file); PUT /v2/imagefile/ID/_complete: the single-part upload, checked the same way
  GET/POST /v2/tags/CONTAINER_ID {Arch, Tag, ImageID}; GET/POST /v1/tags/CONTAINER_ID {Tag,
       ImageID}: only an uploaded image may be tagged (400 otherwise)
  An image's architecture is read from its SIF header when its upload completes.
Deleting and searching:
  DELETE /v1/images/E/C/K:TAG?arch=ARCH       the tag goes (404 when there is none)
  GET /v1/search?value=V&arch=A[&signed=true] -> {"data": {"entity": [], "collection": [],
       "container": [], "image": [...]}}: images whose entity, collection or container name
       holds V, built for A (a comma-separated list), with their tags

  GET /v1/token-status, /version and /assets/config/config.json: what a client's
      `remote login` and `remote status` ask (SingularityCE's token check, the library's
      version, Sylabs' list of services)

Failures on purpose, chosen by the names a test pushes to:
  entity "someoneelse"     exists and belongs to another user: creating anything in it is
                           refused (403)
  container "expires"      the token expires just before the tag is set (401 on the tags
                           endpoints)
  container "flaky"        the blob store breaks off the first upload of each part halfway
                           (one line per break in PORT_FILE.drops); the next one is taken
Each part the blob store accepts is a line "part N" in PORT_FILE.stored.

  [LIBRARY_API_VERSION=1.0.0] library_server.py CATALOG PORT_FILE [TOKEN_FILE]
With TOKEN_FILE, every /v1/ and /v2/ request must carry "Authorization: Bearer TOKEN" (the
file's first line); others get 401. Without it, any token is accepted, but writes still
need one. Requests that carried a token are counted in PORT_FILE.tokens (one line each,
"METHOD PATH") so tests can tell the token was sent; the blob store never needs one.
Uploads are kept in PORT_FILE.store/.
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
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

catalog_file, port_file = sys.argv[1], sys.argv[2]
required_token = None
if len(sys.argv) > 3:
    with open(sys.argv[3]) as f:
        required_token = f.readline().strip()
# LIBRARY_API_VERSION=1.0.0 plays a library older than the v2 upload and per-architecture
# tags: it takes POST /v1/imagefile/ID with the whole file instead.
api_version = os.environ.get("LIBRARY_API_VERSION", "2.0.0")
store_dir = port_file + ".store"
os.makedirs(store_dir, exist_ok=True)
log_lock = threading.Lock()
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

# What pushes created: records as the Library API returns them, by ID.
state = threading.RLock()
entities, collections, containers, pushed = {}, {}, {}, {}
uploads = {}  # uploadID -> {"image": ID, "parts": {N: (path, etag)}, "size": N}
PART_SIZE = 5 << 20  # the object store's smallest part (S3's)
SIF_ARCHES = ["unknown", "386", "amd64", "arm", "arm64", "ppc64", "ppc64le", "mips", "mipsle",
              "mips64", "mips64le", "s390x", "riscv64", "loong64"]


def append_line(suffix, line):
    with log_lock, open(port_file + suffix, "a") as log:
        log.write(line + "\n")


def new_id():
    return uuid.uuid4().hex[:24]


def add_entity(name, owner):
    entity = {"id": new_id(), "name": name, "description": "No description", "collections": [],
              "owner": owner}
    entities[entity["id"]] = entity
    return entity


add_entity("someoneelse", "someone else")


def find(table, **fields):
    for record in table.values():
        if all(record.get(k) == v for k, v in fields.items()):
            return record
    return None


def container_by_path(path):
    parts = path.split("/")
    if len(parts) != 3:
        return None
    entity = find(entities, name=parts[0])
    collection = entity and find(collections, name=parts[1], entity=entity["id"])
    return collection and find(containers, name=parts[2], collection=collection["id"])


def sif_arch(path):
    with open(path, "rb") as f:
        f.seek(45)
        code = f.read(2)
    try:
        return SIF_ARCHES[int(code)]
    except (ValueError, IndexError):
        return "unknown"


def image_view(image):
    """A pushed image as the Library API shows it."""
    container = containers[image["container"]]
    collection = collections[container["collection"]]
    entity = entities[collection["entity"]]
    tags = sorted(tag for arch_tags in container["archTags"].values()
                  for tag, image_id in arch_tags.items() if image_id == image["id"])
    return dict(image, entityName=entity["name"], collectionName=collection["name"],
                containerName=container["name"], tags=tags)


def pushed_image(path, arch):
    """The pushed image PATH (E/C/K:TAG) names for ARCH, or None."""
    name, _, tag = path.partition(":")
    container = container_by_path(name)
    if container is None:
        return None
    if tag.startswith("sha256."):
        image = find(pushed, container=container["id"], hash=tag)
        return image if image and image["arch"] in (None, arch) else None
    image_id = container["archTags"].get(arch, {}).get(tag)
    return pushed.get(image_id)


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

    def error(self, status, message):
        self.answer_json(status, {"error": {"code": status, "message": message}})

    def read_body(self):
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length) if length else b""


class Library(Quiet):
    def authorized(self, url):
        """Checks the token; False once an error was sent."""
        authorization = self.headers.get("Authorization", "")
        if authorization.startswith("Bearer "):
            append_line(".tokens", self.command + " " + url.path)
        api = url.path.startswith("/v1/") or url.path.startswith("/v2/")
        if api and required_token is not None and authorization != "Bearer " + required_token:
            self.error(401, "invalid token")
            return False
        if api and self.command != "GET" and not authorization.startswith("Bearer "):
            self.error(401, "a token is required to change the library")
            return False
        return True

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        arch = query.get("arch", ["amd64"])[0]
        if url.path == "/version":
            return self.answer_json(200, {"data": {"version": "1.0.0-capsa-test", "apiVersion": api_version}})
        if url.path == "/assets/config/config.json":
            base = "http://127.0.0.1:%d" % self.server.server_address[1]
            return self.answer_json(200, {"libraryAPI": {"uri": base}, "tokenAPI": {"uri": base}})
        if not self.authorized(url):
            return
        if url.path == "/v1/token-status":
            return self.answer_json(200, {"data": {"status": "valid"}})
        if url.path == "/v1/search":
            return self.search(query)
        with state:
            for prefix in ("/v1/entities/", "/v1/collections/", "/v1/containers/"):
                if url.path.startswith(prefix):
                    return self.get_model(prefix, url.path[len(prefix):])
            for prefix in ("/v1/tags/", "/v2/tags/"):
                if url.path.startswith(prefix):
                    container = containers.get(url.path[len(prefix):])
                    if container is None:
                        return self.error(404, "no such container")
                    tags = container["archTags"] if prefix == "/v2/tags/" else \
                        container["archTags"].get("amd64", {})
                    return self.answer_json(200, {"data": tags})
        for prefix in ("/v1/images/", "/v1/imagefile/"):
            if url.path.startswith(prefix):
                path = url.path[len(prefix):]
                break
        else:
            return self.error(404, "no such endpoint")
        with state:
            mine = pushed_image(path, arch)
            if mine is not None:
                if url.path.startswith("/v1/images/"):
                    return self.answer_json(200, {"data": image_view(mine)})
                if not mine["uploaded"]:
                    return self.error(404, "image not uploaded")
                return self.answer(303, b"", [("Location", "http://localhost:%d/blobs/%s" %
                                               (blob_port, mine["blob"]))])
        image = images.get(path)
        if image is None or (image["mode"] != "wrongarch" and image["arch"] != arch):
            return self.error(404, "image not found")
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

    def get_model(self, prefix, path):
        if prefix == "/v1/entities/":
            record = find(entities, name=path)
        elif prefix == "/v1/collections/":
            entity_name, _, name = path.partition("/")
            entity = find(entities, name=entity_name)
            record = entity and find(collections, name=name, entity=entity["id"])
        else:
            record = container_by_path(path)
        if record is None:
            return self.error(404, "not found")
        return self.answer_json(200, {"data": record})

    def search(self, query):
        value = query.get("value", [""])[0].lower()
        arches = query.get("arch", ["amd64"])[0].split(",")
        signed_only = query.get("signed", ["false"])[0] == "true"
        if len(value) < 3:
            return self.error(400, "search for at least 3 characters")
        found = []
        with state:
            for image in pushed.values():
                view = image_view(image)
                names = (view["entityName"], view["collectionName"], view["containerName"])
                if image["uploaded"] and image["arch"] in arches and any(value in n for n in names):
                    found.append(view)
        for entry in images.values():
            name, _, tag = entry["path"].partition(":")
            parts = name.split("/")
            if entry["arch"] in arches and any(value in n for n in parts) and not tag.startswith("sha256."):
                found.append({"id": entry["hex"][:24], "hash": "sha256." + entry["hex"], "arch": entry["arch"],
                              "entityName": parts[0], "collectionName": parts[1], "containerName": parts[2],
                              "tags": [tag], "description": "", "size": entry["size"]})
        if signed_only:  # this library finds no signature in any image
            found = []
        return self.answer_json(200, {"data": {"entity": [], "collection": [], "container": [], "image": found}})

    def do_POST(self):
        url = urlparse(self.path)
        body = self.read_body()
        if not self.authorized(url):
            return
        if url.path.startswith("/v1/imagefile/"):
            return self.upload_v1(url.path[len("/v1/imagefile/"):], body)
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self.error(400, "the body is not JSON")
        with state:
            if url.path == "/v1/entities":
                if find(entities, name=request.get("name")):
                    return self.error(409, "the entity exists")
                return self.answer_json(200, {"data": add_entity(request["name"], "you")})
            if url.path == "/v1/collections":
                entity = entities.get(request.get("entity"))
                if entity is None:
                    return self.error(400, "no such entity")
                if entity["owner"] != "you":
                    return self.error(403, "you may not push to entity " + entity["name"])
                record = {"id": new_id(), "name": request["name"], "entity": entity["id"],
                          "entityName": entity["name"], "description": request.get("description", ""),
                          "containers": []}
                collections[record["id"]] = record
                return self.answer_json(200, {"data": record})
            if url.path == "/v1/containers":
                collection = collections.get(request.get("collection"))
                if collection is None:
                    return self.error(400, "no such collection")
                record = {"id": new_id(), "name": request["name"], "collection": collection["id"],
                          "description": request.get("description", ""), "images": [], "imageTags": {},
                          "archTags": {}, "collectionName": collection["name"],
                          "entityName": collection["entityName"]}
                containers[record["id"]] = record
                return self.answer_json(200, {"data": record})
            if url.path == "/v1/images":
                container = containers.get(request.get("container"))
                if container is None:
                    return self.error(400, "no such container")
                record = {"id": new_id(), "hash": request["hash"], "container": container["id"],
                          "description": request.get("description", ""), "uploaded": False, "size": 0,
                          "arch": None, "blob": None}
                pushed[record["id"]] = record
                return self.answer_json(200, {"data": image_view(record)})
            parts = url.path.strip("/").split("/")
            if parts[:2] == ["v2", "imagefile"] and len(parts) == 4 and parts[3] == "_multipart":
                image = pushed.get(parts[2])
                if image is None:
                    return self.error(404, "no such image")
                size = int(request.get("filesize", 0))
                if size < PART_SIZE:
                    return self.error(400, "a multipart upload is for files of 5 MiB or more")
                upload_id = new_id()
                uploads[upload_id] = {"image": image["id"], "parts": {}, "size": size}
                return self.answer_json(200, {"data": {
                    "uploadID": upload_id, "totalParts": (size + PART_SIZE - 1) // PART_SIZE,
                    "partSize": PART_SIZE, "options": {"s3compliant": "true"}}})
            if parts[:2] == ["v2", "imagefile"] and len(parts) == 3:
                image = pushed.get(parts[2])
                if image is None:
                    return self.error(404, "no such image")
                upload_id = new_id()
                uploads[upload_id] = {"image": image["id"], "parts": {}, "size": int(request.get("filesize", 0))}
                return self.answer_json(200, {"data": {
                    "uploadURL": "http://localhost:%d/upload/%s/1?X-Amz-SignedHeaders=host%%3Bx-amz-content-sha256"
                                 % (blob_port, upload_id)}})
            for version, prefix in (("v2", "/v2/tags/"), ("v1", "/v1/tags/")):
                if url.path.startswith(prefix):
                    return self.set_tag(version, url.path[len(prefix):], request)
        return self.error(404, "no such endpoint")

    def upload_v1(self, image_id, body):
        """An old library's upload: the whole file in one POST, checked against the hash."""
        with state:
            image = pushed.get(image_id)
            if image is None:
                return self.error(404, "no such image")
            path = os.path.join(store_dir, image_id + ".v1")
            with open(path, "wb") as f:
                f.write(body)
            upload_id = new_id()
            uploads[upload_id] = {"image": image_id, "parts": {1: (path, "")}, "size": len(body)}
            return self.complete(image, upload_id, [1])

    def set_tag(self, version, container_id, request):
        container = containers.get(container_id)
        if container is None:
            return self.error(404, "no such container")
        if container["name"] == "expires":
            return self.error(401, "token expired")
        image = pushed.get(request.get("ImageID"))
        if image is None or image["container"] != container_id:
            return self.error(400, "no such image in this container")
        if not image["uploaded"]:
            return self.error(400, "the image is not uploaded")
        arch = request.get("Arch") if version == "v2" else image["arch"]
        if arch != image["arch"]:
            return self.error(400, "the image is built for %s, not %s" % (image["arch"], arch))
        container["archTags"].setdefault(arch, {})[request["Tag"]] = image["id"]
        append_line(".tagged", "%s/%s/%s:%s %s" % (container["entityName"], container["collectionName"],
                                                   container["name"], request["Tag"], arch))
        return self.answer_json(200, {"data": {}})

    def do_PUT(self):
        url = urlparse(self.path)
        body = self.read_body()
        if not self.authorized(url):
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self.error(400, "the body is not JSON")
        parts = url.path.strip("/").split("/")
        if parts[:2] != ["v2", "imagefile"] or len(parts) != 4:
            return self.error(404, "no such endpoint")
        with state:
            image = pushed.get(parts[2])
            if image is None:
                return self.error(404, "no such image")
            action = parts[3]
            if action == "_complete":
                upload_id = next((k for k, u in uploads.items() if u["image"] == image["id"] and 1 in u["parts"]),
                                 None)
                if upload_id is None:
                    return self.error(400, "nothing was uploaded")
                return self.complete(image, upload_id, [1])
            upload = uploads.get(request.get("uploadID"))
            if upload is None or upload["image"] != image["id"]:
                return self.error(404, "no such upload")
            if action == "_multipart":
                number = int(request["partNumber"])
                return self.answer_json(200, {"data": {"presignedURL": "http://localhost:%d/upload/%s/%d?sha256=%s" % (
                    blob_port, request["uploadID"], number, request.get("sha256sum", ""))}})
            if action == "_multipart_abort":
                del uploads[request["uploadID"]]
                return self.answer_json(200, {"data": {}})
            if action == "_multipart_complete":
                numbers = []
                for part in request.get("completedParts", []):
                    number = int(part["partNumber"])
                    if upload["parts"].get(number, (None, None))[1] != part["token"]:
                        return self.error(400, "part %d was not uploaded with that ETag" % number)
                    numbers.append(number)
                return self.complete(image, request["uploadID"], numbers)
        return self.error(404, "no such endpoint")

    def complete(self, image, upload_id, numbers):
        """Joins the parts; the image is uploaded only when their sha256 is its hash."""
        upload = uploads[upload_id]
        target = os.path.join(store_dir, image["id"])
        digest = hashlib.sha256()
        with open(target + ".joining", "wb") as out:
            for number in sorted(numbers):
                with open(upload["parts"][number][0], "rb") as part:
                    data = part.read()
                digest.update(data)
                out.write(data)
        size = os.path.getsize(target + ".joining")
        if "sha256." + digest.hexdigest() != image["hash"] or size != upload["size"]:
            os.unlink(target + ".joining")
            return self.error(400, "the uploaded file's checksum is not the image's hash")
        os.rename(target + ".joining", target)
        del uploads[upload_id]
        image.update(uploaded=True, size=size, arch=sif_arch(target), blob="pushed/" + image["id"])
        blobs[image["blob"]] = {"file": target, "mode": "normal"}
        container = containers[image["container"]]
        return self.answer_json(200, {"data": {
            "quota": {"quotaTotal": 0, "quotaUsage": sum(i["size"] for i in pushed.values())},
            "containerUrl": "/library/%s/%s/%s" % (container["entityName"], container["collectionName"],
                                                   container["name"])}})

    def do_DELETE(self):
        url = urlparse(self.path)
        if not self.authorized(url):
            return
        arch = parse_qs(url.query).get("arch", ["amd64"])[0]
        if not url.path.startswith("/v1/images/"):
            return self.error(404, "no such endpoint")
        path = url.path[len("/v1/images/"):]
        with state:
            name, _, tag = path.partition(":")
            container = container_by_path(name)
            if container is not None and tag in container["archTags"].get(arch, {}):
                del container["archTags"][arch][tag]
                return self.answer_json(200, {"data": {}})
            entry = images.get(path)
            if entry is not None and entry["arch"] == arch:
                del images[path]
                return self.answer_json(200, {"data": {}})
        return self.error(404, "image not found")


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

    def do_PUT(self):
        """A presigned upload URL: /upload/UPLOAD_ID/PART_NUMBER."""
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        length = int(self.headers.get("Content-Length", "0"))
        with state:
            upload = uploads.get(parts[1]) if len(parts) == 3 and parts[0] == "upload" else None
            flaky = upload is not None and containers[pushed[upload["image"]]["container"]]["name"] == "flaky"
        if upload is None:
            self.read_body()
            return self.error(404, "no such upload")
        number = int(parts[2])
        if flaky:
            with dropped_lock:
                drop = (parts[1], number) not in dropped
                dropped.add((parts[1], number))
            if drop:  # take half the part, then hang up without an answer
                self.rfile.read(length // 2)
                append_line(".drops", "part %d" % number)
                self.close_connection = True
                self.connection.shutdown(2)
                return
        data = self.rfile.read(length)
        if len(data) != length:
            return self.error(400, "the part was cut short")
        sha256 = hashlib.sha256(data).hexdigest()
        signed = parse_qs(url.query).get("sha256", [""])[0] or self.headers.get("x-amz-content-sha256", sha256)
        if self.headers.get("x-amz-content-sha256") not in (None, signed) or sha256 != signed:
            return self.error(400, "XAmzContentSHA256Mismatch")
        path = os.path.join(store_dir, "%s.%d" % (parts[1], number))
        with open(path, "wb") as f:
            f.write(data)
        etag = '"%s"' % hashlib.md5(data).hexdigest()
        with state:
            upload["parts"][number] = (path, etag)
        append_line(".stored", "part %d" % number)
        self.answer(200, b"", [("ETag", etag)])


library = ThreadingHTTPServer(("127.0.0.1", 0), Library)
store = ThreadingHTTPServer(("127.0.0.1", 0), BlobStore)
blob_port = store.server_address[1]
threading.Thread(target=store.serve_forever, daemon=True).start()
with open(port_file + ".tmp", "w") as f:
    f.write("%d %d\n" % (library.server_address[1], blob_port))
os.rename(port_file + ".tmp", port_file)
library.serve_forever()
