// The generic op-test harness. Each op, custom or builtin, contributes a case table
// (tests/ops/cases_<op>.cpp: input shapes and value ranges, attributes, expected output shapes,
// tolerance overrides, invalid attribute sets); the harness turns every case into tests that run
// every backend and every dtype against the float64 CPU reference, with fresh random inputs,
// poisoned outputs, guard bytes around every buffer and shape-function and attribute checks.
//
// A custom op (an OpDef in the registry) runs every dtype combination it declares through its
// OpDef's kernels, and its gradients are checked against central finite differences. A builtin op
// (an ONNX op, domain "", or one of graft's internal ops) runs as a one-node graph through the op
// entries the engines use (node_runs.h), in the float dtypes its table lists per backend.
//
// Seeds: random per run (std::random_device) unless GRAFT_TEST_SEED is set; every failure message
// carries the seed to reproduce it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graft/op.h"
#include "graph/graph.h"  // Node, for the control-flow tables' attach_subgraphs

namespace graft::optest {

struct CaseInput {
  std::vector<int64_t> dims;
  double lo = -2.0, hi = 2.0;  // uniform range of the random values (integers: inclusive bounds)
  bool omitted = false;        // an optional input left out
  // Non-empty: exactly these values (row-major) instead of random ones, for inputs that must be
  // consistent with others (e.g. a deformable-attention op's spatial shapes and level offsets).
  std::vector<double> values = {};
  // Set: the input has this dtype whatever dtype the case runs in (a builtin op's integer indices,
  // axes or condition). Unset: a builtin op's float input, in the tested dtype. (Custom ops take
  // their dtypes from the combinations the op declares.)
  std::optional<DataType> dtype = std::nullopt;
  // A container input of a sequence or optional op (kSequence, kOptionalTensor): one tensor of
  // random values in [lo, hi] per entry of `items`, of those dims (an optional: none or one).
  // `dims` is unused then.
  ValueKind kind = ValueKind::kTensor;
  std::vector<std::vector<int64_t>> items = {};
  // A string input (dtype kString): each element one of these words, drawn at random.
  std::vector<std::string> words = {};
};

// A sequence or optional op's output as its case expects it: its kind and its tensors' dims (a
// tensor output: one item).
struct ContainerOutput {
  ValueKind kind = ValueKind::kTensor;
  std::vector<std::vector<int64_t>> items;
};

struct OpCase {
  std::string label;  // letters, digits, underscores: part of the test name
  std::vector<CaseInput> inputs;
  AttributeMap attrs;  // as a user would give them; the harness validates (and fills defaults)
  // What infer_concrete_shapes must return: written by hand, independent of the op's shape function.
  std::vector<std::vector<int64_t>> output_dims;
  std::map<DataType, double> tolerance;       // forward overrides of the per-dtype defaults
  std::map<DataType, double> grad_tolerance;  // backward overrides of the per-dtype defaults
  double fd_tolerance = 1e-6;                 // float64 analytic gradient vs finite differences
  // Relative step of the central differences. Piecewise-smooth ops (bilinear sampling) use a
  // smaller one so a step rarely straddles a kink.
  double fd_step = 1e-5;
  // The op is piecewise linear in its differentiable inputs (max pooling over samples): where two
  // candidates lie within a step of each other, the central difference straddles the kink and
  // averages the two sides, while the analytic gradient is the winner's. Such a pick is checked
  // against whichever one-sided difference is nearer, which is exact on a side without a kink, so
  // a wrong gradient still fails wherever no tie is within the step.
  bool fd_piecewise_linear = false;
  bool check_gradients = true;
  // Why the case cannot run on CUDA whatever the table lists there (an input dtype the CUDA backend
  // has no tensors of, such as uint32); empty: it runs on every backend the table names.
  std::string cpu_only_because;
  // Optional: moves freshly drawn random inputs (already in the case's dtype) off places where the
  // op is not differentiable, e.g. sampling locations that sit on a pixel-centre line, where a
  // float32 kernel and the float64 reference legitimately pick different bilinear cells.
  std::function<void(std::vector<Tensor>&)> adjust_inputs;
  // The outputs of a sequence or optional op (a table with a container_reference), instead of
  // output_dims.
  std::vector<ContainerOutput> container_outputs = {};
};

// Attributes (and optionally input shapes, for errors found by the shape function) that must be
// refused with an error naming `attribute`.
struct BadAttributeCase {
  std::string label;
  AttributeMap attrs;
  std::vector<std::vector<int64_t>> input_dims;  // empty: validate_attributes only
  std::string attribute;
};

// An independent float64 formula for the forward, written in the test (not by calling the op), that
// the float64 CPU kernel must match to 1e-12. Inputs and outputs are flat row-major values.
using ReferenceFn = std::function<std::vector<std::vector<double>>(
    const std::vector<std::vector<double>>& inputs, const std::vector<std::vector<int64_t>>& input_dims,
    const AttributeMap& attrs)>;

// A builtin op whose outputs are draws (RandomNormal, Bernoulli, Multinomial): the engines'
// generators differ, so each backend's outputs (host copies) are checked against the distribution
// the inputs and attributes define, with EXPECT_* inside, instead of against the CPU kernel.
using StatisticsFn = std::function<void(const std::vector<Tensor>& outputs, const std::vector<std::vector<double>>& inputs,
                                        const AttributeMap& attrs)>;

// A container op's independent formula: per input and per output the tensors it holds (a tensor:
// one; an omitted input or an empty sequence or optional: none), each as dims and row-major values.
struct Item {
  std::vector<int64_t> dims;
  std::vector<double> values;
  std::vector<std::string> strings = {};  // a string tensor's elements (`values` empty)
};
using Items = std::vector<Item>;
using ContainerReferenceFn = std::function<std::vector<Items>(const std::vector<Items>& inputs, const AttributeMap& attrs)>;

struct OpCaseTable {
  std::string domain = "ai.onnx.contrib";
  std::string name;
  std::string version = "1";
  std::string plugin_namespace;
  std::vector<OpCase> cases;
  std::vector<BadAttributeCase> bad_attributes;
  ReferenceFn reference;  // optional but recommended

  // Builtin ops only: the opset the node is made at, the float dtypes each backend must run
  // (an empty list: the op has no kernel there), and the dtype of the CPU run that is the reference.
  int opset = 17;
  std::vector<DataType> cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  std::vector<DataType> cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  DataType reference_dtype = DataType::kFloat64;
  // Set for random ops (see StatisticsFn): checked per backend, and a node with a `seed` attribute
  // must repeat its outputs bit for bit.
  StatisticsFn statistics;
  // Set for the sequence and optional ops, whose inputs or outputs are containers: their cases
  // (CaseInput::kind, OpCase::container_outputs) are checked with this formula instead of `reference`.
  ContainerReferenceFn container_reference;
  // If, Loop, Scan, SequenceMap (tables with a container_reference): attaches the node's subgraphs,
  // the same bodies for every case, built from the node's input descs so that they follow the run's
  // dtype (and setting Node::implicit_inputs for the outer values they capture, the node's last
  // inputs). The formula mirrors the bodies.
  std::function<void(Node& node)> attach_subgraphs;
};

// Whether a table is a builtin op's (ONNX's default domain or graft's internal one) rather than a
// registered OpDef's.
bool is_builtin(const OpCaseTable& t);

// Default tolerances on ||out - ref|| / ||ref||.
double default_tolerance(DataType t);

// Every table (tests/ops/case_tables.cpp): each cases_<name>.cpp defines <name>_case_tables(), and
// CMake lists the files (tests/ops/CMakeLists.txt), so a new case file registers itself.
std::vector<OpCaseTable> all_case_tables();

}  // namespace graft::optest
