#!/bin/sh
# On a machine with an NVIDIA GPU and its driver: runs a capsa build's --nv against the
# real driver, as root and as an unprivileged user, one PASS/FAIL line per check.
# Builds nothing: the image comes from tests/gpu/make-cuda-image.sh on a CPU machine.
#   tests/gpu/check.sh CAPSA_BINARY CUDA_SIF [UNPRIVILEGED_USER]
# The user defaults to capsa-test; unprivileged checks are skipped when not run as root.
set -u
capsa="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
image="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
user="${3:-capsa-test}"
failed=0

check() {  # NAME EXPECTED-PATTERN COMMAND...
  name="$1"; pattern="$2"; shift 2
  output="$("$@" 2>&1)"; status=$?
  if [ $status -eq 0 ] && printf '%s\n' "$output" | grep -q -- "$pattern"; then
    echo "PASS $name"
  else
    echo "FAIL $name (exit $status): $(printf '%s' "$output" | tail -n 3 | tr '\n' ' ')"
    failed=1
  fi
}

as_user() {
  if command -v runuser >/dev/null 2>&1; then runuser -u "$user" -- "$@"; else su "$user" -s /bin/sh -c "$*"; fi
}

run_checks() {  # LABEL RUNNER...
  label="$1"; shift
  check "$label: nvidia-smi -L" '^GPU 0' "$@" "$capsa" exec --nv "$image" nvidia-smi -L
  check "$label: libcuda in /.singularity.d/libs" 'libcuda.so.1' "$@" "$capsa" exec --nv "$image" ls /.singularity.d/libs
  check "$label: vector add" 'vector add OK' "$@" "$capsa" exec --nv "$image" vector-add
  check "$label: vector add --containall" 'vector add OK' "$@" "$capsa" exec --nv --containall "$image" vector-add
  check "$label: CUDA_VISIBLE_DEVICES through --cleanenv" '^0$' "$@" env CUDA_VISIBLE_DEVICES=0 \
    "$capsa" exec --nv --cleanenv "$image" sh -c 'echo $CUDA_VISIBLE_DEVICES'
}

run_checks "$(id -un)" env
if [ "$(id -u)" = 0 ] && id "$user" >/dev/null 2>&1; then
  run_checks "$user" as_user
else
  echo "SKIP unprivileged checks (run as root with an existing user: $user)"
fi
exit $failed
