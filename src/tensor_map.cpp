// encode_tensor_map_2d: cuTensorMapEncodeTiled through the runtime's driver entry point.
#include "detail/tensor_map.hpp"

#include <devmat/error.hpp>

#include <cuda_runtime.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <stdexcept>
#include <string>

namespace devmat::detail {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled(const char* what) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    DEVMAT_CUDA_TRY(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found));
    return found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f) : nullptr;
  }();
  if (fn == nullptr) throw std::runtime_error(std::string("devmat: ") + what + ": the driver has no cuTensorMapEncodeTiled");
  return fn;
}

}  // namespace

void encode_tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, const void* base, cuuint64_t dim0,
                          cuuint64_t dim1, cuuint64_t stride1, cuuint32_t box0, cuuint32_t box1,
                          CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, const char* what) {
  const cuuint64_t dims[2] = {dim0, dim1};
  const cuuint64_t strides[1] = {stride1};
  const cuuint32_t box[2] = {box0, box1};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode_tiled(what)(map, type, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string("devmat: ") + what + ": cuTensorMapEncodeTiled failed (CUresult " +
                             std::to_string(r) + ")");
}

}  // namespace devmat::detail
