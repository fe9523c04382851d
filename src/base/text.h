// Numbers as text for progress lines and summaries: a double in, its fixed-point form
// with `digits` decimals out.
#pragma once

#include <cstdio>
#include <string>

namespace kora {

inline std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

}  // namespace kora
