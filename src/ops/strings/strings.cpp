// String tensors on the CPU engine: the text conversions of Cast and CastLike (strings.h), and
// StringNormalizer (opset 10) with its attribute reader, inference and CPU reference.
//
// StringNormalizer takes a string tensor [C] or [1, C], drops the stopwords (compared after
// lower-casing both sides unless is_case_sensitive is 1), then changes the case of what is left
// (case_change_action LOWER, UPPER or NONE). When every element is dropped the output is one empty
// string ([1] or [1, 1]), as ONNX specifies. Case is mapped by Unicode's locale-independent simple
// case mapping (glibc's C.UTF-8 tables), whatever the `locale` attribute says, so a model gives the
// same output on every machine; text that is not UTF-8 is refused when its case has to change.
#include "ops/strings/strings.h"

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// ---- Cast to and from text ------------------------------------------------------------------

std::string float_text(double v, bool single) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-INF" : "INF";
  char buf[64];
  const auto r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                        : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

bool equals_lower(std::string_view s, std::string_view lower) {
  return s.size() == lower.size() &&
         std::equal(s.begin(), s.end(), lower.begin(), [](char a, char b) {
           return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
         });
}

// The sign of `s` taken off (*negative set); false for "", "+", "--1" and the like.
bool take_sign(std::string_view* s, bool* negative) {
  *negative = false;
  if (!s->empty() && ((*s)[0] == '+' || (*s)[0] == '-')) {
    *negative = (*s)[0] == '-';
    s->remove_prefix(1);
  }
  return !s->empty() && (*s)[0] != '+' && (*s)[0] != '-';
}

// Text as a floating-point value of type F (float or double), rounded once; nullopt when it is
// not a number.
template <typename F>
std::optional<F> parse_float(const std::string& text) {
  std::string_view s(text);
  bool negative = false;
  if (!take_sign(&s, &negative)) return std::nullopt;
  F v;
  if (equals_lower(s, "nan")) {
    v = std::numeric_limits<F>::quiet_NaN();
  } else if (equals_lower(s, "inf") || equals_lower(s, "infinity")) {
    v = std::numeric_limits<F>::infinity();
  } else {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ptr != s.data() + s.size()) return std::nullopt;
    if (r.ec == std::errc::result_out_of_range) {
      // from_chars leaves v unset here: overflow is infinity, underflow zero (or a subnormal).
      const std::string copy(s);
      v = static_cast<F>(std::strtod(copy.c_str(), nullptr));
    } else if (r.ec != std::errc()) {
      return std::nullopt;
    }
  }
  return negative ? -v : v;
}

// Text as an integer of type I, when it is one exactly (no fraction, no exponent, in range).
template <typename I>
std::optional<I> parse_integer(const std::string& text) {
  std::string_view s(text);
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // from_chars takes '-' only
  I v;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string quoted(const std::string& s) {
  constexpr size_t kMax = 40;
  return "'" + (s.size() > kMax ? s.substr(0, kMax) + "..." : s) + "'";
}

Status check_same_size(const Tensor& x, const Tensor& y, const char* what) {
  if (x.numel() != y.numel() || x.device() != DeviceType::kCPU || y.device() != DeviceType::kCPU)
    return error(StatusCode::kInternal, what, ": input has ", x.numel(), " elements, output ", y.numel());
  return Status::ok();
}

}  // namespace

Status cast_to_strings(const Tensor& x, const Tensor& y) {
  GRAFT_RETURN_IF_ERROR(check_same_size(x, y, "Cast to string"));
  if (y.dtype() != DataType::kString)
    return error(StatusCode::kInternal, "Cast to string writes a ", dtype_name(y.dtype()), " tensor");
  auto* out = y.data_as<std::string>();
  const DataType t = x.dtype();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    switch (t) {
      case DataType::kString: out[i] = x.data_as<std::string>()[i]; break;
      case DataType::kFloat64: out[i] = float_text(x.data_as<double>()[i], false); break;
      case DataType::kFloat32:
      case DataType::kFloat16:
      case DataType::kBFloat16:
      case DataType::kFloat8E4M3FN:  // every 8-bit float is exact in float32: printed as one
      case DataType::kFloat8E4M3FNUZ:
      case DataType::kFloat8E5M2:
      case DataType::kFloat8E5M2FNUZ: out[i] = float_text(load_as_double(t, x.data(), i), true); break;
      case DataType::kBool: out[i] = x.data_as<uint8_t>()[i] ? "1" : "0"; break;
      case DataType::kUInt64: out[i] = std::to_string(x.data_as<uint64_t>()[i]); break;
      case DataType::kInt8:
      case DataType::kUInt8:
      case DataType::kInt16:
      case DataType::kUInt16:
      case DataType::kInt32:
      case DataType::kUInt32:
      case DataType::kInt4:  // their values print as any integer's
      case DataType::kUInt4:
      case DataType::kInt64: out[i] = std::to_string(load_as_int64(t, x.data(), i)); break;
      case DataType::kUndefined:
        return error(StatusCode::kInternal, "Cast to string from an undefined dtype");
    }
  }
  return Status::ok();
}

Status cast_from_strings(const Tensor& x, const Tensor& y) {
  GRAFT_RETURN_IF_ERROR(check_same_size(x, y, "Cast from string"));
  if (x.dtype() != DataType::kString)
    return error(StatusCode::kInternal, "Cast from string reads a ", dtype_name(x.dtype()), " tensor");
  const auto* in = x.data_as<std::string>();
  const DataType t = y.dtype();
  auto not_a_number = [&](int64_t i) {
    return error(StatusCode::kInvalidArgument, "element ", i, " of the input, ", quoted(in[i]), ", is not a ",
                 t == DataType::kBool ? "number or true/false" : "number");
  };
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const std::string& s = in[i];
    if (t == DataType::kString) {
      y.data_as<std::string>()[i] = s;
    } else if (t == DataType::kFloat32) {
      auto v = parse_float<float>(s);
      if (!v) return not_a_number(i);
      y.data_as<float>()[i] = *v;
    } else if (t == DataType::kBool && (equals_lower(s, "true") || equals_lower(s, "false"))) {
      y.data_as<uint8_t>()[i] = equals_lower(s, "true") ? 1 : 0;
    } else if (t == DataType::kUInt64 && parse_integer<uint64_t>(s)) {
      y.data_as<uint64_t>()[i] = *parse_integer<uint64_t>(s);
    } else if (dtype_is_integer(t) && t != DataType::kUInt64 && parse_integer<int64_t>(s)) {
      // Narrower integer types keep the low bits, as a numeric int64 Cast does.
      const int64_t v = *parse_integer<int64_t>(s);
      switch (t) {
        case DataType::kInt8: y.data_as<int8_t>()[i] = static_cast<int8_t>(v); break;
        case DataType::kUInt8: y.data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
        case DataType::kInt16: y.data_as<int16_t>()[i] = static_cast<int16_t>(v); break;
        case DataType::kUInt16: y.data_as<uint16_t>()[i] = static_cast<uint16_t>(v); break;
        case DataType::kInt32: y.data_as<int32_t>()[i] = static_cast<int32_t>(v); break;
        case DataType::kUInt32: y.data_as<uint32_t>()[i] = static_cast<uint32_t>(v); break;
        default: y.data_as<int64_t>()[i] = v; break;
      }
    } else {
      auto v = parse_float<double>(s);
      if (!v) return not_a_number(i);
      store_from_double(t, y.data(), i, *v);  // numeric Cast's rounding, truncation and saturation
    }
  }
  return Status::ok();
}

namespace {

// ---- StringNormalizer -------------------------------------------------------------------------

enum class CaseChange { kNone, kLower, kUpper };

struct StringNormalizerAttrs {
  CaseChange change = CaseChange::kNone;
  bool case_sensitive = false;
  std::vector<std::string> stopwords;
};

// The case tables: Unicode's simple case mapping from glibc's C.UTF-8 locale (always present since
// glibc 2.35), or the "C" locale's ASCII mapping where it is missing.
locale_t unicode_ctype() {
  static const locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    return l ? l : newlocale(LC_CTYPE_MASK, "C", static_cast<locale_t>(nullptr));
  }();
  return loc;
}

Result<std::string> change_case(const std::string& s, CaseChange change) {
  if (change == CaseChange::kNone) return s;
  const bool upper = change == CaseChange::kUpper;
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    std::string r = s;
    for (char& c : r) {
      if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return r;
  }
  std::u32string cps;
  if (!decode_utf8(s, &cps))
    return error(StatusCode::kInvalidArgument, "the text ", quoted(s), " is not UTF-8, so its case cannot change");
  const locale_t loc = unicode_ctype();
  for (char32_t& c : cps) {
    const wint_t w = upper ? towupper_l(static_cast<wint_t>(c), loc) : towlower_l(static_cast<wint_t>(c), loc);
    // A mapping outside Unicode's scalar values cannot come from the tables; keep the original.
    if (w < 0x110000 && !(w >= 0xD800 && w <= 0xDFFF)) c = static_cast<char32_t>(w);
  }
  return encode_utf8(cps);
}

Result<StringNormalizerAttrs> string_normalizer_attrs(const AttributeMap& attrs) {
  StringNormalizerAttrs a;
  auto action = attrs.get_string("case_change_action", "NONE");
  if (!action) return Status(action.status()).with_attribute("case_change_action");
  if (*action == "LOWER") a.change = CaseChange::kLower;
  else if (*action == "UPPER") a.change = CaseChange::kUpper;
  else if (*action != "NONE")
    return Status(error(StatusCode::kInvalidModel, "case_change_action must be LOWER, UPPER or NONE, got ",
                        quoted(*action)))
        .with_attribute("case_change_action");
  auto sensitive = attrs.get_int("is_case_sensitive", 0);
  if (!sensitive) return Status(sensitive.status()).with_attribute("is_case_sensitive");
  if (*sensitive != 0 && *sensitive != 1)
    return Status(error(StatusCode::kInvalidModel, "is_case_sensitive must be 0 or 1, got ", *sensitive))
        .with_attribute("is_case_sensitive");
  a.case_sensitive = *sensitive == 1;
  auto locale = attrs.get_string("locale", "");  // read for its type; see the file comment
  if (!locale) return Status(locale.status()).with_attribute("locale");
  auto stopwords = attrs.get_strings("stopwords", {});
  if (!stopwords) return Status(stopwords.status()).with_attribute("stopwords");
  a.stopwords = std::move(stopwords).value();
  if (!a.case_sensitive)
    for (std::string& w : a.stopwords) {
      auto lower = change_case(w, CaseChange::kLower);
      if (!lower) return Status(lower.status()).with_attribute("stopwords");
      w = std::move(lower).value();
    }
  return a;
}

Status infer_string_normalizer(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(string_normalizer_attrs(ctx.attrs()).status());
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {DataType::kString}));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) return ctx.fail("the rank of input X is unknown; StringNormalizer takes [C] or [1, C]");
  // How many strings remain is known only after the kernel has compared them with the stopwords.
  if (x.rank() == 1) {
    ctx.set_output(0, desc_of(DataType::kString, Shape{ctx.unknown_dim()}));
  } else if (x.rank() == 2 && (!(*x.shape)[0].is_const() || (*x.shape)[0].value() == 1)) {
    ctx.set_output(0, desc_of(DataType::kString, Shape{Dim(1), ctx.unknown_dim()}));
  } else {
    return ctx.fail("input X must be [C] or [1, C], got ", x.to_string());
  }
  return Status::ok();
}

Status string_normalizer(ExecContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty())
    return error(StatusCode::kInternal, "StringNormalizer called without its input or output");
  GRAFT_ASSIGN_OR_RETURN(StringNormalizerAttrs a, string_normalizer_attrs(*ctx.attrs));
  const Tensor& x = *ctx.inputs[0];
  if (x.dtype() != DataType::kString || (x.rank() != 1 && !(x.rank() == 2 && x.dims()[0] == 1)))
    return error(StatusCode::kInvalidArgument, "input X must be a string tensor [C] or [1, C], got ",
                 dtype_name(x.dtype()), shape_to_string(shape_from_values(x.dims())));
  const std::set<std::string> stopwords(a.stopwords.begin(), a.stopwords.end());
  const auto* in = x.data_as<std::string>();
  std::vector<std::string> kept;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    if (!stopwords.empty()) {
      std::string key = in[i];
      if (!a.case_sensitive) {
        auto lower = change_case(in[i], CaseChange::kLower);
        if (!lower) return error(lower.status().code(), "element ", i, " of X: ", lower.status().message());
        key = std::move(lower).value();
      }
      if (stopwords.count(key)) continue;
    }
    auto changed = change_case(in[i], a.change);
    if (!changed) return error(changed.status().code(), "element ", i, " of X: ", changed.status().message());
    kept.push_back(std::move(changed).value());
  }
  if (kept.empty()) kept.emplace_back();  // ONNX: all dropped leaves one empty string
  std::vector<int64_t> dims{static_cast<int64_t>(kept.size())};
  if (x.rank() == 2) dims.insert(dims.begin(), 1);
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, DataType::kString, dims));
  std::move(kept.begin(), kept.end(), y->data_as<std::string>());
  return Status::ok();
}

}  // namespace

void append_strings_ops(std::vector<OpEntry>& out) {
  out.push_back(takes_strings({"StringNormalizer", 10, infer_string_normalizer, string_normalizer,
                               /*output_shape_from_kernel=*/true}));
}

}  // namespace graft
