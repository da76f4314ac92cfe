#pragma once
/// @file
/// `Worker`: advances many runs in one process, on a pool of threads, claimed from a store that
/// other workers (threads, processes, machines) share.
///
/// ```cpp
/// trellis::agent::SqliteStore store("runs.db");          // or FileStore, PostgresStore
/// trellis::agent::Worker worker(store, {.threads = 4});
/// worker.add(draft_graph).add(refund_graph);             // by graph fingerprint
/// draft_graph.enqueue("run-7", Doc{...}, store);         // returns at once
/// worker.start();                                        // ... worker.stop(); worker.join();
/// ```
///
/// Each pool thread claims one runnable, due run at a time (Store::claim: its lease taken, a new
/// epoch; higher priority first, then the earliest due), advances it with its graph as resume()
/// does, with RunOptions::durable_waits on (a retry backoff, like a Sleep, commits the run
/// Waiting and gives it back, so no thread sleeps on a run), and gives it back (the lease
/// released) when it pauses, ends, waits or loses its lease. An idle thread waits for work
/// (Store::wait_for_work) a random time between half the poll interval and the poll interval,
/// so workers that start together do not poll together, and a run made runnable (a decision, a
/// reconciliation, a timer due, a worker that died) is picked up within one poll interval.
///
/// A run call that fails with an error (not a lost lease: a state that no longer decodes, a
/// store error on that run) leaves the run where it was, and this worker holds it back for a
/// while (doubling with each failure in a row, from the poll interval up to a minute) so one
/// broken run never holds every thread. A claim that fails (the store is away: a server restarting,
/// a network cut) is reported (WorkerEvent::error) and tried again after a wait that doubles with
/// each failure in a row, up to 5 s (or the poll interval if longer); the first claim that works
/// resets it.
///
/// A run whose graph the worker does not have (another fingerprint: another graph, or another
/// version of it) is never claimed and never failed: it is left for a worker that has it, and
/// reported once (WorkerEvent::foreign, stats().foreign).
///
/// What is guaranteed, on every store (one machine or, with PostgreSQL, many): at most one
/// committed result per step (commits are fenced by the lease epoch); node code runs at least
/// once per committed step (a worker that dies or loses its lease mid-step leaves the step to
/// the next one); an at_most_once effect is never started twice (its started record is fenced
/// too). A lease lost while a node runs stops the node through its stop_token, and nothing of
/// the step is committed.
///
/// Fan-out (fanout.hpp): the items of a run's fan-out run on the pool. The thread advancing the
/// run offers places to the worker's FanoutPool (fanout_pool.hpp), and its idle threads take
/// them before they claim new runs; no thread is started for a fan-out. Items run in parallel
/// as far as threads are idle: a worker with one thread, or whose threads are all busy, runs a
/// fan-out's items one after another on the thread advancing the run. (RunOptions::fanout_pool
/// in WorkerOptions::run replaces the worker's pool.)
///
/// stop() is a graceful shutdown: no new claims; each run call in flight finishes its step,
/// commits it and gives the run back (RunOptions::yield), runnable for the next worker; it is
/// never cancelled. A worker killed instead (SIGKILL) loses at most its steps in flight.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trellis/agent/graph.hpp"
#include "trellis/agent/run_options.hpp"
#include "trellis/agent/run_summary.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// What a worker tells (WorkerOptions::on_event).
struct WorkerEvent {
  enum class Kind {
    advanced,  ///< a run call returned: `status` is where it left the run
    lost,      ///< the run's lease was lost (another worker took it): nothing was committed
    foreign,   ///< a due run of a graph this worker does not have (reported once per run)
    error,     ///< a run call or a claim failed (store_error, ...): `detail`; retried later
  };
  Kind kind = Kind::advanced;
  std::string run_id;
  RunStatus status = RunStatus::Queued;
  std::string fingerprint;  ///< for foreign: the run's graph
  std::string detail;
};

struct WorkerOptions {
  /// The lease owner's name (messages, listings); each pool thread appends "/<n>". Empty: the
  /// host name and pid ("host:1234").
  std::string name = {};
  std::size_t threads = 2;  ///< runs advanced at once
  /// An idle thread looks for work again after a random time in [poll/2, poll].
  std::chrono::milliseconds poll = std::chrono::milliseconds(200);
  /// The settings of every run call (durable_waits is forced on; stop and yield are the
  /// worker's).
  RunOptions run = {};
  /// Called on every WorkerEvent, from the pool threads (make it thread-safe and quick).
  std::function<void(const WorkerEvent&)> on_event = {};
};

/// Counters since the worker was made (a snapshot).
struct WorkerStats {
  std::uint64_t claimed = 0;   ///< runs claimed
  std::uint64_t advanced = 0;  ///< run calls that returned
  std::uint64_t lost = 0;      ///< leases lost
  std::uint64_t errors = 0;    ///< claims or run calls that failed
  std::uint64_t foreign = 0;   ///< distinct runs of graphs this worker does not have
};

class Worker {
 public:
  explicit Worker(Store& store, WorkerOptions options = {});
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  /// stop() and join().
  ~Worker();

  /// Adds a graph (by fingerprint; it must outlive the worker). graph_error when a graph of
  /// the same fingerprint was added, or once started.
  template <class S>
  Worker& add(Graph<S>& graph) {
    return add_graph(graph.fingerprint(), graph.spec_, graph);
  }

  /// Starts the pool threads (once; graph_error again).
  void start();
  /// Asks the threads to end (see the file comment); returns at once. Safe from any thread; a
  /// stopped worker does not start again (graph_error).
  void stop() noexcept;
  /// Waits for the threads to end.
  void join();

  /// Advances due runs in the calling thread, one at a time, until none is due (or `stop`, or
  /// a claim that fails: reported as an error event and counted); returns the number of run
  /// calls made. For tests and for `trellis worker --drain`. Runs
  /// that become due later (a timer) are not waited for.
  std::size_t drain(std::stop_token stop = {});

  WorkerStats stats() const;
  /// The fingerprints this worker has.
  std::vector<std::string> fingerprints() const;

 private:
  struct Entry {
    const detail::GraphSpec* spec;
    detail::StateInterface* typed;
  };
  struct Shared;

  Worker& add_graph(std::string fingerprint, const detail::GraphSpec& spec,
                    detail::StateInterface& typed);
  /// Claims and advances one run; false when none was due.
  bool once(std::size_t thread, std::stop_token stop);
  void thread_main(std::size_t thread, std::stop_token stop);
  void report_foreign();
  void claim_failed(const std::exception& failure);
  void emit(WorkerEvent e);

  Store& store_;
  WorkerOptions options_;
  std::map<std::string, Entry, std::less<>> graphs_;  // by fingerprint
  std::vector<std::string> fingerprints_;
  std::unique_ptr<Shared> shared_;
  std::vector<std::jthread> threads_;
};

}  // namespace trellis::agent
