// SPDX-License-Identifier: MIT
// The persist layer's errors report their documented codes.
#include <trellis/persist/errors.hpp>
#include <trellis/persist/sidecar.hpp>
#include <trellis/persist/sidecar_lock.hpp>

#include <doctest/doctest.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <system_error>

#include "persist_test_support.hpp"

using persist_test::ScratchDir;
using reason = trellis::recovery_error::reason;

namespace {

std::string code_of(const trellis::error& e) { return std::string(e.id()); }

}  // namespace

TEST_CASE("persist errors: a recovery_error's code is persist.recovery.<its reason's name>") {
  for (int r = 0; r <= static_cast<int>(reason::unknown_state); ++r) {
    const auto why = static_cast<reason>(r);
    CAPTURE(trellis::recovery_error::name(why));
    const trellis::recovery_error e("s.json", why, "detail");
    CHECK(code_of(e) == "persist.recovery." + std::string(trellis::recovery_error::name(why)));
  }
}

TEST_CASE("persist errors: a sidecar that is not JSON reports persist.recovery.not_json") {
  ScratchDir dir;
  const auto file = dir / "m.json";
  std::ofstream(file) << "not json at all";
  try {
    (void)trellis::load_sidecar(file, "m");
    FAIL("loaded");
  } catch (const trellis::recovery_error& e) {
    CHECK(code_of(e) == "persist.recovery.not_json");
    CHECK(e.why() == reason::not_json);
  }
}

TEST_CASE("persist errors: a held lock reports persist.sidecar_locked") {
  ScratchDir dir;
  const auto file = dir / "m.json";
  trellis::SidecarLock first(file);
  try {
    trellis::SidecarLock second(file);
    FAIL("locked twice");
  } catch (const trellis::sidecar_locked& e) {
    CHECK(code_of(e) == "persist.sidecar_locked");
  }
}

TEST_CASE("persist errors: persist_error reports persist.write_failed with its errno intact") {
  const trellis::persist_error e("s.json", "fsync of the temporary file",
                                 std::error_code(ENOSPC, std::generic_category()));
  CHECK(code_of(e) == "persist.write_failed");
  CHECK(e.code() == std::errc::no_space_on_device);  // persist_error::code() is the errno
}

TEST_CASE("persist errors: persist_outcome_unknown reports persist.outcome_unknown") {
  const trellis::persist_outcome_unknown e("s.json", "fsync of the directory");
  const trellis::persist_error& family = e;
  CHECK(code_of(family) == "persist.outcome_unknown");
}
