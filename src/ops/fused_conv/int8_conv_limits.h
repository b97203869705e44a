// The bound on an INT8 convolution's reduction, shared by the kernel's own check
// (conv_nhwc_int8_supported, conv_int8_kernels.cu) and the graph pass that chooses the kernel
// (src/graph/int8_convs.cpp), which is built without CUDA and so cannot ask the kernel.
#pragma once

#include <cstdint>

namespace graft {

// A convolution summed in int32 over int8 values takes fewer reduction terms (kh * kw * c) than
// this: each term is at most 2^14 in magnitude ((-128)^2), so fewer than 2^17 of them cannot
// overflow the sum.
inline constexpr int64_t kInt8ConvTermLimit = int64_t{1} << 17;

}  // namespace graft
