// SPDX-License-Identifier: MIT
// A small program that embeds the operator commands through cli::main, so the tests can make
// runs in FileStores and SQLite stores and then drive the `trellis` command (a process that
// does not link this graph) against them. The state's `route` picks the path:
//   finish    start -> finish (Succeeded)
//   gate      start -> gate (WaitingApproval; approved or answered: -> finish)
//   expiring  start -> expiring (WaitingApproval on a request that expired an hour ago)
//   pay       start -> pay (an at_most_once effect) -> finish
//   slow      start -> slow (a step of ~15 s that stops early when asked) -> finish
//   loop      start -> loop -> loop ... (one step a second, until cancelled)
// Always given --store (its own store is a MemoryStore nobody looks at). With
// CLI_TEST_GRAPH_VERSION set, the graph has that version (another fingerprint: the runs it
// makes are foreign to a worker without it).

#include <chrono>
#include <cstdlib>
#include <thread>

#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/cli/main.hpp>

namespace ag = trellis::agent;

struct Job {
  std::string route;
  int count = 0;
  std::string approved_by;
  nlohmann::json answer;
  std::string paid;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Job, route, count, approved_by, answer, paid)

struct Start : ag::Node<Job> {
  std::string_view name() const override { return "start"; }
  ag::NextStep run(Job& s, ag::RunContext&) override {
    return ag::Goto{s.route.empty() ? "finish" : s.route};
  }
};

struct Gate : ag::Node<Job> {
  std::string_view name() const override { return "gate"; }
  ag::NextStep run(Job& s, ag::RunContext& ctx) override {
    if (ctx.resume()) {
      if (const auto* yes = std::get_if<ag::Approve>(&*ctx.resume())) s.approved_by = yes->reviewer;
      if (const auto* in = std::get_if<ag::Input>(&*ctx.resume())) s.answer = in->value;
      return ag::Goto{"finish"};
    }
    return ag::Interrupt{
        "sign off",
        ag::ApprovalRequest{"ship it", {{"count", s.count}}, "it goes out", std::nullopt}};
  }
};

struct Expiring : ag::Node<Job> {
  std::string_view name() const override { return "expiring"; }
  ag::NextStep run(Job&, ag::RunContext& ctx) override {
    if (ctx.resume()) return ag::Goto{"finish"};
    return ag::Interrupt{
        "too late",
        ag::ApprovalRequest{
            "expire", {}, "it expired", std::chrono::system_clock::now() - std::chrono::hours(1)}};
  }
};

struct Pay : ag::Node<Job> {
  std::string_view name() const override { return "pay"; }
  ag::NextStep run(Job& s, ag::RunContext& ctx) override {
    const nlohmann::json r = ctx.effect("pay", {{"count", s.count}}, ag::EffectPolicy::at_most_once,
                                        [](const ag::EffectCall&) {
                                          return nlohmann::json{{"paid", "p-1"}};
                                        });
    s.paid = r.at("paid").get<std::string>();
    return ag::Goto{"finish"};
  }
};

struct Slow : ag::Node<Job> {
  std::string_view name() const override { return "slow"; }
  ag::NextStep run(Job&, ag::RunContext& ctx) override {
    for (int i = 0; i < 150 && !ctx.stop_requested(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return ag::Goto{"finish"};
  }
};

struct Loop : ag::Node<Job> {
  std::string_view name() const override { return "loop"; }
  ag::NextStep run(Job& s, ag::RunContext&) override {
    ++s.count;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return ag::Goto{"loop"};
  }
};

struct Finish : ag::Node<Job> {
  std::string_view name() const override { return "finish"; }
  ag::NextStep run(Job& s, ag::RunContext&) override {
    ++s.count;
    return ag::Halt{};
  }
};

int main(int argc, char** argv) {
  ag::Graph<Job> g;
  g.add<Start>().add<Gate>().add<Expiring>().add<Pay>().add<Slow>().add<Loop>().add<Finish>();
  g.entry("start").max_steps(10'000);
  if (const char* version = std::getenv("CLI_TEST_GRAPH_VERSION")) g.version(version);
  ag::MemoryStore unused;
  return ag::cli::main(argc, argv, g, unused);
}
