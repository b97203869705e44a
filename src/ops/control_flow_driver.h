// What If, Loop and Scan mean, once for every backend. The drivers here hold the ONNX semantics
// (which branch, how many iterations, what is carried and what is stacked, the checks between
// iterations); a backend gives them a SubgraphDevice that runs a subgraph and moves tensors where
// its tensors live. The CPU reference (src/backends/cpu/control_flow.cpp) runs subgraphs node by
// node on host tensors; the CUDA backend (src/backends/cuda/control_flow_ops.cpp) runs them on the
// GPU, reading back only a condition.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/container_driver.h"
#include "ops/operator.h"

namespace graft {

// A ContainerDevice that also runs subgraphs: scan inputs are sliced and scan outputs stacked with
// its slice and place, outputs set or allocated through it.
class SubgraphDevice : public ContainerDevice {
 public:
  // Runs subgraph `attr` (`sub`) of the node over `inputs` (host or device tensors, in the
  // subgraph's input order) and the node's captured values: its outputs, in order.
  virtual Result<std::vector<Tensor>> run_subgraph(const std::string& attr, const Graph& sub,
                                                   const std::vector<Tensor>& inputs) = 0;
  // The one element of a bool tensor, read on the host.
  virtual Result<bool> read_bool(const Tensor& t) = 0;
};

// The node is ctx.node; ctx.inputs are its inputs (explicit ones, then the captured outer values),
// on the device's side; ctx.outputs are only passed through to the device.
Status run_if(const ExecContext& ctx, SubgraphDevice& dev);
Status run_loop(const ExecContext& ctx, SubgraphDevice& dev);
Status run_scan(const ExecContext& ctx, SubgraphDevice& dev);
// SequenceMap: the body over each position of the input sequences (other inputs passed whole), its
// outputs collected into sequences.
Status run_sequence_map(const ExecContext& ctx, SubgraphDevice& dev);

}  // namespace graft
