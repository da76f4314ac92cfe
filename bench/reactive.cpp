/// @file
/// Micro-benchmarks of the reactive graph, each beside a hand-written baseline in the same
/// binary (`baseline/...`) that does the same job with no library: what the figure would be
/// with plain structs, dirty flags and virtual calls, `std::vector<std::function>`, or plain
/// new/delete. Graphs are built outside the timed loop; correctness is checked after it (a
/// failed check reports the run with `SkipWithError`).
///
/// Memory per node is measured with mallinfo2() deltas over 10,000 nodes (heap bytes in use,
/// malloc's own chunk headers included) and allocations per node with a replaced global
/// operator new that counts only while a measurement is on.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <trellis/trellis.hpp>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

// ---------------------------------------------------------------- counting operator new

namespace {
std::atomic<bool> g_count_allocs{false};
std::atomic<long> g_allocs{0};

void* counted_alloc(std::size_t n) {
  void* p = std::malloc(n != 0 ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  if (g_count_allocs.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
  }
  return p;
}

void* counted_aligned_alloc(std::size_t n, std::align_val_t al) {
  const auto a = static_cast<std::size_t>(al);
  void* p = std::aligned_alloc(a, (n + a - 1) / a * a);
  if (p == nullptr) throw std::bad_alloc();
  if (g_count_allocs.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
  }
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, std::align_val_t al) { return counted_aligned_alloc(n, al); }
void* operator new[](std::size_t n, std::align_val_t al) { return counted_aligned_alloc(n, al); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

// ---------------------------------------------------------------- helpers

template <class Ctx, class T>
using CellOf = decltype(std::declval<Ctx&>().cell(std::declval<T>()));
template <class Ctx, class T>
using ComputedOf = decltype(std::declval<Ctx&>().computed(std::declval<T (*)()>()));
template <class Ctx>
using EffectOf = decltype(std::declval<Ctx&>().effect(std::declval<void (*)()>()));

/// A counter of CPU time per unit (node, write) when an iteration handles `per_iteration`
/// units: seconds in the JSON output, shown with an SI prefix on the console ("13.2ns").
benchmark::Counter time_per(double per_iteration) {
  return benchmark::Counter(
      per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// The next value to write: always different from the previous one, and bounded, so that the
/// sums of the wide graphs never overflow however many iterations a run takes.
int next(int v, int step = 1) { return (v + step) & 0xffff; }

void fail_if(benchmark::State& state, bool failed, const std::string& what) {
  if (failed) state.SkipWithError(what.c_str());
}

int width(const benchmark::State& state) { return static_cast<int>(state.range(0)); }

// ---------------------------------------------------------------- the baseline engine

namespace baseline {

/// A hand-written push graph with dirty flags: nodes are kept in creation order, which is a
/// topological order; a write marks the source's direct subscribers dirty, then one forward
/// sweep recomputes each dirty node through a virtual call and marks its subscribers only when
/// its value changed (equality cut-off). No tracking, no dynamic dependencies, no batching:
/// the floor a fixed, statically wired graph can reach.
struct Node {
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node() = default;
  virtual bool recompute() = 0;  // true when the value changed

  std::vector<Node*> subs;
  int value = 0;
  bool dirty = false;
};

struct Source final : Node {
  bool recompute() override { return false; }
};

struct AddConst final : Node {
  AddConst(const Node* i, int k) : in(i), add(k) { value = in->value + add; }
  bool recompute() override {
    const int v = in->value + add;
    if (v == value) return false;
    value = v;
    return true;
  }
  const Node* in;
  int add;
};

struct Parity final : Node {
  explicit Parity(const Node* i) : in(i) { value = in->value & 1; }
  bool recompute() override {
    const int v = in->value & 1;
    if (v == value) return false;
    value = v;
    return true;
  }
  const Node* in;
};

struct Sum final : Node {
  explicit Sum(std::vector<const Node*> i) : ins(std::move(i)) { value = compute(); }
  int compute() const {
    int s = 0;
    for (const Node* n : ins) s += n->value;
    return s;
  }
  bool recompute() override {
    const int v = compute();
    if (v == value) return false;
    value = v;
    return true;
  }
  std::vector<const Node*> ins;
};

/// The effect: copies its input out and counts its runs.
struct Sink final : Node {
  explicit Sink(const Node* i) : in(i) { run(); }
  void run() {
    out = in->value;
    ++runs;
  }
  bool recompute() override {
    run();
    return false;
  }
  const Node* in;
  int out = 0;
  long runs = 0;
};

class Graph {
 public:
  template <class N, class... A>
  N& add(A&&... args) {
    auto node = std::make_unique<N>(std::forward<A>(args)...);
    N& ref = *node;
    nodes_.push_back(std::move(node));
    return ref;
  }

  static void link(Node& dep, Node& sub) { dep.subs.push_back(&sub); }

  void write(Node& source, int v) {
    if (source.value == v) return;
    source.value = v;
    for (Node* s : source.subs) s->dirty = true;
    for (const auto& n : nodes_) {
      if (!n->dirty) continue;
      n->dirty = false;
      if (n->recompute()) {
        for (Node* s : n->subs) s->dirty = true;
      }
    }
  }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
};

/// A lazily evaluated cached value: the baseline of a read of a clean computed.
struct Lazy {
  Lazy() = default;
  Lazy(const Lazy&) = delete;
  Lazy& operator=(const Lazy&) = delete;
  virtual ~Lazy() = default;
  virtual int compute() const = 0;
  int get() {
    if (dirty) {
      value = compute();
      dirty = false;
    }
    return value;
  }
  int value = 0;
  bool dirty = true;
};

struct Doubler final : Lazy {
  explicit Doubler(const int* i) : in(i) {}
  int compute() const override { return *in * 2; }
  const int* in;
};

/// Plain heap nodes with the same roles as trellis's: a cell with its subscriber list, a lazy
/// computed holding its function, an effect holding its function and its one dependency.
struct Effect;

struct Cell {
  int value = 0;
  std::vector<Effect*> subs;
};

struct Computed {
  std::function<int()> fn;
  int value = 0;
  bool dirty = true;
  std::vector<void*> deps;
  std::vector<void*> subs;
};

struct Effect {
  Effect(Cell* c, std::function<void()> f) : fn(std::move(f)), dep(c) {
    fn();
    slot = dep->subs.size();
    dep->subs.push_back(this);
  }
  Effect(const Effect&) = delete;
  Effect& operator=(const Effect&) = delete;
  ~Effect() {
    // Swap-and-pop out of the cell's subscriber list: O(1), like an intrusive list.
    Effect* moved = dep->subs.back();
    dep->subs[slot] = moved;
    moved->slot = slot;
    dep->subs.pop_back();
  }
  std::function<void()> fn;
  Cell* dep;
  std::size_t slot;
};

}  // namespace baseline

// ---------------------------------------------------------------- chain

/// 1 cell -> N computeds in a chain (each +1) -> effect; one write per iteration.
template <class Ctx>
void chain(benchmark::State& state) {
  const int n = width(state);
  Ctx ctx;
  int v = 0;
  long runs = 0;
  int seen = 0;
  {
    auto h = ctx.cell(0);
    std::vector<ComputedOf<Ctx, int>> cs;
    cs.push_back(ctx.computed([h] { return h.get() + 1; }));
    for (int k = 1; k < n; ++k) cs.push_back(ctx.computed([p = cs.back()] { return p.get() + 1; }));
    auto e = ctx.effect([&, t = cs.back()] {
      seen = t.get();
      ++runs;
    });
    for (auto _ : state) h.set(v = next(v));
  }
  state.counters["time_per_node"] = time_per(n);
  fail_if(state, runs != state.iterations() + 1 || seen != v + n,
          "chain: wrong effect runs or value");
}

void baseline_chain(benchmark::State& state) {
  const int n = width(state);
  baseline::Graph g;
  auto& h = g.add<baseline::Source>();
  baseline::Node* prev = &h;
  for (int k = 0; k < n; ++k) {
    auto& c = g.add<baseline::AddConst>(prev, 1);
    baseline::Graph::link(*prev, c);
    prev = &c;
  }
  auto& e = g.add<baseline::Sink>(prev);
  baseline::Graph::link(*prev, e);
  int v = 0;
  for (auto _ : state) g.write(h, v = next(v));
  state.counters["time_per_node"] = time_per(n);
  fail_if(state, e.runs != state.iterations() + 1 || e.out != v + n,
          "baseline chain: wrong effect runs or value");
}

// ---------------------------------------------------------------- fan-out

/// 1 cell -> N computeds (h + i), each with its own effect; one write per iteration.
template <class Ctx>
void fanout(benchmark::State& state) {
  const int n = width(state);
  Ctx ctx;
  int v = 0;
  long runs = 0;
  long long total = 0;
  {
    auto h = ctx.cell(0);
    std::vector<EffectOf<Ctx>> effects;
    effects.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto c = ctx.computed([h, i] { return h.get() + i; });
      effects.push_back(ctx.effect([&, c] {
        total += c.get();
        ++runs;
      }));
    }
    for (auto _ : state) h.set(v = next(v));
  }
  state.counters["time_per_node"] = time_per(n);
  fail_if(state, runs != n * (state.iterations() + 1), "fanout: wrong effect runs");
  benchmark::DoNotOptimize(total);
}

/// The same fan-out as a std::vector<std::function>: each listener recomputes its value,
/// compares it with the cached one and runs its effect body.
void baseline_fanout(benchmark::State& state) {
  const int n = width(state);
  int h = 0;
  long runs = 0;
  long long total = 0;
  std::vector<int> cached(static_cast<std::size_t>(n));
  std::vector<std::function<void()>> listeners;
  for (int i = 0; i < n; ++i) {
    listeners.emplace_back([&, i] {
      auto& slot = cached[static_cast<std::size_t>(i)];
      const int x = h + i;
      if (x == slot) return;
      slot = x;
      total += x;
      ++runs;
    });
  }
  int v = 0;
  for (auto _ : state) {
    h = v = next(v);
    for (auto& f : listeners) f();
  }
  state.counters["time_per_node"] = time_per(n);
  fail_if(state, runs != n * state.iterations(), "baseline fanout: wrong effect runs");
  benchmark::DoNotOptimize(total);
}

// ---------------------------------------------------------------- diamond

/// 1 cell -> N computeds (h + i) -> sum -> effect; one write per iteration.
template <class Ctx>
void diamond(benchmark::State& state) {
  const int n = width(state);
  Ctx ctx;
  int v = 0;
  long runs = 0;
  int seen = 0;
  {
    auto h = ctx.cell(0);
    std::vector<ComputedOf<Ctx, int>> cs;
    for (int i = 0; i < n; ++i) cs.push_back(ctx.computed([h, i] { return h.get() + i; }));
    auto sum = ctx.computed([cs] {
      int s = 0;
      for (const auto& c : cs) s += c.get();
      return s;
    });
    auto e = ctx.effect([&, sum] {
      seen = sum.get();
      ++runs;
    });
    for (auto _ : state) h.set(v = next(v));
  }
  state.counters["time_per_node"] = time_per(n);
  fail_if(state, runs != state.iterations() + 1 || seen != n * v + n * (n - 1) / 2,
          "diamond: wrong effect runs or value");
}

void baseline_diamond(benchmark::State& state) {
  const int n = width(state);
  baseline::Graph g;
  auto& h = g.add<baseline::Source>();
  std::vector<const baseline::Node*> ins;
  std::vector<baseline::Node*> mids;
  for (int i = 0; i < n; ++i) {
    auto& c = g.add<baseline::AddConst>(&h, i);
    baseline::Graph::link(h, c);
    ins.push_back(&c);
    mids.push_back(&c);
  }
  auto& sum = g.add<baseline::Sum>(ins);
  for (auto* c : mids) baseline::Graph::link(*c, sum);
  auto& e = g.add<baseline::Sink>(&sum);
  baseline::Graph::link(sum, e);
  int v = 0;
  for (auto _ : state) g.write(h, v = next(v));
  state.counters["time_per_node"] = time_per(n);
  fail_if(state, e.runs != state.iterations() + 1 || e.out != n * v + n * (n - 1) / 2,
          "baseline diamond: wrong effect runs or value");
}

// ---------------------------------------------------------------- memo suppression

/// parity = h % 2 -> N computeds in a chain -> effect; every write adds 2, so parity is
/// re-evaluated to an equal value and nothing downstream may run.
template <class Ctx>
void memo(benchmark::State& state) {
  const int n = width(state);
  Ctx ctx;
  int v = 0;
  long downstream = 0;
  long runs = 0;
  {
    auto h = ctx.cell(0);
    auto parity = ctx.computed([h] { return h.get() % 2; });
    std::vector<ComputedOf<Ctx, int>> cs;
    cs.push_back(ctx.computed([&, parity] {
      ++downstream;
      return parity.get() + 1;
    }));
    for (int k = 1; k < n; ++k) {
      cs.push_back(ctx.computed([&, p = cs.back()] {
        ++downstream;
        return p.get() + 1;
      }));
    }
    auto e = ctx.effect([&, t = cs.back()] {
      (void)t.get();
      ++runs;
    });
    downstream = 0;
    runs = 0;
    for (auto _ : state) h.set(v = next(v, 2));
  }
  fail_if(state, downstream != 0 || runs != 0, "memo: something downstream of parity ran");
}

void baseline_memo(benchmark::State& state) {
  const int n = width(state);
  baseline::Graph g;
  auto& h = g.add<baseline::Source>();
  auto& parity = g.add<baseline::Parity>(&h);
  baseline::Graph::link(h, parity);
  baseline::Node* prev = &parity;
  for (int k = 0; k < n; ++k) {
    auto& c = g.add<baseline::AddConst>(prev, 1);
    baseline::Graph::link(*prev, c);
    prev = &c;
  }
  auto& e = g.add<baseline::Sink>(prev);
  baseline::Graph::link(*prev, e);
  int v = 0;
  for (auto _ : state) g.write(h, v = next(v, 2));
  fail_if(state, e.runs != 1, "baseline memo: the effect ran");
}

// ---------------------------------------------------------------- cached read

/// get() of a computed that is already evaluated and clean, from outside any computation.
template <class Ctx>
void cached_read(benchmark::State& state) {
  Ctx ctx;
  auto h = ctx.cell(21);
  auto c = ctx.computed([h] { return h.get() * 2; });
  long bad = c.get() != 42;
  for (auto _ : state) {
    int x = c.get();
    benchmark::DoNotOptimize(x);  // also a compiler memory barrier: no read is hoisted
  }
  bad += c.get() != 42;
  fail_if(state, bad != 0, "cached read: wrong value");
}

void baseline_cached_read(benchmark::State& state) {
  int in = 21;
  std::unique_ptr<baseline::Lazy> c = std::make_unique<baseline::Doubler>(&in);
  baseline::Lazy* p = c.get();
  benchmark::DoNotOptimize(p);
  long bad = p->get() != 42;
  for (auto _ : state) {
    int x = p->get();
    benchmark::DoNotOptimize(x);
  }
  bad += p->get() != 42;
  fail_if(state, bad != 0, "baseline cached read: wrong value");
}

// ---------------------------------------------------------------- create + dispose

constexpr int kCreateBatch = 1000;

/// Creates 1,000 cells, then disposes them, per iteration.
template <class Ctx>
void create_dispose_cell(benchmark::State& state) {
  Ctx ctx;
  const std::size_t before = ctx.node_count();
  std::vector<CellOf<Ctx, int>> nodes;
  nodes.reserve(kCreateBatch);
  for (auto _ : state) {
    for (int i = 0; i < kCreateBatch; ++i) nodes.push_back(ctx.cell(i));
    for (const auto& x : nodes) x.dispose();
    nodes.clear();
  }
  state.counters["time_per_node"] = time_per(kCreateBatch);
  fail_if(state, ctx.node_count() != before, "create+dispose cell: nodes leaked");
}

/// Creates 1,000 computeds (reading a cell; lazy, so never evaluated), then disposes them.
template <class Ctx>
void create_dispose_computed(benchmark::State& state) {
  Ctx ctx;
  auto h = ctx.cell(1);
  const std::size_t before = ctx.node_count();
  std::vector<ComputedOf<Ctx, int>> nodes;
  nodes.reserve(kCreateBatch);
  for (auto _ : state) {
    for (int i = 0; i < kCreateBatch; ++i)
      nodes.push_back(ctx.computed([h, i] { return h.get() + i; }));
    for (const auto& x : nodes) x.dispose();
    nodes.clear();
  }
  state.counters["time_per_node"] = time_per(kCreateBatch);
  fail_if(state, ctx.node_count() != before, "create+dispose computed: nodes leaked");
}

/// Creates 1,000 effects, each reading one cell (so it runs once and links to it), then
/// destroys them.
template <class Ctx>
void create_dispose_effect(benchmark::State& state) {
  Ctx ctx;
  auto h = ctx.cell(1);
  long runs = 0;
  const std::size_t before = ctx.node_count();
  std::vector<EffectOf<Ctx>> nodes;
  nodes.reserve(kCreateBatch);
  for (auto _ : state) {
    for (int i = 0; i < kCreateBatch; ++i) {
      nodes.push_back(ctx.effect([&runs, h] { runs += h.get(); }));
    }
    nodes.clear();
  }
  state.counters["time_per_node"] = time_per(kCreateBatch);
  fail_if(state, ctx.node_count() != before || runs != state.iterations() * kCreateBatch,
          "create+dispose effect: nodes leaked or wrong runs");
}

void baseline_create_dispose_cell(benchmark::State& state) {
  std::vector<baseline::Cell*> nodes;
  nodes.reserve(kCreateBatch);
  for (auto _ : state) {
    for (int i = 0; i < kCreateBatch; ++i) nodes.push_back(new baseline::Cell{i, {}});
    for (auto* x : nodes) delete x;
    nodes.clear();
  }
  state.counters["time_per_node"] = time_per(kCreateBatch);
}

void baseline_create_dispose_computed(benchmark::State& state) {
  baseline::Cell h{1, {}};
  std::vector<baseline::Computed*> nodes;
  nodes.reserve(kCreateBatch);
  for (auto _ : state) {
    for (int i = 0; i < kCreateBatch; ++i) {
      nodes.push_back(
          new baseline::Computed{[p = &h, i] { return p->value + i; }, 0, true, {}, {}});
    }
    for (auto* x : nodes) delete x;
    nodes.clear();
  }
  state.counters["time_per_node"] = time_per(kCreateBatch);
}

void baseline_create_dispose_effect(benchmark::State& state) {
  baseline::Cell h{1, {}};
  long runs = 0;
  std::vector<baseline::Effect*> nodes;
  nodes.reserve(kCreateBatch);
  for (auto _ : state) {
    for (int i = 0; i < kCreateBatch; ++i) {
      nodes.push_back(new baseline::Effect(&h, [&runs, p = &h] { runs += p->value; }));
    }
    for (auto* x : nodes) delete x;
    nodes.clear();
  }
  state.counters["time_per_node"] = time_per(kCreateBatch);
  fail_if(state, runs != state.iterations() * kCreateBatch || !h.subs.empty(),
          "baseline create+dispose effect: wrong runs or links left");
}

// ---------------------------------------------------------------- bytes per node

constexpr int kMemNodes = 10'000;

std::size_t heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;  // bytes in use from the arenas and from mmap
}

/// Heap bytes and allocations per node while `create(i)` builds kMemNodes nodes that stay
/// alive; `prepare()` runs first, outside the measurement (it reserves the handle storage).
template <class Prepare, class Create, class Release>
void measure_bytes(benchmark::State& state, Prepare prepare, Create create, Release release) {
  double bytes = 0;
  double allocs = 0;
  for (auto _ : state) {
    prepare();
    const std::size_t heap0 = heap_in_use();
    g_allocs.store(0);
    g_count_allocs.store(true);
    for (int i = 0; i < kMemNodes; ++i) create(i);
    g_count_allocs.store(false);
    const std::size_t heap1 = heap_in_use();
    bytes = (static_cast<double>(heap1) - static_cast<double>(heap0)) / kMemNodes;
    allocs = static_cast<double>(g_allocs.load()) / kMemNodes;
    release();
  }
  state.counters["bytes_per_node"] = bytes;
  state.counters["allocs_per_node"] = allocs;
}

template <class Ctx>
void bytes_cell(benchmark::State& state) {
  Ctx ctx;
  std::vector<CellOf<Ctx, int>> nodes;
  measure_bytes(
      state, [&] { nodes.reserve(kMemNodes); }, [&](int i) { nodes.push_back(ctx.cell(i)); },
      [&] {
        for (const auto& x : nodes) x.dispose();
        nodes.clear();
      });
}

/// A computed reading one cell, never read itself: no evaluation, no link.
template <class Ctx>
void bytes_computed_lazy(benchmark::State& state) {
  Ctx ctx;
  auto h = ctx.cell(1);
  std::vector<ComputedOf<Ctx, int>> nodes;
  measure_bytes(
      state, [&] { nodes.reserve(kMemNodes); },
      [&](int i) { nodes.push_back(ctx.computed([h, i] { return h.get() + i; })); },
      [&] {
        for (const auto& x : nodes) x.dispose();
        nodes.clear();
      });
}

/// An effect reading one cell: it has run once and holds one link.
template <class Ctx>
void bytes_effect(benchmark::State& state) {
  Ctx ctx;
  auto h = ctx.cell(1);
  std::vector<EffectOf<Ctx>> nodes;
  measure_bytes(
      state, [&] { nodes.reserve(kMemNodes); },
      [&](int) { nodes.push_back(ctx.effect([h] { (void)h.get(); })); }, [&] { nodes.clear(); });
}

/// A computed reading one cell, evaluated once (so it holds its value and one link).
template <class Ctx>
void bytes_computed_evaluated(benchmark::State& state) {
  Ctx ctx;
  auto h = ctx.cell(1);
  std::vector<ComputedOf<Ctx, int>> nodes;
  long sum = 0;
  measure_bytes(
      state, [&] { nodes.reserve(kMemNodes); },
      [&](int i) {
        nodes.push_back(ctx.computed([h, i] { return h.get() + i; }));
        sum += nodes.back().get();
      },
      [&] {
        for (const auto& x : nodes) x.dispose();
        nodes.clear();
      });
  benchmark::DoNotOptimize(sum);
}

void baseline_bytes_cell(benchmark::State& state) {
  std::vector<std::unique_ptr<baseline::Cell>> nodes;
  measure_bytes(
      state, [&] { nodes.reserve(kMemNodes); },
      [&](int i) {
        nodes.push_back(std::make_unique<baseline::Cell>(baseline::Cell{i, {}}));
      },
      [&] { nodes.clear(); });
}

void baseline_bytes_computed(benchmark::State& state) {
  baseline::Cell h{1, {}};
  std::vector<std::unique_ptr<baseline::Computed>> nodes;
  measure_bytes(
      state, [&] { nodes.reserve(kMemNodes); },
      [&](int i) {
        nodes.push_back(std::make_unique<baseline::Computed>(
            baseline::Computed{[p = &h, i] { return p->value + i; }, 0, true, {}, {}}));
      },
      [&] { nodes.clear(); });
}

void baseline_bytes_effect(benchmark::State& state) {
  baseline::Cell h{1, {}};
  long runs = 0;
  std::vector<std::unique_ptr<baseline::Effect>> nodes;
  measure_bytes(
      state,
      [&] {
        nodes.reserve(kMemNodes);
        h.subs.reserve(kMemNodes);  // as an intrusive list would: no growth counted
      },
      [&](int) {
        nodes.push_back(
            std::make_unique<baseline::Effect>(&h, [&runs, p = &h] { runs += p->value; }));
      },
      [&] { nodes.clear(); });
}

// ---------------------------------------------------------------- registration

/// Registers `reactive/<context>/<name>` for each context given, then `baseline/<name>`, so
/// that each figure is printed next to its baseline.
struct Row {
  const char* name;
  void (*context)(benchmark::State&);
  void (*thread_safe)(benchmark::State&) = nullptr;  // null: Context only
  void (*baseline)(benchmark::State&) = nullptr;
  bool sweep = false;  // width 10, 100 and 1000
  int fixed_arg = 0;   // one width (memo)
  bool once = false;   // memory measurements: a single iteration
};

void register_row(const Row& r) {
  auto shape = [&](benchmark::internal::Benchmark* b) {
    if (r.sweep) b->Arg(10)->Arg(100)->Arg(1000);
    if (r.fixed_arg > 0) b->Arg(r.fixed_arg);
    if (r.once) b->Iterations(1);
  };
  shape(
      benchmark::RegisterBenchmark((std::string("reactive/Context/") + r.name).c_str(), r.context));
  if (r.thread_safe != nullptr) {
    shape(benchmark::RegisterBenchmark(
        (std::string("reactive/ThreadSafeContext/") + r.name).c_str(), r.thread_safe));
  }
  if (r.baseline != nullptr) {
    shape(benchmark::RegisterBenchmark((std::string("baseline/") + r.name).c_str(), r.baseline));
  }
}

void register_all() {
  using trellis::Context;
  using trellis::ThreadSafeContext;
  const Row rows[] = {
      {.name = "chain",
       .context = chain<Context>,
       .thread_safe = chain<ThreadSafeContext>,
       .baseline = baseline_chain,
       .sweep = true},
      {.name = "fanout",
       .context = fanout<Context>,
       .thread_safe = fanout<ThreadSafeContext>,
       .baseline = baseline_fanout,
       .sweep = true},
      {.name = "diamond", .context = diamond<Context>, .baseline = baseline_diamond, .sweep = true},
      {.name = "memo", .context = memo<Context>, .baseline = baseline_memo, .fixed_arg = 100},
      {.name = "cached_read",
       .context = cached_read<Context>,
       .thread_safe = cached_read<ThreadSafeContext>,
       .baseline = baseline_cached_read},
      {.name = "create_dispose/cell",
       .context = create_dispose_cell<Context>,
       .baseline = baseline_create_dispose_cell},
      {.name = "create_dispose/computed",
       .context = create_dispose_computed<Context>,
       .baseline = baseline_create_dispose_computed},
      {.name = "create_dispose/effect",
       .context = create_dispose_effect<Context>,
       .baseline = baseline_create_dispose_effect},
      {.name = "bytes/cell",
       .context = bytes_cell<Context>,
       .baseline = baseline_bytes_cell,
       .once = true},
      {.name = "bytes/computed_lazy",
       .context = bytes_computed_lazy<Context>,
       .baseline = baseline_bytes_computed,
       .once = true},
      {.name = "bytes/computed_evaluated",
       .context = bytes_computed_evaluated<Context>,
       .once = true},
      {.name = "bytes/effect",
       .context = bytes_effect<Context>,
       .baseline = baseline_bytes_effect,
       .once = true},
  };
  for (const Row& r : rows) register_row(r);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
