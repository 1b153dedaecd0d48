// The entry points of expressions (include/devmat/expr.hpp): evaluation into a new matrix or into
// a window, and the fused reductions. Each lowers the tree to a Program, orders the stream after
// every operand, handles aliasing, and hands the program to the engine (expr/engine.hpp).
#include "detail/device_guard.hpp"
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "detail/thread_cache.hpp"
#include "detail/view_overlap.hpp"
#include "expr/engine.hpp"
#include "expr/node.hpp"
#include "expr/program.hpp"

#include <devmat/expr.hpp>

#include <memory>
#include <string>

namespace devmat::detail {
namespace {

/// The program of a tree, lowered into the calling thread's scratch Program, whose memory the
/// next evaluation reuses (an evaluation like the last one allocates nothing), or into one of
/// its own while the scratch one is taken.
class Lowered {
 public:
  explicit Lowered(const ExprNode& root) {
    Scratch* s = ThreadCache<Scratch>::get();
    if (s && !s->busy) {
      s->busy = true;
      scratch_ = s;
      p_ = &s->program;
    } else {
      own_ = std::make_unique<Program>();
      p_ = own_.get();
    }
    try {
      lower_into(root, *p_);
    } catch (...) {
      release();
      throw;
    }
  }
  ~Lowered() { release(); }
  Lowered(const Lowered&) = delete;
  Lowered& operator=(const Lowered&) = delete;
  const Program& operator*() const noexcept { return *p_; }

 private:
  struct Scratch {
    Program program;
    bool busy = false;
  };
  void release() noexcept {
    if (scratch_) scratch_->busy = false;
    scratch_ = nullptr;
  }

  Program* p_ = nullptr;
  Scratch* scratch_ = nullptr;
  std::unique_ptr<Program> own_;
};

/// Orders `s` after the pending work on every operand and records the use on their memory.
void order_leaves(const Program& p, const Stream& s) {
  for (const ProgramLeaf& l : p.leaves)
    if (l.node->keep) l.node->keep->prepare_use(s);
}

Window leaf_window(const ProgramLeaf& l) {
  return {reinterpret_cast<std::uintptr_t>(l.data), l.node->rows, l.node->cols, l.stride, dtype_size(l.type)};
}

/// Whether writing `out` while the program reads its leaves could read an element already
/// written: a leaf shares memory with `out` without being that very window.
bool reads_overlap(const Program& p, const Window& out) {
  for (const ProgramLeaf& l : p.leaves)
    if (overlap_differs(out, leaf_window(l))) return true;
  return false;
}

template <class Out>
DeviceMatrix<Out> reduce(const ExprPtr& e, ReduceKind kind, Index rows, Index cols) {
  const Stream s = expr_stream(*e);
  const DeviceGuard device(s);  // the stream's device, whatever the caller's current one
  DeviceMatrix<Out> out(rows, cols, s);
  if (out.empty()) return out;
  if (e->rows * e->cols == 0) {  // sums of nothing
    out.fill(Out(0));
    return out;
  }
  const Lowered lowered(*e);
  const Program& p = *lowered;
  order_leaves(p, s);
  run_reduce(p, kind, out.data(), s);
  return out;
}

/// The window an expression is assigned to: a view's or a whole matrix's (with no view made).
template <class T>
struct Target {
  T* data;
  Index rows, cols, stride;
  Buffer* buf;  // its memory's bookkeeping (null for foreign memory)
};

/// out = e on stream s (out has e's shape and is not empty).
template <class T>
void assign(const ExprNode& e, const Target<T>& out, const Stream& s) {
  const DeviceGuard device(s);
  const Lowered lowered(e);
  const Program& p = *lowered;
  if (out.buf) out.buf->prepare_use(s);
  order_leaves(p, s);
  const Window window{reinterpret_cast<std::uintptr_t>(out.data), out.rows, out.cols, out.stride, sizeof(T)};
  if (reads_overlap(p, window)) {
    // Read the whole right side first: into a temporary, then into the window.
    DeviceMatrix<T> tmp(out.rows, out.cols, s);
    run_elementwise(p, tmp.data(), tmp.cols(), s);
    copy_rows(out.data, out.stride, static_cast<const T*>(tmp.data()), tmp.cols(), out.rows, out.cols, s);
    return;
  }
  run_elementwise(p, out.data, out.stride, s);
}

}  // namespace

template <class T>
void copy_rows_unaligned(T* dst, Index ld_dst, const T* src, Index ld_src, Index rows, Index cols, const Stream& s) {
  // The program of one leaf: the engine's slot path moves unaligned rows as aligned vectors.
  ExprNode leaf(ExprOp::leaf, dtype_of<T>::value, rows, cols);
  leaf.data = src;
  leaf.stride = ld_src;
  const Lowered lowered(leaf);
  run_elementwise(*lowered, dst, ld_dst, s);
}

template <class T>
DeviceMatrix<T> expr_eval(const ExprPtr& e) {
  if (e->rows * e->cols == 0) {  // nothing to run: no device needed unless an operand has a stream
    const Stream raw = expr_raw_stream(*e);
    return Access::is_set(raw) ? DeviceMatrix<T>(e->rows, e->cols, raw) : DeviceMatrix<T>(e->rows, e->cols);
  }
  const Stream s = expr_stream(*e);
  const DeviceGuard device(s);
  DeviceMatrix<T> out(e->rows, e->cols, s);
  if (out.empty()) return out;
  const Lowered lowered(*e);
  const Program& p = *lowered;
  order_leaves(p, s);
  run_elementwise(p, out.data(), out.cols(), s);
  return out;
}

template <class T>
void expr_assign(const ExprPtr& e, const MatrixView<T>& out) {
  if (e->rows != out.rows() || e->cols != out.cols())
    throw_shape_error("assignment of an expression", out.rows(), out.cols(), e->rows, e->cols);
  if (out.empty()) return;
  const Target<T> target{out.data(), out.rows(), out.cols(), out.stride(), Access::buffer<T>(out)};
  // The window's stream, by reference (a view with elements has one; stream() copies it).
  const Stream& raw = Access::raw_stream<T>(out);
  if (Access::is_set(raw)) assign(*e, target, raw);
  else assign(*e, target, out.stream());
}

template <class T>
void expr_assign_matrix(const ExprNode& e, DeviceMatrix<T>& m) {
  const Target<T> target{m.data(), m.rows(), m.cols(), m.cols(), Access::buffer(m)};
  const Stream& raw = Access::raw_stream(m);
  if (Access::is_set(raw)) assign(e, target, raw);
  else assign(e, target, m.stream());
}

template <class T>
DeviceMatrix<sum_t<T>> expr_sum(const ExprPtr& e) {
  return reduce<sum_t<T>>(e, ReduceKind::sum, 1, 1);
}

template <class T>
DeviceMatrix<T> expr_min(const ExprPtr& e) {
  require_nonempty(e->rows, e->cols, "min", "expression");
  return reduce<T>(e, ReduceKind::min, 1, 1);
}

template <class T>
DeviceMatrix<T> expr_max(const ExprPtr& e) {
  require_nonempty(e->rows, e->cols, "max", "expression");
  return reduce<T>(e, ReduceKind::max, 1, 1);
}

template <class T>
DeviceMatrix<double> expr_mean(const ExprPtr& e) {
  require_nonempty(e->rows, e->cols, "mean", "expression");
  return reduce<double>(e, ReduceKind::mean, 1, 1);
}

template <class T>
DeviceMatrix<sum_t<T>> expr_row_sums(const ExprPtr& e) {
  return reduce<sum_t<T>>(e, ReduceKind::row_sums, e->rows, 1);
}

template <class T>
DeviceMatrix<sum_t<T>> expr_col_sums(const ExprPtr& e) {
  return reduce<sum_t<T>>(e, ReduceKind::col_sums, 1, e->cols);
}

template <class T>
Index expr_arg(const ExprPtr& e, bool max) {
  require_nonempty(e->rows, e->cols, max ? "arg_max" : "arg_min", "expression");
  const Stream s = expr_stream(*e);
  const DeviceGuard device(s);
  DeviceMatrix<std::int64_t> out(1, 1, s);
  const Lowered lowered(*e);
  const Program& p = *lowered;
  order_leaves(p, s);
  run_arg_reduce(p, max, out.data(), s);
  return static_cast<Index>(out.to_vector()[0]);
}

#define DEVMAT_INSTANTIATE(T)                                                   \
  template DeviceMatrix<T> expr_eval<T>(const ExprPtr&);                        \
  template void expr_assign<T>(const ExprPtr&, const MatrixView<T>&);           \
  template void expr_assign_matrix<T>(const ExprNode&, DeviceMatrix<T>&);       \
  template DeviceMatrix<sum_t<T>> expr_sum<T>(const ExprPtr&);                  \
  template DeviceMatrix<T> expr_min<T>(const ExprPtr&);                         \
  template DeviceMatrix<T> expr_max<T>(const ExprPtr&);                         \
  template DeviceMatrix<double> expr_mean<T>(const ExprPtr&);                   \
  template DeviceMatrix<sum_t<T>> expr_row_sums<T>(const ExprPtr&);             \
  template DeviceMatrix<sum_t<T>> expr_col_sums<T>(const ExprPtr&);             \
  template Index expr_arg<T>(const ExprPtr&, bool);                             \
  template void copy_rows_unaligned<T>(T*, Index, const T*, Index, Index, Index, const Stream&);
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat::detail
