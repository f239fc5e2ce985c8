#!/usr/bin/python3
"""Prints one line per entry of the tree under DIR, sorted by path, so that two trees
(umoci's reference rootfs and capsa's image) can be compared with `diff`:

  PATH TYPE MODE UID GID SIZE SHA256 TARGET LINKS        (tab-separated)

PATH is relative (`.` for DIR itself); TYPE one of dir file symlink char block fifo
socket; MODE four octal digits (setuid/setgid/sticky included); SIZE and SHA256 for
files (SIZE also for symlinks), `-` otherwise; TARGET the symlink target or `MAJOR,MINOR`
of a device; LINKS the hard link count of non-directories (directory counts depend on
the filesystem). Tabs, newlines and backslashes in names are escaped as \\t \\n \\\\.
Never follows symlinks.

Usage: tree-manifest.py DIR
"""
import hashlib
import os
import stat
import sys

TYPES = ((stat.S_ISDIR, "dir"), (stat.S_ISREG, "file"), (stat.S_ISLNK, "symlink"),
         (stat.S_ISCHR, "char"), (stat.S_ISBLK, "block"), (stat.S_ISFIFO, "fifo"),
         (stat.S_ISSOCK, "socket"))


def escape(name):
    return name.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def describe(root, relative):
    path = os.path.join(root, relative) if relative != "." else root
    st = os.lstat(path)
    kind = next(name for test, name in TYPES if test(st.st_mode))
    size = sha = target = "-"
    if kind == "file":
        size, sha = str(st.st_size), file_sha256(path)
    elif kind == "symlink":
        target = os.readlink(path)
        size = str(len(os.fsencode(target)))
    elif kind in ("char", "block"):
        target = "%d,%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
    links = "-" if kind == "dir" else str(st.st_nlink)
    fields = [escape(relative), kind, "%04o" % stat.S_IMODE(st.st_mode), str(st.st_uid), str(st.st_gid),
              size, sha, escape(target), links]
    return "\t".join(fields)


def walk(root):
    yield "."
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            yield os.path.relpath(os.path.join(dirpath, name), root)


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit(__doc__)
    out = sys.stdout.buffer
    for relative in sorted(walk(argv[1]), key=os.fsencode):
        out.write(os.fsencode(describe(argv[1], relative)) + b"\n")


if __name__ == "__main__":
    main(sys.argv)
