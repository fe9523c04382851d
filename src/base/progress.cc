// Progress lines (src/base/progress.h).
#include "base/progress.h"

#include <cstdio>

namespace kora {

Progress::Progress(std::ostream* out, std::string label, int64_t total, std::string unit,
                   bool terminal)
    : out_(out),
      label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (out_ && terminal_) *out_ << "\r" << line(0) << std::flush;
}

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::line(int64_t done) const {
  const double elapsed = seconds();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  char buf[160];
  std::string bar;
  if (terminal_) {
    const int width = 20;
    const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
    bar = "  [" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
  }
  std::string eta = "";
  if (done > 0 && done < total_ && rate > 0) {
    const int s = static_cast<int>((total_ - done) / rate + 0.5);
    std::snprintf(buf, sizeof buf, "  ETA %d:%02d", s / 60, s % 60);
    eta = buf;
  } else if (done >= total_) {
    std::snprintf(buf, sizeof buf, "  %.1f s", elapsed);
    eta = buf;
  }
  std::snprintf(buf, sizeof buf, "  %lld/%lld %s%s  %.1f/s", static_cast<long long>(done),
                static_cast<long long>(total_), unit_.c_str(), bar.c_str(), rate);
  return label_ + buf + eta;
}

void Progress::update(int64_t done) {
  done_ = done;
  if (!out_) return;
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
    last_draw_ = now;
    *out_ << "\r\033[K" << line(done) << std::flush;
    return;
  }
  const int decile = total_ > 0 ? static_cast<int>(10 * done / total_) : 10;
  if (decile > last_decile_ && done < total_) {
    last_decile_ = decile;
    *out_ << line(done) << std::endl;
  }
}

void Progress::finish() {
  if (finished_ || !out_) return;
  finished_ = true;
  if (terminal_)
    *out_ << "\r\033[K" << line(done_) << std::endl;
  else
    *out_ << line(done_) << std::endl;
}

}  // namespace kora
