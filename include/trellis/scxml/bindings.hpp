#pragma once
/// @file
/// `Bindings<D>`: the C++ guards and actions an SCXML document names. A transition's
/// `cond="ready"` calls the guard bound as "ready"; `<trellis:call name="beep"/>` (executable
/// content in the namespace `trellis::scxml::trellis_namespace`) calls the action bound as
/// "beep".
///
/// ```cpp
/// trellis::scxml::Bindings<Player> b;
/// b.guard("has_media", [](const Player& p) { return !p.playlist.empty(); })
///  .action("rewind", [](Player& p) { p.position = 0; });
/// auto chart = trellis::scxml::load("player.scxml", b);
/// ```
///
/// Guards and actions take the signatures of `ChartBuilder`'s `when()` and `call()`
/// (trellis/statechart/builder.hpp). A guard's name is what a `cond` may name: a letter or `_`,
/// then letters, digits, `_` or `.`, and none of the words the conditions reserve (`In`, `true`,
/// `false`, `and`, `or`, `not`). A name bound twice, or a guard name a `cond` could not name, is
/// refused with `trellis::invalid_option`. Bindings a document does not name are ignored, so one
/// set may serve several documents.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "trellis/statechart/builder.hpp"

namespace trellis::scxml {

/// The namespace of trellis's own SCXML elements (`<trellis:call name="..."/>`).
inline constexpr std::string_view trellis_namespace = "https://trellis.dev/scxml";

namespace detail {

/// Bindings with their data type erased: what the loader uses.
struct ErasedBindings {
  using Guard = std::function<bool(const void*, const ChartEvent&, const ChartQuery&)>;
  using Action = std::function<void(void*, const ChartEvent&, ChartActions&)>;
  const std::type_info* data_type = nullptr;
  std::map<std::string, Guard, std::less<>> guards;
  std::map<std::string, Action, std::less<>> actions;
};

/// Whether `name` is one a `cond` can name (see the file comment).
bool is_binding_name(std::string_view name) noexcept;

/// invalid_option unless `name` may be bound as a guard (kind "guard") or an action ("action")
/// and is not bound yet.
void check_binding(const ErasedBindings& b, std::string_view kind, std::string_view name);

}  // namespace detail

template <class D = NoData>
class Bindings {
 public:
  using data_type = D;

  /// Binds `name` (a `cond`) to a guard: `bool(const D&, const ChartEvent&, const ChartQuery&)`,
  /// `bool(const D&, const ChartEvent&)`, `bool(const D&)` or `bool()`.
  template <class G>
  Bindings& guard(std::string name, G g) {
    detail::check_binding(b_, "guard", name);
    b_.guards.emplace(std::move(name), trellis::detail::erase_guard<D>(std::move(g)));
    return *this;
  }

  /// Binds `name` (a `<trellis:call name>`) to an action: `void(D&, const ChartEvent&,
  /// ChartActions&)`, `void(D&, const ChartEvent&)`, `void(D&, ChartActions&)`, `void(D&)`,
  /// `void(ChartActions&)` or `void()`.
  template <class A>
  Bindings& action(std::string name, A a) {
    detail::check_binding(b_, "action", name);
    b_.actions.emplace(std::move(name), trellis::detail::erase_action<D>(std::move(a)));
    return *this;
  }

  /// The bindings with their data type erased (what the loader reads).
  const detail::ErasedBindings& erased() const noexcept { return b_; }

 private:
  detail::ErasedBindings b_{&typeid(D), {}, {}};
};

}  // namespace trellis::scxml
