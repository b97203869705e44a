// Schema of MelWeightMatrix (opset 17): three integer scalars (num_mel_bins, dft_length,
// sample_rate) and two floating ones (the band's edges in hertz) make a
// [floor(dft_length / 2) + 1, num_mel_bins] matrix of output_datatype. The dims are input values:
// known at build time when they are constants, otherwise fresh symbols that the run-time inference
// (every input value on the host) resolves. Kernel: src/backends/cpu/mel.cpp.
#include <optional>
#include <vector>

#include "backends/cpu/mel.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// Input i is a scalar (rank 0 or [1]) of one of `types`.
Status check_scalar_input(const InferContext& ctx, size_t i, const std::vector<DataType>& types,
                          const char* what) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, types));
  const TensorDesc& d = ctx.input(i);
  if (d.shape && !(d.rank() == 0 || (d.rank() == 1 && (*d.shape)[0] == 1)))
    return ctx.fail("input ", what, " must be a scalar, got ", d.to_string());
  return Status::ok();
}

// The value of integer scalar input i when known (a constant or a symbolic value).
Result<std::optional<Dim>> scalar_dim(const InferContext& ctx, size_t i, const char* what) {
  auto v = ctx.input_dims_value(i);
  if (!v) return std::optional<Dim>();
  if (v->size() != 1)
    return ctx.fail("input ", what, " must hold one value, got ", static_cast<int64_t>(v->size()));
  return std::optional<Dim>((*v)[0]);
}

Status infer_mel_weight_matrix(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(DataType out, mel_output_dtype(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 0, {kI32, kI64}, "num_mel_bins"));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 1, {kI32, kI64}, "dft_length"));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 2, {kI32, kI64}, "sample_rate"));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 3, kFloatTypes, "lower_edge_hertz"));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 4, kFloatTypes, "upper_edge_hertz"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> mels, scalar_dim(ctx, 0, "num_mel_bins"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> len, scalar_dim(ctx, 1, "dft_length"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> rate, scalar_dim(ctx, 2, "sample_rate"));
  // Each known number is checked alone (the others standing in at their smallest valid value);
  // all three known also bound the output's size.
  auto known = [](const std::optional<Dim>& d, int64_t fallback) {
    return d && d->is_const() ? d->value() : fallback;
  };
  GRAFT_RETURN_IF_ERROR(check_mel_sizes(known(mels, 0), known(len, 1), known(rate, 1)));
  if (mels && mels->is_const() && len && len->is_const())
    GRAFT_RETURN_IF_ERROR(check_mel_sizes(mels->value(), len->value(), known(rate, 1)));
  const Dim bins = len ? floor_div(*len, Dim(2)) + Dim(1) : ctx.unknown_dim();
  ctx.set_output(0, desc_of(out, Shape{bins, mels ? *mels : ctx.unknown_dim()}));
  return Status::ok();
}

}  // namespace

void append_mel_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"MelWeightMatrix", 17, infer_mel_weight_matrix, cpu::mel_weight_matrix});
}

}  // namespace graft
