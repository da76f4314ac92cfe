// SPDX-License-Identifier: MIT
// `trellis serve` (serve.hpp): options, the sign-in URL, and a clean stop on SIGINT/SIGTERM.

#include "trellis/web/serve.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include "trellis/cli/open_store.hpp"
#include "trellis/web/console.hpp"
#include "trellis/web/users.hpp"

namespace trellis::web {

namespace {

std::atomic<bool> stop_asked{false};  // lock-free: safe to set from a signal handler
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_stop(int) { stop_asked = true; }

}  // namespace

int serve_command(const std::vector<std::string>& args,
                  const std::function<agent::Store&()>& store) {
  CLI::App app{"the operator console: runs, a page per run, the approvals inbox (docs/console.md)",
               "trellis serve"};
  ConsoleOptions o;
  std::string new_token_for, store_spec;
  app.add_option("--store", store_spec,
                 "the store: DIR (FileStore), sqlite:PATH or postgresql://... (must exist)");
  app.add_option("--host", o.host, "the address to bind (default 127.0.0.1)");
  app.add_option("--port", o.port, "the port (default 8080; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--public-host", o.public_hosts,
                 "a Host header a reverse proxy sends (repeatable; others are refused)");
  app.add_option("--tls-cert", o.tls_cert, "serve HTTPS with this PEM certificate");
  app.add_option("--tls-key", o.tls_key, "... and this PEM private key");
  app.add_flag("--insecure-http", o.insecure_http,
               "allow plain HTTP on an address other than loopback (behind a TLS proxy)");
  app.add_flag("--read-only", o.read_only, "show runs; refuse decisions and cancellations");
  app.add_option("--users", o.users_file,
                 "the users file: a line \"NAME sha256:HEX\" per user (default: one token made "
                 "now, for --user)");
  app.add_option("--user", o.user, "without --users: the user (default $TRELLIS_USER, $USER)");
  app.add_option("--trust-user-header", o.trust_user_header,
                 "a reverse proxy's header naming the user (honoured from loopback peers only)");
  app.add_option("--max-body", o.max_body, "the largest request body in bytes (default 65536)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{64} << 20));
  app.add_option("--new-token", new_token_for,
                 "print a new token for user NAME and its users-file line, then exit");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!new_token_for.empty()) {
    const std::string token = Users::new_token();
    std::cout << "token: " << token
              << "\nusers-file line: " << Users::line_for(new_token_for, token) << '\n';
    return 0;
  }
  try {
    std::unique_ptr<agent::Store> own;
    if (!store_spec.empty()) {
      (void)agent::cli::open_store(store_spec, true);  // not_a_store: nothing is created
      own = agent::cli::open_store(store_spec, false);
    }
    Console console(own ? *own : store(), o);
    std::cout << "trellis serve: " << console.url() << (o.read_only ? " (read-only)" : "")
              << "\nsign in: " << console.login_url() << std::endl;
    stop_asked = false;
    struct sigaction act {};
    act.sa_handler = on_stop;
    sigemptyset(&act.sa_mask);
    struct sigaction old_int {
    }, old_term{};
    sigaction(SIGINT, &act, &old_int);
    sigaction(SIGTERM, &act, &old_term);
    std::jthread watcher([&](std::stop_token stop) {
      while (!stop.stop_requested() && !stop_asked)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      console.stop();
    });
    console.serve();
    watcher.request_stop();
    watcher.join();
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    std::cout << "trellis serve: stopped" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
}

agent::cli::ExtraCommand serve_extra() {
  return {"serve", "the operator console: a web page for runs and approvals (docs/console.md)",
          serve_command};
}

}  // namespace trellis::web
