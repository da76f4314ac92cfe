// Failpoint registry: a small mutex-guarded table, consulted only once something is armed
// (or before TRELLIS_FAILPOINT has been read); the armed/none flag is the only fast-path state.

#include "trellis/persist/failpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "file_io.hpp"
#include "trellis/error.hpp"

namespace trellis {

namespace detail {
std::atomic<std::uint8_t> failpoint_state{failpoints_unknown};
}  // namespace detail

namespace {

struct Armed {
  std::string_view name;  // points into failpoint_names
  FailpointAction action;
  unsigned from_hit;
  unsigned hits = 0;
};

struct Registry {
  std::mutex mutex;
  std::vector<Armed> armed;
  bool environment_read = false;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::string_view known_name(std::string_view name) {
  const auto* found = std::find(failpoint_names.begin(), failpoint_names.end(), name);
  return found == failpoint_names.end() ? std::string_view{} : *found;
}

std::string known_list() {
  std::string list;
  for (std::string_view name : failpoint_names) {
    list += list.empty() ? "" : ", ";
    list += name;
  }
  return list;
}

void publish(Registry& r) {
  detail::failpoint_state.store(r.armed.empty() ? detail::failpoints_none : detail::failpoints_some,
                                std::memory_order_relaxed);
}

void arm_locked(Registry& r, std::string_view name, FailpointAction action, unsigned from_hit) {
  std::erase_if(r.armed, [&](const Armed& a) { return a.name == name; });
  if (action != FailpointAction::none) {
    r.armed.push_back({name, action, std::max(from_hit, 1U)});
  }
}

[[noreturn]] void environment_error(const std::string& text) {
  std::fprintf(stderr, "trellis: TRELLIS_FAILPOINT: %s (known failpoints: %s)\n", text.c_str(),
               known_list().c_str());
  std::abort();
}

// Parses TRELLIS_FAILPOINT once; the caller holds the registry's mutex.
void read_environment_locked(Registry& r) {
  if (r.environment_read) {
    return;
  }
  r.environment_read = true;
  const char* value = std::getenv("TRELLIS_FAILPOINT");
  std::string_view text = value == nullptr ? std::string_view{} : std::string_view(value);
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) {
      continue;
    }
    unsigned from_hit = 1;
    if (const std::size_t at = item.find('@'); at != std::string_view::npos) {
      const std::string count(item.substr(at + 1));
      char* end = nullptr;
      const unsigned long parsed = std::strtoul(count.c_str(), &end, 10);
      if (count.empty() || *end != '\0' || parsed == 0 || parsed > 1'000'000'000UL) {
        environment_error("bad hit count in '" + std::string(item) + "'");
      }
      from_hit = static_cast<unsigned>(parsed);
      item = item.substr(0, at);
    }
    FailpointAction action = FailpointAction::kill;
    if (const std::size_t colon = item.find(':'); colon != std::string_view::npos) {
      const std::string_view verb = item.substr(colon + 1);
      if (verb == "kill") {
        action = FailpointAction::kill;
      } else if (verb == "error") {
        action = FailpointAction::error;
      } else {
        environment_error("unknown action '" + std::string(verb) + "' (kill or error)");
      }
      item = item.substr(0, colon);
    }
    const std::string_view name = known_name(item);
    if (name.empty()) {
      environment_error("unknown failpoint '" + std::string(item) + "'");
    }
    arm_locked(r, name, action, from_hit);
  }
}

}  // namespace

void arm_failpoint(std::string_view name, FailpointAction action, unsigned from_hit) {
  const std::string_view known = known_name(name);
  if (known.empty()) {
    throw error("trellis: unknown failpoint '" + std::string(name) +
                "' (known failpoints: " + known_list() + ")");
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  read_environment_locked(r);
  arm_locked(r, known, action, from_hit);
  publish(r);
}

void disarm_failpoint(std::string_view name) { arm_failpoint(name, FailpointAction::none); }

void disarm_failpoints() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.environment_read = true;  // an explicit reset also discards the environment's arming
  r.armed.clear();
  publish(r);
}

ScopedFailpoint::ScopedFailpoint(std::string_view name, FailpointAction action, unsigned from_hit)
    : name_(name) {
  arm_failpoint(name, action, from_hit);
  name_ = known_name(name);  // the static spelling: the caller's string may not outlive us
}

ScopedFailpoint::~ScopedFailpoint() {
  try {
    disarm_failpoint(name_);
  } catch (...) {  // unreachable: the name was validated when armed
  }
}

namespace detail {

FailpointAction failpoint_take_hit(std::string_view name) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  read_environment_locked(r);
  publish(r);
  for (Armed& a : r.armed) {
    if (a.name == name && ++a.hits >= a.from_hit) {
      return a.action;
    }
  }
  return FailpointAction::none;
}

void failpoint_fire(std::string_view name, FailpointAction action,
                    const std::filesystem::path& file) {
  switch (action) {
    case FailpointAction::none:
      return;
    case FailpointAction::kill:
      std::raise(SIGKILL);
      std::abort();  // not reached: SIGKILL cannot be caught
    case FailpointAction::error:
      throw persist_error(file, "injected failure at failpoint " + std::string(name),
                          errno_code(EIO));
  }
}

}  // namespace detail

}  // namespace trellis
