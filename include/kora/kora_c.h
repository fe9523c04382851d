/* The kora runtime's C API: an artifact directory (`kora compile`) in; a session that runs
 * the compiled model out, for any language with a C FFI. Wraps kora::Session
 * (include/kora/runtime.h); same rules: one run at a time per session. Functions that can
 * fail return 0 on success and -1 on failure, with the reason in kora_last_error() (per
 * thread, valid until the next failing call). Tensors are dense row-major bytes. */
#ifndef KORA_KORA_C_H_
#define KORA_KORA_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kora_session kora_session;

/* dtypes as kora names them: "float32", "int64", "bool", ... */
const char* kora_last_error(void);

/* threads <= 0: the count the artifact was compiled for. NULL on failure. */
kora_session* kora_session_open(const char* artifact_dir, int threads);
void kora_session_close(kora_session* session);

int kora_session_input_count(const kora_session* session);
int kora_session_output_count(const kora_session* session);
/* Name, dtype name, rank and dims of input/output i; NULL / -1 when out of range. */
const char* kora_session_input_name(const kora_session* session, int i);
const char* kora_session_output_name(const kora_session* session, int i);
const char* kora_session_input_dtype(const kora_session* session, int i);
const char* kora_session_output_dtype(const kora_session* session, int i);
int kora_session_input_rank(const kora_session* session, int i);
int kora_session_output_rank(const kora_session* session, int i);
/* Writes rank() dims to `dims`. */
int kora_session_input_shape(const kora_session* session, int i, int64_t* dims);
int kora_session_output_shape(const kora_session* session, int i, int64_t* dims);

/* Copies `bytes` bytes (exactly the input's size) as the input's value. */
int kora_session_set_input(kora_session* session, const char* name, const void* data, size_t bytes);
int kora_session_run(kora_session* session);
/* The output's bytes from the last run (valid until the next run), and their count. */
int kora_session_output(const kora_session* session, const char* name, const void** data,
                        size_t* bytes);

#ifdef __cplusplus
}
#endif

#endif /* KORA_KORA_C_H_ */
