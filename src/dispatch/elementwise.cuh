// The element-wise operations' functors and their launchers over dense or strided operands,
// shared by the matrix operations (elementwise.cu) and the view operations (views.cu).
#pragma once

#include "dispatch/transform.cuh"
#include "kernels/cast.cuh"

#include <devmat/device_matrix.hpp>

#include <stdexcept>
#include <type_traits>

namespace devmat::detail {

// ------------------------------------------------------------------ functors
// Integer division by zero gives 0 (as OpenCV's divide); floats follow IEEE.
template <class T>
__device__ __forceinline__ T safe_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) return b == T(0) ? T(0) : static_cast<T>(a / b);
  else return a / b;
}

template <class T, Binary Op>
struct BinaryFn {
  __device__ T operator()(T a, T b) const {
    if constexpr (Op == Binary::add) return static_cast<T>(a + b);
    else if constexpr (Op == Binary::sub) return static_cast<T>(a - b);
    else if constexpr (Op == Binary::mul) return static_cast<T>(a * b);
    else if constexpr (Op == Binary::div) return safe_div(a, b);
    else if constexpr (Op == Binary::max) return a > b ? a : b;
    else return a < b ? a : b;
  }
};

/// The binary operation with a scalar as its right operand, or its left one (s - a).
template <class T, Binary Op, bool kScalarLeft>
struct ScalarFn {
  T s;
  __device__ T operator()(T a) const { return kScalarLeft ? BinaryFn<T, Op>{}(s, a) : BinaryFn<T, Op>{}(a, s); }
};

/// Calls f(std::integral_constant<Binary, op>) for the runtime-chosen op: the one switch over
/// the operations that every launcher below shares.
template <class F>
void with_binary(Binary op, F&& f) {
  switch (op) {
    case Binary::add: return f(std::integral_constant<Binary, Binary::add>{});
    case Binary::sub: return f(std::integral_constant<Binary, Binary::sub>{});
    case Binary::mul: return f(std::integral_constant<Binary, Binary::mul>{});
    case Binary::div: return f(std::integral_constant<Binary, Binary::div>{});
    case Binary::max: return f(std::integral_constant<Binary, Binary::max>{});
    case Binary::min: return f(std::integral_constant<Binary, Binary::min>{});
  }
}

/// A scalar operation as a binary one: rsub is s - a, the others take the scalar on the right.
constexpr Binary binary_of(Scalar op) {
  switch (op) {
    case Scalar::add: return Binary::add;
    case Scalar::sub:
    case Scalar::rsub: return Binary::sub;
    case Scalar::mul: return Binary::mul;
    case Scalar::div: return Binary::div;
    case Scalar::max: return Binary::max;
    case Scalar::min: return Binary::min;
  }
  return Binary::add;
}

template <class T, Unary Op>
struct UnaryFn {
  __device__ T operator()(T a) const {
    if constexpr (Op == Unary::neg) return static_cast<T>(-a);
    else if constexpr (std::is_unsigned_v<T>) return a;
    else return a < T(0) ? static_cast<T>(-a) : a;
  }
};

template <class T>
struct ClampFn {
  T lo, hi;
  __device__ T operator()(T a) const { return a < lo ? lo : (a > hi ? hi : a); }
};

template <class T>
struct ThresholdFn {
  T t;
  __device__ std::uint8_t operator()(T a) const { return a > t ? 255 : 0; }
};

template <class U, class X>
struct CastFn {
  __device__ U operator()(X x) const { return saturate_cast<U>(x); }
};

inline constexpr const None* kNone = nullptr;

template <class T>
void check_scalar_div(Scalar op, T s) {
  if constexpr (std::is_integral_v<T>)
    if (op == Scalar::div && s == T(0))
      throw std::invalid_argument("devmat: integer matrix divided by the scalar 0");
}

/// out = a op b over a rows x cols window (row strides ld_*; dense operands take the flat
/// kernel), for the runtime-chosen operation.
template <class T>
void run_binary_2d(Binary op, cudaStream_t s, Index rows, Index cols, T* out, Index ld_out, const T* a, Index ld_a,
                   const T* b, Index ld_b) {
  with_binary(op, [&](auto k) {
    launch_transform_2d(s, rows, cols, out, ld_out, a, ld_a, b, ld_b, BinaryFn<T, decltype(k)::value>{});
  });
}

/// out = a op v (or v - a for rsub) over a rows x cols window.
template <class T>
void run_scalar_2d(Scalar op, T v, cudaStream_t s, Index rows, Index cols, T* out, Index ld_out, const T* a,
                   Index ld_a) {
  with_binary(binary_of(op), [&](auto k) {
    constexpr Binary kOp = decltype(k)::value;
    if constexpr (kOp == Binary::sub)
      if (op == Scalar::rsub)
        return launch_transform_2d(s, rows, cols, out, ld_out, a, ld_a, kNone, Index(0), ScalarFn<T, kOp, true>{v});
    launch_transform_2d(s, rows, cols, out, ld_out, a, ld_a, kNone, Index(0), ScalarFn<T, kOp, false>{v});
  });
}

/// out = -a or |a| over a rows x cols window.
template <class T>
void run_unary_2d(Unary op, cudaStream_t s, Index rows, Index cols, T* out, Index ld_out, const T* a, Index ld_a) {
  if (op == Unary::neg) launch_transform_2d(s, rows, cols, out, ld_out, a, ld_a, kNone, Index(0), UnaryFn<T, Unary::neg>{});
  else launch_transform_2d(s, rows, cols, out, ld_out, a, ld_a, kNone, Index(0), UnaryFn<T, Unary::abs>{});
}

}  // namespace devmat::detail
