/* A C program using only the kora runtime's C API (include/kora/kora_c.h) and
 * libkora_runtime: loads the artifact given as argv[1], sets every input to ones
 * (float32) or zeros (other dtypes), runs it, and prints each output's name and first
 * five values. tests/cli/test_artifact.py checks them against onnxruntime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kora/kora_c.h"

static size_t dtype_size(const char* dtype) {
  if (!strcmp(dtype, "float32") || !strcmp(dtype, "int32")) return 4;
  if (!strcmp(dtype, "int64") || !strcmp(dtype, "float64")) return 8;
  if (!strcmp(dtype, "bool") || !strcmp(dtype, "int8") || !strcmp(dtype, "uint8")) return 1;
  return 2;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ARTIFACT_DIR\n", argv[0]);
    return 2;
  }
  kora_session* s = kora_session_open(argv[1], 0);
  if (!s) {
    fprintf(stderr, "error: %s\n", kora_last_error());
    return 1;
  }
  for (int i = 0; i < kora_session_input_count(s); ++i) {
    const char* dtype = kora_session_input_dtype(s, i);
    int64_t dims[16];
    const int rank = kora_session_input_rank(s, i);
    if (rank > 16 || kora_session_input_shape(s, i, dims) != 0) return 1;
    size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= (size_t)dims[d];
    const size_t bytes = n * dtype_size(dtype);
    void* data = calloc(bytes ? bytes : 1, 1);
    if (!strcmp(dtype, "float32"))
      for (size_t k = 0; k < n; ++k) ((float*)data)[k] = 1.0f;
    if (kora_session_set_input(s, kora_session_input_name(s, i), data, bytes) != 0) {
      fprintf(stderr, "error: %s\n", kora_last_error());
      return 1;
    }
    free(data);
  }
  if (kora_session_run(s) != 0) {
    fprintf(stderr, "error: %s\n", kora_last_error());
    return 1;
  }
  for (int i = 0; i < kora_session_output_count(s); ++i) {
    const char* name = kora_session_output_name(s, i);
    const char* dtype = kora_session_output_dtype(s, i);
    const void* data = NULL;
    size_t bytes = 0;
    if (kora_session_output(s, name, &data, &bytes) != 0) return 1;
    printf("%s", name);
    const size_t n = bytes / dtype_size(dtype);
    for (size_t k = 0; k < n && k < 5; ++k) {
      if (!strcmp(dtype, "float32"))
        printf(" %.9g", ((const float*)data)[k]);
      else if (!strcmp(dtype, "int64"))
        printf(" %lld", (long long)((const int64_t*)data)[k]);
    }
    printf("\n");
  }
  kora_session_close(s);
  return 0;
}
