// The control-flow family: If, Loop, Scan and SequenceMap, which run subgraphs, and the sequence and
// optional ops (SequenceEmpty ... ConcatFromSequence, Optional, OptionalHasElement,
// OptionalGetElement), whose values are containers of tensors. Their meaning is written once, in the
// shared drivers (control_flow_driver.cpp), over a device interface each backend implements: the CPU
// reference (control_flow.cpp, with the schemas) and the CUDA backend (control_flow_cuda.cpp: host
// code of the CUDA ops, built by the C++ compiler, as nvcc cannot parse the graph headers it needs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/status.h"
#include "graft/tensor.h"
#include "graph/graph.h"
#include "ops/operator.h"

namespace graft {

// ---- Scan's attributes ----------------------------------------------------------------------
// Scan's attributes (opset 9+), read one way by its schema and its kernel: how the node's inputs
// split into loop state and scanned tensors, and along which axis and direction each is scanned.

struct ScanLayout {
  size_t n = 0;  // state values: the first n inputs and outputs
  size_t m = 0;  // scanned inputs (num_scan_inputs), after the state
  size_t k = 0;  // scan outputs, after the state
  std::vector<int64_t> in_axes, in_reverse;    // per scanned input (not yet normalized)
  std::vector<int64_t> out_axes, out_reverse;  // per scan output (not yet normalized)
};

// Errors name the node and the attribute (count, length or value out of range).
Result<ScanLayout> scan_layout(const Node& node);

// ---- sequence and optional values -----------------------------------------------------------
// Values the sequence ops read from their inputs, checked in one place for the schemas and the
// drivers, so both accept the same values and word their errors the same way.

// A position input (SequenceAt, SequenceErase: -n <= p < n; SequenceInsert, `insert`: -n <= p <= n)
// as an index in [0, n]: one int32 or int64 element. Errors name the position and the length.
Result<int64_t> sequence_position(const Tensor& position, int64_t length, bool insert);

// The lengths SplitToSequence cuts an axis of `dim` elements into: without `split`, ones; a scalar
// `split`, chunks of that size (the last one shorter when it does not divide `dim`); a 1-D `split`,
// its values, which must be non-negative and sum to `dim`.
Result<std::vector<int64_t>> split_lengths(const Tensor* split, int64_t dim);

// The dims of ConcatFromSequence over `items` along `axis` (stacked along a new axis when
// `new_axis`), and the normalised axis in *axis_out. Every item must have the same rank and the same
// dims but along `axis` (every dim when stacking); an empty sequence is an error.
Result<std::vector<int64_t>> concat_from_sequence_dims(const std::vector<Tensor>& items, int64_t axis, bool new_axis,
                                                       size_t* axis_out);

// OptionalGetElement of an optional that holds nothing.
Status optional_empty_error();

// Optional's `type` attribute (an ONNX TypeProto) as graft keeps it: INTS {kind, dtype, rank,
// dims...}, kind 0 for a tensor and 1 for a sequence, dtype the ONNX element type, rank -1 when
// unknown, a dim -1 when unknown. The importer writes it (plans keep it so), Optional's schema reads it.
constexpr int64_t kOptionalTypeTensor = 0, kOptionalTypeSequence = 1;

// ---- the shared drivers: sequences and optionals --------------------------------------------
// What the sequence and optional ops mean, once for every backend (control_flow_driver.cpp).
// A sequence or optional is a host object (a Tensor of kind kSequence or kOptional*) holding tensors
// that live wherever the backend keeps them; the drivers here make and take them apart, and the
// backend's ContainerDevice moves the tensors: the CPU reference shares them as they are
// (HostDevice, control_flow.cpp), the CUDA backend keeps copies in device memory it owns
// (control_flow_cuda.cpp), since the engine's activation memory is reused.

class ContainerDevice {
 public:
  virtual ~ContainerDevice() = default;
  // A tensor a container may hold from now on: `t` itself where nothing reuses its memory, a copy
  // otherwise. A container is returned as it is (its tensors were kept when it was made).
  virtual Result<Tensor> keep(const Tensor& t) = 0;
  // x's elements [begin, begin + len) along `axis`, a new tensor (that axis dropped when `drop`).
  virtual Result<Tensor> slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) = 0;
  // y[..., offset : offset + n, ...] = src along `axis`, n = src's extent there (1 when src has
  // y's rank less one, the axis dropped).
  virtual Status place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) = 0;
  // Output `o` of the node, allocated where the backend keeps outputs (nullptr: the node omits it).
  virtual Result<Tensor*> allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) = 0;
  // Output `o` of the node is `value`: a container as it is, a tensor copied (nothing for an
  // omitted output).
  virtual Status set_output(size_t o, Tensor value) = 0;
};

// ctx.node is the node and ctx.inputs its inputs; position and split inputs are read on the host.
Status run_sequence_empty(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_construct(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_insert(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_at(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_erase(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_length(const ExecContext& ctx, ContainerDevice& dev);
Status run_split_to_sequence(const ExecContext& ctx, ContainerDevice& dev);
Status run_concat_from_sequence(const ExecContext& ctx, ContainerDevice& dev);
Status run_optional(const ExecContext& ctx, ContainerDevice& dev);
Status run_optional_has_element(const ExecContext& ctx, ContainerDevice& dev);
Status run_optional_get_element(const ExecContext& ctx, ContainerDevice& dev);

// ---- the shared drivers: If, Loop, Scan, SequenceMap ----------------------------------------
// What If, Loop and Scan mean, once for every backend. The drivers here hold the ONNX semantics
// (which branch, how many iterations, what is carried and what is stacked, the checks between
// iterations); a backend gives them a SubgraphDevice that runs a subgraph and moves tensors where
// its tensors live. The CPU reference (control_flow.cpp) runs subgraphs node by node on host
// tensors; the CUDA backend (control_flow_cuda.cpp) runs them on the GPU, reading back only a
// condition.

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
