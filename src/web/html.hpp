#pragma once
// Private to trellis::web: HTML text made safe, and the console's page frame.

#include <string>
#include <string_view>

namespace trellis::web::detail {

/// `text` with & < > " ' escaped: safe in an element's text and in a quoted attribute.
std::string escape(std::string_view text);

/// What every page shows around its body.
struct Frame {
  std::string title = {};
  std::string user = {};  ///< the signed-in user (empty on the sign-in page)
  std::string csrf = {};  ///< the session's CSRF token (the sign-out form)
  bool read_only = false;
  std::size_t waiting = 0;  ///< approvals waiting, for the navigation
};

/// A whole page: `body` (already safe HTML) inside the frame.
std::string page(const Frame& frame, std::string_view body);

/// The stylesheet and the script (served at /static/console.css and /static/console.js).
std::string_view stylesheet();
std::string_view script();

}  // namespace trellis::web::detail
