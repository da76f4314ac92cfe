// The statechart layer's error codes; anchors the classes' vtables in the library.

#include "trellis/statechart/errors.hpp"

namespace trellis {

std::string_view chart_error::id() const noexcept { return "statechart.definition"; }
std::string_view unknown_state::id() const noexcept { return "statechart.unknown_state"; }
std::string_view chart_livelock::id() const noexcept { return "statechart.livelock"; }

}  // namespace trellis
