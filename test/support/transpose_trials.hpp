// The transpose kernels under trial (dispatch/transpose.cuh's TransposeTrials, not all taken by
// transpose() yet), reachable from Catch2 translation units: their names and launches.
#pragma once

#include <devmat/error.hpp>

#include <cuda_runtime_api.h>

namespace devmat::test {
/// How many kernels are under trial for T.
template <class T>
int transpose_trial_count();
/// The i-th one's bench impl name ("ours-any-r128-t256", ...).
template <class T>
const char* transpose_trial_name(int i);
/// Runs the i-th one on `stream`: out (cols x rows, dense, any alignment) = transpose of in
/// (rows x cols, ld elements between row starts, any alignment).
template <class T>
void transpose_trial(int i, const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream);
}  // namespace devmat::test
