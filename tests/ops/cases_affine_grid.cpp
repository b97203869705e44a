// Cases for ONNX AffineGrid (opset 20): 2-D and 3-D grids, align_corners 0 and 1, batches of
// several matrices, and axes of one position (-1 with align_corners, 0 without, as ONNX's reference
// implementation makes them). The independent formula builds each base coordinate as
// -1 + 2i / (S - 1) or (2i + 1) / S - 1 and multiplies theta's rows by (x, y[, z], 1).
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

AttributeMap align_attr(int64_t align) {
  AttributeMap a;
  a.set("align_corners", align);
  return a;
}

double base_coordinate(int64_t i, int64_t s, bool align) {
  if (align) return s == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(s - 1);
  return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(s) - 1.0;
}

std::vector<std::vector<double>> affine_grid_formula(const std::vector<std::vector<double>>& in,
                                                     const std::vector<std::vector<int64_t>>& dims,
                                                     const AttributeMap& attrs) {
  const bool align = attrs.get_int("align_corners", 0).value() == 1;
  const std::vector<double>& theta = in[0];
  const std::vector<double>& size = in[1];
  const int k = static_cast<int>(size.size()) - 2;
  const int64_t n_images = static_cast<int64_t>(size[0]);
  // Extents innermost first: W, H[, D].
  std::vector<int64_t> ext;
  for (int a = k - 1; a >= 0; --a) ext.push_back(static_cast<int64_t>(size[static_cast<size_t>(2 + a)]));
  int64_t per_image = 1;
  for (int64_t e : ext) per_image *= e;
  std::vector<double> y;
  for (int64_t n = 0; n < n_images; ++n)
    for (int64_t p = 0; p < per_image; ++p) {
      std::vector<double> col;  // x, y[, z], 1
      int64_t rem = p;
      for (int a = 0; a < k; ++a) {
        col.push_back(base_coordinate(rem % ext[static_cast<size_t>(a)], ext[static_cast<size_t>(a)], align));
        rem /= ext[static_cast<size_t>(a)];
      }
      col.push_back(1.0);
      for (int r = 0; r < k; ++r) {
        double v = 0.0;
        for (int c = 0; c <= k; ++c)
          v += theta[static_cast<size_t>((n * k + r) * (k + 1) + c)] * col[static_cast<size_t>(c)];
        y.push_back(v);
      }
    }
  (void)dims;
  return {y};
}

}  // namespace

std::vector<OpCaseTable> affine_grid_case_tables() {
  OpCaseTable t = builtin_table("AffineGrid", affine_grid_formula, 20);
  t.cases.push_back(make_case("2d_two_images", {data({2, 2, 3}, -1.5, 1.5), int64_values({2, 3, 4, 5})},
                              {{2, 4, 5, 2}}, align_attr(0)));
  t.cases.push_back(make_case("2d_align_corners", {data({1, 2, 3}, -1.5, 1.5), int64_values({1, 1, 3, 6})},
                              {{1, 3, 6, 2}}, align_attr(1)));
  t.cases.push_back(make_case("3d_two_images", {data({2, 3, 4}, -1.5, 1.5), int64_values({2, 1, 3, 4, 2})},
                              {{2, 3, 4, 2, 3}}, align_attr(0)));
  t.cases.push_back(make_case("3d_align_corners", {data({1, 3, 4}, -1.5, 1.5), int64_values({1, 2, 2, 3, 4})},
                              {{1, 2, 3, 4, 3}}, align_attr(1)));
  t.cases.push_back(make_case("one_row_align_corners",
                              {data({1, 2, 3}, -1.5, 1.5), int64_values({1, 1, 1, 5})}, {{1, 1, 5, 2}},
                              align_attr(1)));
  t.cases.push_back(
      make_case("one_row_default", {data({1, 2, 3}, -1.5, 1.5), int64_values({1, 1, 1, 5})}, {{1, 1, 5, 2}}));
  t.bad_attributes.push_back({"align_corners_2", align_attr(2), {}, "align_corners"});
  return {t};
}

}  // namespace graft::optest
