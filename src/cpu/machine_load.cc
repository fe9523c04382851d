// Other work on the machine, from /proc (src/cpu/machine_load.h).
#include "cpu/machine_load.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace kora {
namespace {

// The machine's busy ticks: /proc/stat's first line, every state but idle and iowait.
int64_t machine_busy_ticks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu")
    return -1;
  return user + nice + system + irq + softirq + steal;
}

// This process's ticks: /proc/self/stat's utime and stime (fields 14 and 15, after the
// command name in parentheses, which may hold spaces).
int64_t self_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int f = 3; f < 14; ++f) fields >> skip;  // state .. cmajflt
  int64_t utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return -1;
  return utime + stime;
}

}  // namespace

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

void LoadWatch::restart() {
  machine_ = machine_busy_ticks();
  self_ = self_ticks();
  start_ = std::chrono::steady_clock::now();
}

int64_t LoadWatch::others_ticks() const {
  const int64_t machine = machine_busy_ticks(), self = self_ticks();
  if (machine < 0 || self < 0 || machine_ < 0 || self_ < 0) return 0;
  return std::max<int64_t>(0, (machine - machine_) - (self - self_));
}

bool LoadWatch::busy(double share) const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t others = others_ticks();
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return others >= 2 && static_cast<double>(others) >= share * seconds * hz;
}

bool wait_until_quiet(double max_seconds, int window_ms) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    LoadWatch watch;
    std::this_thread::sleep_for(std::chrono::milliseconds(window_ms));
    if (!watch.busy(0.05)) return true;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        max_seconds)
      return false;
  }
}

}  // namespace kora
