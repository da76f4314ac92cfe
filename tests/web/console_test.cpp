// SPDX-License-Identifier: MIT
// The operator console (console.hpp) served for real on 127.0.0.1 and asked by an HTTP client:
// signing in, the pages, decisions and cancellations through forms and the API, and what it
// refuses (a foreign Host, a form without its CSRF token, a request without a token, a
// decision on a superseded request, a body over the cap, a read-only console, a non-loopback
// bind without TLS); state values are shown escaped.

#include <doctest/doctest.h>

#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "trellis/agent/errors.hpp"
#include "trellis/agent/graph.hpp"
#include "trellis/agent/memory_store.hpp"
#include "trellis/agent/operations.hpp"
#include "trellis/cli/documents.hpp"
#include "trellis/web/console.hpp"
#include "trellis/web/errors.hpp"
#include "trellis/web/users.hpp"

namespace ag = trellis::agent;
namespace web = trellis::web;
using nlohmann::json;

namespace {

struct Order {
  std::string item;
  int paid = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, item, paid)

// ask -> pay: the run pauses for an approval of the payment, then pays.
struct Ask final : ag::Node<Order> {
  std::string_view name() const override { return "ask"; }
  ag::NextStep run(Order& o, ag::RunContext&) override {
    return ag::Interrupt{
        "pay for " + o.item + "?",
        ag::ApprovalRequest{
            "pay", {{"item", o.item}, {"amount", 12}}, "money leaves the account", std::nullopt},
        "pay"};
  }
};
struct Pay final : ag::Node<Order> {
  std::string_view name() const override { return "pay"; }
  ag::NextStep run(Order& o, ag::RunContext&) override {
    ++o.paid;
    return ag::Halt{};
  }
};

struct Orders {
  ag::Graph<Order> g;
  Orders() { g.add<Ask>().add<Pay>().entry("ask"); }
};

/// A console on a free port of 127.0.0.1, served by a thread, over `store`.
struct Served {
  web::Console console;
  std::jthread thread;
  Served(ag::Store& store, web::ConsoleOptions o)
      : console(store, (o.port = 0, std::move(o))), thread([this] { console.serve(); }) {}
  ~Served() { console.stop(); }
  std::string token() const {
    const std::string url = console.login_url();
    return url.substr(url.find("token=") + 6);
  }
};

httplib::Client client(const Served& s) {
  httplib::Client c("127.0.0.1", s.console.port());
  c.set_connection_timeout(5);
  c.set_read_timeout(10);
  return c;
}

/// Signs in with `token`; returns the session cookie ("trellis_session=...").
std::string sign_in(httplib::Client& c, const std::string& token) {
  const auto res = c.Post("/login", "token=" + token, "application/x-www-form-urlencoded");
  REQUIRE(res);
  REQUIRE(res->status == 303);
  const std::string cookie = res->get_header_value("Set-Cookie");
  REQUIRE(cookie.find("HttpOnly") != std::string::npos);
  REQUIRE(cookie.find("SameSite=Strict") != std::string::npos);
  return cookie.substr(0, cookie.find(';'));
}

std::string csrf_of(const std::string& page) {
  const std::string mark = "name=\"csrf\" value=\"";
  const std::size_t at = page.find(mark);
  REQUIRE(at != std::string::npos);
  return page.substr(at + mark.size(), page.find('"', at + mark.size()) - at - mark.size());
}

ag::RunStatus status_of(ag::Store& store, const std::string& run) {
  return store.latest(run)->status;
}

}  // namespace

TEST_CASE("console: sign in, read the inbox, approve and reject through the forms") {
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-1", Order{"lamp"}, store).interrupted());
  REQUIRE(o.g.run("r-2", Order{"desk"}, store).interrupted());
  Served s(store, {.user = "ana"});
  httplib::Client c = client(s);

  // Without a session a page sends the visitor to sign in; a wrong token is refused.
  auto res = c.Get("/approvals");
  REQUIRE(res);
  CHECK(res->status == 302);
  CHECK(res->get_header_value("Location") == "/login");
  res = c.Post("/login", "token=not-it", "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 401);

  const httplib::Headers cookie{{"Cookie", sign_in(c, s.token())}};
  res = c.Get("/approvals", cookie);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const std::string inbox = res->body;
  CHECK(inbox.find("data-run=\"r-1\"") != std::string::npos);
  CHECK(inbox.find("data-run=\"r-2\"") != std::string::npos);
  CHECK(inbox.find("money leaves the account") != std::string::npos);
  CHECK(inbox.find("&quot;item&quot;: &quot;lamp&quot;") != std::string::npos);  // the input
  CHECK(inbox.find("signed in as <b id=\"user\">ana</b>") != std::string::npos);
  const std::string csrf = csrf_of(inbox);
  const std::string request = ag::request_id(*store.latest("r-1"));

  // Approve r-1: recorded with the signed-in user as reviewer, the run Queued for a resume.
  res = c.Post("/runs/r-1/decision", cookie,
               "csrf=" + csrf + "&request=" + request + "&decision=approve&comment=fine",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 303);
  CHECK(status_of(store, "r-1") == ag::RunStatus::Queued);
  const ag::Checkpoint approved = *store.latest("r-1");
  REQUIRE(approved.decision);
  CHECK(std::get<ag::Approve>(approved.decision->given).reviewer == "ana");
  CHECK(std::get<ag::Approve>(approved.decision->given).comment == "fine");
  CHECK(o.g.resume("r-1", store).succeeded());
  CHECK(store.latest("r-1")->state.at("paid") == 1);

  // Reject r-2 with a reason: Failed (approval_rejected), the reason kept.
  const std::string request2 = ag::request_id(*store.latest("r-2"));
  res = c.Post("/runs/r-2/decision", cookie,
               "csrf=" + csrf + "&request=" + request2 + "&decision=reject&reason=too+dear",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 303);
  const ag::Checkpoint rejected = *store.latest("r-2");
  CHECK(rejected.status == ag::RunStatus::Failed);
  CHECK(std::get<ag::Reject>(rejected.decision->given).reason == "too dear");
  CHECK(std::get<ag::Reject>(rejected.decision->given).reviewer == "ana");

  // The same decision again: the request is superseded, refused with a message, nothing written.
  const std::uint64_t seq = store.latest("r-2")->seq;
  res = c.Post("/runs/r-2/decision", cookie,
               "csrf=" + csrf + "&request=" + request2 + "&decision=approve",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 409);
  CHECK(res->body.find("no longer pending") != std::string::npos);
  CHECK(store.latest("r-2")->seq == seq);

  // The inbox is empty now.
  res = c.Get("/approvals", cookie);
  REQUIRE(res);
  CHECK(res->body.find("Nothing waits.") != std::string::npos);
}

TEST_CASE("console: a form without its CSRF token, a reviewer field, a foreign Host: refused") {
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-1", Order{"lamp"}, store).interrupted());
  Served s(store, {.user = "ana"});
  httplib::Client c = client(s);
  const httplib::Headers cookie{{"Cookie", sign_in(c, s.token())}};
  const std::string request = ag::request_id(*store.latest("r-1"));
  const std::uint64_t seq = store.latest("r-1")->seq;

  auto res = c.Post("/runs/r-1/decision", cookie, "request=" + request + "&decision=approve",
                    "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 403);
  res = c.Post("/runs/r-1/decision", cookie, "csrf=0123&request=" + request + "&decision=approve",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 403);
  // The reviewer is the signed-in user, never a field.
  const std::string csrf = csrf_of(c.Get("/runs", cookie)->body);
  res = c.Post("/runs/r-1/decision", cookie,
               "csrf=" + csrf + "&request=" + request + "&decision=approve&reviewer=mallory",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(store.latest("r-1")->seq == seq);

  // DNS rebinding: a page asked for under another host name is refused.
  res = c.Get("/runs", {{"Cookie", cookie.begin()->second}, {"Host", "evil.example"}});
  REQUIRE(res);
  CHECK(res->status == 421);
  // "localhost" is this machine: accepted on a loopback bind.
  res = c.Get("/runs", {{"Cookie", cookie.begin()->second},
                        {"Host", "localhost:" + std::to_string(s.console.port())}});
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Security-Policy").find("script-src 'self'") !=
        std::string::npos);
}

TEST_CASE("console: a state value with markup is shown as text") {
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-x", Order{"<script>alert(1)</script>"}, store).interrupted());
  Served s(store, {.user = "ana"});
  httplib::Client c = client(s);
  const httplib::Headers cookie{{"Cookie", sign_in(c, s.token())}};
  for (const char* path : {"/runs/r-x", "/approvals"}) {
    auto res = c.Get(path, cookie);
    REQUIRE(res);
    REQUIRE(res->status == 200);
    CHECK(res->body.find("<script>alert") == std::string::npos);
    CHECK(res->body.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  }
}

TEST_CASE("console: the API answers with the command's documents, by bearer token") {
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-1", Order{"lamp"}, store).interrupted());
  REQUIRE(o.g.run("r-2", Order{"desk"}, store).interrupted());
  Served s(store, {.user = "ana"});
  httplib::Client c = client(s);
  const httplib::Headers bearer{{"Authorization", "Bearer " + s.token()}};

  auto res = c.Get("/api/v1/runs/r-1");
  REQUIRE(res);
  CHECK(res->status == 401);
  res = c.Get("/api/v1/runs/r-1", {{"Authorization", "Bearer wrong"}});
  REQUIRE(res);
  CHECK(res->status == 401);

  res = c.Get("/api/v1/runs/r-1", bearer);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  CHECK(json::parse(res->body) == ag::cli::run_document(store, "r-1"));
  res = c.Get("/api/v1/approvals", bearer);
  REQUIRE(res);
  CHECK(json::parse(res->body) == ag::cli::approvals_document(ag::pending_approvals(store)));
  res = c.Get("/api/v1/runs?limit=1&after=r-1", bearer);
  REQUIRE(res);
  const json page = json::parse(res->body);
  REQUIRE(page["runs"].size() == 1);
  CHECK(page["runs"][0]["run_id"] == "r-2");
  res = c.Get("/api/v1/runs/nope", bearer);
  REQUIRE(res);
  CHECK(res->status == 404);
  CHECK(json::parse(res->body)["error"]["code"] == "agent.unknown_run");

  // A decision by the API: the reviewer is the token's user.
  const std::string request = ag::request_id(*store.latest("r-1"));
  res =
      c.Post("/api/v1/runs/r-1/decision", bearer,
             json{{"request", request}, {"decision", "input"}, {"input", {{"amount", 10}}}}.dump(),
             "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const ag::Checkpoint decided = *store.latest("r-1");
  CHECK(std::get<ag::Input>(decided.decision->given).reviewer == "ana");
  CHECK(std::get<ag::Input>(decided.decision->given).value == json{{"amount", 10}});

  // Cancel by the API: recorded as the token's user.
  res = c.Post("/api/v1/runs/r-2/cancel", bearer, R"({"reason": "duplicate"})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(status_of(store, "r-2") == ag::RunStatus::Cancelled);
  const auto cancels = store.cancel_requests("r-2", 0);
  REQUIRE(cancels.size() == 1);
  CHECK(cancels[0].by == "ana");
  CHECK(cancels[0].reason == "duplicate");

  // A session's change through the API needs the X-CSRF-Token header.
  const std::string cookie = sign_in(c, s.token());
  res = c.Post("/api/v1/runs/r-2/cancel", {{"Cookie", cookie}}, "{}", "application/json");
  REQUIRE(res);
  CHECK(res->status == 403);

  // A body over the cap is refused before it is read.
  res = c.Post("/api/v1/runs/r-2/cancel", bearer, std::string(200 * 1024, ' '), "application/json");
  REQUIRE(res);
  CHECK(res->status == 413);
  CHECK(json::parse(res->body)["error"]["status"] == 413);  // under /api/v1: the error document

  // No such route: under /api/v1 the error document, elsewhere a line of text.
  res = c.Get("/api/v1/nothing-here", bearer);
  REQUIRE(res);
  CHECK(res->status == 404);
  CHECK(res->get_header_value("Content-Type") == "application/json");
  CHECK(json::parse(res->body)["error"]["code"] == "web.not_found");
  res = c.Get("/nothing-here", bearer);
  REQUIRE(res);
  CHECK(res->status == 404);
  CHECK(res->body.find("no such page: /nothing-here") != std::string::npos);
}

TEST_CASE("console: cancel asks for confirmation first; a read-only console changes nothing") {
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-1", Order{"lamp"}, store).interrupted());
  {
    Served s(store, {.user = "ana"});
    httplib::Client c = client(s);
    const httplib::Headers cookie{{"Cookie", sign_in(c, s.token())}};
    const std::string csrf = csrf_of(c.Get("/runs/r-1", cookie)->body);
    auto res = c.Post("/runs/r-1/cancel", cookie, "csrf=" + csrf + "&reason=wrong+item",
                      "application/x-www-form-urlencoded");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body.find("Yes, cancel it") != std::string::npos);
    CHECK(status_of(store, "r-1") == ag::RunStatus::WaitingApproval);
    res = c.Post("/runs/r-1/cancel", cookie, "csrf=" + csrf + "&reason=wrong+item&confirmed=yes",
                 "application/x-www-form-urlencoded");
    REQUIRE(res);
    CHECK(res->status == 303);
    CHECK(status_of(store, "r-1") == ag::RunStatus::Cancelled);
    CHECK(store.cancel_requests("r-1", 0).at(0).by == "ana");
  }
  REQUIRE(o.g.resume("r-1", store).interrupted());
  Served s(store, {.read_only = true, .user = "ana"});
  httplib::Client c = client(s);
  const httplib::Headers cookie{{"Cookie", sign_in(c, s.token())}};
  auto res = c.Get("/approvals", cookie);
  REQUIRE(res);
  CHECK(res->body.find("Approve</button>") == std::string::npos);
  CHECK(res->body.find("read-only") != std::string::npos);
  const std::string csrf = csrf_of(res->body);  // the sign-out form's
  const std::uint64_t seq = store.latest("r-1")->seq;
  res = c.Post(
      "/runs/r-1/decision", cookie,
      "csrf=" + csrf + "&request=" + ag::request_id(*store.latest("r-1")) + "&decision=approve",
      "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 403);
  res = c.Post("/api/v1/runs/r-1/cancel", {{"Authorization", "Bearer " + s.token()}}, "{}",
               "application/json");
  REQUIRE(res);
  CHECK(res->status == 403);
  CHECK(store.latest("r-1")->seq == seq);
}

TEST_CASE("console: fork from a checkpoint asks first and records the signed-in user") {
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-1", Order{"lamp"}, store).interrupted());
  Served s(store, {.user = "ana"});
  httplib::Client c = client(s);
  const httplib::Headers cookie{{"Cookie", sign_in(c, s.token())}};
  const std::string page = c.Get("/runs/r-1", cookie)->body;
  CHECK(page.find("id=\"fork\"") != std::string::npos);
  const std::string csrf = csrf_of(page);
  const std::string form = "csrf=" + csrf + "&seq=0&as=r-1b&reason=try+again";
  auto res = c.Post("/runs/r-1/fork", cookie, form, "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body.find("Yes, fork it") != std::string::npos);
  CHECK_FALSE(store.latest("r-1b"));  // nothing before the confirmation
  // Who forks is the signed-in user, never a field.
  res = c.Post("/runs/r-1/fork", cookie, form + "&by=mallory&confirmed=yes",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK_FALSE(store.latest("r-1b"));
  res = c.Post("/runs/r-1/fork", cookie, form + "&confirmed=yes",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 303);
  CHECK(res->get_header_value("Location") == "/runs/r-1b");
  const ag::Checkpoint first = *store.checkpoint("r-1b", 0);
  REQUIRE(first.forked_from.has_value());
  CHECK(first.forked_from->run_id == "r-1");
  CHECK(first.forked_from->seq == 0);
  CHECK(first.forked_from->by == "ana");
  CHECK(first.forked_from->reason == "try again");
  // The fork's page shows where it came from, linked.
  res = c.Get("/runs/r-1b", cookie);
  REQUIRE(res);
  CHECK(res->body.find("forked from <a href=\"/runs/r-1\">r-1</a> at 0 by ana") !=
        std::string::npos);
  // Again into the same id: 409, a missing checkpoint: 404, a bad id: 400; nothing written.
  res = c.Post("/runs/r-1/fork", cookie, form + "&confirmed=yes",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 409);
  res = c.Post("/runs/r-1/fork", cookie, "csrf=" + csrf + "&seq=99&as=r-1c",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 404);
  res = c.Post("/runs/r-1/fork", cookie, "csrf=" + csrf + "&seq=0&as=..%2Fx&confirmed=yes",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 400);
  // By the API: 201 with the new run's document, recorded as the token's user.
  const httplib::Headers bearer{{"Authorization", "Bearer " + s.token()}};
  res = c.Post("/api/v1/runs/r-1/fork", bearer, R"({"seq": 0, "as": "r-1d"})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 201);
  CHECK(json::parse(res->body) == ag::cli::run_document(store, "r-1d"));
  CHECK(store.checkpoint("r-1d", 0)->forked_from->by == "ana");
  res = c.Post("/api/v1/runs/r-1/fork", bearer, R"({"seq": -1, "as": "r-1e"})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(store.list_runs().size() == 3);
  // Checkpoint 0 is the run's start: the fork is queued there, and runs as its source did.
  CHECK(status_of(store, "r-1b") == ag::RunStatus::Queued);
  CHECK(o.g.resume("r-1b", store).interrupted());
  // Into an id that exists: refused before the confirmation is asked.
  res = c.Post("/runs/r-1/fork", cookie, "csrf=" + csrf + "&seq=0&as=r-1d",
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 409);

  // A read-only console forks nothing, by form or API.
  Served ro(store, {.read_only = true, .user = "ana"});
  httplib::Client rc = client(ro);
  const httplib::Headers ro_cookie{{"Cookie", sign_in(rc, ro.token())}};
  const std::string ro_page = rc.Get("/runs/r-1", ro_cookie)->body;
  CHECK(ro_page.find("id=\"fork\"") == std::string::npos);
  res = rc.Post("/runs/r-1/fork", ro_cookie,
                "csrf=" + csrf_of(ro_page) + "&seq=0&as=r-1f&confirmed=yes",
                "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 403);
  res = rc.Post("/api/v1/runs/r-1/fork", {{"Authorization", "Bearer " + ro.token()}},
                R"({"seq": 0, "as": "r-1f"})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 403);
  CHECK_FALSE(store.latest("r-1f"));
}

TEST_CASE("console: users file tokens; a proxy's user header only from loopback") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("trellis_console_" + web::Users::new_token());
  std::filesystem::create_directories(dir);
  const std::string ana = web::Users::new_token(), bob = web::Users::new_token();
  {
    std::ofstream f(dir / "users");
    f << "# reviewers\n"
      << web::Users::line_for("ana", ana) << "\n\n"
      << web::Users::line_for("bob", bob) << "\n";
  }
  ag::MemoryStore store;
  Orders o;
  REQUIRE(o.g.run("r-1", Order{"lamp"}, store).interrupted());
  {
    Served s(store, {.users_file = (dir / "users").string(), .trust_user_header = "X-User"});
    httplib::Client c = client(s);
    CHECK(s.console.login_url() == s.console.url() + "/login");  // no token made at start
    auto res = c.Get("/api/v1/approvals", {{"Authorization", "Bearer " + bob}});
    REQUIRE(res);
    CHECK(res->status == 200);
    // The client is on loopback: the header names the user; its forms carry a CSRF token.
    res = c.Get("/runs/r-1", {{"X-User", "carol"}});
    REQUIRE(res);
    REQUIRE(res->status == 200);
    CHECK(res->body.find("signed in as <b id=\"user\">carol</b>") != std::string::npos);
    const std::string csrf = csrf_of(res->body);
    res = c.Post(
        "/runs/r-1/decision", {{"X-User", "carol"}},
        "csrf=" + csrf + "&request=" + ag::request_id(*store.latest("r-1")) + "&decision=approve",
        "application/x-www-form-urlencoded");
    REQUIRE(res);
    CHECK(res->status == 303);
    CHECK(std::get<ag::Approve>(store.latest("r-1")->decision->given).reviewer == "carol");
  }
  // Bad users files: named in the error, nothing served.
  {
    std::ofstream f(dir / "bad");
    f << "ana sha256:1234\n";
  }
  CHECK_THROWS_AS(web::Console(store, {.port = 0, .users_file = (dir / "bad").string()}),
                  web::users_file_error);
  try {
    web::Console console(store, {.port = 0, .users_file = (dir / "bad").string()});
  } catch (const web::users_file_error& e) {
    CHECK(std::string(e.what()).find((dir / "bad").string() + ":1") != std::string::npos);
  }
  CHECK_THROWS_AS(web::Console(store, {.port = 0, .users_file = (dir / "missing").string()}),
                  web::users_file_error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("console: a bind beyond loopback needs TLS or --insecure-http; half a TLS pair") {
  ag::MemoryStore store;
  CHECK_THROWS_AS(web::Console(store, {.host = "0.0.0.0", .port = 0}), web::refused_option);
  CHECK_THROWS_AS(web::Console(store, {.port = 0, .tls_cert = "cert.pem"}), web::refused_option);
  CHECK_THROWS_AS(web::Console(store, {.port = 0,
                                       .tls_cert = "/nonexistent/cert.pem",
                                       .tls_key = "/nonexistent/key.pem"}),
                  web::refused_option);
  CHECK_THROWS_AS(web::Console(store, {.port = 70000}), web::refused_option);
  // Explicitly insecure: allowed (bound to every address).
  web::Console open(store, {.host = "0.0.0.0", .port = 0, .insecure_http = true});
  CHECK(open.port() > 0);
}
