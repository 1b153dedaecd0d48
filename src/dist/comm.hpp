// Internals of the multi-GPU component: the communicator's state, NCCL error handling, the
// failure-checked wait, and the grouped issue of collectives over the local ranks. Plain C++
// (the CUDA runtime API and nccl.h).
#pragma once

#include <devmat/dist.hpp>
#include <devmat/error.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace devmat {

struct Communicator::Impl {
  int size = 0;
  std::vector<int> local_ranks;  // increasing
  std::vector<int> devices;      // by rank (all ranks)
  std::vector<ncclComm_t> comms;  // by local index
  std::vector<Stream> streams;    // by local index: every shard of the rank lives on it
  std::vector<Stream> side;       // by local index: the overlapped broadcasts of the SUMMA product
  std::atomic<bool> aborted{false};
  /// Pinned host slots, one per local rank, where a reduction to one value lands in one
  /// process (see host_scalars()); allocated on first use, guarded by scalars_mutex.
  std::mutex scalars_mutex;
  void* scalars = nullptr;
  /// The pinned slots (8 bytes a local rank, any element type up to 8 bytes); the caller holds
  /// scalars_mutex.
  void* host_scalars();
  bool single_process() const noexcept { return static_cast<int>(local_ranks.size()) == size; }
  /// The local index of `rank`; cuda_error when this process does not drive it.
  std::size_t index(int rank) const;
  /// The device of the rank at local index i.
  int local_device(std::size_t i) const { return devices[local_ranks[i]]; }
  ~Impl();
};

namespace detail {

[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, ncclComm_t comm);
#define DEVMAT_NCCL_TRY(call, comm)                                            \
  do {                                                                         \
    const ncclResult_t devmat_nccl_ = (call);                                  \
    if (devmat_nccl_ != ncclSuccess) ::devmat::detail::throw_nccl(devmat_nccl_, #call, comm); \
  } while (0)

/// cuda_error when the communicator was aborted (or is empty).
void require_live(const Communicator::Impl& c, const char* op);

/// Waits for the work queued so far on the local ranks' streams (and side streams), polling
/// NCCL's asynchronous errors; a failure or the timeout (DEVMAT_DIST_TIMEOUT seconds, default
/// 300) aborts the communicator and throws cuda_error naming `op`.
void wait_ranks(Communicator::Impl& c, const char* op);

/// Aborts every local NCCL communicator (once).
void abort_comm(Communicator::Impl& c) noexcept;

/// In a group of several processes, compares `sig` (the operation's shapes and arguments) over
/// all ranks with an all-reduce of (sig, -sig) by max, so that a mismatch is a shape_error on
/// every rank before the operation issues any collective of its own. Free in one process.
void agree(Communicator::Impl& c, const char* op, std::vector<long long> sig);

/// The Impl of a handle (shared state of every matrix on it).
Communicator::Impl& impl_of(const Communicator& c);

/// impl_of(comm), after require_live: what every operation on the handle starts with.
inline Communicator::Impl& live(const Communicator& comm, const char* op) {
  Communicator::Impl& c = impl_of(comm);
  require_live(c, op);
  return c;
}

template <class T> ncclDataType_t nccl_type() {
  if constexpr (std::is_same_v<T, float>) return ncclFloat32;
  else if constexpr (std::is_same_v<T, double>) return ncclFloat64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return ncclInt32;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return ncclUint8;
  else if constexpr (std::is_same_v<T, std::int64_t>) return ncclInt64;
  else {
    static_assert(std::is_same_v<T, std::uint64_t>, "no NCCL type");
    return ncclUint64;
  }
}

/// ncclGroupStart / ncclGroupEnd around the calls of `f`: several communicators driven by one
/// thread must issue each collective inside one group, or the first one waits for the others.
template <class F>
void nccl_group(const Communicator::Impl& c, F&& f) {
  DEVMAT_NCCL_TRY(ncclGroupStart(), nullptr);
  try {
    f();
  } catch (...) {
    (void)ncclGroupEnd();
    throw;
  }
  DEVMAT_NCCL_TRY(ncclGroupEnd(), c.comms.empty() ? nullptr : c.comms.front());
}

}  // namespace detail
}  // namespace devmat
