#pragma once
/// @file
/// `SourcePos`: where something is in a graph file (1-based line and column), for errors.

#include <cstddef>
#include <string>
#include <string_view>

namespace trellis::flow {

struct SourcePos {
  std::string file;  ///< the file's path as given to the loader (or the name given with a text)
  int line = 0;      ///< 1-based; 0: unknown
  int column = 0;    ///< 1-based; 0: unknown

  friend bool operator==(const SourcePos&, const SourcePos&) = default;
};

/// "<file>:<line>:<column>" ("<file>" alone when the line is unknown).
std::string to_string(const SourcePos& at);

/// The position `offset` characters into a text that starts at `at` (newlines in the text move
/// to the next line, column 1): where an error inside an expression is.
SourcePos advance(SourcePos at, std::string_view text, std::size_t offset);

}  // namespace trellis::flow
