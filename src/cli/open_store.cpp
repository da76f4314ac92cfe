// Stores named by a `--store` spec (open_store.hpp).

#include "trellis/cli/open_store.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "trellis/agent/errors.hpp"
#include "trellis/agent/file_store.hpp"
#include "trellis/agent/sqlite_store.hpp"
#if defined(TRELLIS_CLI_POSTGRES)
#include "trellis/agent/postgres_store.hpp"
#endif

namespace trellis::agent::cli {

namespace {

namespace fs = std::filesystem;

bool starts_with_sqlite_header(const fs::path& path) {
  static constexpr std::string_view header{"SQLite format 3\0", 16};
  std::array<char, 16> bytes{};
  std::ifstream in(path, std::ios::binary);
  return in.read(bytes.data(), bytes.size()) &&
         std::string_view(bytes.data(), bytes.size()) == header;
}

/// Before a read-only open: something must be at `path`, of the kind the store keeps there.
void check_present(const fs::path& path, fs::file_type want, std::string_view spec) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || st.type() == fs::file_type::not_found)
    throw not_a_store("trellis: no store at '" + std::string(spec) +
                      "': nothing is there (nothing was created)");
  if (st.type() != want)
    throw not_a_store("trellis: '" + std::string(spec) + "' is not a store: " +
                      (want == fs::file_type::directory ? "a FileStore is a directory"
                                                        : "a SQLite store is a database file"));
}

std::unique_ptr<Store> open_sqlite(const fs::path& path, std::string_view spec, bool read_only) {
  if (read_only) {
    check_present(path, fs::file_type::regular, spec);
    if (fs::file_size(path) > 0 && !starts_with_sqlite_header(path))
      throw not_a_store("trellis: '" + std::string(spec) +
                        "' is not a store: not a SQLite database");
  }
  SqliteStoreOptions options;
  options.read_only = read_only;
  return std::make_unique<SqliteStore>(path, options);
}

bool is_postgres_url(std::string_view spec) {
  return spec.starts_with("postgresql://") || spec.starts_with("postgres://");
}

/// The PostgreSQL store a `postgresql://` URL names. The seam for PostgresStore: a build with
/// the trellis::postgres target defines TRELLIS_CLI_POSTGRES and links it; this one refuses.
std::unique_ptr<Store> open_postgres(std::string_view spec, bool read_only) {
#if defined(TRELLIS_CLI_POSTGRES)
  PostgresStoreOptions options;
  options.url = std::string(spec);
  options.read_only = read_only;
  return std::make_unique<PostgresStore>(std::move(options));
#else
  (void)read_only;
  throw store_error("trellis: --store '" + std::string(spec) +
                    "': this build has no PostgreSQL store (not built with PostgreSQL)");
#endif
}

}  // namespace

std::unique_ptr<Store> open_store(std::string_view spec, bool read_only) {
  if (spec.empty())
    throw invalid_option("trellis: --store is empty: give a directory or sqlite:PATH");
  if (is_postgres_url(spec)) return open_postgres(spec, read_only);
  if (spec.starts_with("sqlite:")) {
    const std::string_view path = spec.substr(7);
    if (path.empty()) throw invalid_option("trellis: --store 'sqlite:' names no database file");
    return open_sqlite(fs::path(path), spec, read_only);
  }
  const fs::path root(spec.starts_with("file:") ? spec.substr(5) : spec);
  std::error_code ec;
  if (fs::is_regular_file(root, ec) && starts_with_sqlite_header(root))
    return open_sqlite(root, spec, read_only);
  if (read_only) check_present(root, fs::file_type::directory, spec);
  FileStoreOptions options;
  options.read_only = read_only;
  return std::make_unique<FileStore>(root, options);
}

}  // namespace trellis::agent::cli
