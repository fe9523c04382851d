// Runnable tasks from /proc/stat (src/cpu/machine_load.h).
#include "cpu/machine_load.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kora {

int runnable_tasks() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  char line[256];
  int running = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "procs_running ", 14) == 0) {
      running = std::atoi(line + 14);
      break;
    }
  std::fclose(f);
  return running;
}

}  // namespace kora
