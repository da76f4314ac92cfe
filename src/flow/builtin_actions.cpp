// The built-in actions of graph files (see builtin_actions.hpp).
//
// exec: posix_spawn (vfork-like, safe in a threaded process) with a new process group, the
// work directory as cwd, a cleared environment, every descriptor above 2 closed and the signal
// mask and dispositions reset. One thread reads stdout and stderr and writes stdin with poll(),
// all three non-blocking, so a child that fills one pipe while we wait on another cannot
// deadlock. The child's exit is watched without reaping it (pidfd, or waitid with WNOWAIT), so
// its pid, which is also its process group's id, cannot be reused before we are done killing
// the group. The stop token wakes the poll through an eventfd.
//
// The file actions resolve a path lexically first (no absolute path, no ".."), then with
// weakly_canonical (every symbolic link that exists), and refuse a result outside the canonical
// work directory. The file is then opened relative to its directory's descriptor without
// following a link (the durable-I/O toolkit), and the directory's own resolved path is checked
// again, so a link planted at the last moment is refused rather than followed.

#include "trellis/flow/builtin_actions.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <trellis/io/atomic_file.hpp>
#include <trellis/io/directory.hpp>
#include <trellis/io/file_io.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "trellis/flow/errors.hpp"
#include "trellis/flow/value_type.hpp"

namespace trellis::flow {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using trellis::detail::unique_fd;

constexpr std::size_t kMaxOutput = std::size_t{1} << 20;  // per stream of exec
constexpr std::size_t kMaxRead = std::size_t{16} << 20;   // read_file
constexpr std::string_view kFixedPath = "/usr/local/bin:/usr/bin:/bin";
constexpr double kMaxTimeoutSeconds = 366.0 * 24 * 3600;

[[noreturn]] void fail(std::string_view action, const std::string& reason) {
  throw action_error("trellis: action '" + std::string(action) + "': " + reason);
}

std::string errno_text(int e) { return std::generic_category().message(e); }

// --- UTF-8 -----------------------------------------------------------------------------------

// The length of the well-formed UTF-8 sequence at s[i] (Unicode, table 3-7: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    length = 3;
    if (c == 0xE0) low = 0xA0;
    if (c == 0xED) high = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    length = 4;
    if (c == 0xF0) low = 0x90;
    if (c == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  if (at(i + 1) < low || at(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return length;
}

// The offset of the first byte that does not start a well-formed sequence, or npos.
std::size_t first_invalid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

// `s` with U+FFFD in place of each byte that is not part of a well-formed sequence.
std::string lossy_utf8(std::string_view s) {
  if (first_invalid_utf8(s) == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

// --- params ----------------------------------------------------------------------------------

// The params of one call: an object whose members are all known; `null` is the same as absent.
class Params {
 public:
  Params(std::string_view action, const json& params, std::initializer_list<std::string_view> known)
      : action_(action), params_(params) {
    if (!params.is_object()) fail(action_, "params must be an object, not " + a_kind(params));
    for (const auto& [key, value] : params.items()) {
      bool ok = false;
      for (std::string_view k : known) ok = ok || k == key;
      if (!ok) fail(action_, "unknown param '" + key + "'");
    }
  }

  const json* find(std::string_view name) const {
    const auto it = params_.find(name);
    return it == params_.end() || it->is_null() ? nullptr : &*it;
  }

  std::string text(std::string_view name) const {
    const json* value = find(name);
    if (value == nullptr) fail(action_, "param '" + std::string(name) + "' is missing");
    return text(name, *value);
  }

  std::optional<std::string> optional_text(std::string_view name) const {
    const json* value = find(name);
    if (value == nullptr) return std::nullopt;
    return text(name, *value);
  }

  [[noreturn]] void wrong_type(std::string_view name, std::string_view expected,
                               const json& value) const {
    fail(action_, "param '" + std::string(name) + "' must be " + std::string(expected) + ", not " +
                      a_kind(value));
  }

  [[noreturn]] void bad(std::string_view name, const std::string& reason) const {
    fail(action_, "param '" + std::string(name) + "' " + reason);
  }

  std::string_view action() const noexcept { return action_; }

 private:
  std::string text(std::string_view name, const json& value) const {
    if (!value.is_string()) wrong_type(name, "a string", value);
    return value.get<std::string>();
  }

  std::string_view action_;
  const json& params_;
};

// --- paths -----------------------------------------------------------------------------------

// Whether `path` is `root` or below it, component by component (both canonical).
bool within(const fs::path& root, const fs::path& path) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator of the root
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

fs::path canonical_work_dir(std::string_view action, const fs::path& work_dir) {
  std::error_code ec;
  fs::path root = fs::canonical(work_dir, ec);
  if (ec) fail(action, "work directory '" + work_dir.string() + "': " + ec.message());
  if (!fs::is_directory(root, ec)) {
    fail(action, "work directory '" + work_dir.string() + "' is not a directory");
  }
  return root;
}

// A file an action reads or writes: its directory, opened, and its name there.
struct Place {
  std::string shown;  // the path as given, for messages and results
  fs::path resolved;  // absolute, inside the work directory
};

// Resolves param `name` (see the file comment); throws action_error for what is refused.
Place resolve(const Params& params, std::string_view name, const fs::path& work_dir) {
  const std::string given = params.text(name);
  const std::string quoted = "'" + given + "'";
  if (given.empty()) params.bad(name, "is empty");
  if (given.find('\0') != std::string::npos) params.bad(name, "holds a NUL character");
  const fs::path relative(given);
  if (relative.is_absolute() || relative.has_root_path()) {
    params.bad(name, quoted + " is absolute; paths are relative to the run's work directory");
  }
  for (const fs::path& part : relative) {
    if (part == "..") params.bad(name, quoted + " has a '..' component");
  }
  if (given.back() == '/') params.bad(name, quoted + " names a directory, not a file");
  const fs::path root = canonical_work_dir(params.action(), work_dir);
  const fs::path full = (root / relative).lexically_normal();
  if (full == root) params.bad(name, quoted + " names the work directory itself");
  if (!full.has_filename()) params.bad(name, quoted + " names a directory, not a file");
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(full, ec);
  if (ec) params.bad(name, quoted + ": " + ec.message());
  if (!within(root, resolved) || resolved == root) {
    params.bad(name, quoted + " leads out of the work directory through a symbolic link");
  }
  return {given, std::move(resolved)};
}

// The process's umask, read without changing it (umask(2) would, for every thread).
mode_t process_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      unsigned value = 0;
      const char* first = line.data() + 6;
      while (*first == ' ' || *first == '\t') ++first;
      const auto [end, err] = std::from_chars(first, line.data() + line.size(), value, 8);
      if (err == std::errc() && end != first) return static_cast<mode_t>(value & 0777);
    }
  }
  return 022;
}

// Opens the directory of `place` (creating it and its missing parents when `create`), and
// checks that what was opened is still inside the work directory.
trellis::detail::Directory open_directory(std::string_view action, const Place& place,
                                          const fs::path& work_dir, bool create,
                                          const trellis::detail::Modes& modes) {
  trellis::detail::Directory dir;
  if (const int e = dir.open(place.resolved.parent_path(), create, modes)) {
    fail(action, "'" + place.shown + "': " + (e == ENOENT ? "no such directory" : errno_text(e)));
  }
  if (!within(canonical_work_dir(action, work_dir), dir.path())) {
    fail(action, "'" + place.shown + "' leads out of the work directory through a symbolic link");
  }
  return dir;
}

// --- read_file, write_file -------------------------------------------------------------------

json read_file(const ActionCall& call) {
  const Params params("read_file", call.params, {"path"});
  const Place place = resolve(params, "path", call.work_dir);
  const trellis::detail::Directory dir =
      open_directory("read_file", place, call.work_dir, false, {});
  const std::string file = place.resolved.filename().string();
  const std::string quoted = "'" + place.shown + "'";
  unique_fd fd;
  if (const int e = dir.open_regular(file, fd)) {
    switch (e) {
      case ENOENT:
        fail("read_file", quoted + ": no such file");
      case EINVAL:
        fail("read_file", quoted + " is not a regular file");
      case ELOOP:
        fail("read_file", quoted + " is a symbolic link that leads out of the work directory");
      default:
        fail("read_file", quoted + ": " + errno_text(e));
    }
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("read_file", quoted + ": " + errno_text(errno));
  const auto too_big = [&] {
    fail("read_file", quoted + " is larger than 16 MiB, the most read_file reads");
  };
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxRead) too_big();
  // Read up to one byte more than allowed: a file that grows meanwhile is refused too.
  std::string content;
  content.reserve(static_cast<std::size_t>(st.st_size));
  std::array<char, 65536> buffer;
  while (content.size() <= kMaxRead) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("read_file", quoted + ": " + errno_text(errno));
    if (n == 0) break;
    content.append(buffer.data(), static_cast<std::size_t>(n));
  }
  if (content.size() > kMaxRead) too_big();
  const std::size_t size = content.size();
  if (const std::size_t bad = first_invalid_utf8(content); bad != std::string::npos) {
    fail("read_file", quoted + " is not UTF-8 text (byte " + std::to_string(bad) + ")");
  }
  return {{"path", place.shown}, {"content", std::move(content)}, {"size", size}};
}

// write_file, and append_file (`append`): the same checks, then a replacement or an append.
json write_or_append(const ActionCall& call, bool append) {
  const char* const action = append ? "append_file" : "write_file";
  if (!append && call.params.is_object() && call.params.contains("append")) {
    fail(action,
         "param 'append' is not a write_file param: appending is the action append_file "
         "(at_least_once: a re-run appends again)");
  }
  const Params params(action, call.params, {"path", "content"});
  const std::string content = params.text("content");
  const Place place = resolve(params, "path", call.work_dir);
  const mode_t mask = process_umask();
  trellis::detail::Modes modes;
  modes.file = 0666 & ~mask;
  modes.directory = 0777 & ~mask;
  const trellis::detail::Directory dir = open_directory(action, place, call.work_dir, true, modes);
  const std::string file = place.resolved.filename().string();
  const std::string quoted = "'" + place.shown + "'";
  const auto failed = [&](std::string_view step, int e) {
    if (e == ELOOP) {
      fail(action, quoted + " is a symbolic link that leads out of the work directory");
    }
    fail(action, quoted + ": " + std::string(step) + ": " + errno_text(e));
  };

  struct stat st {};
  const bool exists = ::fstatat(dir.fd(), file.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) failed("stat", errno);
  if (exists && S_ISDIR(st.st_mode)) fail(action, quoted + " is a directory");
  if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    fail(action, quoted + " is not a regular file");
  }

  if (append) {
    unique_fd fd;
    if (const int e =
            dir.open_file(file, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK, modes.file, fd)) {
      failed("open", e);
    }
    if (::fstat(fd.get(), &st) != 0) failed("stat", errno);
    if (!S_ISREG(st.st_mode)) fail(action, quoted + " is not a regular file");
    if (const int e = trellis::detail::write_all(fd.get(), content)) failed("write", e);
    if (::fsync(fd.get()) != 0) failed("fsync", errno);
    if (::fstat(fd.get(), &st) != 0) failed("stat", errno);
    if (const int e = fd.close()) failed("close", e);
    if (!exists) {
      if (const int e = dir.sync()) failed("fsync of the directory", e);
    }
    return {{"path", place.shown}, {"size", static_cast<std::uintmax_t>(st.st_size)}};
  }

  trellis::detail::ReplaceOptions options;
  // A file rewritten keeps its permissions; a new one gets 0666 less the umask, as with open(2).
  options.mode = exists && S_ISREG(st.st_mode) ? (st.st_mode & 07777) : modes.file;
  trellis::detail::ReplaceProgress progress;
  if (const int e = trellis::detail::replace_file(dir, file, content, options, progress)) {
    static constexpr std::array<std::string_view, 7> kSteps = {
        "create a temporary file", "write", "fsync", "close", "rename",
        "fsync of the directory",  "done"};
    failed(kSteps[static_cast<std::size_t>(progress.step)], e);
  }
  return {{"path", place.shown}, {"size", content.size()}};
}

json write_file(const ActionCall& call) { return write_or_append(call, false); }

json append_file(const ActionCall& call) { return write_or_append(call, true); }

// --- exec ------------------------------------------------------------------------------------

std::chrono::nanoseconds timeout_of(const Params& params) {
  const json* value = params.find("timeout");
  if (value == nullptr) return std::chrono::nanoseconds::max();
  double seconds = 0;
  if (value->is_number()) {
    seconds = value->get<double>();
  } else if (value->is_string()) {
    const std::string text = value->get<std::string>();
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto [end, err] = std::from_chars(first, last, seconds, std::chars_format::fixed);
    const std::string_view unit(end, static_cast<std::size_t>(last - end));
    if (err != std::errc() || end == first) {
      params.bad("timeout",
                 "'" + text + "' is not a duration (\"30s\", \"500ms\", \"2m\", \"1h\")");
    }
    if (unit == "ms") {
      seconds /= 1000;
    } else if (unit == "m") {
      seconds *= 60;
    } else if (unit == "h") {
      seconds *= 3600;
    } else if (unit != "s") {
      params.bad("timeout", "'" + text + "' has no unit of ms, s, m or h");
    }
  } else {
    params.wrong_type("timeout", "a number of seconds or a duration text (\"30s\")", *value);
  }
  if (!std::isfinite(seconds) || seconds <= 0 || seconds > kMaxTimeoutSeconds) {
    params.bad("timeout", "must be more than 0 and at most a year");
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds));
}

std::vector<std::string> args_of(const Params& params) {
  std::vector<std::string> out;
  const json* value = params.find("args");
  if (value == nullptr) return out;
  if (!value->is_array()) params.wrong_type("args", "a list", *value);
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& arg = (*value)[i];
    const std::string name = "args[" + std::to_string(i) + "]";
    if (arg.is_string()) {
      out.push_back(arg.get<std::string>());
    } else if (arg.is_number() || arg.is_boolean()) {
      out.push_back(arg.dump());
    } else {
      params.wrong_type(name, "a string, a number or a boolean", arg);
    }
    if (out.back().find('\0') != std::string::npos) params.bad(name, "holds a NUL character");
  }
  return out;
}

bool executable_file(const fs::path& file) {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::faccessat(AT_FDCWD, file.c_str(), X_OK, AT_EACCESS) == 0;
}

// The program to run: `command` itself when it holds a '/' (relative to the work directory),
// else the first executable regular file of that name in `path`'s directories. Checked here,
// not left to posix_spawn, which may report a failed execve only as exit status 127.
std::string program_of(const std::string& command, std::string_view path, const fs::path& root) {
  if (command.find('/') != std::string::npos) {
    const fs::path program = root / command;  // `command` itself when absolute
    if (!executable_file(program)) {
      fail("exec", "command '" + command + "' is not an executable file");
    }
    return program.string();
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    const fs::path dir(std::string(path.substr(start, end - start)));
    const fs::path candidate = (dir.empty() ? root : root / dir) / command;
    if (executable_file(candidate)) return candidate.string();
    start = end + 1;
  }
  fail("exec", "command '" + command + "' is not found in PATH (" + std::string(path) + ")");
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    fail("exec", "cannot set up a pipe: " + errno_text(errno));
  }
}

struct Pipe {
  unique_fd read;
  unique_fd write;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("exec", "cannot make a pipe: " + errno_text(errno));
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

// posix_spawn's attribute objects, destroyed at scope exit.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The started command: killed (its whole process group) and reaped unless finished.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (!reaped_) {
      kill_group();
      (void)wait();
    }
  }

  pid_t pid() const noexcept { return pid_; }

  // SIGKILL to the process group. Safe while the leader is not reaped: its pid (the group's
  // id) cannot be reused before.
  void kill_group() noexcept {
    if (!reaped_) (void)::kill(-pid_, SIGKILL);
  }

  // Whether the command has exited (without reaping it).
  bool exited() noexcept {
    siginfo_t info{};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r != 0) return errno == ECHILD;  // reaped by someone else (SIGCHLD ignored)
    return info.si_pid == pid_;
  }

  // Reaps it; the exit code (128 + the signal for a command killed by one), or -1 when
  // someone else reaped it.
  int wait() noexcept {
    int status = 0;
    pid_t r = -1;
    do {
      r = ::waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    reaped_ = true;
    if (r != pid_) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
};

// Blocks SIGPIPE for this thread while writing to the child's stdin (a child that exits early
// gives EPIPE instead of killing the caller), and consumes the SIGPIPE those writes raised.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        (void)sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

// One output stream of the command: read until EOF, kept up to kMaxOutput.
struct Output {
  unique_fd fd;
  std::string text;
  bool truncated = false;

  // Reads what is there; false at EOF (or an error: the stream is given up).
  bool drain() {
    std::array<char, 65536> buffer;
    for (;;) {
      const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n > 0) {
        const std::size_t room = kMaxOutput - text.size();
        const auto got = static_cast<std::size_t>(n);
        text.append(buffer.data(), std::min(room, got));
        truncated = truncated || got > room;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      fd = unique_fd();
      return false;
    }
  }
};

json exec(const ActionCall& call) {
  const Params params("exec", call.params, {"command", "args", "timeout", "stdin"});
  const std::string command = params.text("command");
  if (command.empty()) params.bad("command", "is empty");
  if (command.find('\0') != std::string::npos) params.bad("command", "holds a NUL character");
  const std::vector<std::string> args = args_of(params);
  const std::chrono::nanoseconds timeout = timeout_of(params);
  const std::optional<std::string> input = params.optional_text("stdin");
  const fs::path root = canonical_work_dir("exec", call.work_dir);

  std::vector<std::string> environment;
  std::string search_path(kFixedPath);
  for (const auto& [name, value] : call.env) {
    if (name.empty() || name.find_first_of(std::string_view("=\0", 2)) != std::string::npos ||
        value.find('\0') != std::string::npos) {
      fail("exec", "environment name '" + name + "' cannot be passed on");
    }
    if (name == "PATH")
      search_path = value;
    else
      environment.push_back(name + "=" + value);
  }
  environment.push_back("PATH=" + search_path);
  const std::string program = program_of(command, search_path, root);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(command.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  if (call.stop.stop_requested()) fail("exec", "'" + command + "' not started: the run stopped");

  Pipe in;
  if (input) in = make_pipe();
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  SpawnSetup setup;
  int rc = input ? posix_spawn_file_actions_adddup2(&setup.actions, in.read.get(), 0)
                 : posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&setup.actions, out.write.get(), 1);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&setup.actions, err.write.get(), 2);
  if (rc == 0) rc = posix_spawn_file_actions_addchdir_np(&setup.actions, root.c_str());
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&setup.actions, 3);
  sigset_t none;
  sigset_t defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  if (rc == 0) {
    rc = posix_spawnattr_setflags(
        &setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  if (rc == 0) rc = posix_spawnattr_setpgroup(&setup.attr, 0);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&setup.attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  if (rc != 0) fail("exec", "cannot set up '" + command + "': " + errno_text(rc));

  pid_t pid = -1;
  rc = ::posix_spawn(&pid, program.c_str(), &setup.actions, &setup.attr, argv.data(), envp.data());
  if (rc != 0) fail("exec", "cannot start '" + command + "': " + errno_text(rc));
  Child child(pid);
  in.read = unique_fd();
  out.write = unique_fd();
  err.write = unique_fd();

  // The stop token wakes the poll below through an eventfd.
  const unique_fd stop_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_fd) fail("exec", "cannot make an eventfd: " + errno_text(errno));
  std::stop_callback on_stop(call.stop, [fd = stop_fd.get()] {
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  });
#ifdef SYS_pidfd_open
  const unique_fd exit_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
  const unique_fd exit_fd;
#endif

  Output stdout_stream{std::move(out.read), {}, false};
  Output stderr_stream{std::move(err.read), {}, false};
  set_nonblocking(stdout_stream.fd.get());
  set_nonblocking(stderr_stream.fd.get());
  unique_fd stdin_fd = std::move(in.write);
  std::string_view pending = input ? std::string_view(*input) : std::string_view();
  if (stdin_fd) {
    set_nonblocking(stdin_fd.get());
    if (pending.empty()) stdin_fd = unique_fd();
  }
  const SigpipeBlock sigpipe;

  using clock = std::chrono::steady_clock;
  const bool has_deadline = timeout != std::chrono::nanoseconds::max();
  const clock::time_point deadline = has_deadline ? clock::now() + timeout : clock::time_point{};
  bool exited = false;
  bool timed_out = false;
  for (;;) {
    if (!exited) exited = child.exited();
    if (exited && !stdout_stream.fd && !stderr_stream.fd) break;
    std::vector<pollfd> fds;
    const auto watch = [&](int fd, short events) {
      fds.push_back({fd, events, 0});
      return fds.size() - 1;
    };
    const std::size_t none_index = static_cast<std::size_t>(-1);
    const std::size_t stop_index = watch(stop_fd.get(), POLLIN);
    const std::size_t out_index =
        stdout_stream.fd ? watch(stdout_stream.fd.get(), POLLIN) : none_index;
    const std::size_t err_index =
        stderr_stream.fd ? watch(stderr_stream.fd.get(), POLLIN) : none_index;
    const std::size_t in_index = stdin_fd ? watch(stdin_fd.get(), POLLOUT) : none_index;
    if (!exited && exit_fd) watch(exit_fd.get(), POLLIN);
    int wait_ms = -1;
    if (has_deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
      wait_ms = static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
    }
    // Without a pidfd, the exit of a command whose output is closed is polled for.
    if (!exited && !exit_fd && (wait_ms < 0 || wait_ms > 10)) wait_ms = 10;
    const int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) fail("exec", "poll: " + errno_text(errno));
    if (call.stop.stop_requested() || (ready > 0 && fds[stop_index].revents != 0)) {
      child.kill_group();
      (void)child.wait();
      fail("exec", "'" + command + "' was killed: the run stopped");
    }
    if (has_deadline && clock::now() >= deadline) {
      timed_out = true;
      child.kill_group();
      break;
    }
    if (ready <= 0) continue;
    if (out_index != none_index && fds[out_index].revents != 0) stdout_stream.drain();
    if (err_index != none_index && fds[err_index].revents != 0) stderr_stream.drain();
    if (in_index != none_index && fds[in_index].revents != 0) {
      const ssize_t n = ::write(stdin_fd.get(), pending.data(), pending.size());
      if (n > 0) pending.remove_prefix(static_cast<std::size_t>(n));
      const bool gone = n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK;
      if (gone || pending.empty()) stdin_fd = unique_fd();  // EPIPE: the command stopped reading
    }
  }
  stdin_fd = unique_fd();
  if (timed_out) {
    // What the pipes hold still is the command's output up to the kill.
    if (stdout_stream.fd) stdout_stream.drain();
    if (stderr_stream.fd) stderr_stream.drain();
  }
  const int code = child.wait();
  return {{"exit_code", timed_out ? -1 : code},
          {"stdout", lossy_utf8(stdout_stream.text)},
          {"stderr", lossy_utf8(stderr_stream.text)},
          {"timed_out", timed_out},
          {"truncated", stdout_stream.truncated || stderr_stream.truncated}};
}

json object_schema(std::initializer_list<std::pair<const char*, const char*>> members) {
  json properties = json::object();
  for (const auto& [name, type] : members) properties[name] = {{"type", type}};
  return {{"type", "object"}, {"properties", std::move(properties)}};
}

}  // namespace

void add_builtin_actions(ActionRegistry& registry) {
  ActionOptions exec_options;
  exec_options.description =
      "Runs a command in the run's work directory; its exit code and output are the result";
  exec_options.params_schema = object_schema({{"command", "string"}, {"args", "array"}});
  exec_options.params_schema["properties"]["stdin"] = {{"type", "string"}};
  exec_options.result_schema = object_schema({{"exit_code", "integer"},
                                              {"stdout", "string"},
                                              {"stderr", "string"},
                                              {"timed_out", "boolean"},
                                              {"truncated", "boolean"}});
  exec_options.capability = [](const json& params) {
    const auto command = params.find("command");  // end() when params is not an object
    const bool named = command != params.end() && command->is_string();
    return "exec:" + (named ? command->get<std::string>() : std::string());
  };
  registry.add("exec", exec, agent::EffectPolicy::at_least_once, std::move(exec_options));

  ActionOptions read_options;
  read_options.description = "Reads a UTF-8 text file below the run's work directory";
  read_options.params_schema = object_schema({{"path", "string"}});
  read_options.result_schema =
      object_schema({{"path", "string"}, {"content", "string"}, {"size", "integer"}});
  read_options.cacheable = false;  // the run's own work directory
  registry.add("read_file", read_file, agent::EffectPolicy::idempotent, std::move(read_options));

  ActionOptions write_options;
  write_options.description = "Writes a file below the run's work directory, atomically";
  write_options.params_schema = object_schema({{"path", "string"}, {"content", "string"}});
  write_options.result_schema = object_schema({{"path", "string"}, {"size", "integer"}});
  write_options.cacheable = false;  // a hit would leave this run's work directory unwritten
  ActionOptions append_options = write_options;
  append_options.description = "Appends to a file below the run's work directory";
  registry.add("write_file", write_file, agent::EffectPolicy::idempotent, std::move(write_options));
  registry.add("append_file", append_file, agent::EffectPolicy::at_least_once,
               std::move(append_options));
}

}  // namespace trellis::flow
