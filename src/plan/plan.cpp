#include "plan/plan.h"

#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/checked_math.h"
#include "core/json_checked.h"
#include "graft/registry.h"
#include "graph/passes.h"
#include "io/tensor_io.h"
#include "onnx/importer.h"
#include "ops/custom_kernel_call.h"
#include "ops/internal_ops.h"

#ifndef GRAFT_VERSION
#define GRAFT_VERSION "0.0.0"
#endif

namespace graft {

const char* version_string() { return GRAFT_VERSION; }

namespace {

// Whether the graph holds internal ops, which graft before plan format 5 kept in the default domain.
bool graph_has_internal_ops(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->domain == kInternalDomain) return true;
  return false;
}

// Whether an internal op uses an attribute that graft before plan format 6 would ignore.
bool graph_needs_format6(const Graph& g) {
  for (const auto& n : g.nodes()) {
    if (is_internal(*n, "GraftConv") && n->attrs.has("input_activation")) return true;
    if (is_internal(*n, "GraftChannelsLast") && n->attrs.has("block")) return true;
  }
  return false;
}

// A custom-op node the CUDA builder kept channels-last (kChannelsLastIoAttr): graft before format 7
// would run it on NCHW views of NHWC data.
bool graph_needs_format7(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->attrs.has(kChannelsLastIoAttr)) return true;
  return false;
}



}  // namespace

namespace {

template <typename T>
void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

struct Reader {
  const std::string& s;
  size_t pos = 0;
  template <typename T>
  bool get(T* v) {
    if (s.size() - pos < sizeof(T)) return false;
    std::memcpy(v, s.data() + pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }
  bool bytes(size_t n, std::string* out) {
    if (s.size() - pos < n) return false;
    out->assign(s.data() + pos, n);
    pos += n;
    return true;
  }
};

// CRC32 (zlib) of `bytes`, continuing from `crc` (that of the bytes before them).
uint32_t crc_of(uint32_t crc, const char* data, size_t size) {
  uLong c = crc;
  // zlib takes uInt lengths: feed large payloads in chunks.
  size_t pos = 0;
  while (pos < size) {
    size_t n = std::min<size_t>(size - pos, 1u << 30);
    c = crc32(c, reinterpret_cast<const Bytef*>(data + pos), static_cast<uInt>(n));
    pos += n;
  }
  return static_cast<uint32_t>(c);
}
uint32_t crc_of(uint32_t crc, const std::string& bytes) { return crc_of(crc, bytes.data(), bytes.size()); }
uint32_t crc_of(const std::string& bytes) { return crc_of(static_cast<uint32_t>(crc32(0L, Z_NULL, 0)), bytes); }

nlohmann::json range_json(const ProfileRange& r) { return {{"min", r.min}, {"opt", r.opt}, {"max", r.max}}; }

// A plan's profiles are data from a file: each range must name a graph input, match its rank,
// satisfy 0 <= min <= opt <= max, agree with the input's fixed dims, and have a max shape whose byte
// count fits in int64 (inputs are allocated at opt or max shapes by callers); every profile names
// the inputs profile 0 names (the builder writes them so).
Status check_plan_range(const EngineState& st, size_t k, const std::string& input, const ProfileRange& r,
                        const std::string& name) {
  const Value* v = nullptr;
  for (const Value* in : st.graph->inputs())
    if (in->name == input) v = in;
  const std::string which = st.profiles.size() == 1 ? std::string("profile") : "profile " + std::to_string(k);
  auto fail = [&](auto&&... parts) {
    return error(StatusCode::kCorruptPlan, "the plan's ", which, " for input '", input, "' ", parts...).with_file(name);
  };
  // Equal sizes and each of profile k's inputs in profile 0: the same inputs.
  if (k > 0 && (!st.profiles[0].count(input) || st.profiles[0].size() != st.profiles[k].size()))
    return fail("does not match profile 0's inputs: every profile must name the same inputs");
  if (!v) return fail("names no input of the graph");
  const Shape& s = *v->desc.shape;
  if (r.min.size() != s.size() || r.opt.size() != s.size() || r.max.size() != s.size())
    return fail("has ranks ", static_cast<uint64_t>(r.min.size()), "/", static_cast<uint64_t>(r.opt.size()), "/",
                static_cast<uint64_t>(r.max.size()), " but the input has shape ", shape_to_string(s));
  for (size_t i = 0; i < s.size(); ++i) {
    if (!(0 <= r.min[i] && r.min[i] <= r.opt[i] && r.opt[i] <= r.max[i]))
      return fail("dimension ", static_cast<uint64_t>(i), " needs 0 <= min <= opt <= max, got min ", r.min[i],
                  " opt ", r.opt[i], " max ", r.max[i]);
    if (s[i].is_const() && (r.min[i] != s[i].value() || r.max[i] != s[i].value()))
      return fail("dimension ", static_cast<uint64_t>(i), " does not match the fixed extent ", s[i].value());
  }
  Status shape_ok = check_concrete_shape(r.max, v->desc.dtype, "max shape");
  if (!shape_ok) return fail(shape_ok.message());
  return Status::ok();
}

Status check_plan_profiles(const EngineState& st, const std::string& name) {
  if (st.profiles.empty()) return error(StatusCode::kCorruptPlan, "the plan has no optimization profile").with_file(name);
  for (size_t k = 0; k < st.profiles.size(); ++k)
    for (const auto& [input, r] : st.profiles[k]) GRAFT_RETURN_IF_ERROR(check_plan_range(st, k, input, r, name));
  return Status::ok();
}

}  // namespace

namespace {
Result<std::string> write_plan_bytes_impl(const EngineState& state);
}  // namespace

// A default-domain node with an internal op's name comes only from graft's passes (a model's is an
// unknown op at import, so no plan could have been built from it).
void move_internal_ops_to_their_domain(onnx::GraphProto* gp) {
  for (auto& np : *gp->mutable_node())
    if ((np.domain().empty() || np.domain() == "ai.onnx") && is_internal_op(np.op_type())) np.set_domain(kInternalDomain);
}

Result<std::string> write_plan_bytes(const EngineState& state) {
  // No exception may leave this Status API: JSON and protobuf work can throw (bad_alloc, json errors).
  try {
    return write_plan_bytes_impl(state);
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kOutOfMemory, "out of memory serializing the plan");
  } catch (const std::exception& e) {
    return error(StatusCode::kInternal, "could not serialize the plan: ", e.what());
  }
}

namespace {
Result<std::string> write_plan_bytes_impl(const EngineState& state) {
  onnx::ModelProto model;
  GRAFT_RETURN_IF_ERROR(export_onnx_model(*state.graph, &model));
  std::string model_bytes;
  if (!model.SerializeToString(&model_bytes))
    return error(StatusCode::kInternal, "could not serialize the graph (over 2 GiB?)");
  nlohmann::json j;
  j["graft_version"] = version_string();
  j["device"] = device_name(state.device);
  j["fp16"] = state.fp16;
  j["source"] = state.source;
  if (state.device == DeviceType::kCUDA) {
    j["cuda"] = {{"compute_capability", state.cuda_compute_capability},
                 {"device_name", state.cuda_device_name},
                 {"cuda_graphs", state.cuda_graphs}};
  }
  // One profile: format 2's object, so older graft still reads the plan. Several: format 3's array.
  const bool several = state.profiles.size() > 1;
  auto profile_json = [](const OptimizationProfile& p) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [name, r] : p) o[name] = range_json(r);
    return o;
  };
  if (several) {
    j["profiles"] = nlohmann::json::array();
    for (const OptimizationProfile& p : state.profiles) j["profiles"].push_back(profile_json(p));
  } else {
    j["profiles"] = state.profiles.empty() ? nlohmann::json::object() : profile_json(state.profiles[0]);
  }
  if (state.tactics && state.tactics->size()) j["tactics"] = nlohmann::json::parse(state.tactics->to_json());
  if (state.tactics && !state.tactics->layers().empty())
    j["tactic_layers"] = nlohmann::json::parse(state.tactics->layers_json());
  j["inputs"] = nlohmann::json::array();
  for (const Value* v : state.graph->inputs()) j["inputs"].push_back({{"name", v->name}, {"desc", v->desc.to_string()}});
  j["outputs"] = nlohmann::json::array();
  for (const Value* v : state.graph->outputs()) j["outputs"].push_back({{"name", v->name}, {"desc", v->desc.to_string()}});
  // Names are valid UTF-8 (the importer checks them); the source path is the user's file name,
  // which on Linux may be any bytes: replace invalid sequences rather than throw out of this Status
  // API (nlohmann-json's type_error 316). The source is informational only.
  std::string json_text;
  try {
    json_text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return error(StatusCode::kInternal, "could not write the plan's JSON section: ", e.what());
  }

  std::string payload;
  put<uint64_t>(payload, model_bytes.size());
  payload += model_bytes;
  put<uint64_t>(payload, json_text.size());
  payload += json_text;

  std::string out(kPlanMagic, sizeof kPlanMagic);
  put<uint32_t>(out, graph_needs_format7(*state.graph)      ? kPlanFormatVersion
                     : graph_needs_format6(*state.graph)    ? kPlanFormatVersionInternalAttrs
                     : graph_has_internal_ops(*state.graph) ? kPlanFormatVersionInternalDomain
                     : several                              ? kPlanFormatVersionProfiles
                                                            : kPlanFormatVersionOneProfile);
  std::string ver = version_string();
  put<uint32_t>(out, static_cast<uint32_t>(ver.size()));
  out += ver;
  put<uint64_t>(out, payload.size());
  // Formats 2 and 3: the checksum covers every byte of the file but its own four (format 1 left the header,
  // and so the writer's version string, outside it).
  put<uint32_t>(out, crc_of(crc_of(out), payload));
  out += payload;
  return out;
}
}  // namespace

namespace {
Result<EngineState> read_plan_bytes_impl(const std::string& bytes, const std::string& name);
Result<EngineState> read_plan_payload_impl(const std::string& payload, const std::string& name);
}  // namespace

Result<EngineState> read_plan_bytes(const std::string& bytes, const std::string& name) {
  // A plan is untrusted input: nothing thrown while reading it (bad_alloc, a library's exception)
  // may leave this Status API.
  try {
    return read_plan_bytes_impl(bytes, name);
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kOutOfMemory, "out of memory loading the plan").with_file(name);
  } catch (const std::exception& e) {
    return error(StatusCode::kCorruptPlan, "the plan cannot be read: ", e.what()).with_file(name);
  }
}

namespace {
Result<EngineState> read_plan_bytes_impl(const std::string& bytes, const std::string& name) {
  auto fail = [&](StatusCode c, auto&&... parts) { return error(c, parts...).with_file(name); };
  const size_t magic_n = sizeof kPlanMagic;
  if (bytes.size() < magic_n) {
    if (!bytes.empty() && std::memcmp(bytes.data(), kPlanMagic, bytes.size()) == 0)
      return fail(StatusCode::kCorruptPlan, "the plan is truncated (", static_cast<uint64_t>(bytes.size()), " bytes)");
    return fail(StatusCode::kCorruptPlan, "not a graft plan (bad magic; expected a file written by graft build)");
  }
  if (std::memcmp(bytes.data(), kPlanMagic, magic_n) != 0)
    return fail(StatusCode::kCorruptPlan, "not a graft plan (bad magic; expected a file written by graft build)");
  Reader r{bytes, magic_n};
  uint32_t format = 0, ver_len = 0, crc = 0;
  uint64_t payload_len = 0;
  std::string writer_version;
  if (!r.get(&format)) return fail(StatusCode::kCorruptPlan, "the plan is truncated (in its header)");
  if (format != kPlanFormatVersion && format != kPlanFormatVersionInternalAttrs &&
      format != kPlanFormatVersionInternalDomain &&
      format != kPlanFormatVersionViewChains && format != kPlanFormatVersionProfiles &&
      format != kPlanFormatVersionOneProfile && format != kPlanFormatVersionPayloadCrc) {
    // The writer's version is outside any checksum here: only printable ASCII is shown.
    std::string by;
    if (r.get(&ver_len) && ver_len < 256 && r.bytes(ver_len, &writer_version) &&
        std::all_of(writer_version.begin(), writer_version.end(), [](char c) { return c >= 0x20 && c < 0x7f; }))
      by = " by graft " + writer_version;
    return fail(StatusCode::kCorruptPlan, "plan format version ", static_cast<uint64_t>(format), " (written",
                by.empty() ? std::string(" by another graft") : by, ") cannot be read: this graft (",
                version_string(), ") reads plan format versions ", static_cast<uint64_t>(kPlanFormatVersionPayloadCrc),
                " to ", static_cast<uint64_t>(kPlanFormatVersion), "; rebuild the plan from the ONNX model");
  }
  if (!r.get(&ver_len) || ver_len > 256 || !r.bytes(ver_len, &writer_version) || !r.get(&payload_len))
    return fail(StatusCode::kCorruptPlan, "the plan is truncated (in its header)");
  const size_t crc_pos = r.pos;
  if (!r.get(&crc)) return fail(StatusCode::kCorruptPlan, "the plan is truncated (in its header)");
  const size_t remaining = bytes.size() - r.pos;
  if (payload_len > remaining)
    return fail(StatusCode::kCorruptPlan, "the plan is truncated: its payload should be ", payload_len,
                " bytes but only ", static_cast<uint64_t>(remaining), " are present");
  if (payload_len < remaining)
    return fail(StatusCode::kCorruptPlan, "the plan has ", static_cast<uint64_t>(remaining - payload_len),
                " unexpected trailing bytes (corrupted)");
  std::string payload = bytes.substr(r.pos);
  // Formats 2 and 3 check every byte but the checksum's own; format 1 (still read) checked the payload only.
  const uint32_t expected = format != kPlanFormatVersionPayloadCrc
                                ? crc_of(crc_of(bytes.substr(0, crc_pos)), payload)
                                : crc_of(payload);
  if (expected != crc) return fail(StatusCode::kCorruptPlan, "the plan is corrupted: checksum mismatch");
  auto st = read_plan_payload(payload, name);
  // Several profiles are format 3's (or 4's): an older format claiming them is not what graft writes.
  if (st && format < kPlanFormatVersionProfiles && st->profiles.size() > 1)
    return fail(StatusCode::kCorruptPlan, "the plan is format ", static_cast<uint64_t>(format), " but has ",
                static_cast<uint64_t>(st->profiles.size()), " optimization profiles, which need format ",
                static_cast<uint64_t>(kPlanFormatVersionProfiles));
  return st;
}
}  // namespace

Result<EngineState> read_plan_payload(const std::string& payload, const std::string& name) {
  try {
    return read_plan_payload_impl(payload, name);
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kOutOfMemory, "out of memory loading the plan").with_file(name);
  } catch (const std::exception& e) {
    return error(StatusCode::kCorruptPlan, "the plan cannot be read: ", e.what()).with_file(name);
  }
}

namespace {
Result<EngineState> read_plan_payload_impl(const std::string& payload, const std::string& name) {
  auto fail = [&](StatusCode c, auto&&... parts) { return error(c, parts...).with_file(name); };
  Reader p{payload};
  uint64_t model_len = 0, json_len = 0;
  std::string model_bytes, json_text;
  if (!p.get(&model_len) || !p.bytes(model_len, &model_bytes) || !p.get(&json_len) || !p.bytes(json_len, &json_text))
    return fail(StatusCode::kCorruptPlan, "the plan's payload is malformed");

  onnx::ModelProto model;
  if (!model.ParseFromString(model_bytes))
    return fail(StatusCode::kCorruptPlan, "the plan's graph section does not parse");
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(StatusCode::kCorruptPlan, "the plan's JSON section does not parse");

  // Custom ops first, so a missing plugin gets its own precise message.
  GRAFT_RETURN_IF_ERROR(register_graft_ops(OpRegistry::global()));
  std::set<std::string> reported;
  move_internal_ops_to_their_domain(model.mutable_graph());
  for (const auto& np : model.graph().node()) {
    if (np.domain().empty() || np.domain() == "ai.onnx" || np.domain() == kInternalDomain) continue;
    std::string version = "1", ns;
    for (const auto& a : np.attribute()) {
      if (a.name() == "plugin_version") version = a.s();
      if (a.name() == "plugin_namespace") ns = a.s();
    }
    if (!OpRegistry::global().find(np.domain(), np.op_type(), version, ns))
      return fail(StatusCode::kNotFound, "op ", np.op_type(), " (domain ", np.domain(), ", version ", version,
                  ", namespace '", ns, "') is not registered: load the plugin library that defines it before the plan")
          .with_node(np.name(), np.op_type());
  }

  // No base directory: a plan embeds every weight, so an external-data reference in a plan is refused
  // rather than resolved against the current directory.
  auto g = import_onnx_model(model, name, "");
  if (!g) return std::move(g).take_status();
  EngineState st;
  st.graph = std::move(g).value();
  try {
    st.fp16 = j.value("fp16", false);
    st.source = j.value("source", std::string());
    // An unknown device ("tpu", a typo, a corrupted byte) is refused: loading it as CPU would run a
    // plan built for something else.
    const std::string device = j.value("device", std::string("cpu"));
    if (device == "cpu") st.device = DeviceType::kCPU;
    else if (device == "cuda") st.device = DeviceType::kCUDA;
    else
      return fail(StatusCode::kCorruptPlan, "the plan is for device '", device,
                  "', which graft does not know (expected 'cpu' or 'cuda')");
    if (j.contains("cuda") && j["cuda"].is_object()) {
      const nlohmann::json& cuda = j["cuda"];
      if (cuda.contains("compute_capability") &&
          !json_checked::get_int(cuda["compute_capability"], &st.cuda_compute_capability))
        return fail(StatusCode::kCorruptPlan, "the plan's CUDA compute capability is malformed");
      st.cuda_device_name = cuda.value("device_name", std::string());
      st.cuda_graphs = cuda.value("cuda_graphs", true);
    }
    if (j.contains("profiles")) {
      // Format 3: an array of profiles; formats 1 and 2: one profile as an object.
      const nlohmann::json& all = j["profiles"];
      if (!all.is_object() && !(all.is_array() && !all.empty()))
        return fail(StatusCode::kCorruptPlan, "the plan's profiles are malformed");
      const bool several = all.is_array();
      st.profiles.assign(several ? all.size() : 1, OptimizationProfile{});
      for (size_t k = 0; k < st.profiles.size(); ++k) {
        const nlohmann::json& one = several ? all[k] : all;
        if (!one.is_object())
          return fail(StatusCode::kCorruptPlan, "the plan's profile ", static_cast<uint64_t>(k), " is malformed");
        for (auto it = one.begin(); it != one.end(); ++it) {
          // Numbers from the file: integers in int64's range only (a float's conversion could be UB).
          ProfileRange pr;
          const nlohmann::json& r = it.value();
          if (!r.is_object() || !r.contains("min") || !r.contains("opt") || !r.contains("max") ||
              !json_checked::get_int_vector(r["min"], &pr.min) || !json_checked::get_int_vector(r["opt"], &pr.opt) ||
              !json_checked::get_int_vector(r["max"], &pr.max))
            return fail(StatusCode::kCorruptPlan, "the plan's profile ", several ? std::to_string(k) + " " : "",
                        "for input '", it.key(), "' is malformed");
          st.profiles[k][it.key()] = pr;
        }
      }
    }
    if (j.contains("tactics")) {
      auto t = TacticTable::from_json(j["tactics"].dump(), "the plan's tactics");
      if (!t) return fail(StatusCode::kCorruptPlan, t.status().message());
      st.tactics = std::make_shared<TacticTable>(*t);
    }
    if (j.contains("tactic_layers")) {
      if (!st.tactics) st.tactics = std::make_shared<TacticTable>();
      Status s = st.tactics->read_layers_json(j["tactic_layers"].dump(), "the plan's tactic layers");
      if (!s) return fail(StatusCode::kCorruptPlan, s.message());
    }
  } catch (const std::exception& e) {
    return fail(StatusCode::kCorruptPlan, "the plan's JSON section is malformed: ", e.what());
  }
  GRAFT_RETURN_IF_ERROR(check_plan_profiles(st, name));
  Status s = infer_shapes(*st.graph);
  if (!s) return s.with_file(name);
  return st;
}
}  // namespace

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return error(StatusCode::kIoError, "directory '", dir.string(), "' does not exist").with_file(path);
  return io::write_file_atomic(path, bytes);  // temporary file in the same directory, fsync, rename
}

}  // namespace graft
