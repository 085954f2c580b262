#!/usr/bin/env bash
# One GPU run: report the toolchain, build, run the cuda tests, the cuda
# benchmark (every variant) and a profile of one fused step. Usage: scripts/cuda_run.sh [WHEEL_DIR] [pytest args...]
# (WHEEL_DIR: local wheels for what the machine lacks; no network needed).
# STAGES picks what runs after the build (default "tests bench profile";
# "first" times first calls with a cold and a warm kernel cache);
# "suite" runs the whole test suite with cuda as the default device
# (LUCID_TEST_DEVICE=cuda), its log in $OUT/suite.log; "gpt_small" the
# GPT-2-small-like step in float32 and bf16 autocast (GPT_SMALL_VARIANTS).
set -uo pipefail
cd "$(dirname "$0")/.."
command -v python >/dev/null || python() { python3 "$@"; }  # some images have python3 only
wheels="${1:-}"
shift || true
echo "== toolchain"
python --version
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
command -v nvcc >/dev/null && nvcc --version | tail -1
python -m pip list 2>/dev/null | grep -i -E "^(pybind11|cmake|ninja|numpy|pytest|torch|jax|nvidia-cu(blas|da-nvrtc))[ -]" 
if [ -n "$wheels" ]; then
  for pkg in pybind11 cmake ninja nlohmann_json scipy_openblas32 pytest execnet xdist:pytest-xdist crc32c safetensors; do
    python -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('${pkg%%:*}') is None)" 2>/dev/null \
      || python -m pip install --quiet --no-deps --no-index --find-links "$wheels" "${pkg#*:}" 2>&1 | tail -1
  done
fi
export PATH="$(python -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
echo "== build"
# The system compiler: an image whose CXX links libstdc++ statically into each
# shared library puts two libstdc++ copies in one process, and formatting a
# number in a stream (error messages) then crashes.
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
# a build folder outside the copied tree survives between runs on a warm machine
mkdir -p /tmp/lucid-gpu-build && rm -rf build && ln -s /tmp/lucid-gpu-build build
t0=$(date +%s)
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
# -k 0: every compile error in one run
{ cmake -S . -B build/gpu -G Ninja -DLUCID_BUILD_PYTHON=ON -DCMAKE_BUILD_TYPE=Release && ninja -k 0 -C build/gpu; } \
  >build-gpu.log 2>&1 || { cp build-gpu.log "${OUT:-/tmp}/"; grep -E "error" build-gpu.log | sort -u | head -60; exit 1; }
env_line="$(scripts/dev_build.sh gpu 2>>build-gpu.log)"
[ -n "$env_line" ] || { grep -E -B2 -A6 "error|FAILED|Error" build-gpu.log | head -80; exit 1; }
eval "$env_line"
echo "built in $(( $(date +%s) - t0 )) s"
export LUCID_CUDA_CACHE="${LUCID_CUDA_CACHE:-/tmp/lucid-cuda-cache}"
python -c "import lucid; print('cuda available:', lucid.cuda.is_available(), lucid.cuda.unavailable_reason()); print(lucid.cuda.get_device_name())"
# full logs under $OUT (the device tool's) when set
logs="${OUT:-/tmp}"
timeout_opt=$(python -c "import pytest_timeout" 2>/dev/null && echo "--timeout=120")
stages=" ${STAGES:-tests bench profile} "
if [[ $stages == *" tests "* ]]; then
  echo "== tests"
  timeout 200 python -m pytest -q -rfEs $timeout_opt tests/test_cuda.py tests/test_cuda_compile.py "$@" >"$logs/tests.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$logs/tests.log" | tail -60
fi
if [[ $stages == *" suite "* ]]; then
  echo "== suite on cuda"
  LUCID_TEST_DEVICE=cuda timeout "${SUITE_TIMEOUT:-420}" python -m pytest -q -rfE -p no:cacheprovider \
    -n "$(( $(nproc) / 2 ))" $timeout_opt tests "$@" >"$logs/suite.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$logs/suite.log" | tail -40
fi
if [[ $stages == *" bench "* ]]; then
  echo "== benchmark"
  timeout 330 python -m benchmarks --device cuda ${BENCH_ARGS:-} 2>&1 | tee "$logs/bench.log" | tail -40
fi
if [[ $stages == *" gpt_small "* ]]; then
  echo "== gpt_small, float32 and bfloat16 autocast"
  for precision in float32 bfloat16; do
    timeout 240 python -m benchmarks --device cuda --workloads gpt_small --precision "$precision" --steps 20 \
      --variants "${GPT_SMALL_VARIANTS:-lucid fused_step,torch eager fused opt,torch graph}" 2>&1 |
      tee -a "$logs/gpt_small.log" | grep -v -i warn | tail -6
  done
fi
if [[ $stages == *" first "* ]]; then
  echo "== first call (cold and warm kernel cache)"
  timeout 240 python -m benchmarks.cuda_first_call 2>&1 | tee "$logs/first.log" | tail -12
fi
if [[ $stages == *" profile "* ]]; then
  echo "== profile"
  { timeout 60 python -m benchmarks.cuda_profile --fixed-cost
    for w in ${PROFILE_WORKLOADS:-gpt_tiny}; do timeout 60 python -m benchmarks.cuda_profile --workload "$w" --top 15; done
  } 2>&1 | tee "$logs/profile.log" | tail -60
fi
