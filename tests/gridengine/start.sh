#!/bin/sh
# Starts a private Grid Engine cell on this machine for the Grid Engine tests (tests/mpi):
# Debian's gridengine-master/-exec binaries with a cell of our own, nothing of the system's
# (the package's /var/lib/gridengine/default cell and its ports are left alone):
#   STATE/root/            SGE_ROOT: links to the installed bin, lib, utilbin and util,
#                          and the cell `capsa` (common/: bootstrap, act_qmaster, settings.sh)
#   STATE/spool/           the qmaster's classic (flat file) spool and the execd's
#   sge_qmaster, sge_execd on 127.0.0.1, ports $CAPSA_TEST_SGE_PORT and the next one
#                          (default 6640, 6641), as root (admin_user none)
# One execution host (this machine) in queue `capsa.q` with 8 slots, and the parallel
# environment `mpi` (Open MPI's recommended settings: $fill_up, control_slaves TRUE,
# job_is_first_task FALSE) attached to it. Every user may submit, root too (min_uid 0).
# STATE/env is the file to source (SGE_ROOT, SGE_CELL, the ports, PATH). Needs root;
# idempotent. Stop with tests/gridengine/stop.sh STATE.
#   tests/gridengine/start.sh STATE
set -eu
state=$1
port=${CAPSA_TEST_SGE_PORT:-6640}
installed=/var/lib/gridengine
[ "$(id -u)" -eq 0 ] || { echo "gridengine/start.sh: the daemons need root" >&2; exit 1; }
[ -x /usr/sbin/sge_qmaster ] && [ -x /usr/sbin/sge_execd ] && command -v qconf >/dev/null ||
  { echo "gridengine/start.sh: Grid Engine missing (scripts/install-deps.sh installs gridengine-master, gridengine-exec, gridengine-client)" >&2; exit 1; }
mkdir -p "$state"
state=$(cd "$state" && pwd)
chmod 755 "$state"
host=$(hostname)

cat > "$state/env" <<ENV
SGE_ROOT=$state/root; export SGE_ROOT
SGE_CELL=capsa; export SGE_CELL
SGE_QMASTER_PORT=$port; export SGE_QMASTER_PORT
SGE_EXECD_PORT=$((port + 1)); export SGE_EXECD_PORT
ENV
. "$state/env"
common="$SGE_ROOT/$SGE_CELL/common"

# Ready: the execution host reports (its architecture shows) and the queue has no state
# letter (u unknown, a alarm, d disabled, E error).
ready() { qstat -f -q capsa.q 2>/dev/null | grep -q "^capsa\.q@.* lx-amd64 *$"; }
if ready; then
  echo "gridengine: already running for $state"
  exit 0
fi
"$(dirname "$0")/stop.sh" "$state" >/dev/null 2>&1 || true
for p in "$port" $((port + 1)); do
  if ss -Htln "sport = :$p" | grep -q .; then echo "gridengine/start.sh: port $p is taken by another program" >&2; exit 1; fi
done

# SGE_ROOT: the installed programs, and a fresh cell.
rm -rf "$SGE_ROOT" "$state/spool"
mkdir -p "$common" "$state/spool/qmaster" "$state/spool/execd" "$state/spool/classic"
for dir in bin lib utilbin util; do ln -s "$installed/$dir" "$SGE_ROOT/$dir"; done
echo "$host" > "$common/act_qmaster"
# Grid Engine compares the name a peer's address resolves to with the name the peer gives:
# here 127.0.0.1 resolves to localhost (and maybe other names) while the host calls itself
# $host. host_aliases makes them one host.
aliases=$(getent hosts 127.0.0.1 | awk '{ for (i = 2; i <= NF; i++) print $i }' | grep -vx "$host" | tr '\n' ' ')
echo "$host $aliases" > "$common/host_aliases"
cat > "$common/bootstrap" <<BOOT
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         classic
spooling_lib            libspoolc
spooling_params         $common;$state/spool/classic
binary_path             /usr/sbin
qmaster_spool_dir       $state/spool/qmaster
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
BOOT
# The package's defaults, but our spool, root allowed (tests submit as root and as the
# test user), and quick load reports and scheduling so that a test does not wait.
sed -e "s|^execd_spool_dir .*|execd_spool_dir        $state/spool/execd|" \
    -e 's|^min_uid .*|min_uid                0|' -e 's|^min_gid .*|min_gid                0|' \
    -e 's|^load_report_time .*|load_report_time       00:00:05|' \
    -e 's|^mailer .*|mailer                 /bin/true|' \
    /usr/share/gridengine/default-configuration > "$state/configuration"
/usr/lib/gridengine/spoolinit classic libspoolc "$common;$state/spool/classic" init
/usr/lib/gridengine/spooldefaults configuration "$state/configuration"
/usr/lib/gridengine/spooldefaults complexes /usr/share/gridengine/util/resources/centry
/usr/lib/gridengine/spooldefaults usersets /usr/share/gridengine/util/resources/usersets
/usr/lib/gridengine/spooldefaults managers root
/usr/lib/gridengine/spooldefaults operators root
/usr/lib/gridengine/spooldefaults adminhosts "$host" 2>/dev/null || true

CAPSA_TEST_SGE_STATE=$state /usr/sbin/sge_qmaster
tries=0
until qconf -sh >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -lt 100 ] || { echo "gridengine/start.sh: sge_qmaster did not answer; see $state/spool/qmaster/messages" >&2; exit 1; }
  sleep 0.1
done
qconf -ah "$host" >/dev/null 2>&1 || true
qconf -as "$host" >/dev/null 2>&1

# The scheduler: every few seconds is the default; a test job should start at once.
qconf -ssconf | sed -e 's|^schedule_interval .*|schedule_interval                 0:0:1|' \
  -e 's|^flush_submit_sec .*|flush_submit_sec                  1|' \
  -e 's|^flush_finish_sec .*|flush_finish_sec                  1|' > "$state/sched.conf"
qconf -Msconf "$state/sched.conf" >/dev/null 2>&1

cat > "$state/pe.mpi" <<PE
pe_name            mpi
slots              999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    \$fill_up
control_slaves     TRUE
job_is_first_task  FALSE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
PE
qconf -Ap "$state/pe.mpi" >/dev/null 2>&1
cat > "$state/host" <<HOST
hostname              $host
load_scaling          NONE
complex_values        NONE
user_lists            NONE
xuser_lists           NONE
projects              NONE
xprojects             NONE
usage_scaling         NONE
report_variables      NONE
HOST
qconf -Ae "$state/host" >/dev/null 2>&1
qconf -sq all.q 2>/dev/null >/dev/null && qconf -dq all.q >/dev/null 2>&1
# A queue from the built-in template, with our host, slots and parallel environment, and
# no load threshold: a busy 2-core machine would put it in alarm state and start nothing.
qconf -sq | sed -e 's|^qname .*|qname                 capsa.q|' -e "s|^hostlist .*|hostlist              $host|" \
  -e 's|^slots .*|slots                 8|' -e 's|^pe_list .*|pe_list               mpi|' \
  -e 's|^shell .*|shell                 /bin/sh|' -e 's|^load_thresholds .*|load_thresholds       NONE|' \
  > "$state/queue"
qconf -Aq "$state/queue" >/dev/null 2>&1

CAPSA_TEST_SGE_STATE=$state /usr/sbin/sge_execd
tries=0
until ready; do
  tries=$((tries + 1))
  [ "$tries" -lt 300 ] || { echo "gridengine/start.sh: the execution host did not report; qstat -f:" >&2; qstat -f >&2; exit 1; }
  sleep 0.1
done
echo "gridengine: cell capsa on $host, qmaster port $port ($state)"
