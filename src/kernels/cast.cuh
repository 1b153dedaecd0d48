// Element type conversion with OpenCV's saturate_cast semantics: the cast of the expressions
// (compiled at run time by NVRTC, src/expr/), which DeviceMatrix::cast also runs through. Device code only; needs nothing beyond <limits> and
// <type_traits> (NVRTC gets small stand-ins for them, src/expr/nvrtc_std.cuh).
#pragma once

#include <limits>
#include <type_traits>

namespace devmat::detail {

// OpenCV's saturate_cast: float to integer rounds to nearest even and saturates, NaN -> 0.
template <class U, class X>
__device__ __forceinline__ U saturate_cast(X x) {
  using UL = std::numeric_limits<U>;
  if constexpr (std::is_floating_point_v<U> || std::is_same_v<U, X>) {
    return static_cast<U>(x);
  } else if constexpr (std::is_floating_point_v<X>) {
    if (x != x) return U(0);
    const double r = rint(static_cast<double>(x));
    if (r <= static_cast<double>(UL::lowest())) return UL::lowest();
    if (r >= static_cast<double>(UL::max())) return UL::max();
    return static_cast<U>(r);
  } else {  // integer to integer
    if constexpr (std::is_signed_v<X>) {
      if (x < 0) {
        if constexpr (std::is_unsigned_v<U>) return U(0);
        else if (static_cast<long long>(x) < static_cast<long long>(UL::lowest())) return UL::lowest();
        return static_cast<U>(x);
      }
    }
    if (static_cast<unsigned long long>(x) > static_cast<unsigned long long>(UL::max())) return UL::max();
    return static_cast<U>(x);
  }
}

}  // namespace devmat::detail
