// SPDX-License-Identifier: MIT
// The console's users and their tokens (users.hpp).

#include "trellis/web/users.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <fstream>
#include <sstream>

#include "trellis/web/errors.hpp"

namespace trellis::web {

namespace {

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_Digest(text.data(), text.size(), md.data(), &n, EVP_sha256(), nullptr) != 1)
    throw error("trellis serve: SHA-256 failed (OpenSSL)");
  return to_hex(md.data(), n);
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (!((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
          c == '_' || c == '.' || c == '@'))
      return false;
  }
  return true;
}

}  // namespace

Users Users::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw users_file_error("trellis serve: cannot read the users file " + file.string());
  Users users;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto where = [&] { return file.string() + ":" + std::to_string(number); };
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream words(line);
    std::string name, hash, extra;
    words >> name >> hash >> extra;
    if (!valid_name(name))
      throw users_file_error("trellis serve: " + where() +
                             ": a user's name is 1 to 64 of [A-Za-z0-9._@-]");
    if (hash.size() != 7 + 64 || hash.compare(0, 7, "sha256:") != 0 ||
        hash.find_first_not_of("0123456789abcdef", 7) != std::string::npos || !extra.empty())
      throw users_file_error("trellis serve: " + where() +
                             ": expected \"NAME sha256:HEX\" (64 lower-case hex digits; "
                             "trellis serve --new-token NAME prints one)");
    for (const Entry& e : users.users_) {
      if (e.name == name)
        throw users_file_error("trellis serve: " + where() + ": user '" + name +
                               "' is listed twice");
      if (e.sha256 == hash.substr(7))
        throw users_file_error("trellis serve: " + where() + ": user '" + name +
                               "' has the token of user '" + e.name + "'");
    }
    users.users_.push_back(Entry{name, hash.substr(7)});
  }
  if (in.bad())
    throw users_file_error("trellis serve: cannot read the users file " + file.string());
  if (users.empty())
    throw users_file_error("trellis serve: the users file " + file.string() + " names no user");
  return users;
}

void Users::add(std::string name, std::string_view token) {
  users_.push_back(Entry{std::move(name), sha256_hex(token)});
}

std::optional<std::string> Users::find(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  const std::string hash = sha256_hex(token);
  std::optional<std::string> found;
  for (const Entry& e : users_)  // every entry compared, in constant time each
    if (CRYPTO_memcmp(e.sha256.data(), hash.data(), hash.size()) == 0) found = e.name;
  return found;
}

std::string Users::new_token() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw error("trellis serve: no random bytes for a token (OpenSSL RAND_bytes)");
  return to_hex(bytes.data(), bytes.size());
}

std::string Users::line_for(std::string_view name, std::string_view token) {
  return std::string(name) + " sha256:" + sha256_hex(token);
}

}  // namespace trellis::web
