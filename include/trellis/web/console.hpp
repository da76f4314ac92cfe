#pragma once
/// @file
/// `trellis::web::Console`: the operator console over a store (`trellis serve`, docs/console.md):
/// a page of runs, a page per run (its path, timeline, effects and live events), the approvals
/// inbox with Approve / Reject / Input forms, cancellation; and a JSON API under /api/v1 whose
/// documents are the `trellis` command's `-o json` documents (trellis/cli/documents.hpp).
///
/// ```cpp
/// trellis::agent::SqliteStore store{"runs.db"};
/// trellis::web::Console console{store, {.port = 8080}};
/// std::cout << "open " << console.login_url() << '\n';  // binds; a token was made for you
/// console.serve();                                      // until console.stop()
/// ```
///
/// Security (docs/console.md):
/// - It binds 127.0.0.1 unless told otherwise; any other address needs TLS (tls_cert and
///   tls_key) or insecure_http, else refused_option.
/// - A request whose Host header is not the bound address (or "localhost" on a loopback bind, or
///   one of public_hosts) is refused with 421 (DNS rebinding).
/// - Every request is authenticated: a token (users_file, or the one made at start) by
///   "Authorization: Bearer TOKEN" for the API, or by signing in on /login for the pages (a
///   session cookie: HttpOnly, SameSite=Strict, Secure under TLS); with trust_user_header, that
///   header names the user, from loopback peers only. The reviewer of a decision and the author
///   of a cancellation is the authenticated user, never a field.
/// - Every form carries a CSRF token bound to the session; a post without it is refused (403).
/// - Bodies over max_body bytes are refused (413) before they are read, and so are chunked (411)
///   and compressed (415) ones; everything shown is HTML-escaped (a run's state is untrusted
///   data); read_only refuses every change (403) and shows no forms.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "trellis/agent/store.hpp"

namespace trellis::web {

struct ConsoleOptions {
  std::string host = "127.0.0.1";  ///< the address to bind
  int port = 8080;                 ///< 0: any free port (Console::port() says which)
  /// Host names (with or without ":port") a reverse proxy forwards as the Host header.
  std::vector<std::string> public_hosts = {};
  std::string tls_cert = {}, tls_key = {};  ///< PEM files: serve HTTPS
  bool insecure_http = false;               ///< allow plain HTTP on an address other than loopback
  bool read_only = false;  ///< no decisions, cancellations, forks (403), no forms shown
  /// The users file ("NAME sha256:HEX" lines, users.hpp). Empty: one token is made at start
  /// for `user` (login_url() carries it).
  std::string users_file = {};
  std::string user = {};  ///< its user (default: $TRELLIS_USER, $USER, the login; "operator")
  /// A reverse proxy's header naming the signed-in user; honoured from loopback peers only.
  std::string trust_user_header = {};
  std::size_t max_body = 64 * 1024;  ///< the largest request body, in bytes
  std::size_t page_size = 50;        ///< runs per page
};

class Console {
 public:
  /// Checks the options (refused_option, users_file_error) and binds (refused_option when the
  /// address cannot be bound). `store` must outlive the console; it is used from the server's
  /// threads at once (every trellis store is).
  Console(agent::Store& store, ConsoleOptions options);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  /// Serves requests until stop() (from another thread or a signal handler's thread).
  void serve();
  /// Makes serve() return (or a serve() not yet started return at once); idempotent. The
  /// console must outlive the thread in serve().
  void stop();

  int port() const noexcept;
  /// "http://127.0.0.1:PORT" (https under TLS).
  std::string url() const;
  /// The sign-in page's URL; with the token made at start (no users file), the URL signs in.
  std::string login_url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trellis::web
