// Lease holders: random holder ids, and the process identity that lets a store tell a dead
// holder on this machine from a live one (lease_holder.hpp).

#include "lease_holder.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

namespace trellis::agent::detail {

namespace {

// The whole of a small text file, or "" when it cannot be read.
std::string read_small(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string link_target(const char* path) {
  char buf[PATH_MAX] = {};
  const ssize_t n = ::readlink(path, buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Fields 3 (state) and 22 (start time) of /proc/<pid>/stat (`ok` false when the file cannot
// be read or parsed). The command (field 2) may hold spaces and parentheses,
// so the fields are counted after its last ')'.
struct StatFields {
  bool ok = false;
  char state = '?';
  std::int64_t started = 0;
};

StatFields stat_of(const std::string& pid) {
  StatFields out;
  const std::string text = read_small("/proc/" + pid + "/stat");
  const auto close = text.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 3) out.state = field.empty() ? '?' : field[0];
    if (number == 22) {
      try {
        out.started = std::stoll(field);
        out.ok = true;
      } catch (const std::exception&) {
        return out;
      }
    }
  }
  return out;
}

}  // namespace

std::string new_lease_holder() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device device;  // per call: a forked child must not repeat its parent's ids
  std::string id;
  for (int i = 0; i < 4; ++i) {
    std::uint32_t v = device();
    for (int d = 0; d < 8; ++d, v >>= 4) id += kHex[v & 0xF];
  }
  return id;
}

ProcessIdentity this_process() {
  ProcessIdentity me;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) me.host = host;
  me.pid = static_cast<std::int64_t>(::getpid());
  // /proc must show this process's own pid namespace (a /proc mounted from another one would
  // answer for other processes): its "self" must be our pid.
  if (link_target("/proc/self") != std::to_string(me.pid)) return me;
  std::string boot = read_small("/proc/sys/kernel/random/boot_id");
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  const std::string ns = link_target("/proc/self/ns/pid");
  const StatFields self = stat_of("self");
  if (boot.empty() || ns.empty() || !self.ok) return me;
  me.pid_space = boot + " " + ns;
  me.started = self.started;
  return me;
}

bool provably_dead(std::string_view pid_space, std::int64_t pid, std::int64_t started) {
  if (pid_space.empty() || pid <= 0 || pid > INT_MAX) return false;
  if (pid_space != this_process().pid_space) return false;  // another machine, boot or namespace
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  const StatFields found = stat_of(std::to_string(pid));
  if (!found.ok) return false;  // it exists (kill said so) but /proc will not say more
  if (found.state == 'Z' || found.state == 'X') return true;
  return started != 0 && found.started != started;  // the pid was reused
}

}  // namespace trellis::agent::detail
