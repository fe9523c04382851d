// The CPU backend's identity: its device fingerprint (include/kora/profile_db.h) with the
// compiler that builds its generated kernels and the oneDNN it links, so measurements
// taken with other tools are not reused.
#pragma once

#include <string>

namespace kora {

std::string onednn_version();                      // "onednn 2.6.3"
std::string cpu_backend_fingerprint(int threads);  // cpu_fingerprint(threads, g++, onednn)

}  // namespace kora
