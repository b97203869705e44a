// Explicit list of graft's own custom ops. Each op folder defines a `define_<op>()` function; this
// file adds them to a registry. Listing them here (no static initializers) means a static link
// cannot drop an op without the linker complaining.
#include "graft/registry.h"
#include "ops/batched_nms/batched_nms.h"
#include "ops/custom_layer/custom_layer.h"
#include "ops/efficient_nms/efficient_nms.h"
#include "ops/grid_sample/grid_sample.h"
#include "ops/group_norm/group_norm.h"
#include "ops/modulated_deform_conv2d/modulated_deform_conv2d.h"
#include "ops/ms_deform_attn/ms_deform_attn.h"
#include "ops/roi_align/roi_align.h"

namespace graft {

Status register_graft_ops(OpRegistry& registry) {
  using DefineFn = OpDef (*)();
  static constexpr DefineFn kOps[] = {
      &define_custom_layer,
      &define_efficient_nms,
      &define_batched_nms_dynamic_trt,
      &define_trt_batched_nms,
      &define_group_norm,
      &define_modulated_deform_conv2d,
      &define_ms_deform_attn,
      &define_ms_deform_attn_trt,
      &define_mmcv_roi_align,
      &define_roi_align_trt,
      &define_grid_sampler,
  };
  for (DefineFn define : kOps) {
    OpDef def = define();
    // Idempotent: an op graft already registered is skipped; one registered by someone else under
    // the same key is still reported by add().
    if (auto existing = registry.find_exact(def.identity()); existing) {
      bool ours = false;
      for (const RegisteredOp& r : registry.all())
        if (r.def == existing && r.source == "graft") ours = true;
      if (ours) continue;
    }
    GRAFT_RETURN_IF_ERROR(registry.add(std::move(def), "graft"));
  }
  // Other names under which graft's ops answer; skipped when already there (idempotent).
  struct AliasEntry {
    const char *domain, *name;
    OpIdentity target;
  };
  const AliasEntry kAliases[] = {
      {kMsDeformAttnMmdeployDomain, kMsDeformAttnMmdeployName, define_ms_deform_attn().identity()},
      {kModulatedDeformConvMmdeployDomain, kModulatedDeformConvMmdeployName,
       define_modulated_deform_conv2d().identity()},
  };
  for (const AliasEntry& a : kAliases) {
    bool present = false;
    for (const OpRegistry::Alias& have : registry.aliases())
      if (have.domain == a.domain && have.name == a.name && have.target.version == a.target.version &&
          have.target.plugin_namespace == a.target.plugin_namespace)
        present = true;
    if (!present) GRAFT_RETURN_IF_ERROR(registry.add_alias(a.domain, a.name, a.target, "graft"));
  }
  return Status::ok();
}

}  // namespace graft
