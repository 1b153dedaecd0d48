// Whether two windows of device memory share an element. Plain C++ (host code, unit-tested
// without a GPU in test/test_view_overlap.cpp).
#pragma once

#include <devmat/matrix_view.hpp>

#include <cstddef>
#include <cstdint>

namespace devmat::detail {

/// A window of memory as the overlap test sees it: the address of its first element, its
/// shape and row stride in elements, and the element size in bytes.
struct Window {
  std::uintptr_t first;
  Index rows, cols, stride;
  std::size_t elem;
};

template <class T>
Window window_of(const MatrixView<const T>& v) {
  return {reinterpret_cast<std::uintptr_t>(v.data()), v.rows(), v.cols(), v.stride(), sizeof(T)};
}

/// True when windows `a` and `b` share at least one byte: exact for two windows with one row
/// stride and element size (two views of one matrix), conservative (address ranges) otherwise.
inline bool windows_overlap(const Window& a, const Window& b) {
  if (a.rows <= 0 || a.cols <= 0 || b.rows <= 0 || b.cols <= 0) return false;
  const auto end = [](const Window& w) {
    return w.first + static_cast<std::uintptr_t>(((w.rows - 1) * w.stride + w.cols) * static_cast<Index>(w.elem));
  };
  if (end(a) <= b.first || end(b) <= a.first) return false;  // disjoint address ranges
  if (a.stride != b.stride || a.elem != b.elem) return true;
  const std::intptr_t bytes = static_cast<std::intptr_t>(b.first) - static_cast<std::intptr_t>(a.first);
  if (bytes % static_cast<std::intptr_t>(a.elem) != 0) return true;
  // One row stride: b's window starts at (dr, dc) from a's first element.
  const Index ld = a.stride, off = static_cast<Index>(bytes / static_cast<std::intptr_t>(a.elem));
  Index dr = off / ld, dc = off % ld;
  if (dc < 0) dc += ld, dr -= 1;
  if (dc + b.cols > ld) return true;  // b's rows wrap around a's: be safe
  return dr < a.rows && dr + b.rows > 0 && dc < a.cols && dc + b.cols > 0;
}

template <class T>
bool windows_overlap(const MatrixView<const T>& a, const MatrixView<const T>& b) {
  return windows_overlap(window_of(a), window_of(b));
}

/// True when `a` and `b` are the very same window (element-wise work reads and writes it in place).
inline bool same_window(const Window& a, const Window& b) {
  return a.first == b.first && a.stride == b.stride && a.rows == b.rows && a.cols == b.cols && a.elem == b.elem;
}

template <class T>
bool same_window(const MatrixView<const T>& a, const MatrixView<const T>& b) {
  return same_window(window_of(a), window_of(b));
}

/// Whether writing `dst` while reading `src` could read an element already written: they share
/// memory and are not the very same window (which element-wise work handles in place).
inline bool overlap_differs(const Window& dst, const Window& src) {
  return !same_window(dst, src) && windows_overlap(dst, src);
}

template <class T>
bool overlap_differs(const MatrixView<const T>& dst, const MatrixView<const T>& src) {
  return overlap_differs(window_of(dst), window_of(src));
}

}  // namespace devmat::detail
