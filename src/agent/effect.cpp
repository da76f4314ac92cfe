// Effect records as JSON (what every store persists) and idempotency keys.

#include "trellis/agent/effect.hpp"

#include "trellis/agent/cache_entry.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <trellis/io/checksum.hpp>

namespace trellis::agent {

namespace {

std::string sha256_hex(std::string_view bytes) {
  std::string hex;
  trellis::detail::sha256_hex_into(bytes, hex);
  return hex;
}

// True when `j` holds a number that canonical() would change (or refuse).
bool needs_canonical(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::array:
      for (const auto& e : j)
        if (needs_canonical(e)) return true;
      return false;
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return true;
    default:
      return false;
  }
}

// The arguments as they are hashed: numbers in one form whatever type built them (-0.0 is 0,
// a whole double is an integer, as in RFC 8785's number canonicalisation), so the key does not
// depend on how a value travelled (a state restored from a store may hold 1 where the live
// state held 1.0). NaN and infinities have no JSON form: refused.
nlohmann::json canonical(const nlohmann::json& j, std::string_view name) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      nlohmann::json out = nlohmann::json::object();
      for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = canonical(*it, name);
      return out;
    }
    case nlohmann::json::value_t::array: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& e : j) out.push_back(canonical(e, name));
      return out;
    }
    case nlohmann::json::value_t::number_unsigned:
      if (j.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(j.get<std::uint64_t>());
      return j;
    case nlohmann::json::value_t::number_float: {
      const double d = j.get<double>();
      if (!std::isfinite(d))
        throw graph_error("trellis: effect '" + std::string(name) +
                          "' has an argument that is NaN or infinite (no JSON form, no key)");
      // Whole values in the range where every integer is exact become integers.
      if (d == std::trunc(d) && std::fabs(d) <= 9007199254740992.0)
        return static_cast<std::int64_t>(d);
      return d;
    }
    default:
      return j;
  }
}

}  // namespace

namespace detail {

std::string effect_key_prefix(std::string_view run_id, std::string_view node, std::uint64_t step) {
  try {
    std::string prefix = "[";
    prefix += nlohmann::json(run_id).dump();
    prefix += ',';
    prefix += nlohmann::json(node).dump();
    prefix += ',';
    prefix += std::to_string(step);
    prefix += ',';
    return prefix;
  } catch (const nlohmann::json::type_error& e) {
    throw graph_error("trellis: a run id or node name that is not valid UTF-8 has no effect key: " +
                      std::string(e.what()));
  }
}

std::string effect_key_after(std::string_view prefix, std::uint32_t ordinal, std::string_view name,
                             const nlohmann::json& args) {
  // The bytes of the JSON array [run id, node, step, ordinal, name, args] as nlohmann dumps it
  // (compact; each string quoted and escaped, so no two different tuples serialize alike;
  // object members sorted), written piece by piece: the prefix is the same for a whole step.
  std::string text(prefix);
  try {
    text += std::to_string(ordinal);
    text += ',';
    text += nlohmann::json(name).dump();
    text += ',';
    text += needs_canonical(args) ? canonical(args, name).dump() : args.dump();
    text += ']';
  } catch (const nlohmann::json::type_error& e) {
    throw graph_error("trellis: effect '" + std::string(name) +
                      "' has an argument (or a name) that is not valid UTF-8: " + e.what());
  }
  std::string key;
  trellis::detail::sha256_hex_into(text, key);
  return key;
}

}  // namespace detail

std::string effect_key(std::string_view run_id, std::string_view node, std::uint64_t step,
                       std::uint32_t ordinal, std::string_view name, const nlohmann::json& args) {
  return detail::effect_key_after(detail::effect_key_prefix(run_id, node, step), ordinal, name,
                                  args);
}

std::string cache_key(std::string_view graph, std::string_view node, const nlohmann::json& inputs,
                      std::string_view action, std::string_view version) {
  try {
    const nlohmann::json parts = {
        graph, node, needs_canonical(inputs) ? canonical(inputs, action) : inputs, action, version};
    return sha256_hex(parts.dump());
  } catch (const nlohmann::json::type_error& e) {
    throw graph_error("trellis: the inputs of action '" + std::string(action) + "' at node '" +
                      std::string(node) +
                      "' are not valid UTF-8 and have no cache key: " + e.what());
  }
}

std::string compensation_key(std::string_view key) {
  const nlohmann::json parts = {"compensate", key};
  return sha256_hex(parts.dump());
}

void to_json(nlohmann::json& j, const EffectRecord& r) {
  j = {{"run_id", r.run_id},
       {"key", r.key},
       {"name", r.name},
       {"args", r.args},
       {"policy", r.policy},
       {"node", r.node},
       {"step", r.step},
       {"ordinal", r.ordinal},
       {"status", r.status},
       {"result", r.result},
       {"error", r.error},
       {"issued", r.issued},
       {"compensable", r.compensable},
       {"compensates", r.compensates},
       {"started_at", r.started_at},
       {"finished_at", r.finished_at}};
  if (r.reconciliation) j["reconciliation"] = *r.reconciliation;
  if (!r.cached_from.empty()) j["cached_from"] = r.cached_from;
  if (!r.prev_hash.empty()) j["prev_hash"] = r.prev_hash;
  if (!r.hash.empty()) j["hash"] = r.hash;
}

void from_json(const nlohmann::json& j, EffectRecord& r) {
  try {
    j.at("run_id").get_to(r.run_id);
    j.at("key").get_to(r.key);
    j.at("name").get_to(r.name);
    r.args = j.at("args");
    j.at("policy").get_to(r.policy);
    j.at("node").get_to(r.node);
    j.at("step").get_to(r.step);
    j.at("ordinal").get_to(r.ordinal);
    j.at("status").get_to(r.status);
    r.result = j.at("result");
    j.at("error").get_to(r.error);
    j.at("issued").get_to(r.issued);
    j.at("compensable").get_to(r.compensable);
    j.at("compensates").get_to(r.compensates);
    j.at("started_at").get_to(r.started_at);
    j.at("finished_at").get_to(r.finished_at);
    r.reconciliation.reset();  // absent before reconciliations existed, and when none
    if (auto rec = j.find("reconciliation"); rec != j.end())
      from_json(*rec, r.reconciliation.emplace());
    r.cached_from.clear();  // absent before cache entries existed, and when not cached
    if (auto cached = j.find("cached_from"); cached != j.end()) cached->get_to(r.cached_from);
    r.prev_hash.clear();  // the hash chain: absent before it existed, and while unsealed
    if (auto h = j.find("prev_hash"); h != j.end()) h->get_to(r.prev_hash);
    r.hash.clear();
    if (auto h = j.find("hash"); h != j.end()) h->get_to(r.hash);
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: an effect record does not decode: ") + e.what());
  }
}

}  // namespace trellis::agent
