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

 private:
  std::size_t page_ = 0, pages_ = 0;
  unsigned char* map_ = nullptr;
  unsigned char* data_ = nullptr;
};

}  // namespace emu
