// Fission coverage: every operator the front end accepts has a fission rule.
#include <gtest/gtest.h>

#include "fission/builder.h"
#include "frontend/control_flow.h"
#include "kora/frontend.h"

namespace kora {
namespace {

TEST(FissionRules, EverySupportedOperatorHasARule) {
  for (const std::string& op : supported_operators()) {
    if (op == "Constant") continue;              // becomes a constant at import
    if (is_control_flow_operator(op)) continue;  // expanded by shape inference
    EXPECT_TRUE(fission_rules().count(op)) << op << " has no fission rule";
  }
}

}  // namespace
}  // namespace kora
