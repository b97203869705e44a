// StringConcat and StringSplit (opset 20) on the CPU engine, where string tensors live: their schemas
// and CPU references.
//
// StringConcat joins X[i] and Y[i] byte for byte, with numpy broadcasting.
//
// StringSplit splits each string as Python's str.split does (onnx.reference runs numpy.char.split):
// - with a delimiter, on every occurrence of it: "a,,b" gives "a", "", "b", and "" gives one "";
// - without one (unset or ""), on runs of whitespace, leading and trailing whitespace dropped: "" and
//   "  " give nothing. Whitespace is what Python's str.isspace calls so: space, \t to \r, \x1c to
//   \x1f and the Unicode spaces (no-break space, the ideographic space, ...), found in UTF-8 text;
// - maxsplit splits at most that many times from the left; the rest is the last substring, as it is.
// Output Y is X's shape plus one axis as long as the most substrings any element gave, padded with
// empty strings; Z (int64, X's shape) counts each element's substrings. Y's last extent is known only
// after the kernel has split, so the kernel sizes it.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/broadcast_walker.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

using namespace infer;

// ---- StringConcat ---------------------------------------------------------------------------

Status infer_string_concat(InferContext& ctx) { return infer_broadcast_binary(ctx, {DataType::kString}); }

Status string_concat(ExecContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[0] || !ctx.inputs[1] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "StringConcat called without its inputs or output");
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.inputs[1];
  Tensor& z = *ctx.outputs[0];
  if (x.dtype() != DataType::kString || y.dtype() != DataType::kString || z.dtype() != DataType::kString)
    return error(StatusCode::kInvalidArgument, "StringConcat takes and makes string tensors, got ", dtype_name(x.dtype()),
                 " and ", dtype_name(y.dtype()));
  GRAFT_ASSIGN_OR_RETURN(cpu::detail::BroadcastWalker w, cpu::detail::BroadcastWalker::make(z.dims(), {x.dims(), y.dims()}));
  const auto* a = x.data_as<std::string>();
  const auto* b = y.data_as<std::string>();
  auto* out = z.data_as<std::string>();
  for (int64_t i = 0, n = z.numel(); i < n; ++i, w.next()) out[i] = a[w.offset(0)] + b[w.offset(1)];
  return Status::ok();
}

// ---- StringSplit ----------------------------------------------------------------------------

struct SplitAttrs {
  std::string delimiter;  // empty: runs of whitespace
  int64_t maxsplit = -1;  // negative: no limit
};

Result<SplitAttrs> split_attrs(const AttributeMap& attrs) {
  SplitAttrs a;
  auto d = attrs.get_string("delimiter", "");
  if (!d) return Status(d.status()).with_attribute("delimiter");
  a.delimiter = d.value();
  if (attrs.has("maxsplit")) {
    auto m = attrs.get_int("maxsplit", -1);
    if (!m) return Status(m.status()).with_attribute("maxsplit");
    if (m.value() < 0) return attr_error("maxsplit", "must be >= 0 when given, got ", m.value());
    a.maxsplit = m.value();
  }
  return a;
}

// The byte length of the whitespace character at s[i], or 0: Python's str.isspace set, the ASCII
// ones (space, \t to \r, \x1c to \x1f) and the Unicode ones, matched by their UTF-8 encodings
// (U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
size_t space_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = b(0);
  if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
  if (c == 0xC2 && (b(1) == 0x85 || b(1) == 0xA0)) return 2;
  if (c == 0xE1 && b(1) == 0x9A && b(2) == 0x80) return 3;
  if (c == 0xE2 && b(1) == 0x80 && (b(2) <= 0x8A ? b(2) >= 0x80 : (b(2) == 0xA8 || b(2) == 0xA9 || b(2) == 0xAF)))
    return 3;
  if (c == 0xE2 && b(1) == 0x81 && b(2) == 0x9F) return 3;
  if (c == 0xE3 && b(1) == 0x80 && b(2) == 0x80) return 3;
  return 0;
}

std::vector<std::string> split_one(std::string_view s, const SplitAttrs& a) {
  std::vector<std::string> parts;
  int64_t splits = 0;
  const auto room = [&] { return a.maxsplit < 0 || splits < a.maxsplit; };
  if (!a.delimiter.empty()) {
    size_t start = 0;
    for (size_t at; room() && (at = s.find(a.delimiter, start)) != std::string_view::npos; ++splits) {
      parts.emplace_back(s.substr(start, at - start));
      start = at + a.delimiter.size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  const auto skip_spaces = [&](size_t i) {
    for (size_t k; i < s.size() && (k = space_at(s, i)) > 0;) i += k;
    return i;
  };
  size_t i = skip_spaces(0);
  while (i < s.size()) {
    if (!room()) {  // the rest, as it is (trailing whitespace included, as Python keeps it)
      parts.emplace_back(s.substr(i));
      break;
    }
    size_t end = i;
    while (end < s.size() && space_at(s, end) == 0) ++end;
    parts.emplace_back(s.substr(i, end - i));
    ++splits;
    i = skip_spaces(end);
  }
  return parts;
}

Status infer_string_split(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {DataType::kString}));
  GRAFT_RETURN_IF_ERROR(split_attrs(ctx.attrs()).status());
  const TensorDesc& x = ctx.input(0);
  std::optional<Shape> y;
  if (x.shape) {
    y = *x.shape;
    y->push_back(ctx.unknown_dim());  // the most substrings of any element: known after the split
  }
  ctx.set_output(0, desc_of(DataType::kString, y));
  if (ctx.num_outputs() > 1) ctx.set_output(1, desc_of(DataType::kInt64, x.shape));
  return Status::ok();
}

Status string_split(ExecContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty())
    return error(StatusCode::kInternal, "StringSplit called without its input or outputs");
  const Tensor& x = *ctx.inputs[0];
  if (x.dtype() != DataType::kString)
    return error(StatusCode::kInvalidArgument, "StringSplit takes a string tensor, got ", dtype_name(x.dtype()));
  GRAFT_ASSIGN_OR_RETURN(SplitAttrs a, split_attrs(*ctx.attrs));
  const auto* in = x.data_as<std::string>();
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
  int64_t most = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    parts[static_cast<size_t>(i)] = split_one(in[i], a);
    most = std::max<int64_t>(most, static_cast<int64_t>(parts[static_cast<size_t>(i)].size()));
  }
  std::vector<int64_t> y_dims = x.dims();
  y_dims.push_back(most);
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, DataType::kString, y_dims));
  auto* out = y->data_as<std::string>();
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t k = 0; k < static_cast<size_t>(most); ++k)  // padded with empty strings
      out[i * static_cast<size_t>(most) + k] = k < parts[i].size() ? std::move(parts[i][k]) : std::string();
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) {
    GRAFT_ASSIGN_OR_RETURN(Tensor * z, allocate_output(ctx, 1, DataType::kInt64, x.dims()));
    for (size_t i = 0; i < parts.size(); ++i) z->data_as<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
  }
  return Status::ok();
}

}  // namespace

void append_string_concat_split_ops(std::vector<OpEntry>& out) {
  out.push_back(takes_strings({"StringConcat", 20, infer_string_concat, string_concat}));
  out.push_back(takes_strings({"StringSplit", 20, infer_string_split, string_split, /*output_shape_from_kernel=*/true}));
}

}  // namespace graft
