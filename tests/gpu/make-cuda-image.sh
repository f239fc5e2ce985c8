#!/bin/sh
# Builds OUTDIR/cuda.sif for tests/gpu/check.sh, on a CPU machine with nvcc (the GPU
# machine needs nothing from the network). The image is small rather than a Debian
# minbase (no debootstrap or mirror needed): busybox as its shell, the host's loader and
# the C/C++ runtime libraries the program and the driver need (found with ldd), and
# /usr/bin/vector-add: tests/gpu/vector_add.cu with the CUDA runtime linked statically,
# so only the driver (libcuda.so.1, brought by --nv) comes from the GPU host.
# Needs: nvcc (CUDA toolkit), busybox (static), gensquashfs, siftool.
set -eu
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$nvcc" ] || { echo "make-cuda-image.sh: nvcc not found (set NVCC or install the CUDA toolkit)" >&2; exit 1; }
root="$out/cuda-rootfs"
rm -rf "$root"
mkdir -p "$root/bin" "$root/usr/bin" "$root/etc" "$root/tmp"
# sm_75..sm_90 plus PTX (CUDA 13 dropped sm_70), so the driver can JIT for newer GPUs.
"$nvcc" -O2 -cudart static -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -o "$root/usr/bin/vector-add" "$here/vector_add.cu"
# The program's own libraries, and the glibc ones the driver's libcuda.so.1 and
# nvidia-smi still name (libpthread, libdl, librt: empty since glibc 2.34, but needed).
libc="$(ldd "$root/usr/bin/vector-add" | awk '$1 ~ /^libc\.so/ {print $3}')"
{ ldd "$root/usr/bin/vector-add" | awk '/=>/ {print $3} /^\t\// {print $1}'
  for extra in libpthread.so.0 libdl.so.2 librt.so.1 libm.so.6; do echo "$(dirname "$libc")/$extra"; done
} | sort -u | while read -r lib; do
  [ -n "$lib" ] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp "$(command -v busybox)" "$root/bin/busybox"
for tool in sh ls cat echo test env; do ln -sf busybox "$root/bin/$tool"; done
gensquashfs --pack-dir "$root" --all-root --quiet --force -c gzip "$out/cuda-rootfs.squashfs"
rm -f "$out/cuda.sif"
siftool new "$out/cuda.sif"
siftool add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 "$out/cuda.sif" "$out/cuda-rootfs.squashfs"
rm -rf "$root" "$out/cuda-rootfs.squashfs"
echo "$out/cuda.sif"
