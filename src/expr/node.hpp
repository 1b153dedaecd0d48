// The runtime tree of an expression (include/devmat/expr.hpp builds it through the functions
// of expr/build.cpp). Plain C++.
#pragma once

#include "detail/runtime.hpp"

#include <devmat/expr.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace devmat::detail {

struct ExprNode {
  // User-provided, so that a new node is not zero-filled before its members are initialised
  // (value-initialisation of a class with an implicit constructor does both).
  ExprNode() noexcept {}
  ExprNode(ExprOp o, DType t, Index r, Index c) noexcept : op(o), type(t), rows(r), cols(c) {}

  ExprOp op = ExprOp::leaf;
  DType type = DType::f32;  // the element type of this node's values
  Index rows = 0, cols = 0;

  // leaf: a window of device memory
  const void* data = nullptr;
  Index stride = 0;
  std::shared_ptr<Buffer> keep;  // the matrix memory kept alive (null for wrapped memory)
  Stream stream = Access::unset();  // unset: the calling thread's per-thread stream

  // scalar: the value's bytes, in `type`
  std::uint64_t bits = 0;

  ExprPtr a, b, c;  // operands (see ExprOp)
};

/// Bytes of one element of `t`.
inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::u8: return 1;
    case DType::f32: case DType::i32: return 4;
    default: return 8;
  }
}

inline bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f64; }

/// The first operand's stream as it was given: unset when that operand is an empty matrix that
/// never needed a stream (an empty result then needs no device).
Stream expr_raw_stream(const ExprNode& e);

/// expr_assign(e, m.view()) for a matrix m of e's shape with elements (DeviceMatrix::operator=),
/// with no view made.
template <class T>
void expr_assign_matrix(const ExprNode& e, DeviceMatrix<T>& m);

/// "float", "double", ...: for messages and generated code.
const char* dtype_name(DType t);
/// The scalar value of a scalar node, as T.
template <class T>
T scalar_value(const ExprNode& n) {
  T v;
  std::memcpy(&v, &n.bits, sizeof(T));
  return v;
}

/// Calls f(T{}) with T the C++ type of `t`.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(std::int32_t{});
    case DType::u8: return f(std::uint8_t{});
    case DType::i64: return f(std::int64_t{});
    default: return f(std::uint64_t{});
  }
}

}  // namespace devmat::detail
