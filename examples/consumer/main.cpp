// A plain C++ program using devmat: g++ compiles it, libdevmat runs the kernels.
// Exits 77 (skipped, for ctest) when there is no CUDA device.
#include <devmat/devmat.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  try {
    const int n = 1000;
    std::vector<float> a(n * n), b(n * n);
    for (int i = 0; i < n * n; ++i) {
      a[i] = 0.001f * (i % 997);
      b[i] = 1.0f - 0.002f * (i % 499);
    }
    auto A = devmat::DeviceMatrix<float>::from_vector(a, n, n);
    auto B = devmat::DeviceMatrix<float>::from_vector(b, n, n);
    devmat::DeviceMatrix<float> C = 2.0f * A + B - 1.0f;  // runs on A's stream
    std::vector<float> c = C.to_vector();                 // waits for the result
    double max_err = 0;
    for (int i = 0; i < n * n; ++i) max_err = std::fmax(max_err, std::fabs(c[i] - (2 * a[i] + b[i] - 1)));
    std::printf("consumer: %dx%d, 2A + B - 1, max error %.3g\n", n, n, max_err);
    return max_err < 1e-5 ? 0 : 1;
  } catch (const devmat::cuda_error& e) {
    if (e.code() == cudaErrorNoDevice || e.code() == cudaErrorInsufficientDriver) {
      std::printf("consumer: skipped: %s\n", e.what());
      return 77;
    }
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
