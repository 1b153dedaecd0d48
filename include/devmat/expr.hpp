// devmat::Expr<T>: lazy element-wise expressions over matrices, views and scalars, evaluated in
// one pass by the library. Plain C++: an expression is a small runtime tree handed to
// libdevmat, which runs it as one kernel (src/expr/).
/// @file
/// Lazy element-wise expressions (devmat::Expr): operators, functions, comparisons,
/// broadcasting and fused reductions.
#pragma once

#include <devmat/device_matrix.hpp>
#include <devmat/error.hpp>
#include <devmat/gemm.hpp>
#include <devmat/matrix_view.hpp>
#include <devmat/stream.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace devmat {

template <class T> class Expr;

namespace detail {

struct ExprNode;  // the runtime tree, defined in src/expr
using ExprPtr = std::shared_ptr<const ExprNode>;

/// Element types of expression nodes.
enum class DType : std::uint8_t { f32, f64, i32, u8, i64, u64 };

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::u64; };

/// What an expression node does. Unary ops take `a`; binary ops `a` and `b`; select takes the
/// mask `a` and the values `b` (where the mask is not 0) and `c`.
enum class ExprOp : std::uint8_t {
  leaf, scalar,
  // unary
  neg, abs, square, sqrt, rsqrt, exp, log, log1p, expm1, sin, cos, tanh, floor, ceil, round, logical_not, cast,
  // binary
  add, sub, mul, div, min, max, pow, eq, ne, lt, le, gt, ge, logical_and, logical_or,
  // ternary
  select,
};

// Node builders and evaluators, in libdevmat. They check shapes (broadcasting) and throw
// shape_error / std::invalid_argument before anything runs.
template <class T> ExprPtr expr_leaf(const MatrixView<const T>& v);
template <class T> ExprPtr expr_matrix_leaf(const DeviceMatrix<T>& m);  // expr_leaf(m.view()), with no view
template <class T> ExprPtr expr_scalar(T value);
ExprPtr expr_unary(ExprOp op, ExprPtr a, DType out);
ExprPtr expr_binary(ExprOp op, ExprPtr a, ExprPtr b, DType out, const char* name);
ExprPtr expr_select(ExprPtr mask, ExprPtr a, ExprPtr b);
Index expr_rows(const ExprNode& e) noexcept;
Index expr_cols(const ExprNode& e) noexcept;
Stream expr_stream(const ExprNode& e);
template <class T> DeviceMatrix<T> expr_eval(const ExprPtr& e);
template <class T> void expr_assign(const ExprPtr& e, const MatrixView<T>& out);
template <class T> DeviceMatrix<sum_t<T>> expr_sum(const ExprPtr& e);
template <class T> DeviceMatrix<T> expr_min(const ExprPtr& e);
template <class T> DeviceMatrix<T> expr_max(const ExprPtr& e);
template <class T> DeviceMatrix<double> expr_mean(const ExprPtr& e);
template <class T> DeviceMatrix<sum_t<T>> expr_row_sums(const ExprPtr& e);
template <class T> DeviceMatrix<sum_t<T>> expr_col_sums(const ExprPtr& e);
template <class T> Index expr_arg(const ExprPtr& e, bool max);

// ------------------------------------------------------------------ operands
/// What can appear in an expression: matrices, views, expressions (operand<X>::value), with
/// their element type; arithmetic scalars convert to the other operand's element type.
template <class X> struct operand { static constexpr bool value = false; };
template <class T> struct operand<DeviceMatrix<T>> {
  static constexpr bool value = true;
  using type = T;
};
template <class T> struct operand<MatrixView<T>> {
  static constexpr bool value = true;
  using type = std::remove_const_t<T>;
};
template <class T> struct operand<Expr<T>> {
  static constexpr bool value = true;
  using type = T;
};
template <class X> inline constexpr bool is_operand_v = operand<std::decay_t<X>>::value;
template <class X> struct is_expr : std::false_type {};
template <class T> struct is_expr<Expr<T>> : std::true_type {};
template <class X> inline constexpr bool is_expr_v = is_expr<std::decay_t<X>>::value;
template <class X> inline constexpr bool is_scalar_v = std::is_arithmetic_v<std::decay_t<X>>;
template <class X> using operand_t = typename operand<std::decay_t<X>>::type;

template <class T> ExprPtr node_of(const DeviceMatrix<T>& m) { return expr_matrix_leaf<T>(m); }
template <class T> ExprPtr node_of(const MatrixView<T>& v) { return expr_leaf<std::remove_const_t<T>>(v); }
template <class T> ExprPtr node_of(const Expr<T>& e);
template <class T> ExprPtr node_of(Expr<T>&& e);

/// The element type of a binary operation on X and Y: the operands' common element type (a
/// scalar takes the other side's). Two different element types are a compile error.
template <class X, class Y, bool kXOperand = is_operand_v<X>, bool kYOperand = is_operand_v<Y>>
struct common_element;
template <class X, class Y> struct common_element<X, Y, true, true> {
  static_assert(std::is_same_v<operand_t<X>, operand_t<Y>>,
                "devmat: an expression mixes element types; convert one side first with cast<U>() "
                "(e.g. A.cast<float>() + B)");
  using type = operand_t<X>;
};
template <class X, class Y> struct common_element<X, Y, true, false> { using type = operand_t<X>; };
template <class X, class Y> struct common_element<X, Y, false, true> { using type = operand_t<Y>; };

/// An operand or a scalar as a node of element type T. A temporary expression hands over its
/// tree (the operators take their operands by forwarding reference for this): building
/// `(A + B) * 2` then moves, rather than shares, the tree of `A + B`.
template <class T, class X>
ExprPtr as_node(X&& x) {
  if constexpr (is_operand_v<X>) return node_of(std::forward<X>(x));
  else return expr_scalar<T>(static_cast<T>(x));
}

/// Enables a binary expression: at least one side an operand, the other an operand or a scalar.
template <class X, class Y>
inline constexpr bool binary_ok_v =
    (is_operand_v<X> && (is_operand_v<Y> || is_scalar_v<Y>)) || (is_scalar_v<X> && is_operand_v<Y>);
/// Enables an element-wise `*`: exactly one side a scalar (two matrices make a matrix product).
template <class X, class Y>
inline constexpr bool scale_ok_v = (is_operand_v<X> && is_scalar_v<Y>) || (is_scalar_v<X> && is_operand_v<Y>);

template <class T>
inline constexpr bool is_float_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class Out, class X, class Y>
Expr<Out> make_binary(ExprOp op, X&& x, Y&& y, const char* name) {
  using T = typename common_element<X, Y>::type;
  return Expr<Out>(expr_binary(op, as_node<T>(std::forward<X>(x)), as_node<T>(std::forward<Y>(y)),
                               dtype_of<Out>::value, name));
}
template <class X>
Expr<operand_t<X>> make_unary(ExprOp op, X&& x) {
  using T = operand_t<X>;
  return Expr<T>(expr_unary(op, node_of(std::forward<X>(x)), dtype_of<T>::value));
}
template <class X>
Expr<operand_t<X>> make_float_unary(ExprOp op, X&& x) {
  static_assert(is_float_v<operand_t<X>>,
                "devmat: this function is for float and double matrices; convert first with cast<float>()");
  return make_unary(op, std::forward<X>(x));
}
}  // namespace detail

/// A lazy element-wise expression with elements of type T: built by the operators and
/// functions below from matrices, views and scalars, run as one kernel when it is assigned to
/// (or converted to) a DeviceMatrix, written into a view, eval()-uated or reduced.
///
/// An expression holds its operands alive (`auto e = A + B;` stays valid after A is destroyed)
/// and runs on its first operand's stream, after the work queued on every operand. Its shape
/// follows NumPy's broadcasting in 2D: an operand of 1 x cols, rows x 1 or 1 x 1 stretches
/// across the other. Evaluated fused, it gives bitwise the elements that evaluating one
/// operator at a time would (no multiply-add contraction).
template <class T>
class Expr {
 public:
  /// The element type.
  using value_type = T;

  /// Rows of the result.
  Index rows() const noexcept { return detail::expr_rows(*node_); }
  /// Columns of the result.
  Index cols() const noexcept { return detail::expr_cols(*node_); }
  /// rows() * cols().
  Index size() const noexcept { return rows() * cols(); }
  /// True when the result has no element.
  bool empty() const noexcept { return size() == 0; }
  /// The stream it runs on: its first matrix operand's.
  Stream stream() const { return detail::expr_stream(*node_); }

  /// A matrix as an expression (a leaf; its memory is kept alive by the expression).
  Expr(const DeviceMatrix<T>& m) : node_(detail::expr_matrix_leaf<T>(m)) {}
  /// A view as an expression (a leaf; a view of a matrix keeps its memory alive).
  Expr(const MatrixView<const T>& v) : node_(detail::expr_leaf<T>(v)) {}

  /// Runs the expression into a new matrix (one kernel). `DeviceMatrix<T> C = e;` and
  /// `C = e;` do the same.
  DeviceMatrix<T> eval() const { return detail::expr_eval<T>(node_); }
  /// The elements in row-major order (runs the expression); blocks.
  std::vector<T> to_vector() const { return eval().to_vector(); }
  /// A new cols() x rows() matrix (runs the expression, then transposes).
  DeviceMatrix<T> transpose() const { return eval().transpose(); }

  ///@{
  /// Reductions of the expression, fused into one pass (nothing is written but the result).
  /// As DeviceMatrix's: sum() in sum_t<T>, deterministic; min/max/mean of an empty expression
  /// are a shape_error; the host forms block, the _async forms leave a 1x1 matrix.
  DeviceMatrix<sum_t<T>> sum_async() const { return detail::expr_sum<T>(node_); }
  DeviceMatrix<T> min_async() const { return detail::expr_min<T>(node_); }
  DeviceMatrix<T> max_async() const { return detail::expr_max<T>(node_); }
  DeviceMatrix<double> mean_async() const { return detail::expr_mean<T>(node_); }
  sum_t<T> sum() const { return sum_async().to_vector()[0]; }
  T min() const { return min_async().to_vector()[0]; }
  T max() const { return max_async().to_vector()[0]; }
  double mean() const { return mean_async().to_vector()[0]; }
  DeviceMatrix<sum_t<T>> row_sums() const { return detail::expr_row_sums<T>(node_); }
  DeviceMatrix<sum_t<T>> col_sums() const { return detail::expr_col_sums<T>(node_); }
  ///@}

  /// Converts the element type (DeviceMatrix::cast's rules), lazily.
  template <class U> Expr<U> cast() const { return Expr<U>(detail::expr_unary(detail::ExprOp::cast, node_, detail::dtype_of<U>::value)); }
  ///@{
  /// Element-wise functions as methods (Eigen's array style); see the free functions.
  Expr abs() const { return detail::make_unary(detail::ExprOp::abs, *this); }
  Expr square() const { return detail::make_unary(detail::ExprOp::square, *this); }
  Expr sqrt() const { return detail::make_float_unary(detail::ExprOp::sqrt, *this); }
  Expr exp() const { return detail::make_float_unary(detail::ExprOp::exp, *this); }
  Expr log() const { return detail::make_float_unary(detail::ExprOp::log, *this); }
  ///@}

  /// The runtime tree (for the library).
  const detail::ExprPtr& node() const& noexcept { return node_; }
  /// The runtime tree of an expression that is about to go, taken rather than shared (for the
  /// operators, which build on temporaries).
  detail::ExprPtr node() && noexcept { return std::move(node_); }
  /// Wraps a runtime tree whose element type is T (for the library and the operators).
  explicit Expr(detail::ExprPtr node) noexcept : node_(std::move(node)) {}

 private:
  detail::ExprPtr node_;
};

namespace detail {
template <class T> ExprPtr node_of(const Expr<T>& e) { return e.node(); }
template <class T> ExprPtr node_of(Expr<T>&& e) { return std::move(e).node(); }
}  // namespace detail

// ------------------------------------------------------------------ arithmetic
///@{
/// Element-wise `+`, `-`, `/` of matrices, views, expressions and scalars in any mix, and `*`
/// with a scalar on either side (two matrices multiply as matrices: gemm.hpp). Lazy.
/// Integer division by an element 0 gives 0; by the scalar 0 it is std::invalid_argument.
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto operator+(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::add, std::forward<X>(x), std::forward<Y>(y), "operator+");
}
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto operator-(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::sub, std::forward<X>(x), std::forward<Y>(y), "operator-");
}
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto operator/(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::div, std::forward<X>(x), std::forward<Y>(y), "operator/");
}
template <class X, class Y, std::enable_if_t<detail::scale_ok_v<X, Y>, int> = 0>
auto operator*(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::mul, std::forward<X>(x), std::forward<Y>(y), "operator*");
}
/// Element-wise negation.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
auto operator-(X&& x) {
  return detail::make_unary(detail::ExprOp::neg, std::forward<X>(x));
}
///@}

// ------------------------------------------------------------------ comparisons and logic
///@{
/// Element-wise comparisons: a DeviceMatrix<uint8_t>-valued mask of 0 and 1. Lazy.
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator==(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::eq, std::forward<X>(x), std::forward<Y>(y), "operator=="); }
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator!=(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::ne, std::forward<X>(x), std::forward<Y>(y), "operator!="); }
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator<(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::lt, std::forward<X>(x), std::forward<Y>(y), "operator<"); }
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator<=(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::le, std::forward<X>(x), std::forward<Y>(y), "operator<="); }
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator>(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::gt, std::forward<X>(x), std::forward<Y>(y), "operator>"); }
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator>=(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::ge, std::forward<X>(x), std::forward<Y>(y), "operator>="); }
///@}

///@{
/// Logic on masks (uint8_t; any non-zero element is true): 0/1 results. Lazy; both sides are
/// always evaluated.
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator&&(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::logical_and, std::forward<X>(x), std::forward<Y>(y), "operator&&"); }
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
Expr<std::uint8_t> operator||(X&& x, Y&& y) { return detail::make_binary<std::uint8_t>(detail::ExprOp::logical_or, std::forward<X>(x), std::forward<Y>(y), "operator||"); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
Expr<std::uint8_t> operator!(X&& x) {
  return Expr<std::uint8_t>(
      detail::expr_unary(detail::ExprOp::logical_not, detail::node_of(std::forward<X>(x)), detail::DType::u8));
}
///@}

// ------------------------------------------------------------------ functions
///@{
/// Element-wise functions of a matrix, view or expression. Lazy. abs and square take every
/// element type; the others float and double (a compile error otherwise: cast<float>() first).
/// round rounds half away from zero (std::round); rsqrt is 1 / sqrt.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto abs(X&& x) { return detail::make_unary(detail::ExprOp::abs, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto square(X&& x) { return detail::make_unary(detail::ExprOp::square, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto sqrt(X&& x) { return detail::make_float_unary(detail::ExprOp::sqrt, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto rsqrt(X&& x) { return detail::make_float_unary(detail::ExprOp::rsqrt, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto exp(X&& x) { return detail::make_float_unary(detail::ExprOp::exp, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto log(X&& x) { return detail::make_float_unary(detail::ExprOp::log, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto log1p(X&& x) { return detail::make_float_unary(detail::ExprOp::log1p, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto expm1(X&& x) { return detail::make_float_unary(detail::ExprOp::expm1, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto sin(X&& x) { return detail::make_float_unary(detail::ExprOp::sin, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto cos(X&& x) { return detail::make_float_unary(detail::ExprOp::cos, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto tanh(X&& x) { return detail::make_float_unary(detail::ExprOp::tanh, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto floor(X&& x) { return detail::make_float_unary(detail::ExprOp::floor, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto ceil(X&& x) { return detail::make_float_unary(detail::ExprOp::ceil, std::forward<X>(x)); }
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0> auto round(X&& x) { return detail::make_float_unary(detail::ExprOp::round, std::forward<X>(x)); }
///@}

///@{
/// Element-wise min and max of two operands, or of an operand and a scalar. Lazy. NaN
/// propagates as in std::fmin's opposite: a NaN operand gives NaN.
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto min(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::min, std::forward<X>(x), std::forward<Y>(y), "min");
}
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto max(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::max, std::forward<X>(x), std::forward<Y>(y), "max");
}
///@}

/// The element-wise product of two operands (`x * y` of two matrices is the matrix product),
/// or of an operand and a scalar. Lazy.
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto cwise_product(X&& x, Y&& y) {
  return detail::make_binary<typename detail::common_element<X, Y>::type>(detail::ExprOp::mul, std::forward<X>(x), std::forward<Y>(y), "cwise_product");
}

/// Element-wise x^y (float and double), matrix^scalar, scalar^matrix or matrix^matrix. Lazy.
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto pow(X&& x, Y&& y) {
  using T = typename detail::common_element<X, Y>::type;
  static_assert(detail::is_float_v<T>, "devmat: pow is for float and double; convert first with cast<float>()");
  return detail::make_binary<T>(detail::ExprOp::pow, std::forward<X>(x), std::forward<Y>(y), "pow");
}

/// Element-wise min(max(x, lo), hi); lo and hi are scalars or operands. Lazy.
template <class X, class L, class H, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
auto clamp(X&& x, const L& lo, const H& hi) {
  return min(max(std::forward<X>(x), lo), hi);
}

/// Where `mask` is not 0, `a`; elsewhere `b` (operands or scalars, broadcast). Lazy.
template <class M, class A, class B,
          std::enable_if_t<detail::is_operand_v<M> && (detail::is_operand_v<A> || detail::is_operand_v<B>), int> = 0>
auto select(M&& mask, A&& a, B&& b) {
  using T = typename detail::common_element<A, B>::type;
  return Expr<T>(detail::expr_select(detail::node_of(std::forward<M>(mask)), detail::as_node<T>(std::forward<A>(a)),
                                     detail::as_node<T>(std::forward<B>(b))));
}

/// Converts the element type of a matrix, view or expression, lazily (DeviceMatrix::cast's rules).
template <class U, class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
Expr<U> cast(X&& x) {
  return Expr<U>(detail::expr_unary(detail::ExprOp::cast, detail::node_of(std::forward<X>(x)), detail::dtype_of<U>::value));
}

// ------------------------------------------------------------------ products with expressions
namespace detail {
template <class T> DeviceMatrix<T> product_operand(const Expr<T>& e) { return e.eval(); }
template <class T> MatrixView<const T> product_operand(const DeviceMatrix<T>& m) { return m.view(); }
template <class T> MatrixView<const T> product_operand(const MatrixView<T>& v) { return v; }
}  // namespace detail

/// The matrix product of two operands one of which is an expression: the expression is run
/// first, then multiplied as matrices (gemm.hpp).
template <class X, class Y,
          std::enable_if_t<detail::is_operand_v<X> && detail::is_operand_v<Y> &&
                               (detail::is_expr_v<X> || detail::is_expr_v<Y>), int> = 0>
auto operator*(const X& x, const Y& y) {
  using T = typename detail::common_element<X, Y>::type;
  const auto a = detail::product_operand(x);
  const auto b = detail::product_operand(y);
  return MatrixView<const T>(a) * MatrixView<const T>(b);
}

// ------------------------------------------------------------------ more reductions
namespace detail {
/// (row, column) of the first smallest (largest) element of x in row-major order.
template <class X>
std::pair<Index, Index> arg_extreme(const X& x, bool max) {
  const Expr<operand_t<X>> e(node_of(x));
  const Index i = expr_arg<operand_t<X>>(e.node(), max);
  return {i / e.cols(), i % e.cols()};
}
}  // namespace detail

/// Sum of the element-wise products of x and y (same shape or broadcasting), fused; blocks.
/// float products are rounded to float, then summed in double (as sum()).
template <class X, class Y, std::enable_if_t<detail::binary_ok_v<X, Y>, int> = 0>
auto dot(const X& x, const Y& y) {
  using T = typename detail::common_element<X, Y>::type;
  return detail::make_binary<T>(detail::ExprOp::mul, x, y, "dot").sum();
}
/// Sum of the squares of the elements (Eigen's squaredNorm), fused; blocks.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
auto squared_norm(const X& x) {
  return square(x).sum();
}
/// The Frobenius norm, sqrt(squared_norm(x)), in double; blocks.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
double norm(const X& x) {
  return std::sqrt(static_cast<double>(squared_norm(x)));
}
///@{
/// (row, column) of the first smallest / largest element in row-major order (a NaN, if there
/// is one, is the extreme); blocks. An empty operand is a shape_error.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
std::pair<Index, Index> arg_min(const X& x) {
  return detail::arg_extreme(x, false);
}
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
std::pair<Index, Index> arg_max(const X& x) {
  return detail::arg_extreme(x, true);
}
///@}
/// Number of elements that are not 0 (NaN counts), fused; blocks.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
Index count_nonzero(const X& x) {
  return static_cast<Index>((x != 0).sum());
}
/// True when some element is not 0; blocks.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
bool any(const X& x) {
  return count_nonzero(x) > 0;
}
/// True when no element is 0 (true for an empty operand); blocks.
template <class X, std::enable_if_t<detail::is_operand_v<X>, int> = 0>
bool all(const X& x) {
  return count_nonzero(x) == Expr<detail::operand_t<X>>(detail::node_of(x)).size();
}
/// Eigen's isApprox: ||x - y|| <= rel_tol * min(||x||, ||y||) (Frobenius norms, computed in
/// double), for float and double; shapes must match. rel_tol defaults to Eigen's (1e-5 for
/// float, 1e-12 for double). Blocks.
template <class X, class Y, std::enable_if_t<detail::is_operand_v<X> && detail::is_operand_v<Y>, int> = 0>
bool is_approx(const X& x, const Y& y, double rel_tol = -1) {
  using T = typename detail::common_element<X, Y>::type;
  static_assert(detail::is_float_v<T>, "devmat: is_approx is for float and double; convert first with cast<float>()");
  if (rel_tol < 0) rel_tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  const Expr<double> dx = cast<double>(x), dy = cast<double>(y);
  if (dx.rows() != dy.rows() || dx.cols() != dy.cols())
    detail::throw_shape_error("is_approx", dx.rows(), dx.cols(), dy.rows(), dy.cols());
  const double d = squared_norm(dx - dy);
  return d <= rel_tol * rel_tol * std::min(static_cast<double>(squared_norm(dx)), static_cast<double>(squared_norm(dy)));
}

}  // namespace devmat
