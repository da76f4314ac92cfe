// SPDX-License-Identifier: MIT
/// @file
/// The chaos suites' one seam to the stores: `open_chaos_store(spec)` opens the store a spec
/// names, in the parent test and in every chaos_worker child alike.
///
///   file:DIR     a FileStore rooted at DIR (leases are flocks: they end with their process)
///   sqlite:PATH  a SqliteStore at PATH (leases expire after ChaosStoreOptions::lease_ttl)
///
/// A store added later (PostgreSQL: "postgresql://...") joins here and nowhere else: add its
/// branch below, link its target into both chaos executables (chaos_tests.cmake), and add its
/// cases to chaos_test.cpp (chaos_specs()).
#pragma once

#include <trellis/agent/errors.hpp>
#include <trellis/agent/file_store.hpp>
#include <trellis/agent/sqlite_store.hpp>
#include <trellis/agent/store.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace trellis_chaos {

struct ChaosStoreOptions {
  /// The lease time-to-live of stores whose leases expire (SqliteStore; PostgreSQL later).
  std::chrono::milliseconds lease_ttl{1000};
};

/// True when leases of the store `spec` names end only with their holder (FileStore's flocks),
/// so that a stopped (SIGSTOP) holder keeps its runs.
inline bool leases_expire(std::string_view spec) { return !spec.starts_with("file:"); }

/// Opens the store `spec` names (see the file comment); invalid_option for any other spec.
inline std::unique_ptr<trellis::agent::Store> open_chaos_store(std::string_view spec,
                                                               const ChaosStoreOptions& options) {
  namespace ag = trellis::agent;
  if (spec.starts_with("file:"))
    return std::make_unique<ag::FileStore>(std::string(spec.substr(5)));
  if (spec.starts_with("sqlite:")) {
    ag::SqliteStoreOptions o;
    o.lease_ttl = options.lease_ttl;
    return std::make_unique<ag::SqliteStore>(std::string(spec.substr(7)), o);
  }
  throw trellis::invalid_option("chaos: no store for spec '" + std::string(spec) +
                                "' (file:DIR or sqlite:PATH)");
}

}  // namespace trellis_chaos
