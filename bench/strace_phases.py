#!/usr/bin/python3
"""The phases of container starts, from `strace -f -ttt` traces (one file per start):
the same milestones for any runtime that mounts a squashfs and pivots into it (ch-run,
capsa), so that their breakdowns can be put side by side where one of them has no marks
of its own. strace slows every system call: compare the shares, not the milliseconds,
with bench/phases.c's figures.

  strace_phases.py TRACE...    prints the median ms of each phase over the traces
"""
import re
import statistics
import sys

LINE = re.compile(r"^(\d+) +(\d+\.\d+) (.*)$")

MILESTONES = [
    ("namespaces", lambda call: call.startswith("unshare(") and "CLONE_NEWNS" in call),
    # An unfinished call (another thread or process ran meanwhile) counts from its start.
    ("image-mounted", lambda call: call.startswith("mount(") and ('"fuse' in call or '"squashfs"' in call)),
    ("root-entered", lambda call: call.startswith("pivot_root(")),
]


def phases_of(path):
    start = end = exec_at = None
    found = {}
    for line in open(path):
        match = LINE.match(line)
        if not match:
            continue
        at, call = float(match.group(2)), match.group(3)
        if start is None and call.startswith("execve("):
            start = at
        for name, test in MILESTONES:
            if name not in found and test(call):
                found[name] = at
        if call.startswith("execve(") and start is not None and at > start:
            exec_at = at  # the last execve: the container's command
        if call.startswith("+++ exited"):
            end = at
    if start is None or end is None or exec_at is None:
        return None
    marks = [("start", start)] + sorted(found.items(), key=lambda item: item[1]) + [("exec", exec_at), ("exit", end)]
    return {f"{a}>{b}": (t2 - t1) * 1e3 for (a, t1), (b, t2) in zip(marks, marks[1:])}, (end - start) * 1e3


def main():
    runs = [phases for phases in map(phases_of, sys.argv[1:]) if phases]
    if not runs:
        sys.exit("strace_phases.py: no complete trace")
    names = []
    for phases, _ in runs:
        for name in phases:
            if name not in names:
                names.append(name)
    print("%-40s %9s" % ("phase (strace, %d starts)" % len(runs), "median ms"))
    for name in names:
        values = [phases[name] for phases, _ in runs if name in phases]
        print("%-40s %9.3f" % (name, statistics.median(values)))
    print("%-40s %9.3f" % ("total", statistics.median(total for _, total in runs)))


if __name__ == "__main__":
    main()
