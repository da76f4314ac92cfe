#pragma once
// Private to the trellis library (the durable-I/O toolkit): the UTC time texts written into
// sidecars, checkpoints, effect records, events and file names. One formatter, so that every
// layer writes the same text for the same instant (and retention can compare them as text).

#include <chrono>
#include <string>

namespace trellis::detail {

/// "YYYY-MM-DDTHH:MM:SS.mmmZ" (ISO 8601, UTC, milliseconds; instants before 1970 too). Within
/// years 0-9999 the text is fixed-width, so text order is time order.
std::string format_utc(std::chrono::system_clock::time_point time);

/// "YYYYMMDDTHHMMSSZ" (ISO 8601 basic format, UTC, whole seconds): for file names.
std::string format_utc_compact(std::chrono::system_clock::time_point time);

}  // namespace trellis::detail
