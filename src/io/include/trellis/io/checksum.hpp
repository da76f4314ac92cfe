#pragma once
// Private to the trellis library (the durable-I/O toolkit): the "sha256:<hex>" checksums of
// sidecars, line logs and SQLite rows. OpenSSL stays a private dependency of the library, so
// this header is not installed.

#include <string>
#include <string_view>

namespace trellis::detail {

/// Appends the 64 lower-case hex digits of SHA-256(bytes) to `out`.
void sha256_hex_into(std::string_view bytes, std::string& out);

/// "sha256:" followed by the 64 lower-case hex digits of SHA-256(bytes).
std::string checksum_of(std::string_view bytes);

/// True when `text` has the shape "sha256:" + 64 lower-case hex digits.
bool is_checksum_text(std::string_view text) noexcept;

}  // namespace trellis::detail
