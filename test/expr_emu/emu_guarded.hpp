// Host memory that ends on the last byte before an inaccessible page, for the emulation tests
// of kernels that must never read or write past a matrix (a read or write one byte past it
// faults). Include after the test framework (it REQUIREs its system calls).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace emu {

/// `bytes` bytes that end on the last byte before an inaccessible page (unmapped on destruction).
class GuardedBytes {
 public:
  explicit GuardedBytes(std::size_t bytes) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    pages_ = (bytes + page_ - 1) / page_ + 1;
    map_ = static_cast<unsigned char*>(mmap(nullptr, pages_ * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(map_ != MAP_FAILED);
    REQUIRE(mprotect(map_ + (pages_ - 1) * page_, page_, PROT_NONE) == 0);
    data_ = map_ + (pages_ - 1) * page_ - bytes;
  }
  ~GuardedBytes() { munmap(map_, pages_ * page_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  unsigned char* data() const { return data_; }
  unsigned char* map_begin() const { return map_; }
  unsigned char* map_end() const { return map_ + pages_ * page_; }

 private:
  std::size_t page_ = 0, pages_ = 0;
  unsigned char* map_ = nullptr;
  unsigned char* data_ = nullptr;
};

/// While alive, __ldg aborts on a load that touches `buf`'s mapping outside its first `bytes`
/// bytes (from its first byte rounded down to 16, as an allocation starts aligned): with a few
/// bytes of `buf` left past them, a word read that runs past a matrix's last byte fails even
/// where the page guard cannot see it (inside the word that holds that byte).
class ExactReads {
 public:
  ExactReads(const GuardedBytes& buf, std::size_t bytes) {
    const auto lo = reinterpret_cast<std::uintptr_t>(buf.data()) & ~std::uintptr_t(15);
    g_exact_lo = reinterpret_cast<const unsigned char*>(lo);
    g_exact_hi = buf.data() + bytes;
    g_map_lo = buf.map_begin();
    g_map_hi = buf.map_end();
  }
  ~ExactReads() { g_exact_lo = g_exact_hi = g_map_lo = g_map_hi = nullptr; }
  ExactReads(const ExactReads&) = delete;
  ExactReads& operator=(const ExactReads&) = delete;
};

}  // namespace emu
