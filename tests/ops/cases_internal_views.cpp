// Cases for graft's internal data-movement and fusion ops (graft.internal, made by the CUDA
// builder's passes): GraftStridedCopy (a composed chain of views as one strided gather),
// GraftViewChain (the chain's steps, planned per input shape), GraftConcatSlices (Concat of Slices
// read in place: torch.roll) and GraftElementwise (a fused elementwise chain as a small program).
// The attributes are built with graft's own encoders (write_view_steps, the program layout of
// src/ops/transformer/transformer.h), since they define the encoding; every reference is an independent
// float64 formula over the values: a strided index sum, each view step applied to the values in
// turn, slices copied along the axis, and the program evaluated instruction by instruction.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"
#include "ops/elementwise_opcode.h"
#include "ops/internal_ops.h"
#include "ops/views/views.h"

namespace graft::optest {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ---- GraftStridedCopy ---------------------------------------------------------------------------

AttributeMap strided_attrs(Ints shape, Ints strides, int64_t offset) {
  AttributeMap a;
  a.set("shape", std::move(shape));
  a.set("strides", std::move(strides));
  a.set("offset", offset);
  return a;
}

// Y[i0, .., ik] = X.flat[offset + sum_d i_d * strides[d]], Y's elements walked row-major.
Values strided_copy_formula(const Values& in, const DimsList&, const AttributeMap& a) {
  const Ints shape = a.get_ints("shape", {}).value(), strides = a.get_ints("strides", {}).value();
  const int64_t offset = a.get_int("offset", 0).value();
  const int64_t n = count(shape);
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = offset;
    for (size_t d = shape.size(); d-- > 0;) {
      src += (rem % shape[d]) * strides[d];
      rem /= shape[d];
    }
    y[static_cast<size_t>(i)] = in[0].at(static_cast<size_t>(src));
  }
  return {y};
}

OpCaseTable strided_copy_cases() {
  OpCaseTable t = builtin_table("GraftStridedCopy", strided_copy_formula);
  t.domain = kInternalDomain;
  // The gathers move elements of 1 to 8 bytes whatever their dtype: float64 adds the 8-byte path.
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64};
  // A Transpose of [5, 7].
  t.cases.push_back(make_case("transpose_2d", {data({5, 7})}, {{7, 5}}, strided_attrs({7, 5}, {1, 7}, 0)));
  // x[1, :, 2, :] of [2, 3, 4, 5], transposed: offset 1*60 + 2*5.
  t.cases.push_back(make_case("select_then_transpose_rank4_offset", {data({2, 3, 4, 5})}, {{5, 3}},
                              strided_attrs({5, 3}, {1, 20}, 70)));
  // Transpose(perm = 4, 2, 0, 3, 1) of [2, 3, 2, 3, 2] (strides 36, 12, 6, 2, 1).
  t.cases.push_back(make_case("permute_rank5", {data({2, 3, 2, 3, 2})}, {{2, 2, 2, 3, 3}},
                              strided_attrs({2, 2, 2, 3, 3}, {1, 6, 36, 2, 12}, 0)));
  // Overlapping windows of 5 every 4 elements, from element 3 of each row of [2, 30].
  t.cases.push_back(make_case("overlapping_windows", {data({2, 30})}, {{2, 6, 5}}, strided_attrs({2, 6, 5}, {30, 4, 1}, 3)));
  // Every third element from element 1 (the last one read is element 25 of 28).
  t.cases.push_back(make_case("rank1_step3", {data({28})}, {{9}}, strided_attrs({9}, {3}, 1)));
  // A stride of 0 repeats a row (expand); strides on unit axes are never stepped over.
  t.cases.push_back(make_case("stride0_and_unit_axes", {data({4, 3})}, {{3, 1, 4, 1}},
                              strided_attrs({3, 1, 4, 1}, {0, 999, 3, 77}, 1)));
  // One element as a scalar.
  t.cases.push_back(make_case("scalar_at_offset", {data({3, 4})}, {{}}, strided_attrs({}, {}, 7)));
  // A larger transpose of odd extents, with an offset: x[:, 1:, 2:] of [3, 37, 41] as [39, 3, 36].
  t.cases.push_back(make_case("odd_transpose_offset", {data({3, 37, 41})}, {{39, 3, 36}},
                              strided_attrs({39, 3, 36}, {1, 1517, 41}, 43)));

  const Ints x = {5, 7};  // the first case's input
  t.bad_attributes.push_back({"strides_shorter_than_shape", strided_attrs({7, 5}, {1}, 0), {}, "strides"});
  t.bad_attributes.push_back({"negative_dimension", strided_attrs({7, -5}, {1, 7}, 0), {}, "shape"});
  t.bad_attributes.push_back({"negative_stride", strided_attrs({7, 5}, {1, -7}, 34), {}, "strides"});
  t.bad_attributes.push_back({"negative_offset", strided_attrs({7, 5}, {1, 7}, -1), {}, "offset"});
  // The last element read is 6 + 4 * 8 = 38 of 35.
  t.bad_attributes.push_back({"strides_read_past_the_end", strided_attrs({7, 5}, {1, 8}, 0), {x}, "strides"});
  // The offset alone is past the 35 elements.
  t.bad_attributes.push_back({"offset_past_the_end", strided_attrs({1}, {1}, 35), {x}, "offset"});
  // The first case's view over a smaller input: element 34 of 28.
  t.bad_attributes.push_back({"view_past_a_smaller_input", strided_attrs({7, 5}, {1, 7}, 0), {{4, 7}}, "strides"});
  // (3 - 1) * stride overflows int64.
  t.bad_attributes.push_back({"extent_overflows", strided_attrs({3}, {kInt64Max / 2 + 1}, 0), {x}, "strides"});
  return t;
}

// ---- GraftViewChain -----------------------------------------------------------------------------

ViewStep permute_step(Ints perm) { return ViewStep{ViewStepKind::kPermute, std::move(perm)}; }
ViewStep select_step(int64_t axis, int64_t index, bool keep) {
  return ViewStep{ViewStepKind::kSelect, {axis, index, keep ? 1 : 0}};
}
ViewStep reshape_step(Ints target) { return ViewStep{ViewStepKind::kReshape, std::move(target)}; }

AttributeMap chain_attrs(const std::vector<ViewStep>& steps) {
  AttributeMap a;
  write_view_steps(steps, &a);
  return a;
}

AttributeMap raw_chain(Ints kinds, Ints args, Ints counts) {
  AttributeMap a;
  a.set("view_kinds", std::move(kinds));
  a.set("view_args", std::move(args));
  a.set("view_arg_counts", std::move(counts));
  return a;
}

// The steps applied to the values one after another, decoded from the attributes by hand:
// view_kinds 0 permute (args: perm), 1 select (args: axis, index < 0 from the end, keep), 2 reshape
// (args: target dims, 0 copying the dim at that position, -1 the rest of the elements).
Values view_chain_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints kinds = a.get_ints("view_kinds", {}).value(), args = a.get_ints("view_args", {}).value();
  const Ints counts = a.get_ints("view_arg_counts", {}).value();
  std::vector<double> v = in[0];
  Ints d = dims[0];
  size_t at = 0;
  for (size_t s = 0; s < kinds.size(); ++s) {
    const Ints arg(args.begin() + static_cast<std::ptrdiff_t>(at), args.begin() + static_cast<std::ptrdiff_t>(at + counts[s]));
    at += static_cast<size_t>(counts[s]);
    if (kinds[s] == 0) {
      v = permuted(v, d, arg);
      Ints nd;
      for (int64_t p : arg) nd.push_back(d[static_cast<size_t>(p)]);
      d = nd;
    } else if (kinds[s] == 1) {
      const size_t axis = static_cast<size_t>(arg[0]);
      const int64_t index = arg[1] < 0 ? arg[1] + d[axis] : arg[1];
      const int64_t outer = count(d, 0, axis), extent = d[axis], inner = count(d, axis + 1);
      std::vector<double> y;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) y.push_back(v[static_cast<size_t>((o * extent + index) * inner + i)]);
      v = y;
      if (arg[2]) d[axis] = 1;
      else d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
    } else {
      Ints nd = arg;
      int64_t known = 1, infer = -1;
      for (size_t k = 0; k < nd.size(); ++k) {
        if (nd[k] == 0) nd[k] = d[k];
        if (nd[k] == -1) infer = static_cast<int64_t>(k);
        else known *= nd[k];
      }
      if (infer >= 0) nd[static_cast<size_t>(infer)] = static_cast<int64_t>(v.size()) / known;
      d = nd;  // a reshape keeps the values in order
    }
  }
  return {v};
}

OpCaseTable view_chain_cases() {
  OpCaseTable t = builtin_table("GraftViewChain", view_chain_formula);
  t.domain = kInternalDomain;
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64};
  // nn.MultiheadAttention's packed projection [S=5, B=2, 3*E=24] to head-major K [B*H=4, S, hd=4]:
  // Reshape(0, 0, 3, 8), Transpose, Gather(k = index -2), Reshape(5, -1, 4), Transpose (two copies:
  // no one stride walks the merged B * H axis).
  t.cases.push_back(make_case("mha_packed_qkv_to_heads", {data({5, 2, 24})}, {{4, 5, 4}},
                              chain_attrs({reshape_step({0, 0, 3, 8}), permute_step({2, 0, 1, 3}), select_step(0, -2, false),
                                           reshape_step({5, -1, 4}), permute_step({1, 0, 2})})));
  // A Gather keeping its axis, then a Flatten (of axes no one stride walks: two copies) and an
  // Unsqueeze.
  t.cases.push_back(make_case("select_keep_axis_then_flatten", {data({3, 4, 5})}, {{1, 15}},
                              chain_attrs({select_step(1, 2, true), reshape_step({-1}), reshape_step({1, -1})})));
  // A select on an axis merged from two strided ones (its index is a mixed-radix number):
  // [3, 4, 5] -> [4, 3, 5] -> [12, 5] -> row 12 - 5.
  t.cases.push_back(make_case("select_on_merged_axis", {data({3, 4, 5})}, {{5}},
                              chain_attrs({permute_step({1, 0, 2}), reshape_step({12, 5}), select_step(0, -5, false)})));
  // Reshapes that merge axes no strides express: the plan materializes twice (three copies).
  t.cases.push_back(make_case("three_copy_plan", {data({2, 3, 4})}, {{3, 8}},
                              chain_attrs({permute_step({1, 0, 2}), reshape_step({6, 4}), reshape_step({4, 6}),
                                           permute_step({1, 0}), reshape_step({2, 12}), reshape_step({3, -1})})));
  // Rank 1 up to rank 5 and back, with the last index kept.
  t.cases.push_back(make_case("rank1_to_rank5", {data({210})}, {{7, 5, 1, 2}},
                              chain_attrs({reshape_step({2, 3, 5, 7, 1}), permute_step({3, 2, 4, 0, 1}), select_step(4, -1, true),
                                           reshape_step({0, 0, 0, 2})})));
  // Squeeze a unit axis and select the first index of an odd axis, over a larger input.
  t.cases.push_back(make_case("squeeze_select_transpose", {data({1, 37, 3, 29})}, {{29, 37}},
                              chain_attrs({reshape_step({37, 3, 29}), select_step(1, 0, false), permute_step({1, 0})})));

  // Each malformed encoding, with the first case's input [5, 2, 24].
  t.bad_attributes.push_back({"arg_counts_not_one_per_step", raw_chain({0, 2}, {1, 0, 2, -1}, {3}), {}, "view_arg_counts"});
  t.bad_attributes.push_back({"arg_counts_past_the_args", raw_chain({0, 2}, {1, 0, 2, -1}, {3, 4}), {}, "view_arg_counts"});
  t.bad_attributes.push_back({"negative_arg_count", raw_chain({2, 2}, {-1, 10, 24}, {-1, 4}), {}, "view_arg_counts"});
  t.bad_attributes.push_back({"args_left_over", raw_chain({0}, {1, 0, 2, 7}, {3}), {}, "view_args"});
  t.bad_attributes.push_back({"unknown_step_kind", raw_chain({3}, {1, 0, 2}, {3}), {}, "view_kinds"});
  t.bad_attributes.push_back({"no_steps", raw_chain({}, {}, {}), {}, "view_kinds"});
  t.bad_attributes.push_back({"not_a_permutation", raw_chain({0}, {1, 1, 2}, {3}), {}, "view_args"});
  t.bad_attributes.push_back({"select_keep_2", raw_chain({1}, {0, 1, 2}, {3}), {}, "view_args"});
  t.bad_attributes.push_back({"select_negative_axis", raw_chain({1}, {-1, 0, 0}, {3}), {}, "view_args"});
  t.bad_attributes.push_back({"reshape_two_minus_ones", raw_chain({2}, {-1, 4, -1}, {3}), {}, "view_args"});
  // Encodings that are sound but do not fit the input [5, 2, 24].
  t.bad_attributes.push_back({"select_index_past_the_axis", chain_attrs({select_step(1, 2, false)}), {}, "view_args"});
  t.bad_attributes.push_back({"select_index_before_the_axis", chain_attrs({select_step(0, -6, true)}), {}, "view_args"});
  t.bad_attributes.push_back({"permute_of_wrong_rank", chain_attrs({permute_step({1, 0})}), {}, "view_args"});
  t.bad_attributes.push_back({"reshape_to_wrong_count", chain_attrs({reshape_step({5, 2, 25})}), {}, "view_args"});
  t.bad_attributes.push_back({"reshape_indivisible", chain_attrs({reshape_step({7, -1})}), {}, "view_args"});
  return t;
}

// ---- GraftConcatSlices --------------------------------------------------------------------------

AttributeMap concat_slices_attrs(int64_t axis, Ints starts, Ints ends) {
  AttributeMap a;
  a.set("axis", axis);
  a.set("starts", std::move(starts));
  a.set("ends", std::move(ends));
  return a;
}

// Y = the concatenation along `axis` of X_k[.., b_k:e_k, ..], with b and e Slice's: negative counts
// from the end, then clamped to [0, extent]; e <= b is empty.
Values concat_slices_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const size_t rank = dims[0].size();
  const size_t axis = static_cast<size_t>(axis_in(a.get_int("axis", 0).value(), rank));
  const Ints starts = a.get_ints("starts", {}).value(), ends = a.get_ints("ends", {}).value();
  const int64_t outer = count(dims[0], 0, axis), inner = count(dims[0], axis + 1);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t extent = dims[k][axis];
    auto clamp = [extent](int64_t v) {
      if (v < 0) v += extent;
      return std::min(std::max(v, int64_t{0}), extent);
    };
    const int64_t b = clamp(starts[k]), e = std::max(b, clamp(ends[k]));
    ranges.push_back({b, e});
  }
  std::vector<double> y;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < in.size(); ++k)
      for (int64_t j = ranges[k].first; j < ranges[k].second; ++j)
        for (int64_t i = 0; i < inner; ++i) y.push_back(in[k][static_cast<size_t>((o * dims[k][axis] + j) * inner + i)]);
  return {y};
}

OpCaseTable concat_slices_cases() {
  OpCaseTable t = builtin_table("GraftConcatSlices", concat_slices_formula);
  t.domain = kInternalDomain;
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64};
  // torch.roll(x, 2, dims=1) as exported: Concat(x[:, -2:], x[:, :-2]) (the end INT64_MAX).
  t.cases.push_back(make_case("roll_axis1", {data({2, 7, 3}), data({2, 7, 3})}, {{2, 7, 3}},
                              concat_slices_attrs(1, {-2, 0}, {kInt64Max, -2})));
  // Three inputs along the last axis, starts and ends past either end clamped: 3 + 3 + 2.
  t.cases.push_back(make_case("three_inputs_last_axis_clamped", {data({3, 4, 5}), data({3, 4, 6}), data({3, 4, 2})},
                              {{3, 4, 8}}, concat_slices_attrs(-1, {1, -100, 0}, {4, 3, 100})));
  // Rank 1: [3, 9) and [3, 7).
  t.cases.push_back(make_case("rank1", {data({10}), data({7})}, {{10}}, concat_slices_attrs(0, {3, -4}, {-1, 7})));
  // Inputs whose slices are empty (an empty range, an end before the start) between others: 2 + 2.
  t.cases.push_back(make_case("empty_slices_between", {data({4, 5}), data({3, 5}), data({6, 5}), data({2, 5})}, {{4, 5}},
                              concat_slices_attrs(0, {2, 1, 5, 0}, {2, 3, 1, 99})));
  // Rank 4 along axis 2, odd extents: 5 + 3.
  t.cases.push_back(make_case("rank4_axis2", {data({2, 3, 5, 7}), data({2, 3, 4, 7})}, {{2, 3, 8, 7}},
                              concat_slices_attrs(2, {0, 1}, {5, 4})));
  // One input: a plain Slice.
  t.cases.push_back(make_case("single_slice", {data({4, 9})}, {{4, 5}}, concat_slices_attrs(1, {2}, {-2})));

  t.bad_attributes.push_back({"starts_not_one_per_input", concat_slices_attrs(1, {-2}, {kInt64Max, -2}), {}, "starts"});
  t.bad_attributes.push_back({"ends_not_one_per_input", concat_slices_attrs(1, {-2, 0}, {kInt64Max, -2, 0}), {}, "ends"});
  t.bad_attributes.push_back({"axis_past_the_rank", concat_slices_attrs(3, {-2, 0}, {kInt64Max, -2}), {}, "axis"});
  t.bad_attributes.push_back({"axis_before_the_rank", concat_slices_attrs(-4, {-2, 0}, {kInt64Max, -2}), {}, "axis"});
  AttributeMap no_axis = concat_slices_attrs(1, {-2, 0}, {kInt64Max, -2});
  no_axis.erase("axis");
  t.bad_attributes.push_back({"axis_missing", no_axis, {}, "axis"});
  return t;
}

// ---- GraftElementwise ---------------------------------------------------------------------------

// One instruction: its opcode and operands (a register >= 0, or imm(k) for immediate k).
struct Instr {
  EwOp op;
  int64_t a, b = 0, c = 0;
};
constexpr int64_t imm(int64_t k) { return -k - 1; }

// Instruction i writes register n_inputs + i.
AttributeMap program_attrs(int64_t n_inputs, const std::vector<Instr>& code, std::vector<float> immediates,
                           int64_t output_register, DataType to = DataType::kFloat32) {
  Ints program;
  for (size_t i = 0; i < code.size(); ++i)
    program.insert(program.end(), {static_cast<int64_t>(code[i].op), n_inputs + static_cast<int64_t>(i), code[i].a,
                                   code[i].b, code[i].c});
  AttributeMap a;
  a.set("program", program);
  a.set("immediates", std::move(immediates));
  a.set("output_register", output_register);
  a.set("to", static_cast<int64_t>(to));
  return a;
}

// float16's nearest value (ties to even) of v: 11 significant bits, subnormals in steps of 2^-24,
// past 65504 infinite.
double round_to_half(double v) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int quantum = std::max(e - 11, -24);
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, r) : r;
}

// The program run per element in double, rounded to float32 after every instruction (the op's
// definition: the unfused float32 chain). The program is decoded here from its five ints per
// instruction: opcode, destination, operands a, b, c (>= 0 registers, < 0 immediates).
Values elementwise_formula(const Values& in, const DimsList&, const AttributeMap& at) {
  const Ints code = at.get_ints("program", {}).value();
  const std::vector<float> immediates = at.get_floats("immediates", {}).value();
  const int64_t out = at.get_int("output_register", -1).value();
  const size_t n = in[0].size();
  std::vector<double> y(n);
  for (size_t e = 0; e < n; ++e) {
    std::vector<double> reg;
    for (const auto& x : in) reg.push_back(x[e]);
    auto operand = [&](int64_t r) { return r >= 0 ? reg.at(static_cast<size_t>(r)) : double{immediates.at(static_cast<size_t>(-r - 1))}; };
    for (size_t i = 0; i + 4 < code.size(); i += 5) {
      const double a = operand(code[i + 2]);
      double v = 0.0;
      switch (static_cast<EwOp>(code[i])) {
        case EwOp::kCopy: v = a; break;
        case EwOp::kAdd: v = a + operand(code[i + 3]); break;
        case EwOp::kSub: v = a - operand(code[i + 3]); break;
        case EwOp::kMul: v = a * operand(code[i + 3]); break;
        case EwOp::kDiv: v = a / operand(code[i + 3]); break;
        case EwOp::kPow: v = std::pow(a, operand(code[i + 3])); break;
        case EwOp::kRelu: v = std::max(a, 0.0); break;
        case EwOp::kSigmoid: v = 1.0 / (1.0 + std::exp(-a)); break;
        case EwOp::kTanh: v = std::tanh(a); break;
        case EwOp::kErf: v = std::erf(a); break;
        case EwOp::kSqrt: v = std::sqrt(a); break;
        case EwOp::kNeg: v = -a; break;
        case EwOp::kAbs: v = std::fabs(a); break;
        case EwOp::kExp: v = std::exp(a); break;
        case EwOp::kLog: v = std::log(a); break;
        case EwOp::kReciprocal: v = 1.0 / a; break;
        case EwOp::kHardSigmoid: v = std::clamp(operand(code[i + 3]) * a + operand(code[i + 4]), 0.0, 1.0); break;
        case EwOp::kHardSwish: v = a * std::clamp(a / 6.0 + 0.5, 0.0, 1.0); break;
        case EwOp::kClip: v = std::min(std::max(a, operand(code[i + 3])), operand(code[i + 4])); break;
        case EwOp::kGeluErf: v = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0))); break;
        case EwOp::kGeluTanh: v = 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (a + 0.044715 * a * a * a))); break;
        case EwOp::kRoundHalf: v = round_to_half(a); break;
        case EwOp::kMax: v = std::max(a, operand(code[i + 3])); break;
        case EwOp::kMin: v = std::min(a, operand(code[i + 3])); break;
        default: v = NAN;
      }
      reg.push_back(static_cast<float>(v));
    }
    y[e] = reg.at(static_cast<size_t>(out));
  }
  return {y};
}

OpCaseTable elementwise_cases() {
  OpCaseTable t = builtin_table("GraftElementwise", elementwise_formula);
  t.domain = kInternalDomain;
  // Its inputs are float32 or float16 (no float64): the float32 run is the reference.
  t.reference_dtype = DataType::kFloat32;
  using E = EwOp;
  // x * sigmoid(x) + r (a Swish and its residual), over [3, 17].
  t.cases.push_back(make_case("swish_residual_2_inputs", {data({3, 17}), data({3, 17})}, {{3, 17}},
                              program_attrs(2, {{E::kSigmoid, 0}, {E::kMul, 0, 2}, {E::kAdd, 3, 1}}, {}, 4)));
  // Every unary op but the Gelus in one chain over one input:
  // relu(erf(tanh(1 / exp(-log(sqrt(|x| + 0.25))))) - 0.5), copied.
  t.cases.push_back(make_case("unary_chain_1_input", {data({5, 7, 3})}, {{5, 7, 3}},
                              program_attrs(1,
                                            {{E::kAbs, 0}, {E::kAdd, 1, imm(0)}, {E::kSqrt, 2}, {E::kLog, 3}, {E::kNeg, 4},
                                             {E::kExp, 5}, {E::kReciprocal, 6}, {E::kTanh, 7}, {E::kErf, 8},
                                             {E::kSub, 9, imm(1)}, {E::kRelu, 10}, {E::kCopy, 11}},
                                            {0.25f, 0.5f}, 12)));
  // gelu_erf(x) + gelu_tanh(x) - hard_swish(x), over both of hard_swish's kinks (3 * 1031 elements:
  // many vector groups and a partial one).
  t.cases.push_back(make_case("gelus_minus_hard_swish", {data({3, 1031}, -5, 5)}, {{3, 1031}},
                              program_attrs(1, {{E::kGeluErf, 0}, {E::kGeluTanh, 0}, {E::kHardSwish, 0}, {E::kAdd, 1, 2},
                                                {E::kSub, 4, 3}},
                                            {}, 5)));
  // Three inputs: (2 - clip(min(max(a, b), c), -0.5, 0.75) * hard_sigmoid(b; 0.2, 0.5) / (|c| + 1))
  // * max(a, b): an immediate as the first operand, five values saved for later reads (past the
  // CUDA kernel's small register file).
  t.cases.push_back(make_case("three_inputs_clip_hard_sigmoid_min_max", {data({4, 9}), data({4, 9}), data({4, 9})},
                              {{4, 9}},
                              program_attrs(3,
                                            {{E::kMax, 0, 1}, {E::kMin, 3, 2}, {E::kClip, 4, imm(0), imm(1)},
                                             {E::kHardSigmoid, 1, imm(2), imm(3)}, {E::kMul, 5, 6}, {E::kAbs, 2},
                                             {E::kAdd, 8, imm(4)}, {E::kDiv, 7, 9}, {E::kSub, imm(5), 10}, {E::kMul, 11, 3}},
                                            {-0.5f, 0.75f, 0.2f, 0.5f, 1.0f, 2.0f}, 12)));
  // Pow with immediate and tensor exponents, and a Cast to float16 inside the chain (a float32
  // product kept at float16 precision; add, sub, mul and div round alike on every backend, so the
  // float16 rounding sees the same value everywhere): with b = |y| + 0.5,
  // float16(x * y) * b^(x^2) * b^1.5.
  t.cases.push_back(make_case("pow_round_half_inside", {data({33}, -1.5, 1.5), data({33}, 0.5, 3)}, {{33}},
                              program_attrs(2,
                                            {{E::kPow, 0, imm(0)}, {E::kAbs, 1}, {E::kAdd, 3, imm(1)}, {E::kPow, 4, 2},
                                             {E::kPow, 4, imm(2)}, {E::kMul, 0, 1}, {E::kRoundHalf, 7}, {E::kMul, 8, 5},
                                             {E::kMul, 9, 6}},
                                            {2.0f, 0.5f, 1.5f}, 10)));
  // A float16 output ('to'): gelu_erf(a * b + c) over [2, 1, 5, 3].
  t.cases.push_back(make_case("float16_output_3_inputs", {data({2, 1, 5, 3}), data({2, 1, 5, 3}), data({2, 1, 5, 3})},
                              {{2, 1, 5, 3}},
                              program_attrs(3, {{E::kMul, 0, 1}, {E::kAdd, 3, 2}, {E::kGeluErf, 4}}, {}, 5,
                                            DataType::kFloat16)));
  // The output register is an earlier instruction's, not the last one's: (a - b)^2.
  t.cases.push_back(make_case("output_register_not_last", {data({7, 5}), data({7, 5})}, {{7, 5}},
                              program_attrs(2, {{E::kSub, 0, 1}, {E::kMul, 2, 2}, {E::kExp, 3}, {E::kNeg, 4}}, {}, 3)));
  // The output is input 1 passed through, beside an unused instruction.
  t.cases.push_back(make_case("output_register_an_input", {data({13}), data({13})}, {{13}},
                              program_attrs(2, {{E::kAdd, 0, 1}}, {}, 1)));

  // Each malformed program, with the first case's two inputs.
  t.bad_attributes.push_back({"unknown_opcode", program_attrs(2, {{static_cast<E>(24), 0, 1}}, {}, 2), {}, "program"});
  t.bad_attributes.push_back({"negative_opcode", program_attrs(2, {{static_cast<E>(-1), 0}}, {}, 2), {}, "program"});
  t.bad_attributes.push_back({"register_read_before_written", program_attrs(2, {{E::kAdd, 0, 2}}, {}, 2), {}, "program"});
  t.bad_attributes.push_back({"immediate_past_the_list", program_attrs(2, {{E::kMul, 0, imm(1)}}, {3.0f}, 2), {}, "program"});
  {
    AttributeMap a = program_attrs(2, {{E::kRelu, 0}}, {}, 2);
    a.set("program", Ints{static_cast<int64_t>(E::kRelu), 3, 0, 0, 0});  // writes register 3, not 2
    t.bad_attributes.push_back({"destination_not_the_next_register", a, {}, "program"});
    a.set("program", Ints{static_cast<int64_t>(E::kRelu), 2, 0, 0});
    t.bad_attributes.push_back({"program_not_five_ints_per_instruction", a, {}, "program"});
    a.set("program", Ints{});
    t.bad_attributes.push_back({"empty_program", a, {}, "program"});
  }
  // (The status is tagged 'program'; its text counts the immediates against their limit.)
  t.bad_attributes.push_back({"too_many_immediates", program_attrs(2, {{E::kAdd, 0, imm(0)}}, std::vector<float>(33, 1.f), 2),
                              {}, "immediates"});
  t.bad_attributes.push_back({"output_register_past_the_program", program_attrs(2, {{E::kAdd, 0, 1}}, {}, 3), {},
                              "output_register"});
  t.bad_attributes.push_back({"output_register_negative", program_attrs(2, {{E::kAdd, 0, 1}}, {}, -1), {}, "output_register"});
  t.bad_attributes.push_back({"to_float64", program_attrs(2, {{E::kAdd, 0, 1}}, {}, 2, DataType::kFloat64), {}, "to"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> internal_views_case_tables() {
  return {strided_copy_cases(), view_chain_cases(), concat_slices_cases(), elementwise_cases()};
}

}  // namespace graft::optest
