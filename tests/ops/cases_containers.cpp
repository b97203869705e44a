// Cases for the sequence and optional ops (SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceAt, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, Optional,
// OptionalHasElement, OptionalGetElement): container inputs of random tensors, each output's kind and
// tensors' dims written by hand, and an independent formula over the tensors (ContainerReferenceFn).
// StringNormalizer, whose string output the kernel sizes, runs through the same path.
#include <algorithm>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

// ONNX's position rule: p < 0 counts from the end of the n tensors (-1: before the last one when
// inserting).
size_t at(const Items& position, size_t n, size_t fallback) {
  if (position.empty()) return fallback;
  const int64_t p = static_cast<int64_t>(position[0].values[0]);
  return static_cast<size_t>(p < 0 ? p + static_cast<int64_t>(n) : p);
}

OpCaseTable sequence_empty_cases() {
  OpCaseTable t = container_table("SequenceEmpty", [](const std::vector<Items>&, const AttributeMap&) {
    return std::vector<Items>{Items{}};
  });
  t.cases.push_back(container_case("float", {}, {sequence_out({})}));
  t.cases.push_back(container_case("int64", {}, {sequence_out({})}, attr("dtype", int64_t{7})));
  return t;
}

OpCaseTable sequence_construct_cases() {
  OpCaseTable t = container_table("SequenceConstruct", [](const std::vector<Items>& in, const AttributeMap&) {
    Items seq;
    for (const Items& x : in) seq.push_back(x[0]);
    return std::vector<Items>{seq};
  });
  t.cases.push_back(container_case("three_shapes", {data({2, 3}), data({4}), data({1, 3, 2})},
                                   {sequence_out({{2, 3}, {4}, {1, 3, 2}})}));
  t.cases.push_back(container_case("one", {data({5})}, {sequence_out({{5}})}));
  return t;
}

OpCaseTable sequence_insert_cases() {
  OpCaseTable t = container_table("SequenceInsert", [](const std::vector<Items>& in, const AttributeMap&) {
    Items seq = in[0];
    const size_t p = at(in.size() > 2 ? in[2] : Items{}, seq.size(), seq.size());
    seq.insert(seq.begin() + static_cast<ptrdiff_t>(p), in[1][0]);
    return std::vector<Items>{seq};
  });
  t.cases.push_back(container_case("at_1", {sequence_of({{2, 3}, {4, 3}}), data({1, 3}), int64_scalar(1)},
                                   {sequence_out({{2, 3}, {1, 3}, {4, 3}})}));
  t.cases.push_back(container_case("at_minus_1", {sequence_of({{2}, {3}, {4}}), data({5}), int64_scalar(-1)},
                                   {sequence_out({{2}, {3}, {5}, {4}})}));
  t.cases.push_back(container_case("appended", {sequence_of({{3, 1}}), data({2, 2})}, {sequence_out({{3, 1}, {2, 2}})}));
  t.cases.push_back(container_case("into_empty", {sequence_of({}), data({6}), int64_scalar(0)}, {sequence_out({{6}})}));
  return t;
}

OpCaseTable sequence_at_cases() {
  OpCaseTable t = container_table("SequenceAt", [](const std::vector<Items>& in, const AttributeMap&) {
    return std::vector<Items>{Items{in[0][at(in[1], in[0].size(), 0)]}};
  });
  t.cases.push_back(container_case("second", {sequence_of({{2, 3}, {4}, {1, 5}}), int64_scalar(1)}, {tensor_out({4})}));
  t.cases.push_back(container_case("last_from_end", {sequence_of({{2, 3}, {4}, {1, 5}}), int64_scalar(-1)}, {tensor_out({1, 5})}));
  return t;
}

OpCaseTable sequence_erase_cases() {
  OpCaseTable t = container_table("SequenceErase", [](const std::vector<Items>& in, const AttributeMap&) {
    Items seq = in[0];
    seq.erase(seq.begin() + static_cast<ptrdiff_t>(at(in.size() > 1 ? in[1] : Items{}, seq.size(), seq.size() - 1)));
    return std::vector<Items>{seq};
  });
  t.cases.push_back(container_case("first", {sequence_of({{2}, {3, 2}, {4}}), int64_scalar(0)}, {sequence_out({{3, 2}, {4}})}));
  t.cases.push_back(container_case("minus_2", {sequence_of({{2}, {3, 2}, {4}}), int64_scalar(-2)}, {sequence_out({{2}, {4}})}));
  t.cases.push_back(container_case("last_by_default", {sequence_of({{2}, {3, 2}})}, {sequence_out({{2}})}));
  return t;
}

OpCaseTable sequence_length_cases() {
  OpCaseTable t = container_table("SequenceLength", [](const std::vector<Items>& in, const AttributeMap&) {
    return std::vector<Items>{Items{Item{{}, {static_cast<double>(in[0].size())}}}};
  });
  t.cases.push_back(container_case("four", {sequence_of({{2}, {3}, {1, 1}, {2, 2}})}, {tensor_out({})}));
  t.cases.push_back(container_case("empty", {sequence_of({})}, {tensor_out({})}));
  return t;
}

// The slices [begin, begin + len) of x along `axis`, that axis dropped when `drop`.
Item slice_of(const Item& x, size_t axis, int64_t begin, int64_t len, bool drop) {
  const int64_t outer = count(x.dims, 0, axis), n = x.dims[axis], inner = count(x.dims, axis + 1);
  Item y;
  y.dims = x.dims;
  y.dims[axis] = len;
  if (drop) y.dims.erase(y.dims.begin() + static_cast<ptrdiff_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = begin; j < begin + len; ++j)
      for (int64_t i = 0; i < inner; ++i) y.values.push_back(x.values[static_cast<size_t>((o * n + j) * inner + i)]);
  return y;
}

// SplitToSequence: by the split sizes (a 1-D input), by chunks of one size (a scalar; the last may be
// shorter), or into single slices (no split; `keepdims` 0 drops the axis).
OpCaseTable split_to_sequence_cases() {
  OpCaseTable t = container_table("SplitToSequence", [](const std::vector<Items>& in, const AttributeMap& a) {
    const Item& x = in[0][0];
    const size_t axis = static_cast<size_t>(axis_in(a.get_int("axis", 0).value(), x.dims.size()));
    const int64_t n = x.dims[axis];
    Items seq;
    if (in.size() < 2 || in[1].empty()) {
      const bool keep = a.get_int("keepdims", 1).value() != 0;
      for (int64_t j = 0; j < n; ++j) seq.push_back(slice_of(x, axis, j, 1, !keep));
    } else if (in[1][0].dims.empty()) {
      const int64_t size = static_cast<int64_t>(in[1][0].values[0]);
      for (int64_t b = 0; b < n; b += size) seq.push_back(slice_of(x, axis, b, std::min(size, n - b), false));
    } else {
      int64_t b = 0;
      for (double s : in[1][0].values) {
        seq.push_back(slice_of(x, axis, b, static_cast<int64_t>(s), false));
        b += static_cast<int64_t>(s);
      }
    }
    return std::vector<Items>{seq};
  });
  t.cases.push_back(container_case("sizes_axis_1", {data({2, 7}), int64_values({3, 1, 3})}, {sequence_out({{2, 3}, {2, 1}, {2, 3}})},
                                   attr("axis", int64_t{1})));
  t.cases.push_back(container_case("chunks_of_2", {data({5, 3}), fixed({}, DataType::kInt64, {2})},
                                   {sequence_out({{2, 3}, {2, 3}, {1, 3}})}));
  t.cases.push_back(container_case("slices_dropped", {data({2, 3, 2})}, {sequence_out({{2, 2}, {2, 2}, {2, 2}})},
                                   [] {
                                     AttributeMap a;
                                     a.set("axis", int64_t{-2});
                                     a.set("keepdims", int64_t{0});
                                     return a;
                                   }()));
  t.cases.push_back(container_case("slices_kept", {data({3, 2})}, {sequence_out({{1, 2}, {1, 2}, {1, 2}})}));
  return t;
}

// ConcatFromSequence: the tensors joined along `axis`, or stacked along a new one (new_axis 1).
OpCaseTable concat_from_sequence_cases() {
  OpCaseTable t = container_table("ConcatFromSequence", [](const std::vector<Items>& in, const AttributeMap& a) {
    const bool stack = a.get_int("new_axis", 0).value() != 0;
    Items items = in[0];
    const size_t rank = items[0].dims.size() + (stack ? 1 : 0);
    const size_t axis = static_cast<size_t>(axis_in(a.get_int("axis", 0).value(), rank));
    if (stack)
      for (Item& x : items) x.dims.insert(x.dims.begin() + static_cast<ptrdiff_t>(axis), 1);
    Item y;
    y.dims = items[0].dims;
    y.dims[axis] = 0;
    for (const Item& x : items) y.dims[axis] += x.dims[axis];
    const int64_t outer = count(y.dims, 0, axis), inner = count(y.dims, axis + 1);
    for (int64_t o = 0; o < outer; ++o)
      for (const Item& x : items)
        for (int64_t j = 0; j < x.dims[axis] * inner; ++j)
          y.values.push_back(x.values[static_cast<size_t>(o * x.dims[axis] * inner + j)]);
    return std::vector<Items>{Items{y}};
  });
  t.cases.push_back(container_case("axis_1", {sequence_of({{2, 3}, {2, 1}, {2, 4}})}, {tensor_out({2, 8})}, attr("axis", int64_t{1})));
  AttributeMap stack;
  stack.set("axis", int64_t{-1});
  stack.set("new_axis", int64_t{1});
  t.cases.push_back(container_case("stacked_last", {sequence_of({{3, 2}, {3, 2}})}, {tensor_out({3, 2, 2})}, stack));
  return t;
}

OpCaseTable optional_cases() {
  OpCaseTable t = container_table("Optional", [](const std::vector<Items>& in, const AttributeMap&) {
    return std::vector<Items>{in[0]};
  }, 15);
  t.cases.push_back(container_case("holding_a_tensor", {data({3, 4})}, {{ValueKind::kOptionalTensor, {{3, 4}}}}));
  return t;
}

OpCaseTable optional_has_element_cases() {
  OpCaseTable t = container_table("OptionalHasElement", [](const std::vector<Items>& in, const AttributeMap&) {
    return std::vector<Items>{Items{Item{{}, {in[0].empty() ? 0.0 : 1.0}}}};
  }, 15);
  t.cases.push_back(container_case("full", {optional_of({{2, 2}})}, {tensor_out({})}));
  t.cases.push_back(container_case("empty", {optional_of({})}, {tensor_out({})}));
  return t;
}

OpCaseTable optional_get_element_cases() {
  OpCaseTable t = container_table("OptionalGetElement", [](const std::vector<Items>& in, const AttributeMap&) {
    return std::vector<Items>{in[0]};
  }, 15);
  t.cases.push_back(container_case("held_tensor", {optional_of({{4, 1, 3}})}, {tensor_out({4, 1, 3})}));
  t.cases.push_back(container_case("plain_tensor", {data({2, 5})}, {tensor_out({2, 5})}));
  return t;
}

// ASCII case mapping plus the one non-ASCII pair the cases use (É U+00C9, é U+00E9: C3 89, C3 A9).
std::string mapped(std::string s, bool upper) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char& c = reinterpret_cast<unsigned char&>(s[i]);
    if (c == 0xC3 && i + 1 < s.size()) {
      unsigned char& d = reinterpret_cast<unsigned char&>(s[++i]);
      if (upper && d == 0xA9) d = 0x89;
      if (!upper && d == 0x89) d = 0xA9;
    } else if (upper && c >= 'a' && c <= 'z') {
      c = static_cast<unsigned char>(c - 'a' + 'A');
    } else if (!upper && c >= 'A' && c <= 'Z') {
      c = static_cast<unsigned char>(c - 'A' + 'a');
    }
  }
  return s;
}

// StringNormalizer: the strings that are not stopwords (compared lower-cased unless
// is_case_sensitive), case-changed; one empty string when none is left. X is [C] or [1, C].
OpCaseTable string_normalizer_cases() {
  OpCaseTable t = container_table("StringNormalizer", [](const std::vector<Items>& in, const AttributeMap& a) {
    const Item& x = in[0][0];
    const std::vector<std::string> stop = a.get_strings("stopwords", {}).value();
    const bool sensitive = a.get_int("is_case_sensitive", 0).value() != 0;
    const std::string action = a.get_string("case_change_action", "NONE").value();
    Item y;
    for (const std::string& w : x.strings) {
      const std::string key = sensitive ? w : mapped(w, false);
      if (std::find(stop.begin(), stop.end(), key) != stop.end()) continue;
      y.strings.push_back(action == "NONE" ? w : mapped(w, action == "UPPER"));
    }
    if (y.strings.empty()) y.strings.emplace_back();
    y.dims = {static_cast<int64_t>(y.strings.size())};
    if (x.dims.size() == 2) y.dims.insert(y.dims.begin(), 1);
    return std::vector<Items>{Items{y}};
  }, 10);
  t.cuda_dtypes = {};  // strings live on the host: a CUDA build runs StringNormalizer on the CPU
  const std::vector<std::string> words = {"Apple", "bANana", "Cherry", "\xC3\x89" "cole", "kiwi", "MANGO", "p\xC3\xA9" "ch\xC3\xA9"};
  auto strings = [&](std::vector<int64_t> dims) {
    CaseInput in = typed(std::move(dims), DataType::kString, 0, 0);
    in.words = words;
    return in;
  };
  // Stopwords (in random case) at fixed places, so that the count is known.
  auto put = [](std::vector<std::pair<int64_t, std::string>> at) {
    return [at](std::vector<Tensor>& ins) {
      for (const auto& [i, w] : at) ins[0].data_as<std::string>()[i] = w;
    };
  };
  auto attrs = [](const char* action, int64_t sensitive, std::vector<std::string> stop) {
    AttributeMap a;
    a.set("case_change_action", std::string(action));
    a.set("is_case_sensitive", sensitive);
    if (!stop.empty()) a.set("stopwords", std::move(stop));
    return a;
  };
  OpCase lower = container_case("lower_without_stopwords", {strings({8})}, {tensor_out({6})}, attrs("LOWER", 0, {"the", "a"}));
  lower.adjust_inputs = put({{1, "The"}, {5, "A"}});
  t.cases.push_back(lower);
  OpCase upper = container_case("upper_case_sensitive_1xC", {strings({1, 7})}, {tensor_out({1, 6})}, attrs("UPPER", 1, {"the"}));
  upper.adjust_inputs = put({{0, "the"}, {3, "The"}});  // only the first is a stopword here
  t.cases.push_back(upper);
  t.cases.push_back(container_case("unchanged", {strings({5})}, {tensor_out({5})}, attrs("NONE", 0, {})));
  OpCase none_left = container_case("all_stopwords", {strings({3})}, {tensor_out({1})}, attrs("LOWER", 0, {"the", "an"}));
  none_left.adjust_inputs = put({{0, "THE"}, {1, "an"}, {2, "The"}});
  t.cases.push_back(none_left);
  t.bad_attributes.push_back({"unknown_case_change", attr("case_change_action", std::string("TITLE")), {}, "case_change_action"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> containers_case_tables() {
  return {sequence_empty_cases(),    sequence_construct_cases(), sequence_insert_cases(),
          sequence_at_cases(),       sequence_erase_cases(),     sequence_length_cases(),
          split_to_sequence_cases(), concat_from_sequence_cases(), optional_cases(),
          optional_has_element_cases(), optional_get_element_cases(), string_normalizer_cases()};
}

}  // namespace graft::optest
