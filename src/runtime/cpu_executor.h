// Runs one node on the CPU reference backend: infer with concrete shapes and host values, allocate
// (and poison) outputs, call the kernel. Shared by the runtime and build-time constant folding (the
// builder hands it to fold_constants as its NodeEvaluator, graph/passes.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace graft {

// `inputs[i]` is nullptr for an omitted optional input. Output i is an undefined Tensor when the
// node omits it. Errors carry the node's name and op type.
Result<std::vector<Tensor>> run_node_cpu(const Node& node, const std::vector<const Tensor*>& inputs);

// True when the node has at least one output and every output it has is allocated in `outs` and holds
// no element: a kernel has nothing to write, and the executors (CPU and CUDA) do not run it. An empty
// output may still be huge on its other axes, and a kernel that walks such an axis before reaching
// the empty one would loop or allocate for nothing (fuzz findings FZ13 and FZ19).
bool outputs_all_empty(const Node& node, const std::vector<Tensor>& outs);

// Every name in `inputs` is an input of `g`; the error lists the graph's inputs. Shared by the CPU
// and CUDA execution contexts.
Status check_input_names(const Graph& g, const std::map<std::string, Tensor>& inputs);

}  // namespace graft
