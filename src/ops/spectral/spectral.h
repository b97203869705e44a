// The spectral family (DFT, STFT, MelWeightMatrix): what its definitions (spectral.cpp for DFT and
// STFT, mel_weight_matrix.cpp: schemas, inference, CPU references) and its CUDA ops (spectral.cu,
// mel_weight_matrix.cu) share. DFT's and STFT's attributes and
// the layouts of their sums, and MelWeightMatrix's dtype and size checks, are read one way by all
// of them, so every backend validates (and words its errors) the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

// The longest transform graft computes (dft_length, frame_length): an output row of this many
// complex values is already 128 MiB in float32, and nobody runs a naive DFT that long.
inline constexpr int64_t kMaxDftLength = int64_t{1} << 24;
// The most complex multiply-adds one node may take (output bins times the samples each sums): the
// work is quadratic in the length, so a small model could otherwise ask for hours of it.
inline constexpr int64_t kMaxSpectralTerms = int64_t{1} << 32;

// One spectral sum, shared by DFT and STFT. y is [batch, frames, bins, inner, 2] (row-major) and
//   y[a, f, k, i] = scale * sum_{m < terms} w[m] * x(a, f, i, m) * exp(sign * 2*pi*j * (k*m mod n) / n)
// where x(a, f, i, m) is the scalar at a*batch_stride + f*frame_stride + i*inner_stride +
// m*term_stride (its imaginary part follows it when complex_input), w is the window (1 when none),
// sign is -1 (+1 for the inverse) and scale is 1 (1/n for the inverse).
struct SpectralLayout {
  int64_t batch = 1, frames = 1, bins = 1, inner = 1;
  int64_t batch_stride = 0, frame_stride = 0, inner_stride = 0, term_stride = 0;
  int64_t terms = 0;  // samples summed per bin (fewer than n: zero padding)
  int64_t n = 1;      // the transform length (the period of the twiddles)
  bool complex_input = false;
  bool inverse = false;
  // DFT with inverse and onesided (numpy's irfft): x holds bins 0..terms-1 of a spectrum that is
  // Hermitian over n, and y is real, [batch, n, inner, 1]: y[t] = (1/n) sum_k c_k Re(x_k e^{2 pi j k t / n})
  // over k <= n/2, c_k = 1 for k = 0 and for k = n/2 (n even), 2 otherwise: the imaginary parts of
  // those two bins are ignored, as numpy's (and ONNX's reference) irfft ignores them. `bins` is n.
  bool real_output = false;
  int64_t out_numel() const { return batch * frames * bins * inner * (real_output ? 1 : 2); }
};

// DFT's attributes. Before opset 20 the axis is the attribute `axis` (default 1); from opset 20 on
// it is input 2 (default -2) and the attribute is an error.
struct DftAttrs {
  bool inverse = false;
  bool onesided = false;
  int64_t axis = 1;               // the attribute's value (opset < 20) or the default -2
  bool axis_is_attribute = true;  // errors about the axis name the attribute
};
Result<DftAttrs> dft_attrs(const AttributeMap& attrs, int opset);
// `axis` against the input's rank: [-rank, -2] or [0, rank - 2] (the last axis holds re/im).
Result<int64_t> normalize_dft_axis(int64_t axis, int64_t rank);
// The layout of DFT over x (dims [..., 1 or 2]); dft_length nullopt: the axis' length.
// Errors name the input or attribute at fault; too much work is kUnsupported.
Result<SpectralLayout> dft_layout(const std::vector<int64_t>& x_dims, int64_t axis,
                                  std::optional<int64_t> dft_length, const DftAttrs& a);

// STFT's onesided (default 1).
Result<bool> stft_onesided(const AttributeMap& attrs);
// The layout of STFT over signal [batch, length, 1 or 2]; window_length nullopt: no window,
// frame_length nullopt: the window's length, or the signal's without a window.
Result<SpectralLayout> stft_layout(const std::vector<int64_t>& signal_dims, int64_t frame_step,
                                   std::optional<int64_t> window_length, std::optional<int64_t> frame_length,
                                   bool onesided);

// The one integer (int32 or int64, rank 0 or [1]) input `what` holds; kInvalidModel otherwise.
Result<int64_t> integer_scalar(const Tensor& t, const char* what);

// ---- MelWeightMatrix -------------------------------------------------------------------------

// The most weights one node makes: the dims are input values, so they are bounded before anything
// is allocated (a 2^28-element float32 matrix is already 1 GiB).
inline constexpr int64_t kMaxMelWeights = int64_t{1} << 28;

// The output dtype from output_datatype (default 1, float32); errors name the attribute.
Result<DataType> mel_output_dtype(const AttributeMap& attrs);

// num_mel_bins >= 0, dft_length >= 1, sample_rate >= 1 and the output's size within the bound;
// errors name the input at fault.
Status check_mel_sizes(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate);

}  // namespace graft
