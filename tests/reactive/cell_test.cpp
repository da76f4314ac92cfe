// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <string>

using trellis_test::Counter;
using trellis_test::settle;

TEST_CASE_TEMPLATE("cell: get returns the initial value and set replaces it", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  CHECK(a.get() == 1);
  a.set(7);
  CHECK(a.get() == 7);
}

TEST_CASE_TEMPLATE("cell: holds any copyable value type", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto name = ctx.cell(std::string("ada"));
  static_assert(std::is_same_v<decltype(name), trellis::Cell<std::string>>);
  name.set("grace");
  CHECK(name.get() == "grace");
}

TEST_CASE_TEMPLATE("cell: update maps the current value to the new one", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  a.update([](int v) { return v + 1; });
  a.update([](int v) { return v * 10; });
  CHECK(a.get() == 20);
}

TEST_CASE_TEMPLATE("cell: a copy refers to the same node", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  const auto b = a;  // NOLINT(performance-unnecessary-copy-initialization): the point
  b.set(5);
  CHECK(a.get() == 5);
}

TEST_CASE_TEMPLATE("cell: read passes the value by const reference", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto v = ctx.cell(std::vector<int>{1, 2, 3});
  const std::size_t size = v.read([](const std::vector<int>& items) { return items.size(); });
  CHECK(size == 3);
}

TEST_CASE_TEMPLATE("cell: writing an equal value invalidates nothing and runs no effect", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(3);
  Counter evaluations;
  Counter runs;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return a.get() * 2;
  });
  auto e = ctx.effect([&] {
    (void)a.get();
    runs.bump();
  });
  settle(ctx);
  CHECK(c.get() == 6);
  REQUIRE(evaluations.value() == 1);
  REQUIRE(runs.value() == 1);

  a.set(3);
  a.update([](int v) { return v; });
  settle(ctx);
  CHECK(c.get() == 6);
  CHECK(evaluations.value() == 1);
  CHECK(runs.value() == 1);

  a.set(4);  // the counters above can move: a real change is seen
  settle(ctx);
  CHECK(c.get() == 8);
  CHECK(evaluations.value() == 2);
  CHECK(runs.value() == 2);
}
