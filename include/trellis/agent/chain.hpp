#pragma once
/// @file
/// A run's tamper-evident history: a hash chain over its checkpoints and effect records.
///
/// Every checkpoint and effect record carries its own hash and the hash of its predecessor:
/// checkpoint seq n links to checkpoint n-1 (seq 0 links to nothing), an effect record links to
/// the checkpoint its step started from, and a checkpoint's hashed content holds the hashes of
/// the effect records it names (`receipts`, in the order of `effects`). Changing a record and
/// recomputing its own hash therefore breaks the next link: the next checkpoint's prev_hash, or
/// the receipt a checkpoint holds for an effect record. The run loop, the operations and the
/// effect protocol seal what they write; a store seals a record that arrives without a hash.
///
/// A hash is the SHA-256 (64 lower-case hex digits) of the record's JSON form (the one every
/// store persists, checkpoint.hpp and effect.hpp's to_json) without its "hash" member, dumped
/// by nlohmann::json with no whitespace and object members sorted by key (docs/formats.md,
/// "Hash chain", says it byte for byte, for a script that checks a store).
///
/// What the chain cannot tell: the newest checkpoint (nothing links to it yet), an effect
/// record no kept checkpoint names (a step in flight, compensations) or one written again after
/// the newest checkpoint (a retry in flight: it links to that checkpoint), or a run rewritten whole
/// by someone who recomputes every hash. It makes a change to the history evident; it is not a
/// signature.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// The hash `c` should carry: over its JSON form without "hash" (its prev_hash and receipts
/// included).
std::string checkpoint_hash(const Checkpoint& c);
/// The hash `r` should carry: over its JSON form without "hash" (its prev_hash included).
std::string effect_hash(const EffectRecord& r);

/// Seals `c` as the successor of the checkpoint whose hash is `prev_hash` ("" for seq 0): sets
/// its prev_hash and its hash. Its receipts must already be set.
void seal(Checkpoint& c, std::string_view prev_hash);
/// Seals `r` as written after the checkpoint whose hash is `prev_hash`.
void seal(EffectRecord& r, std::string_view prev_hash);

/// The first link of a run's chain that does not hold.
struct ChainBreak {
  /// "checkpoint" (seq names it) or "effect" (key names it; seq is the newest checkpoint that
  /// names the record, when `named`).
  std::string record;
  std::uint64_t seq = 0;
  std::string key;
  bool named = false;    ///< a checkpoint (seq) names the broken record
  std::string expected;  ///< the hash the link expects ("" when there is none to expect)
  std::string found;     ///< the hash found ("" when the record, or its hash, is missing)
  std::string reason;    ///< what is wrong, in words

  friend bool operator==(const ChainBreak&, const ChainBreak&) = default;
};

/// What verify_chain found.
struct ChainReport {
  std::string run_id;
  /// The first checkpoint checked: 0, or the oldest one retention kept, or the first one
  /// sealed after records of a release before hash chains.
  std::uint64_t from_seq = 0;
  /// When retention removed older checkpoints: the prev_hash of the oldest kept one, which the
  /// check starts from (the chain's anchor). Empty otherwise.
  std::string anchor;
  bool trimmed = false;                  ///< older checkpoints were removed by retention
  std::uint64_t checkpoints = 0;         ///< checkpoints whose hash was checked
  std::uint64_t effects = 0;             ///< effect records whose hash was checked
  std::uint64_t legacy_checkpoints = 0;  ///< checkpoints written before hash chains (no hash)
  std::uint64_t legacy_effects = 0;      ///< effect records written before hash chains
  std::optional<ChainBreak> broken;      ///< the first broken link; nullopt: the chain holds

  bool intact() const noexcept { return !broken.has_value(); }
  /// The report in a few lines of text ("intact: ...", or "broken at ...: ...").
  std::string text() const;
};

/// Checks run `run_id`'s hash chain in `store`, oldest checkpoint first, and names the first
/// broken link. Throws unknown_run when the store has no such run.
ChainReport verify_chain(Store& store, std::string_view run_id);

void to_json(nlohmann::json& j, const ChainBreak& b);
/// {"run_id", "intact", "from_seq", "anchor", "trimmed", "checkpoints", "effects",
/// "legacy_checkpoints", "legacy_effects", "broken": null or {"record", "seq", "key", "named",
/// "expected", "found", "reason"}}.
void to_json(nlohmann::json& j, const ChainReport& r);

}  // namespace trellis::agent
