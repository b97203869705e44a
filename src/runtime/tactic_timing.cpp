#include "runtime/tactic_timing.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace graft {

namespace {
const std::vector<int64_t>& profile_dims(const ProfileRange& r, ProfilePoint point) {
  return point == ProfilePoint::kMin ? r.min : point == ProfilePoint::kMax ? r.max : r.opt;
}

// Every input's dims at `point`: its static dims, or its range's min, opt or max in that profile.
Result<std::vector<std::vector<int64_t>>> dims_at(const Engine& engine, const std::vector<IOInfo>& ins,
                                                  TimingPoint point) {
  GRAFT_ASSIGN_OR_RETURN(OptimizationProfile profile, engine.profile(point.profile));
  std::vector<std::vector<int64_t>> all;
  for (const IOInfo& in : ins) {
    auto it = profile.find(in.name);
    all.push_back(it != profile.end() ? profile_dims(it->second, point.point) : in.static_dims);
  }
  return all;
}
}  // namespace

std::vector<TimingPoint> distinct_profile_points(const Engine& engine) {
  const std::vector<IOInfo> ins = engine.inputs();
  std::vector<TimingPoint> points;
  std::vector<std::vector<std::vector<int64_t>>> seen;
  for (int k = 0; k < engine.num_profiles(); ++k)
    for (ProfilePoint p : {ProfilePoint::kOpt, ProfilePoint::kMin, ProfilePoint::kMax}) {
      auto shapes = dims_at(engine, ins, TimingPoint(p, k));
      if (!shapes || std::find(seen.begin(), seen.end(), *shapes) != seen.end()) continue;
      seen.push_back(std::move(shapes).value());
      points.emplace_back(p, k);
    }
  return points;
}

Result<std::map<std::string, Tensor>> timing_inputs(const Engine& engine, TimingPoint point) {
  std::map<std::string, Tensor> inputs;
  std::mt19937 rng(20261130);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  const std::vector<IOInfo> ins = engine.inputs();
  GRAFT_ASSIGN_OR_RETURN(auto all_dims, dims_at(engine, ins, point));
  for (size_t i = 0; i < ins.size(); ++i) {
    const IOInfo& in = ins[i];
    const std::vector<int64_t>& dims = all_dims[i];
    for (int64_t d : dims)
      if (d < 0) return error(StatusCode::kInvalidArgument, "input '", in.name, "' has no static shape or profile");
    auto allocated = Tensor::allocate(in.dtype, dims);
    if (!allocated)
      return error(allocated.status().code(), "timing input '", in.name, "': ", allocated.status().message());
    Tensor t = std::move(allocated).value();
    std::memset(t.data(), 0, t.nbytes());
    if (dtype_is_float(in.dtype))
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, uni(rng));
    inputs[in.name] = std::move(t);
  }
  return inputs;
}

}  // namespace graft
