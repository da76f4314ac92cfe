// SPDX-License-Identifier: MIT
// The failpoint registry of the base layer: sets of names registered by layers (here a test
// layer's own), one arming syntax, unknown names refused with a typed error.
#include <trellis/base/error.hpp>
#include <trellis/base/failpoint.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>

namespace {

struct injected : trellis::error {
  injected(std::string_view name, int error_number, const std::filesystem::path& object)
      : error("injected " + std::string(name) + " errno " + std::to_string(error_number) + " on " +
              object.string()) {}
};

void raise_injected(std::string_view name, int error_number, const std::filesystem::path& object) {
  throw injected(name, error_number, object);
}

constexpr std::array<std::string_view, 2> test_boundaries = {"basetest.before", "basetest.after"};
constexpr std::array<std::string_view, 1> test_calls = {"basetest.write"};
constexpr trellis::FailpointSet test_set{
    .layer = "basetest",
    .boundaries = test_boundaries,
    .system_calls = test_calls,
    .raise = raise_injected,
};

constexpr std::array<std::string_view, 1> silent_boundaries = {"basetest.silent"};
constexpr trellis::FailpointSet silent_set{
    .layer = "silent", .boundaries = silent_boundaries, .system_calls = {}, .raise = nullptr};

void register_test_sets() {
  trellis::register_failpoints(test_set);
  trellis::register_failpoints(silent_set);
}

}  // namespace

TEST_CASE("failpoint registry: a registered name can be armed and fires the layer's error") {
  register_test_sets();
  trellis::ScopedFailpoint armed(
      "basetest.after", {.action = trellis::FailpointAction::error, .error_number = ENOSPC});
  CHECK_NOTHROW(trellis::failpoint("basetest.before", "obj"));
  CHECK_THROWS_WITH_AS(trellis::failpoint("basetest.after", "obj"),
                       doctest::Contains("injected basetest.after errno 28 on obj"), injected);
}

TEST_CASE("failpoint registry: a set without a raise function fires a trellis::error") {
  register_test_sets();
  trellis::ScopedFailpoint armed("basetest.silent", trellis::FailpointAction::error);
  CHECK_THROWS_WITH_AS(trellis::failpoint("basetest.silent", "obj"),
                       doctest::Contains("injected failure at failpoint basetest.silent"),
                       trellis::error);
}

TEST_CASE("failpoint registry: a system call of a registered set returns the armed errno") {
  register_test_sets();
  trellis::ScopedFailpoint armed(
      "basetest.write", {.action = trellis::FailpointAction::error, .error_number = EROFS});
  CHECK(trellis::io_failpoint("basetest.write") == EROFS);
}

TEST_CASE("failpoint registry: registering a set twice changes nothing") {
  register_test_sets();
  const std::string before = trellis::known_failpoints();
  trellis::register_failpoints(test_set);
  CHECK(trellis::known_failpoints() == before);
}

TEST_CASE("failpoint registry: a name another set registered is refused") {
  register_test_sets();
  constexpr static std::array<std::string_view, 1> clash = {"basetest.before"};
  constexpr static trellis::FailpointSet clashing{
      .layer = "other", .boundaries = clash, .system_calls = {}, .raise = nullptr};
  CHECK_THROWS_WITH_AS(trellis::register_failpoints(clashing),
                       doctest::Contains("'basetest.before' of layer 'other' is registered "
                                         "already by layer 'basetest'"),
                       trellis::invalid_option);
}

TEST_CASE("failpoint registry: an unknown name is refused with unknown_failpoint naming it") {
  register_test_sets();
  try {
    trellis::arm_failpoint("basetest.nowhere", trellis::FailpointAction::kill);
    FAIL("not refused");
  } catch (const trellis::unknown_failpoint& e) {
    CHECK(e.id() == "base.unknown_failpoint");
    const std::string what = e.what();
    CHECK(what.find("unknown failpoint 'basetest.nowhere'") != std::string::npos);
    CHECK(what.find("basetest.before, basetest.after, basetest.write") != std::string::npos);
  }
}

TEST_CASE("failpoint registry: an error armed with a non-positive errno is invalid_option") {
  register_test_sets();
  CHECK_THROWS_AS(
      trellis::arm_failpoint("basetest.write",
                             {.action = trellis::FailpointAction::error, .error_number = -1}),
      trellis::invalid_option);
}
