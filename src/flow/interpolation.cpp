// SPDX-License-Identifier: MIT
// `${...}` templates. The text is cut into literal runs and interpolations; each
// interpolation's alternatives are parsed by the expression language's parser (a path, a
// literal or `_now`), starting inside the template's own text, so errors point into it.
#include "trellis/flow/interpolation.hpp"

#include <algorithm>
#include <utility>

#include "expression_detail.hpp"

namespace trellis::flow {

namespace {

using json = nlohmann::json;

enum class Filter { unknown, json, length, keys, upper, lower };

struct FilterUse {
  Filter filter = Filter::unknown;
  std::string name;
  std::size_t offset = 0;
};

Filter find_filter(std::string_view name) {
  if (name == "json") return Filter::json;
  if (name == "length") return Filter::length;
  if (name == "keys") return Filter::keys;
  if (name == "upper") return Filter::upper;
  if (name == "lower") return Filter::lower;
  return Filter::unknown;
}

constexpr std::string_view filter_names = "json, length, keys, upper, lower";

// One `${...}`.
struct Interpolation {
  std::size_t offset = 0;  ///< the `$`
  std::vector<detail::NodePtr> alternatives;
  std::vector<FilterUse> filters;
};

// A run of literal text (escapes undone) or an interpolation.
struct Part {
  std::string text;
  std::shared_ptr<const Interpolation> interpolation;  ///< null: literal text
};

std::string pointer_token(const std::string& key) {
  std::string escaped;
  for (const char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace

struct Template::Impl {
  std::string text;
  SourcePos at;
  std::vector<Part> parts;
  std::vector<Path> reads;
  bool literal = true;

  detail::Source source() const { return detail::Source{text, at}; }

  // The single interpolation that is the whole text, or null.
  const Interpolation* whole() const {
    if (parts.size() == 1 && parts.front().interpolation) return parts.front().interpolation.get();
    return nullptr;
  }

  [[noreturn]] void fail(std::size_t offset, std::string reason) const {
    throw expression_error(source().pos(offset), std::move(reason));
  }

  Type check_interpolation(const Interpolation& in, const Type& scope,
                           std::vector<Problem>& problems) const {
    const auto src = source();
    std::optional<Type> type;
    for (const auto& alternative : in.alternatives) {
      auto t = alternative->kind == detail::Node::Kind::path
                   ? detail::check_path(*alternative, scope, src, problems)
                   : detail::check(*alternative, scope, src, problems);
      type = type ? detail::join(*type, t) : t;
    }
    Type t = type.value_or(Type::any());
    for (const auto& use : in.filters) {
      const auto error = [&](const std::string& message) {
        problems.push_back(Problem{src.pos(use.offset), message});
      };
      const auto k = t.kind;
      switch (use.filter) {
        case Filter::unknown:
          error("unknown filter '" + use.name + "' (the filters are " + std::string(filter_names) +
                ")");
          t = Type::any();
          break;
        case Filter::json:
          t = Type::of_kind(TypeKind::string);
          break;
        case Filter::length:
          if (k != TypeKind::any && k != TypeKind::string && k != TypeKind::list &&
              k != TypeKind::object) {
            error("the filter 'length' takes a string, a list or an object, not " + a_kind(k));
          }
          t = Type::of_kind(TypeKind::number);
          break;
        case Filter::keys:
          if (k != TypeKind::any && k != TypeKind::object) {
            error("the filter 'keys' takes an object, not " + a_kind(k));
          }
          t = Type::of_kind(TypeKind::list);
          t.element = std::make_shared<const Type>(Type::of_kind(TypeKind::string));
          break;
        case Filter::upper:
        case Filter::lower:
          if (k != TypeKind::any && k != TypeKind::string) {
            error("the filter '" + use.name + "' takes a string, not " + a_kind(k));
          }
          t = Type::of_kind(TypeKind::string);
          break;
      }
    }
    return t;
  }

  json render_interpolation(const Interpolation& in, const json& scope,
                            const EvalContext& context) const {
    const auto src = source();
    const detail::Node* first_path = nullptr;
    detail::Resolution first_missing;
    std::optional<json> value;
    bool resolved_null = false;
    for (const auto& alternative : in.alternatives) {
      if (alternative->kind != detail::Node::Kind::path) {
        value = detail::evaluate(*alternative, scope, context, src);
        break;
      }
      auto r = detail::resolve(*alternative, scope);
      if (r.value && !r.value->is_null()) {
        value = *r.value;
        break;
      }
      if (r.value) {
        resolved_null = true;
      } else if (!first_path) {
        first_path = alternative.get();
        first_missing = std::move(r);
      }
    }
    if (!value) {
      if (!resolved_null) {
        std::string reason =
            "missing path " + detail::path_text(*first_path) + ": " + first_missing.reason;
        if (in.alternatives.size() > 1) reason += " (and no fallback resolves)";
        fail(first_path->steps[first_missing.step].offset, std::move(reason));
      }
      value = json(nullptr);
    }
    json v = std::move(*value);
    for (const auto& use : in.filters) {
      switch (use.filter) {
        case Filter::unknown:
          fail(use.offset, "unknown filter '" + use.name + "'");
        case Filter::json:
          v = detail::json_text(v);
          break;
        case Filter::length:
          if (v.is_string()) {
            v = detail::utf8_length(v.get_ref<const std::string&>());
          } else if (v.is_array() || v.is_object()) {
            v = v.size();
          } else {
            fail(use.offset,
                 "the filter 'length' takes a string, a list or an object, not " + a_kind(v));
          }
          break;
        case Filter::keys: {
          if (!v.is_object())
            fail(use.offset, "the filter 'keys' takes an object, not " + a_kind(v));
          std::vector<std::string> keys;
          for (const auto& [key, member] : v.items()) keys.push_back(key);
          std::sort(keys.begin(), keys.end());
          v = keys;
          break;
        }
        case Filter::upper:
        case Filter::lower:
          if (!v.is_string()) {
            fail(use.offset, "the filter '" + use.name + "' takes a string, not " + a_kind(v));
          }
          v = use.filter == Filter::upper ? detail::ascii_upper(v.get<std::string>())
                                          : detail::ascii_lower(v.get<std::string>());
          break;
      }
    }
    return v;
  }
};

Template Template::parse(std::string_view text, SourcePos at) {
  auto impl = std::make_shared<Impl>();
  impl->text = std::string(text);
  impl->at = std::move(at);
  const auto source = impl->source();
  const std::string_view t = impl->text;
  std::string literal;
  std::vector<Path> reads;
  std::size_t i = 0;
  while (i < t.size()) {
    if (t.compare(i, 3, "$${") == 0) {
      literal += "${";
      i += 3;
      continue;
    }
    if (t.compare(i, 2, "${") != 0) {
      literal += t[i++];
      continue;
    }
    if (!literal.empty()) impl->parts.push_back(Part{std::move(literal), nullptr});
    literal.clear();
    auto in = std::make_shared<Interpolation>();
    in->offset = i;
    detail::Parser parser(source, i + 2);
    if (parser.peek().kind == detail::Tok::rbrace) parser.fail(i, "empty '${}'");
    for (;;) {
      in->alternatives.push_back(parser.parse_alternative());
      if (parser.peek().kind != detail::Tok::pipe2) break;
      parser.take();
    }
    while (parser.peek().kind == detail::Tok::pipe) {
      parser.take();
      if (parser.peek().kind != detail::Tok::identifier) {
        parser.fail(parser.peek().begin,
                    "expected a filter's name after '|', found " + parser.describe(parser.peek()));
      }
      auto name = parser.take();
      in->filters.push_back(FilterUse{find_filter(name.text), name.text, name.begin});
    }
    if (parser.peek().kind == detail::Tok::end) {
      parser.fail(i, "unterminated '${' (no closing '}')");
    }
    if (parser.peek().kind != detail::Tok::rbrace) {
      parser.fail(parser.peek().begin,
                  "expected '||', '|' or '}' in '${...}', found " + parser.describe(parser.peek()));
    }
    // The parser stops with the `}` as its current token (it reads one token ahead only when
    // one is taken): the template's text resumes right after it.
    i = parser.peek().end;
    for (auto& path : parser.reads()) reads.push_back(std::move(path));
    impl->parts.push_back(Part{std::string(), std::move(in)});
    impl->literal = false;
  }
  if (!literal.empty() || impl->parts.empty()) {
    impl->parts.push_back(Part{std::move(literal), nullptr});
  }
  impl->reads = detail::unique_paths(std::move(reads));
  return Template(std::move(impl));
}

Type Template::check(const Type& scope) const {
  std::vector<Problem> problems;
  Type type = Type::of_kind(TypeKind::string);
  for (const auto& part : impl_->parts) {
    if (!part.interpolation) continue;
    auto t = impl_->check_interpolation(*part.interpolation, scope, problems);
    if (impl_->whole()) type = std::move(t);
  }
  if (!problems.empty()) throw graph_file_error(std::move(problems));
  return type;
}

nlohmann::json Template::render(const nlohmann::json& scope, const EvalContext& context) const {
  if (const auto* whole = impl_->whole())
    return impl_->render_interpolation(*whole, scope, context);
  std::string text;
  for (const auto& part : impl_->parts) {
    if (!part.interpolation) {
      text += part.text;
      continue;
    }
    const auto value = impl_->render_interpolation(*part.interpolation, scope, context);
    text += value.is_string() ? value.get<std::string>() : detail::json_text(value);
  }
  return text;
}

bool Template::literal() const noexcept { return impl_->literal; }
const std::vector<Path>& Template::reads() const noexcept { return impl_->reads; }
const std::string& Template::text() const noexcept { return impl_->text; }
const SourcePos& Template::where() const noexcept { return impl_->at; }

Template::Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Template::Template(const Template&) = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(const Template&) = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

// --- ValueTemplate -------------------------------------------------------------------------

namespace {

void collect(const json& value, const std::string& pointer,
             const std::function<SourcePos(const std::string&)>& where,
             std::map<std::string, Template>& templates, std::vector<Problem>& problems) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (s.find("${") == std::string::npos) return;  // `$${` contains it too
    try {
      templates.emplace(pointer, Template::parse(s, where ? where(pointer) : SourcePos{}));
    } catch (const graph_file_error& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      collect(value[i], pointer + "/" + std::to_string(i), where, templates, problems);
    }
  } else if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      collect(member, pointer + "/" + pointer_token(key), where, templates, problems);
    }
  }
}

Type value_type(const json& value, const std::string& pointer,
                const std::map<std::string, Template>& templates, const Type& scope,
                std::vector<Problem>& problems) {
  if (value.is_string()) {
    const auto found = templates.find(pointer);
    if (found == templates.end()) return Type::of_kind(TypeKind::string);
    try {
      return found->second.check(scope);
    } catch (const graph_file_error& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
      return Type::any();
    }
  }
  if (value.is_array()) {
    Type t = Type::of_kind(TypeKind::list);
    std::optional<Type> element;
    for (std::size_t i = 0; i < value.size(); ++i) {
      auto e = value_type(value[i], pointer + "/" + std::to_string(i), templates, scope, problems);
      element = element ? detail::join(*element, e) : e;
    }
    if (element && !(*element == Type::any())) {
      t.element = std::make_shared<const Type>(std::move(*element));
    }
    return t;
  }
  if (value.is_object()) {
    Type t = Type::of_kind(TypeKind::object);
    for (const auto& [key, member] : value.items()) {
      t.fields.emplace(
          key, value_type(member, pointer + "/" + pointer_token(key), templates, scope, problems));
    }
    return t;
  }
  return Type::of(value);
}

json render_value(const json& value, const std::string& pointer,
                  const std::map<std::string, Template>& templates, const json& scope,
                  const EvalContext& context) {
  if (value.is_string()) {
    const auto found = templates.find(pointer);
    return found == templates.end() ? value : found->second.render(scope, context);
  }
  if (value.is_array()) {
    json list = json::array();
    for (std::size_t i = 0; i < value.size(); ++i) {
      list.push_back(
          render_value(value[i], pointer + "/" + std::to_string(i), templates, scope, context));
    }
    return list;
  }
  if (value.is_object()) {
    json object = json::object();
    for (const auto& [key, member] : value.items()) {
      object[key] =
          render_value(member, pointer + "/" + pointer_token(key), templates, scope, context);
    }
    return object;
  }
  return value;
}

}  // namespace

ValueTemplate ValueTemplate::parse(const nlohmann::json& value,
                                   const std::function<SourcePos(const std::string&)>& where) {
  ValueTemplate t;
  t.value_ = value;
  std::vector<Problem> problems;
  collect(value, "", where, t.templates_, problems);
  if (!problems.empty()) throw graph_file_error(std::move(problems));
  return t;
}

Type ValueTemplate::check(const Type& scope) const {
  std::vector<Problem> problems;
  auto type = value_type(value_, "", templates_, scope, problems);
  if (!problems.empty()) throw graph_file_error(std::move(problems));
  return type;
}

nlohmann::json ValueTemplate::render(const nlohmann::json& scope,
                                     const EvalContext& context) const {
  if (templates_.empty()) return value_;
  return render_value(value_, "", templates_, scope, context);
}

std::vector<Path> ValueTemplate::reads() const {
  std::vector<Path> paths;
  for (const auto& [pointer, t] : templates_) {
    paths.insert(paths.end(), t.reads().begin(), t.reads().end());
  }
  return detail::unique_paths(std::move(paths));
}

}  // namespace trellis::flow
