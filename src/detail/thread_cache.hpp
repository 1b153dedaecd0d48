// Per-thread scratch objects that survive the end of their thread's other thread_local objects.
// Plain C++.
#pragma once

namespace devmat::detail {

/// One T per thread, made on first use and deleted when the thread ends. get() returns null
/// once it is gone: in the destructors of static or thread_local objects that run after it
/// (an expression evaluated at exit), and the caller then does without it. The state read on
/// every call is trivially destructible, so reading it stays valid until the thread is gone.
template <class T>
class ThreadCache {
 public:
  static T* get() {
    State& s = state_;
    if (!s.object && !s.closed) {
      static thread_local Owner owner;  // its destructor deletes the object
      (void)owner;
      s.object = new T();
    }
    return s.object;
  }

 private:
  struct State {
    T* object;
    bool closed;
  };
  struct Owner {
    ~Owner() {
      State& s = state_;
      delete s.object;
      s.object = nullptr;
      s.closed = true;
    }
  };
  // initial-exec: a %fs-relative load, not a __tls_get_addr call per get() (libdevmat is a shared
  // library; the default model calls it). 16 bytes of static TLS per T (four Ts, all in expr/),
  // like the node free list's (expr/build.cpp).
  [[gnu::tls_model("initial-exec")]] static thread_local State state_;
};

template <class T>
[[gnu::tls_model("initial-exec")]] thread_local typename ThreadCache<T>::State ThreadCache<T>::state_{};

}  // namespace devmat::detail
