// Small host-side arithmetic that every launcher uses. Plain C++.
#pragma once

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

/// ceil(a / b) for non-negative a and positive b, in the common type of the two.
template <class A, class B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (static_cast<C>(a) + static_cast<C>(b) - 1) / static_cast<C>(b);
}

/// a rounded up to a multiple of b.
template <class A, class B>
constexpr std::common_type_t<A, B> round_up(A a, B b) {
  return ceil_div(a, b) * static_cast<std::common_type_t<A, B>>(b);
}

/// Whether p is aligned to `bytes` (a power of two).
inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace devmat::detail
