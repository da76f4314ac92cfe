// The environment readers of the durable-I/O toolkit.

#include <trellis/io/environment.hpp>

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace trellis::detail {

std::optional<std::string> find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    std::string candidate = dir.empty() ? std::string(".") : std::string(dir);
    candidate += '/';
    candidate += name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string current_user() {
  for (const char* var : {"TRELLIS_USER", "USER"})
    if (const char* v = std::getenv(var); v && *v) return v;
  if (const char* login = ::getlogin(); login && *login) return login;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) return pw->pw_name;
  return "";
}

}  // namespace trellis::detail
