// SPDX-License-Identifier: MIT
// What the console reads from a request (forms.hpp): forms and query strings, decisions and
// cancellations from forms and JSON bodies, and the malformed ones refused with bad_request.

#include <doctest/doctest.h>

#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>

#include "trellis/web/errors.hpp"
#include "trellis/web/forms.hpp"

namespace ag = trellis::agent;
namespace web = trellis::web;

TEST_CASE("forms: fields decoded, in order; a bad escape or non-UTF-8 refused") {
  const web::Form f = web::parse_form("a=1&b=two+words&c=%C3%A9&&d&a=2");
  REQUIRE(f.fields().size() == 5);
  CHECK(f.value("a") == "1");  // the first of a repeated name
  CHECK(f.value("b") == "two words");
  CHECK(f.value("c") == "\xC3\xA9");
  CHECK(f.get("d") == std::string());
  CHECK_FALSE(f.get("e"));
  CHECK(f.value("e", "x") == "x");
  CHECK(web::parse_form("").fields().empty());
  for (const char* bad : {"a=%", "a=%4", "a=%zz", "%G1=x", "a=%FF"})
    CHECK_THROWS_AS(web::parse_form(bad), web::bad_request);
  CHECK_THROWS_AS(web::parse_form("a&b&c", 2), web::bad_request);
}

TEST_CASE("forms: url_encode is undone by parse_form") {
  const std::string text = "run 7/é&x=%+";
  const std::string encoded = web::url_encode(text);
  CHECK(encoded.find_first_of(" /&=%+") == encoded.find('%'));  // only its own escapes
  CHECK(web::parse_form("v=" + encoded).value("v") == text);
}

TEST_CASE("forms: decisions from a form name the reviewer given, never a field") {
  auto a = web::decision_from_form(web::parse_form("request=4&decision=approve&comment=ok"), "ana");
  CHECK(a.request == "4");
  CHECK(std::get<ag::Approve>(a.decision) == ag::Approve{"ana", "ok"});
  a = web::decision_from_form(web::parse_form("request=4&decision=reject&reason=no"), "ana");
  CHECK(std::get<ag::Reject>(a.decision) == ag::Reject{"no", "ana"});
  a = web::decision_from_form(web::parse_form("request=4&decision=input&input=%7B%22n%22%3A1%7D"),
                              "ana");
  CHECK(std::get<ag::Input>(a.decision).value == nlohmann::json{{"n", 1}});
  for (const char* bad :
       {"decision=approve", "request=x4&decision=approve", "request=4", "request=4&decision=maybe",
        "request=4&decision=reject", "request=4&decision=input", "request=4&decision=input&input={",
        "request=4&decision=approve&reviewer=bob", "request=4&decision=approve&by=bob"})
    CHECK_THROWS_AS(web::decision_from_form(web::parse_form(bad), "ana"), web::bad_request);
}

TEST_CASE("forms: decisions and cancellations from JSON bodies") {
  auto a = web::decision_from_json(R"({"request":"2","decision":"input","input":[1,2]})", "bo");
  CHECK(a.request == "2");
  CHECK(std::get<ag::Input>(a.decision) == ag::Input{nlohmann::json{1, 2}, "bo"});
  CHECK(web::cancel_from_json(R"({"reason":"dup"})").reason == "dup");
  CHECK(web::cancel_from_json("{}").reason.empty());
  for (const char* bad :
       {"", "[]", "{", R"({"request":2,"decision":"approve"})", R"({"request":"2","decision":1})",
        R"({"request":"2","decision":"approve","reviewer":"x"})"})
    CHECK_THROWS_AS(web::decision_from_json(bad, "bo"), web::bad_request);
  CHECK_THROWS_AS(web::cancel_from_json(R"({"reason":7})"), web::bad_request);
}

TEST_CASE("web errors: each class reports its code, and docs/errors.md documents it") {
  std::ifstream doc(TRELLIS_DOCS_DIR "/errors.md");
  REQUIRE(doc.good());
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  const web::bad_request a("x");
  const web::users_file_error b("x");
  const web::refused_option c("x");
  for (const trellis::error* e : std::initializer_list<const trellis::error*>{&a, &b, &c}) {
    CAPTURE(e->id());
    CHECK(e->id().starts_with("web."));
    CHECK(text.find("| `" + std::string(e->id()) + "` |") != std::string::npos);
  }
  CHECK(dynamic_cast<const trellis::invalid_option*>(&c) != nullptr);
}

TEST_CASE("forms: a reconciliation from a form, recorded as the signed-in user") {
  const ag::Reconciliation r = web::reconciliation_from_form(
      web::parse_form("key=k1&happened=yes&result=%7B%22id%22%3A1%7D&reason=ledger+line+1"), "ana");
  CHECK(r.key == "k1");
  CHECK(r.happened);
  CHECK(r.result == nlohmann::json{{"id", 1}});
  CHECK(r.reason == "ledger line 1");
  CHECK(r.by == "ana");
  CHECK_FALSE(
      web::reconciliation_from_form(web::parse_form("key=k&happened=no&reason=r"), "a").happened);
  for (const char* bad :
       {"happened=yes&reason=r", "key=k&reason=r", "key=k&happened=maybe&reason=r",
        "key=k&happened=yes", "key=k&happened=yes&reason=r&result={",
        "key=k&happened=no&reason=r&by=mallory", "key=k&happened=no&reason=r&reviewer=m"})
    CHECK_THROWS_AS(web::reconciliation_from_form(web::parse_form(bad), "a"), web::bad_request);
  CHECK_THROWS_AS(web::cancel_from_form(web::parse_form("reason=x&by=mallory")), web::bad_request);
  CHECK_THROWS_AS(web::cancel_from_json(R"({"by": "mallory"})"), web::bad_request);
}

TEST_CASE("forms: a fork from a form or a JSON body; who forks is never a field") {
  const web::ForkAsk f = web::fork_from_form(web::parse_form("seq=3&as=run-7b&reason=retry"));
  CHECK(f.seq == 3);
  CHECK(f.as == "run-7b");
  CHECK(f.reason == "retry");
  const web::ForkAsk j = web::fork_from_json(R"({"seq": 0, "as": "x"})");
  CHECK(j.seq == 0);
  CHECK(j.as == "x");
  CHECK(j.reason.empty());
  for (const char* bad : {"as=x", "seq=&as=x", "seq=-1&as=x", "seq=1e3&as=x", "seq=1",
                          "seq=99999999999999999999&as=x", "seq=1&as=x&by=mallory"})
    CHECK_THROWS_AS(web::fork_from_form(web::parse_form(bad)), web::bad_request);
  for (const char* bad :
       {R"({"as": "x"})", R"({"seq": -1, "as": "x"})", R"({"seq": 1.5, "as": "x"})",
        R"({"seq": "1", "as": "x"})", R"({"seq": 1})", R"({"seq": 1, "as": 7})",
        R"({"seq": 1, "as": "x", "by": "m"})", "[1]", "{"})
    CHECK_THROWS_AS(web::fork_from_json(bad), web::bad_request);
}
