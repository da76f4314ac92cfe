#pragma once
/// @file
/// `Users`: who may use the operator console, each by a secret token. The users file
/// (`trellis serve --users FILE`) has a line per user, "NAME sha256:HEX" (the SHA-256 of the
/// token, so the file holds no secret), and '#' comments; `trellis serve --new-token NAME` prints
/// a fresh token and its line. The name is who a decision or cancellation is recorded as.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::web {

class Users {
 public:
  /// Reads `file`. users_file_error naming the file (and the line) when it cannot be read, has
  /// a malformed line, names a user twice or names no user.
  static Users load(const std::filesystem::path& file);

  /// Adds `name` with `token` (kept as its SHA-256 only).
  void add(std::string name, std::string_view token);
  /// The user whose token `token` is, or nullopt.
  std::optional<std::string> find(std::string_view token) const;
  bool empty() const noexcept { return users_.empty(); }

  /// A fresh token: 32 random bytes (OpenSSL's RAND_bytes) as 64 hex digits.
  static std::string new_token();
  /// The users file line of `name` with `token`: "NAME sha256:HEX".
  static std::string line_for(std::string_view name, std::string_view token);

 private:
  struct Entry {
    std::string name;
    std::string sha256;  ///< 64 lower-case hex digits
  };
  std::vector<Entry> users_;
};

}  // namespace trellis::web
