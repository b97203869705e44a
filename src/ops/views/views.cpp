// The internal ops that stand for a chain of pure data-movement nodes (Transpose, Gather of one
// constant index, Reshape/Squeeze/Unsqueeze/Flatten), built by src/graph/compose_views.cpp:
//
// GraftStridedCopy(X) -> Y: the chain over static shapes, as one strided gather.
//   attrs: shape (ints, Y's dims), strides (ints, one per Y axis, in elements of X, >= 0),
//          offset (int, elements of X).
//   Y[i0, .., ik] = X.flat[offset + sum_d i_d * strides[d]]
//
// GraftViewChain(X) -> Y: the chain over shapes known only at run time (a dynamic batch), as its
// steps (views.h); each run plans them for X's dims, normally into one strided gather.
//
// GraftConcatSlices(X0, X1, ...) -> Y: Concat of Slices along the concatenation axis, read in place
// (torch.roll's Slice, Slice, Concat per axis: Swin's shifted windows).
//   attrs: axis (int), starts, ends (ints, one per input, Slice's meaning: negative counts from the
//          end, clamped to the input's extent along axis, which must be static).
//   Y = Concat(X0[.., starts[0]:ends[0], ..], X1[.., starts[1]:ends[1], ..], ...) along axis.
//
// Every element a view can address must lie inside X: inference checks it against X's static shape
// and the kernels again against the concrete tensor, so a damaged plan cannot read out of bounds.
//
// One file for the three, not one per op: none has kernels of its own (the CUDA ops run the shared
// strided gather and Concat's pitched copies, src/backends/cuda/shape_kernels.cu), each op's own
// schema and reference is 20 to 90 lines, and most of this file is the view composition
// (views.h: read, plan and run a chain of view steps) that GraftViewChain, GraftAttention's chain
// form and src/graph/compose_views.cpp share.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/views/views.h"

namespace graft {

namespace {

Result<StridedView> read_view(const AttributeMap& a) {
  StridedView v;
  GRAFT_ASSIGN_OR_RETURN(v.shape, a.get_ints("shape", {}));
  GRAFT_ASSIGN_OR_RETURN(v.strides, a.get_ints("strides", {}));
  GRAFT_ASSIGN_OR_RETURN(v.offset, a.get_int("offset", 0));
  if (v.strides.size() != v.shape.size())
    return Status(error(StatusCode::kInvalidModel, "strides has ", v.strides.size(), " entries but shape has ",
                        v.shape.size()))
        .with_attribute("strides");
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] < 0)
      return Status(error(StatusCode::kInvalidModel, "negative dimension ", v.shape[d])).with_attribute("shape");
    if (v.strides[d] < 0)
      return Status(error(StatusCode::kInvalidModel, "negative stride ", v.strides[d])).with_attribute("strides");
  }
  if (v.offset < 0) return Status(error(StatusCode::kInvalidModel, "negative offset ", v.offset)).with_attribute("offset");
  return v;
}

// The largest flat index of X the view reads (-1 for an empty view); an error naming `strides`
// when that index does not fit in 64 bits.
Result<int64_t> last_index(const StridedView& v) {
  auto last = view_last_index(v.offset, v.shape, v.strides);
  if (!last)
    return Status(error(StatusCode::kInvalidModel, "the view's extent overflows 64-bit indices")).with_attribute("strides");
  return *last;
}

// A view that reads past X's `numel` elements: the error names `offset` when the offset alone is
// past the end, `strides` otherwise.
Status past_end(Status st, const StridedView& v, int64_t numel) {
  return st.with_attribute(v.offset >= numel ? "offset" : "strides");
}

Status infer_strided_copy(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(StridedView v, read_view(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  if (x.shape) {
    GRAFT_ASSIGN_OR_RETURN(int64_t last, last_index(v));
    const int64_t numel = shape_is_static(*x.shape) ? numel_of(shape_values(*x.shape)) : -1;
    if (numel >= 0 && last >= numel)
      return past_end(ctx.fail("the view (offset ", v.offset, ") reads element ", last, " of X ", x.to_string(), " (",
                               numel, " elements)"),
                      v, numel);
  }
  ctx.set_output(0, TensorDesc(x.dtype, shape_from_values(v.shape)));
  return Status::ok();
}

Status strided_copy_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(StridedView v, read_view(*ctx.attrs));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (y.dims() != v.shape) return error(StatusCode::kInternal, "output dims differ from the shape attribute");
  GRAFT_ASSIGN_OR_RETURN(int64_t last, last_index(v));
  if (last >= x.numel())
    return past_end(error(StatusCode::kInvalidModel, "the view (offset ", v.offset, ") reads element ", last, " of X with ",
                          x.numel(), " elements"),
                    v, x.numel());
  gather_view(static_cast<const char*>(x.data()), static_cast<char*>(y.data()), dtype_size(x.dtype()), v);
  return Status::ok();
}

// ---- view chains -------------------------------------------------------------------------------

// One axis of a view under composition is a mixed-radix number over "atoms" (size, stride),
// outermost first: after a Reshape merges axes that are not adjacent in memory (vit's
// [S, B, H*hd] -> [S, B*H, hd]) the merged axis has two atoms, and a later Transpose + Reshape may
// split it again into axes with one stride each. Only the chain's end must be a plain strided view
// (one stride per axis).
struct Atom {
  int64_t size, stride;
};
struct AtomView {
  std::vector<std::vector<Atom>> axes;  // an empty atom list is an axis of size 1
  int64_t offset = 0;
};

int64_t axis_size(const std::vector<Atom>& atoms) {
  int64_t n = 1;
  for (const Atom& a : atoms) n *= a.size;
  return n;
}

std::vector<int64_t> atom_dims(const AtomView& v) {
  std::vector<int64_t> d;
  for (const auto& ax : v.axes) d.push_back(axis_size(ax));
  return d;
}

AtomView contiguous_view(const std::vector<int64_t>& dims) {
  AtomView v;
  const auto strides = contiguous_strides(dims);
  for (size_t d = 0; d < dims.size(); ++d) v.axes.push_back({Atom{dims[d], strides[d]}});
  return v;
}

// Regroups the view's atoms (row-major order over its axes) into the axes `to`, splitting an atom
// where an axis boundary falls inside it; false when a boundary does not divide an atom. Neighbouring
// atoms that are contiguous in memory are merged first, so any reshape of a contiguous run works.
bool reshape_atoms(AtomView& v, const std::vector<int64_t>& to) {
  std::vector<Atom> atoms;
  for (const auto& ax : v.axes)
    for (const Atom& a : ax) {
      if (a.size == 1) continue;
      if (!atoms.empty() && atoms.back().stride == a.stride * a.size) {
        atoms.back() = Atom{atoms.back().size * a.size, a.stride};
        continue;
      }
      atoms.push_back(a);
    }
  std::vector<std::vector<Atom>> axes;
  size_t next = 0;
  for (int64_t want : to) {
    std::vector<Atom> ax;
    int64_t have = 1;
    while (have < want) {
      if (next == atoms.size()) return false;
      Atom& a = atoms[next];
      if (want % have) return false;
      const int64_t need = want / have;
      if (a.size <= need) {
        ax.push_back(a);
        have *= a.size;
        ++next;
      } else {  // the boundary falls inside this atom: take its outer `need` part
        if (a.size % need) return false;
        const int64_t inner = a.size / need;
        ax.push_back(Atom{need, a.stride * inner});
        a.size = inner;
        have *= need;
      }
    }
    if (have != want) return false;
    axes.push_back(std::move(ax));
  }
  if (next != atoms.size()) return false;
  v.axes = std::move(axes);
  return true;
}

// The view as one stride per axis, when every axis's atoms are contiguous. An axis of extent 1 gets
// stride 0: it is never stepped over, and a stride there must not make a kernel think the view is
// misaligned.
bool plain_view(const AtomView& v, StridedView* out) {
  out->shape.clear();
  out->strides.clear();
  out->offset = v.offset;
  for (const auto& ax : v.axes) {
    int64_t size = 1, stride = 0;
    bool first = true;
    for (size_t k = ax.size(); k-- > 0;) {  // innermost first
      if (ax[k].size == 1) continue;
      if (first) {
        stride = ax[k].stride;
        first = false;
      } else if (ax[k].stride != stride * size) {
        return false;
      }
      size *= ax[k].size;
    }
    out->shape.push_back(size);
    out->strides.push_back(stride);
  }
  return true;
}

// Whether the view reads its source's elements in order from the start (a reshape of it).
bool reads_in_order(const StridedView& v) {
  if (v.offset != 0) return false;
  int64_t expect = 1;
  for (size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] == 1) continue;
    if (v.strides[d] != expect) return false;
    expect *= v.shape[d];
  }
  return true;
}

std::string step_name(size_t i, const ViewStep& s) {
  static const char* kNames[] = {"permute", "select", "reshape"};
  return "view step " + std::to_string(i) + " (" + kNames[static_cast<int>(s.kind)] + ")";
}

// A reshape step's target for concrete input dims (0 copies, -1 is inferred); false when it does
// not fit.
bool reshape_target(const std::vector<int64_t>& in, const std::vector<int64_t>& args, std::vector<int64_t>* out) {
  out->assign(args.begin(), args.end());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == 0) {
      if (i >= in.size()) return false;
      (*out)[i] = in[i];
    }
    if (args[i] == -1) {
      if (infer_at >= 0) return false;
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if ((*out)[i] < 0 || __builtin_mul_overflow(known, (*out)[i], &known)) return false;
  }
  const int64_t total = numel_of(in);
  if (infer_at >= 0) {
    if (known == 0 || total % known) return false;
    (*out)[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    return false;
  }
  return true;
}

// Applies one step to the view of its input (dims `dims`, updated to the step's output); false when
// the step does not fit the dims or cannot be expressed over the view's atoms.
bool apply_step(const ViewStep& s, AtomView& v, std::vector<int64_t>& dims) {
  const int64_t r = static_cast<int64_t>(v.axes.size());
  switch (s.kind) {
    case ViewStepKind::kPermute: {
      if (static_cast<int64_t>(s.args.size()) != r) return false;
      std::vector<std::vector<Atom>> axes;
      for (int64_t p : s.args) axes.push_back(v.axes[static_cast<size_t>(p)]);  // read_view_steps checked p
      v.axes = std::move(axes);
      break;
    }
    case ViewStepKind::kSelect: {
      const int64_t axis = s.args[0];
      if (axis >= r) return false;
      auto& atoms = v.axes[static_cast<size_t>(axis)];
      const int64_t extent = axis_size(atoms);
      int64_t index = s.args[1] < 0 ? s.args[1] + extent : s.args[1];
      if (index < 0 || index >= extent) return false;
      for (size_t k = atoms.size(); k-- > 0;) {  // the index's mixed-radix digits, innermost first
        v.offset += (index % atoms[k].size) * atoms[k].stride;
        index /= atoms[k].size;
      }
      if (s.args[2]) atoms.clear();
      else v.axes.erase(v.axes.begin() + axis);
      break;
    }
    case ViewStepKind::kReshape: {
      std::vector<int64_t> to;
      if (!reshape_target(dims, s.args, &to) || !reshape_atoms(v, to)) return false;
      break;
    }
  }
  dims = atom_dims(v);
  return true;
}

}  // namespace

void gather_view(const char* src, char* dst, size_t es, const StridedView& v) {
  const int64_t n = numel_of(v.shape);
  const size_t rank = v.shape.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < n; ++o) {
    int64_t off = v.offset;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * v.strides[d];
    std::memcpy(dst + o * es, src + off * es, es);
    for (size_t d = rank; d-- > 0;) {  // odometer increment, last axis fastest
      if (++idx[d] < v.shape[d]) break;
      idx[d] = 0;
    }
  }
}

void run_view_plan(const char* src, char* dst, size_t es, const std::vector<StridedView>& plan) {
  std::vector<char> a, b;  // the materialized intermediate results, alternating
  for (size_t k = 0; k < plan.size(); ++k) {
    char* out = dst;
    if (k + 1 < plan.size()) {
      std::vector<char>& buf = k % 2 ? b : a;
      buf.resize(static_cast<size_t>(numel_of(plan[k].shape)) * es);
      out = buf.data();
    }
    gather_view(src, out, es, plan[k]);
    src = out;
  }
}

void write_view_steps(const std::vector<ViewStep>& steps, AttributeMap* attrs, const std::string& prefix) {
  std::vector<int64_t> kinds, args, counts;
  for (const ViewStep& s : steps) {
    kinds.push_back(static_cast<int64_t>(s.kind));
    counts.push_back(static_cast<int64_t>(s.args.size()));
    args.insert(args.end(), s.args.begin(), s.args.end());
  }
  attrs->set(prefix + "view_kinds", kinds);
  attrs->set(prefix + "view_args", args);
  attrs->set(prefix + "view_arg_counts", counts);
}

Result<std::vector<ViewStep>> read_view_steps(const AttributeMap& attrs, const std::string& prefix) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> kinds, attrs.get_ints(prefix + "view_kinds", {}));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> args, attrs.get_ints(prefix + "view_args", {}));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> counts, attrs.get_ints(prefix + "view_arg_counts", {}));
  auto bad = [&prefix](const char* attr, auto&&... parts) {
    return Status(error(StatusCode::kInvalidModel, parts...)).with_attribute(prefix + attr);
  };
  if (kinds.empty()) return bad("view_kinds", "a view chain needs at least one step");
  if (counts.size() != kinds.size())
    return bad("view_arg_counts", "has ", counts.size(), " entries for ", kinds.size(), " steps");
  std::vector<ViewStep> steps;
  size_t at = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] < 0 || kinds[i] > 2) return bad("view_kinds", "step ", i, " has unknown kind ", kinds[i]);
    if (counts[i] < 0 || counts[i] > kMaxRank || static_cast<size_t>(counts[i]) > args.size() - at)
      return bad("view_arg_counts", "step ", i, " has ", counts[i], " arguments, past the ", args.size(),
                 " of view_args or graft's rank limit");
    ViewStep s;
    s.kind = static_cast<ViewStepKind>(kinds[i]);
    s.args.assign(args.begin() + static_cast<std::ptrdiff_t>(at), args.begin() + static_cast<std::ptrdiff_t>(at + counts[i]));
    at += static_cast<size_t>(counts[i]);
    if (s.kind == ViewStepKind::kPermute) {
      std::vector<int64_t> sorted = s.args;
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 0; k < sorted.size(); ++k)
        if (sorted[k] != static_cast<int64_t>(k)) return bad("view_args", step_name(i, s), " is not a permutation");
    } else if (s.kind == ViewStepKind::kSelect) {
      if (s.args.size() != 3 || s.args[0] < 0 || s.args[0] >= kMaxRank || (s.args[2] != 0 && s.args[2] != 1))
        return bad("view_args", step_name(i, s), " needs {axis >= 0, index, keep 0 or 1}");
    } else {
      if (std::count(s.args.begin(), s.args.end(), int64_t{-1}) > 1 ||
          std::any_of(s.args.begin(), s.args.end(), [](int64_t d) { return d < -1; }))
        return bad("view_args", step_name(i, s), " has a target with more than one -1 or an entry below -1");
    }
    steps.push_back(std::move(s));
  }
  if (at != args.size()) return bad("view_args", "has ", args.size() - at, " entries past the last step");
  return steps;
}

Result<Shape> view_steps_shape(const Shape& in, const std::vector<ViewStep>& steps) {
  Shape cur = in;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ViewStep& s = steps[i];
    const size_t r = cur.size();
    auto misfit = [&](auto&&... parts) {
      return error(StatusCode::kInvalidModel, step_name(i, s), " does not fit shape ", shape_to_string(cur), ": ",
                   parts...);
    };
    if (s.kind == ViewStepKind::kPermute) {
      if (s.args.size() != r) return misfit("the permutation has ", s.args.size(), " entries");
      Shape out;
      for (int64_t p : s.args) out.push_back(cur[static_cast<size_t>(p)]);
      cur = std::move(out);
    } else if (s.kind == ViewStepKind::kSelect) {
      const auto axis = static_cast<size_t>(s.args[0]);
      if (axis >= r) return misfit("axis ", s.args[0]);
      const Dim& extent = cur[axis];
      if (extent.is_const() && (s.args[1] >= extent.value() || s.args[1] < -extent.value()))
        return misfit("index ", s.args[1], " is out of range");
      if (s.args[2]) cur[axis] = Dim(int64_t{1});
      else cur.erase(cur.begin() + static_cast<std::ptrdiff_t>(axis));
    } else {
      Shape out;
      std::vector<Dim> known;
      int64_t infer_at = -1;
      for (size_t k = 0; k < s.args.size(); ++k) {
        if (s.args[k] == -1) {
          infer_at = static_cast<int64_t>(k);
          out.push_back(Dim(int64_t{0}));
          continue;
        }
        if (s.args[k] == 0 && k >= r) return misfit("entry ", k, " copies a dimension the input lacks");
        out.push_back(s.args[k] == 0 ? cur[k] : Dim(s.args[k]));
        known.push_back(out.back());
      }
      const Dim total = shape_numel(cur);
      if (infer_at >= 0) {
        const Dim rest = shape_numel(known);
        if (total.is_const() && rest.is_const() && (rest.value() == 0 || total.value() % rest.value()))
          return misfit(total.value(), " elements do not split by ", rest.value());
        out[static_cast<size_t>(infer_at)] = total.is_const() && rest.is_const() ? Dim(total.value() / rest.value())
                                                                                 : infer::divide_shape(cur, known);
      } else {
        const Dim n = shape_numel(out);
        if (total.is_const() && n.is_const() && total.value() != n.value())
          return misfit(total.value(), " elements cannot become ", n.value());
      }
      cur = std::move(out);
    }
    for (const Dim& d : cur)
      if (d.is_invalid()) return misfit("a dimension overflows");
  }
  return cur;
}

bool view_step_copies(const ViewStep& step, const Shape& in) {
  if (step.kind == ViewStepKind::kSelect) return true;
  if (step.kind != ViewStepKind::kPermute) return false;
  int64_t last = -1;  // a permutation that only moves unit axes is a reshape
  for (int64_t p : step.args) {
    if (p < 0 || p >= static_cast<int64_t>(in.size())) return true;
    if (in[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return true;
    last = p;
  }
  return false;
}

Result<std::vector<StridedView>> plan_view_steps(const std::vector<int64_t>& in_dims,
                                                 const std::vector<ViewStep>& steps) {
  // Compose as far as the atoms allow. Where a step cannot be expressed, or the chain ends on a view
  // that is no plain strided view, materialize the last plain view met since the current segment
  // began and compose the remaining steps anew over its contiguous result.
  std::vector<StridedView> segments;
  std::vector<int64_t> dims = in_dims;
  AtomView v = contiguous_view(dims);
  StridedView plain;
  plain_view(v, &plain);
  size_t plain_after = 0;  // steps applied when `plain` was taken
  std::vector<int64_t> plain_dims = dims;
  size_t i = 0;
  size_t segment_start = 0;
  while (true) {
    bool ok = i < steps.size() ? apply_step(steps[i], v, dims) : false;
    if (ok) {
      ++i;
      StridedView p;
      if (plain_view(v, &p)) {
        plain = std::move(p);
        plain_after = i;
        plain_dims = dims;
      }
      continue;
    }
    if (i == steps.size() && plain_after == i) {  // the whole rest is one strided view
      segments.push_back(std::move(plain));
      return segments;
    }
    if (plain_after == segment_start) {
      if (i < steps.size())
        return error(StatusCode::kInvalidModel, step_name(i, steps[i]), " does not fit dims of ",
                     static_cast<int64_t>(dims.size()), " axes (", numel_of(dims), " elements)");
      return error(StatusCode::kInternal, "a view chain ends on a view no strides express");
    }
    // A segment that only re-reads its source in order (Reshapes so far) needs no copy of its own:
    // the next one reads the same bytes under the new dims.
    if (!reads_in_order(plain)) segments.push_back(std::move(plain));
    segment_start = i = plain_after;
    dims = plain_dims;
    v = contiguous_view(dims);
    plain_view(v, &plain);
  }
}

namespace {

Status infer_view_chain(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<ViewStep> steps, read_view_steps(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) return ctx.fail("input 0 has an unknown rank");
  auto out = view_steps_shape(*x.shape, steps);
  if (!out) return Status(out.status()).with_attribute("view_args");
  ctx.set_output(0, TensorDesc(x.dtype, std::move(out).value()));
  return Status::ok();
}

Status view_chain_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<ViewStep> steps, read_view_steps(*ctx.attrs));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(std::vector<StridedView> plan, plan_view_steps(x.dims(), steps));
  if (plan.back().shape != y.dims()) return error(StatusCode::kInternal, "output dims differ from the planned view");
  // Every copy reads its source within bounds: the plan only composes views of that source.
  run_view_plan(static_cast<const char*>(x.data()), static_cast<char*>(y.data()), dtype_size(x.dtype()), plan);
  return Status::ok();
}

}  // namespace

std::optional<int64_t> view_last_index(int64_t offset, const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides) {
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size() && d < strides.size(); ++d) {
    if (sizes[d] == 0) return -1;
    int64_t step = 0;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(last, step, &last))
      return std::nullopt;
  }
  return last;
}

// ---- GraftConcatSlices ----

Result<ConcatSlices> read_concat_slices(const AttributeMap& a, size_t inputs, size_t rank) {
  ConcatSlices c;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, a.require_int("axis"));
  auto normalized = normalize_axis(axis, static_cast<int64_t>(rank));
  if (!normalized) return Status(normalized.status()).with_attribute("axis");
  c.axis = normalized.value();
  GRAFT_ASSIGN_OR_RETURN(c.starts, a.get_ints("starts", {}));
  GRAFT_ASSIGN_OR_RETURN(c.ends, a.get_ints("ends", {}));
  if (c.starts.size() != inputs) return attr_error("starts", "has ", c.starts.size(), " entries for ", inputs, " inputs");
  if (c.ends.size() != inputs) return attr_error("ends", "has ", c.ends.size(), " entries for ", inputs, " inputs");
  return c;
}

std::pair<int64_t, int64_t> slice_range(int64_t start, int64_t end, int64_t extent) {
  auto clamp = [extent](int64_t v) {
    if (v < 0) v = v < -extent ? 0 : v + extent;  // (v + extent cannot overflow: v >= -extent here)
    return v > extent ? extent : v;
  };
  const int64_t b = clamp(start), e = clamp(end);
  return {b, e > b ? e : b};
}

namespace {

Status infer_concat_slices(InferContext& ctx) {
  if (ctx.num_inputs() < 1) return ctx.fail("GraftConcatSlices needs at least one input");
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing");
  const DataType dt = ctx.input(0).dtype;
  GRAFT_ASSIGN_OR_RETURN(Shape out, ctx.input_shape(0));
  if (out.empty()) return ctx.fail("input 0 is a scalar: it has no axis to concatenate along");
  GRAFT_ASSIGN_OR_RETURN(ConcatSlices c, read_concat_slices(ctx.attrs(), ctx.num_inputs(), out.size()));
  const size_t axis = static_cast<size_t>(c.axis);
  int64_t total = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).dtype != dt) return ctx.fail("inputs differ in dtype");
    GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(i));
    if (s.size() != out.size()) return ctx.fail("input ", i, " has rank ", s.size(), ", input 0 ", out.size());
    for (size_t a = 0; a < s.size(); ++a)
      if (a != axis && s[a].is_const() && out[a].is_const() && s[a].value() != out[a].value())
        return ctx.fail("input ", i, " ", shape_to_string(s), " differs from input 0 ", shape_to_string(out),
                        " off the concatenation axis");
    if (!s[axis].is_const()) return ctx.fail("input ", i, " has no static extent along axis ", c.axis);
    const auto [b, e] = slice_range(c.starts[i], c.ends[i], s[axis].value());
    total += e - b;
  }
  out[axis] = Dim(total);
  ctx.set_output(0, TensorDesc(dt, out));
  return Status::ok();
}

Status concat_slices_cpu(ExecContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "GraftConcatSlices: inputs or output missing");
  for (const Tensor* t : ctx.inputs)
    if (!t) return error(StatusCode::kInvalidModel, "GraftConcatSlices: an input is missing");
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(ConcatSlices c, read_concat_slices(*ctx.attrs, ctx.inputs.size(), static_cast<size_t>(y.rank())));
  const size_t es = dtype_size(y.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < c.axis; ++a) outer *= y.dims()[static_cast<size_t>(a)];
  for (int64_t a = c.axis + 1; a < y.rank(); ++a) inner *= y.dims()[static_cast<size_t>(a)];
  const int64_t out_extent = y.dims()[static_cast<size_t>(c.axis)];
  int64_t col = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& x = *ctx.inputs[i];
    if (x.dtype() != y.dtype() || x.rank() != y.rank())
      return error(StatusCode::kInvalidModel, "GraftConcatSlices: input ", i, " differs from the output in dtype or rank");
    const int64_t extent = x.dims()[static_cast<size_t>(c.axis)];
    const auto [b, e] = slice_range(c.starts[i], c.ends[i], extent);
    if (col + (e - b) > out_extent || x.numel() != outer * extent * inner)
      return error(StatusCode::kInternal, "GraftConcatSlices: input ", i, " ", ints_to_string(x.dims()),
                   " does not fit the output ", ints_to_string(y.dims()));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(y.data()) + static_cast<size_t>((o * out_extent + col) * inner) * es,
                  static_cast<const char*>(x.data()) + static_cast<size_t>((o * extent + b) * inner) * es,
                  static_cast<size_t>((e - b) * inner) * es);
    col += e - b;
  }
  if (col != out_extent) return error(StatusCode::kInternal, "GraftConcatSlices: the slices do not fill the output");
  return Status::ok();
}

}  // namespace

void append_views_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftStridedCopy", 11, infer_strided_copy, strided_copy_cpu}));
  out.push_back(internal_op(OpEntry{"GraftViewChain", 11, infer_view_chain, view_chain_cpu}));
  out.push_back(internal_op(OpEntry{"GraftConcatSlices", 11, infer_concat_slices, concat_slices_cpu}));
}

}  // namespace graft
