// Failpoint registry: a small mutex-guarded table, consulted only once something is armed
// (or before TRELLIS_FAILPOINT has been read); the armed/none flag is the only fast-path state.

#include "trellis/persist/failpoint.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <trellis/io/file_io.hpp>
#include "trellis/error.hpp"

namespace trellis {

namespace detail {
std::atomic<std::uint8_t> failpoint_state{failpoints_unknown};
}  // namespace detail

namespace {

struct Armed {
  std::string_view name;  // points into failpoint_names or io_failpoint_names
  FailpointArming arming;
  unsigned hits = 0;
};

// The errno names the environment accepts after the colon.
struct ErrnoName {
  std::string_view name;
  int value;
};
constexpr std::array<ErrnoName, 5> errno_names = {{
    {"EIO", EIO},
    {"ENOSPC", ENOSPC},
    {"EDQUOT", EDQUOT},
    {"EROFS", EROFS},
    {"EFBIG", EFBIG},
}};

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
  if (const auto* found = std::find(failpoint_names.begin(), failpoint_names.end(), name);
      found != failpoint_names.end()) {
    return *found;
  }
  const auto* found = std::find(io_failpoint_names.begin(), io_failpoint_names.end(), name);
  return found == io_failpoint_names.end() ? std::string_view{} : *found;
}

std::string known_list() {
  std::string list;
  for (std::string_view name : failpoint_names) {
    list += list.empty() ? "" : ", ";
    list += name;
  }
  for (std::string_view name : io_failpoint_names) {
    list += ", ";
    list += name;
  }
  return list;
}

void publish(Registry& r) {
  detail::failpoint_state.store(r.armed.empty() ? detail::failpoints_none : detail::failpoints_some,
                                std::memory_order_relaxed);
}

void arm_locked(Registry& r, std::string_view name, FailpointArming arming) {
  std::erase_if(r.armed, [&](const Armed& a) { return a.name == name; });
  if (arming.action != FailpointAction::none) {
    arming.from_hit = std::max(arming.from_hit, 1U);
    r.armed.push_back({name, arming});
  }
}

// A decimal hit count in 1..10^9, or 0 when `text` is not one.
unsigned parse_hit(std::string_view text) {
  const std::string digits(text);
  char* end = nullptr;
  const unsigned long parsed = std::strtoul(digits.c_str(), &end, 10);
  if (digits.empty() || digits.front() == '-' || digits.front() == '+' || *end != '\0' ||
      parsed > 1'000'000'000UL) {
    return 0;
  }
  return static_cast<unsigned>(parsed);
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
    FailpointArming arming;
    if (const std::size_t at = item.find('@'); at != std::string_view::npos) {
      const std::string_view range = item.substr(at + 1);
      const std::size_t dash = range.find('-');
      arming.from_hit = parse_hit(range.substr(0, dash));
      if (arming.from_hit == 0) {
        environment_error("bad hit count in '" + std::string(item) + "'");
      }
      if (dash != std::string_view::npos) {
        const unsigned to_hit = parse_hit(range.substr(dash + 1));
        if (to_hit < arming.from_hit) {
          environment_error("bad hit range in '" + std::string(item) + "'");
        }
        arming.times = to_hit - arming.from_hit + 1;
      }
      item = item.substr(0, at);
    }
    if (const std::size_t colon = item.find(':'); colon != std::string_view::npos) {
      const std::string_view verb = item.substr(colon + 1);
      const auto* errno_name = std::find_if(errno_names.begin(), errno_names.end(),
                                            [&](const ErrnoName& e) { return e.name == verb; });
      if (verb == "kill") {
        arming.action = FailpointAction::kill;
      } else if (verb == "error") {
        arming.action = FailpointAction::error;
      } else if (errno_name != errno_names.end()) {
        arming.action = FailpointAction::error;
        arming.error_number = errno_name->value;
      } else {
        environment_error("unknown action '" + std::string(verb) +
                          "' (kill, error, EIO, ENOSPC, EDQUOT, EROFS or EFBIG)");
      }
      item = item.substr(0, colon);
    }
    const std::string_view name = known_name(item);
    if (name.empty()) {
      environment_error("unknown failpoint '" + std::string(item) + "'");
    }
    arm_locked(r, name, arming);
  }
}

}  // namespace

void arm_failpoint(std::string_view name, FailpointAction action, unsigned from_hit) {
  arm_failpoint(name, FailpointArming{.action = action, .from_hit = from_hit});
}

void arm_failpoint(std::string_view name, FailpointArming arming) {
  const std::string_view known = known_name(name);
  if (known.empty()) {
    throw error("trellis: unknown failpoint '" + std::string(name) +
                "' (known failpoints: " + known_list() + ")");
  }
  if (arming.action == FailpointAction::error && arming.error_number <= 0) {
    throw error("trellis: failpoint '" + std::string(name) + "' armed with errno " +
                std::to_string(arming.error_number) + " (an errno is positive)");
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  read_environment_locked(r);
  arm_locked(r, known, arming);
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
    : ScopedFailpoint(name, FailpointArming{.action = action, .from_hit = from_hit}) {}

ScopedFailpoint::ScopedFailpoint(std::string_view name, FailpointArming arming) : name_(name) {
  arm_failpoint(name, arming);
  name_ = known_name(name);  // the static spelling: the caller's string may not outlive us
}

ScopedFailpoint::~ScopedFailpoint() {
  try {
    disarm_failpoint(name_);
  } catch (...) {  // unreachable: the name was validated when armed
  }
}

namespace detail {

FailpointHit failpoint_take_hit(std::string_view name) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  read_environment_locked(r);
  publish(r);
  for (Armed& a : r.armed) {
    if (a.name != name) {
      continue;
    }
    const unsigned hit = ++a.hits;
    const FailpointArming& arming = a.arming;
    if (hit >= arming.from_hit && (arming.times == 0 || hit - arming.from_hit < arming.times)) {
      return {arming.action, arming.error_number};
    }
    return {};
  }
  return {};
}

void failpoint_fire(std::string_view name, FailpointHit hit, const std::filesystem::path& file) {
  switch (hit.action) {
    case FailpointAction::none:
      return;
    case FailpointAction::kill:
      std::raise(SIGKILL);
      std::abort();  // not reached: SIGKILL cannot be caught
    case FailpointAction::error:
      throw persist_error(file, "injected failure at failpoint " + std::string(name),
                          errno_code(hit.error_number));
  }
}

int failpoint_errno_of(FailpointHit hit) {
  switch (hit.action) {
    case FailpointAction::none:
      return 0;
    case FailpointAction::kill:
      std::raise(SIGKILL);
      std::abort();  // not reached: SIGKILL cannot be caught
    case FailpointAction::error:
      return hit.error_number;
  }
  return 0;
}

}  // namespace detail

}  // namespace trellis
