// Effect records as JSON (what every store persists) and idempotency keys.

#include "trellis/agent/effect.hpp"

#include "../persist/checksum.hpp"

namespace trellis::agent {

namespace {

// checksum_of gives "sha256:<hex>"; a key is the hex digits alone.
std::string sha256_hex(std::string_view bytes) {
  std::string text = trellis::detail::checksum_of(bytes);
  return text.substr(text.find(':') + 1);
}

}  // namespace

std::string effect_key(std::string_view run_id, std::string_view node, std::uint64_t step,
                       std::uint32_t ordinal, std::string_view name, const nlohmann::json& args) {
  // A JSON array of the parts: each string is quoted and escaped, so no two different
  // tuples serialize alike; objects dump with their members sorted (nlohmann's std::map).
  const nlohmann::json parts = {run_id, node, step, ordinal, name, args};
  return sha256_hex(parts.dump());
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
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: an effect record does not decode: ") + e.what());
  }
}

}  // namespace trellis::agent
