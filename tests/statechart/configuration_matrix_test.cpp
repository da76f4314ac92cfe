// The configuration matrix of a chart: every reached configuration × every event.

#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "media_player_chart.hpp"
#include "trellis/statechart/testing.hpp"
#include "trellis/testing/golden.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace configuration_matrix_test {

namespace tt = trellis::testing;
using Cell = std::vector<std::string>;

namespace {
const std::filesystem::path golden_dir{TRELLIS_STATECHART_GOLDEN_DIR};
}  // namespace

TEST_CASE("configuration matrix: one row per reached configuration, in order of discovery") {
  const auto m = tt::configuration_matrix(media::player(), media::alphabet());
  std::vector<std::string> rows;
  for (const auto& r : m.rows()) rows.push_back(r.configuration);
  CHECK(rows == std::vector<std::string>{"stopped", "buffering, loud", "off", "paused",
                                         "streaming, loud", "buffering, muted",
                                         "streaming, muted"});
  CHECK(m.events() ==
        std::vector<std::string>{"play", "pause", "stop", "loaded", "stall", "mute", "power"});
}

TEST_CASE("configuration matrix: a cell holds the next configuration, or ignored") {
  const auto m = tt::configuration_matrix(media::player(), media::alphabet());
  CHECK(m.at("stopped", "play") == Cell{"buffering, loud"});
  CHECK(m.at("stopped", "pause") == Cell{"ignored"});
  CHECK(m.at("buffering, loud", "loaded") == Cell{"streaming, loud"});
  CHECK(m.at("streaming, muted", "stall") == Cell{"buffering, muted"});
  CHECK(m.at("streaming, muted", "stop") == Cell{"stopped"});
  CHECK(m.at("off", "play") == Cell{"ignored"});  // the chart is done
}

TEST_CASE("configuration matrix: a cell lists every outcome history leads to") {
  const auto m = tt::configuration_matrix(media::player(), media::alphabet());
  // paused resumes whatever playing was in, in the order those were first paused
  CHECK(m.at("paused", "play") ==
        Cell{"buffering, loud", "streaming, loud", "buffering, muted", "streaming, muted"});
}

TEST_CASE("configuration matrix: an unknown configuration or event is an error") {
  const auto m = tt::configuration_matrix(media::player(), media::alphabet());
  CHECK_THROWS_AS(m.at("nowhere", "play"), trellis::error);
  CHECK_THROWS_AS(m.at("stopped", "eject"), trellis::error);
}

TEST_CASE("configuration matrix: Markdown escapes the cell separator in outcomes") {
  const tt::ConfigurationMatrix m({"go|now"}, {{"a|b", {{"x", "y"}}}});
  CHECK(tt::to_markdown(m) ==
        "| configuration \\ event | go\\|now |\n"
        "|-----------------------|---------|\n"
        "| a\\|b                  | x \\| y  |\n");
}

TEST_CASE("configuration matrix: the media player's matrix matches the golden file") {
  const auto m = tt::configuration_matrix(media::player(), media::alphabet());
  CHECK(tt::check_golden(golden_dir / "media_player_matrix.md", tt::to_markdown(m)));
}

TEST_CASE("configuration matrix: prints as Markdown") {
  const auto m = tt::configuration_matrix(media::player(), media::alphabet());
  std::ostringstream out;
  out << m;
  CHECK(out.str() == "\n" + tt::to_markdown(m));
}

}  // namespace configuration_matrix_test
