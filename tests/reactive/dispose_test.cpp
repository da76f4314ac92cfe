// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <optional>

using trellis_test::Counter;
using trellis_test::settle;

TEST_CASE_TEMPLATE("dispose: disposing twice is harmless", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  const auto before = ctx.node_count();
  auto a = ctx.cell(1);
  auto c = ctx.computed([&] { return a.get(); });
  auto s = ctx.signal([&] { return a.get(); });
  CHECK(ctx.node_count() == before + 3);
  c.dispose();
  c.dispose();
  s.dispose();
  s.dispose();
  a.dispose();
  a.dispose();
  CHECK(a.disposed());
  CHECK(c.disposed());
  CHECK(s.disposed());
  CHECK(ctx.node_count() == before);
}

TEST_CASE_TEMPLATE("dispose: a copy of the handle sees the disposal", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  const auto copy = a;  // NOLINT(performance-unnecessary-copy-initialization): the point
  CHECK_FALSE(copy.disposed());
  a.dispose();
  CHECK(copy.disposed());
  CHECK_THROWS_AS((void)copy.get(), trellis::disposed_error);
}

TEST_CASE_TEMPLATE("dispose: reading or writing a disposed node raises disposed_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto c = ctx.computed([&] { return a.get() + 1; });
  auto s = ctx.signal([&] { return a.get() + 2; });
  CHECK(c.get() == 2);
  c.dispose();
  s.dispose();
  CHECK_THROWS_AS((void)c.get(), trellis::disposed_error);
  CHECK_THROWS_AS((void)s.get(), trellis::disposed_error);
  a.dispose();
  CHECK_THROWS_AS((void)a.get(), trellis::disposed_error);
  CHECK_THROWS_AS(a.set(2), trellis::disposed_error);
  static_assert(std::is_base_of_v<trellis::error, trellis::disposed_error>);
}

TEST_CASE_TEMPLATE("dispose: a computed whose input was disposed raises disposed_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto cached = ctx.computed([&] { return a.get() * 2; });
  auto fresh = ctx.computed([&] { return a.get() * 3; });
  CHECK(cached.get() == 2);  // evaluated before the disposal, never after
  a.dispose();
  CHECK_THROWS_AS((void)cached.get(), trellis::disposed_error);
  CHECK_THROWS_AS((void)fresh.get(), trellis::disposed_error);
  auto downstream = ctx.computed([&] { return cached.get() + 1; });
  CHECK_THROWS_AS((void)downstream.get(), trellis::disposed_error);
}

TEST_CASE_TEMPLATE("dispose: a disposed computed is detached from its inputs", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Counter evaluations;
  auto c = ctx.computed([&] {
    evaluations.bump();
    return a.get();
  });
  auto s = ctx.signal([&] {
    evaluations.bump();
    return a.get();
  });
  CHECK(c.get() == 1);
  REQUIRE(evaluations.value() == 2);
  c.dispose();
  s.dispose();
  a.set(2);  // the signal would re-evaluate eagerly if it were still attached
  settle(ctx);
  CHECK(evaluations.value() == 2);
  CHECK(a.get() == 2);
}

TEST_CASE_TEMPLATE("dispose: disposing an input runs no surviving effect", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto b = ctx.cell(1);
  auto c = ctx.computed([&] { return b.get() * 2; });
  Counter runs_a;
  Counter runs_c;
  auto on_a = ctx.effect([&] {
    (void)a.get();
    runs_a.bump();
  });
  auto on_c = ctx.effect([&] {
    (void)c.get();
    runs_c.bump();
  });
  settle(ctx);
  a.dispose();
  c.dispose();
  settle(ctx);
  CHECK(runs_a.value() == 1);
  CHECK(runs_c.value() == 1);
  b.set(2);  // c no longer exists between b and on_c
  settle(ctx);
  CHECK(runs_c.value() == 1);
}

TEST_CASE_TEMPLATE("dispose: a disposed effect is detached and leaves the node count", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  const auto before = ctx.node_count();
  Counter runs;
  auto e = ctx.effect([&] {
    (void)a.get();
    runs.bump();
  });
  settle(ctx);
  CHECK(ctx.node_count() == before + 1);
  e.dispose();
  settle(ctx);
  CHECK(ctx.node_count() == before);
  a.set(2);
  settle(ctx);
  CHECK(runs.value() == 1);
}

TEST_CASE_TEMPLATE("dispose: node_count counts live nodes", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  const auto before = ctx.node_count();
  {
    auto a = ctx.cell(1);
    CHECK(ctx.node_count() == before + 1);
  }  // dropping a handle disposes nothing: the context owns the node
  CHECK(ctx.node_count() == before + 1);
}

TEST_CASE_TEMPLATE("dispose: a computed may dispose its reader while the reader is being checked",
                   Ctx, TRELLIS_ALL_CONTEXTS) {
  // The effect's check walks effect -> reader -> inner and evaluates inner, which disposes
  // reader: the walk still holds reader's links, so they must outlive the walk.
  Ctx ctx;
  auto a = ctx.cell(0);
  std::optional<trellis::Computed<int>> reader;
  auto inner = ctx.computed([&] {
    const int v = a.get();
    if (v == 1 && reader) {
      reader->dispose();
    }
    return v;
  });
  auto other = ctx.cell(5);
  reader.emplace(ctx.computed([&] { return inner.get() + other.get(); }));
  Counter runs;
  std::atomic<int> seen{-1};
  auto e = ctx.effect([&] {
    runs.bump();
    try {
      seen = reader->get();
    } catch (const trellis::disposed_error&) {
      seen = -2;
    }
  });
  settle(ctx);
  REQUIRE(runs.value() == 1);
  REQUIRE(seen.load() == 5);
  // Freed links whose nodes are gone, for a walk through freed memory to land on.
  for (int i = 0; i < 3; ++i) {
    auto tmp = ctx.cell(i);
    auto mid = ctx.computed([tmp] { return tmp.get(); });
    auto leaf = ctx.effect([mid] { (void)mid.get(); });
    settle(ctx);
    leaf.dispose();
    mid.dispose();
    tmp.dispose();
  }
  settle(ctx);
  const auto before = ctx.node_count();

  a.set(1);
  settle(ctx);
  CHECK(reader->disposed());
  CHECK_THROWS_AS((void)reader->get(), trellis::disposed_error);
  CHECK(ctx.node_count() == before - 1);
  CHECK(runs.value() == 1);  // a disposed input runs no surviving effect
  CHECK(seen.load() == 5);
  CHECK(e.active());

  a.set(2);
  other.set(6);
  settle(ctx);
  CHECK(runs.value() == 1);
  CHECK(inner.get() == 2);
  CHECK(ctx.node_count() == before - 1);
}
