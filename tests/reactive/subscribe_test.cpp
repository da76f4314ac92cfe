// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <trellis/signals2/subscribe.hpp>

#include <optional>
#include <string>
#include <vector>

using trellis_test::Log;
using trellis_test::settle;

TEST_CASE_TEMPLATE("subscribe: called after each change, not at subscribe time", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Log<int> seen;
  const boost::signals2::scoped_connection connection =
      trellis::subscribe(a, [&](const int& v) { seen.push(v); });
  settle(ctx);
  CHECK(seen.size() == 0);
  a.set(2);
  settle(ctx);
  a.set(3);
  settle(ctx);
  CHECK(seen.items() == std::vector<int>{2, 3});
}

TEST_CASE_TEMPLATE("subscribe: an equal write does not call", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(std::string("x"));
  Log<std::string> seen;
  auto connection = trellis::subscribe(a, [&](const std::string& v) { seen.push(v); });
  a.set("x");
  settle(ctx);
  CHECK(seen.size() == 0);
  a.set("y");
  settle(ctx);
  CHECK(seen.items() == std::vector<std::string>{"y"});
}

TEST_CASE_TEMPLATE("subscribe: destroying the connection stops the calls", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  Log<int> seen;
  {
    auto connection = trellis::subscribe(a, [&](const int& v) { seen.push(v); });
    a.set(2);
    settle(ctx);
  }
  a.set(3);
  settle(ctx);
  CHECK(seen.items() == std::vector<int>{2});
}

TEST_CASE_TEMPLATE("subscribe: follows the changes of a computed's value", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(0);
  auto parity = ctx.computed([&] { return a.get() % 2; });
  Log<int> seen;
  auto connection = trellis::subscribe(parity, [&](const int& v) { seen.push(v); });
  for (int v : {1, 3, 5, 6, 8, 9}) {
    a.set(v);
    settle(ctx);
  }
  CHECK(seen.items() == std::vector<int>{1, 0, 1});
}

TEST_CASE_TEMPLATE("subscribe: follows the changes of a signal's value", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto doubled = ctx.signal([&] { return a.get() * 2; });
  Log<int> seen;
  auto connection = trellis::subscribe(doubled, [&](const int& v) { seen.push(v); });
  ctx.batch([&] {
    a.set(2);
    a.set(3);
  });
  settle(ctx);
  CHECK(seen.items() == std::vector<int>{6});
}

TEST_CASE_TEMPLATE("subscribe: a callback may write the same context", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto mirror = ctx.cell(0);
  auto connection = trellis::subscribe(a, [&](const int& v) { mirror.set(v * 100); });
  a.set(2);
  settle(ctx);
  CHECK(mirror.get() == 200);
}

TEST_CASE_TEMPLATE("subscribe: a callback may dispose the node it observes", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  // Disposing the node disconnects every slot, including the one being called, without
  // pulling the signal from under that call.
  Ctx ctx;
  auto a = ctx.cell(0);
  Log<std::string> calls;
  std::optional<boost::signals2::scoped_connection> second;
  std::optional<boost::signals2::scoped_connection> third;
  std::optional<boost::signals2::scoped_connection> fourth;
  const boost::signals2::scoped_connection first = trellis::subscribe(a, [&](const int& v) {
    calls.push("first " + std::to_string(v));
    if (v == 1) {
      second->disconnect();
      third->disconnect();
      fourth->disconnect();
      a.dispose();
    }
  });
  second.emplace(
      trellis::subscribe(a, [&](const int& v) { calls.push("second " + std::to_string(v)); }));
  third.emplace(
      trellis::subscribe(a, [&](const int& v) { calls.push("third " + std::to_string(v)); }));
  fourth.emplace(
      trellis::subscribe(a, [&](const int& v) { calls.push("fourth " + std::to_string(v)); }));
  settle(ctx);

  a.set(1);
  settle(ctx);
  CHECK(calls.items() == std::vector<std::string>{"first 1"});
  CHECK(a.disposed());
  CHECK_FALSE(first.connected());
  CHECK_FALSE(second->connected());

  // The context stays usable, subscriptions included.
  auto b = ctx.cell(0);
  Log<int> seen;
  const boost::signals2::scoped_connection on_b =
      trellis::subscribe(b, [&](const int& v) { seen.push(v); });
  b.set(2);
  settle(ctx);
  CHECK(seen.items() == std::vector<int>{2});
}
