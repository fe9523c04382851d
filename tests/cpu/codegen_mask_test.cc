// CPU code generation of mixed-dtype (mask) chains against the interpreter: a BERT-style
// attention mask (int64 mask reshaped, cast, scaled, broadcast and added to float scores;
// Equal/Where with -inf), and random graphs over float32, int64, int32 and bool tensors:
// casts between all four, predicates, logic, Where, integer arithmetic (wrapping, Div
// truncating, Mod/Fmod signs), integer reductions, layout maps and broadcasts of bool and
// integer tensors; every candidate x schedule checked (tests/cpu/codegen_harness.h).
#include "cpu/codegen_harness.h"

namespace {

using namespace kora;
using kora_codegen_test::GraphBuilder;

const DType kTypes[] = {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kBool};

PrimGraph bert_mask(std::mt19937& rng) {
  GraphBuilder b(rng);
  const std::string mask = b.input(DType::kInt64, {2, 8});
  const std::string scores = b.input(DType::kFloat32, {2, 4, 8, 8});
  const std::string m4 =
      b.prim(LayoutAttrs{layout::Reshape{}}, {mask}, DType::kInt64, {2, 1, 1, 8});
  const std::string f = b.prim(ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}}, {m4},
                               DType::kFloat32, {2, 1, 1, 8});
  const std::string inv =
      b.prim(ElementwiseAttrs{ScalarOp::kSub, {Operand{-1, 1.0}, Operand{0, 0}}}, {f},
             DType::kFloat32, {2, 1, 1, 8});
  const std::string big =
      b.prim(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, -1e4}}}, {inv},
             DType::kFloat32, {2, 1, 1, 8});
  const std::string bc = b.prim(BroadcastAttrs{}, {big}, DType::kFloat32, {2, 4, 8, 8});
  const std::string sum = b.prim(ElementwiseAttrs{ScalarOp::kAdd, {Operand{0, 0}, Operand{1, 0}}},
                                 {scores, bc}, DType::kFloat32, {2, 4, 8, 8});
  const std::string eq = b.prim(ElementwiseAttrs{ScalarOp::kEqual, {Operand{0, 0}, Operand{-1, 0}}},
                                {m4}, DType::kBool, {2, 1, 1, 8});
  const std::string eqb = b.prim(BroadcastAttrs{}, {eq}, DType::kBool, {2, 4, 8, 8});
  b.prim(ElementwiseAttrs{ScalarOp::kWhere, {Operand{0, 0}, Operand{-1, -INFINITY}, Operand{1, 0}}},
         {eqb, sum}, DType::kFloat32, {2, 4, 8, 8});
  b.g.outputs = {b.g.prims.back().output(), sum};
  return b.g;
}

PrimGraph random_graph(std::mt19937& rng) {
  GraphBuilder b(rng);
  const Shape full = {2, 3, 4};
  std::map<DType, std::vector<std::string>> pool;
  for (DType t : kTypes) pool[t].push_back(b.input(t, full));
  // Nonzero integer divisors: constants in [1, 4) and [-4, -1).
  pool[DType::kInt64].push_back(b.input(DType::kInt64, full, true, 1, 4));
  const std::string div64 = pool[DType::kInt64].back();
  const std::string div32 = b.input(DType::kInt32, full, true, -4, -1);
  auto any = [&](DType t) { return pool[t][rng() % pool[t].size()]; };
  auto add = [&](PrimAttrs a, std::vector<std::string> in, DType t, const Shape& s = {2, 3, 4}) {
    const std::string y = b.prim(std::move(a), std::move(in), t, s);
    if (s == full) pool[t].push_back(y);
    return y;
  };
  const int prims = 6 + rng() % 6;
  while (static_cast<int>(b.g.prims.size()) < prims) {
    const int r = rng() % 9;
    const DType t = kTypes[rng() % 4];
    if (r == 0) {  // cast
      add(ElementwiseAttrs{ScalarOp::kCast, {Operand{0, 0}}}, {any(t)}, kTypes[rng() % 4]);
    } else if (r == 1) {  // predicate of two tensors of one dtype
      const ScalarOp ops[] = {ScalarOp::kEqual, ScalarOp::kLess, ScalarOp::kLessEqual,
                              ScalarOp::kGreater, ScalarOp::kGreaterEqual};
      add(ElementwiseAttrs{ops[rng() % 5], {Operand{0, 0}, Operand{1, 0}}}, {any(t), any(t)},
          DType::kBool);
    } else if (r == 2) {  // logic
      const ScalarOp ops[] = {ScalarOp::kAnd, ScalarOp::kOr, ScalarOp::kXor};
      if (rng() % 3 == 0)
        add(ElementwiseAttrs{ScalarOp::kNot, {Operand{0, 0}}}, {any(DType::kBool)}, DType::kBool);
      else
        add(ElementwiseAttrs{ops[rng() % 3], {Operand{0, 0}, Operand{1, 0}}},
            {any(DType::kBool), any(DType::kBool)}, DType::kBool);
    } else if (r == 3) {  // where
      const DType v = kTypes[rng() % 4];
      if (rng() % 2)
        add(ElementwiseAttrs{ScalarOp::kWhere, {Operand{0, 0}, Operand{1, 0}, Operand{2, 0}}},
            {any(DType::kBool), any(v), any(v)}, v);
      else
        add(ElementwiseAttrs{ScalarOp::kWhere,
                             {Operand{0, 0}, Operand{-1, -INFINITY}, Operand{1, 0}}},
            {any(DType::kBool), any(DType::kFloat32)}, DType::kFloat32);
    } else if (r == 4) {  // integer arithmetic
      const bool wide = rng() % 2;
      const DType it = wide ? DType::kInt64 : DType::kInt32;
      if (pool[it].empty()) continue;
      const ScalarOp ops[] = {ScalarOp::kAdd, ScalarOp::kSub, ScalarOp::kMul,
                              ScalarOp::kDiv, ScalarOp::kMod, ScalarOp::kFmod,
                              ScalarOp::kMax, ScalarOp::kMin, ScalarOp::kPow};
      const ScalarOp op = ops[rng() % 9];
      const bool divides = op == ScalarOp::kDiv || op == ScalarOp::kMod || op == ScalarOp::kFmod;
      const std::string y = divides ? (wide ? div64 : div32) : any(it);
      if (rng() % 3 == 0)
        add(ElementwiseAttrs{op, {Operand{0, 0}, Operand{-1, divides ? -3.0 : 2.0}}}, {any(it)},
            it);
      else
        add(ElementwiseAttrs{op, {Operand{0, 0}, Operand{1, 0}}}, {any(it), y}, it);
      if (rng() % 2)
        add(ElementwiseAttrs{rng() % 2 ? ScalarOp::kNeg : ScalarOp::kAbs, {Operand{0, 0}}},
            {pool[it].back()}, it);
    } else if (r == 5) {  // layout of any dtype: transpose to [4, 3, 2]... and back
      layout::Transpose tr{{2, 1, 0}};
      const std::string x = b.prim(LayoutAttrs{tr}, {any(t)}, t, {4, 3, 2});
      layout::Gather g{1, {2, 0, 0}};
      const std::string y = b.prim(LayoutAttrs{g}, {x}, t, {4, 3, 2});
      add(LayoutAttrs{tr}, {y}, t);
    } else if (r == 6) {  // a slice broadcast back, or a concat of halves
      if (rng() % 2) {
        const std::string x =
            b.prim(LayoutAttrs{layout::Slice{{0, 2, 0}, {1, 1, 1}}}, {any(t)}, t, {2, 1, 4});
        add(BroadcastAttrs{}, {x}, t);
      } else {
        const std::string x = any(t);
        const std::string lo =
            b.prim(LayoutAttrs{layout::Slice{{0, 0, 0}, {1, 1, 1}}}, {x}, t, {2, 3, 2});
        const std::string hi =
            b.prim(LayoutAttrs{layout::Slice{{0, 0, 3}, {1, 1, -1}}}, {x}, t, {2, 3, 2});
        // offsets in either order
        add(LayoutAttrs{layout::Concat{
                2, rng() % 2 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{2, 0}}},
            {hi, lo}, t);
      }
    } else if (r == 7 && t != DType::kFloat32) {  // integer and bool reductions
      ReduceAttrs red{static_cast<ReduceOp>(rng() % 5), {rng() % 2 ? 2 : 1}};
      Shape s = full;
      s[red.axes[0]] = 1;
      const std::string y = add(red, {any(t)}, t, s);
      add(BroadcastAttrs{}, {y}, t);
    } else {  // float arithmetic from a cast
      add(ElementwiseAttrs{ScalarOp::kMul, {Operand{0, 0}, Operand{-1, 2.5}}},
          {any(DType::kFloat32)}, DType::kFloat32);
    }
  }
  b.g.outputs = {b.g.prims.back().output()};
  return b.g;
}

TEST(CpuCodegenMask, BertAttentionMaskMatchesTheInterpreter) {
  std::mt19937 rng(3);
  kora_codegen_test::CheckStats stats;
  kora_codegen_test::check_graph(bert_mask(rng), 12, rng, stats);
  EXPECT_GT(stats.kernels, 30);
}

TEST(CpuCodegenMask, MixedDtypeChainsMatchTheInterpreter) {
  std::mt19937 rng(5);
  kora_codegen_test::CheckStats stats;
  for (int round = 0; round < 7; ++round) {
    kora_codegen_test::check_graph(random_graph(rng), 4, rng, stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(stats.kernels, 70);
  std::printf("[ info     ] %d kernels of %d candidates match the interpreter\n", stats.kernels,
              stats.candidates);
}

}  // namespace
