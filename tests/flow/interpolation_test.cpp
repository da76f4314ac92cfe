// SPDX-License-Identifier: MIT
// `${...}` templates (interpolation.hpp): rendering, a single `${...}` keeping its type,
// fallbacks, filters, `_now`, escapes, type checking, and every error's type and position.

#include <trellis/flow/interpolation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace interpolation_test {

namespace fl = trellis::flow;
using json = nlohmann::json;

namespace {

const fl::SourcePos at{"graph.yaml", 5, 20};

fl::SourcePos pos(int line, int column) { return fl::SourcePos{"graph.yaml", line, column}; }

json scope() {
  return json{{"state",
               {{"sources", {{{"url", "https://a"}}, {{"url", "https://b"}}}},
                {"doc", {{"b", 1}, {"a", "x"}}},
                {"count", 3},
                {"empty", nullptr}}},
              {"inputs", {{"topic", "Rust"}, {"url", "https://in"}}},
              {"result", {{"items", {1, 2, 3}}, {"status", "Ok"}}}};
}

json render(std::string_view text, const json& values = scope(),
            const fl::EvalContext& context = {}) {
  return fl::Template::parse(text, at).render(values, context);
}

fl::Type scope_type() {
  fl::Type t = fl::Type::of(scope());
  t.closed = true;
  return t;
}

std::vector<fl::Problem> type_errors(std::string_view text) {
  const auto t = fl::Template::parse(text, at);
  try {
    t.check(scope_type());
  } catch (const fl::graph_file_error& e) {
    return e.problems();
  }
  return {};
}

fl::Problem syntax_error(std::string_view text, fl::SourcePos where = at) {
  try {
    (void)fl::Template::parse(text, where);
  } catch (const fl::graph_file_error& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems().front();
  }
  FAIL("no syntax error in: " << text);
  return {};
}

fl::expression_error render_error(std::string_view text, const json& values = scope()) {
  const auto t = fl::Template::parse(text, at);
  try {
    (void)t.render(values);
  } catch (const fl::expression_error& e) {
    return e;
  }
  FAIL("no rendering error in: " << text);
  return fl::expression_error({}, "");
}

}  // namespace

TEST_CASE("template: text around an interpolation renders a string") {
  CHECK(render("Report on ${inputs.topic}") == json("Report on Rust"));
  CHECK(render("${inputs.topic} and ${state.count} more") == json("Rust and 3 more"));
}

TEST_CASE("template: other values inside text render as compact JSON") {
  CHECK(render("items: ${result.items}") == json("items: [1,2,3]"));
  CHECK(render("doc=${state.doc}") == json(R"(doc={"a":"x","b":1})"));
}

TEST_CASE("template: exactly one ${...} keeps the value's type") {
  CHECK(render("${state.sources}") == scope()["state"]["sources"]);
  CHECK(render("${state.count}") == json(3));
  CHECK(render("${state.doc}") == scope()["state"]["doc"]);
}

TEST_CASE("template: a single ${...} with text around it renders a string") {
  CHECK(render(" ${state.count}") == json(" 3"));
}

TEST_CASE("template: a text without ${...} is literal and renders to itself") {
  const auto t = fl::Template::parse("plain $ text {}", at);
  CHECK(t.literal());
  CHECK(t.render(scope()) == json("plain $ text {}"));
  CHECK(t.reads().empty());
  CHECK(fl::Template::parse("", at).render(scope()) == json(""));
}

TEST_CASE("template: $${ escapes an interpolation") {
  const auto t = fl::Template::parse("$${not interpolated} but ${inputs.topic}", at);
  CHECK(t.render(scope()) == json("${not interpolated} but Rust"));
  const auto only = fl::Template::parse("$${x}", at);
  CHECK(only.literal());
  CHECK(only.render(scope()) == json("${x}"));
}

TEST_CASE("template: a fallback is taken when the path before it does not resolve") {
  CHECK(render("${state.sources[5].url || inputs.url || 'none'}") == json("https://in"));
  CHECK(render("${state.missing || 'none'}") == json("none"));
  CHECK(render("${state.sources[0].url || 'none'}") == json("https://a"));
  CHECK(render("${state.missing || 42}") == json(42));
  CHECK(render("${state.missing || -1.5}") == json(-1.5));
  CHECK(render("${state.missing || true}") == json(true));
  CHECK(render("${state.count.x || \"no\"}") == json("no"));
}

TEST_CASE("template: a null value falls back; with no fallback left it renders null") {
  CHECK(render("${state.empty || 'default'}") == json("default"));
  CHECK(render("${state.empty}") == json(nullptr));
  CHECK(render("${state.empty || state.missing}") == json(nullptr));
}

TEST_CASE("template: a missing path is an expression_error naming the path and where it is") {
  const auto e = render_error("Hello ${state.sources[0].name}");
  CHECK(e.reason().find("missing path state.sources[0].name") != std::string::npos);
  CHECK(e.where() == pos(5, 20 + 25));
}

TEST_CASE("template: when no fallback resolves, the error names the first path") {
  const auto e = render_error("${state.a || state.b}");
  CHECK(e.reason().find("missing path state.a") != std::string::npos);
  CHECK(e.reason().find("no fallback") != std::string::npos);
  CHECK(e.where() == pos(5, 20 + 8));
}

TEST_CASE("template: filters json, length, keys, upper, lower") {
  CHECK(render("${state.doc | json}") == json(R"({"a":"x","b":1})"));
  CHECK(render("${inputs.topic | json}") == json("\"Rust\""));
  CHECK(render("${result.items | length}") == json(3));
  CHECK(render("${inputs.topic | length}") == json(4));
  CHECK(render("${state.doc | keys}") == json::parse(R"(["a", "b"])"));
  CHECK(render("${state | keys}") == json::parse(R"(["count", "doc", "empty", "sources"])"));
  CHECK(render("${inputs.topic | upper}") == json("RUST"));
  CHECK(render("${result.status | lower}") == json("ok"));
}

TEST_CASE("template: filters apply in order, after the fallbacks") {
  CHECK(render("${state.missing || inputs.topic | upper | length}") == json(4));
  CHECK(render("n=${state.doc | keys | length}") == json("n=2"));
}

TEST_CASE("template: a filter on the wrong value is an expression_error at the filter") {
  const auto e = render_error("${result.any | keys}", json{{"result", {{"any", 1}}}});
  CHECK(e.reason().find("the filter 'keys' takes an object") != std::string::npos);
  CHECK(e.where() == pos(5, 20 + 15));
  CHECK(render_error("${inputs.topic | nope}").reason().find("unknown filter") !=
        std::string::npos);
}

TEST_CASE("template: _now is the context's time, else the clock's, ISO-8601 UTC") {
  fl::EvalContext context;
  context.now = "2024-05-01T12:00:00.000Z";
  CHECK(render("${_now}", scope(), context) == json("2024-05-01T12:00:00.000Z"));
  CHECK(render("at ${_now}", scope(), context) == json("at 2024-05-01T12:00:00.000Z"));
  const auto now = render("${_now}").get<std::string>();
  REQUIRE(now.size() == 24);
  CHECK(now[10] == 'T');
  CHECK(now[23] == 'Z');
}

TEST_CASE("template: a string literal inside ${...} may hold braces and bars") {
  CHECK(render("${state.missing || '}|{'}") == json("}|{"));
}

TEST_CASE("template: reads lists every path read, fallbacks included") {
  const auto t = fl::Template::parse("${state.a || inputs.url} ${state.a} ${_now}", at);
  const std::vector<fl::Path> expected{{"state", "a"}, {"inputs", "url"}};
  CHECK(t.reads() == expected);
  CHECK_FALSE(t.literal());
  CHECK(t.text() == "${state.a || inputs.url} ${state.a} ${_now}");
  CHECK(t.where() == at);
}

// --- syntax errors -------------------------------------------------------------------------

TEST_CASE("template: a syntax error is a graph_file_error at the offending token") {
  const auto p = syntax_error("Report ${inputs.topic +}");
  CHECK(p.at == pos(5, 20 + 22));
  CHECK(p.message.find("expected '||', '|' or '}'") != std::string::npos);
}

TEST_CASE("template: a syntax error on a later line of the text has that line and column") {
  const auto p = syntax_error("first line\nsecond ${state.}", pos(2, 7));
  CHECK(p.at == pos(3, 16));
  CHECK(p.message.find("member name") != std::string::npos);
}

TEST_CASE("template: each syntax mistake is refused") {
  CHECK(syntax_error("${}").message == "empty '${}'");
  CHECK(syntax_error("a ${state.x").message.find("unterminated '${'") != std::string::npos);
  CHECK(syntax_error("a ${state.x").at == pos(5, 22));
  CHECK(syntax_error("${state.x |}").message.find("filter's name") != std::string::npos);
  CHECK(syntax_error("${length(state.x)}").message.find("not calls") != std::string::npos);
  CHECK(syntax_error("${state.x ||}").message.find("expected a path or a literal") !=
        std::string::npos);
  CHECK(syntax_error("${'open}").message.find("unterminated string") != std::string::npos);
  CHECK(syntax_error("${(state.x)}").message.find("expected a path or a literal") !=
        std::string::npos);
}

// --- types ---------------------------------------------------------------------------------

TEST_CASE("template: check gives a single ${...}'s type, else string") {
  CHECK(to_string(fl::Template::parse("${state.sources}", at).check(scope_type())) ==
        "list of object");
  CHECK(fl::Template::parse("${state.count}", at).check(scope_type()) ==
        fl::Type::of_kind(fl::TypeKind::number));
  CHECK(fl::Template::parse("n ${state.count}", at).check(scope_type()) ==
        fl::Type::of_kind(fl::TypeKind::string));
  CHECK(fl::Template::parse("plain", at).check(scope_type()) ==
        fl::Type::of_kind(fl::TypeKind::string));
  CHECK(fl::Template::parse("${state.doc | keys}", at).check(scope_type()) ==
        fl::Template::parse("${state | keys}", at).check(scope_type()));
  CHECK(to_string(fl::Template::parse("${state | keys}", at).check(scope_type())) ==
        "list of string");
  CHECK(fl::Template::parse("${result.items | length}", at).check(scope_type()) ==
        fl::Type::of_kind(fl::TypeKind::number));
  CHECK(fl::Template::parse("${_now}", at).check(scope_type()) ==
        fl::Type::of_kind(fl::TypeKind::string));
}

TEST_CASE("template: fallbacks of different types check as any") {
  CHECK(fl::Template::parse("${state.count || 'none'}", at).check(scope_type()) == fl::Type::any());
  CHECK(fl::Template::parse("${state.count || 0}", at).check(scope_type()) ==
        fl::Type::of_kind(fl::TypeKind::number));
}

TEST_CASE("template: check reports every unknown root, unknown filter and wrong filter") {
  const auto problems =
      type_errors("${nope.x} ${inputs.topic | shout} ${state.count | keys} ${state.count | upper}");
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].at == pos(5, 22));
  CHECK(problems[0].message.find("unknown root 'nope'") != std::string::npos);
  CHECK(problems[1].message.find("unknown filter 'shout'") != std::string::npos);
  CHECK(problems[1].at == pos(5, 20 + 27));
  CHECK(problems[2].message.find("the filter 'keys' takes an object, not a number") !=
        std::string::npos);
  CHECK(problems[3].message.find("the filter 'upper' takes a string") != std::string::npos);
}

TEST_CASE("template: check refuses a member of a known number") {
  const auto problems = type_errors("${state.count.x}");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message.find("state.count is a number") != std::string::npos);
}

// --- ValueTemplate -------------------------------------------------------------------------

namespace {

fl::SourcePos where(const std::string& pointer) {
  // One line per pointer in this fake file: "/args/1" is at line 10 + its length.
  return fl::SourcePos{"graph.yaml", 10 + static_cast<int>(pointer.size()), 3};
}

}  // namespace

TEST_CASE("value template: strings are rendered member by member, keys as written") {
  const auto v = fl::ValueTemplate::parse(
      json::parse(R"({"command": "grep", "args": ["${inputs.topic}", "-n", 3],
                      "${keys.stay}": "${state.count}", "doc": {"list": "${state.sources}"},
                      "escaped": "$${x}"})"),
      where);
  CHECK_FALSE(v.literal());
  const auto r = v.render(scope());
  CHECK(r == json::parse(R"({"command": "grep", "args": ["Rust", "-n", 3],
                             "${keys.stay}": 3, "doc": {"list": [{"url": "https://a"},
                             {"url": "https://b"}]}, "escaped": "${x}"})"));
}

TEST_CASE("value template: a value without templates is literal and renders as written") {
  const json value = json::parse(R"({"a": [1, "two", null], "b": "$ {x}"})");
  const auto v = fl::ValueTemplate::parse(value, where);
  CHECK(v.literal());
  CHECK(v.render(scope()) == value);
  CHECK(v.value() == value);
  CHECK(v.reads().empty());
  CHECK(fl::ValueTemplate().render(scope()) == json());
}

TEST_CASE("value template: parse reports every template's syntax error where it is") {
  try {
    (void)fl::ValueTemplate::parse(json::parse(R"({"a": "${x.}", "b": ["ok", "${}"]})"), where);
    FAIL("no error");
  } catch (const fl::graph_file_error& e) {
    REQUIRE(e.problems().size() == 2);
    CHECK(e.problems()[0].at == fl::SourcePos{"graph.yaml", 12, 3 + 4});
    CHECK(e.problems()[1].at == fl::SourcePos{"graph.yaml", 14, 3});
  }
}

TEST_CASE("value template: check types objects and lists member by member") {
  const auto v = fl::ValueTemplate::parse(
      json::parse(R"({"n": "${state.count}", "s": "x ${state.count}", "l": ["${state.count}", 2],
                      "k": true})"),
      where);
  const auto t = v.check(scope_type());
  REQUIRE(t.kind == fl::TypeKind::object);
  CHECK(t.fields.at("n") == fl::Type::of_kind(fl::TypeKind::number));
  CHECK(t.fields.at("s") == fl::Type::of_kind(fl::TypeKind::string));
  CHECK(to_string(t.fields.at("l")) == "list of number");
  CHECK(t.fields.at("k") == fl::Type::of_kind(fl::TypeKind::boolean));
}

TEST_CASE("value template: check reports every type error of every template") {
  const auto v = fl::ValueTemplate::parse(
      json::parse(R"({"a": "${nope}", "b": ["${state.count | keys}"]})"), where);
  try {
    v.check(scope_type());
    FAIL("no error");
  } catch (const fl::graph_file_error& e) {
    CHECK(e.problems().size() == 2);
  }
}

TEST_CASE("value template: reads lists the paths of all its templates once") {
  const auto v = fl::ValueTemplate::parse(
      json::parse(R"({"a": "${state.count}", "b": ["${inputs.url} ${state.count}"]})"), where);
  const auto reads = v.reads();
  REQUIRE(reads.size() == 2);
  CHECK(std::find(reads.begin(), reads.end(), fl::Path{"state", "count"}) != reads.end());
  CHECK(std::find(reads.begin(), reads.end(), fl::Path{"inputs", "url"}) != reads.end());
}

TEST_CASE("value template: rendering a missing path is an expression_error") {
  const auto v = fl::ValueTemplate::parse(json::parse(R"({"a": ["${state.nothing}"]})"), where);
  CHECK_THROWS_AS(v.render(scope()), fl::expression_error);
}

}  // namespace interpolation_test
