// Other work on the machine, for the tests of what kora does when it measures on a busy
// machine: `n` child processes that spin on a core each until the object is destroyed.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace kora_test {

class SpinningProcesses {
 public:
  explicit SpinningProcesses(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~SpinningProcesses() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  SpinningProcesses(const SpinningProcesses&) = delete;
  SpinningProcesses& operator=(const SpinningProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace kora_test
