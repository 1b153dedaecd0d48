// devmat::Communicator: NCCL communicators for the local ranks, their streams, failure
// detection (ncclCommGetAsyncError with a timeout) and abort.
#include "dist/comm.hpp"

#include "detail/device_guard.hpp"
#include "detail/error_scope.hpp"
#include "detail/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

namespace devmat {

// ------------------------------------------------------------------ device scope
namespace detail {

// The public face of detail::DeviceGuard (dist.hpp's shardwise needs one in a header).
DeviceScope::DeviceScope(int device) : previous_(switch_device(device)) {}
DeviceScope::~DeviceScope() { restore_device(previous_); }

[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, ncclComm_t comm) {
  std::string msg = std::string("devmat: NCCL call ") + call + " failed: " + ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last && *last) msg += std::string(" (") + last + ")";
  throw cuda_error(cudaErrorUnknown, msg);
}

void require_live(const Communicator::Impl& c, const char* op) {
  if (c.aborted.load(std::memory_order_acquire))
    throw cuda_error(cudaErrorUnknown, std::string("devmat: ") + op +
                                           ": the communicator was aborted (a rank failed, timed out or called abort())");
}

void abort_comm(Communicator::Impl& c) noexcept {
  if (c.aborted.exchange(true)) return;
  for (std::size_t i = 0; i < c.comms.size(); ++i) {
    if (!c.comms[i]) continue;
    (void)ncclCommAbort(c.comms[i]);
    c.comms[i] = nullptr;
  }
}

namespace {
double timeout_seconds() {
  static const double t = [] {
    const char* e = std::getenv("DEVMAT_DIST_TIMEOUT");
    const double v = e ? std::atof(e) : 0.0;
    return v > 0 ? v : 300.0;
  }();
  return t;
}
}  // namespace

void wait_ranks(Communicator::Impl& c, const char* op) {
  require_live(c, op);
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds());
  for (std::size_t i = 0; i < c.streams.size(); ++i) {
    for (const Stream* s : {&c.side[i], &c.streams[i]}) {
      for (long polls = 0;; ++polls) {
        const ErrorScope scope;
        const cudaError_t st = cudaStreamQuery(s->native());
        if (st == cudaSuccess) break;
        if (st != cudaErrorNotReady) {
          scope.forget_ours();
          abort_comm(c);
          throw cuda_error(st, std::string("devmat: ") + op + ": waiting for rank " +
                                   std::to_string(c.local_ranks[i]) + " failed: " + cudaGetErrorName(st) + ": " +
                                   cudaGetErrorString(st));
        }
        ncclResult_t async = ncclSuccess;
        if (c.comms[i] && ncclCommGetAsyncError(c.comms[i], &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress) {
          abort_comm(c);
          throw cuda_error(cudaErrorUnknown, std::string("devmat: ") + op + ": NCCL reported an error on rank " +
                                                 std::to_string(c.local_ranks[i]) + " (" + ncclGetErrorString(async) +
                                                 "): a peer rank failed; the communicator was aborted");
        }
        const auto now = clock::now();
        if (now > deadline) {
          abort_comm(c);
          throw cuda_error(cudaErrorLaunchTimeout,
                           std::string("devmat: ") + op + ": rank " + std::to_string(c.local_ranks[i]) +
                               " waited more than " + std::to_string(timeout_seconds()) +
                               " s (DEVMAT_DIST_TIMEOUT) for its peers: a rank failed or did not call the same "
                               "operation; the communicator was aborted");
        }
        // Spin for the first milliseconds (a reduction's result is a few microseconds away),
        // then sleep between polls.
        if (now - start < std::chrono::milliseconds(2)) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
}

void agree(Communicator::Impl& c, const char* op, std::vector<long long> sig) {
  require_live(c, op);
  if (c.single_process()) return;  // every rank sees the same objects
  const std::size_t n = sig.size();
  std::vector<std::int64_t> h(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = sig[i];
    h[n + i] = -sig[i];
  }
  std::vector<DeviceMatrix<std::int64_t>> bufs;
  for (std::size_t i = 0; i < c.comms.size(); ++i) {
    const DeviceScope scope(c.local_device(i));
    bufs.push_back(DeviceMatrix<std::int64_t>::from_host(h.data(), 1, static_cast<Index>(2 * n), c.streams[i]));
  }
  nccl_group(c, [&] {
    for (std::size_t i = 0; i < c.comms.size(); ++i)
      DEVMAT_NCCL_TRY(ncclAllReduce(bufs[i].data(), bufs[i].data(), 2 * n, ncclInt64, ncclMax, c.comms[i],
                                    c.streams[i].native()),
                      c.comms[i]);
  });
  wait_ranks(c, op);
  std::vector<std::int64_t> r(2 * n);
  {
    const DeviceScope scope(c.local_device(0));
    r = bufs[0].to_vector();
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (r[i] != sig[i] || -r[n + i] != sig[i]) {
      std::string mine, lo, hi;
      for (std::size_t j = 0; j < n; ++j) {
        mine += (j ? "," : "") + std::to_string(sig[j]);
        hi += (j ? "," : "") + std::to_string(r[j]);
        lo += (j ? "," : "") + std::to_string(-r[n + j]);
      }
      throw shape_error(std::string("devmat: ") + op + ": the ranks disagree on the shapes or arguments (rank " +
                        std::to_string(c.local_ranks[0]) + " has [" + mine + "], the ranks' smallest [" + lo +
                        "], largest [" + hi + "])");
    }
  }
}

Communicator::Impl& impl_of(const Communicator& c) {
  if (!c) throw cuda_error(cudaErrorInvalidValue, "devmat: an empty Communicator (make one with local() or join())");
  return detail::DistAccess::impl(c);
}

}  // namespace detail
}  // namespace devmat

namespace devmat {

std::size_t Communicator::Impl::index(int rank) const {
  const auto it = std::lower_bound(local_ranks.begin(), local_ranks.end(), rank);
  if (it == local_ranks.end() || *it != rank)
    throw cuda_error(cudaErrorInvalidValue, "devmat: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                                " is not driven by this process (its shard lives elsewhere)");
  return static_cast<std::size_t>(it - local_ranks.begin());
}

Communicator::Impl::~Impl() {
  // Never throws. A communicator still healthy is destroyed after its queued work (ncclCommDestroy
  // waits for it); an aborted one was already freed by ncclCommAbort.
  for (std::size_t i = 0; i < comms.size(); ++i) {
    if (!comms[i]) continue;
    int previous = -1;
    try {
      previous = detail::switch_device(devices[local_ranks[i]]);
    } catch (...) {  // the runtime is gone (process exit): destroy anyway
    }
    (void)ncclCommDestroy(comms[i]);
    detail::restore_device(previous);
  }
  if (scalars) (void)cudaFreeHost(scalars);
  (void)cudaGetLastError();  // at process exit the runtime may be shutting down: nothing to report
}

void* Communicator::Impl::host_scalars() {
  if (!scalars) DEVMAT_CUDA_TRY(cudaMallocHost(&scalars, 8 * local_ranks.size()));
  return scalars;
}

namespace {
// NVLink multicast (NVLS) stays off: a program that uses it can take a host's shared GPUs out
// of service. Set before NCCL reads its environment, overwriting the user's value on purpose.
void nvls_off() {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
}

// The per-rank streams, made on the rank's device.
void make_streams(Communicator::Impl& c) {
  for (int r : c.local_ranks) {
    const detail::DeviceScope scope(c.devices[r]);
    c.streams.push_back(Stream::create());
    c.side.push_back(Stream::create());
  }
}
}  // namespace

UniqueId UniqueId::create() {
  nvls_off();
  ncclUniqueId id;
  DEVMAT_NCCL_TRY(ncclGetUniqueId(&id), nullptr);
  UniqueId u;
  static_assert(sizeof(id.internal) == sizeof(u.bytes), "ncclUniqueId size");
  std::memcpy(u.bytes.data(), id.internal, sizeof(id.internal));
  return u;
}

Communicator Communicator::local() {
  detail::require_device();
  int n = 0;
  DEVMAT_CUDA_TRY(cudaGetDeviceCount(&n));
  std::vector<int> devices(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) devices[static_cast<std::size_t>(i)] = i;
  return local(devices);
}

Communicator Communicator::local(const std::vector<int>& devices) {
  detail::require_device();
  nvls_off();
  if (devices.empty()) throw cuda_error(cudaErrorInvalidValue, "devmat: Communicator::local: no device given");
  auto c = std::make_shared<Impl>();
  c->size = static_cast<int>(devices.size());
  c->devices = devices;
  for (int r = 0; r < c->size; ++r) c->local_ranks.push_back(r);
  c->comms.assign(devices.size(), nullptr);
  {
    // ncclCommInitAll switches devices itself; restore the caller's.
    int previous = 0;
    DEVMAT_CUDA_TRY(cudaGetDevice(&previous));
    const ncclResult_t r = ncclCommInitAll(c->comms.data(), c->size, devices.data());
    (void)cudaSetDevice(previous);
    if (r != ncclSuccess) {
      c->comms.clear();
      detail::throw_nccl(r, "ncclCommInitAll", nullptr);
    }
  }
  make_streams(*c);
  return Communicator(std::move(c));
}

Communicator Communicator::join(const UniqueId& id, int rank, int nranks, int device) {
  detail::require_device();
  nvls_off();
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw cuda_error(cudaErrorInvalidValue, "devmat: Communicator::join: rank " + std::to_string(rank) + " of " +
                                                std::to_string(nranks) + " is not a rank");
  auto c = std::make_shared<Impl>();
  c->size = nranks;
  c->local_ranks = {rank};
  c->devices.assign(static_cast<std::size_t>(nranks), -1);
  c->devices[static_cast<std::size_t>(rank)] = device;
  c->comms.assign(1, nullptr);
  ncclUniqueId nid;
  std::memcpy(nid.internal, id.bytes.data(), sizeof(nid.internal));
  {
    const detail::DeviceScope scope(device);
    const ncclResult_t r = ncclCommInitRank(&c->comms[0], nranks, nid, rank);
    if (r != ncclSuccess) {
      c->comms.clear();
      detail::throw_nccl(r, "ncclCommInitRank", nullptr);
    }
  }
  make_streams(*c);
  // Every rank learns every rank's device (an all-gather of one int each).
  {
    const detail::DeviceScope scope(device);
    auto all = DeviceMatrix<std::int32_t>::constant(1, nranks, device, c->streams[0]);
    DEVMAT_NCCL_TRY(ncclAllGather(all.data() + rank, all.data(), 1, ncclInt32, c->comms[0], c->streams[0].native()),
                    c->comms[0]);
    detail::wait_ranks(*c, "Communicator::join");
    const std::vector<std::int32_t> d = all.to_vector();
    c->devices.assign(d.begin(), d.end());
  }
  return Communicator(std::move(c));
}

Communicator Communicator::join_file(const std::string& path, int rank, int nranks, int device, double timeout_s) {
  UniqueId id;
  if (rank == 0) {
    id = UniqueId::create();
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(id.bytes.data()), static_cast<std::streamsize>(id.bytes.size()));
      if (!out) throw io_error("devmat: Communicator::join_file: cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw io_error("devmat: Communicator::join_file: cannot rename " + tmp + " to " + path);
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        in.read(reinterpret_cast<char*>(id.bytes.data()), static_cast<std::streamsize>(id.bytes.size()));
        if (in.gcount() == static_cast<std::streamsize>(id.bytes.size())) break;
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw cuda_error(cudaErrorTimeout, "devmat: Communicator::join_file: rank " + std::to_string(rank) +
                                               " waited " + std::to_string(timeout_s) + " s for rank 0 to write " +
                                               path);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return join(id, rank, nranks, device);
}

int Communicator::size() const noexcept { return impl_ ? impl_->size : 0; }
int Communicator::rank() const noexcept { return impl_ ? impl_->local_ranks.front() : 0; }
const std::vector<int>& Communicator::local_ranks() const noexcept {
  static const std::vector<int> none;
  return impl_ ? impl_->local_ranks : none;
}
bool Communicator::is_local(int rank) const noexcept {
  return impl_ && std::binary_search(impl_->local_ranks.begin(), impl_->local_ranks.end(), rank);
}
int Communicator::device(int rank) const {
  const Impl& c = detail::impl_of(*this);
  if (rank < 0 || rank >= c.size)
    throw cuda_error(cudaErrorInvalidValue, "devmat: rank " + std::to_string(rank) + " of " + std::to_string(c.size));
  return c.devices[static_cast<std::size_t>(rank)];
}
Stream Communicator::stream(int rank) const {
  const Impl& c = detail::impl_of(*this);
  return c.streams[c.index(rank)];
}
void Communicator::synchronize() const { detail::wait_ranks(detail::impl_of(*this), "Communicator::synchronize"); }
void Communicator::abort() noexcept {
  if (impl_) detail::abort_comm(*impl_);
}
bool Communicator::aborted() const noexcept { return impl_ && impl_->aborted.load(std::memory_order_acquire); }

}  // namespace devmat
