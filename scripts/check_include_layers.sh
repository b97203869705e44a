#!/usr/bin/env bash
# Checks the include directions docs/architecture.md promises (issue 15): neither backend includes
# the other, the runtime includes no backend, build and runtime do not include each other both ways
# (the builder may use the runtime; the runtime and the backends never include the builder), and
# the plan and the graph passes include none of the builder, the runtime and the backends. Prints
# every offending line and exits 1; exits 0 when the tree keeps to them.
#     bash scripts/check_include_layers.sh [SRC_DIR]   (default: src beside this script)
set -uo pipefail
SRC=${1:-$(cd "$(dirname "$0")/../src" && pwd)}
[ -d "$SRC/backends" ] && [ -d "$SRC/runtime" ] || { echo "error: '$SRC' is not graft's src folder" >&2; exit 2; }
bad=0
# rule: files under $1 must not include headers under $2
forbid() {
  local from=$1 to=$2 why=$3 hits
  hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]+\"$to/" "$SRC/$from" \
           --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "include layering: src/$from must not include $to/ ($why):"
    echo "$hits" | sed "s|^$SRC/|  src/|"
    bad=1
  fi
}
forbid backends/cpu backends/cuda "one backend never includes another"
forbid backends/cuda backends/cpu "one backend never includes another"
forbid runtime backends "the runtime knows a backend only as a DeviceBackend"
forbid runtime build "the builder uses the runtime, never the reverse"
forbid backends build "a backend answers the builder's questions and never includes it"
for to in runtime build backends; do
  forbid plan "$to" "the plan is below the builder, the runtime and the backends"
  forbid graph "$to" "a pass takes what it must run as a callback"
done
if [ "$bad" = 0 ]; then echo "include layering: ok"; fi
exit $bad
