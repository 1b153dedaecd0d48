// Reductions: sum, min, max, mean (host values and 1x1 device results), row and column sums.
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/reduce.cuh"

#include <devmat/device_matrix.hpp>

namespace devmat {
namespace detail {
namespace {

template <class T>
void require_nonempty(const DeviceMatrix<T>& m, const char* op) {
  if (m.empty())
    throw shape_error(std::string("devmat: ") + op + ": the matrix is empty (" +
                      shape_string(m.rows(), m.cols()) + "); its " + op + " is undefined");
}

/// A 1x1 result of reducer R on the matrix's stream (fallback per-thread for an empty one).
template <class R, class T, class Final>
DeviceMatrix<typename Final::Out> reduce_to_device(const DeviceMatrix<T>& m, Final fin) {
  const Stream s = m.stream();
  DeviceMatrix<typename Final::Out> out(1, 1, s);
  use_on(s, m);
  launch_reduce<R>(s, m.data(), m.size(), out.data(), fin);
  return out;
}

template <class U>
U first_value(const DeviceMatrix<U>& m) {
  U v{};
  m.copy_to_host(&v);
  return v;
}

}  // namespace
}  // namespace detail

template <class T>
DeviceMatrix<sum_t<T>> DeviceMatrix<T>::sum_async() const {
  return detail::reduce_to_device<detail::SumReducer<T>>(*this, detail::CastTo<detail::sum_acc_t<T>, sum_t<T>>{});
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::min_async() const {
  detail::require_nonempty(*this, "min");
  return detail::reduce_to_device<detail::MinMaxReducer<T, false>>(*this, detail::CastTo<T, T>{});
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::max_async() const {
  detail::require_nonempty(*this, "max");
  return detail::reduce_to_device<detail::MinMaxReducer<T, true>>(*this, detail::CastTo<T, T>{});
}

template <class T>
DeviceMatrix<double> DeviceMatrix<T>::mean_async() const {
  detail::require_nonempty(*this, "mean");
  return detail::reduce_to_device<detail::SumReducer<T>>(
      *this, detail::MeanOf<detail::sum_acc_t<T>>{static_cast<double>(size())});
}

template <class T>
sum_t<T> DeviceMatrix<T>::sum() const {
  return detail::first_value(sum_async());
}

template <class T>
T DeviceMatrix<T>::min() const {
  return detail::first_value(min_async());
}

template <class T>
T DeviceMatrix<T>::max() const {
  return detail::first_value(max_async());
}

template <class T>
double DeviceMatrix<T>::mean() const {
  return detail::first_value(mean_async());
}

template <class T>
DeviceMatrix<sum_t<T>> DeviceMatrix<T>::row_sums() const {
  const Stream s = stream();  // this matrix's stream (set even when it is empty)
  DeviceMatrix<sum_t<T>> out(rows_, 1, s);
  if (out.empty()) return out;
  detail::use_on(s, *this);
  detail::launch_row_sums(s, data_, rows_, cols_, out.data());
  return out;
}

template <class T>
DeviceMatrix<sum_t<T>> DeviceMatrix<T>::col_sums() const {
  const Stream s = stream();  // this matrix's stream (set even when it is empty)
  DeviceMatrix<sum_t<T>> out(1, cols_, s);
  if (out.empty()) return out;
  detail::use_on(s, *this);
  detail::launch_col_sums(s, data_, rows_, cols_, out.data());
  return out;
}

#define DEVMAT_INSTANTIATE(T)                                            \
  template DeviceMatrix<sum_t<T>> DeviceMatrix<T>::sum_async() const;    \
  template DeviceMatrix<T> DeviceMatrix<T>::min_async() const;           \
  template DeviceMatrix<T> DeviceMatrix<T>::max_async() const;           \
  template DeviceMatrix<double> DeviceMatrix<T>::mean_async() const;     \
  template sum_t<T> DeviceMatrix<T>::sum() const;                        \
  template T DeviceMatrix<T>::min() const;                               \
  template T DeviceMatrix<T>::max() const;                               \
  template double DeviceMatrix<T>::mean() const;                         \
  template DeviceMatrix<sum_t<T>> DeviceMatrix<T>::row_sums() const;     \
  template DeviceMatrix<sum_t<T>> DeviceMatrix<T>::col_sums() const;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
