// The SCXML layer's error: its message and codes.

#include "trellis/scxml/errors.hpp"

#include <utility>

namespace trellis::scxml {
namespace {

std::string message(const std::string& file, const std::string& element, int line, int column,
                    const std::string& reason) {
  std::string m = "trellis: " + file;
  if (line > 0) m += ":" + std::to_string(line) + ":" + std::to_string(column);
  m += ": ";
  if (!element.empty()) m += element + ": ";
  return m + reason;
}

}  // namespace

scxml_error::scxml_error(problem why, std::string file, std::string element, int line, int column,
                         std::string reason)
    : error(message(file, element, line, column, reason)),
      why_(why),
      file_(std::move(file)),
      element_(std::move(element)),
      line_(line),
      column_(column),
      reason_(std::move(reason)) {}

std::string_view scxml_error::id() const noexcept {
  switch (why_) {
    case problem::malformed:
      return "scxml.malformed";
    case problem::unsupported:
      return "scxml.unsupported";
    case problem::invalid:
      break;
  }
  return "scxml.invalid";
}

}  // namespace trellis::scxml
