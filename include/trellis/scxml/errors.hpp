#pragma once
/// @file
/// The SCXML layer's error (codes "scxml.*", listed in docs/errors.md): one class,
/// `scxml_error`, that names the document, the element, its line and column, and the reason.

#include <string>
#include <string_view>

#include "trellis/base/error.hpp"

namespace trellis::scxml {

/// A document `load` cannot turn into a chart, or a chart `save` cannot write as SCXML.
///
/// `what()` reads "trellis: <file>:<line>:<column>: <element>: <reason>", where
/// - `file()` is the path read, or `LoadOptions::source_name` for text (`"<text>"` when that is
///   empty), or, from `save`, "chart '<name>'";
/// - `line()` and `column()` are 1-based and point at the element's `<` (an attribute's problem
///   is reported at its element; a malformed document at the place the XML parser stopped);
///   both are 0 where there is no position (a file that cannot be read, a chart being saved),
///   and `what()` then leaves them out;
/// - `element()` is the element's name as written (`"transition"`, `"sc:send"`), empty where
///   there is none.
///
/// Codes (`id()`, and `why()` as an enumeration):
/// - "scxml.malformed": not well-formed XML (pugixml's description of the problem);
/// - "scxml.unsupported": valid SCXML that trellis does not run (another datamodel, `<invoke>`,
///   `<script>`, `<assign>`, a `<send>` to another target, a condition that is not a binding
///   name, `In()`, `true`/`false` or their combination, ...);
/// - "scxml.invalid": not a valid chart (an unknown id, a cycle of initial states, a missing
///   required attribute, a bad delay, the wrong root element or namespace, a file that cannot be
///   read, anything the chart compiler refuses).
class scxml_error : public error {
 public:
  enum class problem { malformed, unsupported, invalid };

  scxml_error(problem why, std::string file, std::string element, int line, int column,
              std::string reason);

  std::string_view id() const noexcept override;

  problem why() const noexcept { return why_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& element() const noexcept { return element_; }
  int line() const noexcept { return line_; }
  int column() const noexcept { return column_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  problem why_;
  std::string file_;
  std::string element_;
  int line_;
  int column_;
  std::string reason_;
};

}  // namespace trellis::scxml
