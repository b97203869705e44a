// The conformance runner's rule for outputs that random ops make.
//
// A random op's reference output is one draw of ONNX's generator (NumPy's, in the suite's
// generator), which no other runtime reproduces, even with the same seed: ONNX leaves the
// generator to the runtime. So such an output is checked on shape, dtype and the op's support
// (its statistics are the unit tests', tests/unit/random_ops_test.cpp), for these outputs only:
//
//   Bernoulli, and its expanded form Cast(Greater/Less(RandomUniform[Like], x))   every value 0 or 1
//   RandomUniform, RandomUniformLike                                             every value in [low, high)
//   RandomNormal, RandomNormalLike                                               every value finite
//   Multinomial                                                                  every value a class index in [0, classes)
//   Dropout with training_mode true and ratio r > 0: output     each y is 0 or x / (1 - r) (the suite's tolerance),
//                                                     mask      each 0 or 1, and true exactly where y is kept
//
// Dtype and shape are compared exactly, as for every output. An output that is computed from a
// random op in any other way fails, saying so: the rule never widens to other ops. Every other
// output, including every output of a case without a random op, is compared value by value.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "graft/tensor.h"

namespace graft::conformance {

// `values`: the data set's inputs, the model's initializers and the engine's outputs, by name.
// nullopt: output `name` does not depend on a random draw (compare it value by value). Otherwise
// "" when `got` passes the rule above, else why not.
std::optional<std::string> check_random_output(const onnx::GraphProto& graph, const std::string& name,
                                               const Tensor& got, const Tensor& want,
                                               const std::map<std::string, Tensor>& values, double rtol, double atol);

}  // namespace graft::conformance
