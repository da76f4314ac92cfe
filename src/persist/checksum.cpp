// SHA-256 through OpenSSL's EVP one-shot digest (libcrypto; see design.md, dependencies).

#include "checksum.hpp"

#include <openssl/evp.h>

#include <array>

#include "trellis/error.hpp"

namespace trellis::detail {

namespace {
constexpr std::string_view kPrefix = "sha256:";
constexpr std::size_t kHexDigits = 64;
}  // namespace

std::string checksum_of(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw error("trellis: OpenSSL EVP_Digest(SHA-256) failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(kPrefix);
  text.reserve(kPrefix.size() + 2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    text += kHex[digest[i] >> 4];
    text += kHex[digest[i] & 0xF];
  }
  return text;
}

bool is_checksum_text(std::string_view text) noexcept {
  if (text.size() != kPrefix.size() + kHexDigits || !text.starts_with(kPrefix)) {
    return false;
  }
  for (char c : text.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

}  // namespace trellis::detail
