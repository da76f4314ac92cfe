// A consumer of trellis: one cell, one computed, one effect; exits non-zero on a wrong value.
#include <cstdio>
#include <trellis/trellis.hpp>

int main() {
  trellis::Context ctx;
  auto a = ctx.cell(2);
  auto doubled = ctx.computed([&] { return a.get() * 2; });
  int seen = 0;
  auto effect = ctx.effect([&] { seen = doubled.get(); });

  a.set(21);
  if (doubled.get() != 42 || seen != 42) {
    std::fprintf(stderr, "consumer: expected 42, computed gave %d, effect saw %d\n", doubled.get(),
                 seen);
    return 1;
  }
  std::puts("consumer: ok (42)");
  return 0;
}
