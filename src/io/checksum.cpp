// SHA-256 through OpenSSL's EVP digest API (libcrypto; see design.md, dependencies).

#include <trellis/io/checksum.hpp>

#include <openssl/evp.h>

#include <array>
#include <memory>

#include "trellis/base/error.hpp"

namespace trellis::detail {

namespace {
constexpr std::string_view kPrefix = "sha256:";
constexpr std::size_t kHexDigits = 64;
}  // namespace

namespace {

// SHA-256 through one digest fetched once and one context per thread: the one-shot
// EVP_Digest(EVP_sha256()) looks the algorithm up in the provider on every call (OpenSSL 3),
// which costs more than hashing a short text.
const EVP_MD* sha256_md() {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md != nullptr ? md : EVP_sha256();
#else
  return EVP_sha256();
#endif
}

struct ContextFree {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

}  // namespace

void sha256_hex_into(std::string_view bytes, std::string& out) {
  thread_local std::unique_ptr<EVP_MD_CTX, ContextFree> context(EVP_MD_CTX_new());
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_MD_CTX* c = context.get();
  if (c == nullptr || EVP_DigestInit_ex(c, sha256_md(), nullptr) != 1 ||
      EVP_DigestUpdate(c, bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(c, digest.data(), &length) != 1) {
    throw error("trellis: OpenSSL SHA-256 failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + 2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
}

std::string checksum_of(std::string_view bytes) {
  std::string text(kPrefix);
  sha256_hex_into(bytes, text);
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
