// SPDX-License-Identifier: MIT
#pragma once
// Private to trellis::flow: a graph file's YAML document as a plain tree, built from yaml-cpp's
// parser events (load.cpp walks it).
//
// YAML::Load builds a YAML::Node graph (reference-counted nodes, a memory holder per document);
// the loader only reads the document once, in order, so it builds this lighter tree from the
// same events instead, and goes on with the same Parser to see whether a second document
// follows, without parsing the text twice. The tree holds what YAML::Load's nodes hold for the
// same events: each node's kind, mark, tag and text; a mapping's pairs in file order with
// repeated keys kept; an alias is the anchored node itself (so `&a [*a]` contains itself).

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/type.h>

namespace trellis::flow::detail {

struct YamlData;

/// One node of a YamlDocument (a pointer: cheap to copy, valid while the document lives).
/// A default one is null, as the root of an empty stream is.
class YamlNode {
 public:
  YamlNode() = default;
  explicit YamlNode(const YamlData* data) : data_(data) {}

  YAML::NodeType::value type() const;
  bool is_map() const { return type() == YAML::NodeType::Map; }
  bool is_sequence() const { return type() == YAML::NodeType::Sequence; }
  bool is_scalar() const { return type() == YAML::NodeType::Scalar; }
  bool is_null() const { return type() == YAML::NodeType::Null; }
  /// "?" for a plain scalar, "!" for a quoted or block one, "" for null, else the tag written.
  const std::string& tag() const;
  /// A scalar's text ("" for any other node).
  const std::string& scalar() const;
  YAML::Mark mark() const;
  /// A sequence's items (none for any other node).
  const std::vector<YamlNode>& items() const;
  /// A mapping's pairs (key, value) in file order, a key written twice kept twice.
  const std::vector<std::pair<YamlNode, YamlNode>>& pairs() const;

 private:
  const YamlData* data_ = nullptr;
};

struct YamlData {
  YAML::NodeType::value type = YAML::NodeType::Null;
  YAML::Mark mark = YAML::Mark::null_mark();
  std::string tag;
  std::string scalar;
  std::vector<YamlNode> items;
  std::vector<std::pair<YamlNode, YamlNode>> pairs;
};

/// The first document of a YAML stream, and where a second one starts if there is one.
struct YamlDocument {
  std::deque<YamlData> nodes;  // a deque: nodes keep their address as it grows
  YamlNode root;
  std::optional<YAML::Mark> second_document;
};

/// Parses `text`'s first document and looks for a second. Throws YAML::Exception (with its
/// mark) for malformed YAML in either.
void parse_yaml(std::string_view text, YamlDocument& out);

}  // namespace trellis::flow::detail
