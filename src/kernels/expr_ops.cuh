// The operations of fused element-wise expressions (devmat::Expr), one function each: the only
// definition of their semantics, which every kernel generated for an expression calls
// (src/expr/codegen.cpp). Device code only; NVRTC reads it with stand-ins for the std headers.
//
// Bitwise rules: float + - * / and sqrt are the IEEE round-to-nearest intrinsics, which no
// compiler contracts into a multiply-add whatever -fmad says, so an operation gives the same
// bits alone or inside a larger expression. Integers wrap around (computed in the unsigned
// type, where overflow is defined); integer division by 0 gives 0 and INT_MIN / -1 wraps to
// INT_MIN. min and max propagate NaN. abs follows DeviceMatrix::abs (x < 0 ? -x : x, so
// abs(-0.0) is -0.0), cast is DeviceMatrix::cast's saturate_cast (cast.cuh).
#pragma once

#include "cast.cuh"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace devmat::detail {

/// The type integer arithmetic on T is done in: unsigned, so that overflow wraps.
template <class T> struct wrap_arith { using type = unsigned; };  // u8 and i32
template <> struct wrap_arith<std::int64_t> { using type = unsigned long long; };
template <> struct wrap_arith<std::uint64_t> { using type = unsigned long long; };
template <class T> using wrap_arith_t = typename wrap_arith<T>::type;

/// A scalar slot's 8 bytes as T (the low bytes hold the value, as the host stored it).
template <class T>
__device__ __forceinline__ T op_bits(unsigned long long bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// ------------------------------------------------------------------ arithmetic
template <class T>
__device__ __forceinline__ T op_add(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fadd_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dadd_rn(a, b);
  else return static_cast<T>(static_cast<wrap_arith_t<T>>(a) + static_cast<wrap_arith_t<T>>(b));
}

template <class T>
__device__ __forceinline__ T op_sub(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fsub_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dsub_rn(a, b);
  else return static_cast<T>(static_cast<wrap_arith_t<T>>(a) - static_cast<wrap_arith_t<T>>(b));
}

template <class T>
__device__ __forceinline__ T op_mul(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fmul_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dmul_rn(a, b);
  else return static_cast<T>(static_cast<wrap_arith_t<T>>(a) * static_cast<wrap_arith_t<T>>(b));
}

template <class T>
__device__ __forceinline__ T op_neg(T a) {
  if constexpr (std::is_floating_point_v<T>) return -a;
  else return static_cast<T>(wrap_arith_t<T>(0) - static_cast<wrap_arith_t<T>>(a));
}

template <class T>
__device__ __forceinline__ T op_div(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return __fdiv_rn(a, b);
  } else if constexpr (std::is_same_v<T, double>) {
    return __ddiv_rn(a, b);
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return op_neg(a);  // INT_MIN / -1 wraps to INT_MIN
    return static_cast<T>(a / b);
  }
}

template <class T>
__device__ __forceinline__ T op_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? a : b;
}

template <class T>
__device__ __forceinline__ T op_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}

template <class T>
__device__ __forceinline__ T op_abs(T a) {
  if constexpr (std::is_unsigned_v<T>) return a;
  else return a < T(0) ? op_neg(a) : a;
}

template <class T>
__device__ __forceinline__ T op_square(T a) {
  return op_mul(a, a);
}

// ------------------------------------------------------------------ float and double functions
#define DEVMAT_EXPR_FUNCTION(NAME, FLOAT_FN, DOUBLE_FN)                   \
  template <class T>                                                     \
  __device__ __forceinline__ T NAME(T a) {                               \
    static_assert(std::is_floating_point_v<T>, #NAME ": float or double"); \
    if constexpr (std::is_same_v<T, float>) return ::FLOAT_FN(a);        \
    else return ::DOUBLE_FN(a);                                          \
  }
DEVMAT_EXPR_FUNCTION(op_sqrt, __fsqrt_rn, __dsqrt_rn)
DEVMAT_EXPR_FUNCTION(op_rsqrt, rsqrtf, rsqrt)
DEVMAT_EXPR_FUNCTION(op_exp, expf, exp)
DEVMAT_EXPR_FUNCTION(op_log, logf, log)
DEVMAT_EXPR_FUNCTION(op_log1p, log1pf, log1p)
DEVMAT_EXPR_FUNCTION(op_expm1, expm1f, expm1)
DEVMAT_EXPR_FUNCTION(op_sin, sinf, sin)
DEVMAT_EXPR_FUNCTION(op_cos, cosf, cos)
DEVMAT_EXPR_FUNCTION(op_tanh, tanhf, tanh)
DEVMAT_EXPR_FUNCTION(op_floor, floorf, floor)
DEVMAT_EXPR_FUNCTION(op_ceil, ceilf, ceil)
DEVMAT_EXPR_FUNCTION(op_round, roundf, round)  // half away from zero
#undef DEVMAT_EXPR_FUNCTION

template <class T>
__device__ __forceinline__ T op_pow(T a, T b) {
  static_assert(std::is_floating_point_v<T>, "op_pow: float or double");
  if constexpr (std::is_same_v<T, float>) return ::powf(a, b);
  else return ::pow(a, b);
}

// ------------------------------------------------------------------ conversions, masks, logic
template <class U, class X>
__device__ __forceinline__ U op_cast(X x) {
  return saturate_cast<U>(x);
}

template <class T> __device__ __forceinline__ std::uint8_t op_eq(T a, T b) { return a == b; }
template <class T> __device__ __forceinline__ std::uint8_t op_ne(T a, T b) { return a != b; }
template <class T> __device__ __forceinline__ std::uint8_t op_lt(T a, T b) { return a < b; }
template <class T> __device__ __forceinline__ std::uint8_t op_le(T a, T b) { return a <= b; }
template <class T> __device__ __forceinline__ std::uint8_t op_gt(T a, T b) { return a > b; }
template <class T> __device__ __forceinline__ std::uint8_t op_ge(T a, T b) { return a >= b; }

template <class T>
__device__ __forceinline__ std::uint8_t op_logical_not(T a) {
  return a == T(0);
}
template <class A, class B>
__device__ __forceinline__ std::uint8_t op_logical_and(A a, B b) {
  return (a != A(0)) & (b != B(0));
}
template <class A, class B>
__device__ __forceinline__ std::uint8_t op_logical_or(A a, B b) {
  return (a != A(0)) | (b != B(0));
}
template <class M, class T>
__device__ __forceinline__ T op_select(M mask, T a, T b) {
  return mask != M(0) ? a : b;
}

}  // namespace devmat::detail
