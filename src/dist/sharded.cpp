// devmat::ShardedMatrix and devmat::ReplicatedMatrix: scatter/gather, the reductions, transpose
// and the products. Every operation: check shapes (agree() across processes), then issue the
// local work rank by rank on the rank's device and stream, and the collectives in one NCCL group.
#include "dist/comm.hpp"

#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <limits>
#include <string>

namespace devmat {

using detail::DeviceScope;

namespace {

void check_root(const Communicator::Impl& c, int root, const char* op) {
  if (root < 0 || root >= c.size)
    throw shape_error(std::string("devmat: ") + op + ": root " + std::to_string(root) + " is not a rank of " +
                      std::to_string(c.size));
}

template <class T>
T* at_row(DeviceMatrix<T>& m, Index row) { return m.data() + row * m.cols(); }
template <class T>
const T* at_row(const DeviceMatrix<T>& m, Index row) { return m.data() + row * m.cols(); }

/// The communicator of an operation `op` that sends a matrix from `root` (live, root checked),
/// with the matrix's shape broadcast to every rank into rows and cols (several processes only;
/// in one process every rank already knows it).
Communicator::Impl& shape_from_root(const Communicator& comm, int root, Index& rows, Index& cols, const char* op) {
  Communicator::Impl& c = detail::live(comm, op);
  check_root(c, root, op);
  if (c.single_process()) return c;
  std::vector<DeviceMatrix<std::int64_t>> bufs;
  const std::int64_t h[2] = {rows, cols};
  for (std::size_t i = 0; i < c.comms.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    bufs.push_back(DeviceMatrix<std::int64_t>::from_host(h, 1, 2, c.streams[i]));
  }
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.comms.size(); ++i)
      DEVMAT_NCCL_TRY(ncclBroadcast(bufs[i].data(), bufs[i].data(), 2, ncclInt64, root, c.comms[i],
                                    c.streams[i].native()),
                      c.comms[i]);
  });
  detail::wait_ranks(c, op);
  const DeviceScope scope(c.local_device(0));
  const std::vector<std::int64_t> r = bufs[0].to_vector();
  rows = r[0];
  cols = r[1];
  return c;
}

/// Splits the dense rows x cols matrix at `src` (on root's device and stream, root local, or
/// null where root is not local) into the shards of `out`.
template <class T>
void scatter_rows(Communicator::Impl& c, const T* src, Index rows, Index cols, int root,
                  std::vector<DeviceMatrix<T>>& out) {
  const int P = c.size;
  for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    out.emplace_back(block_rows(rows, P, c.local_ranks[i]), cols, c.streams[i]);
  }
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
      const int r = c.local_ranks[i];
      const cudaStream_t s = c.streams[i].native();
      if (r == root) {
        for (int q = 0; q < P; ++q) {
          const std::size_t n = static_cast<std::size_t>(block_rows(rows, P, q) * cols);
          const T* block = src + block_offset(rows, P, q) * cols;
          if (n == 0) continue;
          if (q == root) {
            const DeviceScope scope(c.local_device(i));
            DEVMAT_CUDA_TRY(cudaMemcpyAsync(out[i].data(), block, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
          } else {
            DEVMAT_NCCL_TRY(ncclSend(block, n, detail::nccl_type<T>(), q, c.comms[i], s), c.comms[i]);
          }
        }
      } else if (!out[i].empty()) {
        DEVMAT_NCCL_TRY(ncclRecv(out[i].data(), static_cast<std::size_t>(out[i].size()), detail::nccl_type<T>(), root,
                                 c.comms[i], s),
                        c.comms[i]);
      }
    }
  });
}

/// 1x1 (or 1 x n) per-rank values all-reduced in place with `op`.
template <class T>
void all_reduce(Communicator::Impl& c, std::vector<DeviceMatrix<T>>& v, ncclRedOp_t op) {
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.comms.size(); ++i)
      if (!v[i].empty())
        DEVMAT_NCCL_TRY(ncclAllReduce(v[i].data(), v[i].data(), static_cast<std::size_t>(v[i].size()),
                                      detail::nccl_type<T>(), op, c.comms[i], c.streams[i].native()),
                        c.comms[i]);
  });
}

/// The ranks' 1x1 values combined with `op` (ncclSum, ncclMin or ncclMax), after waiting with
/// the failure check. Across processes: an all-reduce, then the first local rank's value. In one
/// process every rank's value is here: each is copied to a pinned host slot on its own stream
/// and they are combined on the host in rank order, with no collective (an all-reduce of one
/// value adds NCCL's latency, and reading its result another round trip, to a reduction that
/// is otherwise all memory speed). The same values in the same order: the same result.
template <class T>
T combine_ranks(Communicator::Impl& c, std::vector<DeviceMatrix<T>>& v, ncclRedOp_t op, const char* what) {
  static_assert(sizeof(T) <= 8, "one pinned slot holds 8 bytes");
  if (!c.single_process()) {
    all_reduce(c, v, op);
    detail::wait_ranks(c, what);
    const DeviceScope scope(c.local_device(0));
    return v[0].at(0, 0);
  }
  const std::lock_guard<std::mutex> lock(c.scalars_mutex);
  auto* slots = static_cast<unsigned char*>(c.host_scalars());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(slots + 8 * i, v[i].data(), sizeof(T), cudaMemcpyDeviceToHost,
                                    c.streams[i].native()));
  }
  detail::wait_ranks(c, what);
  T r{};
  for (std::size_t i = 0; i < v.size(); ++i) {
    T x;
    std::memcpy(&x, slots + 8 * i, sizeof(T));
    // As the kernels: NaN propagates through min and max (b wins if better or NaN).
    if (i == 0) r = x;
    else if (op == ncclSum) r = r + x;
    else if (op == ncclMax ? (x > r || x != x) : (x < r || x != x)) r = x;
  }
  return r;
}

}  // namespace

void detail::DistAccess::check_same(const char* op, const Communicator& ca, Index ar, Index ac, const Communicator& cb,
                                    Index br, Index bc) {
  if (ca != cb) throw shape_error(std::string("devmat: ") + op + ": the operands are on different communicators");
  if (ar != br || ac != bc) detail::throw_shape_error(op, ar, ac, br, bc);
}

// ------------------------------------------------------------------ ShardedMatrix: making, moving
template <class T>
ShardedMatrix<T>::ShardedMatrix(Index rows, Index cols, const Communicator& comm) : comm_(comm), rows_(rows), cols_(cols) {
  Communicator::Impl& c = detail::live(comm, "ShardedMatrix");
  if (rows < 0 || cols < 0) detail::throw_shape_error("ShardedMatrix", rows, cols, rows, cols, "is not a shape");
  for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    shards_.emplace_back(devmat::block_rows(rows, c.size, c.local_ranks[i]), cols, c.streams[i]);
  }
}

template <class T>
ShardedMatrix<T>::ShardedMatrix(const ShardedMatrix& other) : comm_(other.comm_), rows_(other.rows_), cols_(other.cols_) {
  if (!comm_) return;
  Communicator::Impl& c = detail::impl_of(comm_);
  shards_.reserve(other.shards_.size());
  for (std::size_t i = 0; i < other.shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    shards_.push_back(other.shards_[i]);  // on the shard's stream
  }
}

template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator=(const ShardedMatrix& other) {
  if (this != &other) *this = ShardedMatrix(other);
  return *this;
}

template <class T>
ShardedMatrix<T> ShardedMatrix<T>::constant(Index rows, Index cols, T value, const Communicator& comm) {
  ShardedMatrix m(rows, cols, comm);
  Communicator::Impl& c = detail::impl_of(comm);
  for (std::size_t i = 0; i < m.shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    m.shards_[i].fill(value);
  }
  return m;
}

template <class T>
ShardedMatrix<T> ShardedMatrix<T>::scatter(const T* row_major, Index rows, Index cols, const Communicator& comm,
                                           int root) {
  Communicator::Impl& c = detail::live(comm, "ShardedMatrix::scatter");
  check_root(c, root, "ShardedMatrix::scatter");
  detail::agree(c, "ShardedMatrix::scatter", {rows, cols, root});
  const bool root_here = comm.is_local(root);
  if (root_here && rows * cols > 0 && !row_major)
    throw shape_error("devmat: ShardedMatrix::scatter: a null pointer on the root's process");
  ShardedMatrix m;
  m.comm_ = comm;
  m.rows_ = rows;
  m.cols_ = cols;
  if (c.single_process()) {  // every rank is here: host to device, rank by rank
    for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
      const int r = c.local_ranks[i];
      const DeviceScope scope(c.local_device(i));
      const Index n = devmat::block_rows(rows, c.size, r);
      m.shards_.push_back(n * cols > 0 ? DeviceMatrix<T>::from_host(row_major + block_offset(rows, c.size, r) * cols,
                                                                    n, cols, c.streams[i])
                                       : DeviceMatrix<T>(n, cols, c.streams[i]));
    }
    return m;
  }
  DeviceMatrix<T> staged;
  if (root_here && rows * cols > 0) {
    const std::size_t i = c.index(root);
    const DeviceScope scope(c.local_device(i));
    staged = DeviceMatrix<T>::from_host(row_major, rows, cols, c.streams[i]);
  }
  scatter_rows(c, staged.data(), rows, cols, root, m.shards_);
  return m;
}

template <class T>
ShardedMatrix<T> ShardedMatrix<T>::scatter(const std::vector<T>& row_major, Index rows, Index cols,
                                           const Communicator& comm, int root) {
  if (comm.is_local(root) && static_cast<Index>(row_major.size()) != rows * cols)
    throw shape_error("devmat: ShardedMatrix::scatter: " + std::to_string(row_major.size()) + " values for " +
                      detail::shape_string(rows, cols));
  return scatter(row_major.data(), rows, cols, comm, root);
}

template <class T>
ShardedMatrix<T> ShardedMatrix<T>::scatter(const DeviceMatrix<T>& src, const Communicator& comm, int root) {
  Index rows = src.rows(), cols = src.cols();
  Communicator::Impl& c = shape_from_root(comm, root, rows, cols, "ShardedMatrix::scatter");
  ShardedMatrix m;
  m.comm_ = comm;
  m.rows_ = rows;
  m.cols_ = cols;
  if (comm.is_local(root) && !src.empty()) {
    const std::size_t i = c.index(root);
    const DeviceScope scope(c.local_device(i));
    detail::use_on(c.streams[i], src);  // the root's stream waits for src; src stays alive for the sends
  }
  scatter_rows(c, comm.is_local(root) ? src.data() : nullptr, rows, cols, root, m.shards_);
  return m;
}

template <class T>
DeviceMatrix<T> ShardedMatrix<T>::gather(int root) const {
  Communicator::Impl& c = detail::live(comm_, "ShardedMatrix::gather");
  check_root(c, root, "ShardedMatrix::gather");
  detail::agree(c, "ShardedMatrix::gather", {rows_, cols_, root});
  const int P = c.size;
  DeviceMatrix<T> out;
  if (comm_.is_local(root)) {
    const std::size_t i = c.index(root);
    const DeviceScope scope(c.local_device(i));
    out = DeviceMatrix<T>(rows_, cols_, c.streams[i]);
  }
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    detail::use_on(c.streams[i], shards_[i]);
  }
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
      const int r = c.local_ranks[i];
      const cudaStream_t s = c.streams[i].native();
      if (r == root) {
        for (int q = 0; q < P; ++q) {
          const std::size_t n = static_cast<std::size_t>(devmat::block_rows(rows_, P, q) * cols_);
          if (n == 0) continue;
          T* block = out.data() + block_offset(rows_, P, q) * cols_;
          if (q == root) {
            const DeviceScope scope(c.local_device(i));
            DEVMAT_CUDA_TRY(cudaMemcpyAsync(block, shards_[i].data(), n * sizeof(T), cudaMemcpyDeviceToDevice, s));
          } else {
            DEVMAT_NCCL_TRY(ncclRecv(block, n, detail::nccl_type<T>(), q, c.comms[i], s), c.comms[i]);
          }
        }
      } else if (!shards_[i].empty()) {
        DEVMAT_NCCL_TRY(ncclSend(shards_[i].data(), static_cast<std::size_t>(shards_[i].size()), detail::nccl_type<T>(),
                                 root, c.comms[i], s),
                        c.comms[i]);
      }
    }
  });
  return out;
}

template <class T>
std::vector<T> ShardedMatrix<T>::gather_to_host(int root) const {
  DeviceMatrix<T> all = gather(root);
  Communicator::Impl& c = detail::impl_of(comm_);
  detail::wait_ranks(c, "ShardedMatrix::gather_to_host");  // a failed peer: an error, not a hang
  if (!comm_.is_local(root)) return {};
  const DeviceScope scope(c.local_device(c.index(root)));
  return all.to_vector();
}

template <class T>
const DeviceMatrix<T>& ShardedMatrix<T>::shard(int rank) const {
  return shards_[detail::impl_of(comm_).index(rank)];
}
template <class T>
DeviceMatrix<T>& ShardedMatrix<T>::shard(int rank) {
  return shards_[detail::impl_of(comm_).index(rank)];
}

// ------------------------------------------------------------------ element-wise in place
namespace {
template <class T, class F>
void each_shard(const Communicator& comm, std::vector<DeviceMatrix<T>>& shards, F&& f) {
  Communicator::Impl& c = detail::live(comm, "ShardedMatrix");
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    f(shards[i], i);
  }
}
}  // namespace

template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator+=(const ShardedMatrix& b) {
  detail::DistAccess::check_same("ShardedMatrix +=", comm_, rows_, cols_, b.comm_, b.rows_, b.cols_);
  each_shard(comm_, shards_, [&](DeviceMatrix<T>& s, std::size_t i) { s += b.shards_[i]; });
  return *this;
}
template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator-=(const ShardedMatrix& b) {
  detail::DistAccess::check_same("ShardedMatrix -=", comm_, rows_, cols_, b.comm_, b.rows_, b.cols_);
  each_shard(comm_, shards_, [&](DeviceMatrix<T>& s, std::size_t i) { s -= b.shards_[i]; });
  return *this;
}
template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator+=(T v) {
  each_shard(comm_, shards_, [&](DeviceMatrix<T>& s, std::size_t) { s += v; });
  return *this;
}
template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator-=(T v) {
  each_shard(comm_, shards_, [&](DeviceMatrix<T>& s, std::size_t) { s -= v; });
  return *this;
}
template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator*=(T v) {
  each_shard(comm_, shards_, [&](DeviceMatrix<T>& s, std::size_t) { s *= v; });
  return *this;
}
template <class T>
ShardedMatrix<T>& ShardedMatrix<T>::operator/=(T v) {
  each_shard(comm_, shards_, [&](DeviceMatrix<T>& s, std::size_t) { s /= v; });
  return *this;
}

// ------------------------------------------------------------------ reductions
template <class T>
sum_t<T> ShardedMatrix<T>::sum() const {
  using S = sum_t<T>;
  Communicator::Impl& c = detail::live(comm_, "ShardedMatrix::sum");
  detail::agree(c, "ShardedMatrix::sum", {rows_, cols_});
  std::vector<DeviceMatrix<S>> part;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    part.push_back(shards_[i].empty() ? DeviceMatrix<S>::zeros(1, 1, c.streams[i]) : shards_[i].sum_async());
  }
  return combine_ranks(c, part, ncclSum, "ShardedMatrix::sum");
}

template <class T>
double ShardedMatrix<T>::mean() const {
  Communicator::Impl& c = detail::live(comm_, "ShardedMatrix::mean");
  detail::agree(c, "ShardedMatrix::mean", {rows_, cols_});
  detail::require_nonempty(rows_, cols_, "ShardedMatrix::mean");
  // Each shard's mean (in double, as DeviceMatrix::mean) times its size, summed over the ranks.
  std::vector<DeviceMatrix<double>> part;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    if (shards_[i].empty()) {
      part.push_back(DeviceMatrix<double>::zeros(1, 1, c.streams[i]));
    } else {
      DeviceMatrix<double> m = shards_[i].mean_async();
      m *= static_cast<double>(shards_[i].size());
      part.push_back(std::move(m));
    }
  }
  return combine_ranks(c, part, ncclSum, "ShardedMatrix::mean") / static_cast<double>(size());
}

namespace {
template <class T>
T extreme(const Communicator& comm, const std::vector<DeviceMatrix<T>>& shards, Index rows, Index cols, bool max,
          const char* op) {
  Communicator::Impl& c = detail::live(comm, op);
  detail::agree(c, op, {rows, cols});
  detail::require_nonempty(rows, cols, op);
  std::vector<DeviceMatrix<T>> part;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    if (shards[i].empty()) {  // the reduction's identity
      const T id = std::numeric_limits<T>::has_infinity
                       ? (max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity())
                       : (max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
      part.push_back(DeviceMatrix<T>::constant(1, 1, id, c.streams[i]));
    } else {
      part.push_back(max ? shards[i].max_async() : shards[i].min_async());
    }
  }
  return combine_ranks(c, part, max ? ncclMax : ncclMin, op);
}
}  // namespace

template <class T>
T ShardedMatrix<T>::min() const { return extreme(comm_, shards_, rows_, cols_, false, "ShardedMatrix::min"); }
template <class T>
T ShardedMatrix<T>::max() const { return extreme(comm_, shards_, rows_, cols_, true, "ShardedMatrix::max"); }

template <class T>
ShardedMatrix<sum_t<T>> ShardedMatrix<T>::row_sums() const {
  using S = sum_t<T>;
  Communicator::Impl& c = detail::live(comm_, "ShardedMatrix::row_sums");
  ShardedMatrix<S> out = detail::DistAccess::make<S>(comm_, rows_, 1);
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    out.shards_.push_back(cols_ == 0 ? DeviceMatrix<S>::zeros(shards_[i].rows(), 1, c.streams[i])
                                     : shards_[i].row_sums());
  }
  return out;
}

template <class T>
ReplicatedMatrix<sum_t<T>> ShardedMatrix<T>::col_sums() const {
  using S = sum_t<T>;
  Communicator::Impl& c = detail::live(comm_, "ShardedMatrix::col_sums");
  detail::agree(c, "ShardedMatrix::col_sums", {rows_, cols_});
  ReplicatedMatrix<S> out;
  out.comm_ = comm_;
  out.rows_ = 1;
  out.cols_ = cols_;
  // A rank whose block is one row (of the sum type) is its own column sums: the all-reduce reads
  // it in place (out of place into the result), with no local pass.
  std::vector<const S*> send(shards_.size(), nullptr);
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    if constexpr (std::is_same_v<S, T>) {
      if (shards_[i].rows() == 1) {
        detail::use_on(c.streams[i], shards_[i]);
        out.copies_.emplace_back(1, cols_, c.streams[i]);
        send[i] = shards_[i].data();
        continue;
      }
    }
    out.copies_.push_back(shards_[i].rows() == 0 ? DeviceMatrix<S>::zeros(1, cols_, c.streams[i])
                                                 : shards_[i].col_sums());
    send[i] = out.copies_[i].data();
  }
  if (cols_ == 0) return out;
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.comms.size(); ++i)
      DEVMAT_NCCL_TRY(ncclAllReduce(send[i], out.copies_[i].data(), static_cast<std::size_t>(cols_),
                                    detail::nccl_type<S>(), ncclSum, c.comms[i], c.streams[i].native()),
                      c.comms[i]);
  });
  return out;
}

// ------------------------------------------------------------------ transpose
// B = A^T, cols x rows, sharded by rows: rank r transposes its block (T_r = A_r^T, cols x n_r,
// whose rows [co_q, co_q + nc_q) are the part of B's block q that comes from r, contiguous);
// sends that part to q; q receives the parts into one staging buffer (the part from r at
// offset nc_q * ro_r) and copies each into its columns [ro_r, ro_r + n_r).
template <class T>
ShardedMatrix<T> ShardedMatrix<T>::transpose() const {
  Communicator::Impl& c = detail::live(comm_, "ShardedMatrix::transpose");
  detail::agree(c, "ShardedMatrix::transpose", {rows_, cols_});
  const int P = c.size;
  ShardedMatrix<T> out(cols_, rows_, comm_);
  std::vector<DeviceMatrix<T>> local_t, staging;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    local_t.push_back(shards_[i].transpose());  // cols x n_r, on the rank's stream
    staging.emplace_back(1, out.shards_[i].size(), c.streams[i]);
  }
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      const int r = c.local_ranks[i];
      const Index n_r = devmat::block_rows(rows_, P, r), nc_r = devmat::block_rows(cols_, P, r);
      const cudaStream_t s = c.streams[i].native();
      for (int q = 0; q < P; ++q) {
        if (q == r) continue;
        const Index nc_q = devmat::block_rows(cols_, P, q), n_q = devmat::block_rows(rows_, P, q);
        const std::size_t send_n = static_cast<std::size_t>(nc_q * n_r);
        if (send_n)
          DEVMAT_NCCL_TRY(ncclSend(local_t[i].data() + block_offset(cols_, P, q) * n_r, send_n, detail::nccl_type<T>(),
                                   q, c.comms[i], s),
                          c.comms[i]);
        const std::size_t recv_n = static_cast<std::size_t>(nc_r * n_q);
        if (recv_n)
          DEVMAT_NCCL_TRY(ncclRecv(staging[i].data() + nc_r * block_offset(rows_, P, q), recv_n, detail::nccl_type<T>(),
                                   q, c.comms[i], s),
                          c.comms[i]);
      }
    }
  });
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    const int r = c.local_ranks[i];
    const DeviceScope scope(c.local_device(i));
    const Index nc_r = devmat::block_rows(cols_, P, r);
    DeviceMatrix<T>& dst = out.shards_[i];  // nc_r x rows
    if (dst.empty()) continue;
    for (int q = 0; q < P; ++q) {
      const Index n_q = devmat::block_rows(rows_, P, q), ro_q = block_offset(rows_, P, q);
      if (n_q == 0) continue;
      const T* part = q == r ? local_t[i].data() + block_offset(cols_, P, r) * n_q : staging[i].data() + nc_r * ro_q;
      detail::copy_rows(dst.data() + ro_q, rows_, part, n_q, nc_r, n_q, c.streams[i]);
    }
  }
  return out;
}

// ------------------------------------------------------------------ ReplicatedMatrix
template <class T>
ReplicatedMatrix<T> ReplicatedMatrix<T>::broadcast(const DeviceMatrix<T>& m, const Communicator& comm, int root) {
  Index rows = m.rows(), cols = m.cols();
  Communicator::Impl& c = shape_from_root(comm, root, rows, cols, "ReplicatedMatrix::broadcast");
  ReplicatedMatrix out;
  out.comm_ = comm;
  out.rows_ = rows;
  out.cols_ = cols;
  for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    out.copies_.emplace_back(rows, cols, c.streams[i]);
    if (c.local_ranks[i] == root && !m.empty()) {
      detail::use_on(c.streams[i], m);
      detail::copy_rows(out.copies_[i].data(), cols, m.data(), cols, rows, cols, c.streams[i]);
    }
  }
  if (rows * cols == 0) return out;
  detail::nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.comms.size(); ++i)
      DEVMAT_NCCL_TRY(ncclBroadcast(out.copies_[i].data(), out.copies_[i].data(), static_cast<std::size_t>(rows * cols),
                                    detail::nccl_type<T>(), root, c.comms[i], c.streams[i].native()),
                      c.comms[i]);
  });
  return out;
}

template <class T>
ReplicatedMatrix<T> ReplicatedMatrix<T>::from_host(const T* row_major, Index rows, Index cols,
                                                   const Communicator& comm) {
  Communicator::Impl& c = detail::live(comm, "ReplicatedMatrix::from_host");
  detail::agree(c, "ReplicatedMatrix::from_host", {rows, cols});
  ReplicatedMatrix out;
  out.comm_ = comm;
  out.rows_ = rows;
  out.cols_ = cols;
  for (std::size_t i = 0; i < c.local_ranks.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    out.copies_.push_back(rows * cols > 0 ? DeviceMatrix<T>::from_host(row_major, rows, cols, c.streams[i])
                                      : DeviceMatrix<T>(rows, cols, c.streams[i]));
  }
  return out;
}

template <class T>
const DeviceMatrix<T>& ReplicatedMatrix<T>::copy(int rank) const {
  return copies_[detail::impl_of(comm_).index(rank)];
}
template <class T>
DeviceMatrix<T>& ReplicatedMatrix<T>::copy(int rank) {
  return copies_[detail::impl_of(comm_).index(rank)];
}

#define DEVMAT_INSTANTIATE(T) template class ShardedMatrix<T>; template class ReplicatedMatrix<T>;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
