// SPDX-License-Identifier: MIT
/// @file
/// Shared doubles for the persist/ suites: a scratch directory per test, byte-exact file
/// snapshots, SHA-256 for hand-built files, and children started with posix_spawn (fork +
/// exec; never a bare fork of the threaded test process) running `persist_helper` or
/// `durable_child`.
#pragma once

#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace persist_test {

namespace fs = std::filesystem;

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/trellis-persist-XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

  /// The names in the directory, sorted.
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(path_)) {
      out.insert(entry.path().filename().string());
    }
    return out;
  }

 private:
  fs::path path_;
};

inline std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

/// Permission bits of a file (e.g. 0600).
inline unsigned mode_of(const fs::path& file) {
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

/// Sets the umask for a scope.
class UmaskScope {
 public:
  explicit UmaskScope(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskScope() { ::umask(old_); }
  UmaskScope(const UmaskScope&) = delete;
  UmaskScope& operator=(const UmaskScope&) = delete;

 private:
  mode_t old_;
};

/// Makes `dir` the working directory for a scope.
class CwdScope {
 public:
  explicit CwdScope(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~CwdScope() {
    std::error_code ec;
    fs::current_path(old_, ec);
  }
  CwdScope(const CwdScope&) = delete;
  CwdScope& operator=(const CwdScope&) = delete;

 private:
  fs::path old_;
};

/// Plants a symbolic link at `link` to a file `victim` holding "precious".
inline void plant_link(const fs::path& link, const fs::path& victim) {
  write_bytes(victim, "precious");
  fs::create_symlink(victim, link);
}

/// Root ignores file permissions, so permission-based cases cannot fail as they should.
inline bool running_as_root() { return ::geteuid() == 0; }

/// "sha256:<hex>" of `bytes`, for files built by hand in tests.
inline std::string sha256_text(const std::string& bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  REQUIRE(EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) ==
          1);
  std::string text = "sha256:";
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int i = 0; i < length; ++i) {
    text += kHex[digest[i] >> 4];
    text += kHex[digest[i] & 0xF];
  }
  return text;
}

/// Sets "checksum" to the checksum of the object's other members, as a writer would.
inline std::string with_valid_checksum(nlohmann::json object) {
  object.erase("checksum");
  const std::string checksum = sha256_text(object.dump());
  object["checksum"] = checksum;
  return object.dump() + "\n";
}

/// A running `persist_helper` child; its stdout (and stderr) is readable from `output_fd`.
struct Child {
  pid_t pid = -1;
  int output_fd = -1;
};

/// Starts `program args...` with `extra_env` ("NAME=value") added to the environment (and any
/// inherited TRELLIS_FAILPOINT dropped).
inline Child spawn_program(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env = {}) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);

  std::vector<std::string> arg_storage{program};
  arg_storage.insert(arg_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : arg_storage) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("TRELLIS_FAILPOINT=")) {
      continue;
    }
    env_storage.emplace_back(*e);
  }
  env_storage.insert(env_storage.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  Child child;
  const int rc = ::posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  REQUIRE_MESSAGE(rc == 0, "posix_spawn of " << argv[0] << " failed");
  child.output_fd = fds[0];
  return child;
}

#ifdef TRELLIS_PERSIST_HELPER
/// Starts `persist_helper args...` with `extra_env` ("NAME=value") added to the environment.
inline Child spawn_helper(const std::vector<std::string>& args,
                          const std::vector<std::string>& extra_env = {}) {
  return spawn_program(TRELLIS_PERSIST_HELPER, args, extra_env);
}
#endif

/// Reads the child's output up to and including the first newline (bounded by `timeout`).
inline std::string read_line(const Child& child,
                             std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (line.empty() || line.back() != '\n') {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      break;
    }
    pollfd p{child.output_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      break;
    }
    char c = 0;
    if (::read(child.output_fd, &c, 1) != 1) {
      break;
    }
    line += c;
  }
  return line;
}

/// Everything the child wrote until it closed its output (bounded by `timeout`).
inline std::string read_all_output(const Child& child,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{child.output_fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      return out;
    }
    char buffer[4096];
    const ssize_t got = ::read(child.output_fd, buffer, sizeof buffer);
    if (got <= 0) {
      return out;
    }
    out.append(buffer, static_cast<std::size_t>(got));
  }
}

/// Waits for the child (SIGKILLing it after `timeout`) and returns its wait status.
inline int wait_child(Child& child, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) {
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      FAIL_CHECK("persist_helper " << child.pid << " did not finish in time; killing it");
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::close(child.output_fd);
  child.output_fd = -1;
  return status;
}

inline bool killed_by_sigkill(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace persist_test
