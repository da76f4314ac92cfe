// follow_events (follow.hpp): replay, then poll for what is appended.

#include "trellis/agent/follow.hpp"

#include <condition_variable>
#include <mutex>
#include <string>

#include "trellis/agent/errors.hpp"

namespace trellis::agent {

std::uint64_t follow_events(Store& store, std::string_view run_id, std::uint64_t after_seq,
                            const std::function<bool(const StoredEvent&)>& on_event,
                            std::stop_token stop, std::chrono::milliseconds poll) {
  if (!store.latest(run_id))
    throw unknown_run("trellis: no run '" + std::string(run_id) + "' in the store");
  std::mutex m;
  std::condition_variable_any wake;
  for (;;) {
    for (const StoredEvent& e : store.events_after(run_id, after_seq)) {
      if (stop.stop_requested()) return after_seq;
      after_seq = e.seq;
      if (!on_event(e)) return after_seq;
    }
    std::unique_lock lock(m);
    if (wake.wait_for(lock, stop, poll, [] { return false; }) || stop.stop_requested())
      return after_seq;
  }
}

}  // namespace trellis::agent
