// SPDX-License-Identifier: MIT
/// @file
/// libFuzzer target for the condition language and templates: every input is parsed as an
/// expression (then checked against a small fixed scope type, evaluated and tested against a
/// small fixed scope) and as a template (checked and rendered). The only acceptable failures
/// are typed trellis errors (graph_file_error, expression_error); anything else that escapes
/// (nlohmann's exceptions, std::out_of_range, ...) reaches std::terminate, and libFuzzer reports
/// it as a crash, as it does for ASan/UBSan findings, stack overflows and hangs (-timeout).
/// Built only with -DTRELLIS_FUZZ=ON and clang.
#include <trellis/flow/expression.hpp>
#include <trellis/flow/interpolation.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fl = trellis::flow;

namespace {

const nlohmann::json& scope() {
  static const nlohmann::json s = nlohmann::json::parse(R"({
    "state": {"score": 0.9, "count": 3, "name": "Ada", "tags": ["urgent", "new"],
              "sources": [{"url": "https://a"}, {"url": "https://b", "n": -1}],
              "report": null, "flag": true, "big": 18446744073709551615,
              "nested": {"a": {"b": [1, 2.5, "x", [true]]}}},
    "inputs": {"mode": "fast", "limit": 10, "min": -9223372036854775808},
    "result": {"status": "Ok", "items": [1, 2, 3], "text": "héllo 日本"}
  })");
  return s;
}

const fl::Type& scope_type() {
  static const fl::Type t = [] {
    fl::Type type = fl::Type::of(scope());
    type.fields["result"] = fl::Type::any();  // left to evaluate(), as an action's result
    type.closed = true;
    return type;
  }();
  return t;
}

const fl::EvalContext context{"2024-05-01T12:00:00.000Z"};
const fl::SourcePos at{"fuzz.yaml", 3, 7};

void expression(std::string_view text) noexcept {
  try {
    const auto e = fl::Expression::parse(text, at);
    try {
      (void)e.check(scope_type());
    } catch (const fl::graph_file_error&) {
    }
    try {
      (void)e.evaluate(scope(), context);
      (void)e.test(scope(), context);
    } catch (const fl::expression_error&) {
    }
    (void)e.reads();
  } catch (const fl::graph_file_error& error) {
    if (error.problems().empty()) {
      std::fprintf(stderr, "fuzz_expressions: a graph_file_error without a problem\n");
      std::abort();
    }
  }
}

void interpolation(std::string_view text) noexcept {
  try {
    const auto t = fl::Template::parse(text, at);
    try {
      (void)t.check(scope_type());
    } catch (const fl::graph_file_error&) {
    }
    try {
      const auto value = t.render(scope(), context);
      if (t.literal() && !value.is_string()) {
        std::fprintf(stderr, "fuzz_expressions: a literal template rendered a non-string\n");
        std::abort();
      }
    } catch (const fl::expression_error&) {
    }
    (void)t.reads();
  } catch (const fl::graph_file_error& error) {
    if (error.problems().empty()) {
      std::fprintf(stderr, "fuzz_expressions: a graph_file_error without a problem\n");
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  expression(text);
  interpolation(text);
  return 0;
}
