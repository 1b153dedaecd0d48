// The execution engine of fused expressions (expr/engine.hpp): picks a kernel variant and a
// grid for a program, finds or builds its kernel (memory, then disk, then NVRTC), fills the
// parameter block and launches it. Kernels are loaded through the runtime API (cudaLibrary_t /
// cudaKernel_t: no per-device modules; a library loads into each device's context on first use)
// and launched by the driver's cuLaunchKernel of the kernel's function in the current context
// (reached through cudaGetDriverEntryPointByVersion: no link to libcuda), which costs the host
// about 0.5 us less than cudaLaunchKernel of the cudaKernel_t; cudaLaunchKernel stays the
// fallback and the error reporter.
#include "expr/engine.hpp"

#include "detail/error_scope.hpp"
#include "detail/runtime.hpp"
#include "detail/thread_cache.hpp"
#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/reduce_parts.hpp"
#include "dispatch/workspace.hpp"
#include "expr/codegen.hpp"
#include "expr/jit.hpp"
#include "expr/plan.hpp"

#include <devmat/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace devmat::detail {
namespace {

const char* kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::elementwise_flat: return "elementwise/flat";
    case KernelKind::elementwise_2d: return "elementwise/2d";
    case KernelKind::reduce_sum: return "sum";
    case KernelKind::reduce_min: return "min";
    case KernelKind::reduce_max: return "max";
    case KernelKind::row_sums: return "row_sums";
    case KernelKind::col_sums: return "col_sums";
    case KernelKind::arg_min: return "arg_min";
    default: return "arg_max";
  }
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ------------------------------------------------------------------ kernels and their cache
struct Compiled {
  cudaKernel_t main = nullptr;
  cudaKernel_t final = nullptr;  // arg min / max only
};

/// One kernel variant of one program: built once, by the first thread that needs it, while
/// others wait on `mu`; read without a lock once `ready`. Never destroyed (nor moved), so a
/// pointer to its kernels stays valid for the life of the process.
struct Slot {
  Slot(const std::string& c, const KernelSpec& s, int a) : code(c), spec(s), arch(a) {}
  const std::string code;  // the program's (Program::code)
  const KernelSpec spec;
  const int arch;
  std::mutex mu;
  std::atomic<bool> ready{false};
  Compiled kernels;
};

std::string spec_string(const KernelSpec& s, int arch) {
  std::string r = kind_name(s.kind);
  if (s.kind == KernelKind::elementwise_2d) r += s.vec ? "-vec" : "";
  else if (s.kind != KernelKind::elementwise_flat && s.kind != KernelKind::row_sums && s.kind != KernelKind::col_sums)
    r += s.flat ? "/flat" : s.vec ? "/2d-vec" : "/2d";
  if (s.min_blocks) r += "/minblocks" + std::to_string(s.min_blocks) + (s.relax_min_blocks ? "-relaxed" : "");
  if (s.outline) r += "/outline";
  if (s.vector) r += "/v" + std::to_string(s.vector);
  if (s.tail) r += "/tail";
  if (s.units) r += "/u" + std::to_string(s.units);
  return r + "/sm_" + std::to_string(arch);
}

/// Logs what the compiler made of a kernel (registers, local memory), when CUDA can tell.
void log_attributes(cudaKernel_t k) {
  const ErrorScope scope;
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(k)) != cudaSuccess) {
    scope.forget_ours();
    return;
  }
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(k), kExprBlock, 0) !=
      cudaSuccess) {
    scope.forget_ours();
    per_sm = -1;
  }
  std::fprintf(stderr, "devmat expr:   %d registers, %zu bytes local, %zu bytes shared, %d blocks of %d per SM\n",
               a.numRegs, a.localSizeBytes, a.sharedSizeBytes, per_sm, kExprBlock);
}

/// The lines of a ptxas -v log that say what a function uses.
void log_usage(const std::string& log) {
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(pos, end - pos);
    if (line.find("registers") != std::string::npos || line.find("spill") != std::string::npos ||
        line.find("Function properties") != std::string::npos)
      std::fprintf(stderr, "devmat expr:   %s\n", line.c_str() + std::min(line.find_first_not_of(' '), line.size()));
    pos = end + 1;
  }
}

/// Where the build of a kernel spent its time (DEVMAT_EXPR_TRACE), in milliseconds.
struct BuildTrace {
  double target = 0;        // jit_target: on the process's first build, NVRTC's first calls
  double codegen = 0;       // generate_source (every attempt) and the image's identity
  double disk_load = 0;     // looking the image up in the disk cache (hit or miss)
  bool disk_hit = false;
  JitPhases nvrtc;          // summed over the attempts
  int compiles = 0;         // NVRTC compilations (more than one: spills relaxed min_blocks)
  bool first_compile = false;  // the process's first NVRTC compilation (its one-time set-up inside)
  double disk_store = 0;
  double module_load = 0;   // cudaLibraryLoadData (every attempt)
  double kernels = 0;       // cudaLibraryGetKernel
};

std::atomic<bool> g_compiled_once{false};  // for BuildTrace::first_compile

void print_trace(const std::string& what, const BuildTrace& t, double total) {
  std::fprintf(stderr,
               "devmat expr trace: %.2f ms for %s: NVRTC setup %.2f, codegen %.2f, disk cache %s %.2f, NVRTC create "
               "%.2f + compile %.2f + image %.2f (%d compilation%s%s), disk cache write %.2f, module load %.2f, "
               "kernels %.2f\n",
               total, what.c_str(), t.target, t.codegen, t.disk_hit ? "hit" : "miss", t.disk_load, t.nvrtc.create,
               t.nvrtc.compile, t.nvrtc.image, t.compiles, t.compiles == 1 ? "" : "s",
               t.first_compile ? ", the process's first" : "", t.disk_store, t.module_load, t.kernels);
}

/// The image of a kernel variant: from the disk cache, or compiled. A reduction asks for
/// min_blocks resident blocks per SM (its fixed grid then runs in one wave, as the unfused
/// one does); where that makes ptxas spill registers, it takes half that, then no bound.
std::string image_of(const Program& p, const KernelSpec& spec, const JitTarget& target, const std::string& what,
                     bool use_disk, bool* from_disk, BuildTrace& trace) {
  const double t0 = now_ms();
  std::vector<int> tries{spec.min_blocks};
  if (spec.relax_min_blocks && spec.min_blocks > 0) {
    if (spec.min_blocks / 2 > 0) tries.push_back(spec.min_blocks / 2);
    tries.push_back(0);
  }
  KernelSpec attempt = spec;
  attempt.min_blocks = static_cast<std::uint8_t>(tries[0]);
  std::string source = generate_source(p, attempt);
  // The first attempt's source names the whole ladder: what it yields is a function of it.
  const std::string identity =
      jit_identity(source, target) + (tries.size() > 1 ? "\nrelaxed on spills" : "");
  const double t_gen = now_ms();
  trace.codegen += t_gen - t0;
  const DiskCache& disk = DiskCache::instance();
  std::string image;
  *from_disk = use_disk && disk.load(identity, image);
  trace.disk_hit = *from_disk;
  trace.disk_load += now_ms() - t_gen;
  if (*from_disk) {
    if (expr_verbose())
      std::fprintf(stderr, "devmat expr: disk cache hit for %s (%s) in %.1f ms\n", what.c_str(),
                   disk.path_of(identity).c_str(), now_ms() - t0);
    return image;
  }
  for (std::size_t t = 0; t < tries.size(); ++t) {
    if (t > 0) {
      const double g0 = now_ms();
      attempt.min_blocks = static_cast<std::uint8_t>(tries[t]);
      source = generate_source(p, attempt);
      trace.codegen += now_ms() - g0;
    }
    double ms = 0;
    std::string log;
    JitPhases phases;
    trace.first_compile = trace.first_compile || !g_compiled_once.exchange(true);
    image = jit_compile(source, target, what, &ms, &log, &phases);
    ++trace.compiles;
    trace.nvrtc.create += phases.create;
    trace.nvrtc.compile += phases.compile;
    trace.nvrtc.image += phases.image;
    const long spills = spill_bytes(log);
    if (expr_verbose()) {
      std::fprintf(stderr, "devmat expr: compiled %s (%s, min blocks %d) in %.1f ms (NVRTC %.1f ms)\n", what.c_str(),
                   target.cubin ? "cubin" : "PTX", tries[t], now_ms() - t0, ms);
      log_usage(log);
    }
    if (spills <= 0) break;
    if (expr_verbose() && t + 1 < tries.size())
      std::fprintf(stderr, "devmat expr:   %ld bytes of spills: again with min blocks %d\n", spills, tries[t + 1]);
  }
  const double t_store = now_ms();
  disk.store(identity, image);
  trace.disk_store += now_ms() - t_store;
  return image;
}

Compiled build(const Program& p, const KernelSpec& spec, int arch) {
  if (p.key.empty()) {  // lowered without its readable key (lower_into): the source and messages name it
    Program keyed = p;
    keyed.key = program_key(p);
    return build(keyed, spec, arch);
  }
  BuildTrace trace;
  const double t0 = now_ms();
  const JitTarget target = jit_target(arch);
  trace.target = now_ms() - t0;
  const std::string what = "the " + spec_string(spec, arch) + " kernel of expression " + p.key;
  cudaLibrary_t lib = nullptr;
  for (bool use_disk = true;; use_disk = false) {
    bool from_disk = false;
    const std::string image = image_of(p, spec, target, what, use_disk, &from_disk, trace);
    const ErrorScope scope;
    const double t_load = now_ms();
    const cudaError_t st = cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    trace.module_load += now_ms() - t_load;
    if (st == cudaSuccess) break;
    scope.forget_ours();
    if (!from_disk)
      throw cuda_error(st, "devmat: loading " + what + " failed: " + cudaGetErrorName(st) + ": " +
                               cudaGetErrorString(st));
    // A cached image the driver refuses: compile it again (the store overwrites the file).
  }
  Compiled c;
  const double t_kernels = now_ms();
  DEVMAT_CUDA_TRY(cudaLibraryGetKernel(&c.main, lib, kExprKernelName));
  if (spec.kind == KernelKind::arg_min || spec.kind == KernelKind::arg_max)
    DEVMAT_CUDA_TRY(cudaLibraryGetKernel(&c.final, lib, kExprFinalKernelName));
  trace.kernels = now_ms() - t_kernels;
  if (expr_trace()) print_trace(what, trace, now_ms() - t0);
  if (expr_verbose()) log_attributes(c.main);
  return c;  // the library stays loaded for the life of the process, as the cache entry does
}

/// The kernels of the programs this thread ran last, by the identity of the kernel (code,
/// spec, device architecture): a hit takes no lock and reads no shared state but the kernels
/// themselves, which never change once built.
class RecentKernels {
 public:
  const Compiled* find(const Program& p, const KernelSpec& spec, int arch) const {
    for (const Entry& e : entries_)
      if (e.kernels && e.hash == p.hash && e.arch == arch && e.spec == spec && e.code == p.code) return e.kernels;
    return nullptr;
  }
  void remember(const Program& p, const KernelSpec& spec, int arch, const Compiled& kernels) {
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % kEntries;
    e.hash = p.hash;
    e.arch = arch;
    e.spec = spec;
    e.code = p.code;  // reuses the entry's memory
    e.kernels = &kernels;
  }

 private:
  static constexpr unsigned kEntries = 8;
  struct Entry {
    std::uint64_t hash = 0;
    int arch = 0;
    KernelSpec spec;
    std::string code;
    const Compiled* kernels = nullptr;
  };
  Entry entries_[kEntries];
  unsigned next_ = 0;
};

/// program code -> its kernel variants, shared by all threads. Each thread looks here only for
/// kernels it has not run recently (RecentKernels): a shared lock, the program's hash (computed
/// once, when it was lowered), a comparison of its code; no allocation.
class KernelCache {
 public:
  static KernelCache& instance() {
    static auto* cache = new KernelCache;  // never destroyed: kernels may run until exit
    return *cache;
  }

  const Compiled& get(const Program& p, const KernelSpec& spec, int arch) {
    RecentKernels* recent = ThreadCache<RecentKernels>::get();  // null at thread exit
    const Compiled* hit = recent ? recent->find(p, spec, arch) : nullptr;
    if (!hit) {
      hit = &get_shared(p, spec, arch);
      if (recent) recent->remember(p, spec, arch, *hit);
    } else if (expr_verbose() >= 2) {
      log_hit(p, spec, arch);
    }
    return *hit;
  }

 private:
  static void log_hit(const Program& p, const KernelSpec& spec, int arch) {
    std::fprintf(stderr, "devmat expr: memory cache hit for the %s kernel of %s\n", spec_string(spec, arch).c_str(),
                 (p.key.empty() ? program_key(p) : p.key).c_str());
  }

  const Compiled& get_shared(const Program& p, const KernelSpec& spec, int arch) {
    Slot* slot = nullptr;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      slot = find_locked(p, spec, arch);
    }
    if (slot && slot->ready.load(std::memory_order_acquire)) {
      if (expr_verbose() >= 2) log_hit(p, spec, arch);
      return slot->kernels;
    }
    if (!slot) {
      std::unique_lock<std::shared_mutex> lock(mu_);
      slot = find_locked(p, spec, arch);
      if (!slot) {
        auto& slots = map_[p.hash];
        slots.push_back(std::make_unique<Slot>(p.code, spec, arch));
        slot = slots.back().get();
      }
    }
    std::lock_guard<std::mutex> build_lock(slot->mu);
    if (!slot->ready.load(std::memory_order_relaxed)) {
      slot->kernels = build(p, spec, arch);  // throws: the slot stays empty, the next call tries again
      slot->ready.store(true, std::memory_order_release);
    }
    return slot->kernels;
  }

  Slot* find_locked(const Program& p, const KernelSpec& spec, int arch) {
    const auto it = map_.find(p.hash);
    if (it == map_.end()) return nullptr;
    for (const auto& s : it->second)
      if (s->arch == arch && s->spec == spec && s->code == p.code) return s.get();
    return nullptr;
  }

  std::shared_mutex mu_;
  std::unordered_map<std::uint64_t, std::vector<std::unique_ptr<Slot>>> map_;  // by Program::hash
};

// ------------------------------------------------------------------ launches
[[noreturn]] void throw_launch(cudaError_t st, dim3 grid, dim3 block) {
  const auto dim = [](dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
  };
  throw cuda_error(st, "devmat: fused expression kernel launch failed (grid " + dim(grid) + ", block " + dim(block) +
                           "): " + cudaGetErrorName(st) + ": " + cudaGetErrorString(st));
}

std::atomic<bool> g_driver_launch{true};  // set_expr_driver_launch

/// The driver's launch entry points, reached through the runtime (cudaGetDriverEntryPointByVersion:
/// no link to libcuda), or null where the runtime does not give them.
struct Driver {
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  using KernelGetFunction = CUresult (*)(CUfunction*, CUkernel);
  using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);
  CtxGetCurrent ctx_get_current = nullptr;
  KernelGetFunction kernel_get_function = nullptr;
  LaunchKernel launch_kernel = nullptr;

  static const Driver& instance() {
    static const Driver d = [] {
      Driver r;
      const ErrorScope scope;
      const auto get = [&](const char* name, auto& fn) {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
          p = nullptr;
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        return p != nullptr;
      };
      if (!(get("cuCtxGetCurrent", r.ctx_get_current) && get("cuKernelGetFunction", r.kernel_get_function) &&
            get("cuLaunchKernel", r.launch_kernel)))
        r = Driver{};
      scope.forget_ours();
      return r;
    }();
    return d;
  }
};

/// The functions of library kernels in the contexts this thread launched them in: what the
/// driver's cuLaunchKernel takes. cudaLaunchKernel of a cudaKernel_t finds that function itself
/// on every launch, and costs the host about 0.5 us more than cuLaunchKernel of it (bench_expr's
/// "launch paths" probe on the H200 host: 3.92 against 3.44 us).
class ContextFunctions {
 public:
  /// The function of `k` in the current context, or null (no current context, no driver entry
  /// points, or the driver could not say): the caller then launches through the runtime.
  CUfunction find(cudaKernel_t k, const Driver& drv) {
    CUcontext ctx = nullptr;
    if (drv.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) return nullptr;
    for (const Entry& e : entries_)
      if (e.kernel == k && e.ctx == ctx) return e.fn;
    CUfunction fn = nullptr;
    if (drv.kernel_get_function(&fn, reinterpret_cast<CUkernel>(k)) != CUDA_SUCCESS) return nullptr;
    entries_[next_] = {k, ctx, fn};
    next_ = (next_ + 1) % kEntries;
    return fn;
  }

 private:
  static constexpr unsigned kEntries = 16;
  struct Entry {
    cudaKernel_t kernel = nullptr;
    CUcontext ctx = nullptr;  // a context's functions live as long as it (devmat never resets a device)
    CUfunction fn = nullptr;
  };
  Entry entries_[kEntries];
  unsigned next_ = 0;
};

void launch(cudaKernel_t k, dim3 grid, dim3 block, void** args, const Stream& stream) {
  // The driver's launch of the kernel's function in the current context (the entry points have
  // made the stream's device current), with the runtime's as the fallback: where the driver's
  // fails, nothing was queued, and the runtime's launch then reports the error as it always has.
  const Driver& drv = Driver::instance();
  if (drv.launch_kernel && g_driver_launch.load(std::memory_order_relaxed)) {
    ContextFunctions* functions = ThreadCache<ContextFunctions>::get();  // null at thread exit
    if (const CUfunction fn = functions ? functions->find(k, drv) : nullptr)
      if (drv.launch_kernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, 0,
                            reinterpret_cast<CUstream>(stream.native()), args, nullptr) == CUDA_SUCCESS)
        return;
  }
  const ErrorScope scope;
  const cudaError_t st = cudaLaunchKernel(reinterpret_cast<const void*>(k), grid, block, args, 0, stream.native());
  if (st != cudaSuccess) {
    scope.forget_ours();
    throw_launch(st, grid, block);
  }
}

/// DEVMAT_EXPR_REDUCE_MINBLOCKS (or set_expr_reduce_min_blocks), or -1 when unset.
std::atomic<int>& minblocks_setting() {
  static std::atomic<int> v{[] {
    const char* e = std::getenv("DEVMAT_EXPR_REDUCE_MINBLOCKS");
    return e && *e ? std::max(0, std::atoi(e)) : -1;
  }()};
  return v;
}
int minblocks_override() { return minblocks_setting().load(std::memory_order_relaxed); }

std::atomic<int> g_small_vector{0};  // set_expr_small_vector
std::atomic<int> g_flat_units{0};    // set_expr_flat_units

template <class F>
decltype(auto) with_type(DType t, F&& f) {
  return visit_dtype(t, std::forward<F>(f));
}

/// Runs a plan: the generated kernel into `out` or into partials, then the second pass.
void execute(const Program& p, Plan& plan, void* out, const Stream& stream, int arch) {
  if (plan.empty) return;
  if (plan.zero_bytes) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0, plan.zero_bytes, stream.native()));
    return;
  }
  const Compiled& k = KernelCache::instance().get(p, plan.spec, arch);
  Workspace partials;
  if (plan.partial_bytes) {
    partials = Workspace(plan.partial_bytes, stream);
    plan.head.out = partials.as<unsigned char>();
    plan.head.out2 = partials.as<unsigned char>() + plan.index_offset;
  } else {
    plan.head.out = out;
  }
  {
    ParamBlock params(p, plan.head);
    void* args[] = {params.data()};
    launch(k.main, dim3(plan.shape.gx, plan.shape.gy), dim3(plan.shape.bx, plan.shape.by), args, stream);
  }
  const void* part = plan.head.out;
  switch (plan.second) {
    case SecondPass::none:
      break;
    case SecondPass::reduce: {
      with_type(p.out_type, [&](auto x) {
        launch_reduce_second_pass<decltype(x)>(plan.op, stream, part, plan.count, out, plan.head.count);
      });
      break;
    }
    case SecondPass::row_chunks:
      with_type(p.out_type, [&](auto x) {
        launch_row_chunk_sums<decltype(x)>(stream, part, plan.count, plan.chunks, out);
      });
      break;
    case SecondPass::col_chunks:
      with_type(p.out_type, [&](auto x) {
        launch_col_chunk_sums<decltype(x)>(stream, part, plan.count, plan.chunks, out);
      });
      break;
    case SecondPass::arg: {
      const void* values = plan.head.out;
      const void* indices = plan.head.out2;
      Index count = plan.count;
      void* args[] = {&values, &indices, &count, &out};
      launch(k.final, 1, kExprBlock, args, stream);
      break;
    }
  }
}

/// The properties of the device that `stream` runs on, the current one: read from the stream when
/// it is set (no cudaGetDevice: the entry points' DeviceGuard has made its device current, and a
/// kernel runs on its stream's device anyway).
const DeviceProps& stream_device_props(const Stream& stream) {
  return Access::is_set(stream) ? cached_device_props(Access::device(stream)) : current_device_props();
}

}  // namespace

void run_elementwise(const Program& p, void* out, Index ld_out, const Stream& stream) {
  const DeviceProps& props = stream_device_props(stream);
  Plan plan = plan_elementwise(p, out, ld_out, props.sm_count, g_small_vector.load(std::memory_order_relaxed),
                               g_flat_units.load(std::memory_order_relaxed));
  execute(p, plan, out, stream, props.arch());
}

void run_reduce(const Program& p, ReduceKind kind, void* out, const Stream& stream) {
  const DeviceProps& props = stream_device_props(stream);
  const int sms = props.sm_count;
  Plan plan;
  if (kind == ReduceKind::row_sums) {
    plan = plan_row_sums(p, sms);
  } else if (kind == ReduceKind::col_sums) {
    plan = plan_col_sums(p, sms);
  } else {
    const ReduceOp op = kind == ReduceKind::sum   ? ReduceOp::sum
                        : kind == ReduceKind::min ? ReduceOp::min
                        : kind == ReduceKind::max ? ReduceOp::max
                                                  : ReduceOp::mean;
    const long long cap = with_type(p.out_type, [&](auto x) { return reduce_first_pass_cap<decltype(x)>(op); });
    // Every block of the grid (the unfused one's) resident at once, as the unfused kernel's are.
    const int setting = minblocks_override();
    const int min_blocks = setting >= 0 ? setting : static_cast<int>(cap / std::max(sms, 1));
    plan = plan_reduce(p, op, cap, min_blocks);
    plan.spec.relax_min_blocks = setting < 0;
  }
  execute(p, plan, out, stream, props.arch());
}

void set_expr_reduce_min_blocks(int n) { minblocks_setting().store(n < 0 ? -1 : n); }

void set_expr_small_vector(int elements) { g_small_vector.store(std::max(elements, 0)); }

void set_expr_flat_units(int units) { g_flat_units.store(std::clamp(units, 0, 8)); }

bool set_expr_driver_launch(bool on) {
  g_driver_launch.store(on);
  return on && Driver::instance().launch_kernel != nullptr;
}

void run_arg_reduce(const Program& p, bool max, void* out, const Stream& stream) {
  const DeviceProps& props = stream_device_props(stream);
  Plan plan = plan_arg(p, max, props.sm_count);
  if (plan.empty) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0xFF, sizeof(long long), stream.native()));  // -1
    return;
  }
  execute(p, plan, out, stream, props.arch());
}

}  // namespace devmat::detail
