"""Pushes the OCI test images (FIXTURES_DIR/oci-NAME, made by tests/fixtures/make-oci-NAME.sh)
into the registries' shared storage through the plain instance, as public/NAME:TAG and
private/NAME:TAG for every tag in the layout's index.json.

skopeo does the pushing (`--all` so indexes keep every platform, `--preserve-digests` so
the registry serves the layout's exact manifest bytes). STATE_DIR/pushed.json records
which fixture build (its cache directory, named by script hash) each repository holds;
unchanged builds are not pushed again.
"""
import json
import os
import subprocess
import sys

NAMESPACES = ("public", "private")
# Images for bench/ only, pushed when their variable is 1 (as they are built).
ONLY_IF = {"large": "CAPSA_LARGE_FIXTURES"}


def fixture_layouts(fixtures):
    """{NAME: real path} for every oci-NAME fixture that holds an OCI layout."""
    layouts = {}
    for entry in sorted(os.listdir(fixtures)):
        path = os.path.join(fixtures, entry)
        # build-all.sh keeps oci-NAME as a link to the current build oci-NAME-HASH.
        if entry.startswith("oci-") and os.path.islink(path) \
                and os.path.exists(os.path.join(path, "index.json")):
            layouts[entry[len("oci-"):]] = os.path.realpath(path)
    return layouts


def tags_of(layout):
    with open(os.path.join(layout, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    return [m["annotations"]["org.opencontainers.image.ref.name"]
            for m in index.get("manifests", [])
            if "org.opencontainers.image.ref.name" in m.get("annotations", {})]


def stored(state, repository):
    return os.path.isdir(os.path.join(state, "storage", "docker", "registry", "v2", "repositories", repository))


def skopeo_copy(source, destination):
    argv = ["skopeo", "--insecure-policy", "copy", "--quiet", "--all", "--preserve-digests",
            "--src-tls-verify=false", "--dest-tls-verify=false", source, destination]
    result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("testregistry: copying %s to %s failed: %s" % (source, destination, result.stderr.strip()))


def push_all(state, fixtures, registry):
    record_path = os.path.join(state, "pushed.json")
    try:
        with open(record_path, encoding="utf-8") as f:
            pushed = json.load(f)
    except (OSError, ValueError):
        pushed = {}
    for name, layout in fixture_layouts(fixtures).items():
        if name in ONLY_IF and os.environ.get(ONLY_IF[name]) != "1":
            continue
        build = os.path.basename(layout)
        if pushed.get(name) == build and all(stored(state, "%s/%s" % (ns, name)) for ns in NAMESPACES):
            print("testregistry: %s already pushed (%s)" % (name, build))
            continue
        tags = tags_of(layout)
        for tag in tags:
            public = "docker://%s/public/%s:%s" % (registry, name, tag)
            skopeo_copy("oci:%s:%s" % (layout, tag), public)
            # Registry to registry, skopeo mounts the blobs across repositories: no upload.
            skopeo_copy(public, "docker://%s/private/%s:%s" % (registry, name, tag))
        pushed[name] = build
        tmp = record_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(pushed, f, indent=1, sort_keys=True)
        os.replace(tmp, record_path)
        print("testregistry: pushed %s (%s) as {%s}/%s:{%s}" % (name, build, ",".join(NAMESPACES), name, ",".join(tags)))
