// SPDX-License-Identifier: MIT
#include <trellis/testing.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "traffic_light.hpp"

#ifndef TRELLIS_MACHINE_GOLDEN_DIR
#error \
    "TRELLIS_MACHINE_GOLDEN_DIR must name tests/machine/golden (tests/machine/tests.cmake sets it)"
#endif

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace testing_test {

namespace tt = trellis::testing;
using light::Light;
using light::Tick;

namespace {

// A directory of its own per test case, removed afterwards, for golden files to break.
class ScratchDir {
 public:
  ScratchDir()
      : path_(std::filesystem::temp_directory_path() /
              ("trellis_machine_test_" + std::to_string(::getpid()) + "_" +
               std::to_string(counter_++))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::filesystem::path file(const std::string& name) const { return path_ / name; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Sets TRELLIS_UPDATE_GOLDEN for one scope, restoring the previous value after.
class UpdateGoldenEnv {
 public:
  explicit UpdateGoldenEnv(const char* value) {
    if (const char* old = std::getenv("TRELLIS_UPDATE_GOLDEN")) old_ = old;
    if (value != nullptr) {
      ::setenv("TRELLIS_UPDATE_GOLDEN", value, 1);
    } else {
      ::unsetenv("TRELLIS_UPDATE_GOLDEN");
    }
  }
  ~UpdateGoldenEnv() {
    if (old_) {
      ::setenv("TRELLIS_UPDATE_GOLDEN", old_->c_str(), 1);
    } else {
      ::unsetenv("TRELLIS_UPDATE_GOLDEN");
    }
  }
  UpdateGoldenEnv(const UpdateGoldenEnv&) = delete;
  UpdateGoldenEnv& operator=(const UpdateGoldenEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

const std::filesystem::path golden_dir{TRELLIS_MACHINE_GOLDEN_DIR};

}  // namespace

// --- the matrix ------------------------------------------------------------------------------

TEST_CASE("transition matrix: holds the function's outcome for every pair") {
  const auto m = tt::transition_matrix(light::step);
  CHECK(m.at(Light::Red, Tick::Advance) == Light::Green);
  CHECK(m.at(Light::Green, Tick::Advance) == Light::Yellow);
  CHECK(m.at(Light::Yellow, Tick::Advance) == Light::Red);
  CHECK(m.at(Light::Green, Tick::Skip) == Light::Red);
  CHECK_FALSE(m.at(Light::Red, Tick::Skip).has_value());
  CHECK_FALSE(m.at(Light::Yellow, Tick::Skip).has_value());
}

TEST_CASE("transition matrix: a table and the equivalent function give equal matrices") {
  CHECK(tt::transition_matrix(light::table()) == tt::transition_matrix(light::step));
}

TEST_CASE("transition matrix: one different cell makes the matrices differ") {
  const auto changed = [](const Light& s, const Tick& e) -> std::optional<Light> {
    if (s == Light::Yellow && e == Tick::Skip) return Light::Red;
    return light::step(s, e);
  };
  CHECK(tt::transition_matrix<Light, Tick>(changed) != tt::transition_matrix(light::step));
}

TEST_CASE("transition matrix: calls the function exactly once per pair") {
  int calls = 0;
  const auto counted = [&calls](const Light& s, const Tick& e) {
    ++calls;
    return light::step(s, e);
  };
  (void)tt::transition_matrix<Light, Tick>(counted);
  CHECK(calls == 6);
}

TEST_CASE("transition matrix: is itself a transition function") {
  const auto m = tt::transition_matrix(light::step);
  static_assert(trellis::TransitionFunction<decltype(m), Light, Tick>);
  CHECK(m(Light::Green, Tick::Skip) == Light::Red);
  CHECK(tt::transition_matrix(m) == m);
}

TEST_CASE("transition matrix: at() of an unlisted value names it") {
  const auto m = tt::transition_matrix(light::step);
  CHECK_THROWS_WITH_AS((void)m.at(static_cast<Light>(9), Tick::Advance),
                       "trellis: Light value 9 is not listed in the enumeration of Light "
                       "(expected one of Red, Green, Yellow)",
                       trellis::error);
}

TEST_CASE("transition matrix: a function returning an unlisted state is an error") {
  const auto stray = [](const Light& s, const Tick& e) -> std::optional<Light> {
    if (s == Light::Yellow && e == Tick::Skip) return static_cast<Light>(9);
    return light::step(s, e);
  };
  CHECK_THROWS_WITH_AS((void)(tt::transition_matrix<Light, Tick>(stray)),
                       "trellis::testing: Yellow on Skip returned Light value 9, which the "
                       "enumeration of Light does not list",
                       trellis::error);
}

TEST_CASE("to_markdown: one row per state, one column per event, a dash where rejected") {
  CHECK(tt::to_markdown(tt::transition_matrix(light::step)) ==
        "| state \\ event | Advance | Skip |\n"
        "|---------------|---------|------|\n"
        "| Red           | Green   | —    |\n"
        "| Green         | Yellow  | Red  |\n"
        "| Yellow        | Red     | —    |\n");
}

// --- golden files ----------------------------------------------------------------------------

TEST_CASE("check_golden: equal text passes") {
  const UpdateGoldenEnv env(nullptr);
  const ScratchDir dir;
  write_file(dir.file("g.md"), "a\nb\n");
  const auto r = tt::check_golden(dir.file("g.md"), "a\nb\n");
  CHECK(r);
  CHECK(r.ok);
}

TEST_CASE("check_golden: a mismatch fails with a line diff naming the file") {
  const UpdateGoldenEnv env(nullptr);
  const ScratchDir dir;
  write_file(dir.file("g.md"), "one\ntwo\nthree\n");
  const auto r = tt::check_golden(dir.file("g.md"), "one\nTWO\nthree\n");
  CHECK_FALSE(r);
  CHECK(r.message.find(dir.file("g.md").string()) != std::string::npos);
  CHECK(r.message.find("TRELLIS_UPDATE_GOLDEN=1") != std::string::npos);
  CHECK(r.message.find("  one\n- two\n+ TWO\n  three\n") != std::string::npos);
}

TEST_CASE("check_golden: a missing golden file fails naming its path") {
  const UpdateGoldenEnv env(nullptr);
  const ScratchDir dir;
  const auto missing = dir.file("nowhere.md");
  const auto r = tt::check_golden(missing, "text\n");
  CHECK_FALSE(r);
  CHECK(r.message.find("golden file '" + missing.string() + "' does not exist") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(missing));
}

TEST_CASE("check_golden: TRELLIS_UPDATE_GOLDEN=1 rewrites the file and passes") {
  const UpdateGoldenEnv env("1");
  const ScratchDir dir;
  write_file(dir.file("g.md"), "old\n");
  const auto r = tt::check_golden(dir.file("g.md"), "new\n");
  CHECK(r);
  CHECK(read_file(dir.file("g.md")) == "new\n");
  const auto created = tt::check_golden(dir.file("sub/created.md"), "fresh\n");
  CHECK(created);
  CHECK(read_file(dir.file("sub/created.md")) == "fresh\n");
}

TEST_CASE("check_golden: TRELLIS_UPDATE_GOLDEN=0 compares as usual") {
  const UpdateGoldenEnv env("0");
  const ScratchDir dir;
  write_file(dir.file("g.md"), "old\n");
  CHECK_FALSE(tt::check_golden(dir.file("g.md"), "new\n"));
  CHECK(read_file(dir.file("g.md")) == "old\n");
}

TEST_CASE("check_golden: a golden file with CRLF line endings matches LF output") {
  const UpdateGoldenEnv env(nullptr);
  const ScratchDir dir;
  write_file(dir.file("g.md"), "a\r\nb\r\n");
  CHECK(tt::check_golden(dir.file("g.md"), "a\nb\n"));
}

TEST_CASE("check_golden: a difference in the final newline alone is explained") {
  const UpdateGoldenEnv env(nullptr);
  const ScratchDir dir;
  write_file(dir.file("g.md"), "a\nb");
  const auto r = tt::check_golden(dir.file("g.md"), "a\nb\n");
  CHECK_FALSE(r);
  CHECK(r.message.find("final newline") != std::string::npos);
}

TEST_CASE("line diff: shows changes with context and elides distant equal lines") {
  std::string expected;
  std::string actual;
  for (int i = 1; i <= 20; ++i) {
    expected += std::to_string(i) + "\n";
    actual += (i == 10 ? std::string("ten") : std::to_string(i)) + "\n";
  }
  CHECK(trellis::detail::line_diff(expected, actual) ==
        "  ...\n  7\n  8\n  9\n- 10\n+ ten\n  11\n  12\n  13\n  ...\n");
  CHECK(trellis::detail::line_diff("a\nb\n", "a\nb\n").empty());
  CHECK(trellis::detail::line_diff("a\n", "a\nb\n") == "  a\n+ b\n");
}

// --- property checks -------------------------------------------------------------------------

TEST_CASE("sticky_terminals: a terminal state left by an allowed event or not at all passes") {
  const auto m = tt::transition_matrix(light::step);
  CHECK(tt::sticky_terminals(m, {Light::Red}, {Tick::Advance}).empty());
}

TEST_CASE("sticky_terminals: each event leaving a terminal state is a violation") {
  const auto m = tt::transition_matrix(light::step);
  CHECK(tt::sticky_terminals(m, {Light::Green}) ==
        std::vector<std::string>{
            "Green --Advance--> Yellow: terminal state Green is left; no event may leave it",
            "Green --Skip--> Red: terminal state Green is left; no event may leave it"});
  CHECK(tt::sticky_terminals(m, {Light::Green}, {Tick::Skip}) ==
        std::vector<std::string>{
            "Green --Advance--> Yellow: terminal state Green is left; only Skip may leave it"});
}

TEST_CASE("reachable_from: every state reachable gives no violation") {
  CHECK(tt::reachable_from(tt::transition_matrix(light::step), Light::Red).empty());
}

TEST_CASE("reachable_from: names each unreachable state") {
  const auto only_red = [](const Light& s, const Tick&) -> std::optional<Light> { return s; };
  CHECK(tt::reachable_from(tt::transition_matrix<Light, Tick>(only_red), Light::Red) ==
        std::vector<std::string>{"Green is not reachable from Red",
                                 "Yellow is not reachable from Red"});
}

TEST_CASE("no_backward_edges: reports each edge to a lower rank with the ranks") {
  const auto m = tt::transition_matrix(light::step);
  const auto rank = [](const Light& s) { return static_cast<int>(s); };
  CHECK(tt::no_backward_edges(m, rank) ==
        std::vector<std::string>{
            "Green --Skip--> Red goes backward (rank 1 to 0); no event may rewind",
            "Yellow --Advance--> Red goes backward (rank 2 to 0); no event may rewind"});
  CHECK(tt::no_backward_edges(m, rank, {Tick::Skip}) ==
        std::vector<std::string>{
            "Yellow --Advance--> Red goes backward (rank 2 to 0); only Skip may rewind"});
  CHECK(tt::no_backward_edges(m, rank, {Tick::Advance, Tick::Skip}).empty());
}

TEST_CASE("deterministic: a pure function has no violations") {
  CHECK(tt::deterministic(light::step).empty());
  CHECK(tt::deterministic(light::table()).empty());
}

TEST_CASE("deterministic: a function with hidden state is reported") {
  int calls = 0;
  const auto flaky = [&calls](const Light& s, const Tick& e) -> std::optional<Light> {
    ++calls;
    if (s == Light::Red && e == Tick::Advance && calls % 2 == 0) return std::nullopt;
    return light::step(s, e);
  };
  CHECK(tt::deterministic<Light, Tick>(flaky) ==
        std::vector<std::string>{
            "Red --Advance--> Green the first time, then rejected: not deterministic"});
}

}  // namespace testing_test
