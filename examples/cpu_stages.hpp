// The CPU (Eigen) versions of devmat's image stages, with the same borders (replicated) and
// Gaussian weights: what image_pipeline and bench_filter compare the GPU against.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <vector>

namespace cpu_stages {

using Index = Eigen::Index;
using HostF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The image with ry rows and rx columns replicated on each side.
inline HostF pad_replicate(const HostF& img, Index ry, Index rx) {
  const Index r = img.rows(), c = img.cols();
  HostF p(r + 2 * ry, c + 2 * rx);
  for (Index i = 0; i < p.rows(); ++i) {
    const auto src = img.row(std::clamp<Index>(i - ry, 0, r - 1));
    p.row(i).segment(rx, c) = src;
    p.row(i).head(rx).setConstant(src(0));
    p.row(i).tail(rx).setConstant(src(c - 1));
  }
  return p;
}

/// 2D correlation, row by row so the working set stays in cache.
inline HostF filter2d(const HostF& img, const HostF& k) {
  const Index r = img.rows(), c = img.cols();
  const HostF p = pad_replicate(img, k.rows() / 2, k.cols() / 2);
  HostF out = HostF::Zero(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index i = 0; i < k.rows(); ++i)
      for (Index j = 0; j < k.cols(); ++j) out.row(y) += k(i, j) * p.row(y + i).segment(j, c);
  return out;
}

/// Normalised Gaussian weights of radius ceil(3 sigma), computed in double.
inline std::vector<float> gaussian_weights(float sigma) {
  const int radius = static_cast<int>(std::ceil(3.0 * sigma));
  std::vector<double> w(2 * radius + 1);
  double sum = 0;
  for (int d = -radius; d <= radius; ++d) sum += w[d + radius] = std::exp(-0.5 * d * d / (double(sigma) * sigma));
  std::vector<float> out;
  for (double x : w) out.push_back(static_cast<float>(x / sum));
  return out;
}

/// Separable Gaussian: the row pass on a padded copy, then the column pass with clamped rows.
inline HostF gaussian_blur(const HostF& img, float sigma) {
  const std::vector<float> w = gaussian_weights(sigma);
  const Index radius = static_cast<Index>(w.size() / 2), r = img.rows(), c = img.cols();
  const HostF p = pad_replicate(img, 0, radius);
  HostF tmp = HostF::Zero(r, c), out = HostF::Zero(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index k = 0; k <= 2 * radius; ++k) tmp.row(y) += w[k] * p.row(y).segment(k, c);
  for (Index y = 0; y < r; ++y)
    for (Index k = 0; k <= 2 * radius; ++k) out.row(y) += w[k] * tmp.row(std::clamp<Index>(y + k - radius, 0, r - 1));
  return out;
}

/// Gradient magnitude of the 3x3 Sobel derivatives, borders replicated.
inline HostF sobel(const HostF& img) {
  const Index r = img.rows(), c = img.cols();
  const HostF p = pad_replicate(img, 0, 1);
  HostF out(r, c);
  for (Index y = 0; y < r; ++y) {
    const auto up = p.row(std::max<Index>(y - 1, 0)).array(), mid = p.row(y).array(),
               dn = p.row(std::min(y + 1, r - 1)).array();
    const Eigen::ArrayXf gx = (up.segment(2, c) + 2 * mid.segment(2, c) + dn.segment(2, c)) -
                              (up.segment(0, c) + 2 * mid.segment(0, c) + dn.segment(0, c));
    const Eigen::ArrayXf gy = (dn.segment(0, c) + 2 * dn.segment(1, c) + dn.segment(2, c)) -
                              (up.segment(0, c) + 2 * up.segment(1, c) + up.segment(2, c));
    out.row(y) = (gx.square() + gy.square()).sqrt().matrix().transpose();
  }
  return out;
}

}  // namespace cpu_stages
