// Fission coverage: every operator the front end accepts has a fission rule.
#include <gtest/gtest.h>

#include "fission/builder.h"
#include "kora/frontend.h"

namespace kora {
namespace {

TEST(FissionRules, EverySupportedOperatorHasARule) {
  for (const std::string& op : supported_operators()) {
    if (op == "Constant") continue;  // becomes a constant at import
    EXPECT_TRUE(fission_rules().count(op)) << op << " has no fission rule";
  }
}

}  // namespace
}  // namespace kora
