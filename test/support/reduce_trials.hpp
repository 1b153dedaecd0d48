// The narrow row and column sum kernels under trial (dispatch/reduce.cuh's NarrowTrials, the
// configurations bench_reduce times as "ours-<name>"), reachable from Catch2 translation units.
#pragma once

#include <devmat/device_matrix.hpp>

namespace devmat::test {
/// How many configurations are under trial for T.
template <class T>
int narrow_trial_count();
/// The i-th one's bench impl name ("ours-staged256", ...).
template <class T>
const char* narrow_trial_name(int i);
/// Whether the i-th one computes row sums (else column sums).
template <class T>
bool narrow_trial_row_sums(int i);
/// Whether the i-th one takes the rows x cols window at `in` (ld elements between row starts).
template <class T>
bool narrow_trial_takes(int i, const T* in, Index rows, Index cols, Index ld);
/// Runs the i-th one on `stream`: out[rows] (row sums) or out[cols] (column sums) of the window.
template <class T>
void narrow_trial(int i, const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out);
}  // namespace devmat::test
