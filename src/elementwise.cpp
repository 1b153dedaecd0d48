// Element-wise members of DeviceMatrix and MatrixView: assignment and in-place updates from
// expressions, and the eager methods (abs, clamp, cwise_*, threshold, cast). Each builds an
// expression and runs it through the one engine of src/expr, so a method, an operator and a
// fused formula compute every element with the same code.
#include "detail/instantiate.hpp"
#include "expr/node.hpp"

#include <devmat/device_matrix.hpp>
#include <devmat/expr.hpp>

#include <stdexcept>

namespace devmat {
namespace detail {
namespace {

template <class T>
ExprPtr leaf(const MatrixView<const T>& v) {
  return expr_leaf<T>(v);
}

template <class T>
ExprPtr binary(ExprOp op, const ExprPtr& a, const ExprPtr& b, const char* name) {
  return expr_binary(op, a, b, dtype_of<T>::value, name);
}

/// out op= x, in place on out's stream.
template <class T>
void update(const MatrixView<T>& out, ExprOp op, const ExprPtr& x, const char* name) {
  expr_assign<T>(binary<T>(op, leaf<T>(out), x, name), out);
}

}  // namespace
}  // namespace detail

using detail::ExprOp;

// ------------------------------------------------------------------ matrices
template <class T>
DeviceMatrix<T>::DeviceMatrix(const Expr<T>& e) : DeviceMatrix(detail::expr_eval<T>(e.node())) {}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(const Expr<T>& e) {
  if (!empty() && rows_ == e.rows() && cols_ == e.cols()) {
    detail::expr_assign_matrix<T>(*e.node(), *this);
    return *this;
  }
  return *this = detail::expr_eval<T>(e.node());
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(const MatrixView<const T>& v) {
  return *this = Expr<T>(v);
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator+=(const Expr<T>& x) {
  view() += x;
  return *this;
}
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator-=(const Expr<T>& x) {
  view() -= x;
  return *this;
}
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator+=(T s) {
  view() += s;
  return *this;
}
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator-=(T s) {
  view() -= s;
  return *this;
}
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator*=(T s) {
  view() *= s;
  return *this;
}
template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator/=(T s) {
  detail::update<T>(view(), ExprOp::div, detail::expr_scalar<T>(s), "operator/=");
  return *this;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::abs() const {
  return view().abs();
}
template <class T>
DeviceMatrix<T> DeviceMatrix<T>::clamp(T lo, T hi) const {
  return view().clamp(lo, hi);
}
template <class T>
DeviceMatrix<std::uint8_t> DeviceMatrix<T>::threshold(T t) const {
  return view().threshold(t);
}
template <class T>
template <class U>
DeviceMatrix<U> DeviceMatrix<T>::cast() const {
  return view().template cast<U>();
}

#define DEVMAT_CWISE(name, op)                                                                               \
  template <class T>                                                                                         \
  DeviceMatrix<T> DeviceMatrix<T>::name(const Expr<T>& b) const {                                            \
    return detail::expr_eval<T>(detail::binary<T>(op, detail::leaf<T>(view()), b.node(), #name));           \
  }
DEVMAT_CWISE(cwise_product, ExprOp::mul)
DEVMAT_CWISE(cwise_quotient, ExprOp::div)
DEVMAT_CWISE(cwise_max, ExprOp::max)
DEVMAT_CWISE(cwise_min, ExprOp::min)
#undef DEVMAT_CWISE

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::cwise_max(T s) const {
  return detail::expr_eval<T>(detail::binary<T>(ExprOp::max, detail::leaf<T>(view()), detail::expr_scalar<T>(s), "cwise_max"));
}
template <class T>
DeviceMatrix<T> DeviceMatrix<T>::cwise_min(T s) const {
  return detail::expr_eval<T>(detail::binary<T>(ExprOp::min, detail::leaf<T>(view()), detail::expr_scalar<T>(s), "cwise_min"));
}

// ------------------------------------------------------------------ read-only views
template <class T>
DeviceMatrix<T> MatrixView<const T>::abs() const {
  return detail::expr_eval<T>(detail::expr_unary(ExprOp::abs, detail::leaf<T>(*this), detail::dtype_of<T>::value));
}

template <class T>
DeviceMatrix<T> MatrixView<const T>::clamp(T lo, T hi) const {
  if (hi < lo) throw std::invalid_argument("devmat: clamp: lo > hi");
  const auto lower = detail::binary<T>(ExprOp::max, detail::leaf<T>(*this), detail::expr_scalar<T>(lo), "clamp");
  return detail::expr_eval<T>(detail::binary<T>(ExprOp::min, lower, detail::expr_scalar<T>(hi), "clamp"));
}

template <class T>
DeviceMatrix<std::uint8_t> MatrixView<const T>::threshold(T t) const {
  const auto above = detail::expr_binary(ExprOp::gt, detail::leaf<T>(*this), detail::expr_scalar<T>(t),
                                         detail::DType::u8, "threshold");
  return detail::expr_eval<std::uint8_t>(detail::expr_select(above, detail::expr_scalar<std::uint8_t>(255),
                                                             detail::expr_scalar<std::uint8_t>(0)));
}

template <class T>
template <class U>
DeviceMatrix<U> MatrixView<const T>::cast() const {
  return detail::expr_eval<U>(detail::expr_unary(ExprOp::cast, detail::leaf<T>(*this), detail::dtype_of<U>::value));
}

// ------------------------------------------------------------------ writable views
template <class T>
MatrixView<T>& MatrixView<T>::operator=(const DeviceMatrix<T>& src) {
  return *this = src.view();
}

template <class T>
MatrixView<T>& MatrixView<T>::operator=(const Expr<T>& e) {
  detail::expr_assign<T>(e.node(), *this);
  return *this;
}

template <class T>
const MatrixView<T>& MatrixView<T>::operator+=(const Expr<T>& x) const {
  detail::update<T>(*this, ExprOp::add, x.node(), "operator+=");
  return *this;
}
template <class T>
const MatrixView<T>& MatrixView<T>::operator-=(const Expr<T>& x) const {
  detail::update<T>(*this, ExprOp::sub, x.node(), "operator-=");
  return *this;
}
template <class T>
const MatrixView<T>& MatrixView<T>::operator+=(T s) const {
  detail::update<T>(*this, ExprOp::add, detail::expr_scalar<T>(s), "operator+=");
  return *this;
}
template <class T>
const MatrixView<T>& MatrixView<T>::operator-=(T s) const {
  detail::update<T>(*this, ExprOp::sub, detail::expr_scalar<T>(s), "operator-=");
  return *this;
}
template <class T>
const MatrixView<T>& MatrixView<T>::operator*=(T s) const {
  detail::update<T>(*this, ExprOp::mul, detail::expr_scalar<T>(s), "operator*=");
  return *this;
}

#define DEVMAT_INSTANTIATE_CASTS(C, T)                               \
  template DeviceMatrix<float> C::cast<float>() const;               \
  template DeviceMatrix<double> C::cast<double>() const;             \
  template DeviceMatrix<std::int32_t> C::cast<std::int32_t>() const; \
  template DeviceMatrix<std::uint8_t> C::cast<std::uint8_t>() const; \
  template DeviceMatrix<std::int64_t> C::cast<std::int64_t>() const; \
  template DeviceMatrix<std::uint64_t> C::cast<std::uint64_t>() const;
#define DEVMAT_INSTANTIATE(T)                                                         \
  template DeviceMatrix<T>::DeviceMatrix(const Expr<T>&);                             \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator=(const Expr<T>&);               \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator=(const MatrixView<const T>&);   \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator+=(const Expr<T>&);              \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator-=(const Expr<T>&);              \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator+=(T);                           \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator-=(T);                           \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator*=(T);                           \
  template DeviceMatrix<T>& DeviceMatrix<T>::operator/=(T);                           \
  template DeviceMatrix<T> DeviceMatrix<T>::abs() const;                              \
  template DeviceMatrix<T> DeviceMatrix<T>::clamp(T, T) const;                        \
  template DeviceMatrix<T> DeviceMatrix<T>::cwise_product(const Expr<T>&) const;      \
  template DeviceMatrix<T> DeviceMatrix<T>::cwise_quotient(const Expr<T>&) const;     \
  template DeviceMatrix<T> DeviceMatrix<T>::cwise_max(const Expr<T>&) const;          \
  template DeviceMatrix<T> DeviceMatrix<T>::cwise_min(const Expr<T>&) const;          \
  template DeviceMatrix<T> DeviceMatrix<T>::cwise_max(T) const;                       \
  template DeviceMatrix<T> DeviceMatrix<T>::cwise_min(T) const;                       \
  template DeviceMatrix<std::uint8_t> DeviceMatrix<T>::threshold(T) const;            \
  template DeviceMatrix<T> MatrixView<const T>::abs() const;                          \
  template DeviceMatrix<T> MatrixView<const T>::clamp(T, T) const;                    \
  template DeviceMatrix<std::uint8_t> MatrixView<const T>::threshold(T) const;        \
  template MatrixView<T>& MatrixView<T>::operator=(const DeviceMatrix<T>&);           \
  template MatrixView<T>& MatrixView<T>::operator=(const Expr<T>&);                   \
  template const MatrixView<T>& MatrixView<T>::operator+=(const Expr<T>&) const;      \
  template const MatrixView<T>& MatrixView<T>::operator-=(const Expr<T>&) const;      \
  template const MatrixView<T>& MatrixView<T>::operator+=(T) const;                   \
  template const MatrixView<T>& MatrixView<T>::operator-=(T) const;                   \
  template const MatrixView<T>& MatrixView<T>::operator*=(T) const;                   \
  DEVMAT_INSTANTIATE_CASTS(MatrixView<const T>, T)                                    \
  DEVMAT_INSTANTIATE_CASTS(DeviceMatrix<T>, T)
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE
#undef DEVMAT_INSTANTIATE_CASTS

}  // namespace devmat
