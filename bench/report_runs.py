#!/usr/bin/python3
"""Prints the table of bench/lib.sh's `run` results and each tool's ratios to capsa's.

  report_runs.py RESULTS TITLE [RATIO_FIELD...]
RESULTS: lines "NAME wall user sys rss_kb peak_disk_bytes output_bytes", capsa's first.
RATIO_FIELD: besides wall and cpu, the fields whose ratio is printed (rss, disk, size).
When both capsa-gzip and apptainer ran, their wall ratio too (the same compression)."""
import sys

results, title, fields = sys.argv[1], sys.argv[2], sys.argv[3:] or ["rss", "size"]
rows = [line.split() for line in open(results)]
r = {n: dict(wall=float(w), cpu=float(u) + float(s), rss=int(k) / 1024, disk=int(p) / 2**20, size=int(z) / 2**20)
     for n, w, u, s, k, p, z in rows}
names = {"rss": "peak RSS", "disk": "peak disk", "size": "output size"}
print(title)
print(f"{'tool':14} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'peak disk MiB':>14} {'output MiB':>11}")
for n, v in r.items():
    print(f"{n:14} {v['wall']:8.1f} {v['cpu']:8.1f} {v['rss']:13.0f} {v['disk']:14.0f} {v['size']:11.0f}")
c = r["capsa"]
for n, v in r.items():
    if n == "capsa":
        continue
    extra = ", ".join(f"{names[f]} {v[f] / max(c[f], 1e-9):.2f}x" for f in fields)
    print(f"{n}/capsa: wall {v['wall'] / c['wall']:.2f}x, cpu {v['cpu'] / c['cpu']:.2f}x, {extra}")
if "capsa-gzip" in r and "apptainer" in r:
    g, a = r["capsa-gzip"], r["apptainer"]
    print(f"apptainer/capsa-gzip: wall {a['wall'] / g['wall']:.2f}x, output size {g['size'] / a['size']:.2f}x of apptainer's")
