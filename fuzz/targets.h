// The fuzzed readers, shared by the libFuzzer harnesses (fuzz/*_fuzzer.cc, `make fuzz`)
// and the regression test that replays the seed corpus and every crasher found
// (tests/fuzz/replay_test.cc). In: arbitrary bytes. Out: nothing; the reader runs on them
// (as a file where it reads files). A kora::Error is a correct answer to bad input;
// anything else (a crash, another exception, a sanitizer report, a hang) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "kora/error.h"
#include "kora/frontend.h"
#include "kora/npy.h"
#include "runtime/manifest.h"

namespace kora_fuzz {

// This process's scratch directory, removed when the process exits.
struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kora-fuzz-" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A file of this process's own holding the bytes; its path.
inline std::string as_file(const uint8_t* data, size_t size, const std::string& name) {
  static const ScratchDir dir;
  const std::string path = (dir.path / name).string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// The ONNX importer: parse, structural checks, shape inference, constant folding.
inline void onnx_import(const uint8_t* data, size_t size) {
  const std::string path = as_file(data, size, "model.onnx");
  try {
    kora::import_onnx(path);
  } catch (const kora::Error&) {
  }
}

inline void npy(const uint8_t* data, size_t size) {
  const std::string path = as_file(data, size, "tensor.npy");
  try {
    kora::read_npy(path);
  } catch (const kora::Error&) {
  }
}

// The artifact manifest: every field and the plan checked.
inline void manifest(const uint8_t* data, size_t size) {
  try {
    kora::manifest_from_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const kora::Error&) {
  }
}

}  // namespace kora_fuzz
