// The worker pool (worker.hpp): claim, advance, give back.

#include "trellis/agent/worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stop_token>

#include "trellis/agent/errors.hpp"
#include "trellis/agent/fanout_pool.hpp"

namespace trellis::agent {

struct Worker::Shared {
  mutable std::mutex m;
  WorkerStats stats;
  std::set<std::string, std::less<>> foreign;  // runs reported once
  /// Runs whose last run call failed (an error, not a lost lease): not advanced again before
  /// `until`, the wait doubling with each failure in a row, so one broken run (a state that no
  /// longer decodes, a store error on it) cannot hold every thread of the pool.
  struct Held {
    std::chrono::steady_clock::time_point until;
    std::chrono::milliseconds wait{0};
  };
  std::map<std::string, Held, std::less<>> held_back;
  std::stop_source stop;             // stop(): no new claims; run calls yield between steps
  std::atomic<bool> started{false};  // start() was called
  std::atomic<bool> frozen{false};   // start() or drain() was called: no more graphs
  FanoutPool pool;                   // the fan-out items the idle threads run
};

namespace {

std::string default_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "worker") + ":" + std::to_string(getpid());
}

}  // namespace

Worker::Worker(Store& store, WorkerOptions options)
    : store_(store), options_(std::move(options)), shared_(std::make_unique<Shared>()) {
  if (options_.name.empty()) options_.name = default_name();
  if (options_.threads == 0) options_.threads = 1;
  if (options_.poll <= std::chrono::milliseconds(0)) options_.poll = std::chrono::milliseconds(1);
}

Worker::~Worker() {
  stop();
  join();
}

Worker& Worker::add_graph(std::string fingerprint, const detail::GraphSpec& spec,
                          detail::StateInterface& typed) {
  if (shared_->frozen) throw graph_error("trellis: a worker takes its graphs before it starts");
  if (graphs_.contains(fingerprint))
    throw graph_error("trellis: the worker already has a graph [" + fingerprint + "]");
  graphs_.emplace(fingerprint, Entry{&spec, &typed});
  fingerprints_.push_back(std::move(fingerprint));
  return *this;
}

void Worker::start() {
  if (shared_->stop.stop_requested())
    throw graph_error("trellis: the worker was stopped; make a new one to start again");
  if (shared_->started.exchange(true)) throw graph_error("trellis: the worker was started already");
  shared_->frozen = true;
  threads_.reserve(options_.threads);
  for (std::size_t i = 0; i < options_.threads; ++i)
    threads_.emplace_back([this, i] { thread_main(i, shared_->stop.get_token()); });
}

void Worker::stop() noexcept { shared_->stop.request_stop(); }

void Worker::join() {
  for (std::jthread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

std::size_t Worker::drain(std::stop_token stop) {
  shared_->frozen = true;  // no graph added from here on
  std::size_t calls = 0;
  try {
    while (!stop.stop_requested() && !shared_->stop.stop_requested() && once(0, stop)) ++calls;
  } catch (const std::exception& failure) {  // a claim that failed: reported, draining ends
    claim_failed(failure);
  }
  return calls;
}

WorkerStats Worker::stats() const {
  std::lock_guard lock(shared_->m);
  return shared_->stats;
}

std::vector<std::string> Worker::fingerprints() const { return fingerprints_; }

void Worker::emit(WorkerEvent e) {
  if (!options_.on_event) return;
  try {
    options_.on_event(e);
  } catch (...) {  // an observer never stops the worker
  }
}

bool Worker::once(std::size_t thread, std::stop_token stop) {
  ClaimRequest request;
  request.owner = options_.name + "/" + std::to_string(thread);
  request.fingerprints = fingerprints_;
  std::size_t held = 0;
  {
    std::lock_guard lock(shared_->m);
    const auto now = std::chrono::steady_clock::now();
    for (const auto& [id, h] : shared_->held_back) held += h.until > now ? 1 : 0;
  }
  // Runs held back come first in the claim order (a Running run is due at once): claim past
  // them, and give them back (their leases drop with the claims not kept).
  request.limit = 1 + std::min<std::size_t>(held, 16);
  std::vector<Claim> claims = store_.claim(request);
  std::optional<Claim> kept;
  {
    std::lock_guard lock(shared_->m);
    const auto now = std::chrono::steady_clock::now();
    for (Claim& c : claims) {
      const auto h = shared_->held_back.find(c.newest.run_id);
      if (h != shared_->held_back.end() && h->second.until > now) continue;
      kept.emplace(std::move(c));
      break;
    }
  }
  claims.clear();
  if (!kept) return false;
  Claim claim = std::move(*kept);
  const std::string run_id = claim.newest.run_id;
  const auto it = graphs_.find(claim.newest.fingerprint);
  {
    std::lock_guard lock(shared_->m);
    ++shared_->stats.claimed;
  }
  if (it == graphs_.end()) return true;  // cannot happen: claim filters by fingerprint
  RunOptions options = options_.run;
  options.worker = request.owner;
  options.durable_waits = true;
  if (options.fanout_pool == nullptr) options.fanout_pool = &shared_->pool;
  options.stop = {};  // the worker never cancels a run; it gives it back
  std::stop_source yield;
  std::stop_callback forward_caller(stop, [&yield] { yield.request_stop(); });
  std::stop_callback forward_worker(shared_->stop.get_token(), [&yield] { yield.request_stop(); });
  options.yield = yield.get_token();
  WorkerEvent e;
  e.run_id = run_id;
  try {
    const detail::RunResult r = detail::advance_claimed(*it->second.spec, *it->second.typed,
                                                        std::move(claim), store_, options);
    e.kind = WorkerEvent::Kind::advanced;
    e.status = r.status;
    e.detail = r.detail;
    std::lock_guard lock(shared_->m);
    ++shared_->stats.advanced;
  } catch (const run_busy& busy) {  // the lease was lost: nothing of the step committed
    e.kind = WorkerEvent::Kind::lost;
    e.detail = busy.what();
    std::lock_guard lock(shared_->m);
    ++shared_->stats.lost;
  } catch (const std::exception& failure) {  // the run stays where it was; held back a while
    e.kind = WorkerEvent::Kind::error;
    e.detail = failure.what();
    std::lock_guard lock(shared_->m);
    ++shared_->stats.errors;
    Shared::Held& h = shared_->held_back[run_id];
    h.wait = std::clamp(h.wait * 2, std::max(options_.poll, std::chrono::milliseconds(100)),
                        std::chrono::milliseconds(60000));
    h.until = std::chrono::steady_clock::now() + h.wait;
  }
  if (e.kind != WorkerEvent::Kind::error) {
    std::lock_guard lock(shared_->m);
    shared_->held_back.erase(run_id);
  }
  emit(std::move(e));
  return true;
}

void Worker::claim_failed(const std::exception& failure) {
  WorkerEvent e;
  e.kind = WorkerEvent::Kind::error;
  e.detail = failure.what();
  {
    std::lock_guard lock(shared_->m);
    ++shared_->stats.errors;
  }
  emit(std::move(e));
}

void Worker::report_foreign() {
  std::vector<RunSummary> due;
  try {
    due = store_.due_runs(64);
  } catch (const std::exception&) {
    return;
  }
  for (const RunSummary& s : due) {
    if (std::find(fingerprints_.begin(), fingerprints_.end(), s.fingerprint) != fingerprints_.end())
      continue;
    // A Running run is being advanced by a worker that has its graph (or waits for its lease
    // to expire): not left alone.
    if (s.status == RunStatus::Running) continue;
    {
      std::lock_guard lock(shared_->m);
      if (!shared_->foreign.insert(s.run_id).second) continue;
      ++shared_->stats.foreign;
    }
    WorkerEvent e;
    e.kind = WorkerEvent::Kind::foreign;
    e.run_id = s.run_id;
    e.status = s.status;
    e.fingerprint = s.fingerprint;
    e.detail = "run '" + s.run_id + "' of graph [" + s.fingerprint +
               "] is due; this worker does not have that graph and leaves it";
    emit(std::move(e));
  }
}

void Worker::thread_main(std::size_t thread, std::stop_token stop) {
  std::mt19937_64 engine(std::random_device{}() + thread);
  std::uniform_real_distribution<double> half_to_one(0.5, 1.0);
  unsigned idle = 0;
  unsigned failures = 0;  // claims failed in a row
  while (!stop.stop_requested() && !shared_->stop.stop_requested()) {
    // The items of a fan-out in flight (another thread's run) come before new runs.
    if (shared_->pool.help()) {
      idle = 0;
      continue;
    }
    bool worked = false;
    try {
      worked = once(thread, stop);
      failures = 0;
    } catch (const std::exception& failure) {  // a claim that failed (the store is away)
      ++failures;
      claim_failed(failure);
    }
    if (worked) {
      idle = 0;
      continue;
    }
    // Idle: report runs of other graphs now and then (thread 0 only), then wait.
    if (thread == 0 && idle++ % 16 == 0) report_foreign();
    // A store that fails is asked again after a growing wait (doubling, up to 5 s or the poll
    // interval if longer), so a server that is down is not flooded, nor the observers.
    std::chrono::milliseconds base = options_.poll;
    if (failures > 0)
      base = std::min<std::chrono::milliseconds>(
          options_.poll * (1L << std::min(failures, 10U)),
          std::max(options_.poll, std::chrono::milliseconds(5000)));
    const auto wait = std::chrono::milliseconds(
        static_cast<std::int64_t>(static_cast<double>(base.count()) * half_to_one(engine)));
    // A fan-out offered after `offered` was taken ends the wait.
    const std::stop_token offered = shared_->pool.offered();
    if (shared_->pool.help()) continue;
    std::stop_source wake;
    const auto wake_up = [&wake] { wake.request_stop(); };
    std::stop_callback by_caller(stop, wake_up);
    std::stop_callback by_worker(shared_->stop.get_token(), wake_up);
    std::stop_callback by_offer(offered, wake_up);
    try {
      store_.wait_for_work(std::max(wait, std::chrono::milliseconds(1)), wake.get_token());
    } catch (const std::exception&) {
    }
  }
}

}  // namespace trellis::agent
