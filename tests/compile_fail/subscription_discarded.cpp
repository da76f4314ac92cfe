// SPDX-License-Identifier: MIT
// Must not compile (warnings are errors here): a discarded subscription is disconnected at
// once; the diagnostic must say to keep it.
#include <trellis/reactive.hpp>
#include <trellis/signals2/subscribe.hpp>

int main() {
  trellis::Context ctx;
  auto a = ctx.cell(1);
  trellis::subscribe(a, [](const int&) {});
  a.set(2);
}
