// Loading graph files (docs/graph-files.md): the YAML or JSON text is parsed by yaml-cpp, then
// walked member by member into a GraphFile. Every shape problem is collected with its line and
// column and the walk goes on, so one graph_file_error lists them all.
//
// yaml-cpp gives every scalar as text: a plain scalar is resolved here by the YAML 1.2 core
// schema (null, booleans, integers, floats, else a string), a quoted or block scalar (tag "!")
// stays a string. Its marks count columns in bytes and positions after a byte order mark; the
// positions given out count characters from the text's first byte, as advance() does.

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include <yaml-cpp/exceptions.h>

#include <trellis/io/checksum.hpp>
#include <trellis/io/file_io.hpp>

#include "trellis/flow/errors.hpp"
#include "trellis/flow/graph_file.hpp"
#include "yaml_tree.hpp"

namespace trellis::flow {

std::string_view to_string(OnError e) noexcept {
  switch (e) {
    case OnError::fail:
      return "fail";
    case OnError::continue_:
      return "continue";
  }
  return "fail";
}

std::string_view to_string(NodeKind k) noexcept {
  switch (k) {
    case NodeKind::action:
      return "action";
    case NodeKind::gate:
      return "gate";
    case NodeKind::approval:
      return "approval";
    case NodeKind::return_:
      return "return";
    case NodeKind::foreach:
      return "foreach";
    case NodeKind::subgraph:
      return "subgraph";
  }
  return "gate";
}

const NodeSpec* GraphFile::node(std::string_view name) const {
  for (const NodeSpec& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

namespace {

using detail::YamlNode;
using nlohmann::json;

/// Values nested deeper than this are refused (a recursive alias, `&a [*a]`, is infinitely deep).
constexpr int max_depth = 128;
/// Values beyond this many are refused (aliases of aliases expand exponentially).
constexpr std::size_t max_values = 1'000'000;

constexpr std::string_view yaml_str = "tag:yaml.org,2002:str";
constexpr std::string_view yaml_int = "tag:yaml.org,2002:int";
constexpr std::string_view yaml_float = "tag:yaml.org,2002:float";
constexpr std::string_view yaml_bool = "tag:yaml.org,2002:bool";
constexpr std::string_view yaml_null = "tag:yaml.org,2002:null";
constexpr std::string_view yaml_map = "tag:yaml.org,2002:map";
constexpr std::string_view yaml_seq = "tag:yaml.org,2002:seq";

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier(std::string_view s) {
  if (s.empty() || !is_identifier_start(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_identifier_start(c) || is_digit(c); });
}

/// Node names: letters, digits, `_`, `-`, `.`; not "__..." (reserved for the engine's end).
bool is_node_name(std::string_view s) {
  if (s.empty() || s.starts_with("__")) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return is_identifier_start(c) || is_digit(c) || c == '-' || c == '.';
  });
}

/// A plain scalar under the YAML 1.2 core schema; a string when nothing else matches.
/// `error` is set (and nullopt returned) for a number JSON cannot hold.
std::optional<json> resolve_plain(const std::string& s, std::string& error) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);

  std::string_view body = s;
  const bool negative = !body.empty() && body.front() == '-';
  if (!body.empty() && (body.front() == '-' || body.front() == '+')) body.remove_prefix(1);

  // integers: decimal (signed), 0o octal, 0x hexadecimal (unsigned)
  if (!body.empty() && std::all_of(body.begin(), body.end(), is_digit)) {
    if (negative) {
      std::int64_t v = 0;
      const std::string text = "-" + std::string(body);
      if (std::from_chars(text.data(), text.data() + text.size(), v).ec == std::errc{})
        return json(v);
    } else {
      std::uint64_t v = 0;
      if (std::from_chars(body.data(), body.data() + body.size(), v).ec == std::errc{})
        return json(v);
    }
    // beyond 64 bits: a double, as JSON parsers do
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    const int base = s[1] == 'o' ? 8 : 16;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, base);
    if (end == s.data() + s.size()) {
      if (ec == std::errc{}) return json(v);
      error = "the integer " + s + " is out of range";
      return std::nullopt;
    }
  }

  // floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, .inf, .nan
  if (body == ".inf" || body == ".Inf" || body == ".INF" || s == ".nan" || s == ".NaN" ||
      s == ".NAN") {
    error = "the number " + s + " has no JSON form (infinite or not a number)";
    return std::nullopt;
  }
  std::size_t i = 0;
  std::size_t int_digits = 0;
  while (i < body.size() && is_digit(body[i])) ++i, ++int_digits;
  std::size_t frac_digits = 0;
  bool dot = false;
  if (i < body.size() && body[i] == '.') {
    dot = true;
    ++i;
    while (i < body.size() && is_digit(body[i])) ++i, ++frac_digits;
  }
  bool number = int_digits > 0 || (dot && frac_digits > 0);
  if (number && i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '-' || body[i] == '+')) ++i;
    std::size_t exp_digits = 0;
    while (i < body.size() && is_digit(body[i])) ++i, ++exp_digits;
    number = exp_digits > 0;
  }
  if (number && i == body.size()) {
    double v = 0;
    const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
    if (ec == std::errc::result_out_of_range || !std::isfinite(v)) {
      error = "the number " + s + " is out of range";
      return std::nullopt;
    }
    if (ec == std::errc{} && end == body.data() + body.size()) return json(negative ? -v : v);
  }
  return json(s);
}

/// The JSON pointer of member `key` of the value at `base`.
std::string pointer_to(const std::string& base, std::string_view key) {
  std::string p = base + '/';
  for (char c : key) {
    if (c == '~') {
      p += "~0";
    } else if (c == '/') {
      p += "~1";
    } else {
      p += c;
    }
  }
  return p;
}

/// Levenshtein distance, for "did you mean".
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// One member of a mapping: its key's and its value's nodes.
struct Entry {
  std::string name;
  YamlNode key;
  YamlNode value;
};

/// The members of a mapping, by name.
class Members {
 public:
  explicit Members(std::vector<Entry> entries) : entries_(std::move(entries)) {}
  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }
  bool has(std::string_view name) const { return find(name) != nullptr; }

 private:
  std::vector<Entry> entries_;
};

class Reader {
 public:
  Reader(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    if (text_.starts_with("\xEF\xBB\xBF")) bom_ = 3;
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  GraphFile read();

 private:
  // --- positions ---------------------------------------------------------------------------

  SourcePos at(const YAML::Mark& m) {
    if (m.is_null() || m.pos < 0) return {file_, 0, 0};
    const std::size_t pos = bom_ + static_cast<std::size_t>(m.pos);
    if (pos > text_.size()) return {file_, m.line + 1, m.column + 1};
    const auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - 1;
    const std::size_t start = *line;
    // Columns count characters (UTF-8 lead bytes), from the last position asked on this line
    // when it is before this one: the walk goes forward, so a long line is scanned once.
    if (column_line_ != start || column_pos_ > pos) {
      column_line_ = start;
      column_pos_ = start;
      column_ = 1;
    }
    for (; column_pos_ < pos; ++column_pos_) {
      if ((static_cast<unsigned char>(text_[column_pos_]) & 0xC0) != 0x80) ++column_;
    }
    return {file_, static_cast<int>(line - line_starts_.begin()) + 1, column_};
  }
  SourcePos at(const YamlNode& n) { return at(n.mark()); }

  /// Where a scalar's text starts: after an opening quote, on the line after a block scalar's
  /// indicator; the node's mark otherwise.
  SourcePos content_at(const YamlNode& n) {
    SourcePos p = at(n);
    const YAML::Mark m = n.mark();
    if (m.is_null() || m.pos < 0 || p.line == 0) return p;
    std::size_t pos = bom_ + static_cast<std::size_t>(m.pos);
    if (pos >= text_.size()) return p;
    const char c = text_[pos];
    if (c == '"' || c == '\'') {
      ++p.column;
    } else if (c == '|' || c == '>') {
      const std::size_t eol = text_.find('\n', pos);
      if (eol == std::string_view::npos) return p;
      pos = eol + 1;
      std::size_t column = 1;
      while (pos < text_.size() && text_[pos] == ' ') ++pos, ++column;
      p.line += 1;
      p.column = static_cast<int>(column);
    }
    return p;
  }

  void problem(SourcePos where, std::string message) {
    problems_.push_back({std::move(where), std::move(message)});
  }
  void problem(const YamlNode& n, std::string message) { problem(at(n), std::move(message)); }
  void absorb(const graph_file_error& e) {
    problems_.insert(problems_.end(), e.problems().begin(), e.problems().end());
  }

  // --- values ------------------------------------------------------------------------------

  /// The JSON value of a scalar (nullopt: a problem recorded).
  std::optional<json> scalar(const YamlNode& n, const std::string& path) {
    const std::string& tag = n.tag();
    if (n.is_null()) return json(nullptr);
    const std::string& text = n.scalar();
    if (tag == "!" || tag == yaml_str) return json(text);
    if (tag != "?" && tag != "" && tag != yaml_int && tag != yaml_float && tag != yaml_bool &&
        tag != yaml_null) {
      problem(n,
              path + ": the YAML tag " + tag + " is not supported (graph files hold JSON values)");
      return std::nullopt;
    }
    std::string error;
    std::optional<json> v = resolve_plain(text, error);
    if (!v) {
      problem(n, path + ": " + error);
      return std::nullopt;
    }
    const bool fits = tag == "?" || tag == "" || (tag == yaml_int && v->is_number_integer()) ||
                      (tag == yaml_float && v->is_number()) ||
                      (tag == yaml_bool && v->is_boolean()) || (tag == yaml_null && v->is_null());
    if (!fits) {
      problem(n, path + ": '" + text + "' is not a value of its tag " + tag);
      return std::nullopt;
    }
    if (tag == yaml_float) return json(v->get<double>());
    return v;
  }

  /// The JSON value of any node, the positions of its strings that hold `${` (the templates)
  /// recorded in `positions` (by JSON pointer) when given. nullopt: a problem recorded.
  std::optional<json> value(const YamlNode& n, const std::string& path,
                            std::map<std::string, SourcePos>* positions = nullptr,
                            const std::string& pointer = "", int depth = 0) {
    if (++values_ > max_values) {
      if (!too_many_reported_) {
        too_many_reported_ = true;
        problem(n, path + ": the file holds more than " + std::to_string(max_values) +
                       " values (aliases expanding?)");
      }
      return std::nullopt;
    }
    if (depth > max_depth) {
      problem(n, path + ": values nested deeper than " + std::to_string(max_depth) +
                     " levels (a recursive alias?)");
      return std::nullopt;
    }
    const std::string& tag = n.tag();
    switch (n.type()) {
      case YAML::NodeType::Sequence: {
        if (tag != "?" && tag != "" && tag != "!" && tag != yaml_seq) {
          problem(n, path + ": the YAML tag " + tag + " is not supported");
          return std::nullopt;
        }
        json out = json::array();
        bool ok = true;
        std::size_t i = 0;
        for (const YamlNode& item : n.items()) {
          const std::string index = std::to_string(i++);
          std::optional<json> v =
              value(item, path + "[" + index + "]", positions,
                    positions ? pointer_to(pointer, index) : std::string(), depth + 1);
          if (v) {
            out.push_back(std::move(*v));
          } else {
            ok = false;
          }
        }
        if (!ok) return std::nullopt;
        return out;
      }
      case YAML::NodeType::Map: {
        if (tag != "?" && tag != "" && tag != "!" && tag != yaml_map) {
          problem(n, path + ": the YAML tag " + tag + " is not supported");
          return std::nullopt;
        }
        json out = json::object();
        bool ok = true;
        for (Entry& e : entries(n, path, &ok)) {
          const std::string member = path.empty() ? e.name : path + "." + e.name;
          std::optional<json> v =
              value(e.value, member, positions,
                    positions ? pointer_to(pointer, e.name) : std::string(), depth + 1);
          if (v) {
            out[e.name] = std::move(*v);
          } else {
            ok = false;
          }
        }
        if (!ok) return std::nullopt;
        return out;
      }
      case YAML::NodeType::Scalar:
      case YAML::NodeType::Null: {
        std::optional<json> v = scalar(n, path);
        // Positions only where ValueTemplate::parse asks: strings that hold a `${`.
        if (v && v->is_string() && positions &&
            v->get_ref<const std::string&>().find("${") != std::string::npos)
          positions->emplace(pointer, content_at(n));
        return v;
      }
      default:
        problem(n, path + ": no value");
        return std::nullopt;
    }
  }

  /// A mapping's members in file order: keys must be strings, each once (`*ok` becomes false
  /// when a key is refused).
  std::vector<Entry> entries(const YamlNode& map, const std::string& path, bool* ok = nullptr) {
    const auto& pairs = map.pairs();
    std::vector<Entry> out;
    out.reserve(pairs.size());
    // A key written twice: searched among the kept members in a small mapping, in a set of
    // the keys (views of the tree's text) in a large one (`nodes`).
    constexpr std::size_t small = 16;
    std::unordered_set<std::string_view> seen;
    for (const auto& kv : pairs) {
      const YamlNode key = kv.first;
      if (!key.is_scalar()) {
        problem(key, (path.empty() ? std::string("a") : path + ": a") +
                         " key must be a string, not " + describe(key));
        if (ok) *ok = false;
        continue;
      }
      const std::string& name = key.scalar();
      const bool repeated =
          pairs.size() <= small
              ? std::any_of(out.begin(), out.end(), [&](const Entry& e) { return e.name == name; })
              : !seen.insert(name).second;
      if (repeated) {
        problem(key, (path.empty() ? std::string() : path + ": ") + "the key '" + name +
                         "' appears twice");
        if (ok) *ok = false;
        continue;
      }
      out.push_back({name, key, kv.second});
    }
    return out;
  }

  /// A mapping's members, each of which must be one of `allowed` (else a problem at its key).
  Members members(const YamlNode& map, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
    std::vector<Entry> found = entries(map, path);
    std::vector<Entry> kept;
    for (Entry& e : found) {
      if (std::find(allowed.begin(), allowed.end(), e.name) != allowed.end()) {
        kept.push_back(std::move(e));
        continue;
      }
      std::string message =
          (path.empty() ? std::string("the graph") : path) + ": unknown member '" + e.name + "'";
      std::string_view best;
      std::size_t best_distance = 3;  // suggest only close names
      for (std::string_view name : allowed) {
        const std::size_t d = distance(e.name, name);
        if (d < best_distance) best_distance = d, best = name;
      }
      if (!best.empty()) message += " (did you mean '" + std::string(best) + "'?)";
      problem(e.key, std::move(message));
    }
    return Members(std::move(kept));
  }

  /// "a string", "a list" ...: what a node holds, for messages.
  std::string describe(const YamlNode& n) {
    switch (n.type()) {
      case YAML::NodeType::Map:
        return "a mapping";
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Null:
        return "null";
      case YAML::NodeType::Scalar: {
        if (n.tag() == "!" || n.tag() == yaml_str) return "a string";
        std::string error;
        const std::optional<json> v = resolve_plain(n.scalar(), error);
        return v ? a_kind(*v) : std::string("a number");
      }
      default:
        return "nothing";
    }
  }

  bool expect_map(const YamlNode& n, const std::string& path) {
    if (n.is_map()) return true;
    problem(n, path + " must be a mapping, not " + describe(n));
    return false;
  }

  // --- typed members -------------------------------------------------------------------------

  std::optional<std::string> string_of(const YamlNode& n, const std::string& path) {
    if (n.is_scalar()) {
      const bool quoted = n.tag() == "!" || n.tag() == yaml_str;
      std::string error;
      if (quoted) return n.scalar();
      if (n.tag() == "?") {
        const std::optional<json> v = resolve_plain(n.scalar(), error);
        if (v && v->is_string()) return n.scalar();
      }
    }
    problem(n, path + " must be a string, not " + describe(n));
    return std::nullopt;
  }

  /// A string that must not be empty.
  std::optional<std::string> name_of(const YamlNode& n, const std::string& path) {
    std::optional<std::string> s = string_of(n, path);
    if (s && s->empty()) {
      problem(n, path + " must not be empty");
      return std::nullopt;
    }
    return s;
  }

  std::optional<bool> bool_of(const YamlNode& n, const std::string& path) {
    if (n.is_scalar()) {
      std::optional<json> v = scalar(n, path);
      if (!v) return std::nullopt;
      if (v->is_boolean()) return v->get<bool>();
    }
    problem(n, path + " must be true or false, not " + describe(n));
    return std::nullopt;
  }

  /// A whole number in [min, max].
  std::optional<std::uint64_t> count_of(const YamlNode& n, const std::string& path,
                                        std::uint64_t min, std::uint64_t max) {
    const std::string range =
        max == std::numeric_limits<std::uint64_t>::max()
            ? "a whole number of at least " + std::to_string(min)
            : "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    if (n.is_scalar()) {
      std::optional<json> v = scalar(n, path);
      if (!v) return std::nullopt;
      if (v->is_number_unsigned()) {
        const auto x = v->get<std::uint64_t>();
        if (x >= min && x <= max) return x;
        problem(n, path + " must be " + range + ", not " + std::to_string(x));
        return std::nullopt;
      }
      if (v->is_number()) {
        problem(n, path + " must be " + range + ", not " + v->dump());
        return std::nullopt;
      }
    }
    problem(n, path + " must be " + range + ", not " + describe(n));
    return std::nullopt;
  }

  std::optional<std::vector<std::string>> strings_of(const YamlNode& n, const std::string& path) {
    if (!n.is_sequence()) {
      problem(n, path + " must be a list of strings, not " + describe(n));
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    std::size_t i = 0;
    for (const YamlNode& item : n.items()) {
      std::optional<std::string> s = name_of(item, path + "[" + std::to_string(i++) + "]");
      if (s) {
        out.push_back(std::move(*s));
      } else {
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // --- templates -----------------------------------------------------------------------------

  std::optional<Template> template_of(const YamlNode& n, const std::string& path) {
    std::optional<std::string> text = string_of(n, path);
    if (!text) return std::nullopt;
    try {
      return Template::parse(*text, content_at(n));
    } catch (const graph_file_error& e) {
      absorb(e);
      return std::nullopt;
    }
  }

  /// A JSON value whose strings may hold templates; `map_only`: it must be a mapping.
  ValueTemplate value_template_of(const YamlNode& n, const std::string& path, bool map_only) {
    if (map_only && !expect_map(n, path)) return {};
    std::map<std::string, SourcePos> positions;
    std::optional<json> v = value(n, path, &positions);
    if (!v) return {};
    const SourcePos fallback = at(n);
    try {
      return ValueTemplate::parse(*v, [&](const std::string& pointer) {
        const auto it = positions.find(pointer);
        return it == positions.end() ? fallback : it->second;
      });
    } catch (const graph_file_error& e) {
      absorb(e);
      return {};
    }
  }

  ValueTemplate empty_object() {
    return ValueTemplate::parse(json::object(), [this](const std::string&) {
      return SourcePos{file_, 0, 0};
    });
  }

  // --- the graph's parts -----------------------------------------------------------------------

  void read_inputs(const YamlNode& n, GraphFile& g);
  void read_node(const Entry& e, GraphFile& g);
  void read_next(const YamlNode& n, const std::string& path, NodeSpec& node);
  void read_assign(const YamlNode& n, const std::string& path, NodeSpec& node);
  void read_approval(const YamlNode& n, const std::string& path, NodeSpec& node);
  void read_foreach(const YamlNode& n, const std::string& path, NodeSpec& node);
  void read_subgraph(const YamlNode& n, const std::string& path, NodeSpec& node);
  std::optional<std::chrono::seconds> duration_of(const YamlNode& n, const std::string& path);

  std::string_view text_;
  std::string file_;
  std::size_t bom_ = 0;
  std::vector<std::size_t> line_starts_;
  std::size_t column_line_ = std::string_view::npos;
  std::size_t column_pos_ = 0;
  int column_ = 1;
  std::vector<Problem> problems_;
  std::size_t values_ = 0;
  bool too_many_reported_ = false;
};

/// The JSON Schema type names an input's `type` may be.
bool is_schema_type(std::string_view t) {
  return t == "null" || t == "boolean" || t == "number" || t == "integer" || t == "string" ||
         t == "array" || t == "object";
}

bool has_schema_type(const json& v, std::string_view t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (t == "string") return v.is_string();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  return false;
}

void Reader::read_inputs(const YamlNode& n, GraphFile& g) {
  if (!expect_map(n, "inputs")) return;
  for (Entry& e : entries(n, "inputs")) {
    const std::string path = "inputs." + e.name;
    InputSpec input;
    input.name = e.name;
    input.at = at(e.key);
    if (!is_identifier(e.name)) {
      problem(e.key, path +
                         ": an input's name is letters, digits and '_', not starting with a "
                         "digit (it is read as inputs.<name>)");
    }
    if (!expect_map(e.value, path)) continue;
    const Members m = members(e.value, path, {"type", "required", "default", "description"});
    json schema = json::object();
    for (std::string_view member : {"type", "required", "default", "description"}) {
      if (const Entry* x = m.find(member)) {
        if (std::optional<json> v = value(x->value, path + "." + x->name)) schema[x->name] = *v;
      }
    }
    std::vector<std::string> types;
    if (const Entry* t = m.find("type")) {
      if (t->value.is_sequence()) {
        if (std::optional<std::vector<std::string>> list = strings_of(t->value, path + ".type"))
          types = std::move(*list);
      } else if (std::optional<std::string> s = name_of(t->value, path + ".type")) {
        types.push_back(*s);
      }
      for (const std::string& type : types) {
        if (!is_schema_type(type)) {
          problem(t->value, path + ".type: unknown type '" + type +
                                "' (null, boolean, number, integer, string, array, object)");
        }
      }
    }
    if (const Entry* r = m.find("required")) {
      if (std::optional<bool> b = bool_of(r->value, path + ".required")) input.required = *b;
    }
    if (const Entry* d = m.find("default")) {
      input.default_value = schema.value("default", json(nullptr));
      if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) {
            return has_schema_type(*input.default_value, t);
          })) {
        problem(d->value,
                path + ".default: " + a_kind(*input.default_value) + " is not of the input's type");
      }
    }
    if (const Entry* d = m.find("description")) (void)string_of(d->value, path + ".description");
    input.type = Type::from_schema(schema);
    input.schema = std::move(schema);
    g.inputs.push_back(std::move(input));
  }
}

std::optional<std::chrono::seconds> Reader::duration_of(const YamlNode& n,
                                                        const std::string& path) {
  std::optional<std::string> s = string_of(n, path);
  if (!s) return std::nullopt;
  std::uint64_t count = 0;
  const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), count);
  const std::size_t digits = static_cast<std::size_t>(end - s->data());
  std::uint64_t unit = 0;
  if (ec == std::errc{} && digits > 0 && digits + 1 == s->size()) {
    switch (s->back()) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        break;
    }
  }
  constexpr std::uint64_t max_seconds = 100ULL * 366 * 86400;  // a century
  if (unit == 0 || count == 0 || count > max_seconds / unit) {
    problem(n, path +
                   " must be a positive whole number and a unit (s, m, h, d), such as \"90s\" "
                   "or \"2h\", not '" +
                   *s + "'");
    return std::nullopt;
  }
  return std::chrono::seconds(static_cast<std::int64_t>(count * unit));
}

void Reader::read_next(const YamlNode& n, const std::string& path, NodeSpec& node) {
  if (n.is_scalar()) {
    if (std::optional<std::string> to = name_of(n, path))
      node.next.push_back({*to, std::nullopt, content_at(n)});
    return;
  }
  if (!n.is_sequence()) {
    problem(n, path + " must be a node's name or a list of {to, when}, not " + describe(n));
    return;
  }
  std::size_t i = 0;
  for (const YamlNode& item : n.items()) {
    const std::string item_path = path + "[" + std::to_string(i++) + "]";
    if (!expect_map(item, item_path)) continue;
    const Members m = members(item, item_path, {"to", "when"});
    Branch branch;
    branch.at = at(item);
    if (const Entry* to = m.find("to")) {
      if (std::optional<std::string> s = name_of(to->value, item_path + ".to")) branch.to = *s;
      branch.at = content_at(to->value);
    } else {
      problem(item, item_path + ": a branch needs `to` (the node it goes to)");
    }
    if (const Entry* when = m.find("when")) {
      if (std::optional<std::string> text = name_of(when->value, item_path + ".when")) {
        try {
          branch.when = Expression::parse(*text, content_at(when->value));
        } catch (const graph_file_error& e) {
          absorb(e);
        }
      }
    }
    node.next.push_back(std::move(branch));
  }
}

/// An assign key: a dotted path of identifiers ("report.title"); `_last_error` is the engine's.
bool is_state_key(std::string_view key) {
  if (key.empty()) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = key.find('.', start);
    if (!is_identifier(key.substr(start, dot == std::string_view::npos ? dot : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

void Reader::read_assign(const YamlNode& n, const std::string& path, NodeSpec& node) {
  if (!expect_map(n, path)) return;
  for (Entry& e : entries(n, path)) {
    const std::string key_path = path + "." + e.name;
    if (!is_state_key(e.name)) {
      problem(e.key, key_path +
                         ": a state key is a dotted path of names (letters, digits, '_'), "
                         "such as report.title");
      continue;
    }
    if (e.name == "_last_error" || e.name.starts_with("_last_error.")) {
      problem(e.key, key_path + ": state._last_error is set by error routing, not by assign");
      continue;
    }
    node.assign.push_back({e.name, value_template_of(e.value, key_path, false), at(e.key)});
  }
}

void Reader::read_approval(const YamlNode& n, const std::string& path, NodeSpec& node) {
  if (!expect_map(n, path)) return;
  const Members m = members(n, path, {"request", "proposed_input", "risk_reason", "expires_in"});
  ApprovalSpec spec{Template::parse("", at(n)), ValueTemplate{}, std::nullopt, std::nullopt};
  if (const Entry* r = m.find("request")) {
    if (std::optional<Template> t = template_of(r->value, path + ".request")) spec.request = *t;
  } else {
    problem(n, path + ": an approval needs `request` (what will happen if it is approved)");
  }
  if (const Entry* p = m.find("proposed_input"))
    spec.proposed_input = value_template_of(p->value, path + ".proposed_input", false);
  if (const Entry* r = m.find("risk_reason"))
    spec.risk_reason = template_of(r->value, path + ".risk_reason");
  if (const Entry* x = m.find("expires_in"))
    spec.expires_in = duration_of(x->value, path + ".expires_in");
  node.approval = std::move(spec);
}

/// The roots of a scope: a foreach's `as` must not hide one.
bool is_scope_root(std::string_view name) {
  return name == "state" || name == "inputs" || name == "result" || name == "decision" ||
         name == "index" || name == "error" || name == "_now";
}

void Reader::read_foreach(const YamlNode& n, const std::string& path, NodeSpec& node) {
  if (!expect_map(n, path)) return;
  const Members m = members(
      n, path,
      {"over", "as", "action", "params", "max_failures", "max_failure_ratio", "max_concurrency"});
  // Without `over`, the template is empty: validate() reports it (foreach_without_over).
  ForeachSpec spec{Template::parse("", at(n)), "item", "", {}, 0, std::nullopt, std::nullopt};
  if (const Entry* o = m.find("over")) {
    if (std::optional<Template> t = template_of(o->value, path + ".over")) spec.over = *t;
  }
  if (const Entry* a = m.find("as")) {
    if (std::optional<std::string> s = name_of(a->value, path + ".as")) {
      if (!is_identifier(*s)) {
        problem(a->value, path + ".as must be a name (letters, digits, '_'), not '" + *s + "'");
      } else if (is_scope_root(*s)) {
        problem(a->value, path + ".as: '" + *s + "' would hide a root of the scope");
      } else {
        spec.as = *s;
      }
    }
  }
  if (const Entry* a = m.find("action")) {
    if (std::optional<std::string> s = name_of(a->value, path + ".action")) spec.action = *s;
  } else {
    problem(n, path + ": a foreach needs `action` (the action run for each item)");
  }
  if (const Entry* p = m.find("params")) {
    spec.params = value_template_of(p->value, path + ".params", true);
  } else {
    spec.params = empty_object();
  }
  const Entry* count = m.find("max_failures");
  if (count && !count->value.is_null()) {
    spec.max_failures = count_of(count->value, path + ".max_failures", 0,
                                 std::numeric_limits<std::uint64_t>::max());
  } else if (count || m.has("max_failure_ratio")) {
    spec.max_failures = std::nullopt;  // null, or a ratio alone: no limit on the count
  }
  if (const Entry* r = m.find("max_failure_ratio")) {
    std::optional<json> v =
        r->value.is_scalar() ? scalar(r->value, path + ".max_failure_ratio") : std::nullopt;
    if (v && v->is_number() && v->get<double>() >= 0 && v->get<double>() <= 1) {
      spec.max_failure_ratio = v->get<double>();
    } else {
      problem(r->value, path + ".max_failure_ratio must be a number from 0 to 1, not " +
                            (v ? (v->is_number() ? v->dump() : a_kind(*v)) : describe(r->value)));
    }
  }
  if (const Entry* c = m.find("max_concurrency")) {
    if (std::optional<std::uint64_t> x =
            count_of(c->value, path + ".max_concurrency", 1, std::numeric_limits<unsigned>::max()))
      spec.max_concurrency = static_cast<unsigned>(*x);
  }
  node.foreach = std::move(spec);
}

void Reader::read_subgraph(const YamlNode& n, const std::string& path, NodeSpec& node) {
  if (!expect_map(n, path)) return;
  const Members m = members(n, path, {"graph", "inputs"});
  SubgraphSpec spec;
  if (const Entry* g = m.find("graph")) {
    if (std::optional<std::string> s = name_of(g->value, path + ".graph")) spec.graph = *s;
  } else {
    problem(n, path + ": a subgraph needs `graph` (the file it runs)");
  }
  if (const Entry* i = m.find("inputs")) {
    spec.inputs = value_template_of(i->value, path + ".inputs", true);
  } else {
    spec.inputs = empty_object();
  }
  node.subgraph = std::move(spec);
}

constexpr std::string_view node_kinds[] = {"action", "gate",    "approval",
                                           "return", "foreach", "subgraph"};

void Reader::read_node(const Entry& e, GraphFile& g) {
  const std::string path = "nodes." + e.name;
  NodeSpec node;
  node.name = e.name;
  node.at = at(e.key);
  if (!is_node_name(e.name)) {
    problem(e.key, path +
                       ": a node's name is letters, digits, '_', '-' and '.', not starting "
                       "with \"__\"");
  }
  if (!expect_map(e.value, path)) {
    g.nodes.push_back(std::move(node));
    return;
  }
  const Members m = members(e.value, path,
                            {"action", "gate", "approval", "return", "foreach", "subgraph",
                             "params", "cache", "assign", "next", "on_error"});

  std::vector<std::string_view> kinds;
  for (std::string_view k : node_kinds) {
    if (m.has(k)) kinds.push_back(k);
  }
  if (kinds.empty()) {
    problem(e.key, path +
                       ": a node needs one kind: action, gate, approval, return, foreach or "
                       "subgraph");
  } else if (kinds.size() > 1) {
    std::string list;
    for (std::string_view k : kinds) list += (list.empty() ? "" : ", ") + std::string(k);
    problem(e.key, path + ": a node has exactly one kind, this one has " +
                       std::to_string(kinds.size()) + " (" + list + ")");
  }
  const std::string_view kind = kinds.empty() ? std::string_view("gate") : kinds.front();

  if (const Entry* a = m.find("action")) {
    if (std::optional<std::string> s = name_of(a->value, path + ".action")) node.action = *s;
  }
  if (const Entry* gate = m.find("gate")) {
    if (std::optional<bool> b = bool_of(gate->value, path + ".gate"); b && !*b)
      problem(gate->value, path + ".gate must be true (a gate assigns and routes)");
  }
  if (const Entry* a = m.find("approval")) read_approval(a->value, path + ".approval", node);
  if (const Entry* r = m.find("return"))
    node.output = value_template_of(r->value, path + ".return", false);
  if (const Entry* f = m.find("foreach")) read_foreach(f->value, path + ".foreach", node);
  if (const Entry* s = m.find("subgraph")) read_subgraph(s->value, path + ".subgraph", node);

  if (kind == "action") node.kind = NodeKind::action;
  if (kind == "gate") node.kind = NodeKind::gate;
  if (kind == "approval") node.kind = NodeKind::approval;
  if (kind == "return") node.kind = NodeKind::return_;
  if (kind == "foreach") node.kind = NodeKind::foreach;
  if (kind == "subgraph") node.kind = NodeKind::subgraph;

  if (const Entry* p = m.find("params")) {
    if (kind == "action") {
      node.params = value_template_of(p->value, path + ".params", true);
    } else {
      problem(p->key, path + ".params: params are for action nodes (a foreach has its own)");
    }
  } else if (kind == "action") {
    node.params = empty_object();
  }
  if (const Entry* c = m.find("cache")) {
    if (kind != "action") {
      problem(c->key, path + ".cache: caching is for action nodes");
    } else if (std::optional<bool> b = bool_of(c->value, path + ".cache")) {
      node.cache = *b;
    }
  }
  if (const Entry* a = m.find("assign")) {
    if (kind == "return") {
      problem(a->key, path + ".assign: a return node ends the run; it assigns nothing");
    } else {
      read_assign(a->value, path + ".assign", node);
    }
  }
  if (const Entry* n = m.find("next")) {
    if (kind == "return") {
      problem(n->key, path + ".next: a return node ends the run; it has no next");
    } else {
      read_next(n->value, path + ".next", node);
    }
  }
  if (const Entry* o = m.find("on_error")) {
    if (std::optional<std::string> s = name_of(o->value, path + ".on_error")) {
      node.on_error = *s;
      node.on_error_at = content_at(o->value);
    }
  }
  g.nodes.push_back(std::move(node));
}

GraphFile Reader::read() {
  detail::YamlDocument doc;
  try {
    detail::parse_yaml(text_, doc);
  } catch (const YAML::Exception& e) {
    throw graph_file_error({{at(e.mark), "malformed YAML: " + e.msg}});
  }
  const YamlNode root = doc.root;
  const SourcePos top{file_, 1, 1};
  if (!root.is_map()) {
    throw graph_file_error({{!root.is_null() ? at(root) : top,
                             "not a trellis graph file (a mapping with `trellis_graph: 1` "
                             "expected)"}});
  }

  // The format first: the rest of a newer file may mean something else.
  std::optional<Entry> format;
  for (const auto& kv : root.pairs()) {
    if (kv.first.is_scalar() && kv.first.scalar() == "trellis_graph") {
      format = Entry{"trellis_graph", kv.first, kv.second};
      break;
    }
  }
  if (!format) {
    throw graph_file_error({{at(root), "not a trellis graph file (no `trellis_graph: 1` member)"}});
  }
  {
    std::optional<json> v =
        format->value.is_scalar() ? scalar(format->value, "trellis_graph") : std::nullopt;
    if (!v || !v->is_number_integer()) {
      throw graph_file_error({{at(format->value),
                               "not a trellis graph file (trellis_graph must "
                               "be 1, not " +
                                   describe(format->value) + ")"}});
    }
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > graph_file_format) {
      throw graph_file_error({{at(format->value), "written by a newer trellis (format " +
                                                      v->dump() + "; this release reads " +
                                                      std::to_string(graph_file_format) + ")"}});
    }
    if (*v != graph_file_format) {
      throw graph_file_error({{at(format->value), "not a trellis graph file (unknown format " +
                                                      v->dump() + "; this release reads " +
                                                      std::to_string(graph_file_format) + ")"}});
    }
  }

  GraphFile g;
  g.path = file_;
  g.format = graph_file_format;
  g.start_at = at(root);
  if (doc.second_document) {
    problem(at(*doc.second_document), "a graph file holds one YAML document, this one has more");
  }

  const Members m =
      members(root, "",
              {"trellis_graph", "name", "version", "start", "inputs", "state", "max_steps",
               "max_concurrency", "on_error", "permissions", "env_requires", "nodes"});
  if (const Entry* e = m.find("name")) {
    if (std::optional<std::string> s = name_of(e->value, "name")) g.name = *s;
  }
  if (const Entry* e = m.find("version")) {
    // A number is taken as written (`version: 3` is "3").
    std::optional<json> v = e->value.is_scalar() ? scalar(e->value, "version") : std::nullopt;
    if (v && (v->is_string() || v->is_number())) {
      g.version = e->value.scalar();
    } else {
      problem(e->value, "version must be a string, not " + describe(e->value));
    }
  }
  if (const Entry* e = m.find("start")) {
    if (std::optional<std::string> s = name_of(e->value, "start")) g.start = *s;
    g.start_at = content_at(e->value);
  }
  if (const Entry* e = m.find("inputs")) read_inputs(e->value, g);
  if (const Entry* e = m.find("state")) {
    if (expect_map(e->value, "state")) {
      if (std::optional<json> v = value(e->value, "state")) g.state = std::move(*v);
    }
  }
  if (const Entry* e = m.find("max_steps")) {
    g.max_steps = count_of(e->value, "max_steps", 1, std::numeric_limits<std::uint64_t>::max());
  }
  if (const Entry* e = m.find("max_concurrency")) {
    if (std::optional<std::uint64_t> x =
            count_of(e->value, "max_concurrency", 1, std::numeric_limits<unsigned>::max()))
      g.max_concurrency = static_cast<unsigned>(*x);
  }
  if (const Entry* e = m.find("on_error")) {
    if (std::optional<std::string> s = string_of(e->value, "on_error")) {
      if (*s == "fail") {
        g.on_error = OnError::fail;
      } else if (*s == "continue") {
        g.on_error = OnError::continue_;
      } else {
        problem(e->value, "on_error must be fail or continue, not '" + *s + "'");
      }
    }
  }
  if (const Entry* e = m.find("permissions")) g.permissions = strings_of(e->value, "permissions");
  if (const Entry* e = m.find("env_requires")) {
    if (std::optional<std::vector<std::string>> names = strings_of(e->value, "env_requires")) {
      std::size_t i = 0;
      for (const YamlNode& item : e->value.items()) {
        const std::string& name = (*names)[i];
        if (!is_identifier(name)) {
          problem(item, "env_requires[" + std::to_string(i) + "]: '" + name +
                            "' is not an environment variable's name (letters, digits, '_')");
        }
        ++i;
      }
      g.env_requires = std::move(*names);
    }
  }
  if (const Entry* e = m.find("nodes")) {
    if (expect_map(e->value, "nodes")) {
      for (const Entry& node : entries(e->value, "nodes")) read_node(node, g);
    }
  }

  trellis::detail::sha256_hex_into(text_, g.hash);
  const bool caches =
      std::any_of(g.nodes.begin(), g.nodes.end(), [](const NodeSpec& node) { return node.cache; });
  if (problems_.empty() && caches) {
    // The canonical JSON form (the document as JSON, members sorted, compact): another
    // spelling of the same graph (YAML or JSON, comments, order of members) hashes alike.
    // Only a graph with a cached node needs it (it is a cached result's key).
    const std::size_t counted = values_;
    values_ = 0;
    if (std::optional<json> doc = value(root, "")) {
      trellis::detail::sha256_hex_into(doc->dump(), g.content_hash);
    }
    values_ = counted;
    problems_.clear();  // all of them were reported by the reading above, where they count
    if (g.content_hash.empty()) g.content_hash = g.hash;
  }

  if (!problems_.empty()) {
    std::stable_sort(problems_.begin(), problems_.end(), [](const Problem& a, const Problem& b) {
      return std::pair(a.at.line, a.at.column) < std::pair(b.at.line, b.at.column);
    });
    throw graph_file_error(std::move(problems_));
  }
  return g;
}

}  // namespace

GraphFile load_graph_text(std::string_view text, std::string name) {
  return Reader(text, std::move(name)).read();
}

GraphFile load_graph_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  const trellis::detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string bytes;
  const int error = fd ? trellis::detail::read_all(fd.get(), bytes) : errno;
  if (error != 0) {
    throw graph_file_error(
        {{{name, 0, 0}, "cannot read the graph file: " + std::generic_category().message(error)}});
  }
  return load_graph_text(bytes, name);
}

}  // namespace trellis::flow
