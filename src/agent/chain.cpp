// A run's hash chain (chain.hpp): the hashes, sealing, and the check.

#include "trellis/agent/chain.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <trellis/io/checksum.hpp>

#include "trellis/agent/errors.hpp"

namespace trellis::agent {

namespace {

// The bytes hashed: the record's JSON without "hash", compact, members sorted (nlohmann's
// objects are ordered by key). Text a store cannot hold (not UTF-8) is refused by the store;
// here it is replaced so that sealing never throws first.
std::string hash_of(nlohmann::json& j) {
  j.erase("hash");
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string hex;
  trellis::detail::sha256_hex_into(text, hex);
  return hex;
}

}  // namespace

std::string checkpoint_hash(const Checkpoint& c) {
  nlohmann::json j = c;
  return hash_of(j);
}

namespace {

// The canonical text of an effect record (hash_of's bytes for `nlohmann::json(r)`), written
// member by member: a fan-out seals two records per item, and building the record's JSON
// object to dump it cost more than the rest of sealing. chain_test checks that both give the
// same bytes.
class EffectText {
 public:
  explicit EffectText(const EffectRecord& r) {
    out_.reserve(512 + r.key.size() + r.prev_hash.size());
    out_ += '{';
    member("args");
    value(r.args);
    if (!r.cached_from.empty()) {
      member("cached_from");
      text(r.cached_from);
    }
    member("compensable");
    out_ += r.compensable ? "true" : "false";
    member("compensates");
    text(r.compensates);
    member("error");
    text(r.error);
    member("finished_at");
    text(r.finished_at);
    member("issued");
    out_ += std::to_string(r.issued);
    member("key");
    text(r.key);
    member("name");
    text(r.name);
    member("node");
    text(r.node);
    member("ordinal");
    out_ += std::to_string(r.ordinal);
    member("policy");
    text(trellis::enumeration<EffectPolicy>::name(r.policy));
    if (!r.prev_hash.empty()) {
      member("prev_hash");
      text(r.prev_hash);
    }
    if (r.reconciliation) {
      member("reconciliation");
      value(nlohmann::json(*r.reconciliation));
    }
    member("result");
    value(r.result);
    member("run_id");
    text(r.run_id);
    member("started_at");
    text(r.started_at);
    member("status");
    text(trellis::enumeration<EffectStatus>::name(r.status));
    member("step");
    out_ += std::to_string(r.step);
    out_ += '}';
  }
  const std::string& str() const noexcept { return out_; }

 private:
  void member(std::string_view name) {
    if (out_.size() > 1) out_ += ',';
    out_ += '"';
    out_ += name;  // (names that need no escaping)
    out_ += "\":";
  }
  // A string as nlohmann dumps it (ensure_ascii off, invalid UTF-8 replaced): printable ASCII
  // other than '"' and '\\' is written as it is; anything else goes through nlohmann.
  void text(std::string_view s) {
    const bool plain = std::all_of(
        s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (!plain) return value(nlohmann::json(std::string(s)));
    out_ += '"';
    out_ += s;
    out_ += '"';
  }
  void value(const nlohmann::json& v) {
    out_ += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  std::string out_;
};

}  // namespace

std::string effect_hash(const EffectRecord& r) {
  std::string hex;
  trellis::detail::sha256_hex_into(EffectText(r).str(), hex);
  return hex;
}

void seal(Checkpoint& c, std::string_view prev_hash) {
  c.prev_hash = std::string(prev_hash);
  c.hash.clear();
  // The state (the big member) moves through the JSON form instead of being copied.
  nlohmann::json state = std::move(c.state);
  c.state = nullptr;
  nlohmann::json j = c;
  j["state"] = std::move(state);
  struct PutBack {
    nlohmann::json& from;
    nlohmann::json& to;
    ~PutBack() { to = std::move(from); }
  } put_back{j["state"], c.state};
  c.hash = hash_of(j);
}

void seal(EffectRecord& r, std::string_view prev_hash) {
  r.prev_hash = std::string(prev_hash);
  r.hash.clear();
  r.hash = effect_hash(r);
}

namespace {

std::string short_hash(const std::string& h) { return h.empty() ? "(none)" : h; }

/// The check, one record after another; stops at the first broken link.
class Checker {
 public:
  Checker(ChainReport& report, const std::vector<Checkpoint>& history,
          const std::vector<EffectRecord>& effects)
      : r_(report), history_(history), effects_(effects) {
    for (const EffectRecord& e : effects_) {
      records_.emplace(e.key, &e);
      if (e.hash.empty()) ++r_.legacy_effects;
    }
    // The newest checkpoint naming each key is the one its record must match (an older one
    // named an earlier record of the key: a retry, a reconciliation replaced it).
    for (std::size_t i = 0; i < history_.size(); ++i)
      for (std::size_t k = 0; k < history_[i].effects.size(); ++k)
        bound_[history_[i].effects[k]] = {i, k};
  }

  void run() {
    if (history_.empty()) return;
    r_.from_seq = history_.front().seq;
    if (history_.front().seq > 0) {
      r_.trimmed = true;
      r_.anchor = history_.front().prev_hash;
    }
    for (std::size_t i = 0; i < history_.size() && r_.intact(); ++i) checkpoint(i);
    for (const EffectRecord& e : effects_) {
      if (!r_.intact()) return;
      if (!bound_.contains(e.key)) unbound(e);
    }
  }

 private:
  void fail(std::string record, std::uint64_t seq, std::string key, std::string expected,
            std::string found, std::string reason) {
    ChainBreak b;
    b.record = std::move(record);
    b.seq = seq;
    b.named = b.record == "checkpoint" || bound_.contains(key);
    b.key = std::move(key);
    b.expected = std::move(expected);
    b.found = std::move(found);
    b.reason = std::move(reason);
    r_.broken = std::move(b);
  }

  void checkpoint(std::size_t i) {
    const Checkpoint& c = history_[i];
    const Checkpoint* prev = i > 0 ? &history_[i - 1] : nullptr;
    if (prev != nullptr && c.seq != prev->seq + 1)
      return fail("checkpoint", c.seq, "", prev->hash, c.prev_hash,
                  "checkpoint " + std::to_string(prev->seq + 1) +
                      (c.seq == prev->seq + 2 ? "" : " to " + std::to_string(c.seq - 1)) +
                      " missing: the history jumps from seq " + std::to_string(prev->seq) + " to " +
                      std::to_string(c.seq));
    if (c.hash.empty()) {
      if (sealed_seen_)
        return fail("checkpoint", c.seq, "", "", "",
                    "it has no hash, though checkpoint " + std::to_string(prev->seq) +
                        " before it has one");
      ++r_.legacy_checkpoints;
      return;
    }
    if (!sealed_seen_) {
      sealed_seen_ = true;
      r_.from_seq = c.seq;
      if ((prev != nullptr || c.seq == 0) && !c.prev_hash.empty())
        return fail("checkpoint", c.seq, "", "", c.prev_hash,
                    prev != nullptr ? "it links to a hash, but checkpoint " +
                                          std::to_string(prev->seq) + " before it has none"
                                    : "the first checkpoint of a run links to nothing");
    } else if (c.prev_hash != prev->hash) {
      return fail("checkpoint", c.seq, "", prev->hash, c.prev_hash,
                  "its prev_hash is not the hash of checkpoint " + std::to_string(prev->seq));
    }
    if (const std::string actual = checkpoint_hash(c); actual != c.hash)
      return fail("checkpoint", c.seq, "", actual, c.hash, "its content does not match its hash");
    if (c.receipts.size() != c.effects.size())
      return fail("checkpoint", c.seq, "", "", "",
                  "it names " + std::to_string(c.effects.size()) + " effect records but holds " +
                      std::to_string(c.receipts.size()) + " receipts");
    ++r_.checkpoints;
    for (std::size_t k = 0; k < c.effects.size() && r_.intact(); ++k) {
      const auto b = bound_.find(c.effects[k]);
      if (b->second.first == i && b->second.second == k) receipt(c, k);
    }
    before_.insert(c.hash);
  }

  // The record of c.effects[k], which c is the newest checkpoint to name.
  void receipt(const Checkpoint& c, std::size_t k) {
    const std::string& key = c.effects[k];
    const std::string& held = c.receipts[k];
    const auto found = records_.find(key);
    if (found == records_.end())
      return fail(
          "effect", c.seq, key, held, "",
          "the effect record that checkpoint " + std::to_string(c.seq) + " names is missing");
    const EffectRecord& e = *found->second;
    if (e.hash.empty()) {
      if (!held.empty())
        return fail("effect", c.seq, key, held, "",
                    "the record has no hash, but checkpoint " + std::to_string(c.seq) +
                        " holds one for it");
      return;  // written before hash chains (counted as such)
    }
    if (!own_hash_holds(e, c.seq)) return;
    if (e.hash != held && e.prev_hash == history_.back().hash) {
      // Re-issued after the newest checkpoint named it (a retry after a durable backoff, a
      // resume after a reconciliation that said it did not happen): a step in flight, which
      // the next checkpoint binds; as the newest checkpoint, it is not checked further.
      ++r_.effects;
      return;
    }
    if (e.hash != held)
      return fail("effect", c.seq, key, held, e.hash,
                  "the record (effect '" + e.name + "') is not the one checkpoint " +
                      std::to_string(c.seq) + " holds the receipt of");
    if (!links_back(e, c.seq)) return;
    ++r_.effects;
  }

  // An effect record no kept checkpoint names (a step in flight, a compensation, or one
  // named only by checkpoints retention removed).
  void unbound(const EffectRecord& e) {
    if (e.hash.empty()) return;  // written before hash chains (counted as such)
    if (!own_hash_holds(e, 0) || !links_back(e, 0)) return;
    ++r_.effects;
  }

  bool own_hash_holds(const EffectRecord& e, std::uint64_t seq) {
    if (const std::string actual = effect_hash(e); actual != e.hash) {
      fail("effect", seq, e.key, actual, e.hash,
           "the record (effect '" + e.name + "') does not match its hash");
      return false;
    }
    return true;
  }

  // The record links to a checkpoint before the one that names it (any kept one, when none
  // does); one retention removed, or one of a release before hash chains, cannot be checked.
  bool links_back(const EffectRecord& e, std::uint64_t seq) {
    const std::set<std::string>& known = seq == 0 && !bound_.contains(e.key) ? all() : before_;
    if (known.contains(e.prev_hash)) return true;
    if (r_.trimmed && !e.prev_hash.empty()) return true;  // its checkpoint was removed
    if (e.prev_hash.empty() && r_.legacy_checkpoints > 0) return true;
    fail("effect", seq, e.key, "", e.prev_hash,
         "the record (effect '" + e.name + "') links to no checkpoint of the run");
    return false;
  }

  const std::set<std::string>& all() {
    if (all_.empty())
      for (const Checkpoint& c : history_)
        if (!c.hash.empty()) all_.insert(c.hash);
    return all_;
  }

  ChainReport& r_;
  const std::vector<Checkpoint>& history_;
  const std::vector<EffectRecord>& effects_;
  std::map<std::string, const EffectRecord*, std::less<>> records_;
  std::map<std::string, std::pair<std::size_t, std::size_t>, std::less<>> bound_;
  std::set<std::string> before_;  // hashes of the checkpoints checked so far
  std::set<std::string> all_;
  bool sealed_seen_ = false;
};

}  // namespace

ChainReport verify_chain(Store& store, std::string_view run_id) {
  const std::vector<Checkpoint> history = store.history(run_id);
  if (history.empty())
    throw unknown_run("trellis: no run '" + std::string(run_id) + "' in the store");
  const std::vector<EffectRecord> effects = store.effects(run_id);
  ChainReport report;
  report.run_id = std::string(run_id);
  Checker(report, history, effects).run();
  return report;
}

std::string ChainReport::text() const {
  std::string out = "run '" + run_id + "': ";
  if (broken) {
    const ChainBreak& b = *broken;
    out += "broken at ";
    out += b.record == "checkpoint"
               ? "checkpoint " + std::to_string(b.seq)
               : "effect record " + b.key +
                     (b.named ? " (named by checkpoint " + std::to_string(b.seq) + ")"
                              : std::string(" (named by no checkpoint)"));
    out += ": " + b.reason;
    if (!b.expected.empty() || !b.found.empty())
      out += "\n  expected " + short_hash(b.expected) + "\n  found    " + short_hash(b.found);
    return out;
  }
  out += "intact: " + std::to_string(checkpoints) + " checkpoint" + (checkpoints == 1 ? "" : "s") +
         " and " + std::to_string(effects) + " effect record" + (effects == 1 ? "" : "s") +
         " checked";
  if (trimmed)
    out += "\n  checked from seq " + std::to_string(from_seq) + ", anchored at " + anchor +
           " (older checkpoints removed by retention)";
  else
    out += ", from seq " + std::to_string(from_seq);
  if (legacy_checkpoints > 0 || legacy_effects > 0)
    out += "\n  " + std::to_string(legacy_checkpoints) + " checkpoint(s) and " +
           std::to_string(legacy_effects) +
           " effect record(s) predate hash chains (written without a hash): not checked";
  return out;
}

void to_json(nlohmann::json& j, const ChainBreak& b) {
  j = {{"record", b.record},     {"seq", b.seq},     {"key", b.key},      {"named", b.named},
       {"expected", b.expected}, {"found", b.found}, {"reason", b.reason}};
}

void to_json(nlohmann::json& j, const ChainReport& r) {
  j = {{"run_id", r.run_id},
       {"intact", r.intact()},
       {"from_seq", r.from_seq},
       {"anchor", r.anchor},
       {"trimmed", r.trimmed},
       {"checkpoints", r.checkpoints},
       {"effects", r.effects},
       {"legacy_checkpoints", r.legacy_checkpoints},
       {"legacy_effects", r.legacy_effects}};
  j["broken"] = r.broken ? nlohmann::json(*r.broken) : nlohmann::json();
}

}  // namespace trellis::agent
