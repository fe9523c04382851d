// onnxruntime as the reference (include/kora/check.h): inputs written as .npy to a
// temporary directory, a short Python program runs onnxruntime and writes the outputs
// back as .npy, read here by position (names may hold any characters).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/compare.h"
#include "kora/check.h"
#include "kora/error.h"
#include "kora/npy.h"

namespace kora {
namespace {

namespace fs = std::filesystem;

// argv: model, directory, threads. The directory holds in_<i>.npy and inputs.txt (one
// name per line); the program writes out_<i>.npy and outputs.txt, and note.txt where it
// ran without exact integer GEMMs. Exit status 3: numpy or onnxruntime cannot be imported.
constexpr const char* kProgram = R"(
import sys, os
try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    sys.stderr.write("%s\n" % e)
    sys.exit(3)
model, d, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = open(os.path.join(d, "inputs.txt")).read().split("\n")[:-1]
feeds = {n: np.load(os.path.join(d, "in_%d.npy" % i)) for i, n in enumerate(names)}
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
# Exact integer GEMMs: without VNNI, onnxruntime's uint8 x int8 kernels add pairs of
# products in 16 bits, saturating, unless this option has its graph optimizer turn them into
# uint8 x uint8 ones (no effect where VNNI is). The optimizer fails on some graphs (a
# QLinearConv and a DequantizeLinear sharing an int8 zero point): then without it, and a
# note says so.
so.add_session_config_entry("session.x64quantprecision", "1")
so.log_severity_level = 4  # its failure is the note's, not a log line
try:
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
except Exception as e:
    so.add_session_config_entry("session.x64quantprecision", "0")
    so.log_severity_level = 2
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    with open(os.path.join(d, "note.txt"), "w") as f:
        f.write(str(e).strip().splitlines()[-1].split(" : ")[-1][-160:])
outs = s.run(None, feeds)
with open(os.path.join(d, "outputs.txt"), "w") as f:
    for i, (o, v) in enumerate(zip(s.get_outputs(), outs)):
        np.save(os.path.join(d, "out_%d.npy" % i), np.array(v, order="C"))  # keeps 0-d
        f.write(o.name + "\n")
)";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::map<std::string, Tensor> run_onnxruntime(const std::string& model,
                                              const std::map<std::string, Tensor>& inputs,
                                              int threads) {
  char pattern[] = "/tmp/kora-ort-XXXXXX";
  if (!::mkdtemp(pattern)) throw Error("cannot create a temporary directory for onnxruntime");
  const fs::path dir(pattern);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  {
    std::ofstream names(dir / "inputs.txt");
    int i = 0;
    for (const auto& [name, value] : inputs) {
      write_npy((dir / ("in_" + std::to_string(i++) + ".npy")).string(), value);
      names << name << "\n";
    }
    std::ofstream(dir / "program.py") << kProgram;
  }
  const char* python = std::getenv("KORA_PYTHON");
  const std::string command = quote(python && *python ? python : "python3") + " " +
                              quote((dir / "program.py").string()) + " " + quote(model) + " " +
                              quote(dir.string()) + " " + std::to_string(threads) + " 2>" +
                              quote((dir / "stderr.txt").string());
  const int status = std::system(command.c_str());
  if (status != 0) {
    // 3: the program could not import onnxruntime; 127: the shell found no python.
    const bool missing =
        WIFEXITED(status) && (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 127);
    std::ifstream err(dir / "stderr.txt");
    std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    const size_t last = text.find_last_not_of("\n");
    text = last == std::string::npos ? "" : text.substr(0, last + 1);
    const size_t line = text.rfind('\n');
    throw Error("onnxruntime could not run '" + model + "': " +
                (text.empty() ? "exit status " + std::to_string(WEXITSTATUS(status))
                              : text.substr(line == std::string::npos ? 0 : line + 1)) +
                (missing ? " (needs python3 with the onnxruntime package; set KORA_PYTHON to "
                           "choose the interpreter)"
                         : ""));
  }
  if (std::ifstream note(dir / "note.txt"); note) {
    std::string why;
    std::getline(note, why);
    std::cerr << "kora: note: onnxruntime ran '" << model
              << "' without exact integer GEMMs (session.x64quantprecision failed: " << why
              << "); on a CPU without VNNI its uint8 x int8 products saturate in 16 bits, "
                 "so its integer results may be off"
              << std::endl;
  }
  std::map<std::string, Tensor> outputs;
  std::ifstream names(dir / "outputs.txt");
  std::string name;
  for (int i = 0; std::getline(names, name); ++i)
    outputs[name] = read_npy((dir / ("out_" + std::to_string(i) + ".npy")).string());
  return outputs;
}

double relative_l2(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return INFINITY;
  ElementComparison c;
  for (int64_t i = 0; i < want.numel() && !c.mismatched(); ++i)
    c.add(i, got.double_at(i), want.double_at(i));
  return c.mismatched() ? INFINITY : c.relative_error();
}

int64_t count_mismatches(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return got.numel();
  const size_t size = dtype_size(want.dtype());
  int64_t differ = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    differ += std::memcmp(got.bytes() + i * size, want.bytes() + i * size, size) != 0;
  return differ;
}

double tolerance_for(const std::string& device) {
  if (device.find(" bf16") != std::string::npos) return kBf16Tolerance;
  return device.find(" tf32") != std::string::npos ? kTf32Tolerance : kFloat32Tolerance;
}

}  // namespace kora
