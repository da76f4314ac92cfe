// SPDX-License-Identifier: MIT
// Must not compile: TRELLIS_ENUM is written outside the namespace that declares the enum, where
// trellis::enumeration<app::Light> could never find it; the diagnostic must say where it goes.
#include <trellis/base/enumeration.hpp>

namespace app {
enum class Light { Red, Green };
}  // namespace app

TRELLIS_ENUM(app::Light, Red, Green);

int main() {}
