#pragma once
/// @file
/// `open_store`: a store named the way the `trellis` command's `--store` names it.
///
/// | spec                      | store |
/// |---------------------------|-------|
/// | `sqlite:PATH`             | SqliteStore on the database file PATH |
/// | `postgresql://...`, `postgres://...` | PostgresStore on that URL in a build with PostgreSQL;
/// otherwise refused: store_error "this build has no PostgreSQL store" | | `file:DIR` or `DIR` |
/// FileStore rooted at DIR, except that an existing regular file that starts with SQLite's header
/// is opened as a SqliteStore |
///
/// Opened to read (`read_only`), nothing is created or written: a spec that names nothing
/// (a mistyped path) or a directory or file that holds no store is not_a_store, and the path
/// is left as it was. Opened to write, the store is created when it is missing (as the
/// stores' constructors do).

#include <memory>
#include <string_view>

#include "trellis/agent/store.hpp"

namespace trellis::agent::cli {

/// The store `spec` names (see the table above), opened to read only when `read_only`.
/// Throws not_a_store, store_error (an unsupported URL, a store that cannot be opened) or
/// invalid_option (an empty spec).
std::unique_ptr<Store> open_store(std::string_view spec, bool read_only);

}  // namespace trellis::agent::cli
