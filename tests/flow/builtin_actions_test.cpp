// SPDX-License-Identifier: MIT
/// @file
/// The built-in actions of graph files (issue 16): `exec` (exit code, output, stdin, timeout,
/// the cleared environment, the work directory, cancellation) and `read_file`/`write_file`
/// (round trips, and the paths they refuse without reading or writing anything).

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <trellis/flow/action.hpp>
#include <trellis/flow/builtin_actions.hpp>
#include <trellis/flow/errors.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace fl = trellis::flow;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A fresh directory holding "work" (the run's work directory) and "outside" (what the file
// actions must never reach), removed afterwards.
struct Sandbox {
  fs::path root;
  fs::path work;
  fs::path outside;
  std::map<std::string, std::string> env;
  fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();

  Sandbox() {
    std::string pattern = (fs::temp_directory_path() / "trellis-actions-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    root = fs::canonical(pattern);
    work = root / "work";
    outside = root / "outside";
    fs::create_directory(work);
    fs::create_directory(outside);
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  json call(const std::string& action, const json& params, std::stop_token stop = {}) {
    trellis::agent::EffectCall effect;
    effect.key = std::string(64, 'a');
    effect.name = action;
    effect.args = params;
    effect.run_id = "run-1";
    effect.node = "node";
    return registry.find(action)->fn(fl::ActionCall{effect, params, work, env, stop});
  }
};

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void put(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
}

// Whether process `pid` is gone (or a zombie nobody reaps: dead all the same), waiting at
// most 10 s for it to go.
bool process_gone(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos && line.compare(close + 1, 3, " Z ") == 0) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string error_of(Sandbox& box, const std::string& action, const json& params) {
  try {
    box.call(action, params);
  } catch (const fl::action_error& e) {
    return e.what();
  }
  return "(no action_error)";
}

}  // namespace

// --- exec ------------------------------------------------------------------------------------

TEST_CASE("exec: a non-zero exit is the result's exit_code, not an error") {
  Sandbox box;
  const json result = box.call("exec", {{"command", "sh"}, {"args", {"-c", "exit 3"}}});
  CHECK(result["exit_code"] == 3);
  CHECK(result["timed_out"] == false);
  CHECK(result["truncated"] == false);
}

TEST_CASE("exec: stdout and stderr are captured apart") {
  Sandbox box;
  const json result =
      box.call("exec", {{"command", "sh"}, {"args", {"-c", "echo out; echo err >&2"}}});
  CHECK(result["exit_code"] == 0);
  CHECK(result["stdout"] == "out\n");
  CHECK(result["stderr"] == "err\n");
}

TEST_CASE("exec: arguments are passed as given, numbers as their text") {
  Sandbox box;
  const json result =
      box.call("exec", {{"command", "printf"}, {"args", {"%s|%s|%s", "a b", 42, "$HOME"}}});
  CHECK(result["stdout"] == "a b|42|$HOME");
}

TEST_CASE("exec: stdin is fed to the command") {
  Sandbox box;
  const json result = box.call("exec", {{"command", "cat"}, {"stdin", "hello\nworld"}});
  CHECK(result["stdout"] == "hello\nworld");
}

TEST_CASE("exec: without stdin the command reads end of file") {
  Sandbox box;
  const json result = box.call("exec", {{"command", "wc"}, {"args", {"-c"}}});
  CHECK(result["stdout"].get<std::string>().find('0') != std::string::npos);
  CHECK(result["exit_code"] == 0);
}

TEST_CASE("exec: a timeout kills the command and reports timed_out") {
  Sandbox box;
  const json result = box.call(
      "exec", {{"command", "sh"}, {"args", {"-c", "echo $$; exec sleep 5"}}, {"timeout", "200ms"}});
  CHECK(result["timed_out"] == true);
  CHECK(result["exit_code"] == -1);
  const pid_t pid = std::stoi(result["stdout"].get<std::string>());
  CHECK(process_gone(pid));
}

TEST_CASE("exec: a timeout kills the command's whole process group") {
  Sandbox box;
  const json result = box.call(
      "exec", {{"command", "sh"}, {"args", {"-c", "sleep 5 & echo $!; wait"}}, {"timeout", 0.2}});
  CHECK(result["timed_out"] == true);
  const pid_t background = std::stoi(result["stdout"].get<std::string>());
  CHECK(process_gone(background));
}

TEST_CASE("exec: the environment is cleared but for PATH and the env map") {
  Sandbox box;
  ::setenv("TRELLIS_ACTIONS_TEST_SECRET", "leaked", 1);
  box.env = {{"TRELLIS_ACTIONS_TEST_GIVEN", "given value"}};
  const json result = box.call("exec", {{"command", "env"}});
  ::unsetenv("TRELLIS_ACTIONS_TEST_SECRET");
  std::vector<std::string> lines;
  std::istringstream text(result["stdout"].get<std::string>());
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin:/bin",
                                          "TRELLIS_ACTIONS_TEST_GIVEN=given value"});
}

TEST_CASE("exec: the command runs in the work directory") {
  Sandbox box;
  const json result = box.call("exec", {{"command", "pwd"}, {"args", {"-P"}}});
  CHECK(result["stdout"] == box.work.string() + "\n");
}

TEST_CASE("exec: a command with a '/' is taken relative to the work directory") {
  Sandbox box;
  put(box.work / "hello.sh", "#!/bin/sh\necho hi from the script\n");
  fs::permissions(box.work / "hello.sh", fs::perms::owner_all);
  const json result = box.call("exec", {{"command", "./hello.sh"}});
  CHECK(result["stdout"] == "hi from the script\n");
}

TEST_CASE("exec: a command not found is an action_error") {
  Sandbox box;
  CHECK_THROWS_AS(box.call("exec", {{"command", "trellis-no-such-command"}}), fl::action_error);
  CHECK_THROWS_AS(box.call("exec", {{"command", "./no-such-script"}}), fl::action_error);
}

TEST_CASE("exec: big outputs on both streams neither deadlock nor grow past 1 MiB") {
  Sandbox box;
  const json result = box.call(
      "exec", {{"command", "sh"},
               {"args", {"-c", "head -c 3000000 /dev/zero >&2; head -c 3000000 /dev/zero"}}});
  CHECK(result["exit_code"] == 0);
  CHECK(result["truncated"] == true);
  CHECK(result["stdout"].get<std::string>().size() == 1024 * 1024);
  CHECK(result["stderr"].get<std::string>().size() == 1024 * 1024);
}

TEST_CASE("exec: a big stdin and a big stdout flow at once without deadlock") {
  Sandbox box;
  const std::string input(3'000'000, 'x');
  const json result = box.call("exec", {{"command", "cat"}, {"stdin", input}});
  CHECK(result["exit_code"] == 0);
  CHECK(result["truncated"] == true);
  CHECK(result["stdout"] == input.substr(0, 1024 * 1024));
}

TEST_CASE("exec: a command that stops reading stdin early does not hurt the caller") {
  Sandbox box;
  const json result = box.call(
      "exec", {{"command", "head"}, {"args", {"-c", "1"}}, {"stdin", std::string(3'000'000, 'y')}});
  CHECK(result["stdout"] == "y");
  CHECK(result["exit_code"] == 0);
}

TEST_CASE("exec: output that is not UTF-8 gets U+FFFD for the bad bytes") {
  Sandbox box;
  const json result = box.call("exec", {{"command", "printf"}, {"args", {"a\\377b"}}});
  CHECK(result["stdout"] ==
        "a\xEF\xBF\xBD"
        "b");
}

TEST_CASE("exec: the stop token kills the command and the call throws") {
  Sandbox box;
  std::stop_source stop;
  std::thread stopper([&] {
    // Stop once the command runs (it writes its pid first); give up after 10 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (slurp(box.work / "pid").find('\n') == std::string::npos &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop.request_stop();
  });
  CHECK_THROWS_AS(
      box.call("exec", {{"command", "sh"}, {"args", {"-c", "echo $$ > pid; exec sleep 5"}}},
               stop.get_token()),
      fl::action_error);
  stopper.join();
  CHECK(process_gone(std::stoi(slurp(box.work / "pid"))));
}

TEST_CASE("exec: params of the wrong type are an action_error naming the param") {
  Sandbox box;
  const std::string command = error_of(box, "exec", {{"command", 5}});
  CHECK(command.find("'exec'") != std::string::npos);
  CHECK(command.find("'command'") != std::string::npos);
  CHECK(error_of(box, "exec", {{"command", "true"}, {"args", "x"}}).find("'args'") !=
        std::string::npos);
  CHECK(
      error_of(box, "exec", {{"command", "true"}, {"args", {json::object()}}}).find("'args[0]'") !=
      std::string::npos);
  CHECK(error_of(box, "exec", {{"command", "true"}, {"timeout", true}}).find("'timeout'") !=
        std::string::npos);
  CHECK(error_of(box, "exec", {{"command", "true"}, {"timeout", "5 parsecs"}}).find("'timeout'") !=
        std::string::npos);
  CHECK(error_of(box, "exec", {{"command", "true"}, {"stdin", 1}}).find("'stdin'") !=
        std::string::npos);
}

TEST_CASE("exec: an unknown param is an action_error") {
  Sandbox box;
  CHECK(error_of(box, "exec", {{"command", "true"}, {"timout", "1s"}}).find("'timout'") !=
        std::string::npos);
}

// --- read_file, write_file -------------------------------------------------------------------

TEST_CASE("write_file: what it writes read_file reads back, missing directories made") {
  Sandbox box;
  const json written =
      box.call("write_file", {{"path", "reports/2024/summary.md"}, {"content", "h\xC3\xA9llo"}});
  CHECK(written == json{{"path", "reports/2024/summary.md"}, {"size", 6}});
  CHECK(slurp(box.work / "reports/2024/summary.md") == "h\xC3\xA9llo");
  const json read = box.call("read_file", {{"path", "reports/2024/summary.md"}});
  CHECK(read ==
        json{{"path", "reports/2024/summary.md"}, {"content", "h\xC3\xA9llo"}, {"size", 6}});
}

TEST_CASE("write_file: a second write replaces the content and leaves no temporary") {
  Sandbox box;
  box.call("write_file", {{"path", "a.txt"}, {"content", "a longer first content"}});
  box.call("write_file", {{"path", "a.txt"}, {"content", "second"}});
  CHECK(slurp(box.work / "a.txt") == "second");
  CHECK(std::distance(fs::directory_iterator(box.work), fs::directory_iterator()) == 1);
}

TEST_CASE("write_file: a rewritten file keeps its permissions") {
  Sandbox box;
  put(box.work / "run.sh", "old");
  fs::permissions(box.work / "run.sh", fs::perms::owner_all);
  box.call("write_file", {{"path", "run.sh"}, {"content", "new"}});
  CHECK(fs::status(box.work / "run.sh").permissions() == fs::perms::owner_all);
}

TEST_CASE("append_file: adds to the end and reports the file's size") {
  Sandbox box;
  box.call("append_file", {{"path", "log.txt"}, {"content", "one\n"}});
  const json result = box.call("append_file", {{"path", "log.txt"}, {"content", "two\n"}});
  CHECK(result["size"] == 8);
  CHECK(slurp(box.work / "log.txt") == "one\ntwo\n");
}

TEST_CASE(
    "append_file is declared at_least_once, write_file idempotent; write_file refuses "
    "`append`, naming append_file") {
  const fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();
  REQUIRE(registry.find("append_file") != nullptr);
  CHECK(registry.find("append_file")->policy == trellis::agent::EffectPolicy::at_least_once);
  CHECK(registry.find("write_file")->policy == trellis::agent::EffectPolicy::idempotent);
  Sandbox box;
  const std::string error =
      error_of(box, "write_file", {{"path", "a"}, {"content", "x"}, {"append", true}});
  CHECK(error.find("append_file") != std::string::npos);
  CHECK(fs::is_empty(box.work));
}

TEST_CASE("write_file: a '..' component is refused and nothing is written") {
  Sandbox box;
  CHECK_THROWS_AS(box.call("write_file", {{"path", "../outside/x"}, {"content", "x"}}),
                  fl::action_error);
  CHECK_THROWS_AS(box.call("write_file", {{"path", "sub/../../x"}, {"content", "x"}}),
                  fl::action_error);
  CHECK_THROWS_AS(box.call("write_file", {{"path", "sub/../x"}, {"content", "x"}}),
                  fl::action_error);
  CHECK_FALSE(fs::exists(box.outside / "x"));
  CHECK_FALSE(fs::exists(box.root / "x"));
  CHECK(fs::is_empty(box.work));
}

TEST_CASE("write_file: a path naming a directory is refused") {
  Sandbox box;
  fs::create_directory(box.work / "dir");
  for (const char* path : {"dir", "dir/", "dir/.", ".", "new/"}) {
    CAPTURE(path);
    CHECK_THROWS_AS(box.call("write_file", {{"path", path}, {"content", "x"}}), fl::action_error);
  }
  CHECK(fs::is_empty(box.work / "dir"));
  CHECK_FALSE(fs::exists(box.work / "new"));
}

TEST_CASE("write_file: an absolute path is refused and nothing is written") {
  Sandbox box;
  const std::string error =
      error_of(box, "write_file", {{"path", (box.outside / "x").string()}, {"content", "x"}});
  CHECK(error.find("absolute") != std::string::npos);
  CHECK_FALSE(fs::exists(box.outside / "x"));
}

TEST_CASE("write_file: a symbolic link to a directory outside is refused") {
  Sandbox box;
  fs::create_directory_symlink(box.outside, box.work / "escape");
  CHECK_THROWS_AS(box.call("write_file", {{"path", "escape/x"}, {"content", "x"}}),
                  fl::action_error);
  CHECK_THROWS_AS(box.call("write_file", {{"path", "escape/new/x"}, {"content", "x"}}),
                  fl::action_error);
  CHECK(fs::is_empty(box.outside));
}

TEST_CASE("write_file: a symbolic link to a file outside is refused and the file unchanged") {
  Sandbox box;
  put(box.outside / "secret", "keep");
  fs::create_symlink(box.outside / "secret", box.work / "secret");
  CHECK_THROWS_AS(box.call("write_file", {{"path", "secret"}, {"content", "x"}}), fl::action_error);
  CHECK_THROWS_AS(box.call("append_file", {{"path", "secret"}, {"content", "x"}}),
                  fl::action_error);
  CHECK(slurp(box.outside / "secret") == "keep");
}

TEST_CASE("write_file: a dangling link out of the work directory is never followed") {
  Sandbox box;
  fs::create_symlink(box.outside / "new", box.work / "dangling");
  CHECK_THROWS_AS(box.call("append_file", {{"path", "dangling"}, {"content", "x"}}),
                  fl::action_error);
  CHECK_FALSE(fs::exists(box.outside / "new"));
  // Replacing puts a file where the link was.
  box.call("write_file", {{"path", "dangling"}, {"content", "x"}});
  CHECK_FALSE(fs::exists(box.outside / "new"));
  CHECK(fs::is_regular_file(fs::symlink_status(box.work / "dangling")));
}

TEST_CASE("write_file: params of the wrong type are an action_error naming the param") {
  Sandbox box;
  const std::string content = error_of(box, "write_file", {{"path", "a"}, {"content", 5}});
  CHECK(content.find("'write_file'") != std::string::npos);
  CHECK(content.find("'content'") != std::string::npos);
  CHECK(error_of(box, "write_file", {{"path", json::array()}, {"content", "x"}}).find("'path'") !=
        std::string::npos);
  CHECK(fs::is_empty(box.work));
}

TEST_CASE("read_file: a link to a file inside the work directory is read") {
  Sandbox box;
  put(box.work / "real.txt", "inside");
  fs::create_symlink("real.txt", box.work / "alias.txt");
  CHECK(box.call("read_file", {{"path", "alias.txt"}})["content"] == "inside");
}

TEST_CASE("read_file: '..', absolute paths and links out are refused") {
  Sandbox box;
  put(box.outside / "secret", "s3cret");
  fs::create_symlink(box.outside / "secret", box.work / "secret");
  fs::create_directory_symlink(box.outside, box.work / "escape");
  for (const std::string& path :
       {std::string("../outside/secret"), (box.outside / "secret").string(), std::string("secret"),
        std::string("escape/secret")}) {
    CAPTURE(path);
    CHECK_THROWS_AS(box.call("read_file", {{"path", path}}), fl::action_error);
  }
}

TEST_CASE("read_file: a file that is not UTF-8 is refused") {
  Sandbox box;
  put(box.work / "binary", std::string("ok\xff\xfe", 4));
  CHECK(error_of(box, "read_file", {{"path", "binary"}}).find("UTF-8") != std::string::npos);
  put(box.work / "overlong", std::string("\xC0\xAF", 2));
  CHECK_THROWS_AS(box.call("read_file", {{"path", "overlong"}}), fl::action_error);
}

TEST_CASE("read_file: a missing file is an action_error") {
  Sandbox box;
  CHECK_THROWS_AS(box.call("read_file", {{"path", "nothing.txt"}}), fl::action_error);
}

TEST_CASE("read_file: a file over 16 MiB is refused") {
  Sandbox box;
  put(box.work / "big", "");
  fs::resize_file(box.work / "big", (std::uintmax_t{16} << 20) + 1);
  CHECK(error_of(box, "read_file", {{"path", "big"}}).find("16 MiB") != std::string::npos);
}
