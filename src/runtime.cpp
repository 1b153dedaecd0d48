// Errors, streams, the memory pool and stream-ordered buffers.
#include "detail/runtime.hpp"

#include "detail/arch_check.hpp"
#include "detail/device_guard.hpp"
#include "detail/error_scope.hpp"
#include "dispatch/device.hpp"
#include "dispatch/workspace.hpp"

#include <devmat/error.hpp>
#include <devmat/memory.hpp>
#include <devmat/pinned.hpp>
#include <devmat/stream.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
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

void require_nonempty(Index rows, Index cols, const char* op, const char* what) {
  if (rows * cols == 0)
    throw shape_error(std::string("devmat: ") + op + ": the " + what + " is empty (" + shape_string(rows, cols) +
                      "); its " + op + " is undefined");
}

void throw_shape_error(const char* op, Index ar, Index ac, Index br, Index bc, const char* why) {
  std::string msg = std::string("devmat: ") + op + ": shapes " + shape_string(ar, ac) + " and " +
                    shape_string(br, bc) + (why ? std::string(" ") + why : " do not match");
  throw shape_error(msg);
}

void require_device() {
  int count = 0;
  const ErrorScope scope;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess || count == 0) {
    scope.forget_ours();  // reported by the exception below
    const cudaError_t code = st == cudaSuccess ? cudaErrorNoDevice : st;
    throw cuda_error(code, std::string("devmat: no CUDA device was found (cudaGetDeviceCount: ") +
                               cudaGetErrorName(code) + ": " + cudaGetErrorString(code) +
                               "); devmat needs an NVIDIA GPU with a working driver");
  }
}

namespace {
/// The device a CUDA stream belongs to.
int stream_device(cudaStream_t s) {
  int device = 0;
  DEVMAT_CUDA_TRY(cudaStreamGetDevice(s, &device));
  return device;
}
}  // namespace

void stream_wait(cudaStream_t waiter, cudaStream_t on) {
  if (waiter == on) return;
  // The event belongs to the device current at its creation and is recorded on `on`: make `on`'s
  // device current, whatever the caller's (a matrix moved or freed while another device is
  // current). cudaStreamWaitEvent waits across devices.
  const DeviceGuard device(stream_device(on));
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

cudaMemPool_t pool_for_device(int dev) {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (static_cast<int>(g_pools.size()) <= dev) g_pools.resize(dev + 1, nullptr);
  if (!g_pools[dev]) {
    check_device_arch(dev);  // the first allocation on a device: is there code for it?
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

// ------------------------------------------------------------------ block cache
// Blocks freed on a stream that devmat owns are kept for the next allocation of the same size
// on the same stream: stream order makes the reuse safe, and a chain of operations then costs
// no allocator call at all. Blocks go back to the pool when their stream dies, on trim_pool(),
// or when an allocation fails. Blocks up to an f32 4096x4096 image: the pool's free and
// allocation (cudaFreeAsync, cudaMallocFromPoolAsync, the device checks around them) cost ~4 us
// of host time, which a one-pass image operation at 4096^2 pays in full while the GPU waits
// (threshold u8: 0.78 of NPP through the public call, 1.06 with its output preallocated, H200
// run S3); a cache hit costs a lock and a scan of a few entries.
namespace {
constexpr std::size_t kCacheMaxBlock = 64u << 20;   // blocks up to 64 MiB
constexpr std::size_t kCacheMaxTotal = 256u << 20;  // at most 256 MiB held
constexpr std::size_t kCacheGranule = 512;         // sizes rounded up to 512 bytes

struct CachedBlock {
  cudaStream_t stream;
  std::size_t bytes;
  void* ptr;
};
struct BlockCache {
  std::mutex mu;
  std::vector<CachedBlock> blocks;
  std::size_t total = 0;
};
BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: outlives every static matrix
  return *cache;
}

std::size_t rounded(std::size_t bytes) {
  return bytes <= kCacheMaxBlock ? (bytes + kCacheGranule - 1) / kCacheGranule * kCacheGranule : bytes;
}

// The blocks stay in the order they were freed (oldest first): a full cache gives its oldest
// back to make room (pool_free), and an allocation takes the oldest block that fits. (Taking the
// newest instead, to keep a remade output in L2, measured no faster: threshold u8 at 4096^2 1.070
// of NPP against 1.096, f32 2.114 against 2.132, rgb_to_gray 1.497 against 1.503, H200 run V1.)
void* take_cached(std::size_t bytes, cudaStream_t stream) {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto fits = [&](const CachedBlock& b) { return b.stream == stream && b.bytes == bytes; };
  const auto it = std::find_if(c.blocks.begin(), c.blocks.end(), fits);
  if (it == c.blocks.end()) return nullptr;
  void* p = it->ptr;
  c.total -= bytes;
  c.blocks.erase(it);
  return p;
}

std::atomic<std::size_t> g_pool_allocations{0};

// Frees a block stream-ordered, with the stream's device current whatever the caller's (a
// matrix of another device going out of scope). Never throws: a failure here (the driver
// shutting down at process exit) leaves nothing to do, and is not left behind as the thread's
// last error.
void free_async(void* ptr, cudaStream_t stream) noexcept {
  const ErrorScope scope;
  int previous = -1;
  try {
    previous = switch_device(stream_device(stream));
  } catch (...) {
    scope.forget_ours();
  }
  if (cudaFreeAsync(ptr, stream) != cudaSuccess) scope.forget_ours();
  restore_device(previous);
}

// Frees (stream-ordered) every cached block of `stream`, or of all streams with `all`.
void flush_cache(cudaStream_t stream, bool all) {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto keep = c.blocks.begin();
  for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it) {
    if (all || it->stream == stream) {
      free_async(it->ptr, it->stream);
      c.total -= it->bytes;
    } else {
      *keep++ = *it;
    }
  }
  c.blocks.erase(keep, c.blocks.end());
}
}  // namespace

std::size_t cached_bytes() {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.total;
}

std::size_t pool_allocations() { return g_pool_allocations.load(std::memory_order_relaxed); }

void* pool_allocate(std::size_t bytes, const Stream& s) {
  const cudaStream_t stream = s.native();
  bytes = rounded(bytes);
  if (bytes <= kCacheMaxBlock)
    if (void* p = take_cached(bytes, stream)) return p;
  // The allocator, cudaMemGetInfo and the retry's cudaDeviceSynchronize act on the stream's
  // device, whatever the caller's current one (a cache hit above needs no device).
  const DeviceGuard device(s);
  cudaMemPool_t pool = pool_for_device(Access::device(s));
  std::size_t free_b = 0, total_b = 0;
  if (bytes > (std::size_t(1) << 30) && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess &&
      bytes > total_b)
    throw out_of_memory(bytes, free_b, total_b);  // can never succeed: don't ask the driver
  void* p = nullptr;
  const ErrorScope scope;
  g_pool_allocations.fetch_add(1, std::memory_order_relaxed);
  cudaError_t st = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
  if (st == cudaErrorMemoryAllocation) {
    // Memory held in the cache or freed on other streams may still be pending: give it
    // back, wait for it, and try once more.
    scope.forget_ours();
    flush_cache(nullptr, true);
    DEVMAT_CUDA_TRY(cudaDeviceSynchronize());
    DEVMAT_CUDA_TRY(cudaMemPoolTrimTo(pool, 0));
    st = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
  }
  if (st == cudaErrorMemoryAllocation) {
    scope.forget_ours();  // reported by the exception below
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) scope.forget_ours();
    throw out_of_memory(bytes, free_b, total_b);
  }
  if (st != cudaSuccess) throw_cuda_error(st, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  return p;
}

void pool_free(void* ptr, std::size_t bytes, const Stream& stream) {
  bytes = rounded(bytes);
  if (stream.owning() && bytes <= kCacheMaxBlock) {
    // A full cache gives its oldest blocks back (stream-ordered, each on its own stream) rather
    // than refusing this one: it then holds the sizes in use now, not those of the first
    // operations of the process forever (a loop over 16 MiB images after a few 64 MiB ones
    // would otherwise pay the allocator on every call). Each block still goes to the pool
    // once, so a working set larger than the cache costs what it did.
    BlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    std::size_t evict = 0;
    std::size_t total = c.total;
    while (total + bytes > kCacheMaxTotal && evict < c.blocks.size()) total -= c.blocks[evict++].bytes;
    for (std::size_t i = 0; i < evict; ++i) free_async(c.blocks[i].ptr, c.blocks[i].stream);
    c.blocks.erase(c.blocks.begin(), c.blocks.begin() + static_cast<std::ptrdiff_t>(evict));
    c.blocks.push_back({stream.native(), bytes, ptr});
    c.total = total + bytes;
    return;
  }
  free_async(ptr, stream.native());
}

void release_cached(cudaStream_t stream) { flush_cache(stream, false); }

// ------------------------------------------------------------------ buffers
Buffer::Buffer(std::size_t n, Stream s) : bytes(n), owner(std::move(s)) {
  ptr = pool_allocate(bytes, owner);
  owner_native_.store(owner.native(), std::memory_order_relaxed);
}

Buffer::~Buffer() {
  // Never throws: at process exit the runtime may already be gone ("driver shutting down").
  try {
    std::lock_guard<std::mutex> lock(mu_);
    wait_users_locked(owner.native());
  } catch (...) {
  }
  pool_free(ptr, bytes, owner);
}

void Buffer::wait_users_locked(cudaStream_t waiter) {
  for (const Stream& u : users_) stream_wait(waiter, u.native());
  users_.clear();
  has_users_.store(false, std::memory_order_release);
}

void Buffer::prepare_use(const Stream& s) {
  // The owner stream with no foreign user has nothing to wait for and nothing to record. Read
  // without the lock: a use on another thread that races with this one is unordered either way
  // (the lock would only pick an order), and both mirrors change under the lock together with
  // what they mirror, so what is read here was the whole state at some moment of the call.
  if (!has_users_.load(std::memory_order_acquire) && s.native() == owner_native_.load(std::memory_order_acquire))
    return;
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
  if (!known) {
    users_.push_back(s);
    has_users_.store(true, std::memory_order_release);
  }
}

void Buffer::set_owner(const Stream& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (s == owner) return;
  stream_wait(s.native(), owner.native());
  for (const Stream& u : users_)
    if (u != s) stream_wait(s.native(), u.native());
  users_.clear();
  has_users_.store(false, std::memory_order_release);
  owner = s;
  owner_native_.store(owner.native(), std::memory_order_release);
}

// ------------------------------------------------------------------ workspaces
Workspace::Workspace(std::size_t bytes, const Stream& stream) : bytes_(bytes), stream_(stream) {
  if (bytes_) ptr_ = pool_allocate(bytes_, stream_);
}

Workspace::~Workspace() { release(); }

void Workspace::release() noexcept {
  if (ptr_) pool_free(ptr_, bytes_, stream_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Workspace::Workspace(Workspace&& other) noexcept
    : ptr_(other.ptr_), bytes_(other.bytes_), stream_(std::move(other.stream_)) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}

Workspace& Workspace::operator=(Workspace&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    stream_ = std::move(other.stream_);
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

}  // namespace detail

PoolStats pool_stats() {
  detail::require_device();
  cudaMemPool_t pool = detail::pool_for_device(detail::current_device());
  std::uint64_t reserved = 0, used = 0;
  DEVMAT_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  DEVMAT_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return {static_cast<std::size_t>(reserved), static_cast<std::size_t>(used), detail::cached_bytes()};
}

void trim_pool(std::size_t keep_bytes) {
  detail::require_device();
  detail::flush_cache(nullptr, true);
  DEVMAT_CUDA_TRY(cudaMemPoolTrimTo(detail::pool_for_device(detail::current_device()), keep_bytes));
}

// ------------------------------------------------------------------ pinned host memory
namespace detail {
void* pinned_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  require_device();
  void* p = nullptr;
  const ErrorScope scope;
  const cudaError_t st = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (st != cudaSuccess) {
    scope.forget_ours();  // reported by the exception below
    throw cuda_error(st, "devmat: PinnedBuffer: cannot pin " + bytes_string(bytes) + " of host memory (cudaHostAlloc: " +
                             cudaGetErrorName(st) + ": " + cudaGetErrorString(st) + ")");
  }
  return p;
}

void pinned_free(void* p) noexcept {
  if (!p) return;
  const ErrorScope scope;
  if (cudaFreeHost(p) != cudaSuccess) scope.forget_ours();  // at process exit the driver may be gone
}
}  // namespace detail

// ------------------------------------------------------------------ streams
Stream::Impl::~Impl() {
  if (owning && native) {
    detail::release_cached(native);
    cudaStreamDestroy(native);  // errors at shutdown are not errors
  }
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
  // One stream per (thread, device): a stream belongs to the device that was current when it
  // was made, so a thread that switches devices gets that device's own stream. The common case,
  // the same device as last time, costs one cudaGetDevice (no lock, no cudaSetDevice).
  thread_local std::vector<Stream> streams;  // by device ordinal
  int dev = 0;
  {
    const detail::ErrorScope scope;
    if (cudaGetDevice(&dev) != cudaSuccess) {
      scope.forget_ours();
      detail::require_device();  // no device: says so
      DEVMAT_CUDA_TRY(cudaGetDevice(&dev));
    }
  }
  while (streams.size() <= static_cast<std::size_t>(dev)) streams.push_back(Stream());  // unset until used
  Stream& s = streams[static_cast<std::size_t>(dev)];
  if (!s.is_set()) s = create();
  return s;
}

Stream Stream::wrap(cudaStream_t native) {
  detail::require_device();
  auto impl = std::make_shared<Impl>();
  impl->native = native;
  impl->owning = false;
  // The stream's own device (the current one for the legacy or per-thread default stream).
  DEVMAT_CUDA_TRY(cudaStreamGetDevice(native, &impl->device));
  return Stream(std::move(impl));
}

cudaStream_t Stream::native() const noexcept { return impl_ ? impl_->native : nullptr; }

bool Stream::owning() const noexcept { return impl_ && impl_->owning; }

void Stream::synchronize() const {
  if (impl_) DEVMAT_CUDA_TRY(cudaStreamSynchronize(impl_->native));
}

}  // namespace devmat
