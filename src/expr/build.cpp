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

/// Freed blocks of kBytes bytes, kept per thread for the next allocation. Expression nodes come
/// and go by the dozen with every evaluation (built, lowered, dropped at once), more blocks of
/// one size than malloc hands out without its slow path. Blocks freed on another thread than the
/// one that allocated them join that thread's list; past kMax blocks they go back to the heap.
template <std::size_t kBytes>
class BlockList {
 public:
  static void* take() {
    State& s = state_;
    if (Block* b = s.head) {
      s.head = b->next;
      --s.count;
      return b;
    }
    return ::operator new(kBytes);
  }

  static void give(void* p) noexcept {
    State& s = state_;
    if (s.closed || s.count >= kMax) {
      ::operator delete(p);
      return;
    }
    if (!s.drain_registered) register_drain(s);
    Block* b = static_cast<Block*>(p);
    b->next = s.head;
    s.head = b;
    ++s.count;
  }

 private:
  static constexpr unsigned kMax = 256;
  struct Block {
    Block* next;
  };
  // Trivially destructible: valid until the thread ends, after Drain has run too (a node
  // freed then, by a static or thread_local expression destroyed late, goes to the heap).
  struct State {
    Block* head;
    unsigned count;
    bool drain_registered;
    bool closed;
  };
  struct Drain {
    ~Drain() {
      State& s = state_;
      s.closed = true;
      while (Block* b = s.head) {
        s.head = b->next;
        ::operator delete(b);
      }
      s.count = 0;
    }
  };
  [[gnu::noinline]] static void register_drain(State& s) noexcept {
    static thread_local Drain drain;  // frees the list when the thread ends
    (void)drain;
    s.drain_registered = true;
  }

  // initial-exec: one %fs-relative load instead of a __tls_get_addr call per node made and per
  // node freed (libdevmat is a shared library; the default model calls it). 16 bytes of the
  // static TLS block, which glibc reserves spare room for even when libdevmat is dlopen()ed.
  [[gnu::tls_model("initial-exec")]] static thread_local State state_;
};
template <std::size_t kBytes>
[[gnu::tls_model("initial-exec")]] thread_local typename BlockList<kBytes>::State BlockList<kBytes>::state_{};

/// The allocator of expression nodes (and their shared_ptr control blocks): BlockList's blocks.
template <class T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() noexcept = default;
  template <class U>
  NodeAllocator(const NodeAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "NodeAllocator: over-aligned type");
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockList<sizeof(T)>::take());
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1) ::operator delete(p);
    else BlockList<sizeof(T)>::give(p);
  }
  template <class U>
  bool operator==(const NodeAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const NodeAllocator<U>&) const noexcept { return false; }
};

std::shared_ptr<ExprNode> node(ExprOp op, DType type, Index rows, Index cols) {
  return std::allocate_shared<ExprNode>(NodeAllocator<ExprNode>(), op, type, rows, cols);
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
ExprPtr expr_matrix_leaf(const DeviceMatrix<T>& m) {
  // What expr_leaf(m.view()) makes, without making the view.
  auto n = node(ExprOp::leaf, dtype_of<T>::value, m.rows(), m.cols());
  n->data = m.data();
  n->stride = m.cols();
  n->keep = Access::keep(m);
  n->stream = Access::raw_stream(m);
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
  template ExprPtr expr_matrix_leaf<T>(const DeviceMatrix<T>&); \
  template ExprPtr expr_scalar<T>(T);
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat::detail
