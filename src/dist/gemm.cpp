// Products of sharded matrices. A is sharded by rows; C = alpha * A * B + beta * C is sharded
// like A. B replicated: a local product per rank. B sharded by rows: SUMMA on a 1 x P grid as a
// ring: at step s (0 .. P-1) rank r multiplies the row block of B owned by (r + s) % P, its own
// first (nothing to wait for), C_r += A_r[:, block] * B[block, :], while on its side stream the
// block it holds goes to rank r - 1 and the next one arrives from rank r + 1 (ncclSend /
// ncclRecv into the other of two buffers). Whole blocks keep each product's k at K / P: with
// broadcasts of quarter blocks the 16384^3 float product ran at 1.72 of one GPU, the k = 2048
// products losing to their tiles' fill and drain.
#include "dist/comm.hpp"

#include "detail/runtime.hpp"

#include <algorithm>
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

  if (K == 0 || N == 0) {  // C = beta * C
    for (std::size_t i = 0; i < L; ++i) {
      const DeviceScope scope(c.local_device(i));
      DeviceMatrix<T>& c_r = C.shard(c.local_ranks[i]);
      if (beta == T(0)) c_r.fill(T(0));
      else c_r *= beta;
    }
    return;
  }

  // The block of B that rank r holds at step s, and its rows.
  const auto owner = [&](int r, int s) { return (r + s) % P; };
  Index max_rows = 0;
  for (int q = 0; q < P; ++q) max_rows = std::max(max_rows, block_rows(K, P, q));
  // Per local rank: two buffers for the blocks the ring brings (allocated on the rank's stream,
  // none with one rank), and events: ready[b] (side stream: the block in buffer b arrived),
  // used[b] (rank stream: its product done), start (the rank stream's work so far).
  std::vector<DeviceMatrix<T>> buf[2];
  std::vector<std::unique_ptr<Events>> events;
  for (std::size_t i = 0; i < L; ++i) {
    const DeviceScope scope(c.local_device(i));
    const Stream& s = c.streams[i];
    detail::use_on(s, A.shard(c.local_ranks[i]), B.shard(c.local_ranks[i]), C.shard(c.local_ranks[i]));
    if (P > 1)
      for (auto& b : buf) b.emplace_back(max_rows, N, s);
    events.push_back(std::make_unique<Events>(5));
    // The side stream starts after everything queued on the rank's stream (B's shard, buffers).
    DEVMAT_CUDA_TRY(cudaEventRecord(events[i]->ev[4], s.native()));
    DEVMAT_CUDA_TRY(cudaStreamWaitEvent(c.side[i].native(), events[i]->ev[4], 0));
  }
  const auto ready = [&](std::size_t i, int step) { return events[i]->ev[step % 2]; };
  const auto used = [&](std::size_t i, int step) { return events[i]->ev[2 + step % 2]; };
  const auto held = [&](std::size_t i, int step) -> T* {
    return step == 0 ? const_cast<T*>(B.shard(c.local_ranks[i]).data()) : buf[step % 2][i].data();
  };

  // Step s + 1's block: sent on from what step s holds, received into the buffer that step s - 1
  // multiplied (the side stream waits for that product).
  const auto pass_on = [&](int step) {
    for (std::size_t i = 0; i < L; ++i) {
      const DeviceScope scope(c.local_device(i));
      if (step >= 1) DEVMAT_CUDA_TRY(cudaStreamWaitEvent(c.side[i].native(), used(i, step - 1), 0));
    }
    detail::nccl_group(c, [&] {
      for (std::size_t i = 0; i < L; ++i) {
        const int r = c.local_ranks[i];
        const auto send_n = static_cast<std::size_t>(block_rows(K, P, owner(r, step)) * N);
        const auto recv_n = static_cast<std::size_t>(block_rows(K, P, owner(r, step + 1)) * N);
        // The same counts on both ends: rank r - 1 receives owner(r, step) as its next block.
        if (send_n)
          DEVMAT_NCCL_TRY(ncclSend(held(i, step), send_n, detail::nccl_type<T>(), (r + P - 1) % P, c.comms[i],
                                   c.side[i].native()),
                          c.comms[i]);
        if (recv_n)
          DEVMAT_NCCL_TRY(ncclRecv(held(i, step + 1), recv_n, detail::nccl_type<T>(), (r + 1) % P, c.comms[i],
                                   c.side[i].native()),
                          c.comms[i]);
      }
    });
    for (std::size_t i = 0; i < L; ++i) {
      const DeviceScope scope(c.local_device(i));
      DEVMAT_CUDA_TRY(cudaEventRecord(ready(i, step + 1), c.side[i].native()));
    }
  };

  for (int step = 0; step < P; ++step) {
    if (step + 1 < P) pass_on(step);  // overlaps this step's products
    for (std::size_t i = 0; i < L; ++i) {
      const int r = c.local_ranks[i];
      const DeviceScope scope(c.devices[r]);
      const Stream& s = c.streams[i];
      if (step >= 1) DEVMAT_CUDA_TRY(cudaStreamWaitEvent(s.native(), ready(i, step), 0));
      DeviceMatrix<T>& c_r = C.shard(r);
      const int q = owner(r, step);
      const Index kq = block_rows(K, P, q);
      if (!c_r.empty()) {
        // An empty block still applies beta at step 0 (a k == 0 product).
        const MatrixView<const T> b_block = detail::Access::view<const T>(held(i, step), kq, N, N, nullptr, s);
        devmat::gemm(alpha, A.shard(r).block(0, block_offset(K, P, q), c_r.rows(), kq), b_block,
                     step == 0 ? beta : T(1), c_r.view());
      }
      DEVMAT_CUDA_TRY(cudaEventRecord(used(i, step), s.native()));
    }
  }
  // The buffers are freed on the rank's streams: after the side stream's last transfer (the
  // last product already waited for it; this also orders the side stream's earlier work).
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
