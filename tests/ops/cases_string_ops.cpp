// Cases for ONNX's StringConcat, StringSplit and RegexFullMatch (opset 20), string tensors on the CPU
// engine. Each formula works on the strings the harness hands it: StringConcat joins broadcast pairs;
// StringSplit follows Python's str.split (which onnx.reference's numpy.char.split calls), written here
// as a scan for the delimiter, or, without one, over the decoded code points between runs of
// whitespace;
// RegexFullMatch's formula is another engine, std::regex (ECMAScript), on patterns whose meaning is
// the same in its syntax and RE2's.
#include <algorithm>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

CaseInput strings(std::vector<int64_t> dims, std::vector<std::string> words) {
  CaseInput in = typed(std::move(dims), DataType::kString, 0, 0);
  in.words = std::move(words);
  return in;
}

// Sets input 0's strings to exactly these (row-major).
std::function<void(std::vector<Tensor>&)> put(std::vector<std::string> values) {
  return [values](std::vector<Tensor>& ins) {
    for (size_t i = 0; i < values.size(); ++i) ins[0].data_as<std::string>()[i] = values[i];
  };
}

OpCaseTable string_concat_cases() {
  OpCaseTable t = container_table("StringConcat", [](const std::vector<Items>& in, const AttributeMap&) {
    const Item& x = in[0][0];
    const Item& y = in[1][0];
    Item z;
    z.dims = broadcast_dims({x.dims, y.dims});
    int64_t n = 1;
    for (int64_t d : z.dims) n *= d;
    for (int64_t i = 0; i < n; ++i)
      z.strings.push_back(x.strings[static_cast<size_t>(broadcast_index(i, z.dims, x.dims))] +
                          y.strings[static_cast<size_t>(broadcast_index(i, z.dims, y.dims))]);
    return std::vector<Items>{Items{z}};
  }, 20);
  t.cuda_dtypes = {};  // strings live on the host
  const std::vector<std::string> words = {"", "a", "graft", "\xC3\xA9t\xC3\xA9", " spaced ", "x,y"};
  t.cases.push_back(container_case("same_shape", {strings({2, 3}, words), strings({2, 3}, words)}, {tensor_out({2, 3})}));
  t.cases.push_back(container_case("broadcast_rows", {strings({3, 4}, words), strings({4}, words)}, {tensor_out({3, 4})}));
  t.cases.push_back(container_case("scalar_suffix", {strings({5}, words), strings({}, {"_suffix"})}, {tensor_out({5})}));
  return t;
}

std::vector<std::string> python_split(const std::string& s, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!delimiter.empty()) {
    std::string rest = s;
    for (int64_t k = 0; maxsplit < 0 || k < maxsplit; ++k) {
      const size_t at = rest.find(delimiter);
      if (at == std::string::npos) break;
      parts.push_back(rest.substr(0, at));
      rest = rest.substr(at + delimiter.size());
    }
    parts.push_back(rest);
    return parts;
  }
  // Whitespace by code point (the UTF-8 text decoded here), Python's str.isspace set.
  struct Char {
    char32_t cp;
    size_t at, len;
  };
  std::vector<Char> chars;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : c & (0x3F >> (len - 1));
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    chars.push_back({cp, i, len});
    i += len;
  }
  const std::u32string spaces = U" \t\n\v\f\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                                U"\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";
  auto space = [&](size_t k) { return spaces.find(chars[k].cp) != std::u32string::npos; };
  size_t k = 0;
  for (;;) {
    while (k < chars.size() && space(k)) ++k;
    if (k == chars.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(s.substr(chars[k].at));
      break;
    }
    const size_t start = k;
    while (k < chars.size() && !space(k)) ++k;
    const size_t end = k < chars.size() ? chars[k].at : s.size();
    parts.push_back(s.substr(chars[start].at, end - chars[start].at));
  }
  return parts;
}

OpCaseTable string_split_cases() {
  OpCaseTable t = container_table("StringSplit", [](const std::vector<Items>& in, const AttributeMap& a) {
    const Item& x = in[0][0];
    const std::string delimiter = a.get_string("delimiter", "").value();
    const int64_t maxsplit = a.has("maxsplit") ? a.get_int("maxsplit", -1).value() : -1;
    std::vector<std::vector<std::string>> parts;
    size_t most = 0;
    for (const std::string& s : x.strings) {
      parts.push_back(python_split(s, delimiter, maxsplit));
      most = std::max(most, parts.back().size());
    }
    Item y, z;
    y.dims = x.dims;
    y.dims.push_back(static_cast<int64_t>(most));
    z.dims = x.dims;
    for (const auto& p : parts) {
      for (size_t k = 0; k < most; ++k) y.strings.push_back(k < p.size() ? p[k] : std::string());
      z.values.push_back(static_cast<double>(p.size()));
    }
    return std::vector<Items>{Items{y}, Items{z}};
  }, 20);
  t.cuda_dtypes = {};  // strings live on the host
  const std::vector<std::string> any = {"a"};
  // A comma: empty pieces between, before and after delimiters; "" gives one "".
  OpCase comma = container_case("comma", {strings({2, 3}, any)}, {tensor_out({2, 3, 4}), tensor_out({2, 3})},
                                attr("delimiter", std::string(",")));
  comma.adjust_inputs = put({"a,b,,c", "", ",lead", "trail,", "no delim", "x,y"});
  t.cases.push_back(comma);
  // Whitespace runs, at most one split: the rest keeps its inner and trailing whitespace.
  AttributeMap one = attr("maxsplit", int64_t{1});
  OpCase spaces = container_case("whitespace_maxsplit_1", {strings({4}, any)}, {tensor_out({4, 2}), tensor_out({4})}, one);
  spaces.adjust_inputs = put({"  hello   world ", "", "one", "a\tb\nc  "});
  t.cases.push_back(spaces);
  // Whitespace without a limit; an all-space string gives nothing.
  // Python's Unicode spaces too (no-break space, ideographic space, line separator), beside letters
  // that are not spaces (\xC3\xA9, é).
  OpCase words = container_case("whitespace", {strings({4}, any)}, {tensor_out({4, 3}), tensor_out({4})});
  words.adjust_inputs = put({"the quick  fox", "   ", "\x1f" "a\x1c" "b",
                             "\xC2\xA0" "caf\xC3\xA9\xE3\x80\x80" "x\xE2\x80\xA8" "y\xC2\xA0"});
  t.cases.push_back(words);
  // A two-byte delimiter with maxsplit 1.
  AttributeMap arrows = attr("delimiter", std::string("<>"));
  arrows.set("maxsplit", int64_t{1});
  OpCase multi = container_case("two_byte_delimiter_maxsplit", {strings({3}, any)}, {tensor_out({3, 2}), tensor_out({3})},
                                arrows);
  multi.adjust_inputs = put({"a<>b<>c", "<>", "abc"});
  t.cases.push_back(multi);
  t.bad_attributes.push_back({"negative_maxsplit", attr("maxsplit", int64_t{-2}), {}, "maxsplit"});
  return t;
}

OpCaseTable regex_full_match_cases() {
  OpCaseTable t = container_table("RegexFullMatch", [](const std::vector<Items>& in, const AttributeMap& a) {
    const std::regex re(a.get_string("pattern", "").value());
    Item y;
    y.dims = in[0][0].dims;
    for (const std::string& s : in[0][0].strings) y.values.push_back(std::regex_match(s, re) ? 1.0 : 0.0);
    return std::vector<Items>{Items{y}};
  }, 20);
  t.cuda_dtypes = {};  // strings live on the host
  const std::vector<std::string> words = {"alice@example.com", "bob@test.org", "not an email", "", "x@y.z",
                                          "ALICE@EXAMPLE.COM", "a1b2c3", "www.google.com", "prefix alice@example.com"};
  auto pattern = [](const char* p) { return attr("pattern", std::string(p)); };
  t.cases.push_back(container_case("email", {strings({3, 3}, words)}, {tensor_out({3, 3})},
                                   pattern("[a-z0-9.]+@[a-z]+\\.(com|org)")));
  // Full match, not search: "prefix alice@example.com" contains a match but is not one.
  OpCase full = container_case("whole_string_only", {strings({4}, words)}, {tensor_out({4})},
                               pattern("alice@example\\.com"));
  full.adjust_inputs = put({"alice@example.com", "prefix alice@example.com", "alice@example.comx", "alice@exampleXcom"});
  t.cases.push_back(full);
  t.cases.push_back(container_case("classes_and_counts", {strings({2, 4}, words)}, {tensor_out({2, 4})},
                                   pattern("([a-z]\\d){3}|w{3}\\..*")));
  t.cases.push_back(container_case("empty_matches_empty", {strings({5}, words)}, {tensor_out({5})}, pattern("")));
  t.bad_attributes.push_back({"pattern_missing", AttributeMap{}, {}, "pattern"});
  t.bad_attributes.push_back({"pattern_unbalanced", pattern("(ab"), {}, "pattern"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> string_ops_case_tables() {
  return {string_concat_cases(), string_split_cases(), regex_full_match_cases()};
}

}  // namespace graft::optest
