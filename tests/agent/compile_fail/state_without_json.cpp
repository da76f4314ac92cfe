// SPDX-License-Identifier: MIT
// Must not compile: an agent graph over a state with no JSON conversions; the diagnostic must
// say, in one line, what to define.
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>

#include <string_view>

struct Doc {
  int drafts = 0;
};

struct Draft final : trellis::agent::Node<Doc> {
  std::string_view name() const override { return "draft"; }
  trellis::agent::NextStep run(Doc& d, trellis::agent::RunContext&) override {
    ++d.drafts;
    return trellis::agent::Halt{};
  }
};

int main() {
  trellis::agent::Graph<Doc> g;
  g.add<Draft>().entry("draft");
  trellis::agent::MemoryStore store;
  (void)g.run("run-1", Doc{}, store);
}
