// TMA descriptors (CUtensorMap) of 2-D row-major arrays, for the kernels that copy tiles through
// the TMA (the wgmma GEMM, the TMA transpose). Host code; the driver's encoder is reached
// through the runtime's driver entry point, so nothing links libcuda.
#pragma once

#include <cuda.h>

namespace devmat::detail {

/// A 2-D tensor map: dim0 (innermost, contiguous) x dim1 elements of `type` at `base` (16-byte
/// aligned), rows stride1 bytes apart (a multiple of 16), boxes of box0 x box1, elements outside
/// the extent read as zeros and never written. `what` names the caller in the errors: a
/// std::runtime_error where the driver has no encoder or the encoder refuses the parameters.
void encode_tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, const void* base, cuuint64_t dim0,
                          cuuint64_t dim1, cuuint64_t stride1, cuuint32_t box0, cuuint32_t box1,
                          CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, const char* what);

}  // namespace devmat::detail
