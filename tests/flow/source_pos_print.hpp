// SPDX-License-Identifier: MIT
// A graph file's source position in doctest's messages (CHECK(problem.at == pos(3, 5))), for
// every test file of a flow suite.
#pragma once

#include <ostream>

#include "trellis/flow/source.hpp"

namespace trellis::flow {
inline std::ostream& operator<<(std::ostream& out, const SourcePos& at) {
  return out << to_string(at);
}
}  // namespace trellis::flow
