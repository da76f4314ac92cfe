// SPDX-License-Identifier: MIT
// Must compile: the correct use of what the other cases in this folder misuse.
#include <trellis/statechart/builder.hpp>

#include <string>

struct Data {
  int n = 0;
};

int main() {
  trellis::ChartBuilder<Data> b("c");
  b.state("s", [](auto& s) {
    s.on("e").when("positive", [](const Data& d) { return d.n > 0; }).to("t");
    s.on_entry("count", [](Data& d) { ++d.n; });
  });
  b.state("t");
  return b.build().definition().states.size() == 3 ? 0 : 1;
}
