# Sourced on the GPU machine at the repository root: `. scripts/device-env.sh KIT` unpacks the
# kit of scripts/device-kit and gives steps that each check the call's time first, so that a
# call stopped at its limit still returns what it measured (a call killed by the device tool's
# limit returns nothing):
#   table BENCH...        every row of each bench binary but its forced trials (FILTER, default
#                         -ours-), one process a binary, JSON and log to $OUT
#   suite TEST...         test binaries, JOBS at once (default 6), each under TLIM s (300)
#   san TOOL TEST [SPEC]  one test (Catch2 SPEC) under compute-sanitizer TOOL
#   finish                tars $OUT into the device tool's out folder (res.tar.xz); it also
#                         runs when the sourcing shell exits
# Environment: END, the seconds the call may use from the sourcing on (default 560; set it from
# the run's limit_s, which may be less than the timeout asked for), MIN_TIME (Google Benchmark's
# minimum time a benchmark, a plain number of seconds: Debian's 1.7.1 ignores "0.05s" and runs
# its 0.5 s default), SUF (suffix of a table's files). A failing step is logged with its exit
# status and the next one runs (no step stops the shell, even under set -e). A step still
# running at its limit gets SIGTERM, and SIGKILL 10 s later. NVLink multicast stays off in
# every program this runs.
T0=$SECONDS
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
K=$(cd "${1:?usage: . scripts/device-env.sh KIT}" && pwd)
# The device tool's out folder, and the results so far, kept across a second sourcing in the
# same shell.
if [ "${OUT:-}" != /tmp/device-kit-out ]; then
  SNAP=${OUT:?device-env.sh: set OUT to the device tool out folder}
  rm -rf /tmp/device-kit-out
fi
export OUT=/tmp/device-kit-out
mkdir -p "$OUT"
for p in "$K"/p_*.tar.xz; do [ -f "$p" ] && tar xJf "$p" -C "$K"; done
# OpenCV (the image tests' oracle): the kit's (device-kit's `opencv`), else DEVMAT_OPENCV_DIR or
# .carry/opencv as carried.
ocv=$K/opencv
[ -d "$ocv/lib" ] || ocv=${DEVMAT_OPENCV_DIR:-$PWD/.carry/opencv}
export LD_LIBRARY_PATH=$K/lib:$ocv/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) || GPU="no nvidia-smi"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true; date -u; } \
  >"$OUT/machine.txt" 2>&1
echo "GPU: $GPU ($(date -u))"

# compute-sanitizer's flags, shared with scripts/gpu-check
. "$(dirname "${BASH_SOURCE[0]}")/sanitizer.sh"

left() { echo $((${END:-560} - (SECONDS - T0))); }
is_h200() { [[ $GPU == *H200* ]]; }
# limited SECONDS COMMAND...: COMMAND under timeout (SIGKILL 10 s after SIGTERM); prints nothing,
# returns its status without tripping set -e.
limited() {
  local s=$1 rc=0
  shift
  timeout -k 10 "$s" "$@" || rc=$?
  return $rc
}

table() {
  local b l t rc
  export BENCHMARK_MIN_TIME=${MIN_TIME:-0.05}
  for b in "$@"; do
    l=$(left)
    [ "$l" -lt 50 ] && { echo "skip $b: $l s left" | tee -a "$OUT/steps.txt"; continue; }
    t=$SECONDS rc=0
    limited $((l - 35)) "$K/bin/$b" --benchmark_filter="${FILTER:--ours-}" --benchmark_out="$OUT/$b${SUF:-}.json" \
      --benchmark_out_format=json >"$OUT/$b${SUF:-}.log" 2>&1 || rc=$?
    echo "$b${SUF:-} rc=$rc $((SECONDS - t)) s" | tee -a "$OUT/steps.txt"
  done
}

suite() {
  local j=${JOBS:-6} tl=${TLIM:-300} t l
  for t in "$@"; do
    [ -x "$K/bin/$t" ] || { echo "$t missing" >>"$OUT/steps.txt"; continue; }
    l=$(left)
    [ "$l" -lt $((tl + 30)) ] && tl=$((l - 30))
    [ "$tl" -lt 20 ] && { echo "skip $t: $l s left" >>"$OUT/steps.txt"; continue; }
    (s=$SECONDS rc=0
     limited "$tl" "$K/bin/$t" >"$OUT/$t.log" 2>&1 || rc=$?
     echo "$t rc=$rc $((SECONDS - s)) s $(grep -E 'test cases|All tests passed' "$OUT/$t.log" | tail -1)" >>"$OUT/steps.txt") &
    while [ "$(jobs -rp | wc -l)" -ge "$j" ]; do wait -n || true; done
  done
  wait || true
  grep -E "rc=|missing|skip" "$OUT/steps.txt" || true
}

san() {
  local tool=$1 t=$2 spec=${3:-} l s rc=0 SANITIZER_CMD
  l=$(left)
  [ "$l" -lt 50 ] && { echo "skip $tool $t: $l s left" | tee -a "$OUT/steps.txt"; return 0; }
  sanitizer_cmd "$tool" "$t"
  s=$SECONDS
  limited $((l - 30)) "${SANITIZER_CMD[@]}" "$K/bin/$t" ${spec:+"$spec"} >"$OUT/san-$tool-$t.log" 2>&1 || rc=$?
  echo "$tool $t [$spec] rc=$rc $((SECONDS - s)) s: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|test cases|All tests passed' \
    "$OUT/san-$tool-$t.log" | tr '\n' ' ')" | tee -a "$OUT/steps.txt"
}

finish() {
  (cd "$OUT" && tar cJf "$SNAP/res.tar.xz" .) || echo "finish: could not write $SNAP/res.tar.xz"
  ls -la "$SNAP"
}
trap finish EXIT
