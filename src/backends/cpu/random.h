// CPU reference kernels of the random ops (schema: src/ops/random_ops.cpp; attributes and seeds:
// src/ops/random_attrs.h): RandomUniform(Like) draws from [low, high), RandomNormal(Like) from
// N(mean, scale^2), Bernoulli y = 1 with probability x, Multinomial per row of unnormalized log
// probabilities `sample_size` class indices. Dropout's training mode draws its mask from the same
// generator (src/backends/cpu/extra.cpp).
//
// One generator per kernel call: std::mt19937_64 seeded with SplitMix64 of the seed attribute (the
// same values every run), or of a process-wide random seed plus a call counter (fresh values every
// run). Uniform doubles take the generator's top 53 bits; normals come from Box-Muller over them,
// so a seed gives the same stream on every platform graft builds on (std::normal_distribution's
// algorithm is the standard library's choice). These streams are graft's own: ONNX Runtime's
// differ for the same seed.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

class RandomStream {
 public:
  // `seed` absent: a fresh stream (a process-wide random seed plus a counter of streams made).
  explicit RandomStream(std::optional<uint64_t> seed);
  double uniform01();  // [0, 1), a multiple of 2^-53
  double normal();     // standard normal (Box-Muller; the second value of each pair is kept for the next call)

 private:
  std::mt19937_64 gen_;
  std::optional<double> spare_;
};

Status random_uniform(ExecContext& ctx);
Status random_normal(ExecContext& ctx);
Status random_uniform_like(ExecContext& ctx);
Status random_normal_like(ExecContext& ctx);
Status bernoulli(ExecContext& ctx);
Status multinomial(ExecContext& ctx);

}  // namespace graft::cpu
