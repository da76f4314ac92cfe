// SPDX-License-Identifier: MIT
// Must not compile: a guard that takes arguments a chart guard never gets; the diagnostic must
// list the signatures a guard may have.
#include <trellis/statechart/builder.hpp>

struct Data {};

int main() {
  trellis::ChartBuilder<Data> b("c");
  b.state("s", [](auto& s) { s.on("e").when("wrong", [](int, int) { return true; }).to("t"); });
  b.state("t");
  (void)b.build();
}
