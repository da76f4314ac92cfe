// Run id validation, shared by every store.

#include "trellis/agent/store.hpp"

#include <string>

#include "trellis/agent/errors.hpp"

namespace trellis::agent {

void check_run_id(std::string_view id) {
  auto refuse = [&](const char* why) {
    throw invalid_run_id("trellis: invalid run id '" + std::string(id.substr(0, 160)) +
                         "': " + why);
  };
  if (id.empty()) refuse("it is empty");
  if (id.size() > 128) refuse("it is longer than 128 characters");
  if (id == "." || id == "..") refuse("'.' and '..' are not run ids");
  for (const char ch : id) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
    if (!ok) refuse("only letters, digits, '-', '_' and '.' are allowed");
  }
}

}  // namespace trellis::agent
