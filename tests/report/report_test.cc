// The plan report (include/kora/report.h, src/report/): kora::compile writes plan.json
// beside the manifest (the primitive graph, the summary, the baselines' predictions) and
// the runtime still loads the artifact; the report of a small model compiled without
// measuring has one kernel group per manifest kernel, every primitive of the graph, the
// totals next to greedy and unfused, each kernel's in-plan time, and nothing external. An
// artifact without plan.json, or with a corrupt one, is drawn kernel by kernel and says
// so; a CUDA artifact that cannot run here is reported with a note; the DOT writer draws a
// recomputed primitive in each kernel; a missing dot is a clear error.
#include "kora/report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "cuda/artifact.h"
#include "cuda/compile_kernels.h"
#include "cuda/nvrtc_compile.h"
#include "driver/cpu_compile_setup.h"
#include "emit/small_artifacts.h"
#include "kora/compile.h"
#include "kora/runtime.h"
#include "report/plan_data.h"
#include "report/plan_dot.h"

namespace kora_test {
namespace {

using namespace kora;
namespace fs = std::filesystem;
using json = nlohmann::json;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The JSON the page's script reads.
json page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"kora-data\">";
  const size_t start = html.find(open);
  EXPECT_NE(start, std::string::npos);
  const size_t end = html.find("</script>", start);
  return json::parse(html.substr(start + open.size(), end - start - open.size()));
}

// A copy of the artifact at `from`, named `name` in `dir`.
std::string copy_artifact(const std::string& from, TempDir& dir, const std::string& name) {
  const std::string to = dir.file(name);
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
  return to;
}

class PlanReport : public ::testing::Test {
 protected:
  // The small model compiled once for the suite, without measuring (roofline costs).
  static void SetUpTestSuite() {
    setup_ = new CpuCompileSetup;
    graph_ = new PrimGraph(small_model());
    setup_->options.measure = false;
    art_ = setup_->dir.file("art");
    summary_ = new CompileSummary(compile(*graph_, *setup_->target, art_, setup_->options).summary);
  }
  static void TearDownTestSuite() {
    delete summary_;
    delete graph_;
    delete setup_;
  }
  static json manifest() { return json::parse(read_bytes(fs::path(art_) / "manifest.json")); }

  static CpuCompileSetup* setup_;
  static PrimGraph* graph_;
  static CompileSummary* summary_;
  static std::string art_;
};
CpuCompileSetup* PlanReport::setup_ = nullptr;
PrimGraph* PlanReport::graph_ = nullptr;
CompileSummary* PlanReport::summary_ = nullptr;
std::string PlanReport::art_;

TEST_F(PlanReport, CompileWritesPlanJsonBesideTheManifest) {
  const json plan = json::parse(read_bytes(fs::path(art_) / "plan.json"));
  EXPECT_EQ(plan["format"], "kora-plan");
  EXPECT_EQ(plan["version"], 1);
  ASSERT_EQ(plan["graph"]["primitives"].size(), graph_->prims.size());
  for (size_t i = 0; i < graph_->prims.size(); ++i) {
    const json& p = plan["graph"]["primitives"][i];
    EXPECT_EQ(p["name"], graph_->prims[i].name);
    EXPECT_EQ(p["inputs"], graph_->prims[i].inputs);
    EXPECT_EQ(p["outputs"][0]["shape"], graph_->value(graph_->prims[i].outputs[0]).shape);
  }
  EXPECT_EQ(plan["summary"]["kernels"], summary_->kernels);
  EXPECT_TRUE(plan["summary"]["checked"].empty());  // nothing measured: no check on the clock
  ASSERT_EQ(plan["baselines"].size(), 2u);
  EXPECT_EQ(plan["baselines"][0]["strategy"], "greedy");
  EXPECT_EQ(plan["baselines"][1]["strategy"], "unfused");
  EXPECT_EQ(plan["baselines"][1]["kernels"], graph_->prims.size());
  // Not among the files the runtime checks, and the runtime does not mind it.
  EXPECT_FALSE(manifest()["files"].contains("plan.json"));
  expect_matches_interpreter(*graph_, art_);
}

TEST_F(PlanReport, PageHasAGroupPerKernelEveryPrimitiveTheTotalsAndNothingExternal) {
  const std::string html_path = setup_->dir.file("plan.html");
  PlanReportOptions options;
  options.iters = 3;
  write_plan_report(art_, html_path, options);
  const std::string html = read_bytes(html_path);
  const json m = manifest();
  const size_t kernels = m["kernels"].size();
  ASSERT_GT(kernels, 1u);

  // One cluster per kernel, in run order, with its implementation.
  EXPECT_EQ(count(html, "class=\"cluster kernel impl_"), static_cast<int>(kernels));
  for (size_t k = 0; k < kernels; ++k)
    EXPECT_NE(html.find("<g id=\"kernel_" + std::to_string(k) + "\" class=\"cluster kernel impl_" +
                        m["kernels"][k]["impl"].get<std::string>() + "\""),
              std::string::npos)
        << "kernel " << k;
  // Every primitive drawn, in the kernels that compute it.
  std::set<int> drawn;
  size_t nodes = 0;
  const std::regex node_id(R"re(<g id="k(\d+)_p(\d+)" class="node prim">)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), node_id);
       it != std::sregex_iterator(); ++it, ++nodes) {
    const int k = std::stoi((*it)[1]), p = std::stoi((*it)[2]);
    drawn.insert(p);
    const json& names = m["kernels"][static_cast<size_t>(k)]["primitives"];
    EXPECT_NE(std::find(names.begin(), names.end(), graph_->prims[static_cast<size_t>(p)].name),
              names.end())
        << "k" << k << " p" << p;
  }
  EXPECT_EQ(drawn.size(), graph_->prims.size());
  size_t members = 0;
  for (const json& k : m["kernels"]) members += k["primitives"].size();
  EXPECT_EQ(nodes, members);
  EXPECT_NE(html.find("data-graph=\"primitives\""), std::string::npos);

  // The totals: this plan's prediction next to greedy's and unfused's.
  const json plan = json::parse(read_bytes(fs::path(art_) / "plan.json"));
  EXPECT_NE(html.find(format_ms(m["predicted_ms"].get<double>())), std::string::npos);
  for (const json& b : plan["baselines"])
    EXPECT_NE(html.find("<tr><td>" + b["strategy"].get<std::string>() + "</td><td class=\"n\">" +
                        std::to_string(b["kernels"].get<int>()) + "</td><td class=\"n\">" +
                        format_ms(b["predicted_ms"].get<double>())),
              std::string::npos)
        << b;
  // Each kernel measured inside the running plan; the details the script shows.
  EXPECT_NE(html.find("data-measured=\"1\""), std::string::npos);
  const json data = page_data(html);
  ASSERT_EQ(data["kernels"].size(), kernels);
  double total = 0;
  for (size_t k = 0; k < kernels; ++k) {
    const json& d = data["kernels"][k];
    EXPECT_EQ(d["impl"], m["kernels"][k]["impl"]);
    EXPECT_EQ(d["prims"].size(), m["kernels"][k]["primitives"].size());
    ASSERT_TRUE(d["in_plan_ms"].is_number()) << k;
    EXPECT_GT(d["in_plan_ms"].get<double>(), 0);
    total += d["in_plan_ms"].get<double>();
  }
  EXPECT_NE(html.find(format_ms(total)), std::string::npos);
  EXPECT_NE(html.find("Where the time goes"), std::string::npos);

  // Self-contained: no URL, no file loaded, no XML prolog or namespace.
  for (const char* external : {"http:", "https:", "//www.", "<link", " src=", "@import", "url(",
                               "<?xml", "xmlns", "DOCTYPE svg"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
}

TEST_F(PlanReport, AnArtifactWithoutPlanJsonIsDrawnKernelByKernel) {
  const std::string old = copy_artifact(art_, setup_->dir, "old");
  fs::remove(fs::path(old) / "plan.json");
  PlanReportOptions options;
  options.measure = false;
  write_plan_report(old, old + ".html", options);
  const std::string html = read_bytes(old + ".html");
  const size_t kernels = manifest()["kernels"].size();
  EXPECT_NE(html.find("data-graph=\"kernels\""), std::string::npos);
  EXPECT_NE(html.find("Primitive detail missing: the artifact has no plan.json"),
            std::string::npos);
  EXPECT_NE(html.find("In-plan times not measured"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"node kernel impl_"), static_cast<int>(kernels));
  EXPECT_EQ(count(html, "class=\"node prim\""), 0);
  EXPECT_EQ(html.find("http:"), std::string::npos);

  // A corrupt plan.json is noted the same way; the report is still written.
  write_bytes(fs::path(old) / "plan.json", "{\"format\": \"kora-plan\", \"version\": 1");
  write_plan_report(old, old + ".html", options);
  const std::string corrupt = read_bytes(old + ".html");
  EXPECT_NE(corrupt.find("plan.json&#39; is corrupt"), std::string::npos);
  EXPECT_NE(corrupt.find("data-graph=\"kernels\""), std::string::npos);
}

TEST_F(PlanReport, ClearErrors) {
  expect_error([] { write_plan_report("/nonexistent/kora-art", "/tmp/x.html"); },
               "is not a directory");
  // dot not installed: the error names the package.
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", setup_->dir.file("empty-bin").c_str(), 1);
  PlanReportOptions options;
  options.measure = false;
  expect_error([&] { write_plan_report(art_, setup_->dir.file("no-dot.html"), options); },
               "install the graphviz package");
  ::setenv("PATH", path.c_str(), 1);
}

// A CUDA artifact (cubins from NVRTC, no GPU needed to write it; no plan.json: written
// without kora::compile) is reported with its library calls; where it cannot run (no GPU
// here) the page says so instead of failing.
TEST(PlanReportCuda, ACudaArtifactThatCannotRunHereIsReportedWithANote) {
  if (!cuda_built()) GTEST_SKIP() << "kora was built without CUDA";
  const PrimGraph g = small_model();
  TempDir tmp;
  RooflineCost costs(device_params("h100"));
  OrchestrationOptions o;
  o.strategy = "unfused";
  o.candidates = cuda_candidate_options(g, o.candidates);
  CudaArtifactOptions options;
  options.cache_dir = tmp.file("cubins");
  write_cuda_artifact(g, orchestrate(g, costs, o), nullptr, tmp.file("art"), options);
  write_plan_report(tmp.file("art"), tmp.file("art.html"));
  const std::string html = read_bytes(tmp.file("art.html"));
  const bool measured = html.find("data-measured=\"1\"") != std::string::npos;
  if (!measured) {
    EXPECT_NE(html.find("not measured: this CUDA artifact cannot run here"), std::string::npos);
  }
  EXPECT_NE(html.find("cuda unfused plan"), std::string::npos);
  EXPECT_NE(html.find("class=\"node kernel impl_"), std::string::npos);
  EXPECT_NE(html.find("interpreter (host)"), std::string::npos);  // TopK runs on the host
}

// x -> a -> b -> out0 and a -> c -> out1, a computed in both kernels.
PlanReportData recomputed_plan() {
  PlanReportData d;
  d.manifest.inputs = {"x"};
  d.manifest.outputs = {"b", "c"};
  PlanFile plan;
  plan.inputs = {"x"};
  plan.outputs = {"b", "c"};
  plan.primitives = {{"pa", "elementwise", "exp(%0)", "", {"x"}, {"a"}, "float32 [4]"},
                     {"pb", "elementwise", "neg(%0)", "", {"a"}, {"b"}, "float32 [4]"},
                     {"pc", "elementwise", "abs(%0)", "", {"a"}, {"c"}, "float32 [4]"}};
  d.plan = plan;
  KernelInfo info;
  info.impl = "generated";
  d.kernels = {{info, {"pa", "pb"}, {"x"}, {"b"}}, {info, {"pa", "pc"}, {"x"}, {"c"}}};
  return d;
}

TEST(PlanReportDot, ARecomputedPrimitiveIsDrawnInEachKernel) {
  const PlanReportData d = recomputed_plan();
  const std::string dot = primitive_graph_dot(d);
  EXPECT_EQ(count(dot, "subgraph cluster_"), 2);
  for (const char* node : {"k0_p0 [", "k0_p1 [", "k1_p0 [", "k1_p2 ["})
    EXPECT_NE(dot.find(node), std::string::npos) << node;
  for (const char* edge : {"in0 -> k0_p0;", "in0 -> k1_p0;", "k0_p0 -> k0_p1;", "k1_p0 -> k1_p2;",
                           "k0_p1 -> out0;", "k1_p2 -> out1;"})
    EXPECT_NE(dot.find(edge), std::string::npos) << edge;
  EXPECT_EQ(count(dot, " -> "), 6);
  EXPECT_EQ(primitive_node_count(d), 4);
  const std::string kernels = kernel_graph_dot(d);
  for (const char* edge : {"in0 -> k0;", "in0 -> k1;", "k0 -> out0;", "k1 -> out1;"})
    EXPECT_NE(kernels.find(edge), std::string::npos) << edge;
  EXPECT_EQ(count(kernels, " -> "), 4);
}

}  // namespace
}  // namespace kora_test
