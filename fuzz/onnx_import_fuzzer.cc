// libFuzzer harness: kora_fuzz::onnx_import (fuzz/targets.h) on each input. Built by
// `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); seeds in fuzz/corpus/onnx_import/.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kora_fuzz::onnx_import(data, size);
  return 0;
}
