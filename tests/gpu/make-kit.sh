#!/bin/sh
# Packs what tests/gpu/check.sh needs into OUTDIR, for a GPU machine that has neither
# Debian's libraries nor a network (the one the project borrows runs Ubuntu):
#   OUTDIR/capsa      the lean runner, stripped, its RPATH set to $ORIGIN/lib
#   OUTDIR/lib/       every library it links except glibc's and the C++ runtime's, which
#                     any newer system has (DT_RPATH, unlike RUNPATH, also serves the
#                     libraries' own dependencies)
#   OUTDIR/cuda.sif   from make-cuda-image.sh (needs nvcc here)
#   OUTDIR/check.sh   this directory's check
# On the GPU machine, as root:  sh OUTDIR/check.sh OUTDIR/capsa OUTDIR/cuda.sif [USER]
# (copy OUTDIR somewhere USER can read first, such as /tmp).
#   tests/gpu/make-kit.sh OUTDIR [CAPSA]     CAPSA defaults to build/src/cli/capsa
# Needs: patchelf, strip, and what make-cuda-image.sh needs.
set -eu
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
capsa="${2:-$here/../../build/src/cli/capsa}"
command -v patchelf >/dev/null || { echo "make-kit.sh: patchelf not found (apt-get install patchelf)" >&2; exit 1; }
[ -x "$capsa" ] || { echo "make-kit.sh: $capsa is not built (scripts/build.sh all)" >&2; exit 1; }
rm -rf "${out:?}/lib" "${out:?}/capsa"
mkdir -p "$out/lib"
cp "$capsa" "$out/capsa"
strip "$out/capsa"
# shellcheck disable=SC2016  # $ORIGIN is for the loader
patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$out/capsa"
ldd "$capsa" | awk '/=>/ {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libstdc++* | libgcc_s* | libpthread* | libdl.so* | librt.so* | libresolv*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
"$here/make-cuda-image.sh" "$out" >/dev/null
cp "$here/check.sh" "$out/check.sh"
echo "$out"
