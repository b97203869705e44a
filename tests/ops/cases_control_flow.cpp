// If, Loop, Scan and SequenceMap cases (being written): pending in builtin_ops_without_cases.txt.
#include "case_util.h"
#include "harness.h"

namespace graft::optest {

std::vector<OpCaseTable> control_flow_cases() { return {}; }

}  // namespace graft::optest
