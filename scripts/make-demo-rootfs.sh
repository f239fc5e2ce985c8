#!/bin/sh
# Writes a small container root file system to DIR, laid out as Apptainer images are
# (/.singularity.d with runscript, labels, environment), with a static busybox when the
# host has one. Used by the demo; later demos grow it into a pullable OCI image.
set -eu
dir=$1
mkdir -p "$dir"/.singularity.d/env "$dir"/.singularity.d/actions "$dir"/.singularity.d/libs \
  "$dir"/bin "$dir"/etc "$dir"/tmp "$dir"/proc "$dir"/sys "$dir"/dev "$dir"/home "$dir"/root "$dir"/var/tmp
if [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q static; then
  cp /bin/busybox "$dir/bin/busybox"
  ln -sf busybox "$dir/bin/sh"
fi
cat > "$dir/.singularity.d/runscript" <<'RUN'
#!/bin/sh
echo "Hello from the capsa demo image"
exec "$@"
RUN
cat > "$dir/.singularity.d/env/90-environment.sh" <<'ENV'
#!/bin/sh
export DEMO_GREETING="hello from capsa"
ENV
cat > "$dir/.singularity.d/labels.json" <<'LABELS'
{
	"org.label-schema.schema-version": "1.0",
	"org.opencontainers.image.title": "capsa demo",
	"org.opencontainers.image.description": "A tiny image made by scripts/make-demo-rootfs.sh"
}
LABELS
cat > "$dir/.singularity.d/Singularity" <<'DEF'
Bootstrap: scratch

%runscript
    echo "Hello from the capsa demo image"
DEF
cat > "$dir/.singularity.d/runscript.help" <<'HELP'
The capsa demo image: prints a greeting, then runs its arguments.
HELP
chmod 755 "$dir/.singularity.d/runscript" "$dir/.singularity.d/env/90-environment.sh"
ln -sf .singularity.d/runscript "$dir/singularity"
: > "$dir/etc/hosts"
: > "$dir/etc/resolv.conf"
