// Products of sharded matrices. A is sharded by rows; C = alpha * A * B + beta * C is sharded
// like A. B replicated: a local product per rank. B sharded by rows: SUMMA on a 1 x P grid: B's
// rows are broadcast chunk by chunk from their owners (ncclBroadcast on each rank's side
// stream, into two alternating chunk buffers) while the rank's stream multiplies the previous
// chunk: C_r += A_r[:, chunk] * B[chunk, :].
#include "dist/comm.hpp"

#include "detail/runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

namespace devmat {

using detail::DeviceScope;

namespace {

/// An empty C becomes M x N sharded like A (its beta then counts as zero).
template <class T>
bool prepare_c(ShardedMatrix<T>& C, const Communicator& comm, Index M, Index N, const char* op) {
  if (!C.comm()) {
    C = ShardedMatrix<T>(M, N, comm);
    return true;
  }
  detail::DistAccess::check_same(op, comm, M, N, C.comm(), C.rows(), C.cols());
  return false;
}

/// Rows of B per broadcast chunk: about a quarter of a rank's block, at least 256 (the
/// products stay efficient), or DEVMAT_DIST_CHUNK_ROWS.
Index chunk_rows(Index K, int P) {
  static const long env = [] {
    const char* e = std::getenv("DEVMAT_DIST_CHUNK_ROWS");
    return e ? std::atol(e) : 0L;
  }();
  if (env > 0) return env;
  return std::max<Index>(256, (K + 4 * P - 1) / (4 * P));
}

struct Events {
  explicit Events(std::size_t n) : ev(n, nullptr) {
    for (auto& e : ev) DEVMAT_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  ~Events() {
    for (auto e : ev)
      if (e) cudaEventDestroy(e);  // released once pending records complete
  }
  std::vector<cudaEvent_t> ev;
};

}  // namespace

template <class T>
void gemm(T alpha, const ShardedMatrix<T>& A, const ReplicatedMatrix<T>& B, T beta, ShardedMatrix<T>& C, Op op_b) {
  const char* op = "gemm (sharded A, replicated B)";
  Communicator::Impl& c = detail::live(A.comm(), op);
  if (A.comm() != B.comm()) throw shape_error(std::string("devmat: ") + op + ": A and B are on different communicators");
  const Index K = op_b == Op::none ? B.rows() : B.cols(), N = op_b == Op::none ? B.cols() : B.rows();
  detail::agree(c, op, {A.rows(), A.cols(), B.rows(), B.cols(), C.rows(), C.cols(), static_cast<long long>(op_b)});
  if (A.cols() != K) detail::throw_shape_error(op, A.rows(), A.cols(), K, N, "(op(B)) do not multiply");
  if (prepare_c(C, A.comm(), A.rows(), N, op)) beta = T(0);
  for (int r : c.local_ranks) {
    const DeviceScope scope(c.devices[r]);
    DeviceMatrix<T>& c_r = C.shard(r);
    if (c_r.empty()) continue;
    devmat::gemm(alpha, A.shard(r), B.copy(r), beta, c_r, Op::none, op_b);
  }
}

template <class T>
void gemm(T alpha, const ShardedMatrix<T>& A, const ShardedMatrix<T>& B, T beta, ShardedMatrix<T>& C) {
  const char* op = "gemm (sharded A, sharded B)";
  Communicator::Impl& c = detail::live(A.comm(), op);
  if (A.comm() != B.comm()) throw shape_error(std::string("devmat: ") + op + ": A and B are on different communicators");
  detail::agree(c, op, {A.rows(), A.cols(), B.rows(), B.cols(), C.rows(), C.cols()});
  if (A.cols() != B.rows()) detail::throw_shape_error(op, A.rows(), A.cols(), B.rows(), B.cols(), "do not multiply");
  const Index M = A.rows(), K = A.cols(), N = B.cols();
  if (prepare_c(C, A.comm(), M, N, op)) beta = T(0);
  const int P = c.size;
  const std::size_t L = c.local_ranks.size();

  // The chunks: (owner, first row within the owner's block, rows), in global row order.
  struct Chunk { int owner; Index start, rows; };
  std::vector<Chunk> chunks;
  const Index step = chunk_rows(K, P);
  Index max_rows = 0;
  for (int k = 0; k < P; ++k)
    for (Index s = 0, n = block_rows(K, P, k); s < n; s += step) {
      chunks.push_back({k, s, std::min(step, n - s)});
      max_rows = std::max(max_rows, chunks.back().rows);
    }

  if (chunks.empty() || N == 0) {  // K == 0: C = beta * C
    for (std::size_t i = 0; i < L; ++i) {
      const DeviceScope scope(c.local_device(i));
      DeviceMatrix<T>& c_r = C.shard(c.local_ranks[i]);
      if (beta == T(0)) c_r.fill(T(0));
      else c_r *= beta;
    }
    return;
  }

  // Per local rank: two chunk buffers (allocated on the rank's stream), and events:
  // ready[b] (side stream: chunk in buffer b arrived), used[b] (rank stream: its product done).
  std::vector<DeviceMatrix<T>> buf[2];
  std::vector<std::unique_ptr<Events>> events;
  for (std::size_t i = 0; i < L; ++i) {
    const DeviceScope scope(c.local_device(i));
    const Stream& s = c.streams[i];
    detail::use_on(s, A.shard(c.local_ranks[i]), B.shard(c.local_ranks[i]), C.shard(c.local_ranks[i]));
    for (auto& b : buf) b.emplace_back(max_rows, N, s);
    events.push_back(std::make_unique<Events>(5));
    // The side stream starts after everything queued on the rank's stream (B's shard, buffers).
    DEVMAT_CUDA_TRY(cudaEventRecord(events[i]->ev[4], s.native()));
    DEVMAT_CUDA_TRY(cudaStreamWaitEvent(c.side[i].native(), events[i]->ev[4], 0));
  }
  const auto ready = [&](std::size_t i, std::size_t ch) { return events[i]->ev[ch % 2]; };
  const auto used = [&](std::size_t i, std::size_t ch) { return events[i]->ev[2 + ch % 2]; };
  // The chunk's rows on rank i: the owner reads its own shard in place; the others a buffer.
  const auto chunk_ptr = [&](std::size_t i, std::size_t ch) -> T* {
    const Chunk& k = chunks[ch];
    const int r = c.local_ranks[i];
    if (r == k.owner) return const_cast<T*>(B.shard(r).data()) + k.start * N;
    return buf[ch % 2][i].data();
  };

  const auto issue_broadcast = [&](std::size_t ch) {
    for (std::size_t i = 0; i < L; ++i) {
      const DeviceScope scope(c.local_device(i));
      if (ch >= 2) DEVMAT_CUDA_TRY(cudaStreamWaitEvent(c.side[i].native(), used(i, ch), 0));
    }
    detail::nccl_group(c, [&] {
      for (std::size_t i = 0; i < L; ++i) {
        T* p = chunk_ptr(i, ch);
        DEVMAT_NCCL_TRY(ncclBroadcast(p, p, static_cast<std::size_t>(chunks[ch].rows * N), detail::nccl_type<T>(),
                                      chunks[ch].owner, c.comms[i], c.side[i].native()),
                        c.comms[i]);
      }
    });
    for (std::size_t i = 0; i < L; ++i) {
      const DeviceScope scope(c.local_device(i));
      DEVMAT_CUDA_TRY(cudaEventRecord(ready(i, ch), c.side[i].native()));
    }
  };

  issue_broadcast(0);
  for (std::size_t ch = 0; ch < chunks.size(); ++ch) {
    if (ch + 1 < chunks.size()) issue_broadcast(ch + 1);  // overlaps this chunk's products
    const Chunk& k = chunks[ch];
    const Index k0 = block_offset(K, P, k.owner) + k.start;
    for (std::size_t i = 0; i < L; ++i) {
      const int r = c.local_ranks[i];
      const DeviceScope scope(c.devices[r]);
      const Stream& s = c.streams[i];
      DEVMAT_CUDA_TRY(cudaStreamWaitEvent(s.native(), ready(i, ch), 0));
      DeviceMatrix<T>& c_r = C.shard(r);
      if (!c_r.empty()) {
        const MatrixView<const T> b_chunk =
            detail::Access::view<const T>(chunk_ptr(i, ch), k.rows, N, N, nullptr, s);
        devmat::gemm(alpha, A.shard(r).block(0, k0, c_r.rows(), k.rows), b_chunk, ch == 0 ? beta : T(1), c_r.view());
      }
      DEVMAT_CUDA_TRY(cudaEventRecord(used(i, ch), s.native()));
    }
  }
  // The buffers are freed on the rank's streams: after the last broadcast (the last product
  // already waited for it; this also orders the side stream's earlier work).
  for (std::size_t i = 0; i < L; ++i) {
    const DeviceScope scope(c.local_device(i));
    DEVMAT_CUDA_TRY(cudaEventRecord(events[i]->ev[4], c.side[i].native()));
    DEVMAT_CUDA_TRY(cudaStreamWaitEvent(c.streams[i].native(), events[i]->ev[4], 0));
  }
}

#define DEVMAT_INSTANTIATE(T)                                                                                  \
  template void gemm<T>(T, const ShardedMatrix<T>&, const ReplicatedMatrix<T>&, T, ShardedMatrix<T>&, Op); \
  template void gemm<T>(T, const ShardedMatrix<T>&, const ShardedMatrix<T>&, T, ShardedMatrix<T>&);
DEVMAT_INSTANTIATE(float)
DEVMAT_INSTANTIATE(double)
DEVMAT_INSTANTIATE(std::int32_t)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
