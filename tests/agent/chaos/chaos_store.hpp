// SPDX-License-Identifier: MIT
/// @file
/// The chaos suites' one seam to the stores: `open_chaos_store(spec)` opens the store a spec
/// names, in the parent test and in every chaos_worker child alike.
///
///   file:DIR          a FileStore rooted at DIR (leases are flocks: they end with their
///                     process)
///   sqlite:PATH       a SqliteStore at PATH (leases expire after ChaosStoreOptions::lease_ttl)
///   postgres:SCHEMA   a PostgresStore in the database libpq's environment names (PGHOST,
///                     PGPORT, PGUSER, PGDATABASE, PGPASSWORD: what pg_virtualenv sets), its
///                     tables in SQL schema SCHEMA ("trellis" when empty); leases expire
///   postgresql://...  a PostgresStore at that URL (also postgres://...), schema "trellis"
///
/// The PostgreSQL specs open a store only in the executables built with TRELLIS_CHAOS_POSTGRES
/// (trellis_chaos_postgres_tests and trellis_chaos_postgres_worker, chaos_tests.cmake), so that
/// the file and SQLite chaos executables never link libpq; elsewhere they are invalid_option.
#pragma once

#include <trellis/agent/errors.hpp>
#include <trellis/agent/file_store.hpp>
#include <trellis/agent/sqlite_store.hpp>
#include <trellis/agent/store.hpp>
#ifdef TRELLIS_CHAOS_POSTGRES
#include <trellis/agent/postgres_store.hpp>
#endif

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace trellis_chaos {

struct ChaosStoreOptions {
  /// The lease time-to-live of stores whose leases expire (SqliteStore, PostgresStore).
  std::chrono::milliseconds lease_ttl{1000};
};

/// True when leases of the store `spec` names end only with their holder (FileStore's flocks),
/// so that a stopped (SIGSTOP) holder keeps its runs.
inline bool leases_expire(std::string_view spec) { return !spec.starts_with("file:"); }

/// True when `spec` names a PostgresStore.
inline bool is_postgres(std::string_view spec) {
  return spec.starts_with("postgres:") || spec.starts_with("postgresql://");
}

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
  if (is_postgres(spec)) {
#ifdef TRELLIS_CHAOS_POSTGRES
    ag::PostgresStoreOptions o;
    o.lease_ttl = options.lease_ttl;
    if (spec.starts_with("postgres://") || spec.starts_with("postgresql://")) {
      o.url = std::string(spec);
    } else if (spec.size() > 9) {  // postgres:SCHEMA
      o.schema = std::string(spec.substr(9));
    }
    return std::make_unique<ag::PostgresStore>(o);
#else
    throw trellis::invalid_option("chaos: spec '" + std::string(spec) +
                                  "' needs the PostgreSQL chaos executables "
                                  "(trellis_chaos_postgres_tests, trellis_chaos_postgres_worker)");
#endif
  }
  throw trellis::invalid_option("chaos: no store for spec '" + std::string(spec) +
                                "' (file:DIR, sqlite:PATH, postgres:SCHEMA or postgresql://...)");
}

}  // namespace trellis_chaos
