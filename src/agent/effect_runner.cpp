// The effect protocol (effect.hpp) of one run call: replay from receipts, started record and
// receipt around each call, policies after a crash, compensations when the run fails.

#include "trellis/agent/detail/effect_runner.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <system_error>
#include <thread>

#include <trellis/io/json_text.hpp>

#include "checkpoint_codec.hpp"
#include "trellis/agent/chain.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/failpoint.hpp"

namespace trellis::agent {

namespace detail {

namespace {

nlohmann::json describe(const EffectRecord& r) {
  return {{"effect", r.name}, {"key", r.key}, {"policy", r.policy}, {"issue", r.issued}};
}

// An error text as a store can hold it: bytes that are not UTF-8 (a Latin-1 body quoted by a
// client library) become U+FFFD, so the receipt of a call that failed is never lost to them.
std::string storable(const std::string& text) {
  return nlohmann::json::parse(
             nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

// Calls `call` and records its outcome in `rec`: the result (when a store can hold it), or the
// error (transient or final).
template <class Call>
void outcome_into(EffectRecord& rec, Call&& call, const char* what) {
  try {
    nlohmann::json result = call();
    // NaN, infinities, nesting deeper than the stores read back: refused before the receipt.
    check_member(result, {"result"}, "a result");  // (the message names it: no name needed)
    // Text that is not UTF-8: no store could hold it (the message is dump's).
    if (!trellis::detail::valid_utf8_json(result)) (void)result.dump();
    rec.status = EffectStatus::succeeded;
    rec.result = std::move(result);
  } catch (const nlohmann::json::type_error& e) {
    rec.status = EffectStatus::failed;
    rec.error = storable(std::string("the ") + what +
                         " returned, but its result cannot be stored: " + e.what());
  } catch (const unwritable_value& e) {
    rec.status = EffectStatus::failed;
    rec.error =
        storable(std::string("the ") + what +
                 " returned, but its result cannot be stored: " + e.member() + " " + e.reason());
  } catch (const transient_error& e) {
    rec.status = EffectStatus::transient;
    rec.error = storable(e.what());
  } catch (const std::exception& e) {
    rec.status = EffectStatus::failed;
    rec.error = storable(e.what());
  } catch (...) {
    rec.status = EffectStatus::failed;
    rec.error = "a non-standard exception";
  }
}

std::string failure_text(const EffectRecord& r) {
  return "trellis: effect '" + r.name + "' (key " + r.key + ") of run '" + r.run_id +
         "' failed: " + r.error;
}

}  // namespace

std::string EffectRunner::now() const { return now_iso8601(clock_); }

void EffectRunner::replayed(const EffectRecord& r) {
  {
    std::lock_guard lock(mu_);
    replayed_.push_back(r.key);
  }
  if (host_.observed()) event(EventKind::effect_replayed, describe(r), false);
}

void EffectRunner::note(const EffectRecord& r, std::string* slot) {
  if (slot != nullptr) {
    *slot = r.hash;
    return;
  }
  std::lock_guard lock(mu_);
  hashes_.insert_or_assign(r.key, r.hash);
}

std::vector<std::string> EffectRunner::receipts(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) {
    if (const auto h = hashes_.find(key); h != hashes_.end()) {
      out.push_back(h->second);
    } else {  // not seen by this attempt (never the case for a key it listed): as stored
      const std::optional<EffectRecord> stored = store_.effect(run_id_, key);
      out.push_back(stored ? stored->hash : std::string());
    }
  }
  return out;
}

void EffectRunner::logged(const EffectRecord& r, EffectSource source) {
  if (!keep_log_) return;
  std::lock_guard lock(mu_);
  log_.push_back(StepEffect{r.name, r.key, r.args, source, r.status, r.result, r.error});
}

nlohmann::json EffectRunner::dry_run(EffectRecord rec) {
  if (std::optional<EffectRecord> stored = store_.effect(run_id_, rec.key);
      stored && stored->final()) {
    logged(*stored, EffectSource::receipt);
    if (stored->status == EffectStatus::failed)
      throw effect_failed(stored->key, failure_text(*stored));
    return std::move(stored->result);
  }
  if (stubs_ != nullptr) {
    if (const auto stub = stubs_->find(rec.name); stub != stubs_->end()) {
      rec.status = EffectStatus::succeeded;
      rec.result = stub->second;
      logged(rec, EffectSource::stub);
      return stub->second;
    }
  }
  refused_.emplace(rec.name, "trellis: effect '" + rec.name + "' (key " + rec.key + ") of run '" +
                                 run_id_ + "' at node '" + node_ +
                                 "' has no receipt and no stub: a dry step does not run it "
                                 "(give a stub for '" +
                                 rec.name + "', or commit the step)");
  throw *refused_;
}

void EffectRunner::begin(std::string node, std::uint64_t step) {
  node_ = std::move(node);
  step_ = step;
  next_ordinal_ = 0;
  keys_.clear();
  hashes_.clear();
  replayed_.clear();
  key_prefix_.clear();  // computed by the attempt's first effect
  reconciliation_.reset();
  broken_ = nullptr;
  fresh_ = false;
  over_.store(false);
  fanning_out_.store(false);
  queued_.clear();
  log_.clear();
  refused_.reset();
}

void EffectRunner::admit(std::string_view name, nlohmann::json& args) {
  if (fanning_out_.load())
    throw graph_error("trellis: effect '" + std::string(name) + "' of run '" + run_id_ +
                      "' called from inside a fan-out's item: an item is one effect, and "
                      "cannot make effects of its own");
  // The attempt is over: nothing more runs in it.
  rethrow_if_broken();
  if (reconciliation_) throw *reconciliation_;
  if (refused_) throw *refused_;
  // Arguments that no store could write back as they are (NaN, infinities, too deep) have no
  // record and no key: refused like the key refuses them, before anything is written.
  try {
    check_member(args, {"args"}, "arguments");  // (the graph_error names the effect)
  } catch (const unwritable_value& e) {
    throw graph_error("trellis: effect '" + std::string(name) + "' of run '" + run_id_ +
                      "' has arguments that cannot be stored: " + e.member() + " " + e.reason());
  }
  // Checked here, not by the key (effect_key_after throws the same), so that a fan-out's items
  // can make their keys on their own threads without failing.
  if (!trellis::detail::valid_utf8(name) || !trellis::detail::valid_utf8_json(args))
    throw graph_error("trellis: effect '" + std::string(name) +
                      "' has an argument (or a name) that is not valid UTF-8");
}

EffectRecord EffectRunner::record_for(std::string_view name, nlohmann::json args,
                                      EffectPolicy policy, std::uint32_t ordinal,
                                      bool compensable) const {
  EffectRecord rec;
  rec.run_id = run_id_;
  rec.key = effect_key_after(key_prefix_, ordinal, name, args);
  rec.name = std::string(name);
  rec.args = std::move(args);
  rec.policy = policy;
  rec.node = node_;
  rec.step = step_;
  rec.ordinal = ordinal;
  rec.compensable = compensable;
  return rec;
}

EffectRecord EffectRunner::prepare(std::string_view name, nlohmann::json args, EffectPolicy policy,
                                   CompensateFn compensate) {
  if (key_prefix_.empty()) key_prefix_ = effect_key_prefix(run_id_, node_, step_);
  EffectRecord rec =
      record_for(name, std::move(args), policy, next_ordinal_++,
                 static_cast<bool>(compensate) || host_.declared_compensation(name) != nullptr);
  keys_.push_back(rec.key);
  if (compensate) compensations_.insert_or_assign(rec.key, std::move(compensate));
  return rec;
}

void EffectRunner::log_queued() {
  std::vector<QueuedEvent> events;
  {
    std::lock_guard lock(mu_);
    events.swap(queued_);
  }
  for (QueuedEvent& e : events) {
    try {
      host_.effect_event(e.kind, std::move(e.detail), e.durable);
    } catch (...) {  // the events are observability: they never stop the items
    }
  }
}

void EffectRunner::event(EventKind kind, nlohmann::json detail, bool durable) {
  if (fanning_out_.load()) {  // logged by the node's thread, between its items (run_many)
    std::lock_guard lock(mu_);
    queued_.push_back(QueuedEvent{kind, std::move(detail), durable});
    return;
  }
  host_.effect_event(kind, std::move(detail), durable);
}

nlohmann::json EffectRunner::run(std::string_view name, nlohmann::json args, EffectPolicy policy,
                                 const EffectFn& fn, CompensateFn compensate) {
  admit(name, args);
  return execute(prepare(name, std::move(args), policy, std::move(compensate)), fn);
}

nlohmann::json EffectRunner::run_cached(std::string_view name, nlohmann::json args,
                                        EffectPolicy policy, const EffectFn& fn,
                                        const EffectCache& cache) {
  if (policy != EffectPolicy::idempotent)
    throw graph_error("trellis: effect '" + std::string(name) + "' of run '" + run_id_ +
                      "' is cached but not idempotent: a cache hit skips the call, so only an "
                      "idempotent effect may be cached");
  check_cache_key(cache.key);
  admit(name, args);
  return execute(prepare(name, std::move(args), policy, {}), fn, &cache);
}

std::vector<EffectOutcome> EffectRunner::run_many(std::string_view name,
                                                  std::vector<nlohmann::json> args,
                                                  EffectPolicy policy, const EffectFn& fn,
                                                  const FanoutOptions& options,
                                                  std::stop_token cancel) {
  for (nlohmann::json& a : args) admit(name, a);
  // Ordinals are reserved in input order; each item makes its record (its key) itself.
  const std::size_t n = args.size();
  if (n == 0) return {};
  const auto first = next_ordinal_;
  next_ordinal_ += static_cast<std::uint32_t>(n);
  if (key_prefix_.empty()) key_prefix_ = effect_key_prefix(run_id_, node_, step_);
  const bool compensable = host_.declared_compensation(name) != nullptr;
  std::vector<std::string> keys(n);  // of the items started, by their threads
  std::vector<EffectOutcome> out(n);
  std::vector<char> started(n, 0);
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> failures{0};
  std::atomic<bool> stop{false};
  const auto exceeded = [&](std::size_t failed) {
    if (options.max_failures && failed > *options.max_failures) return true;
    return options.max_failure_ratio &&
           static_cast<double>(failed) > *options.max_failure_ratio * static_cast<double>(n);
  };
  // Once the attempt cannot commit (a store failure, an effect to reconcile), no item starts.
  const auto attempt_over = [&] { return over_.load(); };
  std::vector<std::string> hashes(n);  // each item's record's, written by the item's thread
  const std::thread::id node_thread = std::this_thread::get_id();
  const auto work = [&] {
    // The node's thread logs the events queued so far between its items (the host is called
    // from that thread only); what is left is logged once the items are done.
    const bool logs = std::this_thread::get_id() == node_thread;
    for (std::size_t i = next++; i < n; i = next++) {
      if (logs) log_queued();
      if (stop.load() || cancel.stop_requested() || attempt_over()) {
        out[i].skipped = true;
        continue;
      }
      try {
        EffectRecord rec = record_for(name, std::move(args[i]), policy,
                                      first + static_cast<std::uint32_t>(i), compensable);
        keys[i] = rec.key;
        started[i] = 1;
        out[i].result = execute(std::move(rec), fn, nullptr, &hashes[i]);
      } catch (...) {
        out[i].error = std::current_exception();
        if (exceeded(++failures)) stop.store(true);
      }
    }
  };
  // A dry step answers from receipts and stubs in the node's thread, one item after another.
  const std::size_t threads =
      dry_ ? 1 : std::min<std::size_t>(n, std::max(1U, options.concurrency));
  fanning_out_.store(true);
  struct EndFanout {  // whatever throws (a thread that cannot start, the host's logging)
    std::atomic<bool>& flag;
    ~EndFanout() { flag.store(false); }
  } end_fanout{fanning_out_};
  if (pool_ != nullptr) {
    pool_->run(work, threads - 1);  // (work() catches what its items throw)
  } else {
    std::vector<std::jthread> helpers;
    try {
      for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    } catch (const std::system_error&) {
      // No more threads: the ones started (and this one) share the items.
    }
    work();
  }  // joined
  fanning_out_.store(false);
  log_queued();
  // The checkpoint lists the keys of the items that were started, in input order.
  for (std::size_t i = 0; i < n; ++i)
    if (started[i]) keys_.push_back(keys[i]);
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < n; ++i)
      if (started[i] && !hashes[i].empty()) hashes_.insert_or_assign(keys[i], hashes[i]);
  }
  // As for a single effect: a broken attempt, an effect to reconcile, or an exception that is
  // not a std::exception (a crash stand-in) ends the node here.
  rethrow_if_broken();
  if (reconciliation_) throw *reconciliation_;
  for (const EffectOutcome& o : out) {
    if (!o.error) continue;
    try {
      std::rethrow_exception(o.error);
    } catch (const std::exception&) {
    }
  }
  return out;
}

nlohmann::json EffectRunner::execute(EffectRecord rec, const EffectFn& fn, const EffectCache* cache,
                                     std::string* hash_slot) {
  if (dry_) return dry_run(std::move(rec));

  std::optional<EffectRecord> stored;
  if (!fresh_) infrastructure([&] { stored = store_.effect(run_id_, rec.key); });
  if (stored) {
    note(*stored, hash_slot);
    switch (stored->status) {
      case EffectStatus::succeeded:
        replayed(*stored);
        logged(*stored, EffectSource::receipt);
        return std::move(stored->result);
      case EffectStatus::failed:
        replayed(*stored);
        logged(*stored, EffectSource::receipt);
        throw effect_failed(stored->key, failure_text(*stored));
      case EffectStatus::transient:  // not final: re-issued with the same key
        rec.issued = stored->issued + 1;
        rec.reconciliation = stored->reconciliation;  // "it did not happen": kept for the audit
        break;
      case EffectStatus::started:  // a crash cut the call off: it may or may not have happened
        if (stored->policy == EffectPolicy::at_most_once ||
            rec.policy == EffectPolicy::at_most_once) {
          reconciliation_required why(
              stored->key, "trellis: effect '" + stored->name + "' (key " + stored->key +
                               ", arguments " + stored->args.dump() + ") of run '" + run_id_ +
                               "' was started and has no receipt: it may have happened, and "
                               "at_most_once never re-runs it; reconcile it with the external "
                               "system");
          {
            std::lock_guard lock(mu_);
            if (!reconciliation_) reconciliation_.emplace(why);
            over_.store(true);
          }
          event(EventKind::effect_reconciliation_required, describe(*stored), true);
          throw why;
        }
        rec.issued = stored->issued + 1;
        break;
    }
  }

  if (cache != nullptr && !stored) {
    // A cache hit is the effect's receipt: written at once (no started record: nothing is
    // called), then replayed like any receipt. The cache is an optimisation of an idempotent
    // effect: an entry the store cannot read (corrupt, or the store failing) is a miss.
    std::optional<CacheEntry> hit;
    try {
      hit = store_.cached(cache->key);
    } catch (const std::exception&) {
      hit.reset();
    }
    if (hit) {
      rec.compensable = false;  // another run did it: this run's failure must not undo it
      rec.status = EffectStatus::succeeded;
      rec.result = std::move(hit->result);
      rec.cached_from = cache->key;
      rec.started_at = now();
      rec.finished_at = rec.started_at;
      seal(rec, chain_head_);
      infrastructure([&] { store_.put_effect(rec, lease_); });
      note(rec, hash_slot);
      logged(rec, EffectSource::receipt);
      nlohmann::json detail = describe(rec);
      detail["cached_from"] = rec.cached_from;
      event(EventKind::effect_completed, std::move(detail), true);
      return std::move(rec.result);
    }
  }

  rec.started_at = now();
  seal(rec, chain_head_);
  infrastructure([&] {
    trellis::failpoint("effect.before_started", run_id_);
    store_.put_effect(rec, lease_);
    trellis::failpoint("effect.after_started", run_id_);
  });
  // A fan-out's item logs only its outcome: its events are logged as the node's thread gets
  // to them, when "started" would say nothing the outcome does not (the started record is
  // written all the same).
  if (!fanning_out_.load()) event(EventKind::effect_started, describe(rec), true);

  const EffectCall call{rec.key,  rec.name,    rec.args,   rec.run_id, rec.node,
                        rec.step, rec.ordinal, rec.issued, {}};
  outcome_into(
      rec, [&] { return fn(call); }, "call");
  rec.finished_at = now();
  seal(rec, chain_head_);
  infrastructure([&] {
    trellis::failpoint("effect.after_call", run_id_);
    store_.put_effect(rec, lease_);
    trellis::failpoint("effect.after_receipt", run_id_);
  });
  note(rec, hash_slot);
  if (cache != nullptr && rec.status == EffectStatus::succeeded) {
    // The receipt is committed: a cache entry that cannot be written is lost, not the step.
    try {
      store_.put_cached(CacheEntry{cache->key, rec.result, cache->graph, rec.node, rec.name,
                                   cache->version, run_id_, rec.step, rec.finished_at});
    } catch (const std::exception&) {
    }
  }
  logged(rec, EffectSource::ran);
  nlohmann::json detail = describe(rec);
  switch (rec.status) {
    case EffectStatus::succeeded:
      event(EventKind::effect_completed, std::move(detail), true);
      return std::move(rec.result);
    case EffectStatus::transient:
      detail["error"] = rec.error;
      event(EventKind::effect_failed, std::move(detail), true);
      throw transient_error(failure_text(rec) + " (transient: retried with the same key)");
    default:
      detail["error"] = rec.error;
      event(EventKind::effect_failed, std::move(detail), true);
      throw effect_failed(rec.key, failure_text(rec));
  }
}

CompensationReport EffectRunner::compensate() {
  const std::vector<EffectRecord> records = store_.effects(run_id_);
  std::map<std::string, const EffectRecord*, std::less<>> done;  // effect key -> compensation
  for (const EffectRecord& r : records)
    if (!r.compensates.empty()) done[r.compensates] = &r;

  CompensationReport report;
  std::vector<std::string>& left = report.left;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const EffectRecord& effect = *it;
    if (!effect.compensates.empty() || !effect.compensable ||
        effect.status != EffectStatus::succeeded)
      continue;
    const auto previous = done.find(effect.key);
    if (previous != done.end() && previous->second->final()) continue;
    ++report.due;

    const CompensateFn* fn = nullptr;
    if (auto own = compensations_.find(effect.key); own != compensations_.end())
      fn = &own->second;
    else
      fn = host_.declared_compensation(effect.name);
    if (fn == nullptr || !*fn) {
      left.push_back(effect.name + " (" + effect.key + ")");
      host_.effect_event(EventKind::compensation_pending, describe(effect), true);
      continue;
    }

    EffectRecord rec;
    rec.run_id = run_id_;
    rec.key = compensation_key(effect.key);
    rec.name = effect.name;
    rec.args = effect.args;
    rec.policy = EffectPolicy::at_least_once;
    rec.node = effect.node;
    rec.step = effect.step;
    rec.ordinal = effect.ordinal;
    rec.compensates = effect.key;
    rec.issued = previous != done.end() ? previous->second->issued + 1 : 1;
    rec.started_at = now();
    seal(rec, chain_head_);
    store_.put_effect(rec, lease_);
    host_.effect_event(EventKind::compensation_started, describe(rec), true);

    const EffectCall call{rec.key,  rec.name,    rec.args,   rec.run_id, rec.node,
                          rec.step, rec.ordinal, rec.issued, effect.key};
    outcome_into(
        rec, [&] { return (*fn)(call, effect.result); }, "compensation");
    trellis::failpoint("compensation.after_call", run_id_);
    rec.finished_at = now();
    seal(rec, chain_head_);
    store_.put_effect(rec, lease_);
    nlohmann::json detail = describe(rec);
    detail["compensates"] = effect.key;
    if (rec.status == EffectStatus::succeeded) {
      host_.effect_event(EventKind::compensation_completed, std::move(detail), true);
    } else {
      detail["error"] = rec.error;
      host_.effect_event(EventKind::compensation_failed, std::move(detail), true);
      if (rec.status == EffectStatus::transient)
        left.push_back(effect.name + " (" + effect.key + ")");
      else
        report.failed.push_back(effect.name + " (" + effect.key + "): " + rec.error);
    }
  }
  return report;
}

}  // namespace detail
}  // namespace trellis::agent
