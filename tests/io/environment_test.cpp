// What the toolkit reads from the environment: the programs on $PATH (Graphviz's dot for the
// command and the console) and the person a record names by default.
#include <doctest/doctest.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <trellis/io/environment.hpp>

namespace {

namespace fs = std::filesystem;

/// Sets an environment variable for the scope, restoring (or unsetting) it after.
struct EnvVar {
  std::string name;
  std::optional<std::string> before;
  EnvVar(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) before = v;
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~EnvVar() {
    if (before)
      ::setenv(name.c_str(), before->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

void make_file(const fs::path& p, mode_t mode) {
  std::ofstream(p) << "#!/bin/sh\n";
  ::chmod(p.c_str(), mode);
}

}  // namespace

TEST_CASE("environment: find_program takes the first executable of $PATH, skipping the rest") {
  const fs::path root = fs::temp_directory_path() / ("trellis-env-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  fs::create_directories(root / "c");
  make_file(root / "a" / "tool", 0644);  // not executable: skipped
  make_file(root / "b" / "tool", 0755);
  make_file(root / "c" / "tool", 0755);  // later on $PATH: not taken
  const std::string path =
      (root / "a").string() + "::" + (root / "b").string() + ":" + (root / "c").string();
  {
    const EnvVar p("PATH", path.c_str());
    CHECK(trellis::detail::find_program("tool") == (root / "b" / "tool").string());
    CHECK_FALSE(trellis::detail::find_program("no-such-tool").has_value());
  }
  {
    const EnvVar p("PATH", nullptr);
    CHECK_FALSE(trellis::detail::find_program("tool").has_value());
  }
  fs::remove_all(root);
}

TEST_CASE("environment: current_user is $TRELLIS_USER, then $USER, then the login") {
  {
    const EnvVar t("TRELLIS_USER", "ana");
    const EnvVar u("USER", "bo");
    CHECK(trellis::detail::current_user() == "ana");
  }
  {
    const EnvVar t("TRELLIS_USER", "");
    const EnvVar u("USER", "bo");
    CHECK(trellis::detail::current_user() == "bo");
  }
  {
    const EnvVar t("TRELLIS_USER", nullptr);
    const EnvVar u("USER", nullptr);
    // The login, or the uid's name, where the process has either (not a uid without a
    // passwd entry and no terminal).
    const passwd* pw = ::getpwuid(::geteuid());
    const char* login = ::getlogin();
    const std::string expected = login && *login     ? std::string(login)
                                 : pw && pw->pw_name ? pw->pw_name
                                                     : "";
    CHECK(trellis::detail::current_user() == expected);
  }
}
