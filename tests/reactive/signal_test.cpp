// SPDX-License-Identifier: MIT
#include "test_support.hpp"

using trellis_test::Counter;
using trellis_test::settle;

TEST_CASE_TEMPLATE("signal: evaluated once at creation", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(2);
  Counter evaluations;
  auto s = ctx.signal([&] {
    evaluations.bump();
    return a.get() + 1;
  });
  static_assert(std::is_same_v<decltype(s), trellis::Signal<int>>);
  CHECK(evaluations.value() == 1);
  CHECK(s.get() == 3);
  CHECK(evaluations.value() == 1);
}

TEST_CASE_TEMPLATE("signal: fresh when the write returns, without a read", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(2);
  Counter evaluations;
  auto s = ctx.signal([&] {
    evaluations.bump();
    return a.get() + 1;
  });
  a.set(10);
  CHECK(evaluations.value() == 2);  // no settle: signals are synchronous in every context
  CHECK(s.get() == 11);
  CHECK(evaluations.value() == 2);
}

TEST_CASE_TEMPLATE("signal: re-evaluated once per flush, not once per write", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto b = ctx.cell(1);
  Counter evaluations;
  auto s = ctx.signal([&] {
    evaluations.bump();
    return a.get() * b.get();
  });
  ctx.batch([&] {
    a.set(2);
    b.set(3);
    a.set(4);
  });
  CHECK(evaluations.value() == 2);
  CHECK(s.get() == 12);

  ctx.batch([&] {
    ctx.batch([&] { a.set(5); });
    CHECK(evaluations.value() == 2);  // inner batch exit is not a flush
    b.set(6);
  });
  CHECK(evaluations.value() == 3);
  CHECK(s.get() == 30);
  CHECK(evaluations.value() == 3);
}

TEST_CASE_TEMPLATE("signal: an equal write does not re-evaluate it", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(2);
  Counter evaluations;
  auto s = ctx.signal([&] {
    evaluations.bump();
    return a.get();
  });
  a.set(2);
  CHECK(evaluations.value() == 1);
  CHECK(s.get() == 2);
}

TEST_CASE_TEMPLATE("signal: an unchanged value runs no downstream effect", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto is_big = ctx.signal([&] { return a.get() > 10; });
  Counter runs;
  auto e = ctx.effect([&] {
    (void)is_big.get();
    runs.bump();
  });
  settle(ctx);
  a.set(2);
  a.set(3);
  settle(ctx);
  CHECK(runs.value() == 1);
  a.set(11);
  settle(ctx);
  CHECK(runs.value() == 2);
  CHECK(is_big.get());
}

TEST_CASE_TEMPLATE("signal: a copy refers to the same node", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter evaluations;
  auto s = ctx.signal([&] {
    evaluations.bump();
    return a.get() * 2;
  });
  const auto copy = s;  // NOLINT(performance-unnecessary-copy-initialization): the point
  a.set(4);
  CHECK(copy.get() == 8);
  CHECK(s.get() == 8);
  CHECK(evaluations.value() == 2);
}

TEST_CASE_TEMPLATE("signal: reading a computation in progress from a flush raises cycle_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  // `source` writes `written` while it is evaluated; the write flushes `watcher`, which reads
  // `derived`, whose input `source` has not finished: its cached value would be stale.
  Ctx ctx;
  auto input = ctx.cell(0);
  auto written = ctx.cell(0);
  auto source = ctx.computed([&] {
    const int v = input.get();
    written.set(v);
    return v * 2;
  });
  auto derived = ctx.computed([&] { return source.get() + 1; });
  auto watcher = ctx.signal([&] { return written.get() > 0 ? derived.get() : -1; });
  CHECK(derived.get() == 1);
  CHECK(watcher.get() == -1);

  input.set(1);
  CHECK_THROWS_AS((void)derived.get(), trellis::cycle_error);
  // Not cached: the next read evaluates again; its write is now an equal one, which flushes
  // nothing, so it completes, and every node agrees.
  CHECK(derived.get() == 3);
  CHECK(source.get() == 2);
  CHECK(watcher.get() == 3);

  input.set(0);
  CHECK(derived.get() == 1);
  CHECK(source.get() == 0);
  CHECK(watcher.get() == -1);
  settle(ctx);
}
