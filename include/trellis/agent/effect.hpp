#pragma once
/// @file
/// Side effects of a run that happen once: `RunContext::effect` (run_context.hpp) wraps a call
/// to an external system (charge a card, send a mail) so that a crash and a replay neither
/// repeat it nor lose its result.
///
/// ```cpp
/// json r = ctx.effect("charge_card", {{"amount", 120}, {"card", "...4242"}},
///                     trellis::agent::EffectPolicy::at_most_once,
///                     [&](const trellis::agent::EffectCall& call) {  // call.key: idempotency key
///                       return payments.charge(120, call.key);
///                     });
/// ```
///
/// The protocol (the idempotency key, the started record and the receipt, what a replay
/// does under each policy; version 1) is described in docs/formats.md, section "Effect
/// protocol": a stored receipt short-circuits the call, and a started record without one (a
/// crash during the call) is re-issued with the same key, except under at_most_once, which
/// fails the run with Reason::reconciliation_required.
///
/// A store failure around a call (the started record or the receipt cannot be committed) is
/// infrastructure, not the node's failure: the attempt does not commit, whatever the node does
/// with the exception, and run()/resume() throw it; a later resume applies the rule for a
/// started record without a receipt.
///
/// What to know when writing one:
/// - Throw transient_error only when the external system says the call did not happen (a 503
///   before processing, a refused connection): its receipt is re-issued even for at_most_once.
///   A timeout whose outcome is unknown is not transient.
/// - Arguments are hashed in a canonical form: -0.0 is 0 and a whole double is an integer
///   (RFC 8785's number rule), so a state restored from a store hashes as the live one did.
///   NaN, infinities, nesting deeper than a store reads back (trellis::max_json_depth, counted
///   in the record: the arguments sit one level down) and text that is not UTF-8 have no key
///   (graph_error, naming the member), and nothing is written.
/// - A result that no store could hold as it is (not UTF-8, NaN, infinite, too deep) turns the
///   receipt into a failure that says so, naming the member; an error text that is not UTF-8
///   is stored with U+FFFD in place of the bad bytes.
/// - The rerun of a node after its pause (an Interrupt without `then`) keys its effects by
///   the step it paused at: what it did before pausing replays, what follows the approval
///   check runs. Each later pause of the same node starts a new step.
/// - Keys are unique per run id: reusing a run id after retention deleted the run repeats its
///   keys (an external system would deduplicate the new call against the old one).
/// - Effects of one node are called from the node's thread, one after another (the ordinal is
///   the call order), except a fan-out's items (fanout.hpp: `ctx.effects`), which run on
///   several threads, their ordinals reserved in input order.
///
/// Compensation: `ctx.effect(name, args, policy, fn, compensate)` also takes a function that
/// undoes a successful effect. When the run fails after the effect succeeded, the compensation
/// runs once per effect (newest first), as an effect of its own (its own key, derived from the
/// effect's, and its own started record and receipt; after a crash during it, it is re-issued
/// with the same key, so the external system can deduplicate it).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "trellis/agent/errors.hpp"
#include "trellis/agent/reconciliation.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

/// What may happen to an effect whose call was cut off by a crash (started, no receipt).
enum class EffectPolicy {
  idempotent,     ///< calling it again is harmless: re-run freely
  at_least_once,  ///< re-issued with the same key (the external system deduplicates)
  at_most_once,   ///< never re-run automatically: the run fails with reconciliation_required
};
TRELLIS_ENUM(EffectPolicy, idempotent, at_least_once, at_most_once);

/// What the effect's function is called with.
struct EffectCall {
  std::string key;      ///< the idempotency key (64 lower-case hex digits): pass it on
  std::string name;     ///< the effect's name
  nlohmann::json args;  ///< its arguments
  std::string run_id;   ///< the run, node and step it belongs to
  std::string node;
  std::uint64_t step = 0;
  std::uint32_t ordinal = 0;  ///< 0 for the first effect of the step, 1 for the next, ...
  std::uint32_t issue = 1;    ///< 1 for the first call under this key, 2 when re-issued, ...
  std::string compensates;    ///< for a compensation: the key of the effect it undoes
};

/// An effect's function: calls the external system and returns what to keep as the receipt.
using EffectFn = std::function<nlohmann::json(const EffectCall&)>;
/// A compensation: undoes the effect whose receipt holds `result`. `call.key` is the
/// compensation's own key, `call.compensates` the effect's; `call.args` are the effect's.
/// It is kept until the run call ends: capture by value (or what outlives the run).
using CompensateFn = std::function<nlohmann::json(const EffectCall&, const nlohmann::json& result)>;

/// Where an effect stands in the store.
enum class EffectStatus {
  started,    ///< committed before the call; no receipt yet
  succeeded,  ///< receipt: the call returned `result`
  failed,     ///< receipt: the call threw `error` (final: a replay throws it again)
  transient,  ///< receipt: the call threw a transient_error (not final: retried, same key)
};
TRELLIS_ENUM(EffectStatus, started, succeeded, failed, transient);

/// One effect of a run as stored: its started record, then its receipt (the same record,
/// with a final status). Listed with the run's history by Store::effects.
struct EffectRecord {
  std::string run_id;
  std::string key;
  std::string name;
  nlohmann::json args;
  EffectPolicy policy = EffectPolicy::idempotent;
  std::string node;
  std::uint64_t step = 0;
  std::uint32_t ordinal = 0;
  EffectStatus status = EffectStatus::started;
  nlohmann::json result;     ///< when succeeded
  std::string error;         ///< when failed or transient
  std::uint32_t issued = 1;  ///< calls made under this key so far
  bool compensable = false;  ///< the effect was declared with a compensation
  std::string compensates;   ///< a compensation's record: the key of the effect it undoes
  std::string started_at;    ///< ISO-8601 UTC, of the newest call
  std::string finished_at;   ///< ISO-8601 UTC, of the receipt (empty while started)
  /// Set when an operator reconciled the effect (operations.hpp): who, why and what they
  /// found. The record then holds a succeeded receipt with their result (it happened), or a
  /// transient one that a resume re-issues under the same key (it did not happen).
  std::optional<Reconciliation> reconciliation = std::nullopt;
  /// A receipt taken from the store's cache (cache_entry.hpp): the key of the cache entry
  /// whose result it holds; the call was not made. Empty for every other record.
  std::string cached_from = {};
  /// The hash of the run's newest checkpoint when this record was written (the checkpoint its
  /// step started from): its link into the run's hash chain (chain.hpp). Empty in a record of
  /// a release before hash chains. (The JSON member is written only when set.)
  std::string prev_hash = {};
  /// This record's hash (chain.hpp: effect_hash); empty while unsealed (a store seals a record
  /// put without one). (The JSON member is written only when set.)
  std::string hash = {};

  /// True once the record holds a final receipt (succeeded or failed).
  bool final() const noexcept {
    return status == EffectStatus::succeeded || status == EffectStatus::failed;
  }

 private:
  auto content() const {
    return std::tie(run_id, key, name, args, policy, node, step, ordinal, status, result, error,
                    issued, compensable, compensates, started_at, finished_at, reconciliation);
  }

 public:
  /// Compares the content, not the seal (prev_hash, hash): a record read back from a store
  /// equals the one written, whether the writer or the store sealed it.
  friend bool operator==(const EffectRecord& a, const EffectRecord& b) {
    return a.content() == b.content();
  }
};

void to_json(nlohmann::json& j, const EffectRecord& r);
void from_json(const nlohmann::json& j, EffectRecord& r);

/// The idempotency key of an effect: 64 lower-case hex digits of SHA-256 over the canonical
/// JSON array [run id, node, step, ordinal, name, args] (object members sorted, so the same
/// arguments always hash alike however they were built).
std::string effect_key(std::string_view run_id, std::string_view node, std::uint64_t step,
                       std::uint32_t ordinal, std::string_view name, const nlohmann::json& args);

/// The key of the compensation of the effect keyed `key`.
std::string compensation_key(std::string_view key);

}  // namespace trellis::agent
