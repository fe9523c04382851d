// libFuzzer harness: kora_fuzz::manifest (fuzz/targets.h) on each input. Built by
// `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); seeds in fuzz/corpus/manifest/.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kora_fuzz::manifest(data, size);
  return 0;
}
