/// @file
/// Graph files (issue 16, section 4), beside hand-written baselines in the same binary:
///
/// - `flow/load_validate/nodes:500`: load_graph_text + validate of a generated 500-node graph
///   (a chain of gates, each with an assign and a two-branch `when` edge list), from YAML text
///   in memory. Target: <= 20 ms. Baselines: `baseline/yaml_parse/nodes:500`, yaml-cpp's
///   YAML::Load of the same text alone (its node tree built); `baseline/yaml_events/nodes:500`,
///   yaml-cpp's Parser over the same text with a handler that keeps nothing (the parse any
///   loader on yaml-cpp pays; the loader builds its own tree from these events).
/// - `flow/step/file`: one run of a 20-node file graph (each node a gate: one assign, one
///   condition) on MemoryStore, from FileGraph's graph(); counter `us_per_step`.
///   Baseline `baseline/step/cpp`: the same 20 nodes written in C++ (Node<FlowState>, the same
///   JSON reads and writes, the condition as a C++ comparison), on the same engine and store.
///   Target: file <= 1.2x C++.
/// - `flow/foreach/items:1000`: a foreach node over 1,000 items on MemoryStore, each item a
///   registered action that returns its params (no work of its own): what trellis adds per item
///   (an effect's started record and receipt, the params rendered). This release runs a
///   foreach's items one after another in the node's thread. Baseline
///   `baseline/foreach_loop/items:1000`: a loop calling the same function 1,000 times.

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <trellis/agent/memory_store.hpp>
#include <trellis/flow/builtin_actions.hpp>
#include <trellis/flow/file_graph.hpp>
#include <trellis/flow/validate.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <sstream>
#include <string>

namespace {

namespace ag = trellis::agent;
namespace fl = trellis::flow;
using nlohmann::json;

/// A chain of `n` gates: node i assigns v<i> from the input and goes on to i+1 when it equals
/// the input, else to the end.
std::string chain_yaml(int n) {
  std::string y =
      "trellis_graph: 1\nname: chain\nversion: \"1\"\nstart: n0\ninputs:\n"
      "  x: {type: number, required: true}\npermissions: []\nnodes:\n";
  for (int i = 0; i < n; ++i) {
    const std::string next = i + 1 < n ? "n" + std::to_string(i + 1) : "done";
    y += "  n" + std::to_string(i) + ":\n    gate: true\n    assign: {v" + std::to_string(i) +
         ": \"${inputs.x}\"}\n    next:\n      - {to: " + next + ", when: \"state.v" +
         std::to_string(i) + " == inputs.x\"}\n      - {to: done}\n";
  }
  y += "  done:\n    return: \"${state}\"\n";
  return y;
}

void load_validate(benchmark::State& st) {
  const std::string text = chain_yaml(static_cast<int>(st.range(0)));
  const fl::ActionRegistry actions = fl::ActionRegistry::with_builtins();
  for (auto _ : st) {
    fl::GraphFile f = fl::load_graph_text(text, "chain.yaml");
    fl::Validation v = fl::validate(f, actions);
    benchmark::DoNotOptimize(v);
  }
}

void yaml_parse(benchmark::State& st) {
  const std::string text = chain_yaml(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    YAML::Node n = YAML::Load(text);
    benchmark::DoNotOptimize(n);
  }
}

/// Receives yaml-cpp's parser events and keeps none.
class Ignore final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    benchmark::DoNotOptimize(value.data());
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

void yaml_events(benchmark::State& st) {
  const std::string text = chain_yaml(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    Ignore ignore;
    while (parser.HandleNextDocument(ignore)) {
    }
  }
}

constexpr int kChain = 20;

void step_file(benchmark::State& st) {
  const fl::ActionRegistry actions = fl::ActionRegistry::with_builtins();
  fl::FileGraph fg(fl::load_graph_text(chain_yaml(kChain), "chain.yaml"), actions);
  std::uint64_t runs = 0;
  for (auto _ : st) {
    ag::MemoryStore store;
    auto out = fg.run("r", {{"x", 7}}, store);
    if (!out.succeeded()) st.SkipWithError("the run did not succeed");
    ++runs;
  }
  st.counters["us_per_step"] =
      benchmark::Counter(static_cast<double>(runs * (kChain + 1)) / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// The chain's node in C++: the same JSON reads and writes, the condition in C++.
struct ChainNode final : ag::Node<fl::FlowState> {
  ChainNode(int i, int n)
      : name_("n" + std::to_string(i)),
        key_("v" + std::to_string(i)),
        next_(i + 1 < n ? "n" + std::to_string(i + 1) : "done") {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(fl::FlowState& s, ag::RunContext&) override {
    s.state[key_] = s.inputs.at("x");
    if (s.state[key_] == s.inputs.at("x")) return ag::Goto{next_};
    return ag::Goto{"done"};
  }
  std::string name_, key_, next_;
};
struct DoneNode final : ag::Node<fl::FlowState> {
  std::string_view name() const override { return "done"; }
  ag::NextStep run(fl::FlowState& s, ag::RunContext&) override {
    s.output = s.state;
    return ag::Halt{};
  }
};

void step_cpp(benchmark::State& st) {
  ag::Graph<fl::FlowState> g;
  for (int i = 0; i < kChain; ++i) g.add<ChainNode>(i, kChain);
  g.add<DoneNode>().entry("n0").max_steps(2 * kChain + 3).version("1");
  std::uint64_t runs = 0;
  for (auto _ : st) {
    ag::MemoryStore store;
    fl::FlowState s;
    s.inputs = {{"x", 7}};
    auto out = g.run("r", std::move(s), store);
    if (!out.succeeded()) st.SkipWithError("the run did not succeed");
    ++runs;
  }
  st.counters["us_per_step"] =
      benchmark::Counter(static_cast<double>(runs * (kChain + 1)) / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

json item_work(const json& params) { return params; }

void foreach_file(benchmark::State& st) {
  fl::ActionRegistry actions = fl::ActionRegistry::with_builtins();
  actions.add(
      "bench.echo", [](const fl::ActionCall& c) { return item_work(c.params); },
      ag::EffectPolicy::idempotent);
  const std::string text =
      "trellis_graph: 1\nname: fan\nversion: \"1\"\nstart: each\nmax_concurrency: 2\ninputs:\n"
      "  items: {type: array, required: true}\npermissions: [\"bench.*\"]\nnodes:\n"
      "  each:\n    foreach: {over: \"${inputs.items}\", as: it, action: bench.echo, "
      "params: {n: \"${it}\"}}\n    assign: {out: \"${result | length}\"}\n    next: done\n"
      "  done:\n    return: \"${state.out}\"\n";
  fl::FileGraph fg(fl::load_graph_text(text, "fan.yaml"), actions);
  json items = json::array();
  for (int i = 0; i < st.range(0); ++i) items.push_back(i);
  for (auto _ : st) {
    auto store = std::make_unique<ag::MemoryStore>();
    auto out = fg.run("r", {{"items", items}}, *store);
    if (!out.succeeded() || out.state->output != st.range(0)) st.SkipWithError("wrong result");
    // Freeing the store's 2,000 records and 1,000 events is not the run's work.
    st.PauseTiming();
    store.reset();
    st.ResumeTiming();
  }
}

void foreach_loop(benchmark::State& st) {
  json items = json::array();
  for (int i = 0; i < st.range(0); ++i) items.push_back(i);
  for (auto _ : st) {
    json results = json::array();
    for (const json& it : items) results.push_back(item_work(json{{"n", it}}));
    benchmark::DoNotOptimize(results);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("flow/load_validate", load_validate)
      ->Arg(500)
      ->ArgName("nodes")
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("baseline/yaml_parse", yaml_parse)
      ->Arg(500)
      ->ArgName("nodes")
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("baseline/yaml_events", yaml_events)
      ->Arg(500)
      ->ArgName("nodes")
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("flow/step/file", step_file)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("baseline/step/cpp", step_cpp)->Unit(benchmark::kMicrosecond);
  // Two threads (max_concurrency: 2): wall time, and the process's CPU time (both threads).
  benchmark::RegisterBenchmark("flow/foreach", foreach_file)
      ->Arg(1000)
      ->ArgName("items")
      ->UseRealTime()
      ->MeasureProcessCPUTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("baseline/foreach_loop", foreach_loop)
      ->Arg(1000)
      ->ArgName("items")
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
