// Reductions: sum, min, max, mean (host values and 1x1 device results), row and column sums,
// of views read in place through their stride; a matrix reduces as its whole view.
#include "detail/device_guard.hpp"
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/reduce.cuh"
#include "dispatch/reduce_parts.hpp"

#include <devmat/device_matrix.hpp>

namespace devmat {
namespace detail {
namespace {

/// A 1x1 result of reducer R on the window's stream, read in place through its stride.
template <class R, class T, class Final>
DeviceMatrix<typename Final::Out> reduce_to_device(const MatrixView<const T>& m, Final fin) {
  const Stream s = m.stream();
  const DeviceGuard device(s);
  DeviceMatrix<typename Final::Out> out(1, 1, s);
  use_on(s, m);
  launch_reduce_2d<R>(s, m.data(), m.rows(), m.cols(), m.stride(), out.data(), fin);
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

// ------------------------------------------------------------------ views: the one implementation
template <class T>
DeviceMatrix<sum_t<T>> MatrixView<const T>::sum_async() const {
  return detail::reduce_to_device<detail::SumReducer<T>>(*this, detail::CastTo<detail::sum_acc_t<T>, sum_t<T>>{});
}

template <class T>
DeviceMatrix<T> MatrixView<const T>::min_async() const {
  detail::require_nonempty(this->rows(), this->cols(), "min");
  return detail::reduce_to_device<detail::MinMaxReducer<T, false>>(*this, detail::CastTo<T, T>{});
}

template <class T>
DeviceMatrix<T> MatrixView<const T>::max_async() const {
  detail::require_nonempty(this->rows(), this->cols(), "max");
  return detail::reduce_to_device<detail::MinMaxReducer<T, true>>(*this, detail::CastTo<T, T>{});
}

template <class T>
DeviceMatrix<double> MatrixView<const T>::mean_async() const {
  detail::require_nonempty(this->rows(), this->cols(), "mean");
  return detail::reduce_to_device<detail::SumReducer<T>>(
      *this, detail::MeanOf<detail::sum_acc_t<T>>{static_cast<double>(size())});
}

template <class T>
sum_t<T> MatrixView<const T>::sum() const {
  return detail::first_value(sum_async());
}

template <class T>
T MatrixView<const T>::min() const {
  return detail::first_value(min_async());
}

template <class T>
T MatrixView<const T>::max() const {
  return detail::first_value(max_async());
}

template <class T>
double MatrixView<const T>::mean() const {
  return detail::first_value(mean_async());
}

template <class T>
DeviceMatrix<sum_t<T>> MatrixView<const T>::row_sums() const {
  const Stream s = stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<sum_t<T>> out(rows_, 1, s);
  if (out.empty()) return out;
  detail::use_on(s, *this);
  detail::launch_row_sums(s, data_, rows_, cols_, stride_, out.data());
  return out;
}

template <class T>
DeviceMatrix<sum_t<T>> MatrixView<const T>::col_sums() const {
  const Stream s = stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<sum_t<T>> out(1, cols_, s);
  if (out.empty()) return out;
  detail::use_on(s, *this);
  detail::launch_col_sums(s, data_, rows_, cols_, stride_, out.data());
  return out;
}

// ------------------------------------------------------------------ shared with fused expressions
namespace detail {

template <class T>
long long reduce_first_pass_cap(ReduceOp op) {
  using Acc = sum_acc_t<T>;
  constexpr int kThreads = DefaultReduceConfig::kThreads, U = DefaultReduceConfig::kUnroll;
  // The kernels launch_reduce sizes its grid by (its ToAcc first pass), times its oversubscription.
  const void* kernel =
      op == ReduceOp::min   ? reinterpret_cast<const void*>(&reduce_kernel<MinMaxReducer<T, false>, kThreads, U, CastTo<T, T>>)
      : op == ReduceOp::max ? reinterpret_cast<const void*>(&reduce_kernel<MinMaxReducer<T, true>, kThreads, U, CastTo<T, T>>)
                            : reinterpret_cast<const void*>(&reduce_kernel<SumReducer<T>, kThreads, U, CastTo<Acc, Acc>>);
  return resident_blocks(kernel, kThreads) * DefaultReduceConfig::kOversub;
}

template <class T>
void launch_reduce_second_pass(ReduceOp op, const Stream& stream, const void* partials, Index count, void* out,
                               double n) {
  using Acc = sum_acc_t<T>;
  const cudaStream_t s = stream.native();
  switch (op) {
    case ReduceOp::sum:
      return launch(&reduce_partials_kernel<SumReducer<T>, kFinalThreads, CastTo<Acc, sum_t<T>>>, 1, kFinalThreads,
                    0, s, static_cast<const Acc*>(partials), count, static_cast<sum_t<T>*>(out),
                    CastTo<Acc, sum_t<T>>{});
    case ReduceOp::mean:
      return launch(&reduce_partials_kernel<SumReducer<T>, kFinalThreads, MeanOf<Acc>>, 1, kFinalThreads, 0, s,
                    static_cast<const Acc*>(partials), count, static_cast<double*>(out), MeanOf<Acc>{n});
    case ReduceOp::min:
      return launch(&reduce_partials_kernel<MinMaxReducer<T, false>, kFinalThreads, CastTo<T, T>>, 1, kFinalThreads,
                    0, s, static_cast<const T*>(partials), count, static_cast<T*>(out), CastTo<T, T>{});
    case ReduceOp::max:
      return launch(&reduce_partials_kernel<MinMaxReducer<T, true>, kFinalThreads, CastTo<T, T>>, 1, kFinalThreads,
                    0, s, static_cast<const T*>(partials), count, static_cast<T*>(out), CastTo<T, T>{});
  }
}

template <class T>
void launch_row_chunk_sums(const Stream& stream, const void* partials, Index rows, Index chunks, void* out) {
  using Acc = sum_acc_t<T>;
  launch(&segment_sums_kernel<SumReducer<T>, sum_t<T>>, static_cast<unsigned>(ceil_div(rows * 32, kTeamThreads)),
         kTeamThreads, 0, stream.native(), static_cast<const Acc*>(partials), rows, chunks,
         static_cast<sum_t<T>*>(out));
}

template <class T>
void launch_col_chunk_sums(const Stream& stream, const void* partials, Index cols, Index chunks, void* out) {
  using Acc = sum_acc_t<T>;
  launch(&col_chunks_kernel<Acc, sum_t<T>>, static_cast<unsigned>(ceil_div(cols, 32)), dim3(32, 32), 0,
         stream.native(), static_cast<const Acc*>(partials), cols, chunks, static_cast<sum_t<T>*>(out));
}

#define DEVMAT_INSTANTIATE(T)                                                                                   \
  template long long reduce_first_pass_cap<T>(ReduceOp);                                                        \
  template void launch_reduce_second_pass<T>(ReduceOp, const Stream&, const void*, Index, void*, double);       \
  template void launch_row_chunk_sums<T>(const Stream&, const void*, Index, Index, void*);                      \
  template void launch_col_chunk_sums<T>(const Stream&, const void*, Index, Index, void*);
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace detail

// ------------------------------------------------------------------ matrices: their whole view
template <class T> DeviceMatrix<sum_t<T>> DeviceMatrix<T>::sum_async() const { return view().sum_async(); }
template <class T> DeviceMatrix<T> DeviceMatrix<T>::min_async() const { return view().min_async(); }
template <class T> DeviceMatrix<T> DeviceMatrix<T>::max_async() const { return view().max_async(); }
template <class T> DeviceMatrix<double> DeviceMatrix<T>::mean_async() const { return view().mean_async(); }
template <class T> sum_t<T> DeviceMatrix<T>::sum() const { return view().sum(); }
template <class T> T DeviceMatrix<T>::min() const { return view().min(); }
template <class T> T DeviceMatrix<T>::max() const { return view().max(); }
template <class T> double DeviceMatrix<T>::mean() const { return view().mean(); }
template <class T> DeviceMatrix<sum_t<T>> DeviceMatrix<T>::row_sums() const { return view().row_sums(); }
template <class T> DeviceMatrix<sum_t<T>> DeviceMatrix<T>::col_sums() const { return view().col_sums(); }

#define DEVMAT_INSTANTIATE(T)                                                   \
  template DeviceMatrix<sum_t<T>> MatrixView<const T>::sum_async() const;       \
  template DeviceMatrix<T> MatrixView<const T>::min_async() const;              \
  template DeviceMatrix<T> MatrixView<const T>::max_async() const;              \
  template DeviceMatrix<double> MatrixView<const T>::mean_async() const;        \
  template sum_t<T> MatrixView<const T>::sum() const;                           \
  template T MatrixView<const T>::min() const;                                  \
  template T MatrixView<const T>::max() const;                                  \
  template double MatrixView<const T>::mean() const;                            \
  template DeviceMatrix<sum_t<T>> MatrixView<const T>::row_sums() const;        \
  template DeviceMatrix<sum_t<T>> MatrixView<const T>::col_sums() const;        \
  template DeviceMatrix<sum_t<T>> DeviceMatrix<T>::sum_async() const;           \
  template DeviceMatrix<T> DeviceMatrix<T>::min_async() const;                  \
  template DeviceMatrix<T> DeviceMatrix<T>::max_async() const;                  \
  template DeviceMatrix<double> DeviceMatrix<T>::mean_async() const;            \
  template sum_t<T> DeviceMatrix<T>::sum() const;                               \
  template T DeviceMatrix<T>::min() const;                                      \
  template T DeviceMatrix<T>::max() const;                                      \
  template double DeviceMatrix<T>::mean() const;                                \
  template DeviceMatrix<sum_t<T>> DeviceMatrix<T>::row_sums() const;            \
  template DeviceMatrix<sum_t<T>> DeviceMatrix<T>::col_sums() const;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
