// SPDX-License-Identifier: MIT
// The operator console (console.hpp): routes, authentication, CSRF, the pages and the API.

#include "trellis/web/console.hpp"

#include <httplib.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>

#include <trellis/io/environment.hpp>
#include <trellis/io/utc_time.hpp>

#include "html.hpp"
#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/operations.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/base/enumeration.hpp"
#include "trellis/cli/documents.hpp"
#include "trellis/web/errors.hpp"
#include "trellis/web/forms.hpp"
#include "trellis/web/users.hpp"

namespace trellis::web {

namespace ag = trellis::agent;
namespace cli = trellis::agent::cli;
using detail::escape;
using json = nlohmann::json;

namespace {

constexpr std::string_view kCookie = "trellis_session";

bool loopback(std::string_view host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost" ||
         (host.size() > 4 && host.substr(0, 4) == "127.");
}

std::string status_name(ag::RunStatus s) {
  return std::string(enumeration<ag::RunStatus>::name(s));
}

/// The HTTP status of an error a handler let out.
int http_status(const std::exception& e) {
  if (dynamic_cast<const ag::unknown_run*>(&e) || dynamic_cast<const ag::unknown_request*>(&e))
    return 404;
  if (dynamic_cast<const ag::request_superseded*>(&e) ||
      dynamic_cast<const ag::run_conflict*>(&e) || dynamic_cast<const ag::run_busy*>(&e) ||
      dynamic_cast<const ag::run_finished*>(&e) || dynamic_cast<const ag::graph_error*>(&e))
    return 409;
  if (dynamic_cast<const ag::request_expired*>(&e)) return 410;
  if (dynamic_cast<const bad_request*>(&e) || dynamic_cast<const ag::invalid_run_id*>(&e))
    return 400;
  return 500;
}

std::string code_of(const std::exception& e) {
  if (const auto* t = dynamic_cast<const trellis::error*>(&e)) return std::string(t->id());
  return "base.error";
}

std::string cookie_value(const httplib::Request& req, std::string_view name) {
  const std::string header = req.get_header_value("Cookie");
  std::string_view rest = header;
  while (!rest.empty()) {
    const std::size_t semi = rest.find(';');
    std::string_view part = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    const std::size_t eq = part.find('=');
    if (eq != std::string_view::npos && part.substr(0, eq) == name)
      return std::string(part.substr(eq + 1));
  }
  return {};
}

bool same_secret(const std::string& a, const std::string& b) {
  return !a.empty() && a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

/// The user a console without a users file signs in as, when ConsoleOptions names none.
std::string default_user() {
  const std::string user = trellis::detail::current_user();
  return user.empty() ? "operator" : user;
}

/// A "since" filter: ISO-8601 text as given, or a span back from now ("90s", "30m", "2h", "7d").
std::string since_text(const std::string& text) {
  if (text.empty()) return {};
  const char unit = text.back();
  const std::string digits = text.substr(0, text.size() - 1);
  if (!digits.empty() && digits.size() < 9 &&
      digits.find_first_not_of("0123456789") == std::string::npos &&
      std::string_view("smhdw").find(unit) != std::string_view::npos) {
    const long n = std::stol(digits);
    const long seconds = unit == 's'   ? n
                         : unit == 'm' ? n * 60
                         : unit == 'h' ? n * 3600
                         : unit == 'd' ? n * 86400
                                       : n * 604800;
    if (seconds > 100L * 366 * 86400)
      throw bad_request("trellis serve: 'since' reaches back more than 100 years");
    return trellis::detail::format_utc(std::chrono::system_clock::now() -
                                       std::chrono::seconds(seconds));
  }
  if (text.size() < 10 || text[4] != '-' || text[7] != '-')
    throw bad_request("trellis serve: 'since' is a time (2026-11-24T10:00:00Z) or a span (30m)");
  return text;
}

std::string pretty(const json& v) { return v.dump(2, ' ', false, json::error_handler_t::replace); }

}  // namespace

struct Console::Impl {
  ag::Store& store;
  ConsoleOptions opt;
  Users users;
  std::string start_token;  ///< without a users file: the token made at start
  std::string secret;       ///< this process's: CSRF tokens of header-authenticated users
  std::unique_ptr<httplib::Server> server;
  int port = 0;
  bool tls = false;
  std::vector<std::string> hosts;         ///< the Host headers accepted
  std::atomic<bool> stopping{false};      ///< stop() was called
  std::atomic<bool> serve_active{false};  ///< serve() is on its way into (or in) the loop
  bool have_dot = false;  ///< Graphviz's dot is on PATH (else pictures as Mermaid text)

  struct Session {
    std::string user, csrf;
    std::chrono::steady_clock::time_point used;
  };
  static constexpr std::size_t kMaxSessions = 10'000;
  static constexpr std::chrono::hours kIdle{12};
  std::mutex sessions_mutex;
  std::map<std::string, Session, std::less<>> sessions;

  /// Who made a request, and how.
  struct Who {
    std::string user;
    std::string csrf;     ///< what a form must carry (empty for a bearer token)
    bool bearer = false;  ///< authenticated by Authorization: Bearer (no CSRF needed)
  };

  Impl(ag::Store& s, ConsoleOptions o) : store(s), opt(std::move(o)) {}

  // --- authentication ------------------------------------------------------------------------

  std::optional<Who> who(const httplib::Request& req) {
    // The proxy's header: from a loopback peer, and exactly one copy (a proxy that appends
    // rather than replaces would otherwise let the client's own copy name the user).
    if (!opt.trust_user_header.empty() && loopback(req.remote_addr) &&
        req.get_header_value_count(opt.trust_user_header) == 1) {
      const std::string name = req.get_header_value(opt.trust_user_header.c_str());
      if (!name.empty()) {
        // The CSRF token of a header-authenticated user: SHA-256 of this process's secret and
        // the name (the hash of a users-file line), which nobody without the secret can make.
        const std::string line = Users::line_for("csrf", secret + ":" + name);
        return Who{name, line.substr(line.find(':') + 1), false};
      }
    }
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) {
      if (std::optional<std::string> user = users.find(auth.substr(7))) return Who{*user, {}, true};
      return std::nullopt;
    }
    const std::string id = cookie_value(req, kCookie);
    if (id.empty()) return std::nullopt;
    std::lock_guard lock(sessions_mutex);
    const auto it = sessions.find(id);
    if (it == sessions.end()) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    if (now - it->second.used > kIdle) {
      sessions.erase(it);
      return std::nullopt;
    }
    it->second.used = now;
    return Who{it->second.user, it->second.csrf, false};
  }

  /// A new session for `user`: its cookie header value.
  std::string sign_in(const std::string& user) {
    const std::string id = Users::new_token();
    {
      std::lock_guard lock(sessions_mutex);
      const auto now = std::chrono::steady_clock::now();
      if (sessions.size() >= kMaxSessions) {  // the idle ones go first, then the oldest used
        std::erase_if(sessions, [&](const auto& kv) { return now - kv.second.used > kIdle; });
        while (sessions.size() >= kMaxSessions)
          sessions.erase(std::min_element(
              sessions.begin(), sessions.end(),
              [](const auto& a, const auto& b) { return a.second.used < b.second.used; }));
      }
      sessions[id] = Session{user, Users::new_token(), now};
    }
    std::string cookie = std::string(kCookie) + "=" + id + "; Path=/; HttpOnly; SameSite=Strict";
    if (tls) cookie += "; Secure";
    return cookie;
  }

  void sign_out(const httplib::Request& req) {
    const std::string id = cookie_value(req, kCookie);
    std::lock_guard lock(sessions_mutex);
    sessions.erase(id);
  }

  /// Whether a browser's request comes from this console's own pages: its Origin, when sent, is
  /// one of the accepted hosts; without one, Sec-Fetch-Site (when sent) is same-origin or none.
  /// A client that is not a browser sends neither.
  bool same_origin(const httplib::Request& req) const {
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty()) {
      const std::size_t scheme = origin.find("://");
      if (scheme == std::string::npos) return false;
      return std::find(hosts.begin(), hosts.end(), origin.substr(scheme + 3)) != hosts.end();
    }
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    return site.empty() || site == "same-origin" || site == "none";
  }

  // --- responses -----------------------------------------------------------------------------

  detail::Frame frame(std::string title, const Who& w) {
    detail::Frame f{std::move(title), w.user, w.csrf, opt.read_only, 0};
    f.waiting = store.count_runs(ag::RunFilter{.status = ag::RunStatus::WaitingApproval});
    return f;
  }

  static void html(httplib::Response& res, std::string body, int status = 200) {
    res.status = status;
    res.set_content(std::move(body), "text/html; charset=utf-8");
  }

  static void json_reply(httplib::Response& res, const json& doc, int status = 200) {
    res.status = status;
    res.set_content(doc.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  }

  void error_page(httplib::Response& res, const Who* w, int status, const std::string& message) {
    const std::string body = "<h1>Refused</h1><p class=\"error\" id=\"error\">" + escape(message) +
                             "</p><p><a href=\"/runs\">Runs</a> · <a href=\"/approvals\">"
                             "Approvals</a></p>";
    detail::Frame f{.title = "Refused"};
    if (w) {
      try {
        f = frame("Refused", *w);
      } catch (const std::exception&) {  // the store fails too: the page without the count
        f = detail::Frame{"Refused", w->user, w->csrf, opt.read_only, 0};
      }
    }
    html(res, detail::page(f, body), status);
  }

  static void api_error(httplib::Response& res, int status, const std::string& code,
                        const std::string& message) {
    json doc = cli::document("error");
    doc["error"] = {{"code", code}, {"message", message}, {"status", status}};
    json_reply(res, doc, status);
  }

  /// A refusal before (or outside) the routes: the API's error document for a request under
  /// /api/v1, a line of text otherwise.
  static void refuse(const httplib::Request& req, httplib::Response& res, int status,
                     const std::string& code, const std::string& message) {
    if (req.path == "/api/v1" || req.path.rfind("/api/v1/", 0) == 0)
      return api_error(res, status, code, message);
    res.status = status;
    res.set_content(message + "\n", "text/plain; charset=utf-8");
  }

  // --- the pages -----------------------------------------------------------------------------

  std::string runs_body(const Form& q) {
    ag::RunFilter filter;
    const std::string status = q.value("status");
    if (!status.empty()) {
      filter.status = enumeration<ag::RunStatus>::from_name(status);
      if (!filter.status) throw bad_request("trellis serve: no run status '" + status + "'");
    }
    filter.since = since_text(q.value("since"));
    filter.node = q.value("node");
    filter.graph = q.value("graph");
    filter.after = q.value("after");
    filter.limit = opt.page_size + 1;  // one more: whether a next page exists
    const std::vector<ag::RunSummary> runs = store.list_runs(filter);
    std::string body = "<h1>Runs</h1><form method=\"get\" action=\"/runs\" id=\"filters\">";
    body += "<label>Status <select name=\"status\"><option value=\"\">any</option>";
    for (const ag::RunStatus s : enumeration<ag::RunStatus>::values) {
      const std::string n = status_name(s);
      body += "<option" + std::string(n == status ? " selected" : "") + ">" + n + "</option>";
    }
    body += "</select></label> <label>Graph <input name=\"graph\" value=\"" + escape(filter.graph) +
            "\" placeholder=\"fingerprint\"></label> <label>Node <input name=\"node\" value=\"" +
            escape(filter.node) + "\"></label> <label>Since <input name=\"since\" value=\"" +
            escape(q.value("since")) +
            "\" placeholder=\"2h or 2026-11-24\"></label> "
            "<button type=\"submit\">Filter</button></form>";
    body +=
        "<table id=\"runs\"><thead><tr><th>Run</th><th>Status</th><th>Node</th><th>Steps</th>"
        "<th>Updated</th><th>Waiting approval</th><th>Graph</th></tr></thead><tbody>";
    std::size_t shown = 0;
    std::string last;
    bool more = false;
    for (const ag::RunSummary& r : runs) {
      if (shown == opt.page_size) {
        more = true;
        break;
      }
      ++shown;
      last = r.run_id;
      const std::string st = status_name(r.status);
      body += "<tr><td><a href=\"/runs/" + escape(url_encode(r.run_id)) + "\">" + escape(r.run_id) +
              "</a></td><td class=\"status-" + st + "\">" + st;
      if (r.reason != ag::Reason::none)
        body += " (" + escape(enumeration<ag::Reason>::name(r.reason)) + ")";
      body += "</td><td>" + escape(r.node) + "</td><td>" + std::to_string(r.step) + "</td><td>" +
              escape(r.updated_at) + "</td><td>" +
              (r.request.empty() ? "" : "request " + escape(r.request)) + "</td><td>" +
              escape(r.fingerprint.substr(0, 12)) + "</td></tr>";
    }
    body += "</tbody></table>";
    if (shown == 0) body += "<p class=\"note\">No runs match.</p>";
    if (more) {
      std::string next = "/runs?after=" + url_encode(last);
      for (const char* k : {"status", "graph", "node", "since"})
        if (!q.value(k).empty()) next += std::string("&") + k + "=" + url_encode(q.value(k));
      body += "<p><a id=\"next\" href=\"" + escape(next) + "\">Next " +
              std::to_string(opt.page_size) + " runs</a></p>";
    }
    return body;
  }

  std::string decide_forms(const std::string& run, const std::string& request, const json& proposed,
                           const Who& w, const std::string& back) {
    if (opt.read_only) return "<p class=\"note\">Read-only console: no decisions here.</p>";
    const std::string action = "/runs/" + escape(url_encode(run)) + "/decision";
    const std::string common =
        "<input type=\"hidden\" name=\"csrf\" value=\"" + escape(w.csrf) +
        "\"><input type=\"hidden\" name=\"request\" value=\"" + escape(request) +
        "\"><input type=\"hidden\" name=\"back\" value=\"" + escape(back) + "\">";
    std::string out = "<div class=\"decide\">";
    out += "<form method=\"post\" action=\"" + action + "\" class=\"approve\">" + common +
           "<input type=\"hidden\" name=\"decision\" value=\"approve\"><input name=\"comment\" "
           "placeholder=\"comment (optional)\"> <button type=\"submit\">Approve</button></form>";
    out += "<form method=\"post\" action=\"" + action + "\" class=\"reject\">" + common +
           "<input type=\"hidden\" name=\"decision\" value=\"reject\"><input name=\"reason\" "
           "placeholder=\"reason (required)\" required> <button type=\"submit\">Reject</button>"
           "</form>";
    out += "<form method=\"post\" action=\"" + action + "\" class=\"input\">" + common +
           "<input type=\"hidden\" name=\"decision\" value=\"input\"><textarea name=\"input\">" +
           escape(proposed.is_null() ? std::string() : proposed.dump()) +
           "</textarea> <button type=\"submit\">Give input</button></form></div>";
    return out;
  }

  std::string request_block(const std::string& run, const json& request, const Who& w,
                            const std::string& back) {
    std::string out = "<div class=\"request\" data-run=\"" + escape(run) + "\" data-request=\"" +
                      escape(request.value("id", "")) + "\">";
    out += "<p><b>Request " + escape(request.value("id", "")) + "</b> of run <a href=\"/runs/" +
           escape(url_encode(run)) + "\">" + escape(run) + "</a>, asked by " +
           escape(request.value("asked_by", "")) + ": " + escape(request.value("reason", "")) +
           "</p><table>";
    const auto row = [&](const char* label, const std::string& value) {
      out += std::string("<tr><th>") + label + "</th><td>" + value + "</td></tr>";
    };
    const auto text = [](const json& v) {
      return escape(v.is_string() ? v.get<std::string>()
                                  : v.dump(-1, ' ', false, json::error_handler_t::replace));
    };
    if (!request["action"].is_null()) row("What will happen", text(request["action"]));
    if (!request["proposed_input"].is_null())
      row("Proposed input",
          "<pre class=\"proposed\">" + escape(pretty(request["proposed_input"])) + "</pre>");
    if (!request["risk_reason"].is_null()) row("Risk", text(request["risk_reason"]));
    row("Expires", request["expires_at"].is_null()
                       ? std::string("never")
                       : escape(request["expires_at"].get<std::string>()));
    out += "</table>";
    out += decide_forms(run, request.value("id", ""), request["proposed_input"], w, back);
    out += "</div>";
    return out;
  }

  /// The form that records whether the run's effect in doubt happened (reconcile_run).
  std::string reconcile_form(const std::string& run, const Who& w) {
    std::string keys;
    for (const ag::EffectRecord& r : store.effects(run))
      if (r.status == ag::EffectStatus::started && r.policy == ag::EffectPolicy::at_most_once)
        keys += "<option value=\"" + escape(r.key) + "\">" + escape(r.name) + " (" +
                escape(r.key.substr(0, 12)) + ")</option>";
    if (keys.empty()) return {};
    return "<h2>An effect in doubt</h2><form method=\"post\" id=\"reconcile\" action=\"/runs/" +
           escape(url_encode(run)) +
           "/reconcile\"><input type=\"hidden\" name=\"csrf\" "
           "value=\"" +
           escape(w.csrf) + "\"><label>Effect <select name=\"key\">" + keys +
           "</select></label> <label><input type=\"radio\" name=\"happened\" value=\"yes\" "
           "required> it happened</label> <label><input type=\"radio\" name=\"happened\" "
           "value=\"no\"> it did not</label><br><label>Its result (JSON, when it happened) "
           "<textarea name=\"result\">null</textarea></label><br><input name=\"reason\" "
           "placeholder=\"how you know (required)\" required> <button type=\"submit\">"
           "Record…</button></form>";
  }

  /// The confirmation of the change `form` asks of run `run` (works without JavaScript): `what`
  /// (HTML), then the same form again with confirmed=yes (button `yes`), or No back to the run.
  void confirm(httplib::Response& res, const Who& w, const std::string& run,
               const std::string& action, const std::string& title, const std::string& what,
               const std::string& yes, const Form& form) {
    std::string body = "<h1>" + escape(title) + "?</h1><p>" + what +
                       "</p><form method=\"post\" id=\"confirm\" action=\"/runs/" +
                       escape(url_encode(run)) + "/" + action + "\">";
    for (const auto& [k, v] : form.fields())
      if (k != "confirmed")
        body += "<input type=\"hidden\" name=\"" + escape(k) + "\" value=\"" + escape(v) + "\">";
    body += "<input type=\"hidden\" name=\"confirmed\" value=\"yes\"><button type=\"submit\">" +
            escape(yes) + "</button> <a href=\"/runs/" + escape(url_encode(run)) +
            "\">No</a></form>";
    html(res, detail::page(frame(title, w), body));
  }

  /// The form that starts a new run from a checkpoint of this one (fork_run): one of the
  /// checkpoints retention kept (oldest to newest), the newest proposed.
  std::string fork_form(const std::string& run, std::uint64_t oldest, std::uint64_t newest,
                        const Who& w) {
    return "<h2>Fork</h2><form method=\"post\" id=\"fork\" action=\"/runs/" +
           escape(url_encode(run)) + "/fork\"><input type=\"hidden\" name=\"csrf\" value=\"" +
           escape(w.csrf) + "\"><label>From checkpoint <input name=\"seq\" type=\"number\" min=\"" +
           std::to_string(oldest) + "\" max=\"" + std::to_string(newest) + "\" value=\"" +
           std::to_string(newest) +
           "\" required></label> <label>as run <input name=\"as\" value=\"" +
           escape(run + "-fork") +
           "\" required></label> <input name=\"reason\" "
           "placeholder=\"why fork\"> <button type=\"submit\">Fork…</button></form>";
  }

  std::string run_body(const std::string& run, const Who& w) {
    const json doc = cli::run_document(store, run);
    const json& sum = doc["run"];
    const std::string st = sum["status"].get<std::string>();
    std::string body = "<h1>Run " + escape(run) + "</h1><table id=\"summary\">";
    const auto row = [&](const char* label, const std::string& value) {
      body += std::string("<tr><th>") + label + "</th><td>" + value + "</td></tr>";
    };
    row("Status",
        "<span id=\"status\" class=\"status-" + escape(st) + "\">" + escape(st) + "</span>" +
            (sum["reason"] == "none" ? "" : " (" + escape(sum["reason"].get<std::string>()) + ")"));
    if (!doc["detail"].get<std::string>().empty())
      row("Detail", escape(doc["detail"].get<std::string>()));
    row("Node", escape(sum["node"].get<std::string>()));
    row("Steps", std::to_string(sum["step"].get<std::uint64_t>()));
    row("Created", escape(sum["created_at"].get<std::string>()));
    row("Updated", escape(sum["updated_at"].get<std::string>()));
    row("Graph", escape(sum["fingerprint"].get<std::string>()));
    body += "</table><h2>State</h2><pre id=\"state\">" + escape(pretty(doc["state"])) + "</pre>";
    if (!doc["request"].is_null())
      body += "<h2>Waiting for a decision</h2>" +
              request_block(run, doc["request"], w, "/runs/" + url_encode(run));
    if (!opt.read_only && st != "Succeeded" && st != "Failed" && st != "Cancelled")
      body += "<form method=\"post\" action=\"/runs/" + escape(url_encode(run)) +
              "/cancel\" id=\"cancel\"><input type=\"hidden\" name=\"csrf\" value=\"" +
              escape(w.csrf) +
              "\"><input name=\"reason\" placeholder=\"why cancel\"> <button type=\"submit\">"
              "Cancel run…</button></form>";

    // The picture: SVG drawn by Graphviz (an <img>: a picture, never a script), else the
    // Mermaid text.
    body += "<h2>Graph</h2>";
    if (have_dot)
      body += "<img id=\"picture\" alt=\"the run's path over its graph\" src=\"/runs/" +
              escape(url_encode(run)) + "/picture.svg\">";
    else
      body += "<pre id=\"picture-text\">" + escape(cli::draw_run(store, run, "mermaid").text) +
              "</pre><p class=\"note\">(Graphviz's dot is not installed: the Mermaid text.)</p>";

    // A reconciliation, when the run failed with an effect in doubt.
    if (!opt.read_only && sum["reason"] == "reconciliation_required")
      body += reconcile_form(run, w);

    // The timeline: every checkpoint, with the state's changes.
    const json history = cli::history_document(store, run, true);
    body +=
        "<h2>Timeline</h2><table id=\"timeline\"><thead><tr><th>#</th><th>Status</th>"
        "<th>Node</th><th>Step</th><th>At</th><th>Changes</th></tr></thead><tbody>";
    for (const json& cp : history["checkpoints"]) {
      std::string changes;
      for (const json& c : cp["changes"])
        changes +=
            escape(c["path"].get<std::string>().empty() ? "/" : c["path"].get<std::string>()) +
            ": " + escape(c["old"].dump()) + " → " + escape(c["new"].dump()) + "<br>";
      std::string note;
      if (!cp["decision"].is_null())
        note = " (" + escape(cp["decision"]["kind"].get<std::string>()) + " by " +
               escape(cp["decision"]["by"].get<std::string>()) + ")";
      if (const auto f = cp.find("forked_from"); f != cp.end()) {
        const std::string from = (*f)["run_id"].get<std::string>();
        const std::string by = (*f)["by"].get<std::string>();
        note += " (forked from <a href=\"/runs/" + escape(url_encode(from)) + "\">" + escape(from) +
                "</a> at " + std::to_string((*f)["seq"].get<std::uint64_t>()) +
                (by.empty() ? "" : " by " + escape(by)) + ")";
      }
      body += "<tr><td>" + std::to_string(cp["seq"].get<std::uint64_t>()) + "</td><td>" +
              escape(cp["status"].get<std::string>()) + note + "</td><td>" +
              escape(cp["node"].get<std::string>()) + "</td><td>" +
              std::to_string(cp["step"].get<std::uint64_t>()) + "</td><td>" +
              escape(cp["created_at"].get<std::string>()) + "</td><td>" + changes + "</td></tr>";
    }
    body += "</tbody></table>";
    if (!opt.read_only && !history["checkpoints"].empty())
      body += fork_form(run, history["checkpoints"].front()["seq"].get<std::uint64_t>(),
                        history["checkpoints"].back()["seq"].get<std::uint64_t>(), w);

    const json effects = cli::effects_document(store, run);
    body +=
        "<h2>Effects</h2><table id=\"effects\"><thead><tr><th>Name</th><th>Policy</th>"
        "<th>Status</th><th>Node</th><th>Step</th><th>Key</th><th>Receipt</th></tr></thead>"
        "<tbody>";
    for (const json& e : effects["effects"])
      body += "<tr><td>" + escape(e["name"].get<std::string>()) + "</td><td>" +
              escape(e["policy"].get<std::string>()) + "</td><td>" +
              escape(e["status"].get<std::string>()) + "</td><td>" +
              escape(e["node"].get<std::string>()) + "</td><td>" + e["step"].dump() +
              "</td><td><code>" + escape(e["key"].get<std::string>().substr(0, 16)) +
              "</code></td><td>" + escape(e["result"].dump()) + "</td></tr>";
    body += "</tbody></table>";

    const json events = cli::events_document(store, run, 0);
    std::uint64_t after = 0;
    body += "<h2>Events</h2><table id=\"events\" data-run=\"" + escape(run) + "\" data-after=\"";
    std::string rows;
    for (const json& e : events["events"]) {
      after = std::max(after, e["seq"].get<std::uint64_t>());
      const json& ev = e["event"];
      rows += "<tr><td>" + e["seq"].dump() + "</td><td>" + escape(ev.value("at", "")) +
              "</td><td>" + escape(ev.value("kind", "")) + "</td><td>" +
              escape(ev.value("node", "")) + "</td><td>" +
              (ev.contains("detail") ? escape(ev["detail"].dump()) : std::string()) + "</td></tr>";
    }
    body += std::to_string(after) +
            "\"><thead><tr><th>#</th><th>At</th><th>Kind</th><th>Node</th><th>Detail</th></tr>"
            "</thead><tbody>" +
            rows +
            "</tbody></table><p class=\"note\">New events appear as they come "
            "(with JavaScript on; reload otherwise).</p>";
    return body;
  }

  std::string approvals_body(const Who& w) {
    const json doc = cli::approvals_document(ag::pending_approvals(store));
    std::string body = "<h1>Approvals</h1>";
    if (doc["approvals"].empty()) body += "<p class=\"note\" id=\"none\">Nothing waits.</p>";
    for (const json& a : doc["approvals"])
      body += request_block(a["run_id"].get<std::string>(), a, w, "/approvals");
    return body;
  }

  // --- routing -------------------------------------------------------------------------------

  /// Runs `body` for an authenticated request of a page; signs the visitor in first.
  template <class F>
  httplib::Server::Handler page_route(F body) {
    return [this, body](const httplib::Request& req, httplib::Response& res) {
      const std::optional<Who> w = who(req);
      if (!w) {
        res.set_redirect("/login");
        return;
      }
      try {
        body(req, res, *w);
      } catch (const std::exception& e) {
        error_page(res, &*w, http_status(e), e.what());
      }
    };
  }

  /// A page's change: authenticated, CSRF-checked, refused when read-only.
  template <class F>
  httplib::Server::Handler post_route(F body) {
    return post_route_any([this, body](const httplib::Request& req, httplib::Response& res,
                                       const Who& w, const Form& form) {
      if (opt.read_only) {
        error_page(res, &w, 403, "trellis serve: the console is read-only");
        return;
      }
      body(req, res, w, form);
    });
  }

  template <class F>
  httplib::Server::Handler api_route(F body, bool change = false) {
    return [this, body, change](const httplib::Request& req, httplib::Response& res) {
      const std::optional<Who> w = who(req);
      if (!w)
        return api_error(res, 401, "web.unauthenticated",
                         "trellis serve: sign in first "
                         "(Authorization: Bearer TOKEN)");
      if (change && !w->bearer && !same_secret(req.get_header_value("X-CSRF-Token"), w->csrf))
        return api_error(res, 403, "web.csrf",
                         "trellis serve: a change by a session needs its "
                         "X-CSRF-Token header");
      if (change && opt.read_only)
        return api_error(res, 403, "web.read_only", "trellis serve: the console is read-only");
      try {
        body(req, res, *w);
      } catch (const std::exception& e) {
        api_error(res, http_status(e), code_of(e), e.what());
      }
    };
  }

  static Form query(const httplib::Request& req) {
    const std::size_t q = req.target.find('?');
    return q == std::string::npos ? Form() : parse_form(std::string_view(req.target).substr(q + 1));
  }

  static std::uint64_t number(const std::string& text, const char* field) {
    if (text.empty()) return 0;
    if (text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
      throw bad_request(std::string("trellis serve: '") + field + "' is a number");
    return std::stoull(text);
  }

  void routes() {
    httplib::Server& s = *server;
    s.set_payload_max_length(opt.max_body);
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      using R = httplib::Server::HandlerResponse;
      const std::string host = req.get_header_value("Host");
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
        refuse(
            req, res, 421, "web.host",
            "trellis serve: the Host header '" + host + "' is not this console's address; refused");
        return R::Handled;
      }
      // Bodies: only plain ones of a declared length within the cap (checked here, before
      // httplib reads a byte of the body: a chunked or compressed body could exceed it).
      if (req.has_header("Transfer-Encoding")) {
        refuse(req, res, 411, "web.body",
               "trellis serve: a body must have a Content-Length (no chunks)");
        return R::Handled;
      }
      if (req.has_header("Content-Encoding")) {
        refuse(req, res, 415, "web.body", "trellis serve: compressed bodies are refused");
        return R::Handled;
      }
      if (req.method == "POST") {
        const std::string length = req.get_header_value("Content-Length");
        if (length.empty() || length.size() > 12 ||
            length.find_first_not_of("0123456789") != std::string::npos) {
          refuse(req, res, 411, "web.body", "trellis serve: a POST needs a Content-Length");
          return R::Handled;
        }
        if (std::stoull(length) > opt.max_body) {
          refuse(req, res, 413, "web.body",
                 "trellis serve: the body is over " + std::to_string(opt.max_body) + " bytes");
          return R::Handled;
        }
      }
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("X-Frame-Options", "DENY");
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_header("Content-Security-Policy",
                     "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; "
                     "form-action 'self'; frame-ancestors 'none'");
      res.set_header("Cache-Control", "no-store");
      return httplib::Server::HandlerResponse::Unhandled;
    });
    s.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
          refuse(req, res, 500, "web.internal", "trellis serve: internal error");
        });
    // httplib's own answers (no route: 404; a method without a route: 405, ...) have no body:
    // the API's error document under /api/v1, a line of text elsewhere.
    s.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          refuse(req, res, res.status, res.status == 404 ? "web.not_found" : "web.refused",
                 res.status == 404 ? "trellis serve: no such page: " + req.path
                                   : "trellis serve: refused (" + std::to_string(res.status) + ")");
          return httplib::Server::HandlerResponse::Handled;
        }));

    s.Get("/static/console.css", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(detail::stylesheet()), "text/css");
    });
    s.Get("/static/console.js", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(detail::script()), "application/javascript");
    });

    // Signing in and out.
    const auto login_form = [](httplib::Response& res, int status, const std::string& why) {
      std::string body = "<h1>Sign in</h1>";
      if (!why.empty()) body += "<p class=\"error\" id=\"error\">" + escape(why) + "</p>";
      body +=
          "<form method=\"post\" action=\"/login\"><label>Token <input type=\"password\" "
          "name=\"token\" autocomplete=\"off\"></label> <button type=\"submit\">Sign in"
          "</button></form>";
      html(res, detail::page(detail::Frame{.title = "Sign in"}, body), status);
    };
    const auto try_login = [this, login_form](const std::string& token, httplib::Response& res) {
      if (const std::optional<std::string> user = users.find(token)) {
        res.set_header("Set-Cookie", sign_in(*user));
        res.set_redirect("/runs", 303);
      } else {
        login_form(res, 401, "trellis serve: that token is not one of this console's");
      }
    };
    s.Get("/login",
          [this, login_form, try_login](const httplib::Request& req, httplib::Response& res) {
            try {
              // Only the token made at start signs in from a URL (the one printed); a users-file
              // token is typed into the form, so another site cannot sign a visitor in as itself.
              const Form q = query(req);
              if (const std::optional<std::string> token = q.get("token");
                  token && same_secret(*token, start_token))
                return try_login(*token, res);
              login_form(res, 200, "");
            } catch (const bad_request& e) {
              login_form(res, 400, e.what());
            }
          });
    s.Post("/login", [this, try_login, login_form](const httplib::Request& req,
                                                   httplib::Response& res) {
      try {
        if (!same_origin(req)) {
          login_form(res, 403, "trellis serve: a sign-in must come from this console's page");
          return;
        }
        try_login(parse_form(req.body).value("token"), res);
      } catch (const bad_request& e) {
        login_form(res, 400, e.what());
      }
    });
    s.Post("/logout", post_route_any([this](const httplib::Request& req, httplib::Response& res,
                                            const Who&, const Form&) {
             sign_out(req);
             res.set_header("Set-Cookie", std::string(kCookie) + "=; Path=/; Max-Age=0");
             res.set_redirect("/login", 303);
           }));

    s.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/runs"); });
    s.Get("/runs",
          page_route([this](const httplib::Request& req, httplib::Response& res, const Who& w) {
            const std::string body = runs_body(query(req));
            html(res, detail::page(frame("Runs", w), body));
          }));
    s.Get(R"(/runs/([^/]+)/picture\.svg)",
          page_route([this](const httplib::Request& req, httplib::Response& res, const Who&) {
            const std::string run = req.matches[1];
            try {
              res.set_content(cli::draw_run(store, run, "svg").text, "image/svg+xml");
            } catch (const ag::store_error&) {  // no Graphviz: the Mermaid text, as an SVG of text
              const std::string text = cli::draw_run(store, run, "mermaid").text;
              std::string svg =
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"" +
                  std::to_string(20 + 16 * std::count(text.begin(), text.end(), '\n')) +
                  "\"><text font-family=\"monospace\" font-size=\"12\">";
              int line = 0;
              for (std::size_t at = 0; at < text.size();) {
                const std::size_t nl = std::min(text.find('\n', at), text.size());
                svg += "<tspan x=\"8\" y=\"" + std::to_string(16 + 16 * line++) + "\">" +
                       escape(text.substr(at, nl - at)) + "</tspan>";
                at = nl + 1;
              }
              res.set_content(svg + "</text></svg>", "image/svg+xml");
            }
          }));
    s.Get(R"(/runs/([^/]+))",
          page_route([this](const httplib::Request& req, httplib::Response& res, const Who& w) {
            const std::string run = req.matches[1];
            const std::string body = run_body(run, w);
            html(res, detail::page(frame("Run " + run, w), body));
          }));
    s.Get("/approvals",
          page_route([this](const httplib::Request&, httplib::Response& res, const Who& w) {
            const std::string body = approvals_body(w);
            html(res, detail::page(frame("Approvals", w), body));
          }));
    s.Post(R"(/runs/([^/]+)/decision)",
           post_route([this](const httplib::Request& req, httplib::Response& res, const Who& w,
                             const Form& form) {
             const std::string run = req.matches[1];
             const DecisionAsk ask = decision_from_form(form, w.user);
             ag::record_decision(store, run, ask.request, ask.decision);
             const std::string back = form.value("back");
             res.set_redirect(back == "/approvals" ? back : "/runs/" + url_encode(run), 303);
           }));
    s.Post(R"(/runs/([^/]+)/cancel)",
           post_route([this](const httplib::Request& req, httplib::Response& res, const Who& w,
                             const Form& form) {
             const std::string run = req.matches[1];
             const CancelAsk ask = cancel_from_form(form);
             if (form.value("confirmed") != "yes")
               return confirm(res, w, run, "cancel", "Cancel run " + run,
                              "The run stops between steps and stays resumable.", "Yes, cancel it",
                              form);
             ag::cancel_run(store, run, w.user, ask.reason);
             res.set_redirect("/runs/" + url_encode(run), 303);
           }));

    s.Post(R"(/runs/([^/]+)/reconcile)",
           post_route([this](const httplib::Request& req, httplib::Response& res, const Who& w,
                             const Form& form) {
             const std::string run = req.matches[1];
             const ag::Reconciliation r = reconciliation_from_form(form, w.user);
             if (form.value("confirmed") != "yes")
               return confirm(res, w, run, "reconcile", "Record for run " + run,
                              "Effect <code>" + escape(r.key) + "</code> " +
                                  (r.happened ? "happened, with result <code>" +
                                                    escape(r.result.dump()) + "</code>"
                                              : std::string("did not happen")) +
                                  ", because: " + escape(r.reason) +
                                  ". The run reopens; a resume continues from this receipt.",
                              "Yes, record it", form);
             ag::reconcile_run(store, run, r);
             res.set_redirect("/runs/" + url_encode(run), 303);
           }));

    s.Post(R"(/runs/([^/]+)/fork)",
           post_route([this](const httplib::Request& req, httplib::Response& res, const Who& w,
                             const Form& form) {
             const std::string run = req.matches[1];
             const ForkAsk ask = fork_from_form(form);
             if (form.value("confirmed") != "yes") {  // ask first (works without JavaScript)
               // What the fork would refuse, refused before asking.
               if (!store.checkpoint(run, ask.seq))
                 throw ag::unknown_run("trellis serve: run '" + run + "' has no checkpoint " +
                                       std::to_string(ask.seq));
               ag::check_run_id(ask.as);
               if (store.latest(ask.as))
                 throw ag::graph_error("trellis serve: run '" + ask.as +
                                       "' already exists; fork into a new id");
               return confirm(
                   res, w, run, "fork", "Fork run " + run,
                   "A new run <code>" + escape(ask.as) + "</code> starts from checkpoint " +
                       std::to_string(ask.seq) + " of " + escape(run) +
                       " (its state and next node), recorded as forked by " + escape(w.user) +
                       (ask.reason.empty() ? "" : ", because: " + escape(ask.reason)) +
                       ". It runs when a worker or its program picks it up.",
                   "Yes, fork it", form);
             }
             ag::fork_run(store, run, ask.seq, ask.as, w.user, ask.reason);
             res.set_redirect("/runs/" + url_encode(ask.as), 303);
           }));

    // The API: the `trellis` command's -o json documents.
    s.Get("/api/v1/runs",
          api_route([this](const httplib::Request& req, httplib::Response& res, const Who&) {
            const Form q = query(req);
            ag::RunFilter filter;
            if (const std::string st = q.value("status"); !st.empty()) {
              filter.status = enumeration<ag::RunStatus>::from_name(st);
              if (!filter.status) throw bad_request("trellis serve: no run status '" + st + "'");
            }
            filter.since = since_text(q.value("since"));
            filter.node = q.value("node");
            filter.graph = q.value("graph");
            filter.after = q.value("after");
            filter.limit = static_cast<std::size_t>(
                std::min<std::uint64_t>(number(q.value("limit"), "limit"), SIZE_MAX));
            res.set_content(cli::runs_document_text(store.list_runs(filter)), "application/json");
          }));
    s.Get(R"(/api/v1/runs/([^/]+))",
          api_route([this](const httplib::Request& req, httplib::Response& res, const Who&) {
            json_reply(res, cli::run_document(store, std::string(req.matches[1])));
          }));
    s.Get(R"(/api/v1/runs/([^/]+)/history)",
          api_route([this](const httplib::Request& req, httplib::Response& res, const Who&) {
            json_reply(res, cli::history_document(store, std::string(req.matches[1]), true));
          }));
    s.Get(R"(/api/v1/runs/([^/]+)/events)",
          api_route([this](const httplib::Request& req, httplib::Response& res, const Who&) {
            const std::uint64_t after = number(query(req).value("after"), "after");
            json_reply(res, cli::events_document(store, std::string(req.matches[1]), after));
          }));
    s.Get(R"(/api/v1/runs/([^/]+)/effects)",
          api_route([this](const httplib::Request& req, httplib::Response& res, const Who&) {
            json_reply(res, cli::effects_document(store, std::string(req.matches[1])));
          }));
    s.Get("/api/v1/approvals",
          api_route([this](const httplib::Request&, httplib::Response& res, const Who&) {
            json_reply(res, cli::approvals_document(ag::pending_approvals(store)));
          }));
    s.Post(R"(/api/v1/runs/([^/]+)/decision)",
           api_route(
               [this](const httplib::Request& req, httplib::Response& res, const Who& w) {
                 const std::string run = req.matches[1];
                 const DecisionAsk ask = decision_from_json(req.body, w.user);
                 ag::record_decision(store, run, ask.request, ask.decision);
                 json_reply(res, cli::run_document(store, run));
               },
               true));
    s.Post(R"(/api/v1/runs/([^/]+)/fork)",
           api_route(
               [this](const httplib::Request& req, httplib::Response& res, const Who& w) {
                 const ForkAsk ask = fork_from_json(req.body);
                 ag::fork_run(store, std::string(req.matches[1]), ask.seq, ask.as, w.user,
                              ask.reason);
                 json_reply(res, cli::run_document(store, ask.as), 201);
               },
               true));
    s.Post(R"(/api/v1/runs/([^/]+)/cancel)",
           api_route(
               [this](const httplib::Request& req, httplib::Response& res, const Who& w) {
                 const std::string run = req.matches[1];
                 ag::cancel_run(store, run, w.user, cancel_from_json(req.body).reason);
                 json_reply(res, cli::run_document(store, run));
               },
               true));
  }

  /// post_route, but allowed on a read-only console (signing out).
  template <class F>
  httplib::Server::Handler post_route_any(F body) {
    return page_route(
        [this, body](const httplib::Request& req, httplib::Response& res, const Who& w) {
          const Form form = parse_form(req.body);
          if (w.bearer || !same_secret(form.value("csrf"), w.csrf)) {
            error_page(res, &w, 403,
                       "trellis serve: this form has no valid CSRF token; reload the page and try "
                       "again");
            return;
          }
          body(req, res, w, form);
        });
  }
};

Console::Console(ag::Store& store, ConsoleOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {
  Impl& m = *impl_;
  ConsoleOptions& o = m.opt;
  if (o.port < 0 || o.port > 65535)
    throw refused_option("trellis serve: --port " + std::to_string(o.port) +
                         " is not a port (0 to 65535)");
  if (o.tls_cert.empty() != o.tls_key.empty())
    throw refused_option("trellis serve: TLS needs both --tls-cert and --tls-key");
  m.tls = !o.tls_cert.empty();
  if (!loopback(o.host) && !m.tls && !o.insecure_http)
    throw refused_option("trellis serve: binding " + o.host +
                         " (not loopback) needs TLS (--tls-cert FILE --tls-key FILE) or, behind "
                         "a proxy that provides it, --insecure-http");
  if (o.max_body == 0) throw refused_option("trellis serve: --max-body must be positive");
  if (o.page_size == 0) o.page_size = 50;
  if (!o.users_file.empty()) {
    m.users = Users::load(o.users_file);
  } else {
    m.start_token = Users::new_token();
    m.users.add(o.user.empty() ? default_user() : o.user, m.start_token);
  }
  m.secret = Users::new_token();
  m.have_dot = trellis::detail::find_program("dot").has_value();
  if (m.tls) {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    m.server = std::make_unique<httplib::SSLServer>(o.tls_cert.c_str(), o.tls_key.c_str());
#endif
    if (!m.server || !m.server->is_valid())
      throw refused_option("trellis serve: cannot use the TLS certificate " + o.tls_cert +
                           " and key " + o.tls_key + " (unreadable, or not a PEM pair)");
  } else {
    m.server = std::make_unique<httplib::Server>();
  }
  m.routes();
  // httplib's default also sets SO_REUSEPORT, which would let a second console bind the same
  // port and take half the connections: SO_REUSEADDR only.
  m.server->set_tcp_nodelay(true);  // no Nagle delay on a small answer to a kept-alive client
  m.server->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (o.port == 0) {
    m.port = m.server->bind_to_any_port(o.host);
    if (m.port < 0) m.port = 0;
  } else {
    m.port = m.server->bind_to_port(o.host, o.port) ? o.port : 0;
  }
  if (m.port == 0)
    throw refused_option("trellis serve: cannot bind " + o.host + ":" + std::to_string(o.port) +
                         " (in use, or not an address of this machine)");
  const std::string p = std::to_string(m.port);
  const std::string bracketed = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  m.hosts = {bracketed, bracketed + ":" + p};
  if (loopback(o.host))
    for (const char* h : {"localhost", "127.0.0.1", "[::1]"}) {
      m.hosts.push_back(h);
      m.hosts.push_back(std::string(h) + ":" + p);
    }
  for (const std::string& h : o.public_hosts) m.hosts.push_back(h);
}

Console::~Console() { stop(); }

void Console::serve() {
  Impl& m = *impl_;
  m.serve_active = true;
  if (!m.stopping) m.server->listen_after_bind();
  m.serve_active = false;
}

void Console::stop() {
  if (!impl_ || !impl_->server) return;
  Impl& m = *impl_;
  m.stopping = true;
  // A serve() already past its check: wait until it listens, so that stop() reaches it.
  while (m.serve_active && !m.server->is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  m.server->stop();
}

int Console::port() const noexcept { return impl_->port; }

std::string Console::url() const {
  const std::string& h = impl_->opt.host;
  return std::string(impl_->tls ? "https" : "http") + "://" +
         (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + std::to_string(port());
}

std::string Console::login_url() const {
  if (impl_->start_token.empty()) return url() + "/login";
  return url() + "/login?token=" + impl_->start_token;
}

}  // namespace trellis::web
