// The SCXML loader: reads a document with pugixml, checks it element by element (reporting the
// element's line and column), builds the chart's spec tree and compiles it.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <pugixml.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cond.hpp"
#include "trellis/scxml/load.hpp"
#include "trellis/statechart/errors.hpp"

namespace trellis::scxml::detail {
namespace {

using trellis::detail::ChartRegistry;
using trellis::detail::StateSpec;
using trellis::detail::TransitionSpec;
using problem = scxml_error::problem;

constexpr std::string_view scxml_namespace = "http://www.w3.org/2005/07/scxml";
constexpr std::string_view scxml_processor = "http://www.w3.org/TR/scxml/#SCXMLEventProcessor";

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Splits an XML list attribute (ids separated by whitespace).
std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// SCXML's delay (CSS2 durations: "2s", "500ms", ".5s", plus "m", "h", "d" as SCXML's schema
/// allows) in whole milliseconds; nullopt with `why` set when it is not one.
std::optional<std::chrono::milliseconds> parse_delay(std::string_view text, std::string& why) {
  const std::string_view s = trim(text);
  std::size_t i = 0;
  std::uint64_t whole = 0;
  std::size_t whole_digits = 0;
  while (i < s.size() && is_digit(s[i])) {
    if (++whole_digits > 15) {
      why = "is too long";
      return std::nullopt;
    }
    whole = whole * 10 + static_cast<std::uint64_t>(s[i] - '0');
    ++i;
  }
  std::uint64_t frac = 0;
  std::uint64_t frac_scale = 1;
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t frac_digits = 0;
    while (i < s.size() && is_digit(s[i])) {
      if (++frac_digits > 9) {
        why = "has more than 9 decimals";
        return std::nullopt;
      }
      frac = frac * 10 + static_cast<std::uint64_t>(s[i] - '0');
      frac_scale *= 10;
      ++i;
    }
    if (frac_digits == 0) {
      why = "has no digits after its decimal point";
      return std::nullopt;
    }
  }
  if (whole_digits == 0 && frac_scale == 1) {
    why = "has no number (a delay reads like \"2s\", \"500ms\" or \".5s\")";
    return std::nullopt;
  }
  const std::string_view unit = s.substr(i);
  std::uint64_t ms_per_unit = 0;
  if (unit == "ms")
    ms_per_unit = 1;
  else if (unit == "s")
    ms_per_unit = 1000;
  else if (unit == "m")
    ms_per_unit = 60'000;
  else if (unit == "h")
    ms_per_unit = 3'600'000;
  else if (unit == "d")
    ms_per_unit = 86'400'000;
  if (ms_per_unit == 0) {
    why = "has no unit among ms, s, m, h, d (a delay reads like \"2s\" or \"500ms\")";
    return std::nullopt;
  }
  constexpr std::uint64_t max_ms = std::uint64_t{1} << 50;  // about 35,000 years
  if (whole > max_ms / ms_per_unit) {
    why = "is too long";
    return std::nullopt;
  }
  const std::uint64_t frac_ms_scaled = frac * ms_per_unit;  // < 10^9 * 8.64 * 10^7: fits
  if (frac_ms_scaled % frac_scale != 0) {
    why = "is not a whole number of milliseconds";
    return std::nullopt;
  }
  const std::uint64_t total = whole * ms_per_unit + frac_ms_scaled / frac_scale;
  if (total > max_ms) {
    why = "is too long";
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(total));
}

/// One state as read: its place in document order, for the checks that follow the walk.
struct Node {
  std::string id;
  int parent = -1;
  int last = -1;  // last descendant (preorder index)
  pugi::xml_node element;
};

/// Ids a transition, an initial or a cond names, checked once every state is known.
struct Reference {
  enum class Kind { target, initial, history_default, in };
  Kind kind;
  std::vector<std::string> ids;
  int owner;  // the state the transition, initial or history belongs to
  pugi::xml_node element;
};

class Loader {
 public:
  Loader(std::string file, std::string_view text, const ErasedBindings& bindings,
         const LoadOptions& options)
      : file_(std::move(file)), text_(text), bindings_(bindings), options_(options) {}

  std::shared_ptr<const ChartDefinition> run() {
    pugi::xml_document doc;
    const pugi::xml_parse_result parsed =
        doc.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!parsed) fail_at(problem::malformed, "", parsed.offset, parsed.description());
    pugi::xml_node root;
    for (pugi::xml_node n : doc.children()) {
      if (n.type() != pugi::node_element) continue;
      if (root) fail(problem::malformed, n, "a second root element (a document has one)");
      root = n;
    }
    if (!root) fail_at(problem::malformed, "", 0, "no root element");

    StateSpec root_spec;
    read_root(root, root_spec);
    check_references();
    name_chart(root, root_spec);
    try {
      return trellis::detail::compile_chart(root_spec, std::move(registry_), options_.build);
    } catch (const chart_error& e) {
      std::string reason = e.what();
      if (reason.rfind("trellis: ", 0) == 0) reason.erase(0, 9);
      fail(problem::invalid, root, reason);
    }
  }

 private:
  // --- positions and errors ---------------------------------------------------------------

  /// The 1-based line and column of byte `offset` (0, 0 when there is none).
  std::pair<int, int> position(std::ptrdiff_t offset) const {
    if (offset < 0 || static_cast<std::size_t>(offset) > text_.size()) return {0, 0};
    int line = 1;
    int column = 1;
    const std::size_t bom = text_.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // not a character
    for (std::size_t i = bom; i < static_cast<std::size_t>(offset); ++i) {
      const auto c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
        ++column;
      }
    }
    return {line, column};
  }

  /// Where element `n` starts: its '<' (pugixml's offset_debug() is its name's).
  std::ptrdiff_t offset_of(pugi::xml_node n) const {
    std::ptrdiff_t offset = n.offset_debug();
    if (offset > 0 && text_[static_cast<std::size_t>(offset) - 1] == '<') --offset;
    return offset;
  }

  std::string where(pugi::xml_node n) const {
    const auto [line, column] = position(offset_of(n));
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  [[noreturn]] void fail_at(problem why, std::string element, std::ptrdiff_t offset,
                            std::string reason) const {
    const auto [line, column] = position(offset);
    throw scxml_error(why, file_, std::move(element), line, column, std::move(reason));
  }

  [[noreturn]] void fail(problem why, pugi::xml_node n, std::string reason) const {
    fail_at(why, n.name(), offset_of(n), std::move(reason));
  }

  // --- namespaces ---------------------------------------------------------------------------

  /// Pushes the namespace declarations of `n`; returns how many (pop them with `leave`).
  std::vector<std::string_view> enter(pugi::xml_node n) {
    std::vector<std::string_view> declared;
    for (pugi::xml_attribute a : n.attributes()) {
      const std::string_view name = a.name();
      std::string_view prefix;
      if (name == "xmlns")
        prefix = "";
      else if (name.rfind("xmlns:", 0) == 0)
        prefix = name.substr(6);
      else
        continue;
      scopes_[std::string(prefix)].push_back(a.value());
      declared.push_back(prefix);
    }
    return declared;
  }
  void leave(const std::vector<std::string_view>& declared) {
    for (std::string_view prefix : declared) {
      auto it = scopes_.find(prefix);
      it->second.pop_back();
      if (it->second.empty()) scopes_.erase(it);
    }
  }

  enum class Space { scxml, trellis, other };

  /// The namespace of element `n` (its declarations already entered) and its local name.
  std::pair<Space, std::string_view> classify(pugi::xml_node n) const {
    const std::string_view qname = n.name();
    const std::size_t colon = qname.find(':');
    const std::string_view prefix = colon == std::string_view::npos ? "" : qname.substr(0, colon);
    const std::string_view local =
        colon == std::string_view::npos ? qname : qname.substr(colon + 1);
    std::string_view uri;
    const auto it = scopes_.find(prefix);
    if (it != scopes_.end()) {
      uri = it->second.back();
    } else if (!prefix.empty()) {
      fail(problem::malformed, n, "namespace prefix " + quoted(prefix) + " is not declared");
    }
    if (uri.empty() || uri == scxml_namespace) return {Space::scxml, local};
    if (uri == trellis_namespace) return {Space::trellis, local};
    return {Space::other, uri};
  }

  // --- attributes ---------------------------------------------------------------------------

  /// Refuses duplicate attributes, SCXML attributes trellis does not support (`unsupported`)
  /// and unknown ones; attributes with a prefix (other namespaces, xmlns) are ignored.
  void check_attributes(pugi::xml_node n, std::initializer_list<std::string_view> allowed,
                        std::initializer_list<std::string_view> unsupported = {}) const {
    std::vector<std::string_view> names;
    for (pugi::xml_attribute a : n.attributes()) names.emplace_back(a.name());
    if (names.size() > 1) {
      std::sort(names.begin(), names.end());
      const auto dup = std::adjacent_find(names.begin(), names.end());
      if (dup != names.end())
        fail(problem::malformed, n, "attribute " + quoted(*dup) + " appears twice");
    }
    for (std::string_view name : names) {
      if (name == "xmlns" || name.find(':') != std::string_view::npos) continue;
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
      if (std::find(unsupported.begin(), unsupported.end(), name) != unsupported.end())
        fail(problem::unsupported, n, "attribute " + quoted(name) + " is not supported");
      fail(problem::invalid, n, "unknown attribute " + quoted(name));
    }
  }

  static std::optional<std::string_view> attr(pugi::xml_node n, const char* name) {
    const pugi::xml_attribute a = n.attribute(name);
    if (!a) return std::nullopt;
    return std::string_view(a.value());
  }

  std::string_view required(pugi::xml_node n, const char* name) const {
    const auto v = attr(n, name);
    if (!v || trim(*v).empty())
      fail(problem::invalid, n, std::string("the attribute '") + name + "' is required");
    return *v;
  }

  void no_child_elements(pugi::xml_node n) const {
    for (pugi::xml_node c : n.children())
      if (c.type() == pugi::node_element)
        fail(problem::invalid, c, "<" + std::string(n.name()) + "> has no child elements");
  }

  // --- the walk -----------------------------------------------------------------------------

  /// Elements SCXML has that trellis does not run, wherever they appear.
  static bool unsupported_element(std::string_view local) {
    static constexpr std::string_view names[] = {
        "invoke", "script",  "datamodel", "data",    "assign",   "if",      "elseif",
        "else",   "foreach", "param",     "content", "donedata", "finalize"};
    return std::find(std::begin(names), std::end(names), local) != std::end(names);
  }

  /// Refuses a child `c` (its namespace entered) that does not belong where it is.
  [[noreturn]] void misplaced(pugi::xml_node c, Space space, std::string_view local,
                              std::string_view parent) const {
    if (space == Space::other)
      fail(problem::unsupported, c,
           "elements of namespace " + quoted(local) + " are not supported");
    if (space == Space::scxml && unsupported_element(local))
      fail(problem::unsupported, c, "<" + std::string(local) + "> is not supported");
    fail(problem::invalid, c,
         "<" + std::string(c.name()) + "> is not allowed in <" + std::string(parent) + ">");
  }

  int add_node(std::string id, int parent, pugi::xml_node element) {
    const int index = static_cast<int>(nodes_.size());
    if (!id.empty()) {
      const auto [it, fresh] = ids_.emplace(id, index);
      if (!fresh) {
        const pugi::xml_node first = nodes_[static_cast<std::size_t>(it->second)].element;
        fail(problem::invalid, element,
             "id " + quoted(id) + " is also the id of the <" + first.name() + "> at " +
                 where(first));
      }
    }
    nodes_.push_back(Node{std::move(id), parent, index, element});
    return index;
  }

  void read_root(pugi::xml_node root, StateSpec& spec) {
    const auto declared = enter(root);
    const std::string_view qname = root.name();
    const std::size_t colon = qname.find(':');
    const std::string_view local =
        colon == std::string_view::npos ? qname : qname.substr(colon + 1);
    if (local != "scxml")
      fail(problem::invalid, root, "the root element is <" + std::string(qname) + ">, not <scxml>");
    {
      const std::string_view prefix = colon == std::string_view::npos ? "" : qname.substr(0, colon);
      const auto it = scopes_.find(prefix);
      const std::string_view uri = it == scopes_.end() ? "" : it->second.back();
      if (it == scopes_.end() && !prefix.empty())
        fail(problem::malformed, root, "namespace prefix " + quoted(prefix) + " is not declared");
      if (!uri.empty() && uri != scxml_namespace)
        fail(problem::invalid, root,
             "namespace " + quoted(uri) + " is not SCXML's (" + std::string(scxml_namespace) + ")");
    }
    check_attributes(root, {"initial", "name", "version", "datamodel", "binding"});
    if (const auto v = attr(root, "version"); v && trim(*v) != "1.0")
      fail(problem::invalid, root, "version " + quoted(*v) + " is not SCXML 1.0");
    if (const auto b = attr(root, "binding"); b && *b != "early" && *b != "late")
      fail(problem::invalid, root, "binding " + quoted(*b) + " is neither 'early' nor 'late'");
    if (const auto dm = attr(root, "datamodel")) {
      if (*dm == "ecmascript" && options_.allow_unused_ecmascript) {
        ecmascript_ = true;
      } else if (*dm != "null") {
        fail(problem::unsupported, root,
             "datamodel " + quoted(*dm) +
                 " is not supported (trellis runs the null datamodel with C++ bindings" +
                 (*dm == "ecmascript" ? "; LoadOptions::allow_unused_ecmascript accepts documents "
                                        "that do not use ECMAScript)"
                                      : ")"));
      }
    }
    if (const auto name = attr(root, "name"); name && !trim(*name).empty()) {
      spec.id = std::string(*name);
      named_ = true;
    }
    add_node(std::string(), -1, root);
    if (const auto initial = attr(root, "initial")) {
      spec.initial.emplace();
      spec.initial->targets = split(*initial);
      if (spec.initial->targets.empty())
        fail(problem::invalid, root, "the attribute 'initial' names no state");
      refs_.push_back(Reference{Reference::Kind::initial, spec.initial->targets, 0, root});
    }
    bool has_state = false;
    for (pugi::xml_node c : root.children()) {
      if (c.type() != pugi::node_element) continue;
      const auto inner = enter(c);
      const auto [space, local_name] = classify(c);
      if (space == Space::scxml &&
          (local_name == "state" || local_name == "parallel" || local_name == "final")) {
        read_state(c, local_name, spec, 0, 1);
        has_state = true;
      } else {
        misplaced(c, space, local_name, "scxml");
      }
      leave(inner);
    }
    if (!has_state) fail(problem::invalid, root, "the document has no states");
    nodes_[0].last = static_cast<int>(nodes_.size()) - 1;
    leave(declared);
  }

  /// Reads a <state>, <parallel> or <final> (namespaces entered) into a new child of `parent`.
  void read_state(pugi::xml_node n, std::string_view local, StateSpec& parent, int parent_index,
                  int depth) {
    if (depth > options_.build.max_depth)
      fail(problem::invalid, n,
           "states are nested deeper than " + std::to_string(options_.build.max_depth) +
               " levels (LoadOptions::build.max_depth)");
    auto spec = std::make_unique<StateSpec>();
    StateSpec& s = *spec;
    parent.children.push_back(std::move(spec));
    const bool is_state = local == "state";
    const bool is_parallel = local == "parallel";
    s.kind = is_state      ? StateSpec::Kind::state
             : is_parallel ? StateSpec::Kind::parallel
                           : StateSpec::Kind::final_state;
    if (is_state)
      check_attributes(n, {"id", "initial"});
    else
      check_attributes(n, {"id"});
    if (const auto id = attr(n, "id")) s.id = std::string(*id);
    const int self = add_node(s.id, parent_index, n);

    bool has_children = false;
    pugi::xml_node initial_element;
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const auto inner = enter(c);
      const auto [space, name] = classify(c);
      const bool scxml = space == Space::scxml;
      if (scxml && (name == "onentry" || name == "onexit")) {
        check_attributes(c, {});
        auto& blocks = name == "onentry" ? s.on_entry : s.on_exit;
        blocks.emplace_back();
        read_block(c, blocks.back());
      } else if (scxml && !is_final_kind(s) && name == "transition") {
        s.transitions.push_back(read_transition(c, self, Reference::Kind::target));
      } else if (scxml && !is_final_kind(s) &&
                 (name == "state" || name == "parallel" || (is_state && name == "final"))) {
        read_state(c, name, s, self, depth + 1);
        has_children = true;
      } else if (scxml && !is_final_kind(s) && name == "history") {
        read_history(c, s, self, depth + 1);
      } else if (scxml && is_state && name == "initial") {
        if (initial_element)
          fail(problem::invalid, c, "a second <initial> (a state has at most one)");
        if (attr(n, "initial"))
          fail(problem::invalid, c, "<initial> beside the attribute 'initial' of its state");
        check_attributes(c, {});
        initial_element = c;
        s.initial = read_single_transition(c, self, Reference::Kind::initial);
      } else if (scxml && is_parallel && name == "final") {
        fail(problem::invalid, c, "a <final> cannot be a region of a <parallel>");
      } else {
        misplaced(c, space, name, n.name());
      }
      leave(inner);
    }
    if (const auto initial = attr(n, "initial")) {
      s.initial.emplace();
      s.initial->targets = split(*initial);
      if (s.initial->targets.empty())
        fail(problem::invalid, n, "the attribute 'initial' names no state");
      refs_.push_back(Reference{Reference::Kind::initial, s.initial->targets, self, n});
    }
    if (s.initial && !has_children)
      fail(problem::invalid, initial_element ? initial_element : n,
           "an initial state for a state that has no child states");
    nodes_[static_cast<std::size_t>(self)].last = static_cast<int>(nodes_.size()) - 1;
  }

  static bool is_final_kind(const StateSpec& s) { return s.kind == StateSpec::Kind::final_state; }

  void read_history(pugi::xml_node n, StateSpec& parent, int parent_index, int depth) {
    if (depth > options_.build.max_depth)
      fail(problem::invalid, n,
           "states are nested deeper than " + std::to_string(options_.build.max_depth) +
               " levels (LoadOptions::build.max_depth)");
    check_attributes(n, {"id", "type"});
    auto spec = std::make_unique<StateSpec>();
    StateSpec& s = *spec;
    parent.children.push_back(std::move(spec));
    s.kind = StateSpec::Kind::shallow_history;
    if (const auto type = attr(n, "type")) {
      if (*type == "deep")
        s.kind = StateSpec::Kind::deep_history;
      else if (*type != "shallow")
        fail(problem::invalid, n, "type " + quoted(*type) + " is neither 'shallow' nor 'deep'");
    }
    if (const auto id = attr(n, "id")) s.id = std::string(*id);
    const int self = add_node(s.id, parent_index, n);
    s.initial = read_single_transition(n, self, Reference::Kind::history_default);
  }

  /// The one <transition> of an <initial> or a <history>: a target, content, nothing else.
  TransitionSpec read_single_transition(pugi::xml_node n, int owner, Reference::Kind kind) {
    std::optional<TransitionSpec> t;
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const auto inner = enter(c);
      const auto [space, name] = classify(c);
      if (space != Space::scxml || name != "transition") misplaced(c, space, name, n.name());
      if (t)
        fail(problem::invalid, c,
             "a second <transition> (<" + std::string(n.name()) + "> has exactly one)");
      check_attributes(c, {"target"});
      t = read_transition(c, owner, kind);
      if (t->targets.empty()) required(c, "target");
      leave(inner);
    }
    if (!t)
      fail(problem::invalid, n,
           "<" + std::string(n.name()) + "> needs a <transition> naming its target");
    return std::move(*t);
  }

  TransitionSpec read_transition(pugi::xml_node n, int owner, Reference::Kind kind) {
    if (kind == Reference::Kind::target) check_attributes(n, {"event", "cond", "target", "type"});
    TransitionSpec t;
    if (const auto event = attr(n, "event")) t.event = std::string(trim(*event));
    if (const auto target = attr(n, "target")) {
      t.targets = split(*target);
      if (!t.targets.empty()) refs_.push_back(Reference{kind, t.targets, owner, n});
    }
    if (const auto type = attr(n, "type")) {
      if (*type == "internal")
        t.internal = true;
      else if (*type != "external")
        fail(problem::invalid, n,
             "type " + quoted(*type) + " is neither 'internal' nor 'external'");
    }
    if (const auto cond = attr(n, "cond")) t.guard = read_cond(n, *cond);
    read_block(n, t.content);
    return t;
  }

  // --- conditions ---------------------------------------------------------------------------

  int read_cond(pugi::xml_node n, std::string_view text) {
    CondParser parser(text, !ecmascript_);
    std::string error;
    std::shared_ptr<CondNode> root = parser.parse(error);
    if (!root) fail(problem::unsupported, n, "cond " + quoted(text) + " " + error);
    std::vector<std::string> in_ids;
    bool uses_data = false;
    resolve(n, *root, in_ids, uses_data);
    if (!in_ids.empty()) refs_.push_back(Reference{Reference::Kind::in, std::move(in_ids), -1, n});
    ChartGuard g;
    if (root->kind == CondNode::Kind::in) {
      g.name = "In('" + root->text + "')";
      g.in_id = root->text;
    } else if (root->kind == CondNode::Kind::name) {
      g.name = root->text;
      g.fn = root->guard;
    } else {
      g.name = std::string(trim(text));
      g.fn = [root](const void* data, const ChartEvent& e, const ChartQuery& q) {
        return evaluate(*root, data, e, q);
      };
    }
    if (uses_data) registry_.data_type = bindings_.data_type;
    registry_.guards.push_back(std::move(g));
    return static_cast<int>(registry_.guards.size()) - 1;
  }

  /// Binds the names of a parsed cond to the guards of `bindings_` and collects its In() ids.
  void resolve(pugi::xml_node n, CondNode& c, std::vector<std::string>& in_ids, bool& uses_data) {
    // iterative: the parser caps the depth, but a wide cond has many nodes
    std::vector<CondNode*> work{&c};
    while (!work.empty()) {
      CondNode* x = work.back();
      work.pop_back();
      if (x->kind == CondNode::Kind::in) in_ids.push_back(x->text);
      if (x->kind == CondNode::Kind::name) {
        const auto it = bindings_.guards.find(x->text);
        if (it == bindings_.guards.end())
          fail(problem::invalid, n,
               "cond names " + quoted(x->text) + ", which no guard is bound to");
        x->guard = it->second;
        uses_data = true;
      }
      for (auto& arg : x->args) work.push_back(arg.get());
    }
  }

  // --- executable content -------------------------------------------------------------------

  void read_block(pugi::xml_node n, ChartBlock& block) {
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      const auto inner = enter(c);
      const auto [space, name] = classify(c);
      if (space == Space::trellis) {
        if (name != "call")
          fail(problem::invalid, c,
               "unknown trellis element <" + std::string(c.name()) + "> (trellis has <call name>)");
        check_attributes(c, {"name"});
        no_child_elements(c);
        block.push_back(read_call(c));
      } else if (space != Space::scxml) {
        misplaced(c, space, name, n.name());
      } else if (name == "raise") {
        check_attributes(c, {"event"});
        no_child_elements(c);
        ChartOp op;
        op.kind = ChartOp::Kind::raise;
        op.name = std::string(trim(required(c, "event")));
        block.push_back(std::move(op));
      } else if (name == "send") {
        block.push_back(read_send(c));
      } else if (name == "cancel") {
        check_attributes(c, {"sendid"}, {"sendidexpr"});
        no_child_elements(c);
        ChartOp op;
        op.kind = ChartOp::Kind::cancel;
        op.name = std::string(required(c, "sendid"));
        block.push_back(std::move(op));
      } else if (name == "log") {
        check_attributes(c, {"label", "expr"});
        no_child_elements(c);
        ChartOp op;
        op.kind = ChartOp::Kind::log;
        if (const auto label = attr(c, "label")) op.name = std::string(*label);
        block.push_back(std::move(op));
      } else {
        if (unsupported_element(name))
          fail(problem::unsupported, c, "<" + std::string(name) + "> is not supported");
        fail(problem::invalid, c,
             "<" + std::string(c.name()) + "> is not executable content (in <" + n.name() + ">)");
      }
      leave(inner);
    }
  }

  ChartOp read_call(pugi::xml_node c) {
    const std::string name(required(c, "name"));
    const auto it = bindings_.actions.find(name);
    if (it == bindings_.actions.end())
      fail(problem::invalid, c, "calls " + quoted(name) + ", which no action is bound to");
    ChartOp op;
    op.kind = ChartOp::Kind::call;
    op.name = name;
    const auto known = action_index_.find(name);
    if (known != action_index_.end()) {
      op.action = known->second;
    } else {
      op.action = static_cast<int>(registry_.actions.size());
      registry_.actions.push_back(ChartAction{name, it->second});
      action_index_.emplace(name, op.action);
    }
    registry_.data_type = bindings_.data_type;
    return op;
  }

  ChartOp read_send(pugi::xml_node c) {
    check_attributes(c, {"event", "target", "type", "id", "delay", "delayexpr"},
                     {"eventexpr", "targetexpr", "typeexpr", "idlocation", "namelist"});
    for (pugi::xml_node x : c.children()) {
      if (x.type() != pugi::node_element) continue;
      const auto inner = enter(x);
      const auto [space, name] = classify(x);
      misplaced(x, space, name, "send");
    }
    if (const auto type = attr(c, "type"); type && *type != scxml_processor && *type != "scxml")
      fail(problem::unsupported, c, "type " + quoted(*type) + " is not supported (only SCXML's)");
    ChartOp op;
    op.kind = ChartOp::Kind::send;
    op.name = std::string(trim(required(c, "event")));
    if (const auto id = attr(c, "id")) op.send_id = std::string(*id);
    const auto delay = attr(c, "delay");
    const auto delayexpr = attr(c, "delayexpr");
    if (delay && delayexpr) fail(problem::invalid, c, "both 'delay' and 'delayexpr'");
    std::optional<std::string_view> duration = delay;
    if (delayexpr) {
      const std::string_view e = trim(*delayexpr);
      const bool literal = e.size() >= 2 && (e.front() == '\'' || e.front() == '"') &&
                           e.back() == e.front() &&
                           e.substr(1, e.size() - 2).find(e.front()) == std::string_view::npos;
      if (!ecmascript_ || !literal)
        fail(problem::unsupported, c,
             "attribute 'delayexpr' is not supported (only a quoted literal, with "
             "LoadOptions::allow_unused_ecmascript)");
      duration = e.substr(1, e.size() - 2);
    }
    if (duration) {
      std::string why;
      const auto ms = parse_delay(*duration, why);
      if (!ms) fail(problem::invalid, c, "delay " + quoted(*duration) + " " + why);
      op.delay = *ms;
    }
    if (const auto target = attr(c, "target")) {
      const std::string_view t = trim(*target);
      if (t == "#_internal") {
        if (op.delay.count() != 0)
          fail(problem::unsupported, c, "a delayed send to '#_internal' is not supported");
        op.kind = ChartOp::Kind::raise;
        op.send_id.clear();
      } else {
        // '#_scxml_<id>' names a session by id, which a document cannot know for its own
        // chart (W3C test 496 expects error.communication for one that is not): refused
        fail(problem::unsupported, c,
             "target " + quoted(t) +
                 " is not supported (a <send> goes to the chart itself: no target, or "
                 "'#_internal')");
      }
    }
    return op;
  }

  // --- after the walk -----------------------------------------------------------------------

  bool is_descendant(int x, int ancestor) const {
    return x > ancestor && x <= nodes_[static_cast<std::size_t>(ancestor)].last;
  }

  void check_references() const {
    for (const Reference& r : refs_) {
      for (const std::string& id : r.ids) {
        const auto it = ids_.find(id);
        if (it == ids_.end()) fail(problem::invalid, r.element, "unknown id " + quoted(id));
        const int x = it->second;
        if (r.kind == Reference::Kind::initial) {
          if (x == r.owner || is_descendant(r.owner, x))
            fail(problem::invalid, r.element,
                 "initial state " + quoted(id) +
                     " is the state itself or an ancestor: a cycle "
                     "of initial states");
          if (!is_descendant(x, r.owner))
            fail(problem::invalid, r.element,
                 "initial state " + quoted(id) + " is not a descendant of " + describe(r.owner));
        } else if (r.kind == Reference::Kind::history_default) {
          const int scope = nodes_[static_cast<std::size_t>(r.owner)].parent;
          if (x == r.owner || x == scope || !is_descendant(x, scope))
            fail(problem::invalid, r.element,
                 "the default target " + quoted(id) + " is not a descendant of " + describe(scope));
        }
      }
    }
  }

  std::string describe(int state) const {
    const Node& node = nodes_[static_cast<std::size_t>(state)];
    if (state == 0) return "the chart";
    if (node.id.empty())
      return "the <" + std::string(node.element.name()) + "> at " + where(node.element);
    return "state " + quoted(node.id);
  }

  /// The chart's name: <scxml name>, or "scxml" (another name when a state has that id).
  void name_chart(pugi::xml_node root, StateSpec& spec) const {
    if (named_) {
      if (ids_.count(spec.id) != 0)
        fail(problem::invalid, root,
             "the chart's name " + quoted(spec.id) +
                 " is also a state's id (trellis names the chart's root after the chart)");
      return;
    }
    spec.id = "scxml";
    while (ids_.count(spec.id) != 0) spec.id += "_";
  }

  std::string file_;
  std::string_view text_;
  const ErasedBindings& bindings_;
  const LoadOptions& options_;
  bool ecmascript_ = false;
  bool named_ = false;
  std::map<std::string, std::vector<std::string_view>, std::less<>> scopes_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> ids_;
  std::vector<Reference> refs_;
  ChartRegistry registry_;
  std::map<std::string, int> action_index_;
};

bool looks_like_text(std::string_view s) {
  if (s.rfind("\xEF\xBB\xBF", 0) == 0) s.remove_prefix(3);
  s = trim(s);
  return !s.empty() && s.front() == '<';
}

std::string read_file(const std::string& path, std::size_t max_bytes) {
  auto refuse = [&](const std::string& reason) -> std::string {
    throw scxml_error(problem::invalid, path, "", 0, 0, reason);
  };
  if (path.empty()) refuse("an empty path");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return refuse(std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refuse(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return refuse(std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes)
      return refuse("larger than " + std::to_string(max_bytes) + " bytes (LoadOptions::max_bytes)");
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

std::shared_ptr<const ChartDefinition> load_definition(std::string_view path_or_text, Source source,
                                                       const ErasedBindings& bindings,
                                                       const LoadOptions& options) {
  const bool text =
      source == Source::text || (source == Source::guess && looks_like_text(path_or_text));
  if (text) {
    const std::string name = options.source_name.empty() ? "<text>" : options.source_name;
    if (path_or_text.size() > options.max_bytes)
      throw scxml_error(
          problem::invalid, name, "", 0, 0,
          "larger than " + std::to_string(options.max_bytes) + " bytes (LoadOptions::max_bytes)");
    return Loader(name, path_or_text, bindings, options).run();
  }
  const std::string path(path_or_text);
  const std::string contents = read_file(path, options.max_bytes);
  return Loader(path, contents, bindings, options).run();
}

bool is_binding_name(std::string_view name) noexcept { return is_cond_name(name); }

void check_binding(const ErasedBindings& b, std::string_view kind, std::string_view name) {
  const std::string what = std::string(kind) + " " + quoted(name);
  if (kind == "guard") {
    if (!is_cond_name(name))
      throw invalid_option("trellis: scxml::Bindings: " + what +
                           " cannot be named by a cond (a letter or '_', then letters, digits, "
                           "'_' or '.'; not In, true, false, and, or, not)");
    if (b.guards.count(name) != 0)
      throw invalid_option("trellis: scxml::Bindings: " + what + " is bound twice");
  } else {
    if (name.empty()) throw invalid_option("trellis: scxml::Bindings: an action with no name");
    if (b.actions.count(name) != 0)
      throw invalid_option("trellis: scxml::Bindings: " + what + " is bound twice");
  }
}

}  // namespace trellis::scxml::detail
