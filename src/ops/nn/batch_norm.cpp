// BatchNormalization: its schema and CPU reference (the nn family, nn.h).
#include "ops/nn/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/nn/nn_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft::cpu {

// BatchNormalization: Y = (X - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c]. Inference takes
// mean and var from the inputs. Training mode (opset 14) takes them from the batch (over every axis
// but 1; the variance is the population one, divided by the count, as ONNX's reference computes it)
// and also returns running_mean = input_mean * momentum + mean * (1 - momentum), and running_var
// alike.

Status batch_normalization(ExecContext& ctx) {
  const char* names[5] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 5; ++i)
    GRAFT_RETURN_IF_ERROR(require_float_tensor(i < ctx.inputs.size() ? ctx.inputs[i] : nullptr, names[i]));
  GRAFT_ASSIGN_OR_RETURN(int64_t training, ctx.attrs->get_int("training_mode", 0));
  if (training != 0 && training != 1) return attr_error("training_mode", "must be 0 or 1, got ", training);
  GRAFT_ASSIGN_OR_RETURN(float eps, ctx.attrs->get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(float momentum, ctx.attrs->get_float("momentum", 0.9f));
  const Tensor& X = *ctx.inputs[0];
  if (X.rank() < 2)
    return error(StatusCode::kInvalidModel, "BatchNormalization: X must have rank >= 2, got ", ints_to_string(X.dims()));
  const int64_t N = X.dims()[0], C = X.dims()[1], inner = numel_of(tail(X.dims(), 2));
  for (size_t i = 1; i < 5; ++i)
    if (ctx.inputs[i]->numel() != C)
      return error(StatusCode::kInvalidModel, "BatchNormalization: input ", names[i], " has ",
                   ctx.inputs[i]->numel(), " elements; expected C = ", C);
  std::vector<double> x = load_doubles(X), scale = load_doubles(*ctx.inputs[1]), bias = load_doubles(*ctx.inputs[2]),
                      mean = load_doubles(*ctx.inputs[3]), var = load_doubles(*ctx.inputs[4]);
  if (training == 1) {
    const double count = static_cast<double>(N * inner);
    std::vector<double> bmean(static_cast<size_t>(C), 0.0), bvar(static_cast<size_t>(C), 0.0);
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) bmean[static_cast<size_t>(c)] += x[static_cast<size_t>((b * C + c) * inner + i)];
    for (double& m : bmean) m = count > 0 ? m / count : 0.0;
    // Two passes (mean, then squared deviations) keep the variance exact for data far from 0.
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = x[static_cast<size_t>((b * C + c) * inner + i)] - bmean[static_cast<size_t>(c)];
          bvar[static_cast<size_t>(c)] += d * d;
        }
    for (double& v : bvar) v = count > 0 ? v / count : 0.0;
    const double m = static_cast<double>(momentum);
    for (size_t o = 1; o < 3; ++o) {
      Tensor* out = o < ctx.outputs.size() ? ctx.outputs[o] : nullptr;
      if (!out) continue;
      const std::vector<double>& running = o == 1 ? mean : var;
      const std::vector<double>& batch = o == 1 ? bmean : bvar;
      std::vector<double> r(static_cast<size_t>(C));
      for (size_t c = 0; c < r.size(); ++c) r[c] = running[c] * m + batch[c] * (1.0 - m);
      store_doubles(*out, r);
    }
    mean = std::move(bmean);
    var = std::move(bvar);
  }
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const size_t ci = static_cast<size_t>(c);
      const double inv = 1.0 / std::sqrt(var[ci] + static_cast<double>(eps));
      for (int64_t i = 0; i < inner; ++i) {
        size_t k = static_cast<size_t>((b * C + c) * inner + i);
        y[k] = (x[k] - mean[ci]) * inv * scale[ci] + bias[ci];
      }
    }
  store_doubles(*ctx.outputs[0], y);
  return Status::ok();
}

}  // namespace graft::cpu

namespace graft {

namespace {

Status infer_batch_norm(InferContext& ctx) {
  auto training_attr = ctx.attrs().get_int("training_mode", 0);
  if (!training_attr) return Status(training_attr.status()).with_attribute("training_mode");
  const int64_t training = training_attr.value();
  if (training != 0 && training != 1) return attr_error("training_mode", "must be 0 or 1, got ", training);
  // training_mode exists from opset 14, with outputs Y, running_mean, running_var; before it the
  // extra outputs (mean, var, saved_mean, saved_var) meant training, which graft does not run.
  if (training == 1 && ctx.opset() < 14)
    return attr_error("training_mode", "exists from opset 14; the model is opset ", static_cast<int64_t>(ctx.opset()));
  if (training == 0)
    for (size_t i = 1; i < ctx.node().outputs.size(); ++i)
      if (output_requested(ctx, i))
        return error(StatusCode::kUnsupported, "output ", static_cast<int64_t>(i),
                     " (running/saved mean or variance) exists only in training mode (training_mode = 1, "
                     "opset >= 14)");
  if (training == 1 && ctx.node().outputs.size() > 3)
    return ctx.fail("training mode has at most 3 outputs (Y, running_mean, running_var), got ",
                    static_cast<int64_t>(ctx.node().outputs.size()));
  auto momentum = ctx.attrs().get_float("momentum", 0.9f);
  if (!momentum) return Status(momentum.status()).with_attribute("momentum");
  GRAFT_ASSIGN_OR_RETURN(float eps, ctx.attrs().get_float("epsilon", 1e-5f));
  if (!(eps >= 0.0f)) return attr_error("epsilon", "must be >= 0, got ", static_cast<double>(eps));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 2) return ctx.fail("input X must have rank >= 2 (N, C, ...), got ", shape_to_string(x));
  const char* names[5] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    GRAFT_ASSIGN_OR_RETURN(Shape p, ctx.input_shape(i));
    GRAFT_RETURN_IF_ERROR(require_float_input(ctx, i, names[i]));
    if (p.size() != 1 || (p[0].is_const() && x[1].is_const() && p[0].value() != x[1].value()))
      return ctx.fail("input ", names[i], " ", shape_to_string(p), " must be 1-D with C = ", x[1].to_string(),
                      " elements (X ", shape_to_string(x), ")");
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, x));
  for (size_t i = 1; training == 1 && i < ctx.num_outputs(); ++i)
    ctx.set_output(i, TensorDesc(ctx.input(2 + i).dtype, Shape{x[1]}));
  return Status::ok();
}

}  // namespace

void append_batch_norm_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"BatchNormalization", 11, infer_batch_norm, cpu::batch_normalization});
}

}  // namespace graft
