// The commands that hand runs to workers, in a program that links its graph: `enqueue` (a run
// started in the background) and `worker` (a Worker over the program's graph until stopped).

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli_support.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/worker.hpp"

namespace trellis::agent::cli::detail {

namespace {

GraphRunner& graph_for(Session& s, const char* verb) {
  if (!s.graph())
    throw usage_failure(std::string("trellis: ") + verb +
                        " needs the program's graph, and this command links none: run `<program> " +
                        verb +
                        " ...` with the program that links it (trellis::agent::cli::main), or "
                        "give a graph file: trellis --graph FILE " +
                        verb);
  return *s.graph();
}

/// `--at`: an ISO-8601 UTC time, or "+SPAN" ahead of now (+90s, +5m, +2h, +1d, +1w).
SysClock::time_point parse_at(const std::string& text) {
  if (text.starts_with('+')) {
    const SysClock::time_point now = SysClock::now();
    return now + (now - parse_time(std::string_view(text).substr(1), "--at"));
  }
  if (text.find('-') == std::string::npos)  // a bare span would mean "back from now"
    throw usage_failure("trellis: --at '" + text +
                        "' is not a time ahead: give ISO-8601 UTC (2026-11-24T10:00:00Z) or a "
                        "span ahead of now with '+' (+90s, +5m, +2h)");
  return parse_time(text, "--at");
}

// --- signals --------------------------------------------------------------------------------

// The first SIGINT/SIGTERM asks for a graceful stop; a second one ends the process at once.
// Atomic, not volatile sig_atomic_t: the handler may run on any thread, a pool thread too.
std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

extern "C" void on_worker_signal(int sig) {
  if (stop_signal.exchange(sig) != 0) _exit(128 + sig);
}

/// Installs the handlers for its lifetime (the previous ones come back afterwards).
class SignalScope {
 public:
  SignalScope() {
    stop_signal = 0;
    struct sigaction act {};
    act.sa_handler = on_worker_signal;
    sigemptyset(&act.sa_mask);
    sigaction(SIGINT, &act, &old_int_);
    sigaction(SIGTERM, &act, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// --- output ---------------------------------------------------------------------------------

std::string kind_name(WorkerEvent::Kind k) {
  switch (k) {
    case WorkerEvent::Kind::advanced:
      return "advanced";
    case WorkerEvent::Kind::lost:
      return "lost";
    case WorkerEvent::Kind::foreign:
      return "foreign";
    case WorkerEvent::Kind::error:
      return "error";
  }
  return "error";
}

/// Prints the worker's lines, one at a time (the pool threads call it concurrently).
class WorkerPrinter {
 public:
  WorkerPrinter(bool json, std::string name) : json_(json), name_(std::move(name)) {}

  void started(const std::string& where, const WorkerOptions& o, const Worker& w, bool drain) {
    std::lock_guard lock(m_);
    if (json_) {
      nlohmann::json doc = document("worker_started");
      doc["worker"] = name_;
      doc["store"] = where;
      doc["threads"] = drain ? 1 : o.threads;
      doc["poll_ms"] = o.poll.count();
      doc["drain"] = drain;
      doc["fingerprints"] = w.fingerprints();
      print_json(doc);
    } else {
      std::cout << "worker " << name_ << " on " << where << ": "
                << (drain ? std::string("draining what is due")
                          : std::to_string(o.threads) + " threads, poll " +
                                std::to_string(o.poll.count()) + " ms")
                << '\n';
    }
    std::cout.flush();
  }

  void event(const WorkerEvent& e) {
    std::lock_guard lock(m_);
    if (json_) {
      nlohmann::json doc = document("worker_event");
      doc["worker"] = name_;
      doc["event"] = kind_name(e.kind);
      doc["run_id"] = e.run_id;
      doc["status"] = name(e.status);
      doc["fingerprint"] = e.fingerprint;
      doc["detail"] = e.detail;
      doc["at"] = utc(SysClock::now());
      print_json(doc);
    } else {
      std::string line = kind_name(e.kind);
      if (!e.run_id.empty()) line += " " + e.run_id;
      if (e.kind != WorkerEvent::Kind::error || !e.run_id.empty()) line += " " + name(e.status);
      if (!e.detail.empty()) line += ": " + e.detail;
      for (char& c : line)
        if (c == '\n' || c == '\r') c = ' ';
      std::cout << line << '\n';
    }
    std::cout.flush();
  }

  void stopped(const WorkerStats& st, const char* why) {
    std::lock_guard lock(m_);
    if (json_) {
      nlohmann::json doc = document("worker_stopped");
      doc["worker"] = name_;
      doc["why"] = why;
      doc["claimed"] = st.claimed;
      doc["advanced"] = st.advanced;
      doc["lost"] = st.lost;
      doc["errors"] = st.errors;
      doc["foreign"] = st.foreign;
      print_json(doc);
    } else {
      std::cout << "worker " << name_ << " stopped (" << why << "): claimed " << st.claimed
                << ", advanced " << st.advanced << ", lost " << st.lost << ", errors " << st.errors
                << ", foreign " << st.foreign << '\n';
    }
    std::cout.flush();
  }

 private:
  std::mutex m_;
  bool json_;
  std::string name_;
};

/// On stderr (stdout may be JSON lines): what the first signal does, and what a second would.
void announce_stop(const std::string& name) {
  std::cerr << "trellis: worker " << name
            << " stopping: the steps in flight finish and their runs are given back (signal "
               "again to exit at once)"
            << std::endl;
}

std::string default_worker_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    return "worker:" + std::to_string(getpid());
  return std::string(host) + ":" + std::to_string(getpid());
}

}  // namespace

int enqueue(Session& s, const EnqueueArgs& a) {
  GraphRunner& g = graph_for(s, "enqueue");
  std::optional<nlohmann::json> initial;
  if (!a.state.empty()) {
    initial = parse_json_option(a.state, "--state");
    if (std::string why = g.check_state(*initial); !why.empty())
      throw usage_failure("trellis: --state is not a state of this graph: " + why);
  }
  EnqueueOptions options;
  options.priority = a.priority;
  if (!a.at.empty()) options.at = parse_at(a.at);
  Store& store = s.store(Access::create);
  if (store.latest(a.run))
    throw conflict_failure("trellis: run '" + a.run + "' already exists in " + s.where() +
                           ": resume it, or enqueue another id");
  g.enqueue(a.run, initial ? &*initial : nullptr, store, options);
  const std::optional<Checkpoint> cp = store.latest(a.run);
  const std::string due = cp ? due_at(*cp).value_or("") : "";
  if (s.json()) {
    nlohmann::json doc = document("enqueued");
    doc["run_id"] = a.run;
    doc["status"] = name(cp ? cp->status : RunStatus::Queued);
    doc["priority"] = a.priority;
    doc["due"] = due.empty() ? nlohmann::json() : nlohmann::json(due);
    print_json(doc);
    return 0;
  }
  std::cout << a.run << ": Queued (priority " << a.priority << ", due "
            << (due.empty() ? std::string("-") : due)
            << "); a worker advances it: " << command_hint(s, "worker") << '\n';
  return 0;
}

int worker(Session& s, const WorkerArgs& a) {
  GraphRunner& g = graph_for(s, "worker");
  if (a.drain && a.for_seconds)
    throw usage_failure("trellis: worker: --drain ends when nothing is due; give it or --for");
  if (a.for_seconds && !(*a.for_seconds > 0.0 && *a.for_seconds < 1e9))
    throw usage_failure("trellis: worker: --for takes a number of seconds above 0");
  Store& store = s.store(Access::write);

  WorkerOptions options;
  options.name = a.name.empty() ? default_worker_name() : a.name;
  options.threads = a.threads;
  options.poll = std::chrono::milliseconds(a.poll_ms);
  WorkerPrinter printer(s.json(), options.name);
  options.on_event = [&printer](const WorkerEvent& e) { printer.event(e); };
  Worker w(store, options);
  g.add_to(w);

  SignalScope signals;
  printer.started(s.where(), options, w, a.drain);
  const char* why = "signal";
  if (a.drain) {
    // In a thread of its own, so a signal can stop it between runs.
    std::atomic<bool> done{false};
    std::exception_ptr failure;
    std::jthread drainer([&](std::stop_token stop) {
      try {
        (void)w.drain(stop);
      } catch (...) {
        failure = std::current_exception();
      }
      done = true;
    });
    while (!done && stop_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    why = done ? "drained" : "signal";
    if (!done) announce_stop(options.name);
    drainer.request_stop();
    drainer.join();
    if (failure) std::rethrow_exception(failure);
  } else {
    w.start();
    const auto until = a.for_seconds
                           ? SysClock::now() + std::chrono::duration_cast<SysClock::duration>(
                                                   std::chrono::duration<double>(*a.for_seconds))
                           : SysClock::time_point::max();
    while (stop_signal == 0 && SysClock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    why = stop_signal != 0 ? "signal" : "time";
    if (stop_signal != 0) announce_stop(options.name);
    w.stop();
    w.join();
  }
  const WorkerStats st = w.stats();
  printer.stopped(st, why);
  return a.drain && st.errors > 0 ? 1 : 0;
}

}  // namespace trellis::agent::cli::detail
