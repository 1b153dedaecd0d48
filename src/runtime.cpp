// Errors, streams, the memory pool and stream-ordered buffers.
#include "detail/runtime.hpp"

#include <devmat/error.hpp>
#include <devmat/memory.hpp>
#include <devmat/stream.hpp>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

namespace devmat {

// ------------------------------------------------------------------ errors
namespace {
std::string bytes_string(std::size_t b) {
  std::ostringstream os;
  os << b << " bytes";
  if (b >= (1u << 20)) os << " (" << (b >> 20) << " MiB)";
  return os.str();
}
}  // namespace

out_of_memory::out_of_memory(std::size_t requested, std::size_t free_bytes, std::size_t total_bytes)
    : what_("devmat: out of device memory: asked for " + bytes_string(requested) + ", " +
            bytes_string(free_bytes) + " free of " + bytes_string(total_bytes)),
      requested_(requested),
      free_(free_bytes) {}

namespace detail {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream os;
  os << "devmat: CUDA call " << call << " failed at " << file << ":" << line << ": "
     << cudaGetErrorName(code) << " (" << static_cast<int>(code) << "): " << cudaGetErrorString(code);
  throw cuda_error(code, os.str());
}

std::string shape_string(Index rows, Index cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

void throw_shape_error(const char* op, Index ar, Index ac, Index br, Index bc, const char* why) {
  std::string msg = std::string("devmat: ") + op + ": shapes " + shape_string(ar, ac) + " and " +
                    shape_string(br, bc) + (why ? std::string(" ") + why : " do not match");
  throw shape_error(msg);
}

void require_device() {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear, so later calls do not report it again
    const cudaError_t code = st == cudaSuccess ? cudaErrorNoDevice : st;
    throw cuda_error(code, std::string("devmat: no CUDA device was found (cudaGetDeviceCount: ") +
                               cudaGetErrorName(code) + ": " + cudaGetErrorString(code) +
                               "); devmat needs an NVIDIA GPU with a working driver");
  }
}

void stream_wait(cudaStream_t waiter, cudaStream_t on) {
  if (waiter == on) return;
  cudaEvent_t ev;
  DEVMAT_CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  cudaError_t st = cudaEventRecord(ev, on);
  if (st == cudaSuccess) st = cudaStreamWaitEvent(waiter, ev, 0);
  cudaEventDestroy(ev);  // released once the wait is satisfied
  if (st != cudaSuccess) throw_cuda_error(st, "cudaEventRecord/cudaStreamWaitEvent", __FILE__, __LINE__);
}

// ------------------------------------------------------------------ pool
namespace {
std::mutex g_pool_mu;
std::vector<cudaMemPool_t> g_pools;  // by device ordinal

cudaMemPool_t pool_for_current_device() {
  int dev = 0;
  DEVMAT_CUDA_TRY(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (static_cast<int>(g_pools.size()) <= dev) g_pools.resize(dev + 1, nullptr);
  if (!g_pools[dev]) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    DEVMAT_CUDA_TRY(cudaMemPoolCreate(&pool, &props));
    // Keep freed memory for reuse instead of returning it at every synchronisation.
    std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
    DEVMAT_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    g_pools[dev] = pool;  // lives until process exit, like the device's default pool
  }
  return g_pools[dev];
}
}  // namespace

void* pool_allocate(std::size_t bytes, cudaStream_t stream) {
  cudaMemPool_t pool = pool_for_current_device();
  void* p = nullptr;
  cudaError_t st = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
  if (st == cudaErrorMemoryAllocation) {
    // Memory freed on other streams may still be pending: wait for it, give back what the
    // pool holds unused, and try once more.
    cudaGetLastError();
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(pool, 0);
    st = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
  }
  if (st == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw out_of_memory(bytes, free_b, total_b);
  }
  if (st != cudaSuccess) throw_cuda_error(st, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  return p;
}

// ------------------------------------------------------------------ buffers
Buffer::Buffer(std::size_t n, Stream s) : bytes(n), owner(std::move(s)) {
  ptr = pool_allocate(bytes, owner.native());
}

Buffer::~Buffer() {
  // Never throws: at process exit the runtime may already be gone ("driver shutting down").
  try {
    std::lock_guard<std::mutex> lock(mu_);
    wait_users_locked(owner.native());
  } catch (...) {
  }
  cudaFreeAsync(ptr, owner.native());
  cudaGetLastError();
}

void Buffer::wait_users_locked(cudaStream_t waiter) {
  for (const Stream& u : users_) stream_wait(waiter, u.native());
  users_.clear();
}

void Buffer::prepare_use(const Stream& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s == owner) {
    wait_users_locked(s.native());
    return;
  }
  stream_wait(s.native(), owner.native());
  bool known = false;
  for (const Stream& u : users_) {
    if (u == s) known = true;
    else stream_wait(s.native(), u.native());
  }
  if (!known) users_.push_back(s);
}

void Buffer::set_owner(const Stream& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s == owner) return;
  stream_wait(s.native(), owner.native());
  for (const Stream& u : users_)
    if (u != s) stream_wait(s.native(), u.native());
  users_.clear();
  owner = s;
}

}  // namespace detail

PoolStats pool_stats() {
  detail::require_device();
  cudaMemPool_t pool = detail::pool_for_current_device();
  std::uint64_t reserved = 0, used = 0;
  DEVMAT_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  DEVMAT_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return {static_cast<std::size_t>(reserved), static_cast<std::size_t>(used)};
}

void trim_pool(std::size_t keep_bytes) {
  detail::require_device();
  DEVMAT_CUDA_TRY(cudaMemPoolTrimTo(detail::pool_for_current_device(), keep_bytes));
}

// ------------------------------------------------------------------ streams
Stream::Impl::~Impl() {
  if (owning && native) cudaStreamDestroy(native);  // errors at shutdown are not errors
}

Stream Stream::create() {
  detail::require_device();
  auto impl = std::make_shared<Impl>();
  DEVMAT_CUDA_TRY(cudaGetDevice(&impl->device));
  DEVMAT_CUDA_TRY(cudaStreamCreateWithFlags(&impl->native, cudaStreamNonBlocking));
  impl->owning = true;
  return Stream(std::move(impl));
}

Stream Stream::per_thread() {
  thread_local Stream stream = create();
  return stream;
}

Stream Stream::wrap(cudaStream_t native) {
  auto impl = std::make_shared<Impl>();
  impl->native = native;
  impl->owning = false;
  cudaGetDevice(&impl->device);
  return Stream(std::move(impl));
}

cudaStream_t Stream::native() const noexcept { return impl_ ? impl_->native : nullptr; }

bool Stream::owning() const noexcept { return impl_ && impl_->owning; }

void Stream::synchronize() const {
  if (impl_) DEVMAT_CUDA_TRY(cudaStreamSynchronize(impl_->native));
}

}  // namespace devmat
