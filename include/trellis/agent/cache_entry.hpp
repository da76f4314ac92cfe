#pragma once
/// @file
/// Node result caching: a `CacheEntry` keeps the successful result of an idempotent effect
/// under a key made of what decides it (the graph's hash, the node, the inputs, the action and
/// its version), so a later run, of any id, that asks the same gets the result without calling
/// the action again. Entries belong to the store, not to a run: they outlive the run that made
/// them (Store::cached, Store::put_cached).
///
/// A run asks for one with `ctx.effect(name, args, EffectPolicy::idempotent, fn, cache)`
/// (run_context.hpp): on a hit the effect's receipt is written from the entry (its record says
/// `cached_from`), on a miss the effect runs as any other and its successful result is put in
/// the cache. Only idempotent effects may be cached (graph_error otherwise): a hit skips the
/// call, which must not matter. The cache is an optimisation: an entry the store cannot read is
/// a miss, and a result it cannot put is not cached (the step goes on either way). A receipt
/// taken from the cache is never compensated by this run (another run made the effect).

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trellis::agent {

/// One cached result, as every store keeps it (docs/formats.md).
struct CacheEntry {
  std::string key;         ///< 64 lower-case hex digits (cache_key)
  nlohmann::json result;   ///< the effect's successful result
  std::string graph;       ///< the graph (its hash or fingerprint) whose run made it
  std::string node;        ///< the node whose effect made it
  std::string action;      ///< the effect's (action's) name
  std::string version;     ///< the action's version
  std::string run_id;      ///< the run that made it (which may since have been deleted)
  std::uint64_t step = 0;  ///< that run's step
  std::string created_at;  ///< ISO-8601 UTC

  friend bool operator==(const CacheEntry&, const CacheEntry&) = default;
};

void to_json(nlohmann::json& j, const CacheEntry& e);
/// Throws store_error naming the member when `j` is not a cache entry.
void from_json(const nlohmann::json& j, CacheEntry& e);

/// Throws store_error unless `key` is 64 lower-case hex digits (what cache_key gives).
void check_cache_key(std::string_view key);

/// The cache key: 64 lower-case hex digits of SHA-256 over the JSON array [graph, node,
/// inputs, action, version], the inputs in canonical form (object members sorted; -0.0 is 0
/// and a whole double an integer, as for effect keys). graph_error for inputs with no JSON
/// form (NaN, infinities, text that is not UTF-8).
std::string cache_key(std::string_view graph, std::string_view node, const nlohmann::json& inputs,
                      std::string_view action, std::string_view version);

/// What a run's effect is cached under (RunContext::effect): the key, and what the entry
/// records of where it came from (the node and the action's name are the effect's own).
struct EffectCache {
  std::string key;      ///< cache_key(graph, node, inputs, action, version)
  std::string graph;    ///< recorded in the entry
  std::string version;  ///< recorded in the entry
};

}  // namespace trellis::agent
