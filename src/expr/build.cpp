// Building expression trees: leaves, scalars, operators; the shape rules (2D broadcasting) and
// the argument checks, all before anything runs.
#include "expr/node.hpp"

#include "detail/instantiate.hpp"

#include <devmat/error.hpp>

#include <stdexcept>
#include <string>

namespace devmat::detail {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::u8: return "uint8_t";
    case DType::i64: return "int64_t";
    default: return "uint64_t";
  }
}

namespace {

std::shared_ptr<ExprNode> node(ExprOp op, DType type, Index rows, Index cols) {
  auto n = std::make_shared<ExprNode>();
  n->op = op;
  n->type = type;
  n->rows = rows;
  n->cols = cols;
  return n;
}

/// The broadcast extent of one dimension, or -1 when the two do not broadcast.
Index broadcast(Index x, Index y) {
  if (x == y || y == 1) return x;
  if (x == 1) return y;
  return -1;
}

bool is_zero_scalar(const ExprNode& n) {
  if (n.op != ExprOp::scalar) return false;
  return visit_dtype(n.type, [&](auto t) { return scalar_value<decltype(t)>(n) == decltype(t)(0); });
}

}  // namespace

template <class T>
ExprPtr expr_leaf(const MatrixView<const T>& v) {
  auto n = node(ExprOp::leaf, dtype_of<T>::value, v.rows(), v.cols());
  n->data = v.data();
  n->stride = v.stride();
  n->keep = Access::keep(v);
  n->stream = Access::raw_stream(v);  // unset for an empty matrix: evaluation picks one
  return n;
}

template <class T>
ExprPtr expr_scalar(T value) {
  auto n = node(ExprOp::scalar, dtype_of<T>::value, 1, 1);
  std::memcpy(&n->bits, &value, sizeof(T));
  return n;
}

ExprPtr expr_unary(ExprOp op, ExprPtr a, DType out) {
  auto n = node(op, out, a->rows, a->cols);
  n->a = std::move(a);
  return n;
}

ExprPtr expr_binary(ExprOp op, ExprPtr a, ExprPtr b, DType out, const char* name) {
  const Index rows = broadcast(a->rows, b->rows), cols = broadcast(a->cols, b->cols);
  if (rows < 0 || cols < 0)
    throw shape_error(std::string("devmat: ") + name + ": shapes " + shape_string(a->rows, a->cols) + " and " +
                      shape_string(b->rows, b->cols) +
                      " do not broadcast (each dimension must match or be 1)");
  if (op == ExprOp::div && !dtype_is_float(b->type) && is_zero_scalar(*b))
    throw std::invalid_argument(std::string("devmat: ") + name + ": integer division by the scalar 0");
  auto n = node(op, out, rows, cols);
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

ExprPtr expr_select(ExprPtr mask, ExprPtr a, ExprPtr b) {
  Index rows = broadcast(mask->rows, a->rows), cols = broadcast(mask->cols, a->cols);
  if (rows >= 0) rows = broadcast(rows, b->rows);
  if (cols >= 0) cols = broadcast(cols, b->cols);
  if (rows < 0 || cols < 0)
    throw shape_error("devmat: select: shapes " + shape_string(mask->rows, mask->cols) + " (mask), " +
                      shape_string(a->rows, a->cols) + " and " + shape_string(b->rows, b->cols) +
                      " do not broadcast (each dimension must match or be 1)");
  auto n = node(ExprOp::select, a->type, rows, cols);
  n->a = std::move(mask);
  n->b = std::move(a);
  n->c = std::move(b);
  return n;
}

Index expr_rows(const ExprNode& e) noexcept { return e.rows; }
Index expr_cols(const ExprNode& e) noexcept { return e.cols; }

namespace {
const ExprNode* first_leaf(const ExprNode& e) {
  if (e.op == ExprOp::leaf) return &e;
  for (const ExprPtr* k : {&e.a, &e.b, &e.c})
    if (*k)
      if (const ExprNode* l = first_leaf(**k)) return l;
  return nullptr;
}
}  // namespace

Stream expr_raw_stream(const ExprNode& e) {
  const ExprNode* l = first_leaf(e);
  return l ? l->stream : Access::unset();
}

Stream expr_stream(const ExprNode& e) {
  const Stream s = expr_raw_stream(e);
  return Access::is_set(s) ? s : Stream::per_thread();
}

#define DEVMAT_INSTANTIATE(T)                                   \
  template ExprPtr expr_leaf<T>(const MatrixView<const T>&);    \
  template ExprPtr expr_scalar<T>(T);
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat::detail
