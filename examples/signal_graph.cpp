// The signal graph on one screen: cells, a lazy computed, an eager signal, effects with a
// cleanup, a batch, an untracked read, and a cycle reported as an error.
#include <cstdio>
#include <optional>
#include <trellis/reactive.hpp>

int main() {
  trellis::Context ctx;
  auto price = ctx.cell(10);  // Cell<int>: get(), set(v), update(f)
  auto quantity = ctx.cell(3);
  auto total = ctx.computed([&] { return price.get() * quantity.get(); });  // lazy, memoized
  auto expensive = ctx.signal([&] { return total.get() > 100; });           // eager, always fresh

  auto printer = ctx.effect([&] {  // runs now, then once per change of what it read
    std::printf("total = %d%s\n", total.get(), expensive.get() ? " (expensive)" : "");
    return [] { std::printf("  cleanup\n"); };  // before the next run, and at dispose
  });
  quantity.set(4);  // total = 40
  ctx.batch([&] {   // one flush, so one run: total = 150
    price.set(30);
    quantity.set(5);
  });

  auto audit = ctx.effect([&] {  // depends on price only
    int q = trellis::untracked([&] { return quantity.get(); });
    std::printf("audit: price %d, quantity %d\n", price.get(), q);
  });
  quantity.update([](int q) { return q + 1; });  // total = 180; audit does not run

  std::optional<trellis::Computed<int>> loop;  // a computed that reads itself
  loop.emplace(ctx.computed([&] { return loop->get() + 1; }));
  try {
    std::printf("never printed: %d\n", loop->get());
  } catch (const trellis::cycle_error& e) {
    std::printf("cycle caught: %s\n", e.what());
  }
  printer.dispose();  // runs the last cleanup

  const bool ok = total.get() == 180 && expensive.get() && audit.active();
  std::printf(ok ? "done\n" : "unexpected result\n");
  return ok ? 0 : 1;
}
