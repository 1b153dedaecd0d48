// Expression trees built directly (no GPU, no DeviceMatrix): leaves over any memory, for the
// host tests of the expression engine (test_expr_codegen, test_expr_emulation).
#pragma once

#include "expr/node.hpp"
#include "expr/program.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace devmat::test::expr {

using detail::Broadcast;
using detail::DType;
using detail::ExprNode;
using detail::ExprOp;
using detail::ExprPtr;

inline std::shared_ptr<ExprNode> make(ExprOp op, DType t, Index rows, Index cols) {
  auto n = std::make_shared<ExprNode>();
  n->op = op;
  n->type = t;
  n->rows = rows;
  n->cols = cols;
  return n;
}

/// A rows x cols window at `data` (row stride `stride` elements).
inline ExprPtr leaf(DType t, const void* data, Index rows, Index cols, Index stride) {
  auto n = make(ExprOp::leaf, t, rows, cols);
  n->data = data;
  n->stride = stride;
  return n;
}

template <class T>
ExprPtr scalar(T v) {
  auto n = make(ExprOp::scalar, detail::dtype_of<T>::value, 1, 1);
  std::memcpy(&n->bits, &v, sizeof(T));
  return n;
}
/// A scalar of runtime type t holding `v` converted.
inline ExprPtr scalar_of(DType t, double v) {
  return detail::visit_dtype(t, [&](auto x) { return scalar(static_cast<decltype(x)>(v)); });
}

inline Index bdim(Index x, Index y) { return x == 1 ? y : x; }

inline ExprPtr un(ExprOp op, ExprPtr a, DType out) {
  auto n = make(op, out, a->rows, a->cols);
  n->a = std::move(a);
  return n;
}
inline ExprPtr un(ExprOp op, ExprPtr a) {
  const DType t = a->type;
  return un(op, std::move(a), t);
}
inline ExprPtr cast(DType to, ExprPtr a) { return un(ExprOp::cast, std::move(a), to); }

inline ExprPtr bin(ExprOp op, ExprPtr a, ExprPtr b, DType out) {
  auto n = make(op, out, bdim(a->rows, b->rows), bdim(a->cols, b->cols));
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}
inline ExprPtr bin(ExprOp op, ExprPtr a, ExprPtr b) {
  const DType t = a->type;
  return bin(op, std::move(a), std::move(b), t);
}
inline ExprPtr sel(ExprPtr m, ExprPtr a, ExprPtr b) {
  auto n = make(ExprOp::select, a->type, bdim(bdim(m->rows, a->rows), b->rows), bdim(bdim(m->cols, a->cols), b->cols));
  n->a = std::move(m);
  n->b = std::move(a);
  n->c = std::move(b);
  return n;
}

inline bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
inline bool is_signed(DType t) { return t != DType::u8 && t != DType::u64; }
constexpr DType kTypes[] = {DType::f32, DType::f64, DType::i32, DType::u8, DType::i64, DType::u64};

/// Every operation that applies to x and y (both of type T, same shape or broadcast) once,
/// summed in T: the unary functions, the binary operations (with a scalar on either side too),
/// comparisons, logic and select on masks, casts to every type and back.
inline ExprPtr all_ops(const ExprPtr& x, const ExprPtr& y, const ExprPtr& mask) {
  const DType t = x->type;
  ExprPtr acc = x;
  const auto add = [&](ExprPtr e) { acc = bin(ExprOp::add, acc, std::move(e)); };
  for (ExprOp op : {ExprOp::neg, ExprOp::abs, ExprOp::square}) add(un(op, x));
  if (is_float(t))
    for (ExprOp op : {ExprOp::sqrt, ExprOp::rsqrt, ExprOp::exp, ExprOp::log, ExprOp::log1p, ExprOp::expm1, ExprOp::sin,
                      ExprOp::cos, ExprOp::tanh, ExprOp::floor, ExprOp::ceil, ExprOp::round})
      add(un(op, y));
  for (ExprOp op : {ExprOp::sub, ExprOp::mul, ExprOp::div, ExprOp::min, ExprOp::max}) add(bin(op, x, y));
  add(bin(ExprOp::div, scalar_of(t, 3), y));
  add(bin(ExprOp::mul, x, scalar_of(t, 2)));
  if (is_float(t)) add(bin(ExprOp::pow, un(ExprOp::abs, x), scalar_of(t, 0.75)));
  for (ExprOp op : {ExprOp::eq, ExprOp::ne, ExprOp::lt, ExprOp::le, ExprOp::gt, ExprOp::ge})
    add(cast(t, bin(op, x, y, DType::u8)));
  const ExprPtr m1 = bin(ExprOp::lt, x, y, DType::u8), m2 = un(ExprOp::logical_not, y, DType::u8);
  add(cast(t, bin(ExprOp::logical_and, m1, mask, DType::u8)));
  add(cast(t, bin(ExprOp::logical_or, m2, mask, DType::u8)));
  add(sel(mask, x, y));
  add(sel(x, scalar_of(t, 1), y));  // a mask of type T
  for (DType u : kTypes) add(cast(t, cast(u, x)));
  return acc;
}

}  // namespace devmat::test::expr
