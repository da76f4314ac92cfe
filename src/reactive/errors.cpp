// The reactive layer's error codes; anchors the classes' vtables in the library.

#include "trellis/reactive/errors.hpp"

namespace trellis {

std::string_view cycle_error::id() const noexcept { return "reactive.cycle"; }

std::string_view disposed_error::id() const noexcept { return "reactive.disposed"; }

std::string_view budget_error::id() const noexcept { return "reactive.budget"; }

}  // namespace trellis
