// SPDX-License-Identifier: MIT
// Attachments (reactive/detail/lifetime.hpp): what a layer built on the graph keeps alongside a
// node (subscribe()'s signal hub) lives as long as the node, and reaches the node through
// detail::access (reactive/detail/access.hpp).
#include "test_support.hpp"

#include <trellis/reactive/detail/access.hpp>

#include <memory>

namespace {

namespace detail = trellis::detail;

/// Counts its detach() calls and tells when it is destroyed.
struct Probe final : detail::Attachment {
  int* detached;
  bool* destroyed;
  Probe(int* d, bool* gone) : detached(d), destroyed(gone) {}
  ~Probe() override { *destroyed = true; }
  void detach() noexcept override { ++*detached; }
};

constexpr char kKey = 0;
constexpr char kOtherKey = 0;

/// Attaches a Probe to the node behind `handle` under `key`.
template <class Ctx, class Handle>
void attach_probe(Ctx& ctx, const Handle& handle, const void* key, int* detached, bool* destroyed) {
  detail::Graph* g = graph_of(ctx);
  detail::GraphLock lock(g);
  g->attach(detail::access::node(handle), key, std::make_shared<Probe>(detached, destroyed));
}

template <class Ctx, class Handle>
detail::Attachment* find(Ctx& ctx, const Handle& handle, const void* key) {
  detail::Graph* g = graph_of(ctx);
  detail::GraphLock lock(g);
  return g->attachment(detail::access::node(handle), key);
}

}  // namespace

TEST_CASE_TEMPLATE("attachment: found on its node under its key only", Ctx, TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto b = ctx.cell(2);
  int detached = 0;
  bool destroyed = false;
  attach_probe(ctx, a, &kKey, &detached, &destroyed);
  CHECK(find(ctx, a, &kKey) != nullptr);
  CHECK(find(ctx, a, &kOtherKey) == nullptr);
  CHECK(find(ctx, b, &kKey) == nullptr);
}

TEST_CASE_TEMPLATE("attachment: detached and dropped when its node is disposed", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  auto doubled = ctx.computed([a] { return a.get() * 2; });
  int cell_detached = 0;
  bool cell_destroyed = false;
  int computed_detached = 0;
  bool computed_destroyed = false;
  attach_probe(ctx, a, &kKey, &cell_detached, &cell_destroyed);
  attach_probe(ctx, doubled, &kKey, &computed_detached, &computed_destroyed);

  a.dispose();
  CHECK(cell_detached == 1);
  CHECK(cell_destroyed);
  CHECK(computed_detached == 0);  // another node's attachment stays
  CHECK_FALSE(computed_destroyed);

  doubled.dispose();
  CHECK(computed_detached == 1);
  CHECK(computed_destroyed);
}

TEST_CASE_TEMPLATE("attachment: detached and dropped when the context ends", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  int detached = 0;
  bool destroyed = false;
  {
    Ctx ctx;
    auto a = ctx.cell(1);
    attach_probe(ctx, a, &kKey, &detached, &destroyed);
  }
  CHECK(detached == 1);
  CHECK(destroyed);
}

TEST_CASE_TEMPLATE("attachment: a second one under the same key replaces the first", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  int first_detached = 0;
  bool first_destroyed = false;
  int second_detached = 0;
  bool second_destroyed = false;
  attach_probe(ctx, a, &kKey, &first_detached, &first_destroyed);
  attach_probe(ctx, a, &kKey, &second_detached, &second_destroyed);
  CHECK(first_detached == 1);
  CHECK(first_destroyed);
  CHECK_FALSE(second_destroyed);
  a.dispose();
  CHECK(second_detached == 1);
  CHECK(second_destroyed);
}

TEST_CASE_TEMPLATE("attachment: attaching to a disposed node raises disposed_error", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  auto a = ctx.cell(1);
  a.dispose();
  int detached = 0;
  bool destroyed = false;
  CHECK_THROWS_AS(attach_probe(ctx, a, &kKey, &detached, &destroyed), trellis::disposed_error);
  CHECK(destroyed);  // not kept
  CHECK(detached == 0);
}
