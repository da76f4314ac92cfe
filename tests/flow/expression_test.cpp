// SPDX-License-Identifier: MIT
// The condition language (expression.hpp): syntax, precedence, each operator and function,
// numbers, short-circuit, type checking against the scope's types, and every error's type and
// position.

#include <trellis/flow/expression.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fl = trellis::flow;
using json = nlohmann::json;

namespace {

const fl::SourcePos at{"graph.yaml", 7, 12};

json scope() {
  return json{{"state",
               {{"score", 0.9},
                {"count", 3},
                {"name", "Ada"},
                {"tags", {"urgent", "new"}},
                {"sources", {{{"url", "https://a"}}, {{"url", "https://b"}}}},
                {"report", nullptr},
                {"flag", true}}},
              {"inputs", {{"mode", "fast"}, {"limit", 10}}}};
}

json eval(std::string_view text, const json& values = scope(),
          const fl::EvalContext& context = {}) {
  return fl::Expression::parse(text, at).evaluate(values, context);
}

fl::Type scope_type() {
  fl::Type state = fl::Type::of(scope()["state"]);
  fl::Type inputs = fl::Type::from_schema(
      json::parse(R"({"type": "object", "properties": {"mode": {"type": "string"},
                      "limit": {"type": "integer"}}})"));
  fl::Type t = fl::Type::of_kind(fl::TypeKind::object);
  t.closed = true;
  t.fields.emplace("state", state);
  t.fields.emplace("inputs", inputs);
  t.fields.emplace("result", fl::Type::any());
  return t;
}

fl::Type check(std::string_view text) {
  return fl::Expression::parse(text, at).check(scope_type());
}

// The problems check() finds in `text`.
std::vector<fl::Problem> type_errors(std::string_view text, fl::SourcePos where = at) {
  const auto e = fl::Expression::parse(text, where);
  try {
    e.check(scope_type());
  } catch (const fl::graph_file_error& error) {
    return error.problems();
  }
  return {};
}

fl::Problem syntax_error(std::string_view text, fl::SourcePos where = at) {
  try {
    (void)fl::Expression::parse(text, where);
  } catch (const fl::graph_file_error& error) {
    REQUIRE(error.problems().size() == 1);
    return error.problems().front();
  }
  FAIL("no syntax error in: " << text);
  return {};
}

fl::expression_error eval_error(std::string_view text, const json& values = scope()) {
  const auto e = fl::Expression::parse(text, at);
  try {
    (void)e.evaluate(values);
  } catch (const fl::expression_error& error) {
    return error;
  }
  FAIL("no evaluation error in: " << text);
  return fl::expression_error({}, "");
}

fl::SourcePos pos(int line, int column) { return fl::SourcePos{"graph.yaml", line, column}; }

}  // namespace

// --- literals and paths --------------------------------------------------------------------

TEST_CASE("expression: literals evaluate to their JSON values") {
  CHECK(eval("3") == json(3));
  CHECK(eval("-2.5") == json(-2.5));
  CHECK(eval("1e3") == json(1000.0));
  CHECK(eval("'single'") == json("single"));
  CHECK(eval("\"double\"") == json("double"));
  CHECK(eval("true") == json(true));
  CHECK(eval("false") == json(false));
  CHECK(eval("null") == json(nullptr));
  CHECK(eval("[1, 'a', [true]]") == json::parse(R"([1, "a", [true]])"));
  CHECK(eval("[]") == json::array());
}

TEST_CASE("expression: a backslash escapes the quote and itself in a string") {
  CHECK(eval(R"('it\'s')") == json("it's"));
  CHECK(eval(R"("say \"hi\"")") == json("say \"hi\""));
  CHECK(eval(R"('back\\slash')") == json("back\\slash"));
}

TEST_CASE("expression: an unknown escape in a string is a syntax error at the backslash") {
  const auto p = syntax_error(R"('a\nb')");
  CHECK(p.at == pos(7, 14));
  CHECK(p.message.find("unknown escape") != std::string::npos);
}

TEST_CASE("expression: paths read members and indices, negative indices from the end") {
  CHECK(eval("state.name") == json("Ada"));
  CHECK(eval("state.sources[0].url") == json("https://a"));
  CHECK(eval("state.sources[-1].url") == json("https://b"));
  CHECK(eval("state.tags") == json::parse(R"(["urgent", "new"])"));
  CHECK(eval("inputs.mode") == json("fast"));
}

TEST_CASE("expression: a keyword can be a member name after a dot") {
  CHECK(eval("state.in", json{{"state", {{"in", 1}}}}) == json(1));
}

TEST_CASE("expression: a missing path is an expression_error naming the path and where it is") {
  const auto e = eval_error("state.count > 1 and state.missing.x == 2");
  CHECK(e.reason().find("state.missing.x") != std::string::npos);
  CHECK(e.reason().find("has no member 'missing'") != std::string::npos);
  CHECK(e.where() == pos(7, 12 + 26));
  CHECK(std::string(e.what()).find("graph.yaml:7:38") == 0);
}

TEST_CASE("expression: an index past the end is a missing path") {
  const auto e = eval_error("state.sources[2].url");
  CHECK(e.reason().find("state.sources has no element 2 (it has 2)") != std::string::npos);
  CHECK(e.where() == pos(7, 12 + 13));
  CHECK(eval_error("state.sources[-3]").reason().find("no element -3") != std::string::npos);
}

TEST_CASE("expression: an unknown root is an expression_error at run time") {
  CHECK(eval_error("nothing.here").reason().find("no root 'nothing'") != std::string::npos);
}

TEST_CASE("expression: a member of a number is an expression_error at the member") {
  const auto e = eval_error("state.count.value");
  CHECK(e.reason().find("state.count is a number") != std::string::npos);
  CHECK(e.where() == pos(7, 12 + 12));
}

// --- operators -----------------------------------------------------------------------------

TEST_CASE("expression: == and != compare any two values as JSON, numbers by value") {
  CHECK(eval("1 == 1.0") == json(true));
  CHECK(eval("state.count == 3.0") == json(true));
  CHECK(eval("[1, 2] == [1.0, 2]") == json(true));
  CHECK(eval("'a' == 'a'") == json(true));
  CHECK(eval("'1' == 1") == json(false));
  CHECK(eval("null == state.report") == json(true));
  CHECK(eval("state.sources[0] == state.sources[0]") == json(true));
  CHECK(eval("1 != 2") == json(true));
  CHECK(eval("true != true") == json(false));
}

TEST_CASE("expression: integers compare with doubles exactly, beyond 2^53") {
  const json values{{"state", {{"big", 9007199254740993LL}, {"close", 9007199254740992.0}}}};
  CHECK(eval("state.big == state.close", values) == json(false));
  CHECK(eval("state.big > state.close", values) == json(true));
  const json unsigned_values{{"state", {{"u", 18446744073709551615ULL}, {"i", -1}}}};
  CHECK(eval("state.u > state.i", unsigned_values) == json(true));
  CHECK(eval("state.u == state.u", unsigned_values) == json(true));
}

TEST_CASE("expression: < <= > >= order numbers and strings") {
  CHECK(eval("1 < 2") == json(true));
  CHECK(eval("2 <= 2.0") == json(true));
  CHECK(eval("state.score > 0.8") == json(true));
  CHECK(eval("3 >= 4") == json(false));
  CHECK(eval("'apple' < 'banana'") == json(true));
  CHECK(eval("'b' >= 'a'") == json(true));
}

TEST_CASE("expression: ordering a number with a string is an expression_error at the operator") {
  const auto e = eval_error("result.x < 'a'", json{{"result", {{"x", 1}}}});
  CHECK(e.reason().find("'<' compares two numbers or two strings") != std::string::npos);
  CHECK(e.where() == pos(7, 12 + 9));
}

TEST_CASE("expression: comparisons do not chain") {
  const auto p = syntax_error("1 < 2 < 3");
  CHECK(p.message.find("do not chain") != std::string::npos);
  CHECK(eval("(1 < 2) == true") == json(true));
}

TEST_CASE("expression: and, or, not combine booleans") {
  CHECK(eval("true and false") == json(false));
  CHECK(eval("true or false") == json(true));
  CHECK(eval("not false") == json(true));
  CHECK(eval("not not true") == json(true));
}

TEST_CASE("expression: and and or short-circuit: the right side is not evaluated") {
  CHECK(eval("false and state.missing") == json(false));
  CHECK(eval("true or state.missing") == json(true));
  CHECK(eval("exists(state.missing) and state.missing > 1") == json(false));
}

TEST_CASE("expression: and on a non-boolean is an expression_error") {
  const auto e = eval_error("result.x and true", json{{"result", {{"x", 1}}}});
  CHECK(e.reason().find("'and' takes two booleans") != std::string::npos);
  CHECK(e.where() == pos(7, 12 + 9));
}

TEST_CASE("expression: in finds an element of a list, a key of an object, a substring") {
  CHECK(eval("'urgent' in state.tags") == json(true));
  CHECK(eval("'old' in state.tags") == json(false));
  CHECK(eval("3.0 in [1, 2, 3]") == json(true));
  CHECK(eval("'mode' in inputs") == json(true));
  CHECK(eval("'da' in state.name") == json(true));
  CHECK(eval("'x' in state.name") == json(false));
}

TEST_CASE("expression: contains is in with its sides swapped") {
  CHECK(eval("state.tags contains 'new'") == json(true));
  CHECK(eval("inputs contains 'limit'") == json(true));
  CHECK(eval("state.name contains 'Ad'") == json(true));
  CHECK(eval("state.name contains 'z'") == json(false));
}

TEST_CASE("expression: in on a number is an expression_error") {
  CHECK(eval_error("1 in result.x", json{{"result", {{"x", 1}}}})
            .reason()
            .find("'in' takes a list, an object or a string") != std::string::npos);
  CHECK(eval_error("1 in result.x", json{{"result", {{"x", "abc"}}}})
            .reason()
            .find("looks for a string") != std::string::npos);
}

TEST_CASE("expression: exists is true when the path resolves, whatever its value") {
  CHECK(eval("exists(state.report)") == json(true));
  CHECK(eval("exists(state.missing)") == json(false));
  CHECK(eval("exists(state.sources[5])") == json(false));
  CHECK(eval("exists(state.count.value)") == json(false));
  CHECK(eval("exists(nothing)") == json(false));
}

TEST_CASE("expression: exists takes a path") {
  CHECK(syntax_error("exists(1)").message.find("exists() takes a path") != std::string::npos);
}

TEST_CASE("expression: integer arithmetic stays integer") {
  CHECK(eval("2 + 3").is_number_integer());
  CHECK(eval("2 + 3") == json(5));
  CHECK(eval("2 - 5") == json(-3));
  CHECK(eval("4 * 5") == json(20));
  CHECK(eval("7 % 3") == json(1));
  CHECK(eval("-7 % 3") == json(-1));
  CHECK(eval("-state.count") == json(-3));
}

TEST_CASE("expression: division of integers is exact when it divides, else a double") {
  CHECK(eval("6 / 3").is_number_integer());
  CHECK(eval("6 / 3") == json(2));
  CHECK(eval("7 / 2").is_number_float());
  CHECK(eval("7 / 2") == json(3.5));
  CHECK(eval("1.5 * 2") == json(3.0));
}

TEST_CASE("expression: integer overflow gives a double") {
  const auto r = eval("9223372036854775807 + 1");
  CHECK(r.is_number_float());
  CHECK(r.get<double>() == doctest::Approx(9223372036854775808.0));
  CHECK(eval("-9223372036854775807 - 2").is_number_float());
  CHECK(eval("9223372036854775807 * 2").is_number_float());
}

TEST_CASE("expression: a double result that is not finite is an expression_error") {
  CHECK(eval_error("1e308 * 10").reason().find("not a finite number") != std::string::npos);
}

TEST_CASE("expression: division by zero is an expression_error at the operator") {
  const auto e = eval_error("state.count / 0");
  CHECK(e.reason() == "division by zero");
  CHECK(e.where() == pos(7, 12 + 12));
  CHECK(eval_error("1.5 / 0.0").reason() == "division by zero");
  CHECK(eval_error("5 % 0").reason() == "division by zero");
}

TEST_CASE("expression: % takes integers") {
  CHECK(eval("6.0 % 4") == json(2));
  CHECK(eval_error("5.5 % 2").reason().find("'%' takes integers") != std::string::npos);
}

TEST_CASE("expression: + joins two strings") {
  CHECK(eval("'ab' + 'cd'") == json("abcd"));
  CHECK(eval("state.name + '!'") == json("Ada!"));
}

TEST_CASE("expression: + on a number and a string is an expression_error") {
  CHECK(eval_error("result.x + 1", json{{"result", {{"x", "a"}}}})
            .reason()
            .find("'+' adds two numbers or joins two strings") != std::string::npos);
}

TEST_CASE("expression: arithmetic on a non-number is an expression_error") {
  CHECK(eval_error("result.x * 2", json{{"result", {{"x", true}}}})
            .reason()
            .find("'*' takes two numbers") != std::string::npos);
  CHECK(
      eval_error("-result.x", json{{"result", {{"x", "a"}}}}).reason().find("'-' takes a number") !=
      std::string::npos);
}

// --- precedence ----------------------------------------------------------------------------

TEST_CASE("expression: * / % bind tighter than + -") {
  CHECK(eval("1 + 2 * 3") == json(7));
  CHECK(eval("10 - 6 / 2") == json(7));
  CHECK(eval("(1 + 2) * 3") == json(9));
  CHECK(eval("10 - 2 - 3") == json(5));
  CHECK(eval("2 + 7 % 4") == json(5));
}

TEST_CASE("expression: unary minus binds tighter than * and looser than a path") {
  CHECK(eval("-2 * 3") == json(-6));
  CHECK(eval("-state.sources[0].url == -1", json{{"state", {{"sources", {{{"url", 1}}}}}}}) ==
        json(true));
}

TEST_CASE("expression: arithmetic binds tighter than comparisons") {
  CHECK(eval("1 + 1 == 2") == json(true));
  CHECK(eval("state.count * 2 > 5") == json(true));
}

TEST_CASE("expression: comparisons bind tighter than not, not than and, and than or") {
  CHECK(eval("not 1 == 2") == json(true));
  CHECK(eval("true or true and false") == json(true));
  CHECK(eval("(true or true) and false") == json(false));
  CHECK(eval("not true and false") == json(false));
  CHECK(eval("not (true and false)") == json(true));
  CHECK(eval("false and false or true") == json(true));
}

TEST_CASE("expression: in and contains bind like comparisons") {
  CHECK(eval("not 'x' in state.tags") == json(true));
  CHECK(eval("'ur' + 'gent' in state.tags") == json(true));
}

// --- functions -----------------------------------------------------------------------------

TEST_CASE("expression: length counts UTF-8 characters, list elements and object members") {
  CHECK(eval("length('héllo')") == json(5));
  CHECK(eval("length('日本')") == json(2));
  CHECK(eval("length(state.tags)") == json(2));
  CHECK(eval("length(inputs)") == json(2));
  CHECK(eval_error("length(1)").reason().find("'length()' takes") != std::string::npos);
}

TEST_CASE("expression: lower, upper and trim change ASCII text") {
  CHECK(eval("lower('MiXed')") == json("mixed"));
  CHECK(eval("upper('MiXed')") == json("MIXED"));
  CHECK(eval("trim('  a b \t\n ')") == json("a b"));
  CHECK(eval("trim('   ')") == json(""));
}

TEST_CASE("expression: starts_with and ends_with test a string's ends") {
  CHECK(eval("starts_with(state.sources[0].url, 'https:')") == json(true));
  CHECK(eval("ends_with(state.name, 'da')") == json(true));
  CHECK(eval("ends_with(state.name, 'x')") == json(false));
}

TEST_CASE("expression: number parses a string's number and keeps a number") {
  CHECK(eval("number('42')") == json(42));
  CHECK(eval("number(' -2.5 ')") == json(-2.5));
  CHECK(eval("number(7)") == json(7));
  CHECK(eval_error("number('abc')").reason().find("is not a number") != std::string::npos);
  CHECK(eval_error("number('1x')").reason().find("is not a number") != std::string::npos);
}

TEST_CASE("expression: string gives a string as is and other values as compact JSON") {
  CHECK(eval("string('a')") == json("a"));
  CHECK(eval("string(3)") == json("3"));
  CHECK(eval("string(state.tags)") == json(R"(["urgent","new"])"));
  CHECK(eval("string(null)") == json("null"));
}

TEST_CASE("expression: _now gives the context's time, else the system clock's in ISO-8601 UTC") {
  fl::EvalContext context;
  context.now = "2024-05-01T12:00:00.000Z";
  CHECK(eval("_now()", scope(), context) == json("2024-05-01T12:00:00.000Z"));
  const auto now = eval("_now()").get<std::string>();
  REQUIRE(now.size() == 24);
  CHECK(now[4] == '-');
  CHECK(now[10] == 'T');
  CHECK(now[19] == '.');
  CHECK(now[23] == 'Z');
}

TEST_CASE(
    "expression: a function on the wrong type at run time is an expression_error at the argument") {
  const auto e = eval_error("lower(result.x)", json{{"result", {{"x", 1}}}});
  CHECK(e.reason().find("'lower()' takes a string") != std::string::npos);
  CHECK(e.where() == pos(7, 12 + 6));
}

// --- test() --------------------------------------------------------------------------------

TEST_CASE("expression: test gives the boolean") {
  const auto e = fl::Expression::parse("state.score >= 0.8 and inputs.mode == 'fast'", at);
  CHECK(e.test(scope()));
  CHECK_FALSE(fl::Expression::parse("state.count > 3", at).test(scope()));
}

TEST_CASE("expression: test of a non-boolean is an expression_error") {
  const auto e = fl::Expression::parse("state.count", at);
  CHECK_THROWS_WITH_AS(e.test(scope()), doctest::Contains("is not a boolean"),
                       fl::expression_error);
}

// --- syntax errors -------------------------------------------------------------------------

TEST_CASE("expression: a syntax error is a graph_file_error at the offending token") {
  const auto p = syntax_error("state.count > ");
  CHECK(p.at == pos(7, 12 + 14));
  CHECK(p.message.find("expected a value") != std::string::npos);
  CHECK(p.message.find("the end of the text") != std::string::npos);
}

TEST_CASE("expression: a syntax error on a later line of the text has that line and column") {
  const auto p = syntax_error("state.count > 1\n  and\n    (state.name == 'x'", pos(4, 9));
  CHECK(p.at == pos(6, 23));
  CHECK(p.message.find("expected ')'") != std::string::npos);
}

TEST_CASE("expression: each syntax mistake is refused with what was expected") {
  CHECK(syntax_error("").message == "empty expression");
  CHECK(syntax_error("state.count = 1").message.find("'=='") != std::string::npos);
  CHECK(syntax_error("!state.flag").message.find("'not'") != std::string::npos);
  CHECK(syntax_error("a && b").message.find("'and'") != std::string::npos);
  CHECK(syntax_error("a || b").message.find("use 'or'") != std::string::npos);
  CHECK(syntax_error("'open").message.find("unterminated string") != std::string::npos);
  CHECK(syntax_error("state.").message.find("member name") != std::string::npos);
  CHECK(syntax_error("state.tags['a']").message.find("integer index") != std::string::npos);
  CHECK(syntax_error("state.tags[1").message.find("expected ']'") != std::string::npos);
  CHECK(syntax_error("[1, 2").message.find("expected ',' or ']'") != std::string::npos);
  CHECK(syntax_error("length(1, ").message.find("expected a value") != std::string::npos);
  CHECK(syntax_error("1 2").message.find("expected an operator") != std::string::npos);
  CHECK(syntax_error("and").message.find("keyword 'and'") != std::string::npos);
  CHECK(syntax_error("1e999").message.find("number out of range") != std::string::npos);
  CHECK(syntax_error("a # b").message.find("unexpected character '#'") != std::string::npos);
}

TEST_CASE("expression: deep nesting is refused as nested too deeply, not a stack overflow") {
  const std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  CHECK(syntax_error(parens).message.find("nested too deeply") != std::string::npos);
  CHECK(syntax_error(std::string(100000, '-') + "1").message.find("nested too deeply") !=
        std::string::npos);
  CHECK(syntax_error(std::string(100000, '[') + "1").message.find("nested too deeply") !=
        std::string::npos);
  std::string chain = "1";
  for (int i = 0; i < 10000; ++i) chain += " + 1";
  CHECK(syntax_error(chain).message.find("nested too deeply") != std::string::npos);
  std::string nots;
  for (int i = 0; i < 10000; ++i) nots += "not ";
  CHECK(syntax_error(nots + "true").message.find("nested too deeply") != std::string::npos);
}

TEST_CASE("expression: nesting within the limit parses") {
  const std::string parens = std::string(100, '(') + "1" + std::string(100, ')');
  CHECK(eval(parens) == json(1));
}

// --- types ---------------------------------------------------------------------------------

TEST_CASE("expression: check gives the expression's type") {
  CHECK(check("state.score >= 0.8 and inputs.mode == 'fast'") ==
        fl::Type::of_kind(fl::TypeKind::boolean));
  CHECK(check("state.count + 1") == fl::Type::of_kind(fl::TypeKind::number));
  CHECK(check("state.name + 'x'") == fl::Type::of_kind(fl::TypeKind::string));
  CHECK(check("state.sources[0].url") == fl::Type::of_kind(fl::TypeKind::string));
  CHECK(check("result.anything") == fl::Type::any());
  CHECK(to_string(check("state.tags")) == "list of string");
  CHECK(check("length(state.tags)") == fl::Type::of_kind(fl::TypeKind::number));
  CHECK(check("_now()") == fl::Type::of_kind(fl::TypeKind::string));
}

TEST_CASE("expression: check accepts what is any and leaves it to evaluate") {
  CHECK(type_errors("result.x < 'a' and result.y + 1 > 2 and not result.z").empty());
  CHECK(type_errors("lower(result.s) contains 'ok'").empty());
}

TEST_CASE("expression: a number compared with a string is a type error at the operator") {
  const auto problems = type_errors("state.count < 'a'");
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].at == pos(7, 12 + 12));
  CHECK(problems[0].message.find("not a number and a string") != std::string::npos);
}

TEST_CASE("expression: check reports every type error, each where it is") {
  const auto problems =
      type_errors("state.count < 'a' or\n  statee.x == 1 or\n  state.flag + 1 > 2", pos(3, 5));
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].at == pos(3, 5 + 12));
  CHECK(problems[1].at == pos(4, 3));
  CHECK(problems[1].message.find("unknown root 'statee'") != std::string::npos);
  CHECK(problems[2].at == pos(5, 14));
  CHECK(problems[2].message.find("'+' adds two numbers") != std::string::npos);
}

TEST_CASE("expression: check's graph_file_error names the first problem and counts the others") {
  const auto e = fl::Expression::parse("state.count < 'a' or nope", at);
  CHECK_THROWS_WITH_AS(e.check(scope_type()),
                       doctest::Contains("graph.yaml:7:24: '<' compares two numbers"),
                       fl::graph_file_error);
  CHECK_THROWS_WITH_AS(e.check(scope_type()), doctest::Contains("(and 1 more)"),
                       fl::graph_file_error);
}

TEST_CASE("expression: each type mistake known when checking is refused") {
  const auto first = [](std::string_view text) {
    const auto problems = type_errors(text);
    REQUIRE_FALSE(problems.empty());
    return problems.front().message;
  };
  CHECK(first("state.count and true").find("'and' takes two booleans") != std::string::npos);
  CHECK(first("not state.name").find("'not' takes a boolean") != std::string::npos);
  CHECK(first("state.count.x").find("state.count is a number") != std::string::npos);
  CHECK(first("state.name[0]").find("not a list") != std::string::npos);
  CHECK(first("foo(1)").find("unknown function 'foo'") != std::string::npos);
  CHECK(first("length(1, 2)").find("length() takes 1 argument, not 2") != std::string::npos);
  CHECK(first("length(1)").find("'length()' takes a string, a list or an object") !=
        std::string::npos);
  CHECK(first("upper(state.count)").find("'upper()' takes a string") != std::string::npos);
  CHECK(first("starts_with('a', 1)").find("takes a string") != std::string::npos);
  CHECK(first("number(true)").find("takes a string or a number") != std::string::npos);
  CHECK(first("1 in state.count").find("'in' takes a list") != std::string::npos);
  CHECK(first("state.count contains 1").find("on its left") != std::string::npos);
  CHECK(first("1 in state.name").find("looks for a string") != std::string::npos);
  CHECK(first("state.name * 2").find("'*' takes two numbers") != std::string::npos);
  CHECK(first("-state.name").find("'-' takes a number") != std::string::npos);
  CHECK(first("decision == 1").find("unknown root 'decision'") != std::string::npos);
}

TEST_CASE("expression: a member not listed in an open object type is any") {
  CHECK(type_errors("state.unknown_key > 1").empty());
}

TEST_CASE("expression: exists checks its path's root") {
  CHECK(type_errors("exists(state.later)").empty());
  CHECK(type_errors("exists(stat.x)").front().message.find("unknown root") != std::string::npos);
}

// --- reads ---------------------------------------------------------------------------------

TEST_CASE("expression: reads lists every path read once, exists' included") {
  const auto e = fl::Expression::parse(
      "state.sources[0].url == inputs.url or exists(state.report) or state.sources[0].url == ''",
      at);
  const std::vector<fl::Path> expected{
      {"state", "sources", "0", "url"}, {"inputs", "url"}, {"state", "report"}};
  CHECK(e.reads() == expected);
}

TEST_CASE("expression: text and where are as parsed; copies share the parsed tree") {
  const auto e = fl::Expression::parse("state.flag", at);
  const auto copy = e;
  CHECK(copy.text() == "state.flag");
  CHECK(copy.where() == at);
  CHECK(copy.test(scope()));
}
