#!/bin/sh
# Layer -> squashfs conversion speed and memory, not a test. Builds one gzip and one
# zstd layer from files of this machine's /usr (about SIZE_MB MB, FILES files), then
# converts each with capsa's converter (tests/convert/convert_bench) and, for
# comparison, with the Apptainer way (tar -x into a directory + mksquashfs -comp gzip)
# and squashfs-tools-ng's tar2sqfs. Prints wall and CPU time, MB/s of uncompressed layer
# per wall second, peak RSS (GNU time) and output size.
#   bench/convert.sh [WORKDIR] [SIZE_MB] [FILES]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/tmp/capsa-bench-convert}
size_mb=${2:-300}
files=${3:-20000}
bench="$root/build/tests/convert/convert_bench"
[ -x "$bench" ] || { echo "build first: cmake --build build --target convert_bench" >&2; exit 1; }
mkdir -p "$work"
cd "$work"

if [ ! -f layer.tar ]; then
  /usr/bin/python3 - "$size_mb" "$files" <<'PY'
import os, sys
limit, count = int(sys.argv[1]) << 20, int(sys.argv[2])
total, chosen = 0, []
for top in ("/usr/share", "/usr/include", "/usr/lib", "/usr/bin"):
    for d, _, names in os.walk(top):
        for n in sorted(names):
            p = os.path.join(d, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            s = os.path.getsize(p)
            if total + s > limit or s > 8 << 20:  # many files, as in real images
                continue
            chosen.append(p); total += s
            if len(chosen) >= count and total >= limit * 0.9:
                break
        if len(chosen) >= count and total >= limit * 0.9:
            break
open("files.txt", "w").write("\n".join(chosen) + "\n")
print(f"{len(chosen)} files, {total >> 20} MiB")
PY
  tar -cf layer.tar -T files.txt 2>/dev/null
  gzip -6 -c layer.tar > layer.tar.gz
  zstd -q -3 -c layer.tar > layer.tar.zst
fi
raw_mb=$(( $(stat -c %s layer.tar) / 1048576 ))
echo "layer: $raw_mb MiB uncompressed, $(wc -l < files.txt) files, $(nproc) CPUs"

measure() {  # NAME COMMAND...
  name=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o time.txt "$@" >/dev/null 2>log.txt || { echo "$name failed:"; cat log.txt; return; }
  read -r wall rss user sys < time.txt
  out=$(stat -c %s out.sqfs 2>/dev/null || echo 0)
  printf '%-30s %7.2f s wall %7.2f s CPU %7.1f MB/s %5d MiB RSS %5d MiB out\n' "$name" "$wall" \
    "$(echo "$user + $sys" | bc -l)" "$(echo "$raw_mb / $wall" | bc -l)" $((rss / 1024)) $((out / 1048576))
  rm -f out.sqfs
}

measure "capsa zstd (gzip layer)" "$bench" out.sqfs zstd 0 layer.tar.gz
measure "capsa zstd (zstd layer)" "$bench" out.sqfs zstd 0 layer.tar.zst
measure "capsa gzip (gzip layer)" "$bench" out.sqfs gzip 0 layer.tar.gz
measure "tar2sqfs zstd (gzip layer)" sh -c 'zcat layer.tar.gz | tar2sqfs -q -c zstd -f out.sqfs'
measure "tar -x + mksquashfs gzip" sh -c 'rm -rf rootfs && mkdir rootfs && tar -xzf layer.tar.gz -C rootfs && mksquashfs rootfs out.sqfs -comp gzip -noappend -quiet && rm -rf rootfs'
