// The transpose kernels under trial, compiled once for the tests (support/transpose_trials.hpp).
#include "support/transpose_trials.hpp"

#include "dispatch/transpose.cuh"

#include <cstdint>

namespace devmat::test {

template <class T>
int transpose_trial_count() {
  return detail::TransposeTrials<T>::kCount;
}

template <class T>
const char* transpose_trial_name(int i) {
  return detail::TransposeTrials<T>::kAll[i].name;
}

template <class T>
void transpose_trial(int i, const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  detail::TransposeTrials<T>::kAll[i].launch(in, ld, out, rows, cols, stream);
}

#define DEVMAT_TRIALS(T)                                       \
  template int transpose_trial_count<T>();                     \
  template const char* transpose_trial_name<T>(int);           \
  template void transpose_trial<T>(int, const T*, Index, T*, Index, Index, cudaStream_t);
DEVMAT_TRIALS(std::uint8_t)
DEVMAT_TRIALS(float)
DEVMAT_TRIALS(std::int32_t)
DEVMAT_TRIALS(double)
#undef DEVMAT_TRIALS

}  // namespace devmat::test
