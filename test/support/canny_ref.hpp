// Canny's definition in plain C++ (OpenCV's cv::Canny with its defaults: 3x3 Sobel with
// replicated borders, L1 magnitude, OpenCV's four-sector suppression with tan 22.5 in Q15,
// floor()ed thresholds, 8-connected hysteresis by a search from the strong pixels), and images
// whose edges are long chains across many tiles: serpentines and spirals of weak edges with one
// strong end. Shared by test_image_canny (GPU) and test_image_canny_emulation (host).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace devmat::test {

/// The edges (0 / 255, dense rows x cols) of the rows x cols image at img (row stride ld).
inline std::vector<std::uint8_t> canny_reference(const std::uint8_t* img, long long rows, long long cols, long long ld,
                                                 double low_t, double high_t) {
  using I = long long;
  const I r = rows, c = cols;
  const int low = static_cast<int>(std::floor(low_t)), high = static_cast<int>(std::floor(high_t));
  auto px = [&](I y, I x) { return static_cast<int>(img[std::clamp<I>(y, 0, r - 1) * ld + std::clamp<I>(x, 0, c - 1)]); };
  std::vector<int> dx(static_cast<std::size_t>(r * c)), dy(dx.size()), mag(dx.size());
  for (I y = 0; y < r; ++y)
    for (I x = 0; x < c; ++x) {
      const I e = y * c + x;
      dx[e] = (px(y - 1, x + 1) + 2 * px(y, x + 1) + px(y + 1, x + 1)) - (px(y - 1, x - 1) + 2 * px(y, x - 1) + px(y + 1, x - 1));
      dy[e] = (px(y + 1, x - 1) + 2 * px(y + 1, x) + px(y + 1, x + 1)) - (px(y - 1, x - 1) + 2 * px(y - 1, x) + px(y - 1, x + 1));
      mag[e] = std::abs(dx[e]) + std::abs(dy[e]);
    }
  auto m_at = [&](I y, I x) { return y < 0 || y >= r || x < 0 || x >= c ? 0 : mag[y * c + x]; };
  std::vector<std::uint8_t> state(dx.size(), 0);  // 0 none, 1 weak, 2 strong
  std::vector<I> queue;
  for (I y = 0; y < r; ++y)
    for (I x = 0; x < c; ++x) {
      const I e = y * c + x;
      const int m = mag[e];
      if (m <= low) continue;
      const long long ax = std::abs(dx[e]), ay = static_cast<long long>(std::abs(dy[e])) << 15;
      const long long tg22x = ax * 13573, tg67x = tg22x + (ax << 16);
      bool peak;
      if (ay < tg22x) peak = m > m_at(y, x - 1) && m >= m_at(y, x + 1);
      else if (ay > tg67x) peak = m > m_at(y - 1, x) && m >= m_at(y + 1, x);
      else {
        const int s = (dx[e] ^ dy[e]) < 0 ? -1 : 1;
        peak = m > m_at(y - 1, x - s) && m > m_at(y + 1, x + s);
      }
      if (!peak) continue;
      state[e] = m > high ? 2 : 1;
      if (state[e] == 2) queue.push_back(e);
    }
  while (!queue.empty()) {
    const I e = queue.back();
    queue.pop_back();
    const I y = e / c, x = e % c;
    for (I i = y - 1; i <= y + 1; ++i)
      for (I j = x - 1; j <= x + 1; ++j)
        if (i >= 0 && i < r && j >= 0 && j < c && state[i * c + j] == 1) {
          state[i * c + j] = 2;
          queue.push_back(i * c + j);
        }
  }
  std::vector<std::uint8_t> out(state.size());
  for (std::size_t e = 0; e < out.size(); ++e) out[e] = state[e] == 2 ? 255 : 0;
  return out;
}

/// A rows x cols image (dense) of level 100 with a one-pixel path of level 110 through it and a
/// 3x3 patch of 220 at the path's start: with thresholds (20, 100) the path's edges are weak
/// (a step of 10: magnitudes about 40) and only the patch's are strong, so every edge pixel is
/// joined to the patch along the path, across many tiles. spiral false: a serpentine, rows
/// `spacing` apart, turning at alternate ends; true: a square spiral inwards, `spacing` apart.
inline std::vector<std::uint8_t> snake_image(long long rows, long long cols, int spacing, bool spiral) {
  using I = long long;
  std::vector<std::uint8_t> img(static_cast<std::size_t>(rows * cols), 100);
  const auto set = [&](I y, I x, std::uint8_t v) {
    if (y >= 0 && y < rows && x >= 0 && x < cols) img[y * cols + x] = v;
  };
  if (!spiral) {
    for (I y = 1, k = 0; y < rows - 1; y += spacing, ++k) {
      for (I x = 1; x < cols - 1; ++x) set(y, x, 110);
      const I turn = k % 2 ? 1 : cols - 2;  // to the next row at this end
      for (I i = y; i < std::min(rows - 1, y + spacing); ++i) set(i, turn, 110);
    }
  } else {
    I top = 1, left = 1, bottom = rows - 2, right = cols - 2;
    while (top <= bottom && left <= right) {
      for (I x = left; x <= right; ++x) set(top, x, 110);
      for (I y = top; y <= bottom; ++y) set(y, right, 110);
      for (I x = right; x >= left && bottom > top; --x) set(bottom, x, 110);
      for (I y = bottom; y >= top + spacing && right > left; --y) set(y, left, 110);
      if (right - left > spacing) set(top + spacing, left + 1, 110);  // step in to the next turn
      top += spacing;
      left += spacing;
      bottom -= spacing;
      right -= spacing;
    }
  }
  for (I y = 0; y < 3; ++y)
    for (I x = 0; x < 3; ++x) set(y, x, 220);
  return img;
}

}  // namespace devmat::test
