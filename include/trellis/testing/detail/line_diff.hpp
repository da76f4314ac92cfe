#pragma once
/// @file
/// A line diff for golden-file failures: the longest common subsequence of lines, printed as
/// "- golden" / "+ output" with a few lines of context, so a failing test shows which cells
/// changed instead of two whole files.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::detail {

inline std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return lines;
}

/// The lines of `expected` and `actual` that differ, with `context` unchanged lines around
/// each change; empty when the lines are equal.
inline std::string line_diff(std::string_view expected, std::string_view actual,
                             std::size_t context = 3) {
  const std::vector<std::string_view> a = split_lines(expected);
  const std::vector<std::string_view> b = split_lines(actual);
  const std::size_t n = a.size();
  const std::size_t m = b.size();

  // The quadratic table is fine for golden files (tens to hundreds of lines); past that,
  // report the first differing line rather than spend seconds on a diff.
  constexpr std::size_t kMaxCells = 4'000'000;
  std::vector<char> ops;  // ' ' same, '-' only in expected, '+' only in actual
  std::vector<std::string_view> text;
  if ((n + 1) * (m + 1) > kMaxCells) {
    std::size_t i = 0;
    while (i < n && i < m && a[i] == b[i]) ++i;
    if (i == n && i == m) return {};
    std::string out = "  (files too large for a full diff; first difference at line " +
                      std::to_string(i + 1) + ")\n";
    if (i < n) out += "- " + std::string(a[i]) + "\n";
    if (i < m) out += "+ " + std::string(b[i]) + "\n";
    return out;
  }
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
  std::vector<std::size_t> lcs((n + 1) * (m + 1), 0);
  const auto at = [&](std::size_t i, std::size_t j) -> std::size_t& {
    return lcs[i * (m + 1) + j];
  };
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      at(i, j) = a[i] == b[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ops.push_back(' ');
      text.push_back(a[i]);
      ++i;
      ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      // On a tie the golden line goes first, so a changed line reads "- old" then "+ new".
      ops.push_back('-');
      text.push_back(a[i++]);
    } else {
      ops.push_back('+');
      text.push_back(b[j++]);
    }
  }

  std::vector<bool> shown(ops.size(), false);
  bool any_change = false;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (ops[k] == ' ') continue;
    any_change = true;
    const std::size_t lo = k >= context ? k - context : 0;
    const std::size_t hi = std::min(ops.size(), k + context + 1);
    std::fill(shown.begin() + static_cast<std::ptrdiff_t>(lo),
              shown.begin() + static_cast<std::ptrdiff_t>(hi), true);
  }
  if (!any_change) return {};

  std::string out;
  bool skipping = false;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!shown[k]) {
      if (!skipping) out += "  ...\n";
      skipping = true;
      continue;
    }
    skipping = false;
    out += ops[k];
    out += ' ';
    out += text[k];
    out += '\n';
  }
  return out;
}

}  // namespace trellis::detail
