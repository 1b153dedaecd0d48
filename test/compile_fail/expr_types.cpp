// Expressions that must not compile (test/CMakeLists.txt checks the compiler's message):
// DEVMAT_CASE 1 mixes element types; 2 takes sqrt of an integer matrix.
#include <devmat/devmat.hpp>

#include <cstdint>

int main() {
  devmat::DeviceMatrix<float> a;
  devmat::DeviceMatrix<double> b;
  devmat::DeviceMatrix<std::int32_t> i;
#if DEVMAT_CASE == 1
  auto e = a + b;
#else
  auto e = sqrt(i);
#endif
  (void)e;
  (void)a;
  (void)b;
  (void)i;
  return 0;
}
