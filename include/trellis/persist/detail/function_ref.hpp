#pragma once
/// @file
/// `FunctionRef<R(A...)>`: a non-owning reference to a callable, two pointers wide, for
/// passing the typed steps of a durable send (encode this state, publish this transition) to
/// the compiled writers without a std::function's allocation. The callable must outlive the
/// call it is passed to; a FunctionRef is never stored.

#include <memory>
#include <type_traits>
#include <utility>

namespace trellis::detail {

template <class Signature>
class FunctionRef;

template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, A...>)
      // NOLINTNEXTLINE(google-explicit-constructor): a lambda converts where a FunctionRef is taken
      FunctionRef(F&& f)
  noexcept
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, A... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<A>(args)...);
        }) {}

  R operator()(A... args) const { return call_(object_, std::forward<A>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, A...);
};

}  // namespace trellis::detail
