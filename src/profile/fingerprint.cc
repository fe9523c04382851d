// The CPU device fingerprint (include/kora/profile_db.h): /proc/cpuinfo's model name and
// the logical core count, with the thread count and tool versions the caller passes.
// Measurements are only reused on a machine with the same fingerprint.
#include <fstream>
#include <string>
#include <thread>

#include "kora/profile_db.h"

namespace kora {

std::string cpu_fingerprint(int threads, const std::string& compiler, const std::string& library) {
  std::string model = "unknown cpu";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    if (begin != std::string::npos) model = line.substr(begin);
    break;
  }
  return "cpu|" + model + "|cores=" + std::to_string(std::thread::hardware_concurrency()) +
         "|threads=" + std::to_string(threads) + "|" + compiler + "|" + library;
}

}  // namespace kora
