#!/bin/sh
# On a machine with an NVIDIA GPU and its driver: runs a capsa build's --nv,
# --device nvidia.com/gpu=all (CDI) and an --nv instance against the real driver, as root
# and as an unprivileged user, one PASS/FAIL line per check.
# Builds nothing: the image comes from tests/gpu/make-cuda-image.sh on a CPU machine.
#   tests/gpu/check.sh CAPSA_BINARY CUDA_SIF [UNPRIVILEGED_USER]
# The user defaults to capsa-test; unprivileged checks are skipped when not run as root.
# The CDI spec is written into a temporary directory given with --cdi-dirs: by
# `nvidia-ctk cdi generate` where the NVIDIA Container Toolkit is installed, else by
# write_cdi_spec below from the host's driver files (libcuda, nvidia-smi, /dev/nvidia*).
set -u
capsa="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
image="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
user="${3:-capsa-test}"
failed=0
cdi_dir="$(mktemp -d "${TMPDIR:-/tmp}/capsa-cdi.XXXXXX")"
chmod 755 "$cdi_dir"
trap 'rm -rf "$cdi_dir"' EXIT

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

# shellcheck disable=SC2317  # called through run_checks' RUNNER argument
as_user() {
  if command -v runuser >/dev/null 2>&1; then runuser -u "$user" -- "$@"; else su "$user" -s /bin/sh -c "$*"; fi
}

# A CDI spec (version 0.5.0, JSON) of one device, nvidia.com/gpu=all, from this host's
# driver: every /dev/nvidia* node, libcuda.so.1 and libnvidia-ml.so.1 (found with
# ldconfig -p) mounted into the loader's default directory /usr/lib/ARCH-linux-gnu (the
# host may keep them elsewhere, such as /usr/local/nvidia/lib64, where the image's
# loader would not look; nvidia-ctk mounts them at the host's paths and runs its
# update-ldcache hook instead), and nvidia-smi (found on PATH).
write_cdi_spec() {  # FILE
  nodes="" mounts="" libdir="/usr/lib/$(uname -m)-linux-gnu"
  for node in /dev/nvidia*; do
    [ -c "$node" ] && nodes="$nodes${nodes:+, }{\"path\": \"$node\"}"
  done
  for lib in libcuda.so.1 libnvidia-ml.so.1; do
    path="$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64|aarch64/ {print $NF; exit}')"
    [ -n "$path" ] && mounts="$mounts${mounts:+, }{\"hostPath\": \"$path\", \"containerPath\": \"$libdir/$lib\", \"options\": [\"ro\", \"nosuid\", \"nodev\", \"bind\"]}"
  done
  smi="$(command -v nvidia-smi || true)"
  [ -n "$smi" ] && mounts="$mounts${mounts:+, }{\"hostPath\": \"$smi\", \"containerPath\": \"/usr/bin/nvidia-smi\", \"options\": [\"ro\", \"nosuid\", \"nodev\", \"bind\"]}"
  printf '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "all", "containerEdits": {"deviceNodes": [%s]}}], "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "mounts": [%s]}}\n' \
    "$nodes" "$mounts" > "$1"
}

if command -v nvidia-ctk >/dev/null 2>&1 && nvidia-ctk cdi generate --output="$cdi_dir/nvidia.yaml" >/dev/null 2>&1; then
  echo "INFO CDI spec from $(nvidia-ctk --version 2>/dev/null | head -n 1)"
else
  write_cdi_spec "$cdi_dir/nvidia.json"
  echo "INFO CDI spec written from the host's driver files (no nvidia-ctk)"
fi
chmod -R a+rX "$cdi_dir"

run_checks() {  # LABEL RUNNER...
  label="$1"; shift
  check "$label: nvidia-smi -L" '^GPU 0' "$@" "$capsa" exec --nv "$image" nvidia-smi -L
  check "$label: libcuda in /.singularity.d/libs" 'libcuda.so.1' "$@" "$capsa" exec --nv "$image" ls /.singularity.d/libs
  check "$label: vector add" 'vector add OK' "$@" "$capsa" exec --nv "$image" vector-add
  check "$label: vector add --containall" 'vector add OK' "$@" "$capsa" exec --nv --containall "$image" vector-add
  # shellcheck disable=SC2016  # expanded by the container's shell
  check "$label: CUDA_VISIBLE_DEVICES through --cleanenv" '^0$' "$@" env CUDA_VISIBLE_DEVICES=0 \
    "$capsa" exec --nv --cleanenv "$image" sh -c 'echo $CUDA_VISIBLE_DEVICES'
  # CDI: the image's loader finds libcuda where the spec mounts it (nvidia-ctk's specs also
  # run its update-ldcache hook; the written spec mounts into the default directories).
  check "$label: CDI nvidia-smi -L" '^GPU 0' "$@" "$capsa" exec --cdi-dirs "$cdi_dir" \
    --device nvidia.com/gpu=all "$image" nvidia-smi -L
  check "$label: CDI vector add --containall" 'vector add OK' "$@" "$capsa" exec --cdi-dirs "$cdi_dir" \
    --device nvidia.com/gpu=all --containall "$image" vector-add
  # An instance started with --nv: its joins get the driver without a flag of their own.
  instance="capsa-gpu-check-$$"
  check "$label: instance start --nv" 'started' "$@" "$capsa" instance start --nv "$image" "$instance"
  check "$label: vector add in instance://" 'vector add OK' "$@" "$capsa" exec "instance://$instance" vector-add
  check "$label: instance stop" 'Stopping' "$@" "$capsa" instance stop "$instance"
}

run_checks "$(id -un)" env
if [ "$(id -u)" = 0 ] && id "$user" >/dev/null 2>&1; then
  run_checks "$user" as_user
else
  echo "SKIP unprivileged checks (run as root with an existing user: $user)"
fi
exit $failed
