// The chain encoding of checkpoints shared by FileStore and SqliteStore (see the header).

#include "checkpoint_codec.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <trellis/io/json_text.hpp>
#include "trellis/agent/errors.hpp"

namespace trellis::agent::detail {

namespace {

std::string object_of(const Checkpoint& c) {
  return "checkpoint " + std::to_string(c.seq) + " of run '" + c.run_id + "'";
}

std::string object_of(const EffectRecord& r) {
  return "effect '" + r.name + "' (key " + r.key + ") of run '" + r.run_id + "'";
}

// A refusal found in the full record of `c`, named by its place in the checkpoint:
// "/full/state/x" becomes "/state/x". (The checks name no object: building the name costs an
// allocation per commit, and it is only needed here.)
[[noreturn]] void rethrow_in_checkpoint(const unwritable_value& e, const Checkpoint& c) {
  constexpr std::string_view envelope = "/full";
  std::string member = e.member();
  if (std::string_view(member).starts_with(envelope)) member.erase(0, envelope.size());
  throw unwritable_value(object_of(c), std::move(member), e.reason());
}

// The checkpoint as JSON without "seq" (the record carries it).
nlohmann::json body_of(const Checkpoint& c) {
  nlohmann::json j = c;
  j.erase("seq");
  return j;
}

// JSON's == holds 0.0 == -0.0 and 1 == 1.0; a delta must not lose either difference (the
// restored state would differ from the one the program had), so members are compared by
// type and, for floats, by sign too.
bool identical(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case nlohmann::json::value_t::object: {
      if (a.size() != b.size()) return false;
      for (auto it = a.begin(); it != a.end(); ++it) {
        auto other = b.find(it.key());
        if (other == b.end() || !identical(*it, *other)) return false;
      }
      return true;
    }
    case nlohmann::json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!identical(a[i], b[i])) return false;
      return true;
    }
    case nlohmann::json::value_t::number_float: {
      const double x = a.get<double>();
      const double y = b.get<double>();
      return x == y && std::signbit(x) == std::signbit(y);
    }
    default:
      return a == b;
  }
}

// Members of `now` that differ from `before` into `set`, members gone into `unset`. The
// member "state" is skipped when `skip_state` (it is diffed one level down instead).
void diff_members(const nlohmann::json& before, const nlohmann::json& now, bool skip_state,
                  nlohmann::json& set, nlohmann::json& unset) {
  for (auto it = now.begin(); it != now.end(); ++it) {
    if (skip_state && it.key() == "state") continue;
    auto old = before.find(it.key());
    if (old == before.end() || !identical(*old, it.value())) set[it.key()] = it.value();
  }
  for (auto it = before.begin(); it != before.end(); ++it) {
    if (skip_state && it.key() == "state") continue;
    if (!now.contains(it.key())) unset.push_back(it.key());
  }
}

// The hash chain's link (chain.hpp) is implied in a delta: a delta that neither sets nor
// unsets "prev_hash" has the "hash" of the checkpoint before it as its prev_hash (docs/formats.md),
// which saves writing a hash twice per step. The encoder writes it only when it is not that.
void imply_link(const nlohmann::json& before, const nlohmann::json& now, nlohmann::json& set,
                nlohmann::json& unset) {
  const auto before_hash = before.find("hash");
  if (before_hash == before.end()) return;  // nothing implied: the diff says it as it is
  const auto prev = now.find("prev_hash");
  if (prev != now.end()) {
    if (*prev == *before_hash)
      set.erase("prev_hash");
    else
      set["prev_hash"] = *prev;
  } else if (std::find(unset.begin(), unset.end(), "prev_hash") == unset.end()) {
    unset.push_back("prev_hash");
  }
}

[[noreturn]] void refuse(const std::string& why) {
  throw store_error("trellis: a checkpoint record is invalid: " + why);
}

void apply_members(nlohmann::json& target, const nlohmann::json& record, const char* set_key,
                   const char* unset_key) {
  if (auto set = record.find(set_key); set != record.end()) {
    if (!set->is_object()) refuse(std::string("\"") + set_key + "\" is not an object");
    for (auto it = set->begin(); it != set->end(); ++it) target[it.key()] = it.value();
  }
  if (auto unset = record.find(unset_key); unset != record.end()) {
    if (!unset->is_array()) refuse(std::string("\"") + unset_key + "\" is not an array");
    for (const auto& key : *unset) {
      if (!key.is_string()) refuse(std::string("\"") + unset_key + "\" holds a non-string");
      target.erase(key.get<std::string>());
    }
  }
}

}  // namespace

void check_member(nlohmann::json& member, std::initializer_list<const char*> path,
                  const std::string& object) {
  if (path.size() == 1) {  // a top-level member: walked where it is
    trellis::detail::check_writable_member(member, *path.begin(), object);
    return;
  }
  nlohmann::json record = nlohmann::json::object();
  nlohmann::json* slot = &record;
  for (const char* key : path) slot = &(*slot)[key];
  *slot = std::move(member);
  struct PutBack {
    nlohmann::json& to;
    nlohmann::json& from;
    ~PutBack() { to = std::move(from); }
  } put_back{member, *slot};
  trellis::detail::check_writable(record, object);
}

void check_writable(Checkpoint& c) {
  const std::string object = "a checkpoint";  // named on a refusal
  try {
    // In the order the full record holds them (its members are sorted), so that every store
    // names the same member when several are bad.
    if (c.decision) {
      if (c.decision->request.approval)
        check_member(c.decision->request.approval->proposed_input,
                     {"full", "decision", "request", "approval", "proposed_input"}, object);
      if (auto* input = std::get_if<Input>(&c.decision->given))
        check_member(input->value, {"full", "decision", "value"}, object);
    }
    if (c.interrupt && c.interrupt->approval)
      check_member(c.interrupt->approval->proposed_input,
                   {"full", "interrupt", "approval", "proposed_input"}, object);
    check_member(c.state, {"full", "state"}, object);
  } catch (const unwritable_value& e) {
    rethrow_in_checkpoint(e, c);
  }
}

void check_writable(const EffectRecord& r) {
  try {
    // (The object is named only on a refusal.)
    trellis::detail::check_writable_member(r.args, "args", std::string());
    trellis::detail::check_writable_member(r.result, "result", std::string());
  } catch (const unwritable_value& e) {
    throw unwritable_value(object_of(r), e.member(), e.reason());
  }
}

std::optional<std::string> decode_cache_entry(const nlohmann::json& record, std::string_view key,
                                              CacheEntry& out) {
  try {
    from_json(record, out);
  } catch (const store_error& e) {
    return std::string(e.what());
  }
  if (out.key != key) return "it holds the entry of another key ('" + out.key + "')";
  return std::nullopt;
}

nlohmann::json effect_json(const EffectRecord& r) {
  nlohmann::json j = r;
  trellis::detail::check_writable(j, object_of(r));
  return j;
}

nlohmann::json CheckpointEncoder::encode(const Checkpoint& c) {
  nlohmann::json now = body_of(c);
  try {
    check_member(now, {"full"}, "a checkpoint");  // before the encoder moves on
  } catch (const unwritable_value& e) {
    rethrow_in_checkpoint(e, c);
  }
  nlohmann::json record = {{"seq", c.seq}};
  if (!previous_ || since_full_ + 1 >= every_) {
    record["full"] = now;
    since_full_ = 0;
  } else {
    const nlohmann::json& before = *previous_;
    const auto old_state = before.find("state");
    const bool diff_state =
        old_state != before.end() && old_state->is_object() && now.at("state").is_object();
    nlohmann::json set = nlohmann::json::object();
    nlohmann::json unset = nlohmann::json::array();
    diff_members(before, now, diff_state, set, unset);
    imply_link(before, now, set, unset);
    if (!set.empty()) record["set"] = std::move(set);
    if (!unset.empty()) record["unset"] = std::move(unset);
    if (diff_state) {
      nlohmann::json state_set = nlohmann::json::object();
      nlohmann::json state_unset = nlohmann::json::array();
      diff_members(*old_state, now.at("state"), false, state_set, state_unset);
      if (!state_set.empty()) record["state_set"] = std::move(state_set);
      if (!state_unset.empty()) record["state_unset"] = std::move(state_unset);
    }
    ++since_full_;
  }
  previous_ = std::move(now);
  return record;
}

void CheckpointEncoder::continue_after(nlohmann::json previous, std::size_t since_full) {
  previous.erase("seq");
  previous_ = std::move(previous);
  since_full_ = since_full;
}

bool CheckpointDecoder::is_full(const nlohmann::json& record) {
  return record.is_object() && record.contains("full");
}

std::uint64_t CheckpointDecoder::apply(const nlohmann::json& record) {
  if (!record.is_object()) refuse("not an object");
  const auto seq = record.find("seq");
  if (seq == record.end() || !seq->is_number_unsigned()) refuse("\"seq\" is not an unsigned");
  const std::uint64_t n = seq->get<std::uint64_t>();
  if (started_ && n <= seq_)
    refuse("seq " + std::to_string(n) + " does not follow seq " + std::to_string(seq_));
  if (const auto full = record.find("full"); full != record.end()) {
    if (!full->is_object()) refuse("\"full\" is not an object");
    current_ = *full;
    since_full_ = 0;
  } else {
    if (!started_) refuse("a delta record (seq " + std::to_string(n) + ") has no record before it");
    nlohmann::json before_hash;  // null: the record before has no hash
    if (const auto h = current_.find("hash"); h != current_.end()) before_hash = *h;
    apply_members(current_, record, "set", "unset");
    if (!before_hash.is_null()) {  // the implied link (imply_link)
      const auto set = record.find("set");
      const auto unset = record.find("unset");
      const bool said = (set != record.end() && set->contains("prev_hash")) ||
                        (unset != record.end() &&
                         std::find(unset->begin(), unset->end(), "prev_hash") != unset->end());
      if (!said) current_["prev_hash"] = std::move(before_hash);
    }
    if (record.contains("state_set") || record.contains("state_unset")) {
      nlohmann::json& state = current_["state"];
      if (!state.is_object()) refuse("a state delta over a state that is not an object");
      apply_members(state, record, "state_set", "state_unset");
    }
    ++since_full_;
  }
  seq_ = n;
  started_ = true;
  return n;
}

Checkpoint CheckpointDecoder::current() const {
  if (!started_) refuse("no record");
  nlohmann::json j = current_;
  j["seq"] = seq_;
  Checkpoint c;
  from_json(j, c);
  return c;
}

}  // namespace trellis::agent::detail
