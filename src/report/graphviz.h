// Internal: Graphviz's dot as a program. In: DOT text; out: the SVG that `dot -Tsvg` lays
// out (DOT on its stdin, SVG on its stdout), cleaned for inline use in an HTML page: no
// XML prolog, DOCTYPE (an external URL), comments or namespace declarations.
#pragma once

#include <string>

namespace kora {

struct DotResult {
  std::string svg;         // empty when timed out
  bool timed_out = false;  // dot ran longer than the limit and was stopped
  double seconds = 0;      // how long dot ran
};

// Throws kora::Error when dot is not installed (naming the package to install) or fails.
DotResult run_dot(const std::string& dot, double timeout_seconds);

// `dot -Tsvg` output -> an <svg> element for an HTML page.
std::string inline_svg(const std::string& svg);

}  // namespace kora
