// RegexFullMatch (opset 20) on the CPU engine: y[i] is true when the whole of X[i] matches `pattern`,
// a regular expression in RE2's syntax, as ONNX specifies. RE2 (Debian's libre2) matches in time
// linear in the text, so no pattern a model carries can make a run hang. Inference compiles the
// pattern, so a bad one fails when the model is built, naming the attribute. Runs take the compiled
// pattern from a small process-wide cache (compiling costs far more than matching a short string,
// and run-time inference asks for it too). Text is read as UTF-8 (RE2's default); text that is not
// UTF-8 is matched byte by byte as RE2 does with such input.
#include <re2/re2.h>

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

using namespace infer;

// The node's pattern, compiled; errors name the attribute and quote RE2's message. The compiled
// patterns are shared by every node, run and thread naming the same one (a const RE2 may be matched
// from many threads at once); the cache keeps the kCachedPatterns most recently used and never keeps
// a pattern that failed to compile, so it stays bounded whatever patterns a process meets.
Result<std::shared_ptr<const RE2>> compiled_pattern(const AttributeMap& attrs) {
  constexpr size_t kCachedPatterns = 32;
  static std::mutex mutex;
  static std::list<std::pair<std::string, std::shared_ptr<const RE2>>> recent;  // most recent first
  if (!attrs.has("pattern")) return attr_error("pattern", "is required (a regular expression in RE2's syntax)");
  auto p = attrs.get_string("pattern", "");
  if (!p) return Status(p.status()).with_attribute("pattern");
  const std::string& pattern = p.value();
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = recent.begin(); it != recent.end(); ++it)
    if (it->first == pattern) {
      recent.splice(recent.begin(), recent, it);
      return recent.front().second;
    }
  RE2::Options options;
  options.set_log_errors(false);  // the error goes into the Status instead of stderr
  auto re = std::make_shared<const RE2>(pattern, options);
  if (!re->ok()) return attr_error("pattern", "is not a valid RE2 regular expression ('", pattern, "'): ", re->error());
  recent.emplace_front(pattern, re);
  if (recent.size() > kCachedPatterns) recent.pop_back();
  return std::shared_ptr<const RE2>(std::move(re));
}

Status infer_regex_full_match(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {DataType::kString}));
  GRAFT_RETURN_IF_ERROR(compiled_pattern(ctx.attrs()).status());
  ctx.set_output(0, desc_of(DataType::kBool, ctx.input(0).shape));
  return Status::ok();
}

Status regex_full_match(ExecContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "RegexFullMatch called without its input or output");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.dtype() != DataType::kString || y.dtype() != DataType::kBool || y.numel() != x.numel())
    return error(StatusCode::kInvalidArgument, "RegexFullMatch takes a string tensor and makes a bool one of its size, got ",
                 dtype_name(x.dtype()));
  GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<const RE2> re, compiled_pattern(*ctx.attrs));
  const auto* in = x.data_as<std::string>();
  auto* out = static_cast<uint8_t*>(y.data());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) out[i] = RE2::FullMatch(in[i], *re) ? 1 : 0;
  return Status::ok();
}

}  // namespace

void append_regex_full_match_ops(std::vector<OpEntry>& out) {
  out.push_back(takes_strings({"RegexFullMatch", 20, infer_regex_full_match, regex_full_match}));
}

}  // namespace graft
