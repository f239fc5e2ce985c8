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

With --tar, the tree is read from a tar stream instead (FILE, or - for standard input),
for example a squashfs image listed without unpacking or privileges:
  sqfs2tar -r . image.squashfs | tree-manifest.py --tar -
Hard links in the archive count as links of their target; `.` appears only when the
archive has a root entry (sqfs2tar -r .).

Usage: tree-manifest.py DIR
       tree-manifest.py --tar FILE|-
"""
import hashlib
import os
import stat
import sys
import tarfile

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


TAR_TYPES = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.CONTTYPE: "file",
             tarfile.DIRTYPE: "dir", tarfile.SYMTYPE: "symlink", tarfile.CHRTYPE: "char",
             tarfile.BLKTYPE: "block", tarfile.FIFOTYPE: "fifo"}


def tar_path(name):
    while name.startswith("./"):
        name = name[2:]
    name = name.rstrip("/")
    return name or "."


def describe_tar(stream):
    """{path: fields} for a tar stream; hard links share their target's fields."""
    entries, group_of, group_size = {}, {}, {}
    with tarfile.open(fileobj=stream, mode="r|*") as tar:
        for member in tar:
            path = tar_path(member.name)
            if member.islnk():
                target = tar_path(member.linkname)
                group = group_of.get(target, target)
                group_of[path] = group
                group_size[group] = group_size.get(group, 1) + 1
                entries[path] = entries[target][:]
                continue
            kind = TAR_TYPES.get(member.type, "other")
            size = sha = target = "-"
            if kind == "file":
                data = tar.extractfile(member)
                digest = hashlib.sha256()
                for chunk in iter(lambda: data.read(1 << 20), b""):
                    digest.update(chunk)
                size, sha = str(member.size), digest.hexdigest()
            elif kind == "symlink":
                target = member.linkname
                size = str(len(os.fsencode(target)))
            elif kind in ("char", "block"):
                target = "%d,%d" % (member.devmajor, member.devminor)
            entries[path] = [escape(path), kind, "%04o" % stat.S_IMODE(member.mode), str(member.uid),
                             str(member.gid), size, sha, escape(target), "-" if kind == "dir" else "1"]
    for path, group in group_of.items():
        for name in (path, group):
            entries[name][-1] = str(group_size[group])
    for path, fields in entries.items():
        fields[0] = escape(path)
    return entries


def main(argv):
    out = sys.stdout.buffer
    if len(argv) == 3 and argv[1] == "--tar":
        stream = sys.stdin.buffer if argv[2] == "-" else open(argv[2], "rb")
        entries = describe_tar(stream)
        for path in sorted(entries, key=os.fsencode):
            out.write(os.fsencode("\t".join(entries[path])) + b"\n")
        return
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit(__doc__)
    for relative in sorted(walk(argv[1]), key=os.fsencode):
        out.write(os.fsencode(describe(argv[1], relative)) + b"\n")


if __name__ == "__main__":
    main(sys.argv)
