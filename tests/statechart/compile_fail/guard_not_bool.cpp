// SPDX-License-Identifier: MIT
// Must not compile: a guard whose result does not convert to bool.
#include <trellis/statechart/builder.hpp>

#include <string>

struct Data {};

int main() {
  trellis::ChartBuilder<Data> b("c");
  b.state("s", [](auto& s) {
    s.on("e").when("wrong", [](const Data&) { return std::string("yes"); }).to("t");
  });
  b.state("t");
  (void)b.build();
}
