// transpose(): a new cols() x rows() matrix, through a shared-memory tile (kernels/transpose.cuh).
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/transpose.cuh"

#include <devmat/device_matrix.hpp>

namespace devmat {

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::transpose() const {
  DeviceMatrix out(cols_, rows_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::launch_transpose(data_, out.data_, rows_, cols_, stream_.native());
  return out;
}

#define DEVMAT_INSTANTIATE(T) template DeviceMatrix<T> DeviceMatrix<T>::transpose() const;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
