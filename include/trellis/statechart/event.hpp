#pragma once
/// @file
/// Events of a statechart: a dotted name (`error.send.failed`) and an optional payload, and
/// SCXML's event descriptors (W3C SCXML 1.0, 3.12.1): a transition's `event` attribute is a
/// space-separated list of descriptors, each matching the names it equals or prefixes on a
/// `.` boundary (`error` matches `error.send.failed`, never `errors`); a trailing `.*` or `.`
/// is ignored, and `*` matches every name.

#include <any>
#include <string>
#include <string_view>
#include <utility>

namespace trellis {

/// An event sent to, or raised inside, a statechart.
struct ChartEvent {
  std::string name;
  /// The payload, if any: a guard or action reads it with `data_as<T>()`.
  std::any data;

  ChartEvent() = default;
  ChartEvent(std::string n) : name(std::move(n)) {}  // NOLINT: an event is its name
  ChartEvent(const char* n) : name(n) {}             // NOLINT
  ChartEvent(std::string n, std::any d) : name(std::move(n)), data(std::move(d)) {}

  /// The payload as a `T`, or nullptr when there is none or it is another type.
  template <class T>
  const T* data_as() const noexcept {
    return std::any_cast<T>(&data);
  }
};

/// Whether one descriptor (`error`, `error.*`, `*`) matches the event name `name`.
bool descriptor_matches(std::string_view descriptor, std::string_view name) noexcept;

/// Whether a space-separated descriptor list (a transition's `event`) matches `name`.
bool event_matches(std::string_view descriptors, std::string_view name) noexcept;

}  // namespace trellis
