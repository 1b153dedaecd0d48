// The segment rule of the streaming erode/dilate kernels (launch_morph_stream): how many output
// rows a block streams. Plain C++, so the host tests check it.
#pragma once

#include <algorithm>
#include <cstddef>

#include "dispatch/common.hpp"

namespace devmat {
using Index = std::ptrdiff_t;  // <devmat/error.hpp>'s alias again: that header needs the CUDA runtime
}  // namespace devmat

namespace devmat::detail {

/// Output rows a block of the streaming kernels (morph_stream_kernel and the doubling one) for an
/// image of `rows` cut into `strips` strips, `per_sm` blocks resident an SM on `sms` SMs: of the
/// segment lengths that keep the grid in one wave (at most per_sm sms blocks; each at least max(16,
/// kr) rows and whole column blocks of kr rows, as a block completes kr output rows at a time; at
/// most 2^30, an int), the one whose busiest SM loads the fewest rows: ceil(blocks / sms) blocks,
/// each its segment and the kr rows above it. The stream runs one wave at a few blocks an SM, so
/// its time follows the busiest SM's bytes, not the total (float erode 4096^2 on the H100 without
/// the prefetch, session 28: 0.096 to 0.106 us a KB the busiest SM loads, 15 to 31 rows; 17 rows
/// took more time than 21 while loading less in all). The rule before this one filled every
/// resident slot and rounded the segment up: at 17 rows (4 blocks an SM, 18 strips) 27 segments of
/// 153 rows, 486 blocks, 90 SMs with 4 and 680 rows for the busiest; this one takes 22 of 187, 396
/// blocks, 3 an SM, 612 rows. At least two blocks an SM where the image has that many, and fewer
/// segments only for a load 5% lower than the best with more (more blocks in flight hide more
/// latency, which the load count does not see: float 5x5 would go from 5 blocks an SM to 3 for 3.5%
/// fewer rows).
inline int morph_stream_segment(Index rows, long long strips, int per_sm, int sms, int kr) {
  const long long k = kr, n_rows = rows, at_least = std::max(16, kr), cap = (1LL << 30) / k * k;
  const long long sm = std::max(1, sms), strip_count = std::max<long long>(1, strips);
  const long long most = std::max<long long>(1, static_cast<long long>(std::max(1, per_sm)) * sm / strip_count);
  const auto seg_of = [&](long long n) {  // n segments a strip at most
    return std::min(cap, round_up(std::max(at_least, ceil_div(n_rows, n)), k));
  };
  const auto blocks_of = [&](long long seg) { return strip_count * ceil_div(n_rows, seg); };
  const long long top = std::min<long long>(most, std::max<long long>(1, n_rows));
  // Two blocks an SM at the least where the image has them: one alone leaves its SM idle while
  // its loads are in flight (the stream is latency-bound), which the load count does not see.
  const long long floor_blocks = std::min(2 * sm, blocks_of(seg_of(top)));
  long long best = 0, best_load = 0;
  for (long long n = top; n >= 1; --n) {
    const long long seg = seg_of(n), blocks = blocks_of(seg);
    if (blocks < floor_blocks) break;                          // fewer segments only fewer blocks
    const long long load = ceil_div(blocks, sm) * (seg + k);  // rows the busiest SM loads
    if (best == 0 || 20 * load < 19 * best_load) best = seg, best_load = load;
  }
  return static_cast<int>(best);
}

}  // namespace devmat::detail
