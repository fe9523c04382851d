// Progress of long work on stderr: a label, a total and calls to update(done) in; on a
// terminal one line rewritten in place, "label  done/total  [#####.....]  rate/s  ETA m:ss";
// elsewhere (logs, CI) a line at every further 10% and at the end. No stream: silent.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace kora {

class Progress {
 public:
  // `unit` names what is counted ("kernels"); `terminal` chooses the rewritten line.
  Progress(std::ostream* out, std::string label, int64_t total, std::string unit, bool terminal);
  void update(int64_t done);
  // The last state, then a newline (terminal) or the final line (logs).
  void finish();
  double seconds() const;

 private:
  std::string line(int64_t done) const;

  std::ostream* out_;
  std::string label_, unit_;
  int64_t total_;
  bool terminal_;
  int64_t done_ = 0;
  int last_decile_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool finished_ = false;
};

}  // namespace kora
