#pragma once
/// @file
/// The web layer's errors (docs/errors.md): what `trellis serve` refuses before it serves, and
/// a request it cannot read. Each derives from trellis::error; what() names the file, option or
/// field and the reason.

#include <string>

#include "trellis/base/error.hpp"

namespace trellis::web {

/// A request the console cannot read: a malformed form or query string (a bad %-escape), a
/// JSON body that does not parse or has a member of the wrong type, a missing or unknown field.
/// The console answers it with 400 and this message. Code "web.bad_request".
class bad_request : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A users file (`--users FILE`) that cannot be read or has a line that is not
/// "NAME sha256:HEX" (what() names the file and the line). Code "web.users_file".
class users_file_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// Options the console will not serve with: a bind to an address other than loopback without
/// TLS (`--tls-cert/--tls-key`) or `--insecure-http`, half a TLS pair, a port out of range, an
/// address it cannot bind. Code "web.refused_option".
class refused_option : public invalid_option {
 public:
  using invalid_option::invalid_option;
  std::string_view id() const noexcept override;
};

}  // namespace trellis::web
