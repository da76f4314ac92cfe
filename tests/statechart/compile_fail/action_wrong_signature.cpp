// SPDX-License-Identifier: MIT
// Must not compile: an action that takes arguments a chart action never gets; the diagnostic
// must list the signatures an action may have.
#include <trellis/statechart/builder.hpp>

#include <string>

struct Data {};

int main() {
  trellis::ChartBuilder<Data> b("c");
  b.state("s", [](auto& s) { s.on_entry("wrong", [](const std::string&) {}); });
  (void)b.build();
}
