// SPDX-License-Identifier: MIT
/// @file
/// The action registry and capabilities of graph files (issue 16): canonical names, glob
/// patterns over them, fail-closed grants.

#include <trellis/base/error.hpp>
#include <trellis/flow/action.hpp>
#include <trellis/flow/capability.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fl = trellis::flow;
using nlohmann::json;
using trellis::agent::EffectPolicy;

namespace {

json echo(const fl::ActionCall& call) { return call.params; }

}  // namespace

TEST_CASE("glob_match: a literal pattern matches only itself") {
  CHECK(fl::glob_match("payments.refund", "payments.refund"));
  CHECK_FALSE(fl::glob_match("payments.refund", "payments.refunds"));
  CHECK_FALSE(fl::glob_match("payments.refund", "payments.refun"));
  CHECK_FALSE(fl::glob_match("payments.refund", "Payments.refund"));
}

TEST_CASE("glob_match: '*' matches any run of characters, dots and none included") {
  CHECK(fl::glob_match("payments.*", "payments.refund"));
  CHECK(fl::glob_match("payments.*", "payments.refund.partial"));
  CHECK(fl::glob_match("payments.*", "payments."));
  CHECK_FALSE(fl::glob_match("payments.*", "payments"));
  CHECK(fl::glob_match("exec:*", "exec:git"));
  CHECK(fl::glob_match("*", "anything.at:all"));
  CHECK(fl::glob_match("*", ""));
  CHECK(fl::glob_match("*.refund", "payments.refund"));
  CHECK(fl::glob_match("a*b*c", "axxbyyc"));
  CHECK_FALSE(fl::glob_match("a*b*c", "axxbyy"));
}

TEST_CASE("glob_match: '?' matches exactly one character") {
  CHECK(fl::glob_match("exec:g?t", "exec:git"));
  CHECK(fl::glob_match("a?c", "a.c"));
  CHECK_FALSE(fl::glob_match("exec:g?t", "exec:gt"));
  CHECK_FALSE(fl::glob_match("exec:g?t", "exec:gitt"));
}

TEST_CASE("glob_match: a dot is a plain character, not a wildcard") {
  CHECK_FALSE(fl::glob_match("payments.refund", "paymentsXrefund"));
  CHECK_FALSE(fl::glob_match("a.c", "abc"));
}

TEST_CASE("glob_match: many stars against a long name end quickly") {
  // A naive recursive matcher takes exponential time (or overflows the stack) here.
  const std::string pattern = std::string(50, '*') + "b" + std::string(50, '*') + "c";
  const std::string name(20000, 'a');
  CHECK_FALSE(fl::glob_match(pattern, name));
  CHECK(fl::glob_match(pattern, name + "bc"));
}

TEST_CASE("granted: a capability is granted when one pattern matches") {
  const std::vector<std::string> permissions{"exec:git", "payments.*"};
  CHECK(fl::granted(permissions, "exec:git"));
  CHECK(fl::granted(permissions, "payments.refund"));
  CHECK_FALSE(fl::granted(permissions, "exec:rm"));
  CHECK_FALSE(fl::granted(permissions, "read_file"));
}

TEST_CASE("granted: an empty list grants nothing") {
  CHECK_FALSE(fl::granted({}, "read_file"));
  CHECK_FALSE(fl::granted({}, ""));
}

TEST_CASE("ActionRegistry: an added action is found with its function, policy and options") {
  fl::ActionRegistry registry;
  fl::ActionOptions options;
  options.version = "2";
  registry.add("payments.refund", echo, EffectPolicy::at_most_once, options);
  const fl::Action* action = registry.find("payments.refund");
  REQUIRE(action != nullptr);
  CHECK(action->name == "payments.refund");
  CHECK(action->policy == EffectPolicy::at_most_once);
  CHECK(action->options.version == "2");
  trellis::agent::EffectCall effect;
  effect.key = "k";
  effect.name = "payments.refund";
  const json params{{"charge", "ch_1"}};
  const std::filesystem::path work = ".";
  const std::map<std::string, std::string> env;
  CHECK(action->fn(fl::ActionCall{effect, params, work, env, {}}) == params);
}

TEST_CASE("ActionRegistry: find returns nullptr for an unknown name") {
  fl::ActionRegistry registry;
  registry.add("a", echo, EffectPolicy::idempotent);
  CHECK(registry.find("b") == nullptr);
  CHECK(registry.find("") == nullptr);
}

TEST_CASE("ActionRegistry: names are listed sorted") {
  fl::ActionRegistry registry;
  registry.add("zeta", echo, EffectPolicy::idempotent)
      .add("alpha.beta", echo, EffectPolicy::idempotent)
      .add("Mid_1-x", echo, EffectPolicy::idempotent);
  CHECK(registry.names() == std::vector<std::string>{"Mid_1-x", "alpha.beta", "zeta"});
}

TEST_CASE("ActionRegistry: a malformed name is refused") {
  fl::ActionRegistry registry;
  for (const char* bad : {"", "a b", "exec:git", "a/b", "x*", "caf\xc3\xa9"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(registry.add(bad, echo, EffectPolicy::idempotent), trellis::invalid_option);
  }
  CHECK(registry.names().empty());
}

TEST_CASE("ActionRegistry: a name already taken is refused and the first action kept") {
  fl::ActionRegistry registry;
  registry.add("a", echo, EffectPolicy::idempotent);
  CHECK_THROWS_AS(registry.add("a", echo, EffectPolicy::at_most_once), trellis::invalid_option);
  CHECK(registry.find("a")->policy == EffectPolicy::idempotent);
}

TEST_CASE("ActionRegistry: an empty function is refused") {
  fl::ActionRegistry registry;
  CHECK_THROWS_AS(registry.add("a", fl::ActionFn{}, EffectPolicy::idempotent),
                  trellis::invalid_option);
}

TEST_CASE("Action: the capability is the name unless the options derive one") {
  fl::ActionRegistry registry;
  registry.add("plain", echo, EffectPolicy::idempotent);
  fl::ActionOptions derived;
  derived.capability = [](const json& p) { return "derived:" + p.value("x", ""); };
  registry.add("derived", echo, EffectPolicy::idempotent, derived);
  CHECK(registry.find("plain")->capability({{"x", "y"}}) == "plain");
  CHECK(registry.find("derived")->capability({{"x", "y"}}) == "derived:y");
}

TEST_CASE("ActionRegistry: with_builtins holds exec, read_file, write_file and append_file") {
  const fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();
  CHECK(registry.names() ==
        std::vector<std::string>{"append_file", "exec", "read_file", "write_file"});
  CHECK(registry.find("exec")->policy == EffectPolicy::at_least_once);
  CHECK(registry.find("read_file")->policy == EffectPolicy::idempotent);
  CHECK(registry.find("write_file")->policy == EffectPolicy::idempotent);
}

TEST_CASE("Action: exec's capability names the command as given") {
  const fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();
  const fl::Action& exec = *registry.find("exec");
  CHECK(exec.capability({{"command", "git"}, {"args", {"status"}}}) == "exec:git");
  CHECK(exec.capability({{"command", "/usr/bin/git"}}) == "exec:/usr/bin/git");
  CHECK(exec.capability({{"command", 5}}) == "exec:");
  CHECK(exec.capability(json::array()) == "exec:");
  CHECK(registry.find("read_file")->capability({{"path", "a"}}) == "read_file");
}
