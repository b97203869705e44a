// String tensors (DataType::kString) on the CPU engine: the conversions Cast and CastLike make to and
// from strings, and StringNormalizer (strings.cpp). A CUDA engine refuses string tensors at build.
#pragma once

#include "graft/tensor.h"

namespace graft {

// y[i] = the text of x[i] (x numeric or bool, y a string tensor of the same size):
// - floats: the shortest text that reads back as the same value (std::to_chars), "NaN", "INF", "-INF";
// - integers in decimal; bool as "1" or "0".
Status cast_to_strings(const Tensor& x, const Tensor& y);

// y[i] = the value x[i] reads as (x a string tensor, y numeric or bool of the same size):
// - a decimal or scientific number, with an optional sign ("3.14", "-1e-5", "1E8", "+2");
// - "NaN", "INF", "Infinity" in any case, signed or not;
// - for an integer y, an integer text converts exactly and any other number as numeric Cast does
//   (truncation toward zero, saturation); for bool, nonzero is true, and "true"/"false" are read too.
// Anything else is kInvalidArgument naming the element and its text.
Status cast_from_strings(const Tensor& x, const Tensor& y);

}  // namespace graft
