// SPDX-License-Identifier: MIT
// Must not compile: computed() takes a callable, not a value; the diagnostic must say so.
#include <trellis/reactive.hpp>

int main() {
  trellis::Context ctx;
  auto c = ctx.computed(42);
  (void)c;
}
