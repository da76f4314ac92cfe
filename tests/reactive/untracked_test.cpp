// SPDX-License-Identifier: MIT
#include "test_support.hpp"

using trellis_test::Counter;
using trellis_test::settle;

TEST_CASE_TEMPLATE("untracked: reads inside a computed create no dependency", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto tracked = ctx.cell(1);
  auto hidden = ctx.cell(10);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return tracked.get() + trellis::untracked([&] { return hidden.get(); });
  });
  CHECK(c.get() == 11);
  hidden.set(20);
  CHECK(c.get() == 11);
  CHECK(evaluations.value() == 1);
  tracked.set(2);  // a tracked change re-evaluates, and then the hidden value is read afresh
  CHECK(c.get() == 22);
  CHECK(evaluations.value() == 2);
}

TEST_CASE_TEMPLATE("untracked: reads inside an effect create no dependency", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto tracked = ctx.cell(1);
  auto hidden = ctx.cell(10);
  auto hidden_sum = ctx.computed([&] { return hidden.get() * 2; });
  Counter runs;
  std::atomic<int> seen{0};
  auto e = ctx.effect([&] {
    seen = tracked.get() + trellis::untracked([&] { return hidden_sum.get(); });
    runs.bump();
  });
  settle(ctx);
  hidden.set(20);
  settle(ctx);
  CHECK(runs.value() == 1);
  CHECK(seen.load() == 21);
  tracked.set(2);
  settle(ctx);
  CHECK(runs.value() == 2);
  CHECK(seen.load() == 42);
}

TEST_CASE_TEMPLATE("untracked: tracking resumes after it returns", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto before = ctx.cell(1);
  auto hidden = ctx.cell(2);
  auto after = ctx.cell(3);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    const int x = before.get();
    trellis::untracked([&] { (void)hidden.get(); });
    return x + after.get();
  });
  CHECK(c.get() == 4);
  after.set(4);
  CHECK(c.get() == 5);
  CHECK(evaluations.value() == 2);
  hidden.set(9);
  CHECK(c.get() == 5);
  CHECK(evaluations.value() == 2);
}

TEST_CASE_TEMPLATE("untracked: outside any computation it just reads", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(5);
  const int v = trellis::untracked([&] { return a.get(); });
  CHECK(v == 5);
}
