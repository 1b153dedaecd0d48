# Sourced by scripts/gpu-check and scripts/device-env.sh: the one way this project runs a test
# under compute-sanitizer.
#
# sanitizer_cmd TOOL TEST: sets the array SANITIZER_CMD to the command that runs the test binary
# named TEST under compute-sanitizer's TOOL (append the binary's path and a Catch2 spec).
#   DEVMAT_TEST_SANITIZER=1   tests trim iteration counts and skip checks that observe
#                             concurrency (instrumented kernels run far slower)
#   --target-processes all    test_dist_join's two rank processes are checked too
#   --error-exitcode 99       any report fails the run
#   --leak-check full         memcheck also reports device memory left allocated at exit
#   --report-api-errors no    test_dist*: NCCL probes its kernels for every architecture it
#                             carries when a communicator starts (cudaFuncGetAttributes:
#                             cudaErrorNoKernelImageForDevice, 32 reports a run on the H200, none
#                             ours); those tests check memory, races and leaks without them
# SANITIZER_SPEC: the Catch2 spec of a whole-suite run. "~[large]" leaves out the tests past 2^31
# elements (minutes when instrumented), "~[api-error]" those that provoke CUDA API errors on
# purpose (the sanitizer reports each).
SANITIZER_SPEC='~[large]~[api-error]'
sanitizer_cmd() {
  local tool=${1:?sanitizer_cmd TOOL TEST} name=${2:?sanitizer_cmd TOOL TEST}
  SANITIZER_CMD=(env DEVMAT_TEST_SANITIZER=1 compute-sanitizer --target-processes all --tool "$tool"
    --error-exitcode 99)
  if [ "$tool" = memcheck ]; then SANITIZER_CMD+=(--leak-check full); fi
  if [[ $name == test_dist* ]]; then SANITIZER_CMD+=(--report-api-errors no); fi
  return 0
}
