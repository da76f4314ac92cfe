#pragma once
/// @file
/// `ChartBuilder<D>`: builds a statechart in code, nested like the chart it describes.
///
/// ```cpp
/// auto chart = ChartBuilder<Player>("player")
///     .state("stopped", [](auto& s) { s.on("play").to("playing"); })
///     .state("playing", [](auto& s) {
///       s.on("stop").to("stopped");
///       s.parallel("running", [](auto& p) {
///         p.state("video", [](auto& r) { r.state("buffering"); r.state("streaming"); });
///         p.state("audio", [](auto& r) { r.state("muted"); r.state("loud"); });
///       });
///       s.history("resume", History::deep, "running");
///     })
///     .build();
/// ```
///
/// - `state(id)`, `parallel(id)`, `final(id)` add a child and return its builder;
///   `state(id, f)` (and the others) call `f(child)` and return this builder, so siblings
///   chain. A `state` with children is compound; its `initial(targets)` defaults to the first
///   child (SCXML's rule) and may name deeper descendants or several regions' states.
/// - `history(id, History::shallow|deep, default targets)` adds a history pseudo-state.
/// - `on("a b.c")` adds a transition for SCXML event descriptors (prefix matching, `*`),
///   `always()` an eventless one; then `.when(name, guard)`, `.when_in(id)`,
///   `.to(targets...)`, `.internal()`, and content: `.call(name, action)`, `.raise(event)`,
///   `.send(event, delay, id)`, `.cancel(id)`, `.log(label)`.
/// - `on_entry(name, action)` / `on_exit(name, action)` add an entry or exit block with one
///   action; `on_entry()` returns a block builder for several items.
///
/// Guards are callables `bool(const D&, const ChartEvent&, const ChartQuery&)`,
/// `bool(const D&, const ChartEvent&)`, `bool(const D&)` or `bool()`;
/// actions `void(D&, const ChartEvent&, ChartActions&)`, `void(D&, const ChartEvent&)`,
/// `void(D&, ChartActions&)`, `void(D&)`, `void(ChartActions&)` or `void()`. Any other
/// signature is a compile error. `build()` checks the whole chart and throws `chart_error`
/// listing every problem (unknown target, initial not a descendant, history outside a
/// compound or parallel state, unreachable state, a parallel state with fewer than two
/// regions, duplicate id, a cycle of default entries, ...); `problems()` lists them without
/// throwing.

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/detail/chart_spec.hpp"

namespace trellis {

enum class History { shallow, deep };

namespace detail {

template <class>
inline constexpr bool chart_always_false = false;

/// Whether `G` is one of the guard signatures the file comment lists.
template <class D, class G>
inline constexpr bool is_chart_guard =
    std::is_invocable_r_v<bool, G&, const D&, const ChartEvent&, const ChartQuery&> ||
    std::is_invocable_r_v<bool, G&, const D&, const ChartEvent&> ||
    std::is_invocable_r_v<bool, G&, const D&> || std::is_invocable_r_v<bool, G&>;

/// Whether `A` is one of the action signatures the file comment lists.
template <class D, class A>
inline constexpr bool is_chart_action =
    std::is_invocable_v<A&, D&, const ChartEvent&, ChartActions&> ||
    std::is_invocable_v<A&, D&, const ChartEvent&> || std::is_invocable_v<A&, D&, ChartActions&> ||
    std::is_invocable_v<A&, D&> || std::is_invocable_v<A&, ChartActions&> ||
    std::is_invocable_v<A&>;

template <class D, class G>
auto erase_guard(G g) {
  if constexpr (std::is_invocable_r_v<bool, G&, const D&, const ChartEvent&, const ChartQuery&>) {
    return [g = std::move(g)](const void* d, const ChartEvent& e, const ChartQuery& q) mutable {
      return static_cast<bool>(g(*static_cast<const D*>(d), e, q));
    };
  } else if constexpr (std::is_invocable_r_v<bool, G&, const D&, const ChartEvent&>) {
    return [g = std::move(g)](const void* d, const ChartEvent& e, const ChartQuery&) mutable {
      return static_cast<bool>(g(*static_cast<const D*>(d), e));
    };
  } else if constexpr (std::is_invocable_r_v<bool, G&, const D&>) {
    return [g = std::move(g)](const void* d, const ChartEvent&, const ChartQuery&) mutable {
      return static_cast<bool>(g(*static_cast<const D*>(d)));
    };
  } else if constexpr (std::is_invocable_r_v<bool, G&>) {
    return [g = std::move(g)](const void*, const ChartEvent&, const ChartQuery&) mutable {
      return static_cast<bool>(g());
    };
  } else {
    static_assert(chart_always_false<G>,
                  "trellis: a chart guard must be callable as bool(const D&, const ChartEvent&, "
                  "const ChartQuery&), bool(const D&, const ChartEvent&), "
                  "bool(const D&) or bool(), where D is the chart's data type");
    return 0;
  }
}

template <class D, class A>
auto erase_action(A a) {
  if constexpr (std::is_invocable_v<A&, D&, const ChartEvent&, ChartActions&>) {
    return [a = std::move(a)](void* d, const ChartEvent& e, ChartActions& ops) mutable {
      a(*static_cast<D*>(d), e, ops);
    };
  } else if constexpr (std::is_invocable_v<A&, D&, const ChartEvent&>) {
    return [a = std::move(a)](void* d, const ChartEvent& e, ChartActions&) mutable {
      a(*static_cast<D*>(d), e);
    };
  } else if constexpr (std::is_invocable_v<A&, D&, ChartActions&>) {
    return [a = std::move(a)](void* d, const ChartEvent&, ChartActions& ops) mutable {
      a(*static_cast<D*>(d), ops);
    };
  } else if constexpr (std::is_invocable_v<A&, D&>) {
    return [a = std::move(a)](void* d, const ChartEvent&, ChartActions&) mutable {
      a(*static_cast<D*>(d));
    };
  } else if constexpr (std::is_invocable_v<A&, ChartActions&>) {
    return [a = std::move(a)](void*, const ChartEvent&, ChartActions& ops) mutable { a(ops); };
  } else if constexpr (std::is_invocable_v<A&>) {
    return [a = std::move(a)](void*, const ChartEvent&, ChartActions&) mutable { a(); };
  } else {
    static_assert(chart_always_false<A>,
                  "trellis: a chart action must be callable as void(D&, const ChartEvent&, "
                  "ChartActions&), void(D&, const ChartEvent&), void(D&, ChartActions&), "
                  "void(D&), void(ChartActions&) or void(), where D is the chart's data type");
    return 0;
  }
}

/// The content items every block builder offers (CRTP: each returns the derived builder).
template <class D, class Self>
class ContentBuilder {
 public:
  /// Runs the named action.
  template <class A>
  Self& call(std::string name, A action) {
    if constexpr (!is_chart_action<D, A>) {
      (void)erase_action<D>(std::move(action));  // its static_assert says what is accepted
      return self();
    } else {
      return add_call(std::move(name), std::move(action));
    }
  }
  /// Raises an internal event (SCXML `<raise>`).
  Self& raise(std::string event) {
    ChartOp op;
    op.kind = ChartOp::Kind::raise;
    op.name = std::move(event);
    block().push_back(std::move(op));
    return self();
  }
  /// Sends an event to the chart itself after `delay`; `id` names it for `cancel`.
  Self& send(std::string event, std::chrono::milliseconds delay = std::chrono::milliseconds{0},
             std::string id = {}) {
    ChartOp op;
    op.kind = ChartOp::Kind::send;
    op.name = std::move(event);
    op.delay = delay;
    op.send_id = std::move(id);
    block().push_back(std::move(op));
    return self();
  }
  /// Cancels the pending delayed sends named `id`.
  Self& cancel(std::string id) {
    ChartOp op;
    op.kind = ChartOp::Kind::cancel;
    op.name = std::move(id);
    block().push_back(std::move(op));
    return self();
  }
  /// A no-op marker (SCXML `<log>`), kept for diagrams and the SCXML writer.
  Self& log(std::string label) {
    ChartOp op;
    op.kind = ChartOp::Kind::log;
    op.name = std::move(label);
    block().push_back(std::move(op));
    return self();
  }

 protected:
  ContentBuilder() = default;
  ~ContentBuilder() = default;
  ContentBuilder(const ContentBuilder&) = default;
  ContentBuilder& operator=(const ContentBuilder&) = default;

 private:
  template <class A>
  Self& add_call(std::string name, A action) {
    ChartOp op;
    op.kind = ChartOp::Kind::call;
    op.name = name;
    op.action = static_cast<int>(registry().actions.size());
    registry().actions.push_back(ChartAction{std::move(name), erase_action<D>(std::move(action))});
    registry().data_type = &typeid(D);
    block().push_back(std::move(op));
    return self();
  }
  Self& self() { return static_cast<Self&>(*this); }
  ChartBlock& block() { return self().content_block(); }
  ChartRegistry& registry() { return self().content_registry(); }
};

}  // namespace detail

template <class D>
class StateBuilder;

/// One transition under construction (see the file comment).
template <class D>
class TransitionBuilder : public detail::ContentBuilder<D, TransitionBuilder<D>> {
 public:
  TransitionBuilder(detail::TransitionSpec* spec, detail::ChartRegistry* registry)
      : spec_(spec), registry_(registry) {}

  /// The transition's targets (several: one per parallel region; none: targetless).
  template <class... Ids>
  TransitionBuilder& to(Ids&&... ids) {
    (spec_->targets.emplace_back(std::forward<Ids>(ids)), ...);
    return *this;
  }
  TransitionBuilder& to(std::initializer_list<std::string> ids) {
    spec_->targets.insert(spec_->targets.end(), ids.begin(), ids.end());
    return *this;
  }
  /// SCXML `type="internal"`: a compound source whose targets are all its descendants is not
  /// exited and re-entered.
  TransitionBuilder& internal() {
    spec_->internal = true;
    return *this;
  }
  /// A named guard; several `when`s on one transition must all hold (checked in order).
  template <class G>
  TransitionBuilder& when(std::string name, G guard) {
    if constexpr (!detail::is_chart_guard<D, G>) {
      (void)detail::erase_guard<D>(std::move(guard));  // its static_assert says what is accepted
    } else {
      ChartGuard g;  // named members: -Wmissing-field-initializers in users' builds
      g.name = std::move(name);
      g.fn = detail::erase_guard<D>(std::move(guard));
      set_guard(std::move(g));
      registry_->data_type = &typeid(D);
    }
    return *this;
  }
  /// The guard SCXML writes `In('id')`: the state `id` is active.
  TransitionBuilder& when_in(std::string id) {
    ChartGuard g;
    g.name = "In('" + id + "')";
    g.in_id = std::move(id);
    set_guard(std::move(g));
    return *this;
  }

 private:
  friend class detail::ContentBuilder<D, TransitionBuilder<D>>;
  ChartBlock& content_block() { return spec_->content; }
  detail::ChartRegistry& content_registry() { return *registry_; }
  void set_guard(ChartGuard g) {
    if (spec_->guard >= 0) g = both(registry_->guards[static_cast<std::size_t>(spec_->guard)], g);
    spec_->guard = static_cast<int>(registry_->guards.size());
    registry_->guards.push_back(std::move(g));
  }

  // `a` and then `b`, named "a and b".
  static ChartGuard both(const ChartGuard& a, const ChartGuard& b) {
    auto as_fn = [](const ChartGuard& g) {
      return g.fn ? g.fn : [id = g.in_id](const void*, const ChartEvent&, const ChartQuery& q) {
        return q.in(id);
      };
    };
    ChartGuard out;
    out.name = a.name + " and " + b.name;
    out.fn = [fa = as_fn(a), fb = as_fn(b)](const void* d, const ChartEvent& e,
                                            const ChartQuery& q) mutable {
      return fa(d, e, q) && fb(d, e, q);
    };
    return out;
  }

  detail::TransitionSpec* spec_;
  detail::ChartRegistry* registry_;
};

/// An entry or exit block under construction.
template <class D>
class BlockBuilder : public detail::ContentBuilder<D, BlockBuilder<D>> {
 public:
  BlockBuilder(std::vector<ChartBlock>* blocks, std::size_t index, detail::ChartRegistry* registry)
      : blocks_(blocks), index_(index), registry_(registry) {}

 private:
  friend class detail::ContentBuilder<D, BlockBuilder<D>>;
  ChartBlock& content_block() { return (*blocks_)[index_]; }
  detail::ChartRegistry& content_registry() { return *registry_; }

  std::vector<ChartBlock>* blocks_;
  std::size_t index_;
  detail::ChartRegistry* registry_;
};

/// A state under construction (see the file comment).
template <class D>
class StateBuilder {
 public:
  StateBuilder(detail::StateSpec* spec, detail::ChartRegistry* registry)
      : spec_(spec), registry_(registry) {}
  StateBuilder(const StateBuilder&) = delete;
  StateBuilder& operator=(const StateBuilder&) = delete;

  const std::string& id() const noexcept { return spec_->id; }

  StateBuilder& state(std::string id) { return add(std::move(id), detail::StateSpec::Kind::state); }
  StateBuilder& parallel(std::string id) {
    return add(std::move(id), detail::StateSpec::Kind::parallel);
  }
  StateBuilder& final(std::string id) {
    return add(std::move(id), detail::StateSpec::Kind::final_state);
  }
  template <class F>
  StateBuilder& state(std::string id, F f) {
    f(state(std::move(id)));
    return *this;
  }
  template <class F>
  StateBuilder& parallel(std::string id, F f) {
    f(parallel(std::move(id)));
    return *this;
  }
  template <class F>
  StateBuilder& final(std::string id, F f) {
    f(final(std::move(id)));
    return *this;
  }

  /// A history pseudo-state remembering this state's children (shallow) or its atomic
  /// descendants (deep); entered before anything was recorded, it goes to `default targets`
  /// (the returned builder adds content to that default transition).
  template <class... Ids>
  TransitionBuilder<D> history(std::string id, History kind, Ids&&... default_targets) {
    StateBuilder& h =
        add(std::move(id), kind == History::deep ? detail::StateSpec::Kind::deep_history
                                                 : detail::StateSpec::Kind::shallow_history);
    return h.initial(std::forward<Ids>(default_targets)...);
  }

  /// The initial transition of a compound state (default: its first child).
  template <class... Ids>
  TransitionBuilder<D> initial(Ids&&... ids) {
    spec_->initial.emplace();
    (spec_->initial->targets.emplace_back(std::forward<Ids>(ids)), ...);
    return TransitionBuilder<D>(&*spec_->initial, registry_);
  }

  /// A transition on the event descriptors `event` ("a", "error", "a.b c", "*").
  TransitionBuilder<D> on(std::string event) {
    spec_->transitions.emplace_back();
    spec_->transitions.back().event = std::move(event);
    return TransitionBuilder<D>(&spec_->transitions.back(), registry_);
  }
  /// An eventless transition, taken as soon as its guard holds.
  TransitionBuilder<D> always() {
    spec_->transitions.emplace_back();
    return TransitionBuilder<D>(&spec_->transitions.back(), registry_);
  }

  /// A new entry block.
  BlockBuilder<D> on_entry() {
    spec_->on_entry.emplace_back();
    return BlockBuilder<D>(&spec_->on_entry, spec_->on_entry.size() - 1, registry_);
  }
  /// A new exit block.
  BlockBuilder<D> on_exit() {
    spec_->on_exit.emplace_back();
    return BlockBuilder<D>(&spec_->on_exit, spec_->on_exit.size() - 1, registry_);
  }
  /// An entry block with the one named action.
  template <class A>
  StateBuilder& on_entry(std::string name, A action) {
    on_entry().call(std::move(name), std::move(action));
    return *this;
  }
  /// An exit block with the one named action.
  template <class A>
  StateBuilder& on_exit(std::string name, A action) {
    on_exit().call(std::move(name), std::move(action));
    return *this;
  }

 private:
  StateBuilder& add(std::string id, detail::StateSpec::Kind kind) {
    auto spec = std::make_unique<detail::StateSpec>();
    spec->id = std::move(id);
    spec->kind = kind;
    spec_->children.push_back(std::move(spec));
    children_.push_back(std::make_unique<StateBuilder>(spec_->children.back().get(), registry_));
    return *children_.back();
  }

  detail::StateSpec* spec_;
  detail::ChartRegistry* registry_;
  std::vector<std::unique_ptr<StateBuilder>> children_;
};

/// Builds a `Chart<D>` (see the file comment).
template <class D = NoData>
class ChartBuilder {
 public:
  explicit ChartBuilder(std::string name = "chart")
      : root_spec_(std::make_unique<detail::StateSpec>()),
        registry_(std::make_unique<detail::ChartRegistry>()) {
    root_spec_->id = std::move(name);
    root_ = std::make_unique<StateBuilder<D>>(root_spec_.get(), registry_.get());
  }

  /// The chart's top level (the root is a compound state whose id is the chart's name).
  StateBuilder<D>& root() { return *root_; }

  /// A top-level state (its builder); with `f`, calls `f(state)` and returns this builder.
  StateBuilder<D>& state(std::string id) { return root_->state(std::move(id)); }
  StateBuilder<D>& parallel(std::string id) { return root_->parallel(std::move(id)); }
  StateBuilder<D>& final(std::string id) { return root_->final(std::move(id)); }
  template <class F>
  ChartBuilder& state(std::string id, F f) {
    root_->state(std::move(id), std::move(f));
    return *this;
  }
  template <class F>
  ChartBuilder& parallel(std::string id, F f) {
    root_->parallel(std::move(id), std::move(f));
    return *this;
  }
  template <class F>
  ChartBuilder& final(std::string id, F f) {
    root_->final(std::move(id), std::move(f));
    return *this;
  }
  template <class... Ids>
  ChartBuilder& initial(Ids&&... ids) {
    root_->initial(std::forward<Ids>(ids)...);
    return *this;
  }

  /// Every problem `build()` would report, one sentence each (empty: the chart is sound).
  std::vector<std::string> problems(const ChartBuildOptions& options = {}) const {
    return detail::chart_problems(*root_spec_, *registry_, options);
  }

  /// The chart; chart_error listing every problem when it is not sound. The builder may be
  /// used again afterwards (each build copies what it needs).
  Chart<D> build(const ChartBuildOptions& options = {}) const {
    return Chart<D>(detail::compile_chart(*root_spec_, *registry_, options));
  }

 private:
  std::unique_ptr<detail::StateSpec> root_spec_;
  std::unique_ptr<detail::ChartRegistry> registry_;
  std::unique_ptr<StateBuilder<D>> root_;
};

}  // namespace trellis
