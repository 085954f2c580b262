#!/usr/bin/env bash
# Times the README's set-up in a fresh virtual environment, as a new user
# runs it: the first install (builds the C++ core), a second install into the
# same environment (must rebuild nothing), and the footprint Lucid adds
# beyond NumPy. Prints one summary line per figure; full pip logs go to
# $LOG_DIR (default: a temporary folder).
#
#   scripts/measure_install.sh                      # the README's commands
#   FIRST='.' SECOND='.' scripts/measure_install.sh --no-index --find-links wheels/   # offline
#
# FIRST / SECOND: what each pip command installs (default the README's
# '.[examples]' and 'torch==2.13.0 .[test]'); extra arguments go to every pip
# call. Each pip call runs with -v, as the README's commands do, so the
# build's progress lines show.
set -euo pipefail
cd "$(dirname "$0")/.."
first=${FIRST:-.[examples]}
second=${SECOND:-torch==2.13.0 .[test]}
python=${PYTHON:-python3}
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
venv=$(mktemp -d)/venv
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip)
"${pip[@]}" install -q "$@" numpy  # NumPy is not counted: every user of Lucid has it
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
before=$(du -sk "$site" | cut -f1)

timed_install() {  # label, spec (word-split on purpose: "torch==2.13.0 .[test]")
  local label=$1 spec=$2 times compiled
  # Wall time, and CPU time (user + sys of pip and the build it ran): on a
  # busy machine the CPU time / cores is what the wall time would be alone.
  times=$( { TIMEFORMAT='%R %U %S'; time "${pip[@]}" install -v "${@:3}" $spec > "$log_dir/$label.log" 2>&1; } 2>&1)
  compiled=$(grep -cE '^\s*\[[0-9]+/[0-9]+\] Building' "$log_dir/$label.log" || true)
  read -r wall user sys <<< "$times"
  echo "$label install ($spec): ${wall} s wall, $(awk "BEGIN {print $user + $sys}") s CPU," \
    "$compiled translation units compiled"
}
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
VENDOR=$(grep -m1 vendor_id /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
echo "CPU: $CPU ($VENDOR), $(nproc) CPUs usable, load $(cut -d' ' -f1-3 /proc/loadavg)"
timed_install first "$first" "$@"
after=$(du -sk "$site" | cut -f1)
lucid_kb=$(du -sk "$site"/lucid "$site"/lucid_engine* "$site"/scipy_openblas32* 2>/dev/null | awk '{s+=$1} END {print s}')
echo "footprint: Lucid and its BLAS $((lucid_kb / 1024)) MB; site-packages grew by $(((after - before) / 1024)) MB" \
  "(with the first command's extras)"
timed_install second "$second" "$@"
echo "logs: $log_dir"
