#pragma once
/// @file
/// `DurableStateChart<D>` (and `ThreadSafeDurableStateChart<D>`, `AsyncDurableStateChart<D>`):
/// a statechart that survives `kill -9` and power loss, on the same sidecar machinery as
/// DurableStateMachine (trellis/persist/durable_state_machine.hpp: the lock, the atomic
/// replace with fsync, the failpoints, the errors, DurableOptions, on_event()).
///
/// What the sidecar holds (format version 2, kind "statechart"; docs/formats.md, "Sidecar"):
/// the active configuration and the recorded history values by state id, the chart's data D
/// (written and read with nlohmann_json's to_json/from_json; DurableOptions::schema_version and
/// migrate apply to it) and the pending delayed sends (event name, due time, order, send id).
/// It is rewritten after every step that changes any of them: each macrostep that took
/// transitions, each delayed send delivered (or discarded by a chart that takes no event), and
/// the start. A delayed send is taken off the queue and its macrostep run in one record, so a
/// crash at any point delivers it once: before the record, the file still holds it queued;
/// after, the file holds its effects and not the send.
///
/// Opening:
/// - No file: the chart starts (entry actions run) and its first configuration is written at
///   epoch 0 before the constructor returns (persist_error if that fails).
/// - A file: the chart resumes exactly there (ChartInstance::restore: no entry action runs
///   again). Every id is checked against the chart first: an unknown state or history id is
///   recovery_error with reason unknown_state (code "persist.recovery.unknown_state") naming the
///   file and the id; a configuration the chart cannot be in (a parallel state without one of
///   its regions, two children of a compound state, ...) or a history value outside its state is
///   bad_state; a flat machine's sidecar is wrong_kind; a newer format version is
///   future_version. Each leaves the file untouched (unless `on_corrupt = quarantine` moves it
///   aside and the chart starts afresh, as for DurableStateMachine).
/// - Then the delayed sends that fell due while the program was down are delivered, in due
///   order, each as its own macrostep and record, before the constructor returns
///   (fired_at_open() says how many). Observers registered afterwards do not hear of them; the
///   configuration and data show them.
///
/// Durability: sync (each step is on disk before send() or fire_due() returns; if writing
/// fails, the step is undone: the configuration, history, data and queue go back to the last
/// record, the error reaches the caller and no observer hears of it; actions that ran did run)
/// and async (the step commits in memory and the background writer persists the newest record;
/// durable_through() and flush() as for DurableStateMachine). Durability::group and
/// DurableOptions::journal are refused with invalid_option (not supported for charts yet).
/// After an unknown outcome (persist_outcome_unknown) every later step is refused, as for
/// DurableStateMachine: reopen the chart.
///
/// Payloads: a delayed send's event is persisted by name. A step that leaves a pending send
/// carrying a payload (ChartEvent::data, a std::any, from ChartActions::send) is refused with
/// unwritable_value naming the member ("/state/sends/0/event") and undone like a failed write;
/// so is data that JSON cannot carry back (a NaN, too deep).
///
/// The clock: due times are written as the chart clock's time since the Unix epoch
/// (ChartOptions::clock; the system clock by default), so a restart with the same kind of clock
/// finds them where they were.
///
/// Threads: as the chart's runner (StateChart on a Context, ThreadSafeStateChart on a
/// ThreadSafeContext, AsyncStateChart on an AsyncContext). Every step persists with the
/// context's lock held.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/base/error.hpp"
#include "trellis/base/subscription.hpp"
#include "trellis/persist/detail/async_writer.hpp"
#include "trellis/persist/detail/chart_sidecar.hpp"
#include "trellis/persist/detail/json_convertible.hpp"
#include "trellis/persist/detail/persist_event_hub.hpp"
#include "trellis/persist/detail/sync_writer.hpp"
#include "trellis/persist/durability.hpp"
#include "trellis/persist/durable_state_machine.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/sidecar.hpp"
#include "trellis/persist/sidecar_lock.hpp"
#include "trellis/reactive/async_context.hpp"
#include "trellis/reactive/context.hpp"
#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/state_chart.hpp"

/// The data of a chart without data persists as null.
template <>
struct nlohmann::adl_serializer<trellis::NoData> {
  static void to_json(nlohmann::json& j, const trellis::NoData&) { j = nullptr; }
  static void from_json(const nlohmann::json& j, trellis::NoData&) {
    if (!j.is_null())
      throw nlohmann::json::type_error::create(302, "a chart without data stores null", &j);
  }
};

namespace trellis {

/// A statechart persisted in a JSON sidecar (see the file comment).
template <class D, class Ctx>
class BasicDurableStateChart : private detail::ChartStepHook {
  static_assert(detail::json_convertible<D>,
                "trellis: DurableStateChart<D> needs nlohmann::json conversions for D: define "
                "to_json(nlohmann::json&, const D&) and from_json(const nlohmann::json&, D&), or "
                "NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(D, ...)");
  static_assert(std::is_copy_assignable_v<D>,
                "trellis: DurableStateChart<D> needs a copyable D (a failed write puts the last "
                "persisted data back)");

 public:
  using data_type = D;
  using context_type = Ctx;

  /// Opens (or creates) the chart persisted at `path`: resumes from the file, or starts
  /// `chart` with `initial` when there is none; then delivers the delayed sends that fell due
  /// meanwhile (see the file comment).
  BasicDurableStateChart(Ctx& ctx, std::filesystem::path path, Chart<D> chart, D initial = D{},
                         DurableOptions options = {}, ChartOptions chart_options = {})
      : ctx_(&ctx), mode_(options.durability) {
    if (path.empty()) throw invalid_option("trellis: DurableStateChart: the sidecar path is empty");
    if (options.durability == Durability::group)
      throw invalid_option("trellis: DurableStateChart '" + path.string() +
                           "': Durability::group is not supported for charts (use sync or async)");
    if (options.journal)
      throw invalid_option("trellis: DurableStateChart '" + path.string() +
                           "': DurableOptions::journal is not supported for charts");
    std::string name = options.name.empty() ? path.stem().string() : options.name;
    SidecarLock lock(path, options.file_mode);
    path = lock.resolved_path();
    std::shared_ptr<detail::ChartHolder<D>> holder =
        recover(path, name, options, chart, std::move(initial), chart_options);
    if (!report_.from_sidecar) {
      // The start's record: its entry actions ran, its delayed sends are queued.
      store_sidecar(path,
                    SidecarRecord{name, 0, options.schema_version, encode(*holder, path),
                                  iso8601_utc(), SidecarKind::statechart},
                    options.file_mode);
    }
    epoch_ = report_.epoch;
    last_ = Last{holder->data, detail::snapshot_of(holder->inst)};
    detail::WriterConfig config{
        path,     std::move(name),        options.schema_version, options.file_mode,
        &events_, SidecarKind::statechart};
    if (mode_ == Durability::async)
      writer_ = std::make_unique<detail::AsyncWriter>(std::move(config), epoch_);
    else
      writer_ = std::make_unique<detail::SyncWriter>(std::move(config), epoch_);
    lock_.emplace(std::move(lock));
    durable_ = ctx.cell(epoch_);
    durable_through_.emplace(ctx.signal([durable = *durable_] { return durable.get(); }));
    holder->hook = this;
    holder_ = holder;
    chart_.emplace(ctx, std::move(chart), std::move(holder));
    fired_at_open_ = fire_due();
  }

  BasicDurableStateChart(const BasicDurableStateChart&) = delete;
  BasicDurableStateChart& operator=(const BasicDurableStateChart&) = delete;

  /// Flushes (async mode: a bounded number of attempts; errors are reported as events, not
  /// thrown) and releases the lock.
  ~BasicDurableStateChart() {
    try {
      if (writer_) writer_->flush();
    } catch (...) {  // already reported as an event; a destructor cannot throw
    }
    chart_.reset();
    if (holder_) holder_->hook = nullptr;
    writer_.reset();  // the async writer writes the newest record first (bounded tries)
  }

  // --- the chart (see BasicStateChart) --------------------------------------------------------

  /// Processes `e` as one macrostep, persisted, then delivers the delayed sends that are due
  /// (each persisted). Throws what writing throws (persist_error, unwritable_value), the step
  /// undone in sync mode.
  SendResult send(const ChartEvent& e) {
    return publishing([&] { return chart_->send(e); });
  }
  /// Delivers every delayed send due by the chart's clock, each as its own persisted
  /// macrostep, in due order; returns how many were delivered.
  std::size_t fire_due() {
    return publishing([&] { return chart_->fire_due(); });
  }
  std::optional<ChartClock::time_point> next_due() const { return chart_->next_due(); }
  std::vector<DelayedSend> pending_sends() const { return chart_->pending_sends(); }
  Signal<bool> in(std::string_view id) const { return chart_->in(id); }
  Signal<bool> state_is(std::string_view id) const { return chart_->state_is(id); }
  ChartConfiguration snapshot() const { return chart_->snapshot(); }
  CellView<ChartConfiguration> configuration_cell() const { return chart_->configuration_cell(); }
  std::vector<std::string> configuration() const { return chart_->configuration(); }
  std::vector<std::string> atomic_configuration() const { return chart_->atomic_configuration(); }
  bool done() const { return chart_->done(); }
  bool can(const ChartEvent& e) const { return chart_->can(e); }
  D data() const { return chart_->data(); }
  template <class F>
  auto read(F f) const {
    return chart_->read(std::move(f));
  }
  template <class F>
  [[nodiscard]] Subscription on_enter(std::string_view id, F f) {
    return chart_->on_enter(id, std::move(f));
  }
  template <class F>
  [[nodiscard]] Subscription on_exit(std::string_view id, F f) {
    return chart_->on_exit(id, std::move(f));
  }
  template <class F>
  [[nodiscard]] Subscription on_transition(F f) {
    return chart_->on_transition(std::move(f));
  }
  void drain() requires std::derived_from<Ctx, AsyncContext> { chart_->drain(); }
  Ctx& context() const noexcept { return *ctx_; }
  const Chart<D>& chart() const noexcept { return chart_->chart(); }

  // --- persistence (see DurableStateMachine) --------------------------------------------------

  /// Records written after the start's (epoch 0): steps that took transitions, delivered or
  /// discarded delayed sends. Recovered ones included.
  std::uint64_t epoch() const {
    detail::GraphLock lock(graph_of(*ctx_));
    return epoch_;
  }
  /// The epoch known to be on disk, as an eager signal (async: updated on the chart's own
  /// thread at send(), fire_due() and flush(); sync: equal to epoch()).
  Signal<std::uint64_t> durable_through() const { return *durable_through_; }
  /// Async: waits until the newest record is on disk or an attempt fails (rethrown). Sync:
  /// returns at once.
  void flush() {
    std::exception_ptr err;
    try {
      writer_->flush();
    } catch (...) {
      err = std::current_exception();
    }
    {
      detail::GraphLock lock(graph_of(*ctx_));
      durable_->set(writer_->durable_epoch());
    }
    if (err) std::rethrow_exception(err);
  }
  /// What the chart found on disk when it started.
  const RecoveryReport& recovery() const noexcept { return report_; }
  /// How many delayed sends that fell due while the program was down the constructor
  /// delivered.
  std::size_t fired_at_open() const noexcept { return fired_at_open_; }
  /// Calls `f(event)` for each persisted and persist_failed event after startup (sync: on the
  /// sending thread; async: on the background writer's thread).
  template <class Fn>
  [[nodiscard]] Subscription on_event(Fn f) {
    static_assert(std::is_invocable_v<Fn&, const PersistEvent&>,
                  "trellis: on_event(f) needs f(const trellis::PersistEvent&)");
    return events_.subscribe(std::function<void(const PersistEvent&)>(std::move(f)));
  }
  /// The events of on_event() as a Boost.Signals2 signal; needs
  /// <trellis/signals2/persist_events.hpp>.
  template <class Tag = void>
  decltype(auto) events() {
    using Adapter = detail::Signals2PersistEvents<Tag>;
    static_assert(Adapter::included,
                  "trellis: DurableStateChart::events() is a Boost.Signals2 signal: #include "
                  "<trellis/signals2/persist_events.hpp>, or use on_event(f), which needs no "
                  "Boost");
    if constexpr (Adapter::included) return Adapter::signal(events_);
  }
  const std::filesystem::path& path() const noexcept { return writer_->path(); }

 private:
  /// The last record accepted (sync: on disk; async: handed to the writer), to undo a step.
  struct Last {
    D data;
    detail::ChartSnapshot snapshot;
  };

  /// Runs `f` (a send or fire_due), then updates durable_through, whatever `f` threw (its
  /// error wins).
  template <class F>
  auto publishing(F f) {
    std::exception_ptr err;
    std::optional<decltype(f())> result;
    try {
      result.emplace(f());
    } catch (...) {
      err = std::current_exception();
    }
    {
      detail::GraphLock lock(graph_of(*ctx_));
      try {
        durable_->set(writer_->durable_epoch());
      } catch (...) {
        if (!err) err = std::current_exception();
      }
    }
    if (err) std::rethrow_exception(err);
    return *result;
  }

  nlohmann::json encode(const detail::ChartHolder<D>& h, const std::filesystem::path& file) const {
    nlohmann::json data;
    try {
      data = nlohmann::json(h.data);
    } catch (const nlohmann::json::exception& e) {
      throw persist_error(file, std::string("encoding the chart's data as JSON: ") + e.what());
    }
    return detail::encode_chart_state(h.inst, std::move(data), file);
  }

  std::shared_ptr<detail::ChartHolder<D>> recover(const std::filesystem::path& path,
                                                  const std::string& name,
                                                  const DurableOptions& options,
                                                  const Chart<D>& chart, D initial,
                                                  const ChartOptions& chart_options) {
    report_.temps_removed = remove_sidecar_temps(path);
    try {
      if (std::optional<SidecarRecord> record = load_sidecar(path, name)) {
        if (record->kind != SidecarKind::statechart)
          throw recovery_error(path, recovery_error::reason::wrong_kind,
                               "the sidecar of a state machine (a DurableStateMachine's), not "
                               "of a statechart");
        nlohmann::json data;
        detail::ChartSnapshot snap =
            detail::decode_chart_state(chart.definition(), record->state, path, data);
        auto holder = std::make_shared<detail::ChartHolder<D>>(
            chart, decode_data(path, *record, options, std::move(data)), chart_options);
        holder->inst.restore(std::move(snap.configuration), std::move(snap.history),
                             std::move(snap.recorded), std::move(snap.sends), snap.running);
        if (!holder->inst.pending_sends().empty()) holder->maybe_due = true;
        report_.from_sidecar = true;
        report_.epoch = record->epoch;
        return holder;
      }
    } catch (const recovery_error& e) {
      if (options.on_corrupt != OnCorrupt::quarantine) throw;
      report_.quarantined_to = quarantine_sidecar_and_journal(path, false).sidecar;
      report_.quarantine_reason = e.what();
    }
    auto holder =
        std::make_shared<detail::ChartHolder<D>>(chart, std::move(initial), chart_options);
    holder->inst.start();
    if (auto err = holder->inst.take_error()) std::rethrow_exception(err);
    if (!holder->inst.pending_sends().empty()) holder->maybe_due = true;
    return holder;
  }

  static D decode_data(const std::filesystem::path& path, const SidecarRecord& record,
                       const DurableOptions& options, nlohmann::json data) {
    if (record.schema > options.schema_version)
      throw recovery_error(path, recovery_error::reason::future_schema,
                           "data schema " + std::to_string(record.schema) +
                               " is newer than this program's " +
                               std::to_string(options.schema_version));
    if (record.schema < options.schema_version) {
      if (!options.migrate)
        throw recovery_error(path, recovery_error::reason::bad_state,
                             "data schema " + std::to_string(record.schema) +
                                 " needs a migrate hook to reach " +
                                 std::to_string(options.schema_version));
      data = options.migrate(std::move(data), record.schema);
    }
    try {
      return data.template get<D>();
    } catch (const nlohmann::json::exception& e) {
      throw recovery_error(path, recovery_error::reason::bad_state,
                           std::string("the chart's data does not decode: ") + e.what());
    }
  }

  /// Puts the instance and data back as the last accepted record has them.
  void undo() noexcept {
    try {
      holder_->data = last_->data;
      detail::ChartSnapshot s = last_->snapshot;
      holder_->inst.restore(std::move(s.configuration), std::move(s.history), std::move(s.recorded),
                            std::move(s.sends), s.running);
      (void)holder_->inst.take_error();  // a livelock of the undone step is undone with it
    } catch (...) {  // copying failed (out of memory): what is on disk stays the truth
    }
  }

  // ChartStepHook: called with the context's lock held.
  void before_step() override {
    if (writer_->unusable()) {
      undo();  // fire_due may have taken a send off the queue already
      writer_->refuse_if_unusable();
    }
  }

  void after_step(const ChartEvent&, bool took) override {
    if (!took && same_sends()) return;  // nothing changed
    try {
      nlohmann::json state = encode(*holder_, writer_->path());
      if (mode_ == Durability::async) {
        epoch_ = static_cast<detail::AsyncWriter&>(*writer_).submit(epoch_, [&] { return state; });
      } else {
        static_cast<detail::SyncWriter&>(*writer_).write(
            epoch_, [&](bool) { return detail::EncodedTransition{std::move(state)}; });
      }
    } catch (...) {
      undo();
      throw;
    }
    last_->data = holder_->data;
    last_->snapshot = detail::snapshot_of(holder_->inst);
  }

  /// Whether the queue is the one last recorded (a step that took no transition changes it
  /// only by taking a send off).
  bool same_sends() const {
    const std::vector<DelayedSend>& now = holder_->inst.pending_sends();
    const std::vector<DelayedSend>& before = last_->snapshot.sends;
    if (now.size() != before.size()) return false;
    for (std::size_t i = 0; i < now.size(); ++i)
      if (now[i].seq != before[i].seq) return false;
    return true;
  }

  Ctx* ctx_;
  Durability mode_;
  RecoveryReport report_;
  std::size_t fired_at_open_ = 0;
  detail::PersistEventHub events_;  // outlives the writer
  std::optional<SidecarLock> lock_;
  std::unique_ptr<detail::SnapshotWriter> writer_;
  std::uint64_t epoch_ = 0;  // of the last accepted record (context's lock)
  std::optional<Last> last_;
  std::optional<Cell<std::uint64_t>> durable_;
  std::optional<Signal<std::uint64_t>> durable_through_;
  std::shared_ptr<detail::ChartHolder<D>> holder_;
  std::optional<BasicStateChart<D, Ctx>> chart_;
};

/// A durable chart on a Context (single-threaded).
template <class D = NoData>
using DurableStateChart = BasicDurableStateChart<D, Context>;
/// A durable chart shared by threads, on a ThreadSafeContext.
template <class D = NoData>
using ThreadSafeDurableStateChart = BasicDurableStateChart<D, ThreadSafeContext>;
/// A durable chart whose observers run on an AsyncContext's executor (pair it with
/// Durability::async or sync as you like).
template <class D = NoData>
using AsyncDurableStateChart = BasicDurableStateChart<D, AsyncContext>;

}  // namespace trellis
