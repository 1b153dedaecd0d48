# Sourced on the GPU machine at the repository root: `. scripts/device-env.sh KIT` unpacks the
# kit of scripts/device-kit and gives steps that each check the call's time first, so that a
# call stopped at its limit still returns what it measured (a call killed by the device tool's
# limit returns nothing):
#   table BENCH...        every row of each bench binary but its forced trials (FILTER, default
#                         -ours-), one process a binary, JSON and log to $OUT
#   suite TEST...         test binaries, JOBS at once (default 6), each under TLIM s (300)
#   san TOOL TEST [SPEC]  one test (Catch2 SPEC) under compute-sanitizer TOOL
#   finish                tars $OUT into the device tool's out folder (res.tar.xz); call it last
# Environment: END, the seconds the call may use (default 560; set it from the run's timeout),
# MIN_TIME (Google Benchmark's minimum time a benchmark, a plain number of seconds: Debian's
# 1.7.1 ignores "0.05s" and runs its 0.5 s default), SUF (suffix of a table's files).
# NVLink multicast stays off in every program this runs.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
K=$(cd "${1:?usage: . scripts/device-env.sh KIT}" && pwd)
for p in "$K"/p_*.tar.xz; do [ -f "$p" ] && tar xJf "$p" -C "$K"; done
# OpenCV (the image tests' oracle): the kit's (device-kit's `opencv`), else DEVMAT_OPENCV_DIR or
# .carry/opencv as carried.
ocv=$K/opencv
[ -d "$ocv/lib" ] || ocv=${DEVMAT_OPENCV_DIR:-$PWD/.carry/opencv}
export LD_LIBRARY_PATH=$K/lib:$ocv/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
SNAP=$OUT
export OUT=/tmp/device-kit-out
rm -rf "$OUT" && mkdir -p "$OUT"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
T0=$SECONDS
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; date -u; } >"$OUT/machine.txt" 2>&1
echo "GPU: $GPU ($(date -u))"

left() { echo $((${END:-560} - (SECONDS - T0))); }
is_h200() { [[ $GPU == *H200* ]]; }

table() {
  local b l t
  export BENCHMARK_MIN_TIME=${MIN_TIME:-0.05}
  for b in "$@"; do
    l=$(left)
    [ "$l" -lt 40 ] && { echo "skip $b: $l s left" | tee -a "$OUT/steps.txt"; continue; }
    t=$SECONDS
    timeout $((l - 25)) "$K/bin/$b" --benchmark_filter="${FILTER:--ours-}" --benchmark_out="$OUT/$b${SUF:-}.json" \
      --benchmark_out_format=json >"$OUT/$b${SUF:-}.log" 2>&1
    echo "$b${SUF:-} rc=$? $((SECONDS - t)) s" | tee -a "$OUT/steps.txt"
  done
}

suite() {
  local j=${JOBS:-6} tl=${TLIM:-300} t l
  for t in "$@"; do
    [ -x "$K/bin/$t" ] || { echo "$t missing" >>"$OUT/steps.txt"; continue; }
    l=$(left)
    [ "$l" -lt $((tl + 20)) ] && tl=$((l - 20))
    [ "$tl" -lt 20 ] && { echo "skip $t: $l s left" >>"$OUT/steps.txt"; continue; }
    (s=$SECONDS; timeout "$tl" "$K/bin/$t" >"$OUT/$t.log" 2>&1
     echo "$t rc=$? $((SECONDS - s)) s $(grep -E 'test cases|All tests passed' "$OUT/$t.log" | tail -1)" >>"$OUT/steps.txt") &
    while [ "$(jobs -rp | wc -l)" -ge "$j" ]; do wait -n; done
  done
  wait
  grep -E "rc=|missing|skip" "$OUT/steps.txt"
}

san() {
  local tool=$1 t=$2 spec=${3:-} ex=() l s
  l=$(left)
  [ "$l" -lt 40 ] && { echo "skip $tool $t: $l s left" | tee -a "$OUT/steps.txt"; return; }
  [ "$tool" = memcheck ] && ex=(--leak-check full)
  s=$SECONDS
  DEVMAT_TEST_SANITIZER=1 timeout $((l - 20)) compute-sanitizer --tool "$tool" "${ex[@]}" --error-exitcode 99 \
    "$K/bin/$t" ${spec:+"$spec"} >"$OUT/san-$tool-$t.log" 2>&1
  echo "$tool $t [$spec] rc=$? $((SECONDS - s)) s: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|test cases|All tests passed' \
    "$OUT/san-$tool-$t.log" | tr '\n' ' ')" | tee -a "$OUT/steps.txt"
}

finish() {
  (cd "$OUT" && tar cJf "$SNAP/res.tar.xz" .)
  ls -la "$SNAP"
}
