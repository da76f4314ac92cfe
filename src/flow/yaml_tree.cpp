// SPDX-License-Identifier: MIT
// The events of one YAML document into a YamlDocument; see yaml_tree.hpp.

#include "yaml_tree.hpp"

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

namespace trellis::flow::detail {

namespace {

const std::string no_text;
const std::vector<YamlNode> no_items;
const std::vector<std::pair<YamlNode, YamlNode>> no_pairs;

/// Builds the tree as yaml-cpp's own NodeBuilder does: a node is created (and its anchor
/// registered) when it starts, and joins its parent when it ends; a mapping's children come
/// key, value, key, value.
class Builder final : public YAML::EventHandler {
 public:
  explicit Builder(std::deque<YamlData>& nodes) : nodes_(nodes) {}

  YamlNode root() const { return root_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    add(start(mark, anchor, YAML::NodeType::Null));
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    // The parser refuses an unknown anchor before this is called.
    if (anchor < anchors_.size() && anchors_[anchor]) add(*anchors_[anchor]);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    YamlData& d = start(mark, anchor, YAML::NodeType::Scalar);
    d.tag = tag;
    d.scalar = value;
    add(d);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    YamlData& d = start(mark, anchor, YAML::NodeType::Sequence);
    d.tag = tag;
    open_.push_back({&d, nullptr});
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    YamlData& d = start(mark, anchor, YAML::NodeType::Map);
    d.tag = tag;
    open_.push_back({&d, nullptr});
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    YamlData* node;
    const YamlData* key;  // a mapping's key waiting for its value
  };

  YamlData& start(const YAML::Mark& mark, YAML::anchor_t anchor, YAML::NodeType::value type) {
    YamlData& d = nodes_.emplace_back();
    d.type = type;
    d.mark = mark;
    if (anchor != YAML::NullAnchor) {
      if (anchors_.size() <= anchor) anchors_.resize(anchor + 1, nullptr);
      anchors_[anchor] = &d;
    }
    return d;
  }

  void close() {
    if (open_.empty()) return;
    const YamlData* d = open_.back().node;
    open_.pop_back();
    add(*d);
  }

  void add(const YamlData& d) {
    if (open_.empty()) {
      root_ = YamlNode(&d);
      return;
    }
    Open& parent = open_.back();
    if (parent.node->type == YAML::NodeType::Sequence) {
      parent.node->items.emplace_back(&d);
    } else if (!parent.key) {
      parent.key = &d;
    } else {
      parent.node->pairs.emplace_back(YamlNode(parent.key), YamlNode(&d));
      parent.key = nullptr;
    }
  }

  std::deque<YamlData>& nodes_;
  std::vector<const YamlData*> anchors_;
  std::vector<Open> open_;
  YamlNode root_;
};

/// Notes where the next document starts, and nothing else.
class DocumentStart final : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;

  void OnDocumentStart(const YAML::Mark& m) override {
    if (!mark) mark = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::NodeType::value YamlNode::type() const { return data_ ? data_->type : YAML::NodeType::Null; }
const std::string& YamlNode::tag() const { return data_ ? data_->tag : no_text; }
const std::string& YamlNode::scalar() const { return data_ ? data_->scalar : no_text; }
YAML::Mark YamlNode::mark() const { return data_ ? data_->mark : YAML::Mark::null_mark(); }
const std::vector<YamlNode>& YamlNode::items() const { return data_ ? data_->items : no_items; }
const std::vector<std::pair<YamlNode, YamlNode>>& YamlNode::pairs() const {
  return data_ ? data_->pairs : no_pairs;
}

void parse_yaml(std::string_view text, YamlDocument& out) {
  std::istringstream stream{std::string(text)};
  YAML::Parser parser(stream);
  Builder builder(out.nodes);
  if (!parser.HandleNextDocument(builder)) return;
  out.root = builder.root();
  // The rest of the stream is parsed only when there is a second document: its start is all
  // that is kept (and a malformed one throws, as the first would).
  DocumentStart next;
  if (parser.HandleNextDocument(next)) out.second_document = next.mark;
}

}  // namespace trellis::flow::detail
