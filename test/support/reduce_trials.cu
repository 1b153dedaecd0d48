// The narrow row and column sum kernels under trial, compiled once for the tests
// (support/reduce_trials.hpp).
#include "support/reduce_trials.hpp"

#include "dispatch/reduce.cuh"

#include <cstdint>

namespace devmat::test {

template <class T>
int narrow_trial_count() {
  return detail::NarrowTrials<T>::kCount;
}

template <class T>
const char* narrow_trial_name(int i) {
  return detail::NarrowTrials<T>::kAll[i].name;
}

template <class T>
bool narrow_trial_row_sums(int i) {
  return detail::NarrowTrials<T>::kAll[i].kind == detail::NarrowKind::row_sums;
}

template <class T>
bool narrow_trial_takes(int i, const T* in, Index rows, Index cols, Index ld) {
  return detail::NarrowTrials<T>::kAll[i].takes(in, rows, cols, ld);
}

template <class T>
void narrow_trial(int i, const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  detail::NarrowTrials<T>::kAll[i].launch(stream, in, rows, cols, ld, out);
}

#define DEVMAT_TRIALS(T)                                                        \
  template int narrow_trial_count<T>();                                         \
  template const char* narrow_trial_name<T>(int);                               \
  template bool narrow_trial_row_sums<T>(int);                                  \
  template bool narrow_trial_takes<T>(int, const T*, Index, Index, Index);      \
  template void narrow_trial<T>(int, const Stream&, const T*, Index, Index, Index, sum_t<T>*);
DEVMAT_TRIALS(std::uint8_t)
DEVMAT_TRIALS(float)
DEVMAT_TRIALS(std::int32_t)
DEVMAT_TRIALS(double)
#undef DEVMAT_TRIALS

}  // namespace devmat::test
