// SPDX-License-Identifier: MIT
// The agent layer's errors report their documented codes, its failpoints are its own, and
// docs/errors.md lists exactly the codes the error classes of every layer report (this layer
// sees them all but flow's, which tests/flow/validate_test.cpp checks).
#include <trellis/agent/errors.hpp>
#include <trellis/agent/failpoint.hpp>
#include <trellis/agent/store.hpp>
#include <trellis/base/error.hpp>
#include <trellis/machine/errors.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/reactive/errors.hpp>
#include <trellis/scxml/errors.hpp>
#include <trellis/statechart/errors.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace ag = trellis::agent;

namespace {

std::string code_of(const trellis::error& e) { return std::string(e.id()); }

/// The code every error class of every layer reports (each recovery reason counted).
std::set<std::string> codes_in_the_code() {
  std::set<std::string> codes;
  auto add = [&](const trellis::error& e) { CHECK(codes.insert(code_of(e)).second); };
  add(trellis::error("e"));
  add(trellis::invalid_option("e"));
  add(trellis::unknown_failpoint("e"));
  add(trellis::unwritable_value("o", "", "is NaN"));
  add(trellis::cycle_error("e"));
  add(trellis::disposed_error("e"));
  add(trellis::budget_error("e"));
  add(trellis::table_error("e"));
  add(trellis::phase_error("e"));
  add(trellis::chart_error("e"));
  add(trellis::unknown_state("e"));
  add(trellis::chart_livelock("e"));
  using problem = trellis::scxml::scxml_error::problem;
  for (problem p : {problem::malformed, problem::unsupported, problem::invalid}) {
    add(trellis::scxml::scxml_error(p, "f", "e", 1, 1, "r"));
  }
  using reason = trellis::recovery_error::reason;
  for (int r = 0; r <= static_cast<int>(reason::unknown_state); ++r) {
    add(trellis::recovery_error("f", static_cast<reason>(r), "d"));
  }
  add(trellis::sidecar_locked("f", std::nullopt));
  add(trellis::persist_error("f", "write"));
  add(trellis::persist_outcome_unknown("f", "write"));
  add(ag::transient_error("e"));
  add(ag::run_busy("e"));
  add(ag::unknown_run("e"));
  add(ag::run_finished("e"));
  add(ag::graph_mismatch("e"));
  add(ag::invalid_run_id("e"));
  add(ag::graph_error("e"));
  add(ag::store_error("e"));
  add(ag::effect_failed("k", "e"));
  add(ag::not_a_store("e"));
  add(ag::request_superseded("e"));
  add(ag::request_expired("e"));
  add(ag::unknown_request("e"));
  add(ag::run_conflict("e"));
  add(ag::effect_refused("n", "e"));
  add(ag::reconciliation_required("k", "e"));
  add(ag::subgraph_failed("c", "e"));
  return codes;
}

/// The codes docs/errors.md lists: the first cell of every table row, a code in backticks.
std::vector<std::string> codes_in_the_doc() {
  std::ifstream doc(TRELLIS_DOCS_DIR "/errors.md");
  REQUIRE(doc.good());
  const std::regex row(R"(^\| `([a-z_]+(\.[a-z_]+)+)` \|)");
  std::vector<std::string> codes;
  std::string line;
  std::smatch match;
  while (std::getline(doc, line)) {
    if (std::regex_search(line, match, row)) {
      codes.push_back(match[1]);
    }
  }
  return codes;
}

}  // namespace

TEST_CASE("agent errors: every class reports its documented code through the root") {
  CHECK(code_of(ag::transient_error("e")) == "agent.transient");
  CHECK(code_of(ag::run_busy("e")) == "agent.run_busy");
  CHECK(code_of(ag::unknown_run("e")) == "agent.unknown_run");
  CHECK(code_of(ag::run_finished("e")) == "agent.run_finished");
  CHECK(code_of(ag::graph_mismatch("e")) == "agent.graph_mismatch");
  CHECK(code_of(ag::invalid_run_id("e")) == "agent.invalid_run_id");
  CHECK(code_of(ag::graph_error("e")) == "agent.graph");
  CHECK(code_of(ag::store_error("e")) == "agent.store");
  CHECK(code_of(ag::effect_failed("k", "e")) == "agent.effect_failed");
  CHECK(code_of(ag::reconciliation_required("k", "e")) == "agent.reconciliation_required");
  CHECK(code_of(ag::not_a_store("e")) == "agent.not_a_store");
  CHECK(code_of(ag::request_superseded("e")) == "agent.request_superseded");
  CHECK(code_of(ag::request_expired("e")) == "agent.request_expired");
  CHECK(code_of(ag::unknown_request("e")) == "agent.unknown_request");
  CHECK(code_of(ag::run_conflict("e")) == "agent.run_conflict");
  CHECK(code_of(ag::effect_refused("n", "e")) == "agent.effect_refused");
}

TEST_CASE("agent errors: not_a_store is a store_error, so code that catches store_error sees it") {
  try {
    throw ag::not_a_store("trellis: /nowhere is not a trellis store");
  } catch (const ag::store_error& e) {
    CHECK(std::string(e.what()).find("/nowhere") != std::string::npos);
  }
}

TEST_CASE("agent errors: an invalid run id reports agent.invalid_run_id") {
  try {
    ag::check_run_id("../escape");
    FAIL("accepted");
  } catch (const trellis::error& e) {
    CHECK(code_of(e) == "agent.invalid_run_id");
  }
}

TEST_CASE("errors: docs/errors.md lists exactly the codes the classes report") {
  const std::vector<std::string> listed = codes_in_the_doc();
  const std::set<std::string> documented(listed.begin(), listed.end());
  CHECK(documented.size() == listed.size());  // each code once
  const std::set<std::string> coded = codes_in_the_code();
  for (const std::string& code : coded) {
    CAPTURE(code);
    CHECK(documented.count(code) == 1);  // every code is documented
  }
  for (const std::string& code : documented) {
    CAPTURE(code);
    // The flow and web layers' codes: above this layer, checked by trellis_flow_load_tests and
    // trellis_web_tests.
    if (code.starts_with("flow.") || code.starts_with("web.")) continue;
    CHECK(coded.count(code) == 1);  // every documented code exists
  }
}

TEST_CASE("agent failpoints: the agent's boundaries are registered by the agent layer") {
  for (std::string_view name : ag::failpoint_names) {
    CAPTURE(name);
    CHECK(std::find(trellis::failpoint_names.begin(), trellis::failpoint_names.end(), name) ==
          trellis::failpoint_names.end());
    CHECK_NOTHROW(trellis::arm_failpoint(name, trellis::FailpointAction::error));
    trellis::disarm_failpoint(name);
  }
}
