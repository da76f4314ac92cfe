// SPDX-License-Identifier: MIT
// Must not compile (warnings are errors here): an effect whose owner is discarded runs once
// and stops; the diagnostic must say to keep it.
#include <trellis/reactive.hpp>

int main() {
  trellis::Context ctx;
  auto a = ctx.cell(1);
  ctx.effect([&] { (void)a.get(); });
  a.set(2);
}
