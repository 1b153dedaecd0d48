// Element-wise operations: matrix-matrix, matrix-scalar, unary, clamp, threshold and cast.
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/transform.cuh"

#include <devmat/device_matrix.hpp>

#include <limits>
#include <stdexcept>
#include <type_traits>

namespace devmat {
namespace detail {
namespace {

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

template <class U, class X>
struct CastFn {
  __device__ U operator()(X x) const { return saturate_cast<U>(x); }
};

constexpr const None* kNone = nullptr;

template <class T>
void check_same_shape(const char* op, const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw_shape_error(op, a.rows(), a.cols(), b.rows(), b.cols());
}

template <class T>
void check_scalar_div(Scalar op, T s) {
  if constexpr (std::is_integral_v<T>)
    if (op == Scalar::div && s == T(0))
      throw std::invalid_argument("devmat: integer matrix divided by the scalar 0");
}

// out = f(a, b) on `stream` for each of the runtime-chosen operations.
template <class T>
void run_binary(Binary op, cudaStream_t s, Index n, T* out, const T* a, const T* b) {
  with_binary(op, [&](auto k) { launch_transform(s, n, out, a, b, BinaryFn<T, decltype(k)::value>{}); });
}

template <class T>
void run_scalar(Scalar op, T v, cudaStream_t s, Index n, T* out, const T* a) {
  with_binary(binary_of(op), [&](auto k) {
    constexpr Binary kOp = decltype(k)::value;
    if constexpr (kOp == Binary::sub)
      if (op == Scalar::rsub) return launch_transform(s, n, out, a, kNone, ScalarFn<T, kOp, true>{v});
    launch_transform(s, n, out, a, kNone, ScalarFn<T, kOp, false>{v});
  });
}

}  // namespace
}  // namespace detail

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::zip(const DeviceMatrix& b, detail::Binary op, const char* name) const {
  detail::check_same_shape(name, *this, b);
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this, b);
  detail::run_binary(op, stream_.native(), size(), out.data_, data_, b.data_);
  return out;
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::zip_inplace(const DeviceMatrix& b, detail::Binary op, const char* name) {
  detail::check_same_shape(name, *this, b);
  if (empty()) return *this;
  detail::use_on(stream_, *this, b);
  detail::run_binary(op, stream_.native(), size(), data_, data_, b.data_);
  return *this;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::map(detail::Scalar op, T s) const {
  detail::check_scalar_div(op, s);
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::run_scalar(op, s, stream_.native(), size(), out.data_, data_);
  return out;
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::map_inplace(detail::Scalar op, T s) {
  detail::check_scalar_div(op, s);
  if (empty()) return *this;
  detail::use_on(stream_, *this);
  detail::run_scalar(op, s, stream_.native(), size(), data_, data_);
  return *this;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::unary(detail::Unary op) const {
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  if (op == detail::Unary::neg)
    detail::launch_transform(stream_.native(), size(), out.data_, data_, detail::kNone,
                             detail::UnaryFn<T, detail::Unary::neg>{});
  else
    detail::launch_transform(stream_.native(), size(), out.data_, data_, detail::kNone,
                             detail::UnaryFn<T, detail::Unary::abs>{});
  return out;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::clamp(T lo, T hi) const {
  if (hi < lo) throw std::invalid_argument("devmat: clamp: lo > hi");
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::launch_transform(stream_.native(), size(), out.data_, data_, detail::kNone, detail::ClampFn<T>{lo, hi});
  return out;
}

template <class T>
DeviceMatrix<std::uint8_t> DeviceMatrix<T>::threshold(T t) const {
  DeviceMatrix<std::uint8_t> out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::launch_transform(stream_.native(), size(), out.data(), data_, detail::kNone, detail::ThresholdFn<T>{t});
  return out;
}

template <class T>
template <class U>
DeviceMatrix<U> DeviceMatrix<T>::cast() const {
  DeviceMatrix<U> out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::launch_transform(stream_.native(), size(), out.data(), data_, detail::kNone, detail::CastFn<U, T>{});
  return out;
}

#define DEVMAT_INSTANTIATE(T)                                                                      \
  template DeviceMatrix<T> DeviceMatrix<T>::zip(const DeviceMatrix&, detail::Binary, const char*) const; \
  template DeviceMatrix<T>& DeviceMatrix<T>::zip_inplace(const DeviceMatrix&, detail::Binary, const char*); \
  template DeviceMatrix<T> DeviceMatrix<T>::map(detail::Scalar, T) const;                          \
  template DeviceMatrix<T>& DeviceMatrix<T>::map_inplace(detail::Scalar, T);                       \
  template DeviceMatrix<T> DeviceMatrix<T>::unary(detail::Unary) const;                            \
  template DeviceMatrix<T> DeviceMatrix<T>::clamp(T, T) const;                                     \
  template DeviceMatrix<std::uint8_t> DeviceMatrix<T>::threshold(T) const;                         \
  template DeviceMatrix<float> DeviceMatrix<T>::cast<float>() const;                               \
  template DeviceMatrix<double> DeviceMatrix<T>::cast<double>() const;                             \
  template DeviceMatrix<std::int32_t> DeviceMatrix<T>::cast<std::int32_t>() const;                 \
  template DeviceMatrix<std::uint8_t> DeviceMatrix<T>::cast<std::uint8_t>() const;                 \
  template DeviceMatrix<std::int64_t> DeviceMatrix<T>::cast<std::int64_t>() const;                 \
  template DeviceMatrix<std::uint64_t> DeviceMatrix<T>::cast<std::uint64_t>() const;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
