// The random family: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli,
// Multinomial, and Dropout, which draws its mask in training mode. Definitions and CPU references:
// random.cpp; CUDA kernels and ops: random.cu. This header holds their attributes, read once for
// the schema, the CPU kernels and the CUDA ops, so all three refuse a bad node with the same words,
// naming the attribute; and which nodes draw random numbers, which constant folding and CUDA-graph
// capture must know.
//
// Seeds: ONNX leaves the generator to the runtime, so graft's streams are its own and differ from
// ONNX Runtime's or NumPy's for the same seed: the CPU engine draws from a 64-bit Mersenne Twister
// (std::mt19937_64) seeded through SplitMix64, the CUDA engine from cuRAND's Philox4x32-10, one
// stream per element; the two engines give different values for the same seed. A node with a seed
// draws the same values on every run, as ONNX's reference implementation does; a node without one
// draws fresh values each run (on CUDA, replays of a captured CUDA graph included).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graft/attribute.h"
#include "graft/dtype.h"
#include "graft/status.h"
#include "graph/graph.h"

namespace graft {

struct RandomAttrs {
  DataType dtype = DataType::kUndefined;  // the output's; the *Like ops and Bernoulli default to the input's
  double low = 0.0, high = 1.0;           // RandomUniform(Like): values in [low, high)
  double mean = 0.0, scale = 1.0;         // RandomNormal(Like)
  std::optional<uint64_t> seed;           // absent: fresh randomness per run
  std::vector<int64_t> shape;             // RandomUniform, RandomNormal
  int64_t sample_size = 1;                // Multinomial
};

// The attributes of random op `op_type` (one of the six above, not Dropout); `input_dtype` is
// input 0's dtype (kUndefined for RandomUniform/RandomNormal, or when not yet known: then a
// missing dtype attribute stays kUndefined). Errors name the attribute at fault: dtype outside the
// op's output types, high < low, a non-finite bound, mean or scale, scale < 0, a negative shape
// dimension, sample_size < 1.
Result<RandomAttrs> random_attrs(const std::string& op_type, const AttributeMap& attrs, DataType input_dtype);

// The `seed` attribute (float for the random ops, int for Dropout; both accepted) as the 64-bit
// value graft seeds its generator with: an integral seed is that integer, any other the float's bits.
Result<std::optional<uint64_t>> seed_attr(const AttributeMap& attrs);

// Whether the node draws random numbers: one of the six random ops, or a Dropout (opset 12+)
// whose training_mode input is a constant true and whose ratio is not a constant 0 (a
// training_mode computed at run time is left to the kernel, which reads its value).
bool node_is_random(const Node& n);

// Dropout's ratio in training mode: in [0, 1); the error names input 1 (ratio).
Status check_dropout_ratio(double ratio);

}  // namespace graft
