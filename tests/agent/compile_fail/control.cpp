// SPDX-License-Identifier: MIT
// Must compile: the state has JSON conversions, so a failure of the other case here comes
// from the missing conversions.
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>

#include <string_view>

struct Doc {
  int drafts = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Doc, drafts)

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
