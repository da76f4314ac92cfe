// SPDX-License-Identifier: MIT
// Must not compile: an enumeration converts to JSON by name only with the json adapter's
// header (never silently as its integer); the diagnostic must name that header.
#include <trellis/base/enumeration.hpp>

#include <nlohmann/json.hpp>

enum class Light { Red, Green };
TRELLIS_ENUM(Light, Red, Green);

int main() {
  const nlohmann::json j = Light::Red;
  return j.is_string() ? 0 : 1;
}
