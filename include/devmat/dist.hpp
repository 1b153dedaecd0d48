// devmat's multi-GPU component: a matrix sharded by rows over a group of GPUs, with NCCL as
// the communication engine. Plain C++ (no CUDA or NCCL header): link devmat::dist
// (libdevmat_dist.so, pkg-config devmat-dist).
/// @file
/// More than one GPU: devmat::Communicator, devmat::ShardedMatrix, devmat::ReplicatedMatrix.
#pragma once

// The build writes devmat/dist_config.hpp (DEVMAT_HAVE_DIST) into the include path of
// devmat::dist only when it built the component.
#if defined(__has_include)
#if __has_include(<devmat/dist_config.hpp>)
#include <devmat/dist_config.hpp>
#endif
#endif
#if !defined(DEVMAT_DOXYGEN) && (!defined(DEVMAT_HAVE_DIST) || !DEVMAT_HAVE_DIST)
#error "devmat: <devmat/dist.hpp> needs devmat's multi-GPU component (libdevmat_dist, CMake target devmat::dist, pkg-config devmat-dist), which is either not linked or was not built because NCCL was not found. Install NCCL (pip install nvidia-nccl-cu13, or the libnccl-dev package), or configure devmat with -DDEVMAT_NCCL_DIR=<dir with include/nccl.h and lib/libnccl.so*>, rebuild it, and link devmat::dist."
#endif

#include <devmat/device_matrix.hpp>
#include <devmat/expr.hpp>
#include <devmat/gemm.hpp>
#include <devmat/stream.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace devmat {

namespace detail { struct DistAccess; }

/// The identity of a communicator being created with Communicator::join: made once
/// (UniqueId::create, by one process) and handed to every rank by the caller's launcher (MPI, a
/// job scheduler, a file: Communicator::join_file).
struct UniqueId {
  /// NCCL's ncclUniqueId, as bytes.
  std::array<unsigned char, 128> bytes{};
  /// A new id (ncclGetUniqueId): call it in one process only, and send it to the others.
  static UniqueId create();
};

/// A group of ranks, each one GPU, over NCCL. Copies refer to the same group (shared
/// ownership); the NCCL communicators are destroyed with the last copy and with every matrix
/// that uses them.
///
/// - `local()`: every visible GPU of this process is a rank (rank i = the i-th device given),
///   one process drives them all (ncclCommInitAll).
/// - `join(id, rank, nranks, device)`: one process per GPU, on one host or many
///   (ncclCommInitRank); every process calls it with the same id and its own rank.
///
/// Every operation of the sharded types is a collective: every process of the group calls it,
/// in the same order. NVLink multicast (NVLS) is switched off: the constructors set
/// `NCCL_NVLS_ENABLE=0` in the process's environment before NCCL reads it (overwriting a value
/// the user set), because a program that uses multicast can take a host's shared GPUs out of
/// service.
///
/// Failures: shapes are compared on every rank before any collective is issued (a mismatch is a
/// shape_error on every rank). Waiting for a collective polls NCCL's error state, with a timeout
/// (`DEVMAT_DIST_TIMEOUT` seconds, default 300): when a peer has failed or the time is up, the
/// communicator is aborted (ncclCommAbort) and the wait throws cuda_error saying so; every later
/// operation on it throws cuda_error too. A rank that fails in its own code calls abort().
class Communicator {
 public:
  /// An empty handle (no ranks); assign one made by local() or join().
  Communicator() noexcept = default;
  /// Every visible GPU of this process, one rank each, rank i on device i.
  static Communicator local();
  /// The given devices of this process, rank i on devices[i] (each device at most once).
  static Communicator local(const std::vector<int>& devices);
  /// Rank `rank` of `nranks`, on GPU `device` of this process; every rank calls it with the
  /// same `id`. Blocks until all ranks have joined.
  static Communicator join(const UniqueId& id, int rank, int nranks, int device);
  /// join() with the id passed through a file: rank 0 creates the id and writes it to `path`
  /// (to a temporary name, then renamed, so a reader never sees half of it); the other ranks
  /// wait for the file, at most `timeout_s` seconds (then cuda_error). The file must not exist
  /// before rank 0 writes it (remove an old one first); a path on a shared file system
  /// works across hosts.
  static Communicator join_file(const std::string& path, int rank, int nranks, int device,
                                double timeout_s = 120.0);

  /// Number of ranks in the group.
  int size() const noexcept;
  /// The first rank this process drives (0 for local(); the rank given to join()).
  int rank() const noexcept;
  /// The ranks this process drives, in increasing order (all of them for local()).
  const std::vector<int>& local_ranks() const noexcept;
  /// True when this process drives `rank`.
  bool is_local(int rank) const noexcept;
  /// The CUDA device of `rank` (on its own host).
  int device(int rank) const;
  /// The stream of a local rank: every sharded matrix's shard of that rank lives on it.
  Stream stream(int rank) const;
  /// Waits for all work queued on the local ranks' streams (with the failure check above).
  void synchronize() const;
  /// Aborts the communicator (ncclCommAbort): for a rank that fails, so that its peers get a
  /// cuda_error instead of waiting forever. Every later operation on it throws cuda_error.
  void abort() noexcept;
  /// True once the communicator was aborted (by abort() or a detected failure).
  bool aborted() const noexcept;
  /// True for a handle made by local() or join().
  explicit operator bool() const noexcept { return impl_ != nullptr; }
  /// Two handles are equal when they refer to the same group.
  friend bool operator==(const Communicator& a, const Communicator& b) noexcept { return a.impl_ == b.impl_; }
  /// Not equal.
  friend bool operator!=(const Communicator& a, const Communicator& b) noexcept { return a.impl_ != b.impl_; }

  struct Impl;  // defined in src/dist

 private:
  friend struct detail::DistAccess;
  explicit Communicator(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

/// How a sharded matrix is split over the ranks. Only row blocks exist now; a 2D block layout
/// can follow.
enum class Layout { row_blocks };

/// Rows of rank `rank` when `rows` rows are split into `nranks` row blocks: rows / nranks, one
/// more for the first rows % nranks ranks (so a rank may hold 0 rows).
inline Index block_rows(Index rows, int nranks, int rank) noexcept {
  return rows / nranks + (rank < rows % nranks ? 1 : 0);
}
/// The first global row of rank `rank`'s block.
inline Index block_offset(Index rows, int nranks, int rank) noexcept {
  const Index extra = rows % nranks;
  return rank * (rows / nranks) + (rank < extra ? rank : extra);
}

namespace detail {
/// Makes `device` current for the scope and restores the previous one (only when different).
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};
template <class R> struct shard_result;
template <class U> struct shard_result<DeviceMatrix<U>> { using type = U; };
template <class U> struct shard_result<Expr<U>> { using type = U; };
}  // namespace detail

template <class T> class ShardedMatrix;

/// A matrix with one full copy per rank, each on its rank's device and stream: the B of
/// `A * B` without communication.
template <class T>
class ReplicatedMatrix {
 public:
  /// An empty matrix on no communicator.
  ReplicatedMatrix() = default;
  /// The matrix `m`, which lives on rank `root`'s process, broadcast to every rank
  /// (ncclBroadcast; other processes pass any matrix, its shape comes from the root).
  static ReplicatedMatrix broadcast(const DeviceMatrix<T>& m, const Communicator& comm, int root = 0);
  /// Every process passes the same rows x cols row-major host values; each local rank gets a
  /// copy (no communication; the shapes are compared on every rank).
  static ReplicatedMatrix from_host(const T* row_major, Index rows, Index cols, const Communicator& comm);

  /// Rows.
  Index rows() const noexcept { return rows_; }
  /// Columns.
  Index cols() const noexcept { return cols_; }
  /// The communicator.
  const Communicator& comm() const noexcept { return comm_; }
  /// The copy of local rank `rank` (on its device and stream).
  const DeviceMatrix<T>& copy(int rank) const;
  /// The copy of local rank `rank`, writable (keep the copies equal).
  DeviceMatrix<T>& copy(int rank);

 private:
  template <class U> friend class ShardedMatrix;
  friend struct detail::DistAccess;
  Communicator comm_;
  Index rows_ = 0, cols_ = 0;
  std::vector<DeviceMatrix<T>> copies_;  // by local index
};

/// A global rows() x cols() matrix split into row blocks, one DeviceMatrix per rank on the
/// rank's device and stream (Communicator::stream). Rank r holds rows [row_offset(r),
/// row_offset(r) + shard(r).rows()); block_rows() says how many. A process holds the shards
/// of its local ranks only.
///
/// Every operation is collective (see Communicator): the processes of the group call it in the
/// same order. Element-wise work runs shard by shard with no communication; reductions over
/// all elements and col_sums all-reduce; transpose() exchanges blocks (all-to-all).
template <class T>
class ShardedMatrix {
 public:
  /// The layout, in the type: row blocks.
  static constexpr Layout layout = Layout::row_blocks;

  /// An empty matrix on no communicator.
  ShardedMatrix() = default;
  /// A deep copy, shard by shard on each rank's device and stream.
  ShardedMatrix(const ShardedMatrix& other);
  /// A deep copy (this matrix takes other's shape and communicator).
  ShardedMatrix& operator=(const ShardedMatrix& other);
  /// Moves (free).
  ShardedMatrix(ShardedMatrix&&) noexcept = default;
  /// Moves (free).
  ShardedMatrix& operator=(ShardedMatrix&&) noexcept = default;
  /// rows x cols, uninitialised.
  ShardedMatrix(Index rows, Index cols, const Communicator& comm);
  /// rows x cols of `value`.
  static ShardedMatrix constant(Index rows, Index cols, T value, const Communicator& comm);
  /// rows x cols of zeros.
  static ShardedMatrix zeros(Index rows, Index cols, const Communicator& comm) {
    return constant(rows, cols, T(0), comm);
  }
  /// The rows x cols row-major host values, read on rank `root`'s process (other processes
  /// pass the same rows and cols and may pass a null pointer): each rank gets its row block
  /// (copies on the host's side, ncclSend/ncclRecv to the ranks of other processes).
  static ShardedMatrix scatter(const T* row_major, Index rows, Index cols, const Communicator& comm, int root = 0);
  /// The same from a vector (its size must be rows * cols on the root's process).
  static ShardedMatrix scatter(const std::vector<T>& row_major, Index rows, Index cols, const Communicator& comm,
                               int root = 0);
  /// The matrix `m`, which lives on rank `root`'s device, split into row blocks (grouped
  /// ncclSend/ncclRecv; other processes pass any matrix, the shape comes from the root).
  static ShardedMatrix scatter(const DeviceMatrix<T>& m, const Communicator& comm, int root = 0);

  /// The whole matrix on rank `root`'s device and stream (on other processes: an empty matrix).
  DeviceMatrix<T> gather(int root = 0) const;
  /// The whole matrix on the host, row-major, on rank `root`'s process (elsewhere: empty).
  std::vector<T> gather_to_host(int root = 0) const;

  /// Global rows.
  Index rows() const noexcept { return rows_; }
  /// Columns.
  Index cols() const noexcept { return cols_; }
  /// rows() * cols().
  Index size() const noexcept { return rows_ * cols_; }
  /// True when the matrix has no element.
  bool empty() const noexcept { return size() == 0; }
  /// The communicator.
  const Communicator& comm() const noexcept { return comm_; }
  /// The first global row of rank `rank`'s block.
  Index row_offset(int rank) const noexcept { return block_offset(rows_, comm_.size(), rank); }
  /// The rows of rank `rank`'s block.
  Index block_rows(int rank) const noexcept { return devmat::block_rows(rows_, comm_.size(), rank); }
  /// The shard of local rank `rank`: a DeviceMatrix on its device and stream.
  const DeviceMatrix<T>& shard(int rank) const;
  /// The shard of local rank `rank`, writable (its shape must not change).
  DeviceMatrix<T>& shard(int rank);
  /// Waits for the work queued on every local shard (with the failure check).
  void synchronize() const { comm_.synchronize(); }

  ///@{
  /// Element-wise, shard by shard (no communication). Operands must have the same shape and
  /// communicator (shape_error otherwise).
  ShardedMatrix& operator+=(const ShardedMatrix& b);
  ShardedMatrix& operator-=(const ShardedMatrix& b);
  ShardedMatrix& operator+=(T s);
  ShardedMatrix& operator-=(T s);
  ShardedMatrix& operator*=(T s);
  ShardedMatrix& operator/=(T s);
  ///@}

  /// Sum of all elements (all-reduce of the shards' sums); every rank gets it.
  sum_t<T> sum() const;
  /// Smallest element (all-reduce); shape_error on an empty matrix.
  T min() const;
  /// Largest element (all-reduce); shape_error on an empty matrix.
  T max() const;
  /// sum() / size() in double; shape_error on an empty matrix.
  double mean() const;
  /// rows() x 1 sums of each row: sharded like this matrix, no communication.
  ShardedMatrix<sum_t<T>> row_sums() const;
  /// 1 x cols() sums of each column: the shards' sums all-reduced, on every rank.
  ReplicatedMatrix<sum_t<T>> col_sums() const;
  /// cols() x rows(), sharded by rows: local transposes and an all-to-all of blocks (grouped
  /// ncclSend/ncclRecv).
  ShardedMatrix transpose() const;

 private:
  template <class U> friend class ShardedMatrix;
  template <class U> friend class ReplicatedMatrix;
  friend struct detail::DistAccess;
  Communicator comm_;
  Index rows_ = 0, cols_ = 0;
  std::vector<DeviceMatrix<T>> shards_;  // by local index (Communicator::local_ranks order)
};

/// Runs `f` on the shards of the operands, rank by rank, each on its rank's device: `f` takes
/// one `const DeviceMatrix<T>&` per operand (the shards of one rank) and returns a
/// `DeviceMatrix<U>` or an `Expr<U>` (evaluated there: one fused kernel per shard). The result is
/// sharded like the operands. No communication. Example:
/// `auto mag = shardwise([](auto& gx, auto& gy) { return sqrt(square(gx) + square(gy)); }, GX, GY);`
template <class F, class T, class... More>
auto shardwise(F&& f, const ShardedMatrix<T>& first, const ShardedMatrix<More>&... more);

///@{
/// Element-wise arithmetic of sharded matrices, shard by shard (no communication).
template <class T> ShardedMatrix<T> operator+(const ShardedMatrix<T>& a, const ShardedMatrix<T>& b);
template <class T> ShardedMatrix<T> operator-(const ShardedMatrix<T>& a, const ShardedMatrix<T>& b);
template <class T> ShardedMatrix<T> operator-(const ShardedMatrix<T>& a);
template <class T> ShardedMatrix<T> operator*(const ShardedMatrix<T>& a, T s);
template <class T> ShardedMatrix<T> operator*(T s, const ShardedMatrix<T>& a);
///@}

/// C = alpha * A * op(B) + beta * C with A sharded by rows and B replicated: each rank multiplies
/// its row block (no communication). C is sharded like A; an empty C is resized (beta then
/// taken as zero). T is float, double or int32_t.
template <class T>
void gemm(T alpha, const ShardedMatrix<T>& A, const ReplicatedMatrix<T>& B, T beta, ShardedMatrix<T>& C,
          Op op_b = Op::none);
/// C = alpha * A * B + beta * C with A and B both sharded by rows: SUMMA on a 1 x P grid as a
/// ring. Each rank multiplies its own block of B first, then the blocks passed on from rank to
/// rank, each transfer overlapped with the product before it; it holds two blocks of B beyond
/// its own while it runs. C is sharded like A; an empty C is resized.
template <class T>
void gemm(T alpha, const ShardedMatrix<T>& A, const ShardedMatrix<T>& B, T beta, ShardedMatrix<T>& C);

/// A * B with B replicated (no communication).
template <class T>
ShardedMatrix<T> operator*(const ShardedMatrix<T>& A, const ReplicatedMatrix<T>& B) {
  ShardedMatrix<T> C;
  gemm(T(1), A, B, T(0), C);
  return C;
}
/// A * B with B sharded by rows (B's blocks passed round the ranks, overlapped with the products).
template <class T>
ShardedMatrix<T> operator*(const ShardedMatrix<T>& A, const ShardedMatrix<T>& B) {
  ShardedMatrix<T> C;
  gemm(T(1), A, B, T(0), C);
  return C;
}

// ------------------------------------------------------------------ shardwise, inline
namespace detail {
/// The library's access to the sharded types' internals (shardwise builds results with it).
struct DistAccess {
  /// The shared state of a communicator handle.
  static Communicator::Impl& impl(const Communicator& c) { return *c.impl_; }
  /// Checks that `b` has a's shape and communicator (shape_error naming `op` otherwise).
  static void check_same(const char* op, const Communicator& ca, Index ar, Index ac, const Communicator& cb, Index br,
                         Index bc);
  /// An empty result of the given shape on `comm`, its shards to be pushed in local order.
  template <class U>
  static ShardedMatrix<U> make(const Communicator& comm, Index rows, Index cols) {
    ShardedMatrix<U> m;
    m.comm_ = comm;
    m.rows_ = rows;
    m.cols_ = cols;
    m.shards_.reserve(comm.local_ranks().size());
    return m;
  }
  template <class U>
  static std::vector<DeviceMatrix<U>>& shards(ShardedMatrix<U>& m) { return m.shards_; }
  template <class U>
  static const std::vector<DeviceMatrix<U>>& shards(const ShardedMatrix<U>& m) { return m.shards_; }
};
}  // namespace detail

template <class F, class T, class... More>
auto shardwise(F&& f, const ShardedMatrix<T>& first, const ShardedMatrix<More>&... more) {
  using R = std::decay_t<decltype(f(first.shard(0), more.shard(0)...))>;
  using U = typename detail::shard_result<R>::type;
  (void)std::initializer_list<int>{(detail::DistAccess::check_same("shardwise", first.comm(), first.rows(),
                                                                   first.cols(), more.comm(), more.rows(),
                                                                   more.cols()),
                                    0)...};
  const Communicator& comm = first.comm();
  ShardedMatrix<U> out = detail::DistAccess::make<U>(comm, first.rows(), first.cols());
  auto& out_shards = detail::DistAccess::shards(out);
  const auto& ranks = comm.local_ranks();
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const detail::DeviceScope scope(comm.device(ranks[i]));
    DeviceMatrix<U> s = f(detail::DistAccess::shards(first)[i], detail::DistAccess::shards(more)[i]...);
    if (s.rows() != first.block_rows(ranks[i]) || s.cols() != first.cols())
      detail::DistAccess::check_same("shardwise (the function's result)", comm, first.block_rows(ranks[i]),
                                     first.cols(), comm, s.rows(), s.cols());
    out_shards.push_back(std::move(s));
  }
  return out;
}

template <class T> ShardedMatrix<T> operator+(const ShardedMatrix<T>& a, const ShardedMatrix<T>& b) {
  return shardwise([](const DeviceMatrix<T>& x, const DeviceMatrix<T>& y) { return Expr<T>(x + y); }, a, b);
}
template <class T> ShardedMatrix<T> operator-(const ShardedMatrix<T>& a, const ShardedMatrix<T>& b) {
  return shardwise([](const DeviceMatrix<T>& x, const DeviceMatrix<T>& y) { return Expr<T>(x - y); }, a, b);
}
template <class T> ShardedMatrix<T> operator-(const ShardedMatrix<T>& a) {
  return shardwise([](const DeviceMatrix<T>& x) { return Expr<T>(-x); }, a);
}
template <class T> ShardedMatrix<T> operator*(const ShardedMatrix<T>& a, T s) {
  return shardwise([s](const DeviceMatrix<T>& x) { return Expr<T>(x * s); }, a);
}
template <class T> ShardedMatrix<T> operator*(T s, const ShardedMatrix<T>& a) { return a * s; }

}  // namespace devmat
