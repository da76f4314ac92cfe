// check_writable: the writers' half of the JSON limits the readers apply (parse_json), so
// nothing is acknowledged that could not be read back as it was.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <trellis/io/json_text.hpp>
#include "trellis/persist/errors.hpp"

namespace {

// `levels` arrays nested inside each other around a 1: [[...[1]...]].
nlohmann::json nested(int levels) {
  nlohmann::json v = 1;
  for (int i = 0; i < levels; ++i) v = nlohmann::json::array({std::move(v)});
  return v;
}

trellis::unwritable_value refusal(const nlohmann::json& doc) {
  try {
    trellis::detail::check_writable(doc, "the test document");
  } catch (const trellis::unwritable_value& e) {
    return e;
  }
  FAIL("check_writable accepted the document");
  return trellis::unwritable_value("", "", "");
}

}  // namespace

TEST_CASE("check_writable: a NaN is refused, naming its member as a JSON pointer") {
  nlohmann::json doc = {{"state", {{"scores", {1.0, 2.5, std::nan("")}}}}};
  const trellis::unwritable_value e = refusal(doc);
  CHECK(e.member() == "/state/scores/2");
  CHECK(e.reason() == "is NaN");
  CHECK(e.object() == "the test document");
  CHECK(std::string(e.what()) ==
        "trellis: cannot write the test document: member /state/scores/2 is NaN; nothing was "
        "written");
}

TEST_CASE("check_writable: infinities are refused with their sign") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(refusal({{"a", inf}}).reason() == "is +Inf");
  CHECK(refusal({{"a", -inf}}).reason() == "is -Inf");
  CHECK(refusal(nlohmann::json(inf)).member().empty());
}

TEST_CASE("check_writable: member names are escaped as RFC 6901 says") {
  CHECK(refusal({{"a/b~c", {{"x", std::nan("")}}}}).member() == "/a~1b~0c/x");
}

TEST_CASE("check_writable: finite numbers, strings and nulls pass") {
  CHECK_NOTHROW(trellis::detail::check_writable(
      {{"n", nullptr}, {"d", -0.0}, {"big", 1e308}, {"s", "text"}, {"a", {1, 2u, -3}}}, "doc"));
}

TEST_CASE("check_writable: the writers' depth limit is exactly the readers' limit") {
  // The deepest document the reader accepts must pass, and one level more must fail on both
  // sides: a state is never acknowledged that the next start would refuse.
  const int deepest = trellis::max_json_depth + 1;  // containers at depths 0..512
  const nlohmann::json ok = nested(deepest);
  nlohmann::json parsed;
  REQUIRE_FALSE(trellis::detail::parse_json(ok.dump(), parsed).has_value());
  CHECK_NOTHROW(trellis::detail::check_writable(ok, "doc"));

  const nlohmann::json too_deep = nested(deepest + 1);
  CHECK(trellis::detail::parse_json(too_deep.dump(), parsed).has_value());
  const trellis::unwritable_value e = refusal(too_deep);
  CHECK(e.reason() == "is nested deeper than 512 levels");
  std::string container_at_513;  // the member named is the container at depth 513
  for (int i = 0; i <= trellis::max_json_depth; ++i) container_at_513 += "/0";
  CHECK(e.member() == container_at_513);
}

namespace {

// What nlohmann says: its dump throws for text that is not UTF-8.
bool dumps(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace

TEST_CASE("valid_utf8: agrees with nlohmann's dump on every text, valid or not") {
  using trellis::detail::valid_utf8;
  // The edges: overlong forms, surrogates, past U+10FFFF, cut short, stray continuations.
  const std::vector<std::string> cases = {"",
                                          "plain",
                                          "caf\xc3\xa9",
                                          "\xe2\x9c\x93",
                                          "\xf0\x9f\x98\x80",
                                          "\xf4\x8f\xbf\xbf",
                                          "\xc0\xaf",
                                          "\xc1\xbf",
                                          "\xe0\x80\xaf",
                                          "\xe0\x9f\xbf",
                                          "\xed\xa0\x80",
                                          "\xed\x9f\xbf",
                                          "\xf0\x8f\xbf\xbf",
                                          "\xf4\x90\x80\x80",
                                          "\xf5\x80\x80\x80",
                                          "\xff",
                                          "\x80",
                                          "\xc3",
                                          "\xe2\x9c",
                                          "\xf0\x9f\x98",
                                          "a\xc3\x28",
                                          std::string("nul\0inside", 10)};
  for (const std::string& text : cases) {
    CAPTURE(nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
    CHECK(valid_utf8(text) == dumps(text));
  }
  // Every string of up to 3 bytes drawn from bytes at the edges of the ranges.
  const std::vector<unsigned char> bytes = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f,
                                            0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed,
                                            0xee, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  int disagreements = 0;
  for (unsigned char a : bytes)
    for (unsigned char b : bytes)
      for (unsigned char c : bytes) {
        const std::string text{static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)};
        if (valid_utf8(text) != dumps(text)) ++disagreements;
      }
  CHECK(disagreements == 0);
}

TEST_CASE("valid_utf8_json: member names and strings at any depth are checked") {
  using trellis::detail::valid_utf8_json;
  CHECK(valid_utf8_json({{"a", {1, "b", {{"c", "caf\xc3\xa9"}}}}}));
  CHECK_FALSE(valid_utf8_json({{"a", {1, "b", {{"c", "\xff"}}}}}));
  CHECK_FALSE(valid_utf8_json({{"a", {{"\xc0\xaf", 1}}}}));
  CHECK(valid_utf8_json(nullptr));
}
