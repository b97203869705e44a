// graft_conformance: the ONNX backend test suite (libonnx-testdata) through graft's CPU engine.
//
// For each case directory (model.onnx + test_data_set_*/{input,output}_*.pb) it decides whether
// graft supports the model (a scan of op types against the builtin table and the custom-op
// registry, then the importer's own verdict), builds an engine, runs every data set and compares
// with the reference outputs (rtol 1e-3, atol 1e-7 unless the case's data.json says otherwise).
// Outputs that random ops draw are checked on dtype, shape and the op's support instead
// (random_outputs.h says which, and why); the summary lists the cases that used that rule.
// Each case runs in a forked child so a crashing or hanging kernel is reported as that case's
// failure instead of ending the run. Exit status: 0 when no supported case fails, 1 otherwise, 77
// when the test data is not installed (CTest's skip code).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "graft/engine.h"
#include "graft/registry.h"
#include "io/tensor_io.h"
#include "tests/conformance/random_outputs.h"
#include "onnx/deform_conv_rewrite.h"
#include "onnx/importer.h"
#include "onnx/opset_conversion.h"
#include "ops/operator.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string data_dir = "/usr/share/libonnx-testdata/data";
  std::vector<std::string> suites = {"node", "pytorch-operator", "pytorch-converted", "simple"};
  std::string filter;
  bool verbose = false;
  bool list_unsupported = false;
  int64_t max_elements = 50'000'000;
  int timeout_s = 60;
  int jobs = 1;  // cases run at once, each in its own child process
  std::string device = "cpu";  // cuda: the same cases through the CUDA engine (GPU kernels, CPU fallbacks)
  // cuda: a case with a layer placed on the CPU reference is unsupported (BuilderConfig::strict_device),
  // so its passes count only cases that ran wholly on the GPU.
  bool strict_device = false;
};

enum class Outcome { kPass, kFail, kUnsupported, kSkipped };
const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "FAIL";
    case Outcome::kUnsupported: return "unsupported";
    case Outcome::kSkipped: return "skipped";
  }
  return "?";
}

struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string reason;                  // why it failed / is unsupported / was skipped
  std::vector<std::string> ops;        // distinct op types in the model (main graph and subgraphs)
  std::vector<std::string> blamed;     // for unsupported: the op types (or pseudo-ops) at fault
  double max_abs = 0, max_rel = 0;
  int data_sets = 0;
  std::vector<std::string> random_outputs;  // outputs checked by the random-output rule, not by value
};

CaseResult make_result(Outcome o, std::string reason) {
  CaseResult r;
  r.outcome = o;
  r.reason = std::move(reason);
  return r;
}

// ---- model scan ------------------------------------------------------------------------------
bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

void collect_ops(const onnx::GraphProto& g, std::set<std::pair<std::string, std::string>>& ops) {
  for (const auto& n : g.node()) {
    ops.insert({n.domain(), n.op_type()});
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_ops(a.g(), ops);
      for (const auto& sg : a.graphs()) collect_ops(sg, ops);
    }
  }
}

// Returns the op types graft cannot run at this opset, each with a short reason.
std::vector<std::pair<std::string, std::string>> unsupported_ops(const onnx::ModelProto& m, int64_t opset) {
  std::set<std::pair<std::string, std::string>> ops;
  collect_ops(m.graph(), ops);
  std::set<std::pair<std::string, std::string>> local_functions;
  for (const auto& f : m.functions()) local_functions.insert({f.domain(), f.name()});
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [domain, type] : ops) {
    if (local_functions.count({domain, type})) {
      out.push_back({type, "model-local function"});
    } else if (is_default_domain(domain)) {
      const graft::OpEntry* op = graft::find_onnx_op(type);
      const graft::ImportRewrite& rewrite = graft::deform_conv_import_rewrite();  // read as one of graft's ops
      if (!op && type == rewrite.op_type) {
        if (opset < rewrite.since_opset)
          out.push_back({type, fmt::format("needs opset >= {} (model has {})", rewrite.since_opset, opset)});
      } else if (!op)
        out.push_back({type, "no builtin op"});
      else if (opset < op->min_opset)
        out.push_back({type, fmt::format("needs opset >= {} (model has {})", op->min_opset, opset)});
    } else {
      auto found = graft::OpRegistry::global().find(domain, type, "1", "");
      if (!found.is_ok()) out.push_back({domain + "::" + type, "not a registered custom op"});
    }
  }
  return out;
}

// The cases of the suites that need a looser tolerance than the suite's, each with why.
struct LooserTolerance {
  double atol;
  const char* why;
};
const std::map<std::string, LooserTolerance> kLooserTolerances = {
    // onnx >= 1.19 computes these expected values with numpy 2's single-precision FFT of float32 data
    // (values up to about 1e2): outputs that are 0 exactly come out as float32 rounding noise up to
    // about 2e-6, where graft, summing in double, gives about 1e-15.
    {"test_dft_inverse", {1e-5, "expected values from a float32 FFT: exact zeros carry float32 rounding noise"}},
    {"test_dft_inverse_opset19", {1e-5, "expected values from a float32 FFT: exact zeros carry float32 rounding noise"}},
};

std::string first_line(const std::string& s) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > 300 ? l.substr(0, 300) + "..." : l;
}

// ---- comparison --------------------------------------------------------------------------------
// Returns "" when within tolerance, else a description; updates max errors either way.
std::string compare(const std::string& name, const graft::Tensor& got, const graft::Tensor& want, double rtol,
                    double atol, double* max_abs, double* max_rel) {
  auto desc = [](const graft::Tensor& t) { return graft::desc_of_value(t).to_string(); };
  if (!got.is_tensor() || !want.is_tensor()) {
    // A sequence or optional: the same kind, dtype and count, then each tensor it holds.
    if (got.kind() != want.kind() || got.dtype() != want.dtype() || got.items().size() != want.items().size())
      return fmt::format("output '{}' is a {} {} of {} values but the reference is a {} {} of {}", name,
                         graft::value_kind_name(got.kind()), desc(got), got.items().size(),
                         graft::value_kind_name(want.kind()), desc(want), want.items().size());
    for (size_t i = 0; i < got.items().size(); ++i) {
      std::string d = compare(fmt::format("{}[{}]", name, i), got.items()[i], want.items()[i], rtol, atol, max_abs, max_rel);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (got.dtype() != want.dtype() || got.dims() != want.dims())
    return fmt::format("output '{}' is {} but the reference is {}", name, desc(got), desc(want));
  if (got.dtype() == graft::DataType::kString) {  // text: equal, element by element
    const auto* g = got.data_as<std::string>();
    const auto* w = want.data_as<std::string>();
    for (int64_t i = 0; i < got.numel(); ++i)
      if (g[i] != w[i])
        return fmt::format("output '{}' {}: element {} is \"{}\", want \"{}\"", name, desc(got), i, g[i], w[i]);
    return "";
  }
  int64_t bad = 0, first = -1;
  double case_abs = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::isinf(w) && g == w) continue;
    double d = std::fabs(g - w);
    if (std::isnan(d)) d = INFINITY;
    case_abs = std::max(case_abs, d);
    *max_abs = std::max(*max_abs, d);
    if (w != 0) *max_rel = std::max(*max_rel, d / std::fabs(w));
    if (!(d <= atol + rtol * std::fabs(w))) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (!bad) return "";
  return fmt::format("output '{}' {}: {} of {} elements beyond tolerance; first at flat index {}: got {:.9g} want {:.9g}; max abs error {:.6g}",
                     name, desc(got), bad, got.numel(), first, got.get(first), want.get(first), case_abs);
}

// ---- one case (runs in the child) -------------------------------------------------------------
struct DataSet {
  std::vector<graft::io::NamedTensor> inputs, outputs;
};

CaseResult run_case(const fs::path& dir, const Options& opt) {
  CaseResult r;
  std::string model_path = (dir / "model.onnx").string();
  auto bytes = graft::io::read_file(model_path);
  if (!bytes.is_ok()) return make_result(Outcome::kFail, bytes.status().to_string());
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.value())) return make_result(Outcome::kFail, "model.onnx does not parse as an ONNX model");
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (is_default_domain(o.domain())) opset = o.version();
  std::set<std::pair<std::string, std::string>> op_set;
  collect_ops(model.graph(), op_set);
  for (const auto& [d, t] : op_set) r.ops.push_back(is_default_domain(d) ? t : d + "::" + t);

  auto unsupported = [&](std::vector<std::string> blamed, std::string why) {
    r.outcome = Outcome::kUnsupported;
    r.blamed = std::move(blamed);
    r.reason = std::move(why);
    return r;
  };
  // An older opset is converted on import; the scan looks at the model the importer will read.
  if (graft::needs_opset_conversion(model)) {
    onnx::ModelProto converted;
    graft::Status st = graft::convert_to_supported_opset(model, &converted);
    if (!st.is_ok())
      return unsupported({st.op_type().empty() ? std::string("(opset conversion)") : st.op_type()}, first_line(st.to_string()));
    model = std::move(converted);
    opset = graft::default_domain_opset_of(model);
  }
  auto bad = unsupported_ops(model, opset);
  if (!bad.empty()) {
    std::vector<std::string> blamed;
    std::string why;
    for (const auto& [op, reason] : bad) {
      blamed.push_back(op);
      why += (why.empty() ? "" : "; ") + op + ": " + reason;
    }
    return unsupported(blamed, why);
  }
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> input_names, output_names;
  // Declared types: a sequence or optional value's file is a SequenceProto or OptionalProto.
  std::map<std::string, graft::TensorDesc> declared_types;
  for (const auto& v : model.graph().input()) {
    if (initializers.count(v.name())) continue;
    // A plain tensor's file is a TensorProto whatever its element type (the data reader names a
    // type graft lacks); only the container kinds need the declared type.
    if (!v.type().has_tensor_type()) {
      auto d = graft::desc_from_type(v.type(), v.name());
      if (!d.is_ok()) return unsupported({"(input type)"}, first_line(d.status().to_string()));
      declared_types[v.name()] = d.value();
    }
    input_names.push_back(v.name());
  }
  for (const auto& v : model.graph().output()) {
    if (!v.type().has_tensor_type()) {
      auto d = graft::desc_from_type(v.type(), v.name());
      if (!d.is_ok()) return unsupported({"(output type)"}, first_line(d.status().to_string()));
      declared_types[v.name()] = d.value();
    }
    output_names.push_back(v.name());
  }

  // Tolerances: the suite's defaults, or the case's data.json (the `real` models carry one), or
  // the looser ones kLooserTolerances lists with its reason.
  double rtol = 1e-3, atol = 1e-7;
  if (auto it = kLooserTolerances.find(dir.filename().string()); it != kLooserTolerances.end()) atol = it->second.atol;
  if (fs::exists(dir / "data.json")) {
    auto j = nlohmann::json::parse(std::ifstream(dir / "data.json"), nullptr, false);
    if (j.is_object()) {
      if (j.contains("rtol") && j["rtol"].is_number()) rtol = j["rtol"];
      if (j.contains("atol") && j["atol"].is_number()) atol = j["atol"];
    }
  }

  // Data sets, sorted by name so input_10 comes after input_9.
  std::vector<fs::path> set_dirs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) set_dirs.push_back(e.path());
  std::sort(set_dirs.begin(), set_dirs.end());
  if (set_dirs.empty()) return make_result(Outcome::kSkipped, "no test_data_set_* directories");
  std::vector<DataSet> sets;
  // Outputs whose reference an old generator truncated to bfloat16 (see below): compared within one
  // bfloat16 step instead of the suite's tolerance.
  std::set<std::string> truncated_bf16;
  for (const fs::path& sd : set_dirs) {
    DataSet ds;
    for (const char* kind : {"input", "output"}) {
      auto& list = std::string(kind) == "input" ? ds.inputs : ds.outputs;
      const auto& names = std::string(kind) == "input" ? input_names : output_names;
      for (size_t i = 0;; ++i) {
        fs::path p = sd / fmt::format("{}_{}.pb", kind, i);
        if (!fs::exists(p)) break;
        // The file's value type is the graph value's at this position (its name is inside the file).
        const auto& positional = std::string(kind) == "input" ? input_names : output_names;
        const graft::TensorDesc declared_type =
            i < positional.size() ? declared_types[positional[i]] : graft::TensorDesc();
        auto t = graft::io::read_value_pb(p.string(), declared_type);
        if (!t.is_ok()) {
          if (t.status().code() == graft::StatusCode::kUnsupported)
            return unsupported({"(data dtype)"}, t.status().to_string());
          return make_result(Outcome::kFail, t.status().to_string());
        }
        graft::io::NamedTensor nt = std::move(t).value();
        // The stored name wins when it names a graph value; otherwise position decides.
        if (std::find(names.begin(), names.end(), nt.name) == names.end()) {
          if (i >= names.size())
            return make_result(Outcome::kFail, fmt::format("{} has no matching graph {}", p.string(), kind));
          nt.name = names[i];
        }
        // The value's declared tensor type, for the two ways old suites' data disagrees with it.
        const onnx::ValueInfoProto* declared = nullptr;
        for (const auto& v : std::string(kind) == "input" ? model.graph().input() : model.graph().output())
          if (v.name() == nt.name) declared = &v;
        if (declared && declared->type().has_tensor_type()) {
          const auto& tt = declared->type().tensor_type();
          // ONNX's generator wrote bfloat16 data as its uint16 bit patterns while NumPy had no
          // bfloat16 (test_cast*_BFLOAT16*): the same bytes, read as the declared type.
          // Its float-to-bfloat16 references truncated instead of rounding to nearest even as Cast
          // does now: such an output differs from a correct one by at most one bfloat16 step
          // (2^-7 of the value), which is the tolerance it is compared with.
          if (tt.elem_type() == onnx::TensorProto::BFLOAT16 && nt.tensor.dtype() == graft::DataType::kUInt16) {
            if (std::string(kind) == "output") truncated_bf16.insert(nt.name);
            graft::Tensor bf = graft::Tensor::empty(graft::DataType::kBFloat16, nt.tensor.dims());
            if (bf.nbytes()) std::memcpy(bf.data(), nt.tensor.data(), bf.nbytes());
            nt.tensor = bf;
          }
          // Data whose static shape contradicts the model's fixed dims cannot be run by any
          // engine that checks inputs; the case itself is broken, not the engine.
          if (std::string(kind) == "input" && tt.has_shape()) {
            const auto& dims = tt.shape().dim();
            bool contradicts = dims.size() != static_cast<int>(nt.tensor.dims().size());
            for (int k = 0; !contradicts && k < dims.size(); ++k)
              contradicts = dims[k].has_dim_value() && dims[k].dim_value() != nt.tensor.dims()[k];
            if (contradicts)
              return make_result(Outcome::kSkipped,
                                 fmt::format("{}: input '{}' has shape [{}] but the model declares rank {} with fixed dims "
                                             "that differ (a defect of the case's data)",
                                             p.filename().string(), nt.name, fmt::join(nt.tensor.dims(), ","),
                                             dims.size()));
          }
        }
        if (std::string(kind) == "input" && nt.tensor.numel() > opt.max_elements)
          return make_result(Outcome::kSkipped, fmt::format("input '{}' has {} elements (> {})", nt.name, nt.tensor.numel(),
                                                 opt.max_elements));
        list.push_back(std::move(nt));
      }
    }
    sets.push_back(std::move(ds));
  }

  // A profile that covers every data set's input shapes (fixed where all sets agree).
  graft::BuilderConfig config;
  // Each case runs in a forked child (run_isolated), so CUDA is initialized there, never in the parent.
  config.device = opt.device == "cuda" ? graft::DeviceType::kCUDA : graft::DeviceType::kCPU;
  config.strict_device = opt.strict_device;
  for (const DataSet& ds : sets)
    for (const auto& in : ds.inputs) {
      if (!in.tensor.is_tensor()) continue;  // sequences and optionals take any shapes
      auto it = config.profile.find(in.name);
      if (it == config.profile.end()) {
        config.profile[in.name] = {in.tensor.dims(), in.tensor.dims(), in.tensor.dims()};
        continue;
      }
      auto& pr = it->second;
      if (pr.min.size() != in.tensor.dims().size())
        return make_result(Outcome::kFail, fmt::format("input '{}' has different ranks across data sets", in.name));
      for (size_t k = 0; k < pr.min.size(); ++k) {
        pr.min[k] = std::min(pr.min[k], in.tensor.dims()[k]);
        pr.max[k] = std::max(pr.max[k], in.tensor.dims()[k]);
      }
    }
  auto engine = graft::Engine::build_from_onnx_bytes(bytes.value(), config, model_path);
  if (!engine.is_ok()) {
    const graft::Status& st = engine.status();
    if (opt.strict_device && st.code() == graft::StatusCode::kUnsupported &&
        st.to_string().find("strict device") != std::string::npos) {
      // The placement error lists the layers on its later lines: they are the reason.
      std::string why = st.to_string();
      std::replace(why.begin(), why.end(), '\n', ' ');
      return unsupported({"(CPU placement)"}, why.size() > 400 ? why.substr(0, 400) + "..." : why);
    }
    if (st.code() == graft::StatusCode::kUnsupported)
      return unsupported({st.op_type().empty() ? std::string("(import)") : st.op_type()}, first_line(st.to_string()));
    return make_result(Outcome::kFail, "build failed: " + first_line(st.to_string()));
  }
  auto ctx = engine.value()->create_context();
  if (!ctx.is_ok()) return make_result(Outcome::kFail, "create_context failed: " + first_line(ctx.status().to_string()));

  // The initializers, for the random-output rule (a Dropout's ratio or training_mode may be one).
  std::map<std::string, graft::Tensor> initializer_values;
  for (const auto& t : model.graph().initializer()) {
    auto v = graft::io::parse_tensor_pb(t.SerializeAsString(), t.name());
    if (v.is_ok()) initializer_values[t.name()] = std::move(v).value().tensor;
  }

  for (size_t s = 0; s < sets.size(); ++s) {
    std::map<std::string, graft::Tensor> inputs, outputs;
    for (const auto& in : sets[s].inputs) inputs[in.name] = in.tensor;
    // Poisoned outputs of the reference shape: an element the engine never writes shows as NaN.
    for (const auto& out : sets[s].outputs) {
      if (!out.tensor.is_tensor()) continue;  // the engine hands sequences and optionals back whole
      graft::Tensor t = graft::Tensor::empty(out.tensor.dtype(), out.tensor.dims());
      t.poison();
      outputs[out.name] = t;
    }
    graft::Status st = ctx.value()->run(inputs, outputs);
    std::string where = set_dirs[s].filename().string();
    if (!st.is_ok()) {
      if (st.code() == graft::StatusCode::kUnsupported)
        return unsupported({st.op_type().empty() ? std::string("(run)") : st.op_type()}, where + ": " + first_line(st.to_string()));
      return make_result(Outcome::kFail, where + ": run failed: " + first_line(st.to_string()));
    }
    std::map<std::string, graft::Tensor> values = initializer_values;
    for (const auto& [n, t] : inputs) values[n] = t;
    for (const auto& [n, t] : outputs) values[n] = t;
    for (const auto& ref : sets[s].outputs) {
      auto it = outputs.find(ref.name);
      if (it == outputs.end()) return make_result(Outcome::kFail, where + ": engine produced no output '" + ref.name + "'");
      const double ref_rtol = truncated_bf16.count(ref.name) ? std::max(rtol, 1.0 / 128) : rtol;
      std::string diff;
      if (auto random = graft::conformance::check_random_output(model.graph(), ref.name, it->second, ref.tensor,
                                                                values, ref_rtol, atol)) {
        diff = *random;
        if (std::find(r.random_outputs.begin(), r.random_outputs.end(), ref.name) == r.random_outputs.end())
          r.random_outputs.push_back(ref.name);
      } else {
        diff = compare(ref.name, it->second, ref.tensor, ref_rtol, atol, &r.max_abs, &r.max_rel);
      }
      if (!diff.empty()) {
        r.outcome = Outcome::kFail;
        r.reason = where + ": " + diff;
        return r;
      }
    }
    ++r.data_sets;
  }
  r.outcome = Outcome::kPass;
  return r;
}

// ---- isolation: fork, run, report through a pipe as JSON ------------------------------------
nlohmann::json to_json(const CaseResult& r) {
  return {{"outcome", static_cast<int>(r.outcome)}, {"reason", r.reason}, {"ops", r.ops}, {"blamed", r.blamed},
          {"max_abs", r.max_abs}, {"max_rel", r.max_rel}, {"data_sets", r.data_sets}, {"random_outputs", r.random_outputs}};
}

// One case running in a forked child, which reports its CaseResult as JSON through a pipe. The
// parent starts and watches every child from one thread (no fork from a threaded process), so
// `--jobs` cases run at once with each still isolated: a crash or a hang fails only its own case.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string msg;
  std::chrono::steady_clock::time_point start, deadline;
};

std::optional<Child> start_child(const fs::path& dir, const Options& opt, CaseResult* failed) {
  int fds[2];
  if (pipe(fds) != 0) {
    *failed = make_result(Outcome::kFail, "pipe() failed");
    return std::nullopt;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    *failed = make_result(Outcome::kFail, "fork() failed");
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    CaseResult r;
    try {
      r = run_case(dir, opt);
    } catch (const std::exception& e) {
      r = make_result(Outcome::kFail, std::string("exception escaped graft: ") + e.what());
    }
    std::string msg = to_json(r).dump();
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t n = write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  Child c;
  c.pid = pid;
  c.fd = fds[0];
  c.start = std::chrono::steady_clock::now();
  c.deadline = c.start + std::chrono::seconds(opt.timeout_s);
  return c;
}

// The result of a child whose pipe closed (or whose time ran out: `timed_out`, then it is killed).
CaseResult finish_child(Child& c, bool timed_out, const Options& opt) {
  close(c.fd);
  if (timed_out) kill(c.pid, SIGKILL);
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (timed_out) return make_result(Outcome::kFail, fmt::format("timed out after {} s", opt.timeout_s));
  if (WIFSIGNALED(status))
    return make_result(Outcome::kFail, fmt::format("crashed with signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status))));
  auto j = nlohmann::json::parse(c.msg, nullptr, false);
  if (!j.is_object()) return make_result(Outcome::kFail, fmt::format("child exited ({}) without a result", WEXITSTATUS(status)));
  CaseResult r;
  r.outcome = static_cast<Outcome>(j["outcome"].get<int>());
  r.reason = j["reason"];
  r.ops = j["ops"].get<std::vector<std::string>>();
  r.blamed = j["blamed"].get<std::vector<std::string>>();
  r.max_abs = j["max_abs"];
  r.max_rel = j["max_rel"];
  r.data_sets = j["data_sets"];
  r.random_outputs = j["random_outputs"].get<std::vector<std::string>>();
  return r;
}

// Runs every case, up to opt.jobs at once, and calls done(index, result, seconds) as each ends.
template <typename Done>
void run_all_isolated(const std::vector<std::pair<std::string, fs::path>>& cases, const Options& opt, Done done) {
  std::map<size_t, Child> running;
  size_t next = 0;
  char buf[4096];
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && running.size() < static_cast<size_t>(std::max(1, opt.jobs))) {
      const size_t i = next++;
      CaseResult failed;
      auto c = start_child(cases[i].second, opt, &failed);
      if (c) {
        running.emplace(i, std::move(*c));
      } else {
        done(i, std::move(failed), 0.0);
      }
    }
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (const auto& [i, c] : running) {
      fds.push_back(pollfd{c.fd, POLLIN, 0});
      which.push_back(i);
    }
    if (fds.empty()) continue;
    const int rc = poll(fds.data(), fds.size(), 200);
    if (rc < 0 && errno != EINTR) break;
    const auto now = std::chrono::steady_clock::now();
    for (size_t k = 0; k < fds.size(); ++k) {
      Child& c = running.at(which[k]);
      bool ended = false, timed_out = false;
      if (rc > 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) c.msg.append(buf, static_cast<size_t>(n));
        else ended = true;
      }
      if (!ended && now >= c.deadline) ended = timed_out = true;
      if (!ended) continue;
      CaseResult r = finish_child(c, timed_out, opt);
      const double secs = std::chrono::duration<double>(now - c.start).count();
      running.erase(which[k]);
      done(which[k], std::move(r), secs);
    }
  }
}

// The op types of a case, for attribution when the child died before reporting them.
std::vector<std::string> scan_ops(const fs::path& dir) {
  std::vector<std::string> out;
  auto bytes = graft::io::read_file((dir / "model.onnx").string());
  onnx::ModelProto m;
  if (!bytes.is_ok() || !m.ParseFromString(bytes.value())) return out;
  std::set<std::pair<std::string, std::string>> ops;
  collect_ops(m.graph(), ops);
  for (const auto& [d, t] : ops) out.push_back(is_default_domain(d) ? t : d + "::" + t);
  return out;
}

struct Counts {
  int pass = 0, fail = 0, unsupported = 0, skipped = 0;
  void add(Outcome o) {
    (o == Outcome::kPass ? pass : o == Outcome::kFail ? fail : o == Outcome::kUnsupported ? unsupported : skipped)++;
  }
};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Run the ONNX backend test suite (libonnx-testdata) through graft's CPU or CUDA engine"};
  app.add_option("--device", opt.device, "Engine device: cpu (reference kernels) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--data-dir", opt.data_dir, "Root of the ONNX test data");
  app.add_option("--suites", opt.suites, "Suites under the data dir")->expected(1, -1);
  app.add_option("--filter", opt.filter, "Only cases whose suite/name contains this substring");
  app.add_flag("-v,--verbose", opt.verbose, "Print every case as it runs");
  app.add_flag("--list-unsupported", opt.list_unsupported, "List every unsupported case with its reason");
  app.add_flag("--strict-device", opt.strict_device,
               "cuda: count a case whose engine places a layer on the CPU reference as unsupported");
  app.add_option("--max-elements", opt.max_elements, "Skip cases whose inputs exceed this many elements");
  app.add_option("--timeout", opt.timeout_s, "Seconds allowed per case")->check(CLI::PositiveNumber);
  app.add_option("-j,--jobs", opt.jobs, "Cases run at once, each in its own process (default 1)")
      ->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!fs::is_directory(opt.data_dir)) {
    std::printf("graft_conformance: %s not found (install the libonnx-testdata package); skipping\n",
                opt.data_dir.c_str());
    return 77;
  }
  graft::Status reg = graft::register_graft_ops(graft::OpRegistry::global());
  if (!reg.is_ok()) {
    std::fprintf(stderr, "graft_conformance: registering graft's ops failed: %s\n", reg.to_string().c_str());
    return 1;
  }

  std::vector<std::pair<std::string, fs::path>> cases;
  for (const std::string& suite : opt.suites) {
    fs::path root = fs::path(opt.data_dir) / suite;
    if (!fs::is_directory(root)) {
      std::printf("graft_conformance: suite %s not found under %s; skipping it\n", suite.c_str(), opt.data_dir.c_str());
      continue;
    }
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
      std::string id = suite + "/" + d.filename().string();
      if (opt.filter.empty() || id.find(opt.filter) != std::string::npos) cases.push_back({id, d});
    }
  }

  std::map<std::string, Counts> per_op;
  Counts total;
  std::vector<std::pair<std::string, CaseResult>> failures, unsupported_cases, skipped_cases, random_cases;
  auto t0 = std::chrono::steady_clock::now();
  // Results are tallied in case order once all have run; each is printed as it ends (with -v).
  std::vector<CaseResult> results(cases.size());
  run_all_isolated(cases, opt, [&](size_t i, CaseResult r, double secs) {
    if (r.ops.empty()) r.ops = scan_ops(cases[i].second);
    if (opt.verbose || r.outcome == Outcome::kFail) {
      std::string ops;
      for (const auto& o : r.ops) ops += (ops.empty() ? "" : ",") + o;
      std::printf("%-11s %-60s [%s] %.2fs%s%s\n", outcome_name(r.outcome), cases[i].first.c_str(), ops.c_str(), secs,
                  r.reason.empty() ? "" : "  ", r.reason.c_str());
      std::fflush(stdout);
    }
    results[i] = std::move(r);
  });
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& id = cases[i].first;
    const CaseResult& r = results[i];
    total.add(r.outcome);
    if (r.outcome == Outcome::kUnsupported) {
      for (const std::string& op : r.blamed) per_op[op].add(r.outcome);
      unsupported_cases.push_back({id, r});
    } else {
      for (const std::string& op : r.ops) per_op[op].add(r.outcome);
      if (r.outcome == Outcome::kFail) failures.push_back({id, r});
      if (r.outcome == Outcome::kSkipped) skipped_cases.push_back({id, r});
      if (!r.random_outputs.empty()) random_cases.push_back({id, r});
    }
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("\n%-36s %6s %6s %12s %8s\n", "op", "pass", "fail", "unsupported", "skipped");
  for (const auto& [op, c] : per_op)
    std::printf("%-36s %6d %6d %12d %8d\n", op.c_str(), c.pass, c.fail, c.unsupported, c.skipped);
  if (opt.list_unsupported) {
    std::printf("\nUnsupported cases (%zu):\n", unsupported_cases.size());
    for (const auto& [id, r] : unsupported_cases) std::printf("  %-60s %s\n", id.c_str(), r.reason.c_str());
  }
  if (!skipped_cases.empty()) {
    std::printf("\nSkipped cases (%zu):\n", skipped_cases.size());
    for (const auto& [id, r] : skipped_cases) std::printf("  %-60s %s\n", id.c_str(), r.reason.c_str());
  }
  if (!random_cases.empty()) {
    std::printf("\nChecked by the random-output rule, not by value (%zu; tests/conformance/random_outputs.h):\n",
                random_cases.size());
    for (const auto& [id, r] : random_cases) {
      std::string outs;
      for (const auto& o : r.random_outputs) outs += (outs.empty() ? "" : ", ") + o;
      std::printf("  %-60s %-11s %s\n", id.c_str(), outcome_name(r.outcome), outs.c_str());
    }
  }
  std::vector<std::string> looser;  // cases of this run that ran with a looser tolerance, and why
  for (const auto& [id, unused] : cases)
    if (auto it = kLooserTolerances.find(fs::path(id).filename().string()); it != kLooserTolerances.end())
      looser.push_back(fmt::format("  {:<60} atol {}: {}", id, it->second.atol, it->second.why));
  if (!looser.empty()) {
    std::printf("\nLooser tolerances (%zu; kLooserTolerances in tests/conformance/conformance_runner.cpp):\n", looser.size());
    for (const std::string& l : looser) std::printf("%s\n", l.c_str());
  }
  if (!failures.empty()) {
    std::printf("\nFailures (%zu):\n", failures.size());
    for (const auto& [id, r] : failures) {
      std::string ops;
      for (const auto& o : r.ops) ops += (ops.empty() ? "" : ",") + o;
      std::printf("  %-60s [%s] %s\n", id.c_str(), ops.c_str(), r.reason.c_str());
    }
  }
  std::printf("\ngraft_conformance: %zu cases in %.1fs: %d passed, %d failed, %d unsupported, %d skipped\n",
              cases.size(), elapsed, total.pass, total.fail, total.unsupported, total.skipped);
  return total.fail == 0 ? 0 : 1;
}
