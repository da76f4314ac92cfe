// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <string>
#include <vector>

using trellis_test::Counter;
using trellis_test::Log;
using trellis_test::settle;
using trellis_test::test_failure;

TEST_CASE_TEMPLATE("effect: runs once at creation", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter runs;
  std::atomic<int> seen{0};
  auto e = ctx.effect([&] {
    seen = a.get();
    runs.bump();
  });
  settle(ctx);
  CHECK(runs.value() == 1);
  CHECK(seen.load() == 1);
  CHECK(e.active());
}

TEST_CASE_TEMPLATE("effect: re-runs once per relevant change", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto unrelated = ctx.cell(0);
  Counter runs;
  Log<int> seen;
  auto e = ctx.effect([&] {
    seen.push(a.get());
    runs.bump();
  });
  settle(ctx);
  a.set(2);
  settle(ctx);
  unrelated.set(1);
  settle(ctx);
  a.set(3);
  settle(ctx);
  CHECK(runs.value() == 3);
  CHECK(seen.items() == std::vector<int>{1, 2, 3});
}

TEST_CASE_TEMPLATE("effect: cleanup runs before each re-run and at dispose", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Log<std::string> events;
  auto e = ctx.effect([&] {
    const int v = a.get();
    events.push("run " + std::to_string(v));
    return [&events, v] { events.push("cleanup " + std::to_string(v)); };
  });
  settle(ctx);
  a.set(2);
  settle(ctx);
  e.dispose();
  settle(ctx);
  CHECK_FALSE(e.active());
  CHECK(events.items() == std::vector<std::string>{"run 1", "cleanup 1", "run 2", "cleanup 2"});
  e.dispose();  // idempotent: the cleanup does not run twice
  a.set(3);
  settle(ctx);
  CHECK(events.size() == 4);
}

TEST_CASE_TEMPLATE("effect: destroying the owner stops it", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter runs;
  Counter cleanups;
  {
    auto e = ctx.effect([&] {
      (void)a.get();
      runs.bump();
      return [&] { cleanups.bump(); };
    });
    settle(ctx);
  }
  settle(ctx);
  CHECK(cleanups.value() == 1);
  a.set(2);
  settle(ctx);
  CHECK(runs.value() == 1);
}

TEST_CASE_TEMPLATE("effect: moving the owner keeps the effect alive", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter runs;
  std::vector<trellis::Effect> owners;
  {
    auto e = ctx.effect([&] {
      (void)a.get();
      runs.bump();
    });
    owners.push_back(std::move(e));
  }  // the moved-from owner is destroyed here
  settle(ctx);
  a.set(2);
  settle(ctx);
  CHECK(runs.value() == 2);
  CHECK(owners.front().active());
  owners.clear();
  a.set(3);
  settle(ctx);
  CHECK(runs.value() == 2);
}

TEST_CASE_TEMPLATE("effect: dynamic dependencies follow the branch taken", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto use_left = ctx.cell(true);
  auto left = ctx.cell(1);
  auto right = ctx.cell(2);
  Counter runs;
  auto e = ctx.effect([&] {
    (void)(use_left.get() ? left.get() : right.get());
    runs.bump();
  });
  settle(ctx);
  right.set(3);
  settle(ctx);
  CHECK(runs.value() == 1);

  use_left.set(false);
  settle(ctx);
  CHECK(runs.value() == 2);
  left.set(4);
  settle(ctx);
  CHECK(runs.value() == 2);
  right.set(5);
  settle(ctx);
  CHECK(runs.value() == 3);
}

TEST_CASE_TEMPLATE("effect: a throw does not stop the flush and reaches the writer", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(0);
  Counter first_runs;
  Counter quiet_runs;
  Counter second_runs;
  auto first = ctx.effect([&] {
    first_runs.bump();
    if (a.get() == 1) {
      throw test_failure("first effect failed");
    }
  });
  auto quiet = ctx.effect([&] {
    (void)a.get();
    quiet_runs.bump();
  });
  auto second = ctx.effect([&] {
    second_runs.bump();
    if (a.get() == 1) {
      throw test_failure("second effect failed");
    }
  });
  settle(ctx);

  std::string message;
  int caught = 0;
  try {
    a.set(1);
    settle(ctx);  // AsyncContext reports effect errors from drain()
  } catch (const test_failure& failure) {
    ++caught;
    message = failure.what();
  }
  CHECK(caught == 1);
  const bool one_of_them = message == "first effect failed" || message == "second effect failed";
  CHECK_MESSAGE(one_of_them, message);
  CHECK(first_runs.value() == 2);
  CHECK(quiet_runs.value() == 2);
  CHECK(second_runs.value() == 2);
}

TEST_CASE_TEMPLATE("effect: the graph stays usable after an effect threw", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(0);
  Counter thrower_runs;
  Counter other_runs;
  auto thrower = ctx.effect([&] {
    thrower_runs.bump();
    if (a.get() == 1) {
      throw test_failure("effect failed");
    }
  });
  auto doubled = ctx.computed([&] { return a.get() * 2; });
  std::atomic<int> seen{-1};
  auto other = ctx.effect([&] {
    seen = doubled.get();
    other_runs.bump();
  });
  settle(ctx);
  CHECK_THROWS_AS((ctx.batch([&] { a.set(1); }), settle(ctx)), test_failure);
  settle(ctx);  // nothing left to report: the error was delivered once
  CHECK(thrower.active());

  a.set(2);
  settle(ctx);
  CHECK(thrower_runs.value() == 3);
  CHECK(other_runs.value() == 3);
  CHECK(seen.load() == 4);
  CHECK(doubled.get() == 4);
}

TEST_CASE_TEMPLATE("effect: writing its own dependency is queued, not recursed", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(0);
  Counter runs;
  std::atomic<int> depth{0};
  std::atomic<int> max_depth{0};
  auto e = ctx.effect([&] {
    const int d = ++depth;
    if (d > max_depth) {
      max_depth = d;
    }
    runs.bump();
    const int v = a.get();
    if (v < 5) {
      a.set(v + 1);
    }
    --depth;
  });
  settle(ctx);
  CHECK(a.get() == 5);
  CHECK(runs.value() == 6);
  CHECK(max_depth.load() == 1);
}

TEST_CASE_TEMPLATE("effect: a self-write caused by a later write is queued, not recursed", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto go = ctx.cell(false);
  auto a = ctx.cell(0);
  Counter runs;
  std::atomic<int> depth{0};
  std::atomic<int> max_depth{0};
  auto e = ctx.effect([&] {
    const int d = ++depth;
    if (d > max_depth) {
      max_depth = d;
    }
    runs.bump();
    if (go.get()) {
      const int v = a.get();
      if (v < 5) {
        a.set(v + 1);
      }
    }
    --depth;
  });
  settle(ctx);
  go.set(true);
  settle(ctx);
  CHECK(a.get() == 5);
  CHECK(runs.value() == 7);  // creation, five increments, one run that sees 5
  CHECK(max_depth.load() == 1);
}

TEST_CASE_TEMPLATE("effect: a write from an effect re-runs the effects that read it", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto source = ctx.cell(0);
  auto target = ctx.cell(0);
  auto forward = ctx.effect([&] { target.set(source.get() * 10); });
  Log<int> seen;
  auto watch = ctx.effect([&] { seen.push(target.get()); });
  settle(ctx);
  source.set(1);
  settle(ctx);
  CHECK(target.get() == 10);
  CHECK(seen.items() == std::vector<int>{0, 10});
}

TEST_CASE("effect: the default budget is one million runs per flush") {
  trellis::Context ctx;
  CHECK(ctx.effect_budget() == 1'000'000);
  ctx.set_effect_budget(100'000);
  CHECK(ctx.effect_budget() == 100'000);
}

TEST_CASE_TEMPLATE("effect: a feedback loop stops at the budget with budget_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  ctx.set_effect_budget(50);
  auto looping = ctx.cell(false);
  auto n = ctx.cell(0);
  Counter runs;
  auto feedback = ctx.effect([&] {
    runs.bump();
    if (looping.get()) {
      n.set(n.get() + 1);
    }
  });
  settle(ctx);
  REQUIRE(runs.value() == 1);
  runs.reset();

  std::string message;
  bool raised = false;
  try {
    looping.set(true);
    settle(ctx);
  } catch (const trellis::budget_error& error) {
    raised = true;
    message = error.what();
  }
  REQUIRE(raised);
  const int made = runs.value();
  CHECK(made >= 2);
  CHECK(made <= 51);
  // The message reports how many runs the busiest effect made.
  CHECK_MESSAGE(message.find(std::to_string(made)) != std::string::npos, message);
  static_assert(std::is_base_of_v<trellis::error, trellis::budget_error>);

  // Usable afterwards: stop the loop, then ordinary writes run effects again.
  looping.set(false);
  settle(ctx);
  auto m = ctx.cell(0);
  Counter watcher_runs;
  auto watcher = ctx.effect([&] {
    (void)m.get();
    watcher_runs.bump();
  });
  settle(ctx);  // AsyncContext may otherwise fold the first run and the write into one
  m.set(1);
  settle(ctx);
  CHECK(watcher_runs.value() == 2);
  n.set(-1);
  settle(ctx);
  CHECK(n.get() == -1);
}

TEST_CASE_TEMPLATE("effect: an effect reading a computed that threw re-runs on every later write",
                   Ctx, TRELLIS_ALL_CONTEXTS) {
  // The failed evaluation must not leave a mark that stops propagation: the effect below it
  // would never be queued again.
  Ctx ctx;
  auto a = ctx.cell(0);
  auto c = ctx.computed([&] {
    const int v = a.get();
    if (v == 1) {
      throw test_failure("compute failed");
    }
    return v;
  });
  Counter runs;
  std::atomic<int> seen{-1};
  auto e = ctx.effect([&] {
    seen = c.get();
    runs.bump();
  });
  settle(ctx);
  REQUIRE(runs.value() == 1);
  REQUIRE(seen.load() == 0);

  CHECK_THROWS_WITH_AS((a.set(1), settle(ctx)), "compute failed", test_failure);
  CHECK(runs.value() == 1);  // the failed run did not finish
  CHECK(e.active());

  a.set(2);
  settle(ctx);
  CHECK(runs.value() == 2);
  CHECK(seen.load() == 2);
  a.set(3);
  settle(ctx);
  CHECK(runs.value() == 3);
  CHECK(seen.load() == 3);
  CHECK(c.get() == 3);
  a.set(4);
  settle(ctx);
  CHECK(runs.value() == 4);
  CHECK(seen.load() == 4);
}
