// The root's and the shared errors' codes and messages; anchors their vtables in the library.

#include "trellis/base/error.hpp"

#include <utility>

namespace trellis {

std::string_view error::id() const noexcept { return "base.error"; }

std::string_view invalid_option::id() const noexcept { return "base.invalid_option"; }

std::string_view unknown_failpoint::id() const noexcept { return "base.unknown_failpoint"; }

unwritable_value::unwritable_value(std::string object, std::string member, std::string reason)
    : error("trellis: cannot write " + object + ": " +
            (member.empty() ? std::string("the value") : "member " + member) + " " + reason +
            "; nothing was written"),
      object_(std::move(object)),
      member_(std::move(member)),
      reason_(std::move(reason)) {}

std::string_view unwritable_value::id() const noexcept { return "base.unwritable_value"; }

}  // namespace trellis
