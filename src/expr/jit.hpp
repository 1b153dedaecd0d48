// Compiling generated kernel sources with NVRTC, and the on-disk cache of the results. Plain
// C++; needs no GPU (the host tests compile every kind of generated kernel here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace devmat::detail {

/// One device header text that generated code may #include, embedded at build time
/// (CMakeLists.txt: cmake/embed_text.cmake writes the table).
struct RtSource {
  const char* name;
  const char* text;
};
extern const RtSource kExprRtSources[];
extern const std::size_t kExprRtSourceCount;

/// What NVRTC produces for a device: a cubin for sm_<arch>, or PTX for compute_<arch> (which the
/// driver compiles at load) when this NVRTC does not know the device's architecture.
struct JitTarget {
  int arch = 0;       // 90 for sm_90
  bool cubin = true;
};

/// The target for a device of compute capability `device_arch` (major * 10 + minor): its own
/// sm_ cubin if NVRTC supports it, else PTX for the newest architecture NVRTC supports below
/// it. Throws cuda_error if NVRTC supports none.
JitTarget jit_target(int device_arch);

/// NVRTC's version as "13.0".
const std::string& nvrtc_version();

/// Where a jit_compile's time went, in milliseconds: nvrtcCreateProgram, nvrtcCompileProgram
/// (front end, NVVM and, for a cubin, ptxas), fetching the image and the log.
struct JitPhases {
  double create = 0, compile = 0, image = 0;
};

/// Compiles `source` for `target`; returns the cubin or PTX (with its terminating NUL). On a
/// compilation error, throws cuda_error (cudaErrorInvalidSource) whose message holds `what`,
/// NVRTC's log and the source. `ms`, when given, receives the compile time; `log`, NVRTC's log,
/// which for a cubin holds ptxas's resource usage (registers, spills) of every function;
/// `phases`, the time of each step.
std::string jit_compile(const std::string& source, const JitTarget& target, const std::string& what,
                        double* ms = nullptr, std::string* log = nullptr, JitPhases* phases = nullptr);

/// Bytes of register spill stores that ptxas reports in a jit_compile log (-1 when the log has
/// no resource usage, as for PTX).
long spill_bytes(const std::string& log);

/// Everything an image depends on, for the disk cache: the source, the header texts (a
/// hash), NVRTC's version and options, the target.
std::string jit_identity(const std::string& source, const JitTarget& target);

/// The on-disk cache of compiled images: $DEVMAT_CACHE_DIR, else $XDG_CACHE_HOME/devmat, else
/// ~/.cache/devmat; DEVMAT_CACHE_DIR=off disables it, and so does a directory that cannot be
/// created. One file per image, named by a hash of its identity and holding the identity
/// itself (a hash collision is a miss) and a checksum; written to a temporary file and
/// renamed, so a reader never sees half a file; an unreadable or corrupt file is a miss (and is
/// overwritten). Thread-safe.
class DiskCache {
 public:
  /// The process's cache, configured from the environment on first use.
  static DiskCache& instance();
  /// A cache in `dir` ("" or "off": disabled); for tests.
  explicit DiskCache(const std::string& dir);

  bool enabled() const noexcept { return !dir_.empty(); }
  const std::string& dir() const noexcept { return dir_; }
  /// The file that holds (or would hold) the image of `identity`.
  std::string path_of(const std::string& identity) const;
  /// The image stored for `identity`, if a valid file holds it.
  bool load(const std::string& identity, std::string& image) const;
  /// Stores the image (best effort: a failure only means the next process compiles again).
  bool store(const std::string& identity, const std::string& image) const;

 private:
  std::string dir_;
};

/// DEVMAT_EXPR_VERBOSE: 0 (unset), 1 (compilations and disk-cache hits, to stderr), 2 (also
/// every in-memory cache hit).
int expr_verbose();

/// DEVMAT_EXPR_TRACE set (and not 0): every kernel the engine builds prints, to stderr, where
/// its time went (code generation, disk cache, NVRTC's steps, module load).
bool expr_trace();

/// 64-bit FNV-1a.
std::uint64_t fnv1a(const void* data, std::size_t size, std::uint64_t h = 1469598103934665603ull);

}  // namespace devmat::detail
