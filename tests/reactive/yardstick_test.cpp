// SPDX-License-Identifier: MIT
/// @file
/// The yardstick graphs of shared/bench-cases.md, built exactly as the benchmarks build them,
/// with the work of every iteration counted: getter (computed) evaluations and effect runs.
/// A minimal glitch-free implementation matches the stated counts exactly; fewer means a bug,
/// more means wasted recomputation. Synchronous contexts only: the counts are per flush.
#include "test_support.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <vector>

namespace {

/// What one iteration did, counted by the getters and effects themselves.
struct Work {
  long getters = 0;
  long effects = 0;
  long failed_checks = 0;
  void check(bool ok) { failed_checks += ok ? 0 : 1; }
};

constexpr int iterations = 3;  // state carries over: later iterations start from another state

/// Runs `iteration` a few times on the same graph, asserting the work of each.
void expect_work(Work& work, long getters, long effects, const std::function<void()>& iteration) {
  for (int i = 0; i < iterations; ++i) {
    CAPTURE(i);
    work = Work{};
    iteration();
    CHECK(work.failed_checks == 0);
    CHECK(work.getters == getters);
    CHECK(work.effects == effects);
  }
}

/// The benchmark's busy loop, kept from being optimized away.
int busy() {
  volatile int counter = 0;
  for (int i = 0; i < 100; ++i) {
    counter = counter + 1;
  }
  return counter;
}

int fib(int n) { return n < 2 ? 1 : fib(n - 1) + fib(n - 2); }
int hard(int n) { return n + fib(16); }

/// A container that, like a fresh JavaScript object, never compares equal.
struct Fresh {
  std::array<int, 5> x{};
  bool operator==(const Fresh& /*other*/) const { return false; }
};

}  // namespace

TEST_CASE_TEMPLATE("yardstick: avoidablePropagation does 2002 evaluations and 0 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  auto h = ctx.cell(0);
  auto c1 = ctx.computed([&] { return ++work.getters, h.get(); });
  auto c2 = ctx.computed([&] {
    ++work.getters;
    (void)c1.get();
    return 0;
  });
  auto c3 = ctx.computed([&] {
    ++work.getters;
    busy();
    return c2.get() + 1;
  });
  auto c4 = ctx.computed([&] { return ++work.getters, c3.get() + 2; });
  auto c5 = ctx.computed([&] { return ++work.getters, c4.get() + 3; });
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)c5.get();
    busy();
  });
  expect_work(work, 2002, 0, [&] {
    ctx.batch([&] { h.set(1); });
    work.check(c5.get() == 6);
    for (int i = 0; i < 1000; ++i) {
      ctx.batch([&] { h.set(i); });
      work.check(c5.get() == 6);
    }
  });
}

TEST_CASE_TEMPLATE("yardstick: broadPropagation does 5100 evaluations and 2550 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto h = ctx.cell(0);
  std::vector<trellis::Computed<int>> bs;
  std::vector<trellis::Effect> effects;
  for (int i = 0; i < 50; ++i) {
    auto a = ctx.computed([&work, h, i] { return ++work.getters, h.get() + i; });
    auto b = ctx.computed([&work, a] { return ++work.getters, a.get() + 1; });
    bs.push_back(b);
    effects.push_back(ctx.effect([&work, &count, b] {
      ++work.effects;
      (void)b.get();
      ++count;
    }));
  }
  expect_work(work, 5100, 2550, [&] {
    ctx.batch([&] { h.set(1); });
    count = 0;
    for (int i = 0; i < 50; ++i) {
      ctx.batch([&] { h.set(i); });
      work.check(bs[49].get() == i + 50);
    }
    work.check(count == 2500);
  });
}

TEST_CASE_TEMPLATE("yardstick: deepPropagation does 2550 evaluations and 51 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto h = ctx.cell(0);
  auto head = ctx.computed([&] { return ++work.getters, h.get() + 1; });
  std::vector<trellis::Computed<int>> chain{head};
  for (int k = 2; k <= 50; ++k) {
    auto prev = chain.back();
    chain.push_back(ctx.computed([&work, prev] { return ++work.getters, prev.get() + 1; }));
  }
  auto last = chain.back();
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)last.get();
    ++count;
  });
  expect_work(work, 2550, 51, [&] {
    ctx.batch([&] { h.set(1); });
    count = 0;
    for (int i = 0; i < 50; ++i) {
      ctx.batch([&] { h.set(i); });
      work.check(last.get() == 50 + i);
    }
    work.check(count == 50);
  });
}

TEST_CASE_TEMPLATE("yardstick: diamond does 3006 evaluations and 501 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto h = ctx.cell(0);
  std::vector<trellis::Computed<int>> bs;
  for (int i = 0; i < 5; ++i) {
    bs.push_back(ctx.computed([&work, h] { return ++work.getters, h.get() + 1; }));
  }
  auto sum = ctx.computed([&] {
    ++work.getters;
    int total = 0;
    for (const auto& b : bs) {
      total += b.get();
    }
    return total;
  });
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)sum.get();
    ++count;
  });
  expect_work(work, 3006, 501, [&] {
    ctx.batch([&] { h.set(1); });
    work.check(sum.get() == 10);
    count = 0;
    for (int i = 0; i < 500; ++i) {
      ctx.batch([&] { h.set(i); });
      work.check(sum.get() == 5 * (i + 1));
    }
    work.check(count == 500);
  });
}

TEST_CASE_TEMPLATE("yardstick: mux does 1836 evaluations and 18 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  std::vector<trellis::Cell<int>> hs;
  for (int j = 0; j < 100; ++j) {
    hs.push_back(ctx.cell(0));
  }
  auto mux = ctx.computed([&] {
    ++work.getters;
    std::vector<int> values;
    values.reserve(hs.size());
    for (const auto& h : hs) {
      values.push_back(h.get());
    }
    return values;
  });
  std::vector<trellis::Computed<int>> ts;
  std::vector<trellis::Effect> effects;
  for (std::size_t j = 0; j < 100; ++j) {
    auto s = ctx.computed([&work, mux, j] {
      ++work.getters;
      return mux.read([j](const std::vector<int>& values) { return values[j]; });
    });
    auto t = ctx.computed([&work, s] { return ++work.getters, s.get() + 1; });
    ts.push_back(t);
    effects.push_back(ctx.effect([&work, t] {
      ++work.effects;
      (void)t.get();
    }));
  }
  expect_work(work, 1836, 18, [&] {
    for (int i = 0; i < 10; ++i) {
      ctx.batch([&] { hs[i].set(i); });
      work.check(ts[i].get() == i + 1);
    }
    for (int i = 0; i < 10; ++i) {
      ctx.batch([&] { hs[i].set(2 * i); });
      work.check(ts[i].get() == 2 * i + 1);
    }
  });
}

TEST_CASE_TEMPLATE("yardstick: repeatedObservers does 101 evaluations and 101 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto h = ctx.cell(0);
  auto c = ctx.computed([&] {
    ++work.getters;
    int total = 0;
    for (int i = 0; i < 30; ++i) {
      total += h.get();
    }
    return total;
  });
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)c.get();
    ++count;
  });
  expect_work(work, 101, 101, [&] {
    ctx.batch([&] { h.set(1); });
    work.check(c.get() == 30);
    count = 0;
    for (int i = 0; i < 100; ++i) {
      ctx.batch([&] { h.set(i); });
      work.check(c.get() == 30 * i);
    }
    work.check(count == 100);
  });
}

TEST_CASE_TEMPLATE("yardstick: triangle does 1010 evaluations and 101 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto h = ctx.cell(0);
  std::vector<trellis::Computed<int>> chain{
      ctx.computed([&] { return ++work.getters, h.get() + 1; })};
  for (int k = 2; k <= 10; ++k) {
    auto prev = chain.back();
    chain.push_back(ctx.computed([&work, prev] { return ++work.getters, prev.get() + 1; }));
  }
  auto sum = ctx.computed([&] {
    ++work.getters;
    int total = h.get();
    for (int k = 0; k < 9; ++k) {  // c_1 .. c_9; c_10 is never read
      total += chain[static_cast<std::size_t>(k)].get();
    }
    return total;
  });
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)sum.get();
    ++count;
  });
  expect_work(work, 1010, 101, [&] {
    ctx.batch([&] { h.set(1); });
    work.check(sum.get() == 55);
    count = 0;
    for (int i = 0; i < 100; ++i) {
      ctx.batch([&] { h.set(i); });
      work.check(sum.get() == 45 + 10 * i);
    }
    work.check(count == 100);
  });
}

TEST_CASE_TEMPLATE("yardstick: unstable does 202 evaluations and 101 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto h = ctx.cell(0);
  auto dbl = ctx.computed([&] { return ++work.getters, h.get() * 2; });
  auto inv = ctx.computed([&] { return ++work.getters, -h.get(); });
  auto cur = ctx.computed([&] {
    ++work.getters;
    int total = 0;
    for (int i = 0; i < 20; ++i) {
      total += (h.get() % 2 != 0) ? dbl.get() : inv.get();
    }
    return total;
  });
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)cur.get();
    ++count;
  });
  expect_work(work, 202, 101, [&] {
    ctx.batch([&] { h.set(1); });
    work.check(cur.get() == 40);
    count = 0;
    for (int i = 0; i < 100; ++i) {
      ctx.batch([&] { h.set(i); });
    }
    work.check(count == 100);
    work.check(cur.get() == 3960);
  });
}

TEST_CASE_TEMPLATE("yardstick: molBench does 9 evaluations and 4 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  std::vector<int> res;
  auto a = ctx.cell(0);
  auto b = ctx.cell(0);
  auto c = ctx.computed([&] { return ++work.getters, a.get() % 2 + b.get() % 2; });
  auto d = ctx.computed([&] {
    ++work.getters;
    Fresh fresh;
    for (int k = 0; k < 5; ++k) {
      fresh.x[static_cast<std::size_t>(k)] = k + a.get() % 2 - b.get() % 2;
    }
    return fresh;
  });
  auto e = ctx.computed([&] { return ++work.getters, hard(c.get() + a.get() + d.get().x[0]); });
  auto f = ctx.computed([&] {
    ++work.getters;
    const int x = d.get().x[2];
    return hard(x != 0 ? x : b.get());
  });
  auto g = ctx.computed([&] {
    ++work.getters;
    const int cv = c.get();
    const int either = cv != 0 ? cv : e.get() % 2;
    return c.get() + either + d.get().x[4] + f.get();
  });
  auto effect_h = ctx.effect([&] { ++work.effects, res.push_back(hard(g.get())); });
  auto effect_i = ctx.effect([&] { ++work.effects, res.push_back(g.get()); });
  auto effect_j = ctx.effect([&] { ++work.effects, res.push_back(hard(f.get())); });
  int i = -1;
  expect_work(work, 9, 4, [&] {
    i += 1;
    res.clear();
    ctx.batch([&] {
      b.set(1);
      a.set(1 + 2 * i);
    });
    ctx.batch([&] {
      a.set(2 + 2 * i);
      b.set(2);
    });
    std::sort(res.begin(), res.end());
    work.check(res == std::vector<int>{1604, 1607, 3201, 3204});
  });
}

TEST_CASE_TEMPLATE("yardstick: cellx1000 does 4000 evaluations and 4000 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  std::array<trellis::Cell<int>, 4> start{ctx.cell(1), ctx.cell(2), ctx.cell(3), ctx.cell(4)};
  using Layer = std::array<std::function<int()>, 4>;  // readers of one layer's four values
  Layer layer{[p = start[0]] { return p.get(); }, [p = start[1]] { return p.get(); },
              [p = start[2]] { return p.get(); }, [p = start[3]] { return p.get(); }};
  std::vector<trellis::Effect> effects;
  effects.reserve(4000);
  std::array<trellis::Computed<int>, 4>* last = nullptr;
  std::vector<std::array<trellis::Computed<int>, 4>> layers;
  layers.reserve(1000);
  for (int n = 0; n < 1000; ++n) {
    const Layer m = layer;
    layers.push_back({
        ctx.computed([&work, m] { return ++work.getters, m[1](); }),
        ctx.computed([&work, m] { return ++work.getters, m[0]() - m[2](); }),
        ctx.computed([&work, m] { return ++work.getters, m[1]() + m[3](); }),
        ctx.computed([&work, m] { return ++work.getters, m[2](); }),
    });
    last = &layers.back();
    for (const auto& node : *last) {
      effects.push_back(ctx.effect([&work, node] {
        ++work.effects;
        (void)node.get();
      }));
    }
    for (std::size_t k = 0; k < 4; ++k) {
      layer[k] = [node = (*last)[k]] { return node.get(); };
    }
  }
  auto values = [&] {
    return std::array<int, 4>{(*last)[0].get(), (*last)[1].get(), (*last)[2].get(),
                              (*last)[3].get()};
  };
  bool forward = true;
  expect_work(work, 4000, 4000, [&] {
    if (forward) {
      ctx.batch([&] {
        start[0].set(4);
        start[1].set(3);
        start[2].set(2);
        start[3].set(1);
      });
      work.check(values() == std::array<int, 4>{-2, -4, 2, 3});
    } else {
      ctx.batch([&] {
        start[0].set(1);
        start[1].set(2);
        start[2].set(3);
        start[3].set(4);
      });
      work.check(values() == std::array<int, 4>{-3, -6, -2, 2});
    }
    forward = !forward;
  });
}

TEST_CASE_TEMPLATE("yardstick: sbench_update1to1 does 0 evaluations and 1001 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto s = ctx.cell(-1);
  auto e = ctx.effect([&] {
    ++work.effects;
    (void)s.get();
    ++count;
  });
  expect_work(work, 0, 1001, [&] {
    count = 0;
    for (int i = 0; i < 1000; ++i) {
      ctx.batch([&] { s.set(i); });
    }
    work.check(count == 1000);
    ctx.batch([&] { s.set(-1); });
  });
}

TEST_CASE_TEMPLATE("yardstick: sbench_update1to1000 does 0 evaluations and 11000 effect runs", Ctx,
                   TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  Work work;
  long count = 0;
  auto s = ctx.cell(-1);
  std::vector<trellis::Effect> effects;
  for (int k = 0; k < 1000; ++k) {
    effects.push_back(ctx.effect([&] {
      ++work.effects;
      (void)s.get();
      ++count;
    }));
  }
  expect_work(work, 0, 11000, [&] {
    count = 0;
    for (int i = 0; i < 10; ++i) {
      ctx.batch([&] { s.set(i); });
    }
    work.check(count == 10000);
    ctx.batch([&] { s.set(-1); });
  });
}

TEST_CASE_TEMPLATE("yardstick: cellx1000 build and dispose does 4000 evaluations and 4000 runs",
                   Ctx, TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  const auto before = ctx.node_count();
  Work work;
  expect_work(work, 4000, 4000, [&] {
    std::array<trellis::Cell<int>, 4> start{ctx.cell(1), ctx.cell(2), ctx.cell(3), ctx.cell(4)};
    std::vector<trellis::Computed<int>> nodes;
    nodes.reserve(4000);
    std::vector<trellis::Effect> effects;
    effects.reserve(4000);
    // previous layer's four values, as node handles; layer 0 reads the cells
    auto read_start = [&start](std::size_t k) { return start[k].get(); };
    for (int n = 0; n < 1000; ++n) {
      if (n == 0) {
        nodes.push_back(
            ctx.computed([&work, read_start] { return ++work.getters, read_start(1); }));
        nodes.push_back(ctx.computed(
            [&work, read_start] { return ++work.getters, read_start(0) - read_start(2); }));
        nodes.push_back(ctx.computed(
            [&work, read_start] { return ++work.getters, read_start(1) + read_start(3); }));
        nodes.push_back(
            ctx.computed([&work, read_start] { return ++work.getters, read_start(2); }));
      } else {
        const std::size_t base = nodes.size() - 4;
        const auto p1 = nodes[base];
        const auto p2 = nodes[base + 1];
        const auto p3 = nodes[base + 2];
        const auto p4 = nodes[base + 3];
        nodes.push_back(ctx.computed([&work, p2] { return ++work.getters, p2.get(); }));
        nodes.push_back(
            ctx.computed([&work, p1, p3] { return ++work.getters, p1.get() - p3.get(); }));
        nodes.push_back(
            ctx.computed([&work, p2, p4] { return ++work.getters, p2.get() + p4.get(); }));
        nodes.push_back(ctx.computed([&work, p3] { return ++work.getters, p3.get(); }));
      }
      for (std::size_t k = nodes.size() - 4; k < nodes.size(); ++k) {
        effects.push_back(ctx.effect([&work, node = nodes[k]] {
          ++work.effects;
          (void)node.get();
        }));
      }
    }
    work.check(nodes.back().get() == 2 /* p4 of (1,2,3,4) after 1000 layers */);
    effects.clear();
    for (auto& node : nodes) {
      node.dispose();
    }
    for (auto& cell : start) {
      cell.dispose();
    }
    work.check(ctx.node_count() == before);
  });
}
