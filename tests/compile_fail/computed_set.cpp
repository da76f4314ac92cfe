// SPDX-License-Identifier: MIT
// Must not compile: a Computed is read-only; the diagnostic must say so.
#include <trellis/reactive.hpp>

int main() {
  trellis::Context ctx;
  auto a = ctx.cell(1);
  auto c = ctx.computed([&] { return a.get() * 2; });
  c.set(3);
}
