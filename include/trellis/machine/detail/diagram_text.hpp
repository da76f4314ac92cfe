#pragma once
/// @file
/// Internal: text that diagrams of every layer (statechart/diagram.hpp, agent/diagram.hpp) put
/// into Mermaid and DOT files, made safe the same way.

#include <cstddef>
#include <string>
#include <string_view>

namespace trellis::detail {

/// `s` with every byte that is not part of well-formed UTF-8 replaced by '?': a diagram tool may
/// refuse a whole file for one bad byte.
inline std::string diagram_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
    }
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0U) == 0x80U;
    if (ok && n == 3) {  // no overlong forms, no surrogates
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    } else if (ok && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

/// The inside of a DOT quoted string: '"' and '\\' escaped (so "\\N" and friends stay literal),
/// a line break as DOT's "\\n", other control characters as spaces.
inline std::string dot_text(std::string_view raw) {
  std::string out;
  for (const char c : diagram_utf8(raw)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace trellis::detail
