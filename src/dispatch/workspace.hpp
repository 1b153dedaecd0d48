// Scratch memory for one operation's kernels: a block of devmat's pool, allocated and freed
// stream-ordered on the operation's stream (so it is reused by later work only after the
// kernels queued before the free). Plain C++.
#pragma once

#include "detail/runtime.hpp"

#include <cstddef>

namespace devmat::detail {

class Workspace {
 public:
  Workspace() noexcept : stream_(Access::unset()) {}
  /// `count` elements of T on `stream` (none for count 0); throws out_of_memory.
  template <class T>
  static Workspace of(std::size_t count, const Stream& stream) {
    return Workspace(count * sizeof(T), stream);
  }
  Workspace(std::size_t bytes, const Stream& stream);
  ~Workspace();
  Workspace(Workspace&& other) noexcept;
  Workspace& operator=(Workspace&& other) noexcept;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(ptr_);
  }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  Stream stream_;
};

}  // namespace devmat::detail
