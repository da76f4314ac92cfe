// check_writable: the writers' half of the JSON limits the readers apply (parse_json), so
// nothing is acknowledged that could not be read back as it was.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

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
