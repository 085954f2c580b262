#!/usr/bin/env bash
# Builds the C++ core and the Python extension with AddressSanitizer and
# UndefinedBehaviorSanitizer (-O1 -g) into build/asan, then runs the test
# suite under them and reports every finding.
#
# Usage: scripts/sanitize.sh [pytest arguments]     (default: -n 2 -q tests)
#        scripts/sanitize.sh -q tests/test_ops_sort.py -k cumsum
#
# The first build takes long (~25 min on two busy cores); later runs rebuild
# only what changed. Python itself is not instrumented, so the ASan runtime
# is preloaded (with libstdc++, so exceptions thrown through uninstrumented
# frames are intercepted consistently). Reports go to build/asan/reports/
# (one file per process, ASan's and UBSan's); the script prints them and
# exits non-zero when there is any report or a failing test.
set -uo pipefail
cd "$(dirname "$0")/.."

# CMake takes CXXFLAGS and LDFLAGS when it first configures build/asan.
# UBSan reports and carries on (every finding of a run gets logged); ASan
# stops the process at its first report.
export CXXFLAGS="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer"
export LDFLAGS="-fsanitize=address,undefined"
export LUCID_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug"
env_line="$(scripts/dev_build.sh asan)" || { echo "sanitizer build failed" >&2; exit 2; }
eval "$env_line"

reports="build/asan/reports"
rm -rf "$reports" && mkdir -p "$reports"
cxx="${CXX:-c++}"
export LD_PRELOAD="$("$cxx" -print-file-name=libasan.so) $("$cxx" -print-file-name=libstdc++.so)"
# Leaks: Python and PyTorch keep memory alive until exit by design.
# allocator_may_return_null: a huge allocation raises MemoryError instead of
# aborting (the tests ask for impossible sizes on purpose).
# PyTorch (loaded in the same process as the oracle) frees some memory with a
# different operator than it allocated with; those reports are not ours.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:alloc_dealloc_mismatch=0:new_delete_type_mismatch=0:log_path=$PWD/$reports/asan:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$PWD/$reports/ubsan"
export PYTHONFAULTHANDLER=1

if [ "$#" -eq 0 ]; then set -- -n 2 -q tests; fi
python -m pytest "$@" -p no:cacheprovider
status=$?
unset LD_PRELOAD

found=0
for f in "$reports"/*; do
  [ -e "$f" ] || continue
  found=$((found + 1))
  echo "==== $f"
  head -n 60 "$f"
done
echo "sanitizer reports: $found (in $reports); pytest exit status: $status"
[ "$found" -eq 0 ] && [ "$status" -eq 0 ]
