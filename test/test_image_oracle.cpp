// The OpenCV oracle itself (support/opencv.hpp): matrices go to cv::Mat and back unchanged, with
// one or three interleaved channels, and the library linked is the one the tests were built
// against. A host test: it runs in CI, and on the GPU machine it shows first whether a carried
// OpenCV (scripts/pack-opencv-carry) links and loads.
#include "support/opencv.hpp"

using namespace devmat;
using namespace devmat::test;

DEVMAT_OPENCV_MISSING_CASE("[image][oracle]")

#if DEVMAT_TEST_HAVE_OPENCV
TEST_CASE("OpenCV oracle: matrices round-trip through cv::Mat", "[image][oracle]") {
  INFO("OpenCV " << cv::getVersionString());
  CHECK(cv::getVersionMajor() == CV_VERSION_MAJOR);
  for (auto [r, c] : {std::pair<Index, Index>{1, 1}, {1, 7}, {7, 1}, {13, 17}}) {
    CAPTURE(r, c);
    const auto gray = random_matrix<std::uint8_t>(r, c, 0, 255);
    const cv::Mat m = to_cv(gray);
    CHECK(m.rows == r);
    CHECK(m.cols == c);
    CHECK(from_cv<std::uint8_t>(m) == gray);
    const auto rgb = random_matrix<std::uint8_t>(r, 3 * c, 0, 255);
    const cv::Mat m3 = to_cv(rgb, 3);
    CHECK(m3.channels() == 3);
    CHECK(m3.cols == c);
    CHECK(m3.at<cv::Vec3b>(0, 0)[2] == rgb(0, 2));
    CHECK(from_cv<std::uint8_t>(m3) == rgb);
    const auto f = random_matrix<float>(r, c);
    CHECK(from_cv<float>(to_cv(f)) == f);
  }
}
#endif
