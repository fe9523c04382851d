// libFuzzer harness: kora_fuzz::cuda_job (fuzz/targets.h) on each input: the bytes as a
// CUDA job's job.json and as its results.jsonl. Built by `make fuzz` (clang,
// -fsanitize=fuzzer,address,undefined); seeds in fuzz/corpus/cuda_job/.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kora_fuzz::cuda_job(data, size);
  return 0;
}
