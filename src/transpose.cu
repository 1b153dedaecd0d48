// transpose(): a new cols() x rows() matrix, through a shared-memory tile (kernels/transpose.cuh);
// a view is read in place through its stride, a matrix is transposed as its whole view.
#include "detail/device_guard.hpp"
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/transpose.cuh"

#include <devmat/device_matrix.hpp>

namespace devmat {

template <class T>
DeviceMatrix<T> MatrixView<const T>::transpose() const {
  const Stream s = stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<T> out(cols_, rows_, s);
  if (empty()) return out;
  detail::use_on(s, *this);
  detail::launch_transpose(data_, stride_, out.data(), rows_, cols_, s.native());
  return out;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::transpose() const {
  return view().transpose();
}

#define DEVMAT_INSTANTIATE(T)                                      \
  template DeviceMatrix<T> MatrixView<const T>::transpose() const; \
  template DeviceMatrix<T> DeviceMatrix<T>::transpose() const;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
