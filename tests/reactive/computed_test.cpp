// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <optional>
#include <string>
#include <vector>

using trellis_test::Counter;
using trellis_test::Log;
using trellis_test::settle;
using trellis_test::test_failure;

TEST_CASE_TEMPLATE("computed: not evaluated before its first read, then cached", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(2);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return a.get() * 10;
  });
  static_assert(std::is_same_v<decltype(c), trellis::Computed<int>>);
  CHECK(evaluations.value() == 0);
  CHECK(c.get() == 20);
  CHECK(evaluations.value() == 1);
  CHECK(c.get() == 20);
  CHECK(evaluations.value() == 1);
}

TEST_CASE_TEMPLATE("computed: several writes cause one evaluation at the next read", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto b = ctx.cell(1);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return a.get() + b.get();
  });
  CHECK(c.get() == 2);
  a.set(2);
  a.set(3);
  b.set(4);
  a.set(5);
  CHECK(evaluations.value() == 1);
  CHECK(c.get() == 9);
  CHECK(evaluations.value() == 2);
  CHECK(c.get() == 9);
  CHECK(evaluations.value() == 2);
}

TEST_CASE_TEMPLATE("computed: copies refer to the same node and share its cache", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return a.get() + 1;
  });
  const auto copy = c;  // NOLINT(performance-unnecessary-copy-initialization): the point
  CHECK(c.get() == 2);
  CHECK(copy.get() == 2);
  CHECK(evaluations.value() == 1);
}

TEST_CASE_TEMPLATE("computed: read passes the cached value by const reference", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto n = ctx.cell(3);
  auto items = ctx.computed([&] { return std::vector<int>(static_cast<std::size_t>(n.get()), 7); });
  const auto size = items.read([](const std::vector<int>& v) { return v.size(); });
  CHECK(size == 3);
  n.set(5);
  CHECK(items.read([](const std::vector<int>& v) { return v.size(); }) == 5);
}

TEST_CASE_TEMPLATE("computed: a 100,000-deep chain refreshes without recursion", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  constexpr int depth = 100'000;
  Ctx ctx;
  auto root = ctx.cell(0);
  std::vector<trellis::Computed<int>> chain;
  chain.reserve(depth);
  chain.push_back(ctx.computed([root] { return root.get() + 1; }));
  CHECK(chain.back().get() == 1);
  for (int i = 1; i < depth; ++i) {
    auto prev = chain.back();
    chain.push_back(ctx.computed([prev] { return prev.get() + 1; }));
    (void)chain.back().get();  // each first evaluation stays one level deep
  }
  CHECK(chain.back().get() == depth);

  root.set(1);
  CHECK(chain.back().get() == depth + 1);
  root.set(5);
  CHECK(chain.back().get() == depth + 5);
}

TEST_CASE_TEMPLATE("computed: a 100,000-deep chain under an effect propagates without recursion",
                   Ctx, TRELLIS_ALL_CONTEXTS) {
  constexpr int depth = 100'000;
  Ctx ctx;
  auto root = ctx.cell(0);
  std::vector<trellis::Computed<int>> chain;
  chain.reserve(depth);
  chain.push_back(ctx.computed([root] { return root.get() + 1; }));
  (void)chain.back().get();
  for (int i = 1; i < depth; ++i) {
    auto prev = chain.back();
    chain.push_back(ctx.computed([prev] { return prev.get() + 1; }));
    (void)chain.back().get();
  }
  std::atomic<int> seen{-1};
  Counter runs;
  auto end = chain.back();
  auto e = ctx.effect([&seen, &runs, end] {
    seen = end.get();
    runs.bump();
  });
  settle(ctx);
  CHECK(seen.load() == depth);
  root.set(2);
  settle(ctx);
  CHECK(seen.load() == depth + 2);
  CHECK(runs.value() == 2);
}

TEST_CASE_TEMPLATE("computed: a diamond re-runs its join once and never mixes old and new", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto twice = ctx.computed([&] { return a.get() * 2; });
  auto thrice = ctx.computed([&] { return a.get() * 3; });
  Counter joins;
  std::atomic<int> glitches{0};
  auto sum = ctx.computed([&] {
    joins.bump();
    const int t = twice.get();
    const int h = thrice.get();
    if (t * 3 != h * 2) {
      ++glitches;
    }
    return t + h;
  });
  Counter runs;
  Log<std::pair<int, int>> seen;  // (a, sum) as the effect saw them
  auto e = ctx.effect([&] {
    runs.bump();
    seen.push({a.get(), sum.get()});
  });
  settle(ctx);
  REQUIRE(joins.value() == 1);
  REQUIRE(runs.value() == 1);

  for (int v = 2; v <= 6; ++v) {
    a.set(v);
    settle(ctx);
    CHECK(joins.value() == v);
    CHECK(runs.value() == v);
  }
  CHECK(glitches.load() == 0);
  const auto observed = seen.items();
  REQUIRE(observed.size() == 6);
  for (std::size_t i = 0; i < observed.size(); ++i) {
    CHECK(observed[i].first == static_cast<int>(i) + 1);
    CHECK(observed[i].second == 5 * observed[i].first);
  }
}

TEST_CASE_TEMPLATE("computed: a triangle re-runs its join once and never mixes old and new", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto next = ctx.computed([&] { return a.get() + 1; });
  Counter joins;
  std::atomic<int> glitches{0};
  auto join = ctx.computed([&] {
    joins.bump();
    const int direct = a.get();
    const int via = next.get();
    if (via != direct + 1) {
      ++glitches;
    }
    return direct + via;
  });
  Counter runs;
  Log<int> seen;
  auto e = ctx.effect([&] {
    runs.bump();
    seen.push(join.get());
  });
  settle(ctx);
  for (int v = 2; v <= 5; ++v) {
    a.set(v);
    settle(ctx);
  }
  CHECK(joins.value() == 5);
  CHECK(runs.value() == 5);
  CHECK(glitches.load() == 0);
  CHECK(seen.items() == std::vector<int>{3, 5, 7, 9, 11});
}

TEST_CASE_TEMPLATE("computed: an equal re-evaluation stops propagation", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter parity_evaluations;
  auto parity = ctx.computed([&] {
    parity_evaluations.bump();
    return a.get() % 2;
  });
  Counter downstream_evaluations;
  auto label = ctx.computed([&] {
    downstream_evaluations.bump();
    return parity.get() == 0 ? std::string("even") : std::string("odd");
  });
  Counter runs;
  Counter cleanups;
  auto e = ctx.effect([&] {
    (void)label.get();
    runs.bump();
    return [&] { cleanups.bump(); };
  });
  settle(ctx);
  REQUIRE(parity_evaluations.value() == 1);
  REQUIRE(downstream_evaluations.value() == 1);
  REQUIRE(runs.value() == 1);

  a.set(3);  // parity stays 1
  settle(ctx);
  CHECK(parity_evaluations.value() == 2);
  CHECK(downstream_evaluations.value() == 1);
  CHECK(runs.value() == 1);
  CHECK(cleanups.value() == 0);
  CHECK(label.get() == "odd");
  CHECK(downstream_evaluations.value() == 1);

  a.set(4);  // parity changes: everything downstream runs once
  settle(ctx);
  CHECK(parity_evaluations.value() == 3);
  CHECK(downstream_evaluations.value() == 2);
  CHECK(runs.value() == 2);
  CHECK(cleanups.value() == 1);
}

TEST_CASE_TEMPLATE("computed: dynamic dependencies follow the branch taken", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto use_left = ctx.cell(true);
  auto left = ctx.cell(10);
  auto right = ctx.cell(20);
  Counter evaluations;
  auto pick = ctx.computed([&] {
    evaluations.bump();
    return use_left.get() ? left.get() : right.get();
  });
  CHECK(pick.get() == 10);
  right.set(21);  // not read: nothing to do
  CHECK(pick.get() == 10);
  CHECK(evaluations.value() == 1);

  use_left.set(false);
  CHECK(pick.get() == 21);
  CHECK(evaluations.value() == 2);
  left.set(11);  // no longer read
  CHECK(pick.get() == 21);
  CHECK(evaluations.value() == 2);
  right.set(22);  // newly read: tracked
  CHECK(pick.get() == 22);
  CHECK(evaluations.value() == 3);
}

TEST_CASE_TEMPLATE("computed: reading itself raises cycle_error and the graph stays usable", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto loop = ctx.cell(true);
  std::optional<trellis::Computed<int>> self;
  self = ctx.computed([&] { return loop.get() ? self->get() + 1 : 1; });
  CHECK_THROWS_AS((void)self->get(), trellis::cycle_error);
  CHECK_THROWS_AS((void)self->get(), trellis::cycle_error);  // not cached as a value

  auto other = ctx.cell(4);
  auto doubled = ctx.computed([&] { return other.get() * 2; });
  CHECK(doubled.get() == 8);
  loop.set(false);
  CHECK(self->get() == 1);
  other.set(5);
  CHECK(doubled.get() == 10);
}

TEST_CASE_TEMPLATE("computed: a cycle through others raises cycle_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto loop = ctx.cell(true);
  std::optional<trellis::Computed<int>> first;
  std::optional<trellis::Computed<int>> third;
  first = ctx.computed([&] { return loop.get() ? third->get() + 1 : 1; });
  auto second = ctx.computed([&] { return first->get() + 1; });
  third = ctx.computed([&] { return second.get() + 1; });
  CHECK_THROWS_AS((void)third->get(), trellis::cycle_error);
  CHECK_THROWS_AS((void)first->get(), trellis::cycle_error);
  static_assert(std::is_base_of_v<trellis::error, trellis::cycle_error>);

  loop.set(false);
  CHECK(third->get() == 3);
  CHECK(first->get() == 1);
}

TEST_CASE_TEMPLATE("computed: a cycle that appears after a write raises cycle_error on every read",
                   Ctx, TRELLIS_ALL_CONTEXTS) {
  // c1 reads c2 only once `loop` is set, so the cycle is found by a pull that starts at a
  // node whose value is cached: the read of c2 inside c1 must not return that stale value.
  Ctx ctx;
  auto loop = ctx.cell(false);
  std::optional<trellis::Computed<int>> c1;
  std::optional<trellis::Computed<int>> c2;
  c1 = ctx.computed([&] { return loop.get() ? c2->get() + 1 : 1; });
  c2 = ctx.computed([&] { return c1->get() + 1; });
  CHECK(c2->get() == 2);
  loop.set(true);
  SUBCASE("reading the node whose value is cached first") {
    CHECK_THROWS_AS((void)c2->get(), trellis::cycle_error);
    CHECK_THROWS_AS((void)c1->get(), trellis::cycle_error);
  }
  SUBCASE("reading the node that closes the cycle first") {
    CHECK_THROWS_AS((void)c1->get(), trellis::cycle_error);
    CHECK_THROWS_AS((void)c2->get(), trellis::cycle_error);
  }
  CHECK_THROWS_AS((void)c2->get(), trellis::cycle_error);  // not cached as a value

  loop.set(false);
  CHECK(c1->get() == 1);
  CHECK(c2->get() == 2);
}

TEST_CASE_TEMPLATE("computed: a cycle through a node being checked raises cycle_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  // The pull of `top` checks `mid`, which evaluates `low`, which reads `top` back: a cycle
  // three nodes long whose closing read meets nodes that are being checked, not evaluated.
  Ctx ctx;
  auto loop = ctx.cell(false);
  auto a = ctx.cell(1);
  std::optional<trellis::Computed<int>> top;
  auto low = ctx.computed([&] { return loop.get() ? top->get() + a.get() : a.get(); });
  auto mid = ctx.computed([&] { return low.get() * 10; });
  top = ctx.computed([&] { return mid.get() + 1; });
  CHECK(top->get() == 11);
  loop.set(true);
  CHECK_THROWS_AS((void)top->get(), trellis::cycle_error);
  CHECK_THROWS_AS((void)mid.get(), trellis::cycle_error);
  CHECK_THROWS_AS((void)low.get(), trellis::cycle_error);

  ctx.batch([&] {
    loop.set(false);
    a.set(2);
  });
  CHECK(low.get() == 2);
  CHECK(mid.get() == 20);
  CHECK(top->get() == 21);
}

TEST_CASE_TEMPLATE("computed: a throwing evaluation is not cached", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto fail = ctx.cell(true);
  auto a = ctx.cell(2);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    if (fail.get()) {
      throw test_failure("compute failed");
    }
    return a.get() * 3;
  });
  CHECK_THROWS_WITH_AS((void)c.get(), "compute failed", test_failure);
  CHECK(evaluations.value() == 1);
  CHECK_THROWS_AS((void)c.get(), test_failure);
  CHECK(evaluations.value() == 2);

  fail.set(false);
  CHECK(c.get() == 6);
  CHECK(evaluations.value() == 3);
  CHECK(c.get() == 6);
  CHECK(evaluations.value() == 3);
  a.set(3);
  CHECK(c.get() == 9);
  CHECK(evaluations.value() == 4);
}

TEST_CASE_TEMPLATE("computed: a read after its input threw follows that input once it succeeds",
                   Ctx, TRELLIS_ALL_CONTEXTS) {
  // No write comes between the failure and the retry (the failure came from outside the
  // graph): the retry's new value must still reach the node read, not leave it cached.
  Ctx ctx;
  bool broken = false;
  auto a = ctx.cell(1);
  auto source = ctx.computed([&] {
    const int v = a.get();
    if (broken) {
      throw test_failure("source failed");
    }
    return v * 2;
  });
  auto derived = ctx.computed([&] { return source.get() + 1; });
  CHECK(derived.get() == 3);
  broken = true;
  a.set(2);
  CHECK_THROWS_AS((void)derived.get(), test_failure);
  broken = false;
  CHECK(derived.get() == 5);
  CHECK(source.get() == 4);
}

TEST_CASE_TEMPLATE("computed: an effect behind it still sees later writes after a budget abort",
                   Ctx, TRELLIS_ALL_CONTEXTS) {
  // A feedback loop overruns the budget while the computed is dirty and the effect that
  // reads it is waiting behind it: once the loop is stopped, the effect must follow the
  // computed again. Every budget puts the abort at a different point of the flush.
  for (int budget = 3; budget <= 8; ++budget) {
    INFO("budget " << budget);
    Ctx ctx;
    ctx.set_effect_budget(static_cast<std::size_t>(budget));
    auto x = ctx.cell(0);
    auto a = ctx.cell(0);
    auto stop = ctx.cell(true);
    auto doubled = ctx.computed([&] { return a.get() * 2; });
    std::atomic<int> seen{-1};
    auto reader = ctx.effect([&] { seen = doubled.get(); });
    auto loop = ctx.effect([&] {
      const int v = x.get();
      if (stop.get()) {
        return;
      }
      trellis::untracked([&] {
        x.set(v + 1);
        a.set(v + 1);
      });
    });
    settle(ctx);
    REQUIRE(seen.load() == 0);

    CHECK_THROWS_AS((stop.set(false), settle(ctx)), trellis::budget_error);
    try {
      stop.set(true);
      settle(ctx);
    } catch (const trellis::budget_error&) {  // the rest of the loop may overrun once more
    }
    a.set(1000);
    settle(ctx);
    CHECK(seen.load() == 2000);
    CHECK(doubled.get() == 2000);
    a.set(7);
    settle(ctx);
    CHECK(seen.load() == 14);
  }
}
