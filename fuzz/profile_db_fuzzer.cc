// libFuzzer harness: kora_fuzz::profile_db (fuzz/targets.h) on each input: a profile
// database file, or rows of any SQLite values in kora's tables, read by every reader.
// Built by `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); seeds in
// fuzz/corpus/profile_db/.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kora_fuzz::profile_db(data, size);
  return 0;
}
