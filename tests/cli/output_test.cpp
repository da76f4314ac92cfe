// SPDX-License-Identifier: MIT
// The cli layer's output parts that are written by hand for speed print what the JSON library
// would print: `runs ls -o json` writes each run's summary without building a JSON tree.

#include <doctest/doctest.h>

#include <string>

#include "trellis/cli/documents.hpp"

namespace ag = trellis::agent;
using trellis::agent::cli::append_summary_json;
using trellis::agent::cli::summary_json;

namespace {

std::string by_hand(const ag::RunSummary& s) {
  std::string out;
  append_summary_json(out, s);
  return out;
}

std::string by_library(const ag::RunSummary& s) {
  return summary_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ag::RunSummary sample() {
  ag::RunSummary s;
  s.run_id = "run-7";
  s.status = ag::RunStatus::WaitingApproval;
  s.reason = ag::Reason::none;
  s.node = "revise";
  s.step = 2;
  s.seq = 2;
  s.created_at = "2026-11-24T08:08:01.312Z";
  s.updated_at = "2026-11-24T08:08:03.345Z";
  s.fingerprint = "v=1;nodes=draft,review,revise";
  s.request = "2";
  return s;
}

}  // namespace

TEST_CASE("cli output: a run summary written by hand is the JSON library's text") {
  ag::RunSummary s = sample();
  CHECK(by_hand(s) == by_library(s));
  s.request.clear();  // null
  s.status = ag::RunStatus::Failed;
  s.reason = ag::Reason::undeclared_edge;
  CHECK(by_hand(s) == by_library(s));
}

TEST_CASE(
    "cli output: a summary's due time (null when none) and priority as the library writes them") {
  ag::RunSummary s = sample();
  s.due = "2026-11-24T09:00:00.000Z";
  s.priority = -3;
  CHECK(by_hand(s) == by_library(s));
  CHECK(by_hand(s).find(R"("due":"2026-11-24T09:00:00.000Z")") != std::string::npos);
  s.due.clear();
  s.priority = 7;
  CHECK(by_hand(s) == by_library(s));
  CHECK(by_hand(s).find(R"("due":null)") != std::string::npos);
}

TEST_CASE(
    "cli output: quotes, backslashes, control characters and non-ASCII text are escaped as "
    "the library escapes them, and bytes that are not UTF-8 replaced") {
  ag::RunSummary s = sample();
  s.node = "say \"hi\"\\ \n\t\x01 end";
  s.fingerprint = "v=caf\u00e9;nodes=\xe2\x9c\x93";
  CHECK(by_hand(s) == by_library(s));
  s.node = "bad \xff\xfe bytes";
  CHECK(by_hand(s) == by_library(s));
  CHECK(by_hand(s).find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
}
