// SPDX-License-Identifier: MIT
// What the `enqueue` and `worker` commands ask of a program's graph (graph_runner.hpp): a
// Graph<S> adapted by cli::main enqueues runs and joins a Worker; a runner that predates them
// refuses both, naming what is missing.

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include <trellis/agent/errors.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/worker.hpp>
#include <trellis/cli/main.hpp>

namespace ag = trellis::agent;

namespace {

struct Count {
  int n = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Count, n)

struct Add : ag::Node<Count> {
  std::string_view name() const override { return "add"; }
  ag::NextStep run(Count& s, ag::RunContext&) override {
    ++s.n;
    return ag::Halt{};
  }
};

void build(ag::Graph<Count>& g) { g.add<Add>().entry("add"); }

/// A runner written before workers: only the pure virtuals.
struct OldRunner : ag::cli::GraphRunner {
  std::string fingerprint() const override { return "old"; }
  std::string check_state(const nlohmann::json&) const override { return {}; }
  ag::cli::RunReport run(const std::string&, const nlohmann::json*, ag::Store&) override {
    return {};
  }
  ag::cli::RunReport resume(const std::string&, ag::Store&) override { return {}; }
  ag::cli::StepReport step(const std::string&, const std::string&, ag::Store&,
                           ag::StepOptions) override {
    return {};
  }
};

}  // namespace

TEST_CASE("cli graph runner: an adapted graph enqueues a run Queued, with its priority and time") {
  ag::Graph<Count> g;
  build(g);
  ag::cli::detail::GraphAdapter<Count> runner(g);
  ag::MemoryStore store;
  const nlohmann::json state = {{"n", 41}};
  ag::EnqueueOptions options;
  options.priority = 4;
  options.at = std::chrono::system_clock::now() + std::chrono::hours(1);
  runner.enqueue("r-1", &state, store, options);
  const auto cp = store.latest("r-1");
  REQUIRE(cp);
  CHECK(cp->status == ag::RunStatus::Queued);
  CHECK(cp->priority == 4);
  CHECK_FALSE(cp->wake_at.empty());
  CHECK(cp->state == state);
}

TEST_CASE("cli graph runner: an adapted graph joins a worker, which advances its runs") {
  ag::Graph<Count> g;
  build(g);
  ag::cli::detail::GraphAdapter<Count> runner(g);
  ag::MemoryStore store;
  runner.enqueue("r-1", nullptr, store, {});  // the state's default
  ag::Worker worker(store, {.name = "test"});
  runner.add_to(worker);
  CHECK(worker.fingerprints() == std::vector<std::string>{g.fingerprint()});
  CHECK(worker.drain() == 1);
  const auto cp = store.latest("r-1");
  REQUIRE(cp);
  CHECK(cp->status == ag::RunStatus::Succeeded);
  CHECK(cp->state == nlohmann::json{{"n", 1}});
}

TEST_CASE("cli graph runner: a runner without enqueue or add_to refuses them with graph_error") {
  OldRunner runner;
  ag::MemoryStore store;
  CHECK_THROWS_AS(runner.enqueue("r-1", nullptr, store, {}), ag::graph_error);
  ag::Worker worker(store);
  CHECK_THROWS_WITH_AS(runner.add_to(worker), doctest::Contains("add_to"), ag::graph_error);
  CHECK_FALSE(store.latest("r-1"));
}
