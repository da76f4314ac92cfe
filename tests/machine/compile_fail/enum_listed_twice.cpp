// SPDX-License-Identifier: MIT
// Must not compile: TRELLIS_ENUM lists Red twice; the diagnostic must say to list each once.
#include <trellis/base/enumeration.hpp>

enum class Light { Red, Green };
TRELLIS_ENUM(Light, Red, Green, Red);

int main() {}
