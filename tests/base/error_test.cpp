// SPDX-License-Identifier: MIT
// The root error and the errors every layer shares: each reports its documented code.
#include <trellis/base/error.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

TEST_CASE("error: the root reports base.error and is a std::runtime_error") {
  const trellis::error e("trellis: something");
  CHECK(e.id() == "base.error");
  CHECK(std::string(e.what()) == "trellis: something");
  const std::runtime_error& as_std = e;
  CHECK(std::string(as_std.what()) == "trellis: something");
}

TEST_CASE("error: invalid_option reports base.invalid_option through the root") {
  const trellis::invalid_option e("trellis: SidecarLock: the sidecar path is empty");
  const trellis::error& root = e;
  CHECK(root.id() == "base.invalid_option");
}

TEST_CASE("error: unknown_failpoint reports base.unknown_failpoint and is an invalid_option") {
  const trellis::unknown_failpoint e("trellis: unknown failpoint 'x'");
  const trellis::invalid_option& option = e;
  CHECK(option.id() == "base.unknown_failpoint");
}

TEST_CASE("error: unwritable_value reports base.unwritable_value and keeps its message") {
  const trellis::unwritable_value e("checkpoint 3 of run 'r'", "/state/x", "is NaN");
  const trellis::error& root = e;
  CHECK(root.id() == "base.unwritable_value");
  CHECK(std::string(e.what()) ==
        "trellis: cannot write checkpoint 3 of run 'r': member /state/x is NaN; nothing was "
        "written");
}

TEST_CASE("error: a user's subclass keeps its base's code unless it overrides id()") {
  struct mine : trellis::invalid_option {
    using invalid_option::invalid_option;
  };
  struct coded : trellis::error {
    using error::error;
    std::string_view id() const noexcept override { return "app.coded"; }
  };
  CHECK(mine("m").id() == "base.invalid_option");
  const trellis::error& c = coded("c");
  CHECK(c.id() == "app.coded");
}
