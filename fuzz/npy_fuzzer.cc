// libFuzzer harness: kora_fuzz::npy (fuzz/targets.h) on each input. Built by
// `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); seeds in fuzz/corpus/npy/.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kora_fuzz::npy(data, size);
  return 0;
}
