// Must not compile: random_uniform and random_normal are for float and double only. ctest
// (test/CMakeLists.txt) passes when the compiler rejects this with the static_assert's message,
// DEVMAT_GENERATOR naming the generator and DEVMAT_ELEMENT the integer element type.
#include <devmat/device_matrix.hpp>

#include <cstdint>

devmat::DeviceMatrix<DEVMAT_ELEMENT> m = devmat::DeviceMatrix<DEVMAT_ELEMENT>::DEVMAT_GENERATOR(2, 2, 0, 1, 42);
