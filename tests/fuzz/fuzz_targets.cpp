#include "tests/fuzz/fuzz_targets.h"

#include <map>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "graft/engine.h"
#include "graft/log.h"
#include "graft/op.h"
#include "graft/registry.h"
#include "io/tensor_io.h"
#include "plan/plan.h"
#include "plan/tactics.h"
#include "runtime/device_engine.h"

namespace graft::fuzz {
namespace {

// Whether an error's text keeps Status's rule: one line, except graft's own indented list lines
// ("\n  item"); no other control character (graft/status.h).
bool is_one_line(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 || c == 0x7f) && text.compare(i, 3, "\n  ") != 0) return false;
  }
  return true;
}

// Runs `body` (which fills the outcome) with the memory limit in place, and turns an exception
// that escaped graft (every API used here returns a Status) into a violation.
template <typename F>
Outcome guarded(F&& body) {
  Outcome out;
  try {
    MemoryLimit limit(kMemoryLimitBytes);
    body(out);
  } catch (const std::exception& e) {
    out.violation = std::string("an exception crossed a Status API: ") + e.what();
  } catch (...) {
    out.violation = "a non-standard exception crossed a Status API";
  }
  if (out.violation.empty() && !out.status.is_ok() && !is_one_line(out.status.to_string()))
    out.violation = "an error spans several lines: " + out.status.to_string();
  return out;
}

// Sets `out->violation` and returns false when `s` is an error spanning several lines (every
// error graft returns is one line; callers print it as is).
bool one_line(const Status& s, const char* what, Outcome* out) {
  if (s.is_ok() || is_one_line(s.to_string())) return true;
  out->violation = std::string(what) + ": an error spans several lines: " + s.to_string();
  return false;
}

// Inputs at the static dims, or at the profile's opt shape, filled with a small pattern; nullopt
// when an input has no concrete shape or is larger than the targets run (kMaxRunInputElements).
std::optional<std::map<std::string, Tensor>> run_inputs(const Engine& e) {
  std::map<std::string, Tensor> inputs;
  for (const IOInfo& in : e.inputs()) {
    const std::vector<int64_t> dims = in.profile ? in.profile->opt : in.static_dims;
    const auto n = checked_numel(dims);
    if (!n || *n > kMaxRunInputElements || static_cast<int64_t>(dims.size()) > kMaxRank) return std::nullopt;
    auto t = Tensor::allocate(in.dtype, dims);
    if (!t) return std::nullopt;
    for (int64_t i = 0; i < *n; ++i) t->set(i, static_cast<double>(i % 7));
    inputs[in.name] = std::move(t).value();
  }
  return inputs;
}

Status run_once(const Engine& e, const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>* outputs) {
  MemoryLimit run_limit(kMaxRunBytes);  // inside the target's limit; the outputs are counted too
  GRAFT_ASSIGN_OR_RETURN(auto ctx, e.create_context());
  GRAFT_RETURN_IF_ERROR(ctx->run(inputs, *outputs));
  for (const IOInfo& o : e.outputs())
    if (!outputs->count(o.name) || !(*outputs)[o.name].defined())
      return error(StatusCode::kInternal, "output '", o.name, "' missing after a successful run");
  return Status::ok();
}

// `text` with every "unk__<digits>" numbered by order of first appearance instead.
std::string without_unknown_dim_numbers(const std::string& text) {
  std::map<std::string, int> seen;
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 5, "unk__") == 0) {
      size_t j = i + 5;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
      const std::string name = text.substr(i, j - i);
      const int n = seen.emplace(name, static_cast<int>(seen.size())).first->second;
      out += "unk#" + std::to_string(n);
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Whether the engine draws fresh random values on every run: a random op (or Dropout, whose
// training mode draws) without a seed attribute. Its outputs differ from run to run by design, so
// only a deterministic engine's outputs must match its reloaded plan's bit for bit.
bool draws_fresh_values(const nlohmann::json& description) {
  static const char* const kRandom[] = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
                                        "Bernoulli",     "Multinomial",  "Dropout"};
  const auto layers = description.find("layers");
  if (layers == description.end() || !layers->is_array()) return false;
  for (const auto& l : *layers) {
    const auto op = l.find("op_type");
    const auto domain = l.find("domain");
    if (op == l.end() || !op->is_string() || (domain != l.end() && domain->is_string() && !domain->get<std::string>().empty()))
      continue;
    for (const char* r : kRandom) {
      if (op->get<std::string>() != r) continue;
      const auto attrs = l.find("attributes");
      if (attrs == l.end() || !attrs->is_object() || !attrs->contains("seed")) return true;
    }
  }
  return false;
}

// Everything a user can do with an engine: describe it, save it, load the plan back (which must
// work and give the same plan), run both on small inputs (same outputs, bit for bit, unless the
// engine draws fresh random values on every run).
void exercise(const Engine& e, Outcome* out) {
  const std::string json = e.describe_json();
  const nlohmann::json description = nlohmann::json::parse(json, nullptr, false);
  if (description.is_discarded()) {
    out->violation = "describe_json() is not valid JSON";
    return;
  }
  (void)e.describe();
  auto plan = e.serialize();
  if (!plan) {
    // Saving may only fail for want of memory; any other error means an engine that cannot be saved.
    if (plan.status().code() != StatusCode::kOutOfMemory)
      out->violation = "a built or loaded engine cannot be serialized: " + plan.status().to_string();
    return;
  }
  auto again = Engine::deserialize(*plan, "roundtrip.plan");
  if (!again) {
    if (again.status().code() != StatusCode::kOutOfMemory)
      out->violation = "the engine's own plan does not load: " + again.status().to_string();
    return;
  }
  // The reloaded engine is the same engine. Not byte for byte: dimensions that shape inference
  // cannot name (data-dependent ones) get fresh process-wide names (unk__N) at every load.
  if (without_unknown_dim_numbers((*again)->describe()) != without_unknown_dim_numbers(e.describe())) {
    out->violation = "the engine's reloaded plan describes another engine";
    return;
  }
  auto inputs = run_inputs(e);
  if (!inputs) return;
  std::map<std::string, Tensor> o1, o2;
  Status s1 = run_once(e, *inputs, &o1);
  if (!one_line(s1, "run", out)) return;
  Status s2 = run_once(**again, *inputs, &o2);
  if (!one_line(s2, "run of the reloaded plan", out)) return;
  if (s1.is_ok() != s2.is_ok()) {
    // Memory: the first engine's outputs are still held when the second runs.
    if (s1.code() != StatusCode::kOutOfMemory && s2.code() != StatusCode::kOutOfMemory)
      out->violation = "the engine and its reloaded plan disagree on running: '" + s1.to_string() + "' vs '" +
                       s2.to_string() + "'";
    return;
  }
  if (!s1.is_ok() || draws_fresh_values(description)) return;
  for (const auto& [name, t] : o1) {
    auto it = o2.find(name);
    if (it == o2.end() || !t.same_contents(it->second)) {
      out->violation = "output '" + name + "' differs between the engine and its reloaded plan";
      return;
    }
  }
}

std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace

void initialize() {
  set_log_level(LogLevel::kQuiet);
  (void)OpRegistry::global().all();  // registers graft's own custom ops
}

Outcome onnx_build(const uint8_t* data, size_t size) {
  return guarded([&](Outcome& out) {
    BuilderConfig config;
    // Dynamic dimensions become 1, as `graft build` does without --shapes.
    config.unspecified_shape = [](const IOInfo& in) -> Result<std::vector<int64_t>> {
      std::vector<int64_t> dims = in.static_dims;
      for (int64_t& d : dims)
        if (d < 0) d = 1;
      return dims;
    };
    // External data resolves against the model's directory: one that does not exist, so that what
    // an input reads never depends on the files where the fuzzer runs.
    auto e = Engine::build_from_onnx_bytes(as_string(data, size), config, "/nonexistent-graft-fuzz-dir/fuzz.onnx");
    out.status = e.status();
    if (e) exercise(**e, &out);
  });
}

Outcome plan_load(const uint8_t* data, size_t size) {
  return guarded([&](Outcome& out) {
    auto e = Engine::deserialize(as_string(data, size), "fuzz.plan");
    out.status = e.status();
    if (e) exercise(**e, &out);
  });
}

Outcome plan_payload_load(const uint8_t* data, size_t size) {
  return guarded([&](Outcome& out) {
    auto st = read_plan_payload(as_string(data, size), "fuzz.plan");
    if (!st) {
      out.status = st.status();
      return;
    }
    auto e = make_engine_for_device(std::move(st).value(), nullptr);
    out.status = e.status();
    if (e) exercise(**e, &out);
  });
}

Outcome timing_cache_parse(const uint8_t* data, size_t size) {
  return guarded([&](Outcome& out) {
    auto t = TacticTable::parse_cache(as_string(data, size), "fuzz.cache");
    out.status = t.status();
    if (!t) return;
    // What was read is written and read back unchanged.
    auto back = TacticTable::from_json(t->to_json(), "round trip");
    if (!back) {
      out.violation = "a parsed timing cache does not read back: " + back.status().to_string();
      return;
    }
    if (back->size() != t->size()) {
      out.violation = "the timing cache round trip changed the number of entries";
      return;
    }
    const auto a = t->snapshot(), b = back->snapshot();
    for (const auto& [key, tactic] : a) {
      auto it = b.find(key);
      if (it == b.end() || it->second.algo != tactic.algo || it->second.variant != tactic.variant) {
        out.violation = "the timing cache round trip changed an entry";
        return;
      }
    }
  });
}

Outcome tensor_file_read(const uint8_t* data, size_t size) {
  return guarded([&](Outcome& out) {
    const std::string bytes = as_string(data, size);
    auto npy = io::parse_npy(bytes, "fuzz.npy");
    if (!one_line(npy.status(), ".npy", &out)) return;
    if (npy) {
      auto encoded = io::encode_npy(*npy);
      if (encoded) {
        auto back = io::parse_npy(*encoded, "roundtrip.npy");
        if (!back || !back->same_contents(*npy)) {
          out.violation = "a .npy tensor does not survive a write and read";
          return;
        }
      } else if (encoded.status().code() != StatusCode::kOutOfMemory && npy->dtype() != DataType::kBFloat16) {
        out.violation = "a .npy tensor that reads cannot be written: " + encoded.status().to_string();
        return;
      }
    }
    auto pb = io::parse_tensor_pb(bytes, "fuzz.pb");
    // The outcome is the reader the bytes are meant for: .npy when they start with its magic.
    out.status = bytes.rfind("\x93NUMPY", 0) == 0 ? npy.status() : pb.status();
    if (!one_line(pb.status(), ".pb", &out)) return;
    if (pb) {
      auto encoded = io::encode_tensor_pb(pb->tensor, pb->name);
      if (encoded) {
        auto back = io::parse_tensor_pb(*encoded, "roundtrip.pb");
        if (!back || back->name != pb->name || !back->tensor.same_contents(pb->tensor)) {
          out.violation = "a .pb tensor does not survive a write and read";
          return;
        }
      } else if (encoded.status().code() != StatusCode::kOutOfMemory) {
        out.violation = "a .pb tensor that reads cannot be written: " + encoded.status().to_string();
        return;
      }
    }
  });
}

Outcome attributes_validate(const uint8_t* data, size_t size) {
  return guarded([&](Outcome& out) {
    auto attrs = deserialize_attributes(as_string(data, size));
    out.status = attrs.status();
    if (!attrs) return;
    // Serialized and read back, the attributes serialize to the same text.
    const std::string text = serialize_attributes(*attrs);
    auto back = deserialize_attributes(text);
    if (!back) {
      out.violation = "serialized attributes do not read back: " + back.status().to_string();
      return;
    }
    if (serialize_attributes(*back) != text) {
      out.violation = "the attribute round trip changed them";
      return;
    }
    for (const RegisteredOp& op : OpRegistry::global().all()) {
      AttributeMap a = *attrs;
      Status v = op.def->validate_attributes(a);
      if (!one_line(v, "validate_attributes", &out)) return;
      if (!v) continue;
      for (const OpDef::Example& ex : op.def->examples()) {
        auto shapes = infer_concrete_shapes(*op.def, ex.input_dims, a);
        if (!one_line(shapes.status(), "infer_concrete_shapes", &out)) return;
      }
    }
  });
}

}  // namespace graft::fuzz
