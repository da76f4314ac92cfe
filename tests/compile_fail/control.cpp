// SPDX-License-Identifier: MIT
// Must compile: the correct counterpart of the failing cases, so that a failure there is
// known to come from the misuse and not from the headers or the command line.
#include <trellis/reactive.hpp>
#include <trellis/signals2/subscribe.hpp>

int main() {
  trellis::Context ctx;
  auto a = ctx.cell(1);
  auto c = ctx.computed([&] { return a.get() * 2; });
  int seen = 0;
  auto e = ctx.effect([&] { seen = c.get(); });
  auto s = trellis::subscribe(c, [&](const int& v) { seen = v; });
  a.set(3);
  return c.get() == 6 && seen == 6 ? 0 : 1;
}
