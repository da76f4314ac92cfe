// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <utility>
#include <vector>

using trellis_test::Counter;
using trellis_test::Log;
using trellis_test::settle;

TEST_CASE_TEMPLATE("batch: reads inside see the new values of cells and computeds", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto b = ctx.cell(2);
  auto sum = ctx.computed([&] { return a.get() + b.get(); });
  CHECK(sum.get() == 3);
  ctx.batch([&] {
    a.set(10);
    CHECK(a.get() == 10);
    CHECK(sum.get() == 12);
    b.set(20);
    CHECK(b.get() == 20);
    CHECK(sum.get() == 30);
  });
  CHECK(sum.get() == 30);
}

TEST_CASE_TEMPLATE("batch: no effect runs inside it", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter runs;
  auto e = ctx.effect([&] {
    (void)a.get();
    runs.bump();
  });
  settle(ctx);
  int runs_inside = -1;
  ctx.batch([&] {
    a.set(2);
    a.set(3);
    runs_inside = runs.value();
  });
  settle(ctx);
  CHECK(runs_inside == 1);
  CHECK(runs.value() == 2);
}

TEST_CASE_TEMPLATE("batch: many writes re-run an effect once with the final values", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(0);
  auto b = ctx.cell(0);
  Log<std::pair<int, int>> seen;
  auto e = ctx.effect([&] { seen.push({a.get(), b.get()}); });
  settle(ctx);
  ctx.batch([&] {
    for (int i = 1; i <= 10; ++i) {
      a.set(i);
      b.set(-i);
    }
  });
  settle(ctx);
  const auto expected = std::vector<std::pair<int, int>>{{0, 0}, {10, -10}};
  CHECK(seen.items() == expected);
}

TEST_CASE_TEMPLATE("batch: nested batches flush only at the outermost exit", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(0);
  Counter runs;
  auto e = ctx.effect([&] {
    (void)a.get();
    runs.bump();
  });
  settle(ctx);
  int after_inner = -1;
  ctx.batch([&] {
    ctx.batch([&] {
      a.set(1);
      ctx.batch([&] { a.set(2); });
    });
    after_inner = runs.value();
    a.set(3);
  });
  settle(ctx);
  CHECK(after_inner == 1);
  CHECK(runs.value() == 2);
  CHECK(a.get() == 3);
}

TEST_CASE_TEMPLATE("batch: returns the value of its function", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  const int result = ctx.batch([&] {
    a.set(4);
    return a.get() * 2;
  });
  CHECK(result == 8);
}

TEST_CASE_TEMPLATE("batch: writes that end equal to the start still leave values correct", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return a.get() + 100;
  });
  CHECK(c.get() == 101);
  ctx.batch([&] {
    a.set(2);
    a.set(1);
  });
  CHECK(c.get() == 101);
  CHECK(a.get() == 1);
}
