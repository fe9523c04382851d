// CPU code generation of mixed-dtype (mask) chains against the interpreter: a BERT-style
// attention mask (int64 mask reshaped, cast, scaled, broadcast and added to float scores;
// Equal/Where with -inf), and random graphs over float32, int64, int32 and bool tensors:
// casts between all four, predicates, logic, Where, integer arithmetic (wrapping, Div
// truncating, Mod/Fmod signs), integer reductions, layout maps and broadcasts of bool and
// integer tensors; every candidate x schedule checked (tests/cpu/codegen_harness.h).
#include "cpu/codegen_graphs.h"
#include "cpu/codegen_harness.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

TEST(CpuCodegenMask, BertAttentionMaskMatchesTheInterpreter) {
  std::mt19937 rng(3);
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(kora_codegen_test::bert_mask_graph(rng), 12, rng, stats);
  EXPECT_GT(stats.kernels, 30);
}

TEST(CpuCodegenMask, MixedDtypeChainsMatchTheInterpreter) {
  std::mt19937 rng(5);
  kora_codegen_test::CheckStats stats;
  for (int round = 0; round < 7; ++round) {
    kora_codegen_test::check_graph(kora_codegen_test::random_mask_graph(rng), 4, rng, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(stats.kernels, 70);
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

}  // namespace
