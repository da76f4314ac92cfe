#include "trellis/flow/capability.hpp"

namespace trellis::flow {

// Iterative, with one backtrack point: on a mismatch after a '*', that '*' swallows one more
// character of the name and matching resumes just after it. Earlier stars never need to be
// revisited (a later star can absorb whatever they would have), so the work is at most
// |pattern| * |name| steps, without recursion, whatever the input.
bool glob_match(std::string_view pattern, std::string_view name) noexcept {
  std::size_t p = 0;
  std::size_t n = 0;
  std::size_t star = std::string_view::npos;  // the position of the last '*' seen
  std::size_t resume = 0;                     // where in `name` that '*' stops swallowing
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool granted(const std::vector<std::string>& permissions, std::string_view name) noexcept {
  for (const std::string& pattern : permissions) {
    if (glob_match(pattern, name)) return true;
  }
  return false;
}

}  // namespace trellis::flow
