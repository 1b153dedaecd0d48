// Whether two windows of device memory share an element. Plain C++ (host code).
#pragma once

#include <devmat/matrix_view.hpp>

#include <cstdint>

namespace devmat::detail {

/// True when windows `a` and `b` share at least one element: exact for two windows with one row
/// stride (the case of two views of one matrix), conservative (address ranges) otherwise.
template <class T>
bool windows_overlap(const MatrixView<const T>& a, const MatrixView<const T>& b) {
  if (a.empty() || b.empty()) return false;
  const auto first = [](const MatrixView<const T>& v) { return reinterpret_cast<std::uintptr_t>(v.data()); };
  const auto end = [&](const MatrixView<const T>& v) {
    return first(v) + static_cast<std::uintptr_t>(((v.rows() - 1) * v.stride() + v.cols()) * sizeof(T));
  };
  if (end(a) <= first(b) || end(b) <= first(a)) return false;  // disjoint address ranges
  if (a.stride() != b.stride()) return true;
  const std::intptr_t bytes = static_cast<std::intptr_t>(first(b)) - static_cast<std::intptr_t>(first(a));
  if (bytes % static_cast<std::intptr_t>(sizeof(T)) != 0) return true;
  // One row stride: b's window starts at (dr, dc) from a's first element.
  const Index ld = a.stride(), off = static_cast<Index>(bytes / static_cast<std::intptr_t>(sizeof(T)));
  Index dr = off / ld, dc = off % ld;
  if (dc < 0) dc += ld, dr -= 1;
  if (dc + b.cols() > ld) return true;  // b's rows wrap around a's: be safe
  return dr < a.rows() && dr + b.rows() > 0 && dc < a.cols() && dc + b.cols() > 0;
}

/// True when `a` and `b` are the very same window (element-wise work reads and writes it in place).
template <class T>
bool same_window(const MatrixView<const T>& a, const MatrixView<const T>& b) {
  return a.data() == b.data() && a.stride() == b.stride() && a.rows() == b.rows() && a.cols() == b.cols();
}

}  // namespace devmat::detail
