// Cache entries as JSON (what every store persists) and their keys.

#include "trellis/agent/cache_entry.hpp"

#include <string>

#include "trellis/agent/errors.hpp"

namespace trellis::agent {

void to_json(nlohmann::json& j, const CacheEntry& e) {
  j = {{"key", e.key},       {"result", e.result}, {"graph", e.graph},
       {"node", e.node},     {"action", e.action}, {"version", e.version},
       {"run_id", e.run_id}, {"step", e.step},     {"created_at", e.created_at}};
}

void from_json(const nlohmann::json& j, CacheEntry& e) {
  try {
    j.at("key").get_to(e.key);
    e.result = j.at("result");
    j.at("graph").get_to(e.graph);
    j.at("node").get_to(e.node);
    j.at("action").get_to(e.action);
    j.at("version").get_to(e.version);
    j.at("run_id").get_to(e.run_id);
    j.at("step").get_to(e.step);
    j.at("created_at").get_to(e.created_at);
  } catch (const nlohmann::json::exception& ex) {
    throw store_error(std::string("trellis: a cache entry does not decode: ") + ex.what());
  }
}

void check_cache_key(std::string_view key) {
  bool ok = key.size() == 64;
  for (const char ch : key) ok = ok && ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'));
  if (!ok)
    throw store_error("trellis: invalid cache key '" + std::string(key.substr(0, 80)) +
                      "': a cache key is 64 lower-case hex digits (cache_key)");
}

}  // namespace trellis::agent
