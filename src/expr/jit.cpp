// NVRTC compilation and the on-disk kernel cache (expr/jit.hpp).
#include "expr/jit.hpp"

#include <devmat/error.hpp>

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace devmat::detail {

std::uint64_t fnv1a(const void* data, std::size_t size, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

int expr_verbose() {
  static const int level = [] {
    const char* v = std::getenv("DEVMAT_EXPR_VERBOSE");
    return v && *v ? std::atoi(v) : 0;
  }();
  return level;
}

bool expr_trace() {
  static const bool on = [] {
    const char* v = std::getenv("DEVMAT_EXPR_TRACE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

namespace {

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ull) {
  return detail::fnv1a(s.data(), s.size(), h);
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void throw_nvrtc(nvrtcResult r, const char* call) {
  throw cuda_error(cudaErrorInvalidSource,
                   std::string("devmat: ") + call + " failed: " + nvrtcGetErrorString(r));
}

#define DEVMAT_NVRTC_TRY(call)                                     \
  do {                                                             \
    const nvrtcResult devmat_nvrtc_ = (call);                      \
    if (devmat_nvrtc_ != NVRTC_SUCCESS) throw_nvrtc(devmat_nvrtc_, #call); \
  } while (0)

/// The standard headers the device headers include, each standing in through nvrtc_std.cuh.
constexpr const char* kStdNames[] = {"cstddef", "cstdint", "cstring", "limits", "type_traits", "cuda_runtime.h"};
constexpr const char* kStdText = "#include \"nvrtc_std.cuh\"\n";

/// The headers NVRTC gets (names and texts), built once.
struct Headers {
  std::vector<const char*> names, texts;
  std::uint64_t hash = 0;  // of every name and text: part of every image's identity
  Headers() {
    for (std::size_t i = 0; i < kExprRtSourceCount; ++i) {
      names.push_back(kExprRtSources[i].name);
      texts.push_back(kExprRtSources[i].text);
    }
    for (const char* n : kStdNames) {
      names.push_back(n);
      texts.push_back(kStdText);
    }
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < names.size(); ++i) {
      h = detail::fnv1a(names[i], std::strlen(names[i]) + 1, h);
      h = detail::fnv1a(texts[i], std::strlen(texts[i]) + 1, h);
    }
    hash = h;
  }
};
const Headers& headers() {
  static const Headers h;
  return h;
}

/// NVRTC's options for a target. Not --fmad=false: + - * / and sqrt are IEEE intrinsics in
/// the generated code already (kernels/expr_ops.cuh), and the math library's functions (expf,
/// ...) must be contracted as nvcc's default compiles them. Not --Ofast-compile: measured 20x
/// slower kernels in the prototype.
std::vector<std::string> options(const JitTarget& t) {
  std::vector<std::string> o = {std::string("--gpu-architecture=") + (t.cubin ? "sm_" : "compute_") + std::to_string(t.arch),
                                "--std=c++17", "--device-as-default-execution-space", "--minimal"};
  if (t.cubin) o.push_back("--ptxas-options=-v");  // resource usage into the log (spills, registers)
  return o;
}

std::string program_log(nvrtcProgram prog) {
  std::size_t size = 0;
  std::string log;
  if (nvrtcGetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
    log.resize(size);
    if (nvrtcGetProgramLog(prog, &log[0]) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  return log;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

const std::string& nvrtc_version() {
  static const std::string v = [] {
    int major = 0, minor = 0;
    DEVMAT_NVRTC_TRY(nvrtcVersion(&major, &minor));
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return v;
}

JitTarget jit_target(int device_arch) {
  static const std::vector<int> archs = [] {
    int count = 0;
    DEVMAT_NVRTC_TRY(nvrtcGetNumSupportedArchs(&count));
    std::vector<int> a(static_cast<std::size_t>(count));
    if (count > 0) DEVMAT_NVRTC_TRY(nvrtcGetSupportedArchs(a.data()));
    std::sort(a.begin(), a.end());
    return a;
  }();
  if (std::binary_search(archs.begin(), archs.end(), device_arch)) return {device_arch, true};
  const auto below = std::upper_bound(archs.begin(), archs.end(), device_arch);
  if (below == archs.begin())
    throw cuda_error(cudaErrorUnsupportedPtxVersion,
                     "devmat: NVRTC " + nvrtc_version() + " supports no architecture at or below sm_" +
                         std::to_string(device_arch) + " (the device's): fused expressions cannot be compiled");
  return {*std::prev(below), false};
}

long spill_bytes(const std::string& log) {
  // ptxas -v: "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads" per function.
  long total = -1;
  const std::string tag = " bytes spill stores";
  for (std::size_t pos = log.find(tag); pos != std::string::npos; pos = log.find(tag, pos + 1)) {
    std::size_t start = pos;
    while (start > 0 && log[start - 1] >= '0' && log[start - 1] <= '9') --start;
    if (start == pos) continue;
    total = std::max(total, 0L) + std::atol(log.c_str() + start);
  }
  return total;
}

std::string jit_compile(const std::string& source, const JitTarget& target, const std::string& what, double* ms,
                        std::string* log_out, JitPhases* phases) {
  const Headers& h = headers();
  const double t0 = now_ms();
  nvrtcProgram prog = nullptr;
  DEVMAT_NVRTC_TRY(nvrtcCreateProgram(&prog, source.c_str(), "devmat_expr.cu", static_cast<int>(h.names.size()),
                                      h.texts.data(), h.names.data()));
  struct Destroy {
    nvrtcProgram& p;
    ~Destroy() { nvrtcDestroyProgram(&p); }
  } destroy{prog};
  const std::vector<std::string> opts = options(target);
  std::vector<const char*> copts;
  for (const std::string& o : opts) copts.push_back(o.c_str());
  const double t1 = now_ms();
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(copts.size()), copts.data());
  const double t2 = now_ms();
  const std::string log = program_log(prog);
  if (log_out) *log_out = log;
  if (r != NVRTC_SUCCESS) {
    throw cuda_error(cudaErrorInvalidSource, "devmat: NVRTC " + nvrtc_version() + " failed to compile " + what +
                                                 " (" + nvrtcGetErrorString(r) + "):\n" + log +
                                                 "\n--- generated source ---\n" + source);
  }
  std::size_t size = 0;
  std::string image;
  if (target.cubin) {
    DEVMAT_NVRTC_TRY(nvrtcGetCUBINSize(prog, &size));
    image.resize(size);
    DEVMAT_NVRTC_TRY(nvrtcGetCUBIN(prog, &image[0]));
  } else {
    DEVMAT_NVRTC_TRY(nvrtcGetPTXSize(prog, &size));  // with the terminating NUL
    image.resize(size);
    DEVMAT_NVRTC_TRY(nvrtcGetPTX(prog, &image[0]));
  }
  const double t3 = now_ms();
  if (ms) *ms = t3 - t0;
  if (phases) *phases = JitPhases{t1 - t0, t2 - t1, t3 - t2};
  return image;
}

std::string jit_identity(const std::string& source, const JitTarget& target) {
  std::string id = "devmat expression kernel 1\nnvrtc " + nvrtc_version() + "\nheaders " + hex64(headers().hash) +
                   "\noptions";
  for (const std::string& o : options(target)) id += " " + o;
  id += "\n";
  id += source;
  return id;
}

// ------------------------------------------------------------------ disk cache
namespace {

constexpr char kMagic[8] = {'D', 'M', 'X', 'C', '0', '0', '0', '1'};

/// mkdir -p; true if `dir` exists as a directory afterwards.
bool make_dirs(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  const std::size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  return false;
}

std::string configured_dir() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  const std::string own = env("DEVMAT_CACHE_DIR");
  if (own == "off") return "";
  if (!own.empty()) return own;
  const std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/devmat";
  const std::string home = env("HOME");
  if (!home.empty()) return home + "/.cache/devmat";
  return "";
}

void put_u64(std::string& s, std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
bool get_u64(const std::string& s, std::size_t& pos, std::uint64_t& v) {
  if (s.size() - pos < 8) return false;
  std::memcpy(&v, s.data() + pos, 8);
  pos += 8;
  return true;
}

}  // namespace

DiskCache::DiskCache(const std::string& dir) {
  if (dir.empty() || dir == "off") return;
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (make_dirs(d)) {
    dir_ = d;
  } else if (expr_verbose()) {
    std::fprintf(stderr, "devmat expr: cannot create the kernel cache directory %s; running without a disk cache\n",
                 d.c_str());
  }
}

DiskCache& DiskCache::instance() {
  static DiskCache cache(configured_dir());
  return cache;
}

std::string DiskCache::path_of(const std::string& identity) const {
  return dir_ + "/expr-" + hex64(fnv1a(identity)) + ".bin";
}

bool DiskCache::load(const std::string& identity, std::string& image) const {
  if (!enabled()) return false;
  std::ifstream f(path_of(identity), std::ios::binary);
  if (!f) return false;
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.size() < sizeof(kMagic) || std::memcmp(all.data(), kMagic, sizeof(kMagic)) != 0) return false;
  std::size_t pos = sizeof(kMagic);
  std::uint64_t id_len = 0, img_len = 0, sum = 0;
  if (!get_u64(all, pos, id_len) || all.size() - pos < id_len) return false;
  if (all.compare(pos, id_len, identity) != 0 || id_len != identity.size()) return false;
  pos += id_len;
  if (!get_u64(all, pos, img_len) || all.size() - pos < img_len) return false;
  const std::size_t img_pos = pos;
  pos += img_len;
  if (!get_u64(all, pos, sum) || pos != all.size()) return false;
  if (sum != detail::fnv1a(all.data() + img_pos, img_len)) return false;
  image.assign(all, img_pos, img_len);
  return true;
}

bool DiskCache::store(const std::string& identity, const std::string& image) const {
  if (!enabled()) return false;
  std::string all(kMagic, sizeof(kMagic));
  put_u64(all, identity.size());
  all += identity;
  put_u64(all, image.size());
  all += image;
  put_u64(all, detail::fnv1a(image.data(), image.size()));
  static std::atomic<unsigned> counter{0};
  const std::string path = path_of(identity);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
                          std::to_string(counter.fetch_add(1));
  bool ok = false;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (f) {
      f.write(all.data(), static_cast<std::streamsize>(all.size()));
      f.close();
      ok = static_cast<bool>(f);
    }
  }
  if (ok) ok = std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    std::remove(tmp.c_str());
    if (expr_verbose()) std::fprintf(stderr, "devmat expr: could not write the kernel cache file %s\n", path.c_str());
  }
  return ok;
}

}  // namespace devmat::detail
