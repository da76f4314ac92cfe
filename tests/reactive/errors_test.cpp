// SPDX-License-Identifier: MIT
// The reactive layer's errors report their documented codes when the graph raises them.
#include <trellis/reactive/context.hpp>
#include <trellis/reactive/errors.hpp>
#include <trellis/reactive/untracked.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>

namespace {

/// The code of the trellis::error `f` throws ("" when it throws none).
template <class F>
std::string code_of(F&& f) {
  try {
    f();
  } catch (const trellis::error& e) {
    return std::string(e.id());
  }
  return "";
}

}  // namespace

TEST_CASE("reactive errors: a cycle reports reactive.cycle") {
  trellis::Context ctx;
  std::optional<trellis::Computed<int>> self;
  self = ctx.computed([&] { return self->get() + 1; });
  CHECK(code_of([&] { (void)self->get(); }) == "reactive.cycle");
}

TEST_CASE("reactive errors: a read of a disposed node reports reactive.disposed") {
  trellis::Context ctx;
  auto a = ctx.cell(1);
  a.dispose();
  CHECK(code_of([&] { (void)a.get(); }) == "reactive.disposed");
}

TEST_CASE("reactive errors: an effect loop over the budget reports reactive.budget") {
  trellis::Context ctx;
  ctx.set_effect_budget(4);
  auto x = ctx.cell(0);
  auto stop = ctx.cell(true);
  auto loop = ctx.effect([&] {
    const int v = x.get();
    if (!stop.get()) {
      trellis::untracked([&] { x.set(v + 1); });
    }
  });
  CHECK(code_of([&] { stop.set(false); }) == "reactive.budget");
}

TEST_CASE("reactive errors: every class keeps its code when caught as the root") {
  CHECK(static_cast<const trellis::error&>(trellis::cycle_error("c")).id() == "reactive.cycle");
  CHECK(static_cast<const trellis::error&>(trellis::disposed_error("d")).id() ==
        "reactive.disposed");
  CHECK(static_cast<const trellis::error&>(trellis::budget_error("b")).id() == "reactive.budget");
}
