#pragma once
/// @file
/// `follow_events`: a run's event log, replayed and then followed as it grows (what
/// `trellis runs events RUN --follow` prints), on any store: the stored events after a
/// position, then each one appended later, with no gap and no duplicate (positions only grow:
/// StoredEvent::seq). It polls the store (Store::events_after), so it works across processes
/// and needs no connection held open.

#include <chrono>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string_view>

#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// Calls `on_event` for every event of run `run_id` after position `after_seq`, oldest first:
/// those stored now, then those appended later, looking every `poll`, until `stop` is
/// requested or `on_event` returns false. Returns the position of the last event it passed
/// (`after_seq` when none). unknown_run when the run does not exist when it starts.
std::uint64_t follow_events(Store& store, std::string_view run_id, std::uint64_t after_seq,
                            const std::function<bool(const StoredEvent&)>& on_event,
                            std::stop_token stop,
                            std::chrono::milliseconds poll = std::chrono::milliseconds(200));

}  // namespace trellis::agent
