// The op-test harness (see harness.h): parameterized tests over every case of every table.
#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "graft/registry.h"
#include "guarded_run.h"
#include "node_runs.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace graft::optest {

bool is_builtin(const OpCaseTable& t) {
  return t.domain.empty() || t.domain == "ai.onnx" || t.domain == kInternalDomain;
}

double default_tolerance(DataType t) {
  switch (t) {
    case DataType::kFloat64: return 1e-12;
    case DataType::kFloat32: return 1e-5;
    case DataType::kFloat16: return 5e-3;
    case DataType::kBFloat16: return 3e-2;
    default: return 0.0;  // integers and bool: exact
  }
}

namespace {

// ---- seeds ----------------------------------------------------------------------------------
uint64_t run_seed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* env = std::getenv("GRAFT_TEST_SEED"); env && *env) return std::strtoull(env, nullptr, 0);
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

// Each test mixes its own name in, so one GRAFT_TEST_SEED reproduces every test of a run.
uint64_t test_seed() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  return run_seed() ^ std::hash<std::string>{}(name);
}

std::string seed_note() { return "reproduce with GRAFT_TEST_SEED=" + std::to_string(run_seed()); }

// ---- tables and parameters ------------------------------------------------------------------
const std::vector<OpCaseTable>& tables() {
  static const std::vector<OpCaseTable> t = all_case_tables();
  return t;
}

struct CaseParam {
  size_t table = 0, index = 0;
  Backend backend = Backend::kCPU;
};

// Readable parameters in gtest's failure lines.
// "Name_v1" for a custom op, "Name_opset17" for a builtin op.
std::string table_label(const OpCaseTable& t) {
  return t.name + (is_builtin(t) ? "_opset" + std::to_string(t.opset) : "_v" + t.version);
}

void PrintTo(const CaseParam& p, std::ostream* os) {
  const OpCaseTable& t = tables()[p.table];
  *os << table_label(t) << " case '" << t.cases[p.index].label << "' on " << backend_name(p.backend);
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// Every case on both backends; with `custom_only`, the custom ops' (builtin ops have no backward).
std::vector<CaseParam> case_params(bool custom_only = false) {
  std::vector<CaseParam> out;
  for (size_t t = 0; t < tables().size(); ++t) {
    if (custom_only && is_builtin(tables()[t])) continue;
    for (size_t i = 0; i < tables()[t].cases.size(); ++i)
      for (Backend b : {Backend::kCPU, Backend::kCUDA}) out.push_back({t, i, b});
  }
  return out;
}

std::string case_param_name(const ::testing::TestParamInfo<CaseParam>& p) {
  const OpCaseTable& t = tables()[p.param.table];
  return sanitize(table_label(t) + "_" + t.cases[p.param.index].label + "_" + backend_name(p.param.backend));
}

std::vector<size_t> table_params() {
  std::vector<size_t> out;
  for (size_t t = 0; t < tables().size(); ++t) out.push_back(t);
  return out;
}

Result<std::shared_ptr<const OpDef>> find_op(const OpCaseTable& t) {
  return OpRegistry::global().find(t.domain, t.name, t.version, t.plugin_namespace);
}

std::string combo_text(const std::vector<DataType>& c) {
  std::string s;
  for (DataType t : c) s += (s.empty() ? "" : ",") + std::string(dtype_name(t));
  return "(" + s + ")";
}

// The dtype combinations (inputs then outputs) the op declares.
std::vector<std::vector<DataType>> declared_combos(const OpDef& def) {
  if (!def.type_combinations().empty()) return def.type_combinations();
  std::vector<std::vector<DataType>> out;
  if (def.inputs().empty()) return out;
  for (DataType t : def.inputs()[0].dtypes) {
    std::vector<DataType> in(def.inputs().size(), t);
    auto outs = def.infer_dtypes(in, AttributeMap());
    if (!outs.is_ok()) continue;
    in.insert(in.end(), outs->begin(), outs->end());
    out.push_back(in);
  }
  return out;
}

std::vector<DataType> upcast(const std::vector<DataType>& c) {
  std::vector<DataType> out = c;
  for (DataType& t : out)
    if (dtype_is_float(t)) t = DataType::kFloat64;
  return out;
}

// ---- backends -------------------------------------------------------------------------------
bool cuda_usable(std::string* why) {
#ifdef GRAFT_WITH_CUDA
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    *why = std::string("no CUDA device (") + (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) + ")";
    (void)cudaGetLastError();
    return false;
  }
  return true;
#else
  *why = "graft was built without CUDA (GRAFT_WITH_CUDA undefined)";
  return false;
#endif
}

// The op's forward (or backward) kernel on `backend`, guarded (guarded_run.h).
Result<std::vector<Tensor>> run_def_guarded(const OpDef& def, Backend backend, bool backward, const AttributeMap& attrs,
                                            const std::vector<Tensor>& inputs, const std::vector<OutSpec>& outs,
                                            size_t workspace_bytes) {
  return run_guarded(backend, inputs, outs, workspace_bytes, {}, [&](const GuardedArgs& a) {
    KernelContext ctx;
    ctx.attrs = &attrs;
    ctx.inputs = a.inputs;
    ctx.outputs = a.outputs;
    ctx.workspace = a.workspace;
    ctx.workspace_size = a.workspace_size;
    ctx.stream = a.stream;
    return backward ? def.run_backward(backend, ctx) : def.run(backend, ctx);
  });
}

// ---- data -----------------------------------------------------------------------------------
// Random values in the case's range, rounded to `dtype` (so the reference sees exactly what the
// kernel sees).
Tensor random_tensor(DataType dtype, const CaseInput& in, std::mt19937_64& rng) {
  if (dtype == DataType::kString) {
    if (in.words.empty()) ADD_FAILURE() << "case table bug: a string input without words to draw";
    std::vector<std::string> v(static_cast<size_t>(numel_of(in.dims)));
    std::uniform_int_distribution<size_t> pick(0, in.words.empty() ? 0 : in.words.size() - 1);
    for (std::string& w : v) w = in.words.empty() ? std::string() : in.words[pick(rng)];
    return Tensor::from_strings(in.dims, v);
  }
  Tensor t = Tensor::empty(dtype, in.dims);
  if (!in.values.empty()) {
    if (in.values.size() != static_cast<size_t>(t.numel()))
      ADD_FAILURE() << "case table bug: " << in.values.size() << " fixed values for " << t.numel() << " elements";
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, static_cast<size_t>(i) < in.values.size() ? in.values[i] : 0.0);
  } else if (dtype_is_float(dtype)) {
    std::uniform_real_distribution<double> d(in.lo, in.hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  } else {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(in.lo), static_cast<int64_t>(in.hi));
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(d(rng)));
  }
  return t;
}

Tensor cast_to(const Tensor& t, DataType to) {
  if (!t.defined()) return t;
  Tensor out = Tensor::empty(to, t.dims());
  for (int64_t i = 0; i < t.numel(); ++i) out.set(i, t.get(i));
  return out;
}

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.get(i);
  return v;
}

// ||out - ref|| / ||ref|| (absolute when ref is all zeros) over the finite values; NaN anywhere
// gives NaN, which fails, and so does an infinity that the other side does not match exactly
// (a reduction over an empty set is -inf or +inf, which must come out as such).
double relative_error(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return std::nan("");
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i]) || std::isnan(ref[i])) return std::nan("");
    if (std::isinf(out[i]) || std::isinf(ref[i])) {
      if (out[i] != ref[i]) return std::nan("");
      continue;
    }
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::string first_difference(const std::vector<double>& out, const std::vector<double>& ref) {
  size_t worst = 0;
  double worst_diff = -1.0;
  for (size_t i = 0; i < out.size() && i < ref.size(); ++i) {
    double d = std::isnan(out[i]) ? INFINITY : std::fabs(out[i] - ref[i]);
    if (d > worst_diff) worst_diff = d, worst = i;
  }
  if (out.empty()) return "empty output";
  std::ostringstream s;
  s << "largest difference at flat index " << worst << ": got " << out[worst] << ", expected " << ref[worst];
  return s.str();
}

void expect_close(const std::vector<double>& out, const std::vector<double>& ref, double tol,
                  const std::string& what) {
  const double err = relative_error(out, ref);
  EXPECT_TRUE(err <= tol) << what << ": relative error " << err << " > tolerance " << tol << "; "
                          << first_difference(out, ref);
}

double tolerance_for(const std::map<DataType, double>& overrides, DataType t) {
  auto it = overrides.find(t);
  return it != overrides.end() ? it->second : default_tolerance(t);
}

std::vector<ConcreteDesc> descs_of(const std::vector<Tensor>& ts) {
  std::vector<ConcreteDesc> out;
  for (const Tensor& t : ts) out.push_back(ConcreteDesc{t.defined() ? t.dtype() : DataType::kUndefined, t.dims()});
  return out;
}

// Everything a case needs once: the op, validated attributes, inferred output dims.
struct Prepared {
  std::shared_ptr<const OpDef> def;
  AttributeMap attrs;
  std::vector<std::vector<int64_t>> out_dims;
};

Result<Prepared> prepare(const OpCaseTable& table, const OpCase& c) {
  Prepared p;
  GRAFT_ASSIGN_OR_RETURN(p.def, find_op(table));
  p.attrs = c.attrs;
  GRAFT_RETURN_IF_ERROR(p.def->validate_attributes(p.attrs));
  std::vector<std::optional<std::vector<int64_t>>> in_dims;
  for (const CaseInput& in : c.inputs)
    in_dims.push_back(in.omitted ? std::nullopt : std::optional<std::vector<int64_t>>(in.dims));
  GRAFT_ASSIGN_OR_RETURN(p.out_dims, infer_concrete_shapes(*p.def, in_dims, p.attrs));
  return p;
}

std::vector<Tensor> make_inputs(const OpCase& c, const std::vector<DataType>& combo, std::mt19937_64& rng) {
  std::vector<Tensor> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    ins.push_back(c.inputs[i].omitted ? Tensor() : random_tensor(combo[i], c.inputs[i], rng));
  if (c.adjust_inputs) c.adjust_inputs(ins);
  return ins;
}

std::vector<Tensor> upcast_all(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.defined() && dtype_is_float(t.dtype()) ? cast_to(t, DataType::kFloat64) : t);
  return out;
}

std::vector<OutSpec> out_specs(const std::vector<DataType>& combo, size_t n_in,
                               const std::vector<std::vector<int64_t>>& dims) {
  std::vector<OutSpec> out;
  for (size_t o = 0; o < dims.size(); ++o) out.push_back({combo[n_in + o], dims[o]});
  return out;
}

// ---- builtin ops ----------------------------------------------------------------------------
bool has_float_input(const OpCase& c) {
  for (const CaseInput& in : c.inputs)
    if (!in.omitted && !in.dtype) return true;
  return false;
}

// A container of `kind` holding `items` of `dtype` (ADD_FAILURE and an undefined tensor if refused).
Tensor make_container(ValueKind kind, DataType dtype, const std::vector<Tensor>& items) {
  Result<Tensor> v = kind == ValueKind::kSequence ? Tensor::sequence(dtype, items)
                     : items.empty()              ? Tensor::optional(kind, dtype)
                                                  : Tensor::optional(kind, dtype, items[0]);
  if (!v) {
    ADD_FAILURE() << "case table bug: " << v.status().to_string();
    return Tensor();
  }
  return *v;
}

// A sequence or optional input: random tensors of the items' dims.
Tensor container_input(const CaseInput& in, DataType dt, std::mt19937_64& rng) {
  std::vector<Tensor> items;
  for (const std::vector<int64_t>& d : in.items) {
    CaseInput one{d, in.lo, in.hi};
    items.push_back(random_tensor(dt, one, rng));
  }
  return make_container(in.kind, dt, items);
}

// The case's inputs for a run in `dt`: float inputs in `dt`, inputs with a dtype of their own in it.
std::vector<Tensor> builtin_inputs(const OpCase& c, DataType dt, std::mt19937_64& rng) {
  std::vector<Tensor> ins;
  for (const CaseInput& in : c.inputs) {
    const DataType t = in.dtype.value_or(dt);
    ins.push_back(in.omitted ? Tensor() : in.kind == ValueKind::kTensor ? random_tensor(t, in, rng) : container_input(in, t, rng));
  }
  if (c.adjust_inputs) c.adjust_inputs(ins);
  return ins;
}

// The same values with every float input (or container of floats) in `to` (exact: the reference
// dtype is the widest).
std::vector<Tensor> floats_as(const std::vector<Tensor>& ts, DataType to) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) {
    if (!t.defined() || !dtype_is_float(t.dtype())) {
      out.push_back(t);
    } else if (t.is_tensor()) {
      out.push_back(cast_to(t, to));
    } else {
      std::vector<Tensor> items;
      for (const Tensor& item : t.items()) items.push_back(cast_to(item, to));
      out.push_back(make_container(t.kind(), to, items));
    }
  }
  return out;
}

std::unique_ptr<testing::OneNode> builtin_node(const OpCaseTable& t, const AttributeMap& attrs, std::vector<Tensor> inputs,
                                               size_t num_outputs) {
  auto n = std::make_unique<testing::OneNode>(t.name, std::move(inputs), num_outputs);
  n->node->domain = t.domain == "ai.onnx" ? "" : t.domain;
  n->node->attrs = attrs;
  if (t.attach_subgraphs) t.attach_subgraphs(*n->node);
  return n;
}

// The dims inference gave, with the dims it left unknown (-1) taken from the case's where the op
// sizes its outputs in its kernel (NonZero, Unique): those are known only after a run.
std::vector<int64_t> inferred_as_case(std::vector<int64_t> inferred, const std::vector<int64_t>& expected,
                                      bool sized_by_kernel) {
  if (!sized_by_kernel || inferred.size() != expected.size()) return inferred;
  for (size_t k = 0; k < inferred.size(); ++k)
    if (inferred[k] < 0) inferred[k] = expected[k];
  return inferred;
}

// ---- ops with containers, bodies or kernel-made outputs (sequences, optionals, control flow, strings) ----
// A value's tensors as the container formulas see them: a tensor is one item, a container its items.
Item item_of(const Tensor& t) {
  if (t.dtype() != DataType::kString) return Item{t.dims(), values_of(t)};
  const auto* s = t.data_as<std::string>();
  return Item{t.dims(), {}, std::vector<std::string>(s, s + t.numel())};
}

Items items_of(const Tensor& v) {
  if (!v.defined()) return {};
  if (v.is_tensor()) return {item_of(v)};
  Items out;
  for (const Tensor& t : v.items()) out.push_back(item_of(t));
  return out;
}

// One tensor of a container comparison: dims, then strings exactly or values within `tol`.
void expect_item(const Item& got, const Item& want, const std::vector<int64_t>& dims, double tol, const std::string& what) {
  EXPECT_EQ(got.dims, dims) << what << "'s dims";
  EXPECT_EQ(got.strings, want.strings) << what << "'s strings";
  expect_close(got.values, want.values, tol, what);
}

// `got` against the case's expectation (kind, item dims) and the reference's values.
void expect_container(const Tensor& got, const ContainerOutput& want, const Tensor& ref, double tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << " was not made";
  EXPECT_EQ(value_kind_name(got.kind()), std::string(value_kind_name(want.kind))) << what << "'s kind";
  const Items g = items_of(got), r = items_of(ref);
  ASSERT_EQ(g.size(), want.items.size()) << what << "'s number of tensors";
  ASSERT_EQ(r.size(), want.items.size()) << what << "'s number of tensors in the reference run";
  for (size_t k = 0; k < g.size(); ++k) expect_item(g[k], r[k], want.items[k], tol, what + ", tensor " + std::to_string(k));
}

// A container_reference table's case: inference gives each output's kind, the run on `backend`
// (CPU: the kernel, then a one-node CPU engine; CUDA: a one-node CUDA engine) matches the CPU kernel
// in the reference dtype, and that matches the table's formula.
void container_forward(const OpCaseTable& t, const OpCase& c, Backend backend, std::vector<DataType> dtypes,
                       std::mt19937_64& rng) {
  const size_t n_out = c.container_outputs.size();
  for (DataType dt : dtypes) {
    SCOPED_TRACE(std::string("dtype ") + dtype_name(dt));
    const std::vector<Tensor> inputs = builtin_inputs(c, dt, rng);
    auto node = builtin_node(t, c.attrs, inputs, n_out);
    auto descs = node->infer(t.opset);
    ASSERT_TRUE(descs.is_ok()) << "inference: " << descs.status().to_string();
    ASSERT_EQ(descs->size(), n_out);
    for (size_t o = 0; o < n_out; ++o) {
      const TensorDesc& d = (*descs)[o];
      EXPECT_EQ(value_kind_name(d.kind), std::string(value_kind_name(c.container_outputs[o].kind))) << "inference: output " << o;
      if (d.is_tensor() && d.shape && shape_is_static(*d.shape) && c.container_outputs[o].items.size() == 1) {
        EXPECT_EQ(shape_values(*d.shape), c.container_outputs[o].items[0]) << "inference: output " << o << "'s dims";
      }
    }
    auto ref_node = builtin_node(t, c.attrs, floats_as(inputs, t.reference_dtype), n_out);
    auto ref_descs = ref_node->infer(t.opset);
    ASSERT_TRUE(ref_descs.is_ok()) << "reference inference: " << ref_descs.status().to_string();
    auto ref = run_container_node(*ref_node, *ref_descs);
    ASSERT_TRUE(ref.is_ok()) << "the " << dtype_name(t.reference_dtype) << " CPU reference: " << ref.status().to_string();
    // On the CPU the kernel itself and then the CPU engine of a one-node graph; on CUDA the engine
    // (these ops' CUDA kernels run only inside one).
    std::vector<std::pair<std::string, Result<std::vector<Tensor>>>> runs;
    if (backend == Backend::kCPU) runs.emplace_back("cpu kernel", run_container_node(*node, *descs));
    runs.emplace_back(std::string(backend_name(backend)) + " engine",
                      run_in_engine(backend, *builtin_node(t, c.attrs, inputs, n_out)));
    for (auto& [what, got] : runs) {
      SCOPED_TRACE(what);
      ASSERT_TRUE(got.is_ok()) << what << " run: " << got.status().to_string();
      for (size_t o = 0; o < n_out; ++o) {
        const DataType odt = (*got)[o].defined() ? (*got)[o].dtype() : DataType::kFloat32;
        expect_container((*got)[o], c.container_outputs[o], (*ref)[o],
                         dtype_is_float(odt) ? tolerance_for(c.tolerance, odt) : 0.0, "output " + std::to_string(o));
      }
    }
    if (backend != Backend::kCPU || dt != dtypes.front()) continue;
    std::vector<Items> in_items;
    for (const Tensor& x : ref_node->inputs) in_items.push_back(items_of(x));
    const std::vector<Items> expected = t.container_reference(in_items, c.attrs);
    ASSERT_EQ(expected.size(), n_out) << "the formula gave a different number of outputs";
    for (size_t o = 0; o < n_out; ++o) {
      const Items r = items_of((*ref)[o]);
      ASSERT_EQ(r.size(), expected[o].size()) << "output " << o << ": the CPU reference vs the formula, number of tensors";
      for (size_t k = 0; k < r.size(); ++k)
        expect_item(r[k], expected[o][k], expected[o][k].dims, default_tolerance((*ref)[o].dtype()),
                    "the CPU reference vs the test's independent formula, output " + std::to_string(o) + ", tensor " +
                        std::to_string(k));
    }
  }
}

// A random op's run on `backend`: its draws against the table's statistics; a seeded node run again
// must repeat them exactly, an unseeded one of many draws must not.
void draws_forward(const OpCaseTable& t, const OpCase& c, Backend backend, testing::OneNode& node,
                   const std::vector<OutSpec>& outs) {
  auto got = run_node_guarded(backend, node, outs);
  ASSERT_TRUE(got.is_ok()) << backend_name(backend) << " run: " << got.status().to_string();
  std::vector<std::vector<double>> in_values;
  for (const Tensor& x : node.inputs) in_values.push_back(x.defined() ? values_of(x) : std::vector<double>{});
  for (size_t o = 0; o < outs.size(); ++o) ASSERT_EQ((*got)[o].dims(), c.output_dims[o]) << "output " << o << "'s dims";
  t.statistics(*got, in_values, c.attrs);
  auto again = run_node_guarded(backend, node, outs);
  ASSERT_TRUE(again.is_ok()) << backend_name(backend) << " second run: " << again.status().to_string();
  const std::vector<double> first = values_of((*got)[0]), second = values_of((*again)[0]);
  if (c.attrs.has("seed")) {
    EXPECT_EQ(first, second) << "a seeded node drew different values on its second run";
  } else if (first.size() >= 64) {
    EXPECT_NE(first, second) << "an unseeded node drew the same " << first.size() << " values twice";
  }
}

// One builtin case on `backend`: every dtype its table lists there, each against the CPU kernel
// run in the table's reference dtype on the same values, and inference against the case's shapes.
void builtin_forward(const OpCaseTable& t, const OpCase& c, Backend backend, std::mt19937_64& rng) {
  std::vector<DataType> dtypes = backend == Backend::kCUDA ? t.cuda_dtypes : t.cpu_dtypes;
  if (dtypes.empty()) GTEST_SKIP() << t.name << " has no " << backend_name(backend) << " kernel (its table lists no dtype)";
  if (backend == Backend::kCUDA && !c.cpu_only_because.empty()) GTEST_SKIP() << "CPU only: " << c.cpu_only_because;
  if (!has_float_input(c)) dtypes.erase(dtypes.begin() + 1, dtypes.end());  // inputs of their own dtypes: one run
  if (t.container_reference) {
    container_forward(t, c, backend, dtypes, rng);
    return;
  }
  const size_t n_out = c.output_dims.size();
  for (DataType dt : dtypes) {
    SCOPED_TRACE(std::string("dtype ") + dtype_name(dt));
    const std::vector<Tensor> inputs = builtin_inputs(c, dt, rng);
    auto node = builtin_node(t, c.attrs, inputs, n_out);
    auto outs = infer_node_outputs(*node, t.opset);
    ASSERT_TRUE(outs.is_ok()) << "inference: " << outs.status().to_string();
    const bool sized_by_kernel = output_shape_from_kernel(*node->node);
    ASSERT_EQ(outs->size(), n_out) << "inference made a different number of outputs than the case lists";
    std::vector<std::vector<int64_t>> dims;
    for (size_t o = 0; o < n_out; ++o) dims.push_back(inferred_as_case((*outs)[o].dims, c.output_dims[o], sized_by_kernel));
    EXPECT_EQ(dims, c.output_dims) << "inference disagrees with the case's output shapes";
    // The runs' outputs have the case's dims (a kernel that sizes its outputs must agree with them).
    for (size_t o = 0; o < n_out; ++o) (*outs)[o].dims = c.output_dims[o];
    if (t.statistics) {
      draws_forward(t, c, backend, *node, *outs);
      continue;
    }

    auto ref_node = builtin_node(t, c.attrs, floats_as(inputs, t.reference_dtype), n_out);
    auto ref_outs = infer_node_outputs(*ref_node, t.opset);
    ASSERT_TRUE(ref_outs.is_ok()) << "reference inference: " << ref_outs.status().to_string();
    ASSERT_EQ(ref_outs->size(), n_out) << "reference inference made a different number of outputs";
    for (size_t o = 0; o < n_out; ++o) (*ref_outs)[o].dims = c.output_dims[o];
    auto ref = run_node_guarded(Backend::kCPU, *ref_node, *ref_outs);
    ASSERT_TRUE(ref.is_ok()) << "the " << dtype_name(t.reference_dtype) << " CPU reference: " << ref.status().to_string();
    auto got = run_node_guarded(backend, *node, *outs);
    ASSERT_TRUE(got.is_ok()) << backend_name(backend) << " run: " << got.status().to_string();
    for (size_t o = 0; o < n_out; ++o) {
      const DataType odt = (*outs)[o].dtype;
      ASSERT_EQ((*got)[o].dims(), c.output_dims[o]) << "output " << o << "'s dims after the run";
      expect_close(values_of((*got)[o]), values_of((*ref)[o]), dtype_is_float(odt) ? tolerance_for(c.tolerance, odt) : 0.0,
                   "output " + std::to_string(o));
    }
    if (backend == Backend::kCPU && dt == dtypes.front() && t.reference) {
      std::vector<std::vector<double>> in_values;
      std::vector<std::vector<int64_t>> in_dims;
      for (const Tensor& x : ref_node->inputs) {
        in_values.push_back(x.defined() ? values_of(x) : std::vector<double>{});
        in_dims.push_back(x.defined() ? x.dims() : std::vector<int64_t>{});
      }
      auto expected = t.reference(in_values, in_dims, c.attrs);
      // A formula may also give trailing optional outputs that this case's node leaves out.
      ASSERT_GE(expected.size(), n_out);
      // Outputs of a dtype of their own (a window's float32, an index's int64) are that exact.
      for (size_t o = 0; o < n_out; ++o)
        expect_close(values_of((*ref)[o]), expected[o], default_tolerance((*ref)[o].dtype()),
                     "the CPU reference vs the test's independent formula, output " + std::to_string(o));
    }
  }
}

// ---- forward --------------------------------------------------------------------------------
class OpForward : public ::testing::TestWithParam<CaseParam> {};

TEST_P(OpForward, MatchesFloat64Reference) {
  const OpCaseTable& table = tables()[GetParam().table];
  const OpCase& c = table.cases[GetParam().index];
  const Backend backend = GetParam().backend;
  std::string why;
  if (backend == Backend::kCUDA && !cuda_usable(&why)) GTEST_SKIP() << "CUDA backend skipped: " << why;
  SCOPED_TRACE(seed_note());
  std::mt19937_64 rng(test_seed());
  if (is_builtin(table)) {
    builtin_forward(table, c, backend, rng);
    return;
  }

  auto prep = prepare(table, c);
  ASSERT_TRUE(prep.is_ok()) << prep.status().to_string();
  const OpDef& def = *prep->def;
  EXPECT_EQ(prep->out_dims, c.output_dims) << "infer_concrete_shapes disagrees with the case's output shapes";
  const size_t n_in = def.inputs().size();
  ASSERT_EQ(c.inputs.size(), n_in) << "the case lists a different number of inputs than the op declares";

  int ran = 0;
  for (const auto& combo : declared_combos(def)) {
    if (!def.supports(backend, combo)) continue;
    SCOPED_TRACE("dtypes " + combo_text(combo));
    const std::vector<DataType> ref_combo = upcast(combo);
    ASSERT_TRUE(def.supports(Backend::kCPU, ref_combo))
        << "op has no CPU kernel for " << combo_text(ref_combo) << ": the harness needs one as the reference";

    std::vector<Tensor> inputs = make_inputs(c, combo, rng);
    std::vector<Tensor> ref_inputs = upcast_all(inputs);
    auto ref = run_def_guarded(def, Backend::kCPU, false, prep->attrs, ref_inputs, out_specs(ref_combo, n_in, c.output_dims),
                           def.workspace_size(descs_of(ref_inputs), {}, prep->attrs));
    ASSERT_TRUE(ref.is_ok()) << "float64 reference: " << ref.status().to_string();

    std::vector<ConcreteDesc> out_descs;
    for (auto& s : out_specs(combo, n_in, c.output_dims)) out_descs.push_back({s.dtype, s.dims});
    auto got = run_def_guarded(def, backend, false, prep->attrs, inputs, out_specs(combo, n_in, c.output_dims),
                           def.workspace_size(descs_of(inputs), out_descs, prep->attrs));
    ASSERT_TRUE(got.is_ok()) << backend_name(backend) << " run: " << got.status().to_string();
    for (size_t o = 0; o < got->size(); ++o)
      expect_close(values_of((*got)[o]), values_of((*ref)[o]), tolerance_for(c.tolerance, combo[n_in + o]),
                   "output " + std::to_string(o) + " ('" + def.outputs()[o].name + "')");

    if (backend == Backend::kCPU) {
      // The attributes a plan file or TensorRT engine carries must reproduce the run bit for bit.
      auto round = deserialize_attributes(serialize_attributes(prep->attrs));
      ASSERT_TRUE(round.is_ok()) << round.status().to_string();
      auto again = run_def_guarded(def, backend, false, *round, inputs, out_specs(combo, n_in, c.output_dims),
                               def.workspace_size(descs_of(inputs), out_descs, *round));
      ASSERT_TRUE(again.is_ok()) << again.status().to_string();
      for (size_t o = 0; o < got->size(); ++o)
        EXPECT_EQ(std::memcmp((*again)[o].data(), (*got)[o].data(), (*got)[o].nbytes()), 0)
            << "output " << o << " changed after an attribute serialization round trip";
    }
    if (backend == Backend::kCPU && combo == ref_combo && table.reference) {
      std::vector<std::vector<double>> in_values;
      std::vector<std::vector<int64_t>> in_dims;
      for (const Tensor& t : ref_inputs) {
        in_values.push_back(t.defined() ? values_of(t) : std::vector<double>{});
        in_dims.push_back(t.defined() ? t.dims() : std::vector<int64_t>{});
      }
      auto expected = table.reference(in_values, in_dims, prep->attrs);
      // A formula may also give trailing optional outputs that this case's node leaves out.
      ASSERT_GE(expected.size(), got->size());
      for (size_t o = 0; o < got->size(); ++o)
        expect_close(values_of((*got)[o]), expected[o], 1e-12,
                     "float64 kernel vs the test's independent formula, output " + std::to_string(o));
    }
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "op has no " << backend_name(backend) << " kernel";
}

INSTANTIATE_TEST_SUITE_P(Ops, OpForward, ::testing::ValuesIn(case_params()), case_param_name);

// ---- backward -------------------------------------------------------------------------------
// Inputs of a backward run: forward inputs, then one gradient per forward output.
std::vector<OutSpec> grad_specs(const OpDef& def, const std::vector<Tensor>& inputs) {
  std::vector<OutSpec> out;
  for (int i : def.differentiable_input_indices()) out.push_back({inputs[i].dtype(), inputs[i].dims()});
  return out;
}

double weighted_loss(const std::vector<Tensor>& outs, const std::vector<Tensor>& weights) {
  double loss = 0.0;
  for (size_t o = 0; o < outs.size(); ++o)
    for (int64_t i = 0; i < outs[o].numel(); ++i) loss += outs[o].get(i) * weights[o].get(i);
  return loss;
}

class OpBackward : public ::testing::TestWithParam<CaseParam> {};

TEST_P(OpBackward, MatchesFiniteDifferencesAndFloat64Reference) {
  const OpCaseTable& table = tables()[GetParam().table];
  const OpCase& c = table.cases[GetParam().index];
  const Backend backend = GetParam().backend;
  std::string why;
  if (backend == Backend::kCUDA && !cuda_usable(&why)) GTEST_SKIP() << "CUDA backend skipped: " << why;
  if (!c.check_gradients) GTEST_SKIP() << "the case turns gradient checks off";
  SCOPED_TRACE(seed_note());
  std::mt19937_64 rng(test_seed());

  auto prep = prepare(table, c);
  ASSERT_TRUE(prep.is_ok()) << prep.status().to_string();
  const OpDef& def = *prep->def;
  if (!def.has_backward(backend)) GTEST_SKIP() << "op has no " << backend_name(backend) << " backward kernel";
  const size_t n_in = def.inputs().size();
  ASSERT_EQ(c.inputs.size(), n_in);
  for (int i : def.differentiable_input_indices())
    ASSERT_FALSE(c.inputs[i].omitted) << "differentiable input " << i << " is omitted in the case";

  const auto combos = declared_combos(def);
  ASSERT_FALSE(combos.empty());

  // loss = sum_o sum(w_o * y_o); dL/dy_o = w_o.
  auto run_backward_for = [&](Backend b, const std::vector<Tensor>& inputs, const std::vector<Tensor>& weights,
                              const std::vector<DataType>& combo) -> Result<std::vector<Tensor>> {
    std::vector<Tensor> bw_inputs = inputs;
    bw_inputs.insert(bw_inputs.end(), weights.begin(), weights.end());
    std::vector<ConcreteDesc> out_descs;
    for (auto& s : out_specs(combo, n_in, c.output_dims)) out_descs.push_back({s.dtype, s.dims});
    // The workspace function sees the forward shapes; it must cover the backward too.
    return run_def_guarded(def, b, true, prep->attrs, bw_inputs, grad_specs(def, inputs),
                       def.workspace_size(descs_of(inputs), out_descs, prep->attrs));
  };
  auto random_weights = [&](const std::vector<DataType>& combo) {
    std::vector<Tensor> w;
    for (size_t o = 0; o < c.output_dims.size(); ++o)
      w.push_back(random_tensor(combo[n_in + o], CaseInput{c.output_dims[o], -1.0, 1.0}, rng));
    return w;
  };

  // 1. float64 CPU analytic gradients vs central finite differences.
  if (backend == Backend::kCPU) {
    const std::vector<DataType> f64 = upcast(combos.front());
    ASSERT_TRUE(def.supports(Backend::kCPU, f64)) << "op has no float64 CPU kernel " << combo_text(f64);
    std::vector<Tensor> inputs = make_inputs(c, f64, rng);
    std::vector<Tensor> weights = random_weights(f64);
    auto analytic = run_backward_for(Backend::kCPU, inputs, weights, f64);
    ASSERT_TRUE(analytic.is_ok()) << analytic.status().to_string();
    auto loss_at = [&](const std::vector<Tensor>& ins) -> double {
      auto y = run_def_guarded(def, Backend::kCPU, false, prep->attrs, ins, out_specs(f64, n_in, c.output_dims),
                           def.workspace_size(descs_of(ins), {}, prep->attrs));
      EXPECT_TRUE(y.is_ok()) << y.status().to_string();
      return y.is_ok() ? weighted_loss(*y, weights) : std::nan("");
    };
    const auto& diff = def.differentiable_input_indices();
    for (size_t k = 0; k < diff.size(); ++k) {
      const int idx = diff[k];
      const int64_t n = inputs[idx].numel();
      // All elements when small, else a random sample: FD costs two forward runs per element.
      std::vector<int64_t> picks;
      if (n <= 64) {
        for (int64_t i = 0; i < n; ++i) picks.push_back(i);
      } else {
        std::uniform_int_distribution<int64_t> d(0, n - 1);
        for (int j = 0; j < 64; ++j) picks.push_back(d(rng));
      }
      std::vector<double> fd, an;
      const double at_inputs = c.fd_piecewise_linear ? loss_at(inputs) : 0.0;
      for (int64_t i : picks) {
        std::vector<Tensor> probe = inputs;
        probe[idx] = inputs[idx].clone();
        const double x0 = inputs[idx].get(i);
        const double h = c.fd_step * std::max(1.0, std::fabs(x0));
        probe[idx].set(i, x0 + h);
        const double up = loss_at(probe);
        probe[idx].set(i, x0 - h);
        const double down = loss_at(probe);
        const double a = (*analytic)[k].get(i);
        double d = (up - down) / (2.0 * h);
        if (c.fd_piecewise_linear) {
          const double right = (up - at_inputs) / h, left = (at_inputs - down) / h;
          if (std::fabs(right - left) > c.fd_tolerance * std::max(1.0, std::fabs(d)))  // a kink within the step
            d = std::fabs(right - a) < std::fabs(left - a) ? right : left;
        }
        fd.push_back(d);
        an.push_back(a);
      }
      expect_close(an, fd, c.fd_tolerance,
                   "gradient of input " + std::to_string(idx) + " ('" + def.inputs()[idx].name +
                       "') vs central finite differences");
    }
  }

  // 2. every dtype on this backend vs the float64 CPU backward.
  int ran = 0;
  for (const auto& combo : combos) {
    if (!def.supports(backend, combo)) continue;
    SCOPED_TRACE("dtypes " + combo_text(combo));
    const std::vector<DataType> f64 = upcast(combo);
    std::vector<Tensor> inputs = make_inputs(c, combo, rng);
    std::vector<Tensor> weights = random_weights(combo);
    auto got = run_backward_for(backend, inputs, weights, combo);
    if (!got.is_ok() && got.status().code() == StatusCode::kUnsupported) {
      std::printf("note: %s backward %s: %s\n", backend_name(backend), combo_text(combo).c_str(),
                  got.status().to_string().c_str());
      continue;
    }
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto ref = run_backward_for(Backend::kCPU, upcast_all(inputs), upcast_all(weights), f64);
    ASSERT_TRUE(ref.is_ok()) << "float64 reference backward: " << ref.status().to_string();
    const auto& diff = def.differentiable_input_indices();
    for (size_t k = 0; k < got->size(); ++k)
      expect_close(values_of((*got)[k]), values_of((*ref)[k]), tolerance_for(c.grad_tolerance, combo[diff[k]]),
                   "gradient of input " + std::to_string(diff[k]) + " ('" + def.inputs()[diff[k]].name + "')");
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no " << backend_name(backend) << " backward kernel ran";
}

INSTANTIATE_TEST_SUITE_P(Ops, OpBackward, ::testing::ValuesIn(case_params(/*custom_only=*/true)), case_param_name);

// ---- attributes -----------------------------------------------------------------------------
// The attributes a plan file or TensorRT engine carries come back with the same types and bits.
void expect_attribute_round_trip(const AttributeMap& attrs) {
  const std::string text = serialize_attributes(attrs);
  auto back = deserialize_attributes(text);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), attrs.size()) << text;
  for (const auto& [name, v] : attrs.all()) {
    const AttrValue* w = back->find(name);
    ASSERT_NE(w, nullptr) << "attribute '" << name << "' lost in " << text;
    EXPECT_EQ(attr_type_of(*w), attr_type_of(v)) << name;
    if (attr_type_of(v) == AttrType::kFloat && attr_type_of(*w) == AttrType::kFloat) {
      float a = std::get<float>(v), b = std::get<float>(*w);
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "float attribute '" << name << "' changed bits";
    } else {
      EXPECT_EQ(attr_value_to_string(*w), attr_value_to_string(v)) << name;
    }
  }
  EXPECT_EQ(serialize_attributes(*back), text);
}

class OpAttributes : public ::testing::TestWithParam<size_t> {};

std::string table_param_name(const ::testing::TestParamInfo<size_t>& p) {
  return sanitize(table_label(tables()[p.param]));
}

void expect_names(const Status& st, const std::string& attribute, const std::string& what) {
  EXPECT_FALSE(st.is_ok()) << what << ": accepted";
  if (st.is_ok()) return;
  // An error tagged with an attribute must be tagged with this one; an untagged one must name it in
  // its text (a short name like "to" or "axis" would match too much of a message otherwise).
  if (!st.attribute().empty()) {
    EXPECT_EQ(st.attribute(), attribute) << what << ": the error is tagged with another attribute: " << st.to_string();
  } else {
    EXPECT_NE(st.to_string().find(attribute), std::string::npos)
        << what << ": the error does not name attribute '" << attribute << "': " << st.to_string();
  }
}

// A builtin op's attributes: the round trip, and the table's invalid sets refused by inference over
// inputs of the first case's dtypes (the importer has checked them against ONNX's schema before).
void builtin_attributes(const OpCaseTable& t) {
  for (const OpCase& c : t.cases) {
    SCOPED_TRACE(c.label);
    expect_attribute_round_trip(c.attrs);
  }
  std::mt19937_64 rng(test_seed());
  const OpCase& first = t.cases.front();
  for (const BadAttributeCase& b : t.bad_attributes) {
    SCOPED_TRACE("bad attribute case " + b.label);
    std::vector<Tensor> inputs = builtin_inputs(first, DataType::kFloat32, rng);
    for (size_t i = 0; i < b.input_dims.size() && i < inputs.size(); ++i) {
      CaseInput in = i < first.inputs.size() ? first.inputs[i] : CaseInput{};
      in.dims = b.input_dims[i];
      in.values.clear();
      inputs[i] = random_tensor(in.dtype.value_or(DataType::kFloat32), in, rng);
    }
    Status st;
    if (t.container_reference) {
      auto node = builtin_node(t, b.attrs, inputs, first.container_outputs.size());
      auto descs = node->infer(t.opset);
      st = descs.status();
      if (st.is_ok()) st = run_container_node(*node, *descs).status();
    } else {
      auto node = builtin_node(t, b.attrs, inputs, first.output_dims.size());
      auto outs = infer_node_outputs(*node, t.opset);
      st = outs.status();
      if (st.is_ok()) st = run_node_guarded(Backend::kCPU, *node, *outs).status();
    }
    expect_names(st, b.attribute, b.label);
  }
}

TEST_P(OpAttributes, RoundTripAndInvalidValues) {
  const OpCaseTable& table = tables()[GetParam()];
  if (is_builtin(table)) {
    ASSERT_FALSE(table.cases.empty());
    builtin_attributes(table);
    return;
  }
  auto found = find_op(table);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  const OpDef& def = **found;
  ASSERT_FALSE(table.cases.empty());

  // Round trip of every case's attributes (after defaults are filled in).
  for (const OpCase& c : table.cases) {
    AttributeMap attrs = c.attrs;
    ASSERT_TRUE(def.validate_attributes(attrs).is_ok()) << c.label;
    SCOPED_TRACE(c.label);
    expect_attribute_round_trip(attrs);
  }

  // Invalid values derived from the attribute specs, starting from the first case's valid set.
  const AttributeMap base = table.cases.front().attrs;
  {
    AttributeMap a = base;
    a.set("graft_no_such_attribute", int64_t{1});
    expect_names(def.validate_attributes(a), "graft_no_such_attribute", "unknown attribute");
  }
  for (const AttrSpec& s : def.attrs()) {
    SCOPED_TRACE("attribute " + s.name);
    if (s.required) {
      AttributeMap a = base;
      a.erase(s.name);
      expect_names(def.validate_attributes(a), s.name, "missing required attribute");
    }
    {
      AttributeMap a = base;
      // A type no conversion can accept: strings for numbers, numbers for strings.
      if (s.type == AttrType::kString || s.type == AttrType::kStrings)
        a.set(s.name, 1.5f);
      else if (s.type == AttrType::kInt)
        a.set(s.name, 1.5f);
      else
        a.set(s.name, std::string("not a number"));
      expect_names(def.validate_attributes(a), s.name, "wrong type");
    }
    auto set_number = [&](AttributeMap& a, double v) {
      switch (s.type) {
        case AttrType::kFloat: a.set(s.name, static_cast<float>(v)); break;
        case AttrType::kInt: a.set(s.name, static_cast<int64_t>(v)); break;
        case AttrType::kFloats: a.set(s.name, std::vector<float>{static_cast<float>(v)}); break;
        case AttrType::kInts: a.set(s.name, std::vector<int64_t>{static_cast<int64_t>(v)}); break;
        default: break;
      }
    };
    const bool numeric = s.type == AttrType::kFloat || s.type == AttrType::kInt || s.type == AttrType::kFloats ||
                         s.type == AttrType::kInts;
    if (numeric && s.min_value) {
      AttributeMap a = base;
      const bool is_int = s.type == AttrType::kInt || s.type == AttrType::kInts;
      set_number(a, is_int ? *s.min_value - 1 : *s.min_value - std::max(1.0, std::fabs(*s.min_value)));
      if (!is_int && *s.min_value > 0) set_number(a, 0.0);
      expect_names(def.validate_attributes(a), s.name, "below the minimum");
    }
    if (numeric && s.max_value) {
      AttributeMap a = base;
      set_number(a, *s.max_value + std::max(1.0, std::fabs(*s.max_value)));
      expect_names(def.validate_attributes(a), s.name, "above the maximum");
    }
    if (s.type == AttrType::kFloat) {
      AttributeMap a = base;
      a.set(s.name, std::nanf(""));
      expect_names(def.validate_attributes(a), s.name, "NaN");
    }
  }

  // The table's own invalid sets (some only detectable by the shape function).
  for (const BadAttributeCase& b : table.bad_attributes) {
    SCOPED_TRACE("bad attribute case " + b.label);
    AttributeMap a = b.attrs;
    Status st = def.validate_attributes(a);
    if (st.is_ok() && !b.input_dims.empty()) {
      std::vector<std::optional<std::vector<int64_t>>> dims(b.input_dims.begin(), b.input_dims.end());
      st = infer_concrete_shapes(def, dims, a).status();
    }
    expect_names(st, b.attribute, b.label);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpAttributes, ::testing::ValuesIn(table_params()), table_param_name);

// ---- coverage -------------------------------------------------------------------------------
TEST(OpCoverage, EveryRegisteredOpHasCases) {
  const auto ops = OpRegistry::global().all();
  EXPECT_FALSE(ops.empty()) << "register_graft_ops registered nothing";
  for (const RegisteredOp& r : ops) {
    const OpIdentity& id = r.def->identity();
    bool covered = false;
    for (const OpCaseTable& t : tables())
      if (t.name == id.name && t.version == id.version && t.domain == id.domain &&
          t.plugin_namespace == id.plugin_namespace && !t.cases.empty())
        covered = true;
    EXPECT_TRUE(covered) << "op " << id.to_string() << " (from '" << r.source
                         << "') has no case table: add tests/ops/cases_<op>.cpp with its <op>_case_tables()";
  }
}

TEST(OpCoverage, EveryCaseTableNamesARegisteredOp) {
  for (const OpCaseTable& t : tables()) {
    if (is_builtin(t)) {
      EXPECT_NE(find_builtin_op(t.domain, t.name), nullptr) << "no builtin op " << t.name << " in domain '" << t.domain << "'";
      continue;
    }
    auto found = find_op(t);
    EXPECT_TRUE(found.is_ok()) << found.status().to_string();
    if (found.is_ok()) {
      EXPECT_EQ((*found)->identity().domain, t.domain);
    }
  }
}

// Adding a builtin op means adding its case table. The builtin ops older than the harness's builtin
// tables are listed in builtin_ops_without_cases.txt (one "domain op_type" or "op_type" per line, the
// ONNX ops without a domain), and the list only shrinks: an op with a table must leave it.
TEST(OpCoverage, EveryBuiltinOpHasCasesOrIsListedAsPending) {
  const std::string path = std::string(GRAFT_OP_TESTS_DIR) + "/builtin_ops_without_cases.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::set<std::string> pending;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') pending.insert(line);
  auto key = [](const std::string& domain, const std::string& op) { return domain.empty() ? op : domain + " " + op; };
  std::set<std::string> builtin;
  for (const OpEntry& op : builtin_ops()) {
    const std::string k = key(op.domain, op.op_type);
    builtin.insert(k);
    bool covered = false;
    for (const OpCaseTable& t : tables())
      covered = covered || (is_builtin(t) && t.name == op.op_type && (t.domain == "ai.onnx" ? "" : t.domain) == op.domain);
    EXPECT_TRUE(covered || pending.count(k)) << "builtin op '" << k << "' has no case table: add it to its family's "
                                             << "tests/ops/cases_<family>.cpp";
    EXPECT_FALSE(covered && pending.count(k)) << "builtin op '" << k << "' has a case table now: remove it from " << path;
  }
  for (const std::string& k : pending) EXPECT_TRUE(builtin.count(k)) << path << " lists '" << k << "', not a builtin op";
}

TEST(OpCoverage, RegistrationIsIdempotent) {
  const size_t before = OpRegistry::global().all().size();
  Status st = register_graft_ops(OpRegistry::global());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(OpRegistry::global().all().size(), before);
  OpRegistry fresh;
  ASSERT_TRUE(register_graft_ops(fresh).is_ok());
  EXPECT_EQ(fresh.all().size(), before);
  for (const RegisteredOp& r : fresh.all()) EXPECT_EQ(r.source, "graft");
}

}  // namespace
}  // namespace graft::optest
