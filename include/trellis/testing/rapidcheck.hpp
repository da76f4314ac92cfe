// SPDX-License-Identifier: MIT
#pragma once
/// @file
/// Property tests with RapidCheck inside doctest suites (target `trellis::rapidcheck`, which
/// links RapidCheck and doctest; Debian's `librapidcheck-dev` ships adapters for Google Test,
/// Catch and Boost.Test, not doctest). A property is a callable whose parameters RapidCheck
/// generates; its body states the property with `RC_ASSERT`, `RC_PRE` or `RC_FAIL` (not with
/// doctest's `CHECK`/`REQUIRE`, which would report every case RapidCheck tries while shrinking):
///
/// ```cpp
/// TEST_CASE("sort: sorting twice changes nothing") {
///   trellis::testing::check_property("sorting twice changes nothing", [](std::vector<int> xs) {
///     std::sort(xs.begin(), xs.end());
///     auto again = xs;
///     std::sort(again.begin(), again.end());
///     RC_ASSERT(again == xs);
///   });
/// }
/// // or, one property per test case:
/// TRELLIS_PROPERTY("sort: sorting twice changes nothing", (std::vector<int> xs)) { ... }
/// ```
///
/// `check_property` runs the property with RapidCheck's own configuration: `RC_PARAMS` is read
/// as usual (`seed`, `max_success`, `max_size`, `noshrink`, `verbose_progress`, `reproduce`,
/// ...), and RapidCheck prints the seed it uses when it starts. When the property fails, the
/// current doctest case fails (at the line that called `check_property`) with RapidCheck's
/// shrunk counterexample, the failing assertion or the exception's message, and the
/// `RC_PARAMS` that runs the same cases again (the seed and any case count that differs from
/// RapidCheck's default); RapidCheck also prints, when the program exits, a `reproduce=`
/// string that replays the failing case alone. When it holds, a passing check is recorded.
///
/// Machines: `gen_events<E>()` generates event sequences (enumerations by their listed values,
/// `std::variant` events by `one_of_variant`), and `check_against_model` sends a sequence to a
/// machine and to a hand-written model, failing at the first event after which they disagree
/// (see tests/machine/property_test.cpp).
///
/// Counterexamples show values with RapidCheck's `rc::show`: a type needs an `operator<<` or a
/// `showValue(const T&, std::ostream&)` that argument-dependent lookup finds, else it prints
/// as `<???>`. For enumerations and `std::variant` events, `show_value` does the work; declare
/// the hook in the namespace of the enumeration (of the variant's alternatives for a variant),
/// as a template that takes exactly that type (a plain `showValue(const Event&, ...)` would
/// also take a `Coin`, by conversion, and showing the `Coin` would recurse without end):
///
/// ```cpp
/// namespace vending {  // Event = std::variant<Coin, Select, Cancel>; Coin etc. have operator<<
/// template <std::same_as<Event> T>
/// void showValue(const T& e, std::ostream& os) { trellis::testing::show_value(e, os); }
/// }
/// ```

#include <doctest/doctest.h>
#include <rapidcheck.h>

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "trellis/base/enumeration.hpp"

namespace trellis::testing {

/// What a property run may change from RapidCheck's configuration.
struct PropertyOptions {
  /// Cases to run when `RC_PARAMS` does not set `max_success` (which then wins); when empty,
  /// RapidCheck's configured count (100 unless `RC_PARAMS` says otherwise). At least 1.
  std::optional<int> max_success;
  /// True: RapidCheck's own listener is not told about this run (no `verbose_progress`
  /// output, no `reproduce=` string printed at exit), for properties a test expects to fail,
  /// such as the adapter's own tests. The result and the message are the same.
  bool quiet = false;
};

namespace detail {

// True when RC_PARAMS names max_success itself (it then overrides PropertyOptions). RapidCheck
// reads only this variable, and has already rejected (and exited on) a malformed one.
inline bool rc_params_set_max_success() {
  const char* text = std::getenv("RC_PARAMS");
  if (text == nullptr) return false;
  rc::detail::Configuration unset;
  unset.testParams.maxSuccess = -1;
  try {
    return rc::detail::configFromString(text, unset).testParams.maxSuccess >= 0;
  } catch (const rc::detail::ConfigurationException&) {
    return false;
  }
}

inline rc::detail::TestParams property_params(const PropertyOptions& options) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  if (options.max_success && !rc_params_set_max_success()) {
    params.maxSuccess = *options.max_success < 1 ? 1 : *options.max_success;
  }
  return params;
}

// The RC_PARAMS that runs the same cases again: RapidCheck's configuration with the
// parameters this run used (seed always; other keys where they differ from the defaults).
inline std::string rerun_params(const rc::detail::TestParams& params) {
  rc::detail::Configuration config = rc::detail::configuration();
  config.testParams = params;
  config.reproduce.clear();
  return "RC_PARAMS=\"" + rc::detail::configToMinimalString(config) + "\"";
}

// The listener of a quiet run: hears nothing.
class SilentListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

struct PropertyOutcome {
  std::optional<std::string> failure;  // the whole message; empty when the property held
  std::string distribution;            // RC_TAG/RC_CLASSIFY counts of a passing run, if any
};

template <class Testable>
PropertyOutcome run_property(std::string_view description, Testable&& testable,
                             const PropertyOptions& options) {
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(description);  // the key of RC_PARAMS="reproduce=..."
  metadata.description = std::string(description);
  const rc::detail::TestParams params = property_params(options);
  SilentListener silent;
  const rc::detail::TestResult result =
      options.quiet ? rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params,
                                                silent, rc::detail::configuration().reproduce)
                    : rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);

  PropertyOutcome outcome;
  std::ostringstream text;
  if (result.template is<rc::detail::SuccessResult>()) {
    if (!result.template get<rc::detail::SuccessResult>().distribution.empty()) {
      rc::detail::printResultMessage(result, text);
      outcome.distribution = text.str();
    }
    return outcome;
  }
  text << "property \"" << description << "\" failed: ";
  rc::detail::printResultMessage(result, text);
  text << "\nrun the same cases again with " << rerun_params(params);
  outcome.failure = text.str();
  return outcome;
}

// Fails the current property case with `message` alone (RC_FAIL would add its own source text).
[[noreturn]] inline void fail_case(std::string message) {
  throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure, std::move(message));
}

template <class T>
inline constexpr bool is_variant_v = false;
template <class... Ts>
inline constexpr bool is_variant_v<std::variant<Ts...>> = true;

// An index in [0, count), uniform whatever RapidCheck's size (inRange alone picks only 0 at
// size 0, the first case of every run), shrinking toward 0.
inline rc::Gen<std::size_t> uniform_index(std::size_t count) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<std::size_t>(0, count));
}

template <class V, class T>
inline constexpr bool is_alternative_v = false;
template <class... Ts, class T>
inline constexpr bool is_alternative_v<std::variant<Ts...>, T> = (std::is_same_v<Ts, T> || ...);

}  // namespace detail

/// Runs `testable` as a RapidCheck property (configuration as the file comment says) and
/// returns the failure message (counterexample, failing assertion or exception, and the
/// `RC_PARAMS` to rerun it), or nothing when the property held. It reports to nobody:
/// `check_property` turns the result into a doctest check. `description` is also the
/// property's id for RapidCheck's `reproduce=` strings, so keep descriptions unique.
template <class Testable>
std::optional<std::string> property_failure(std::string_view description, Testable&& testable,
                                            const PropertyOptions& options = {}) {
  return detail::run_property(description, std::forward<Testable>(testable), options).failure;
}

/// Where `check_property` was called (its default argument): the compilers' builtins rather
/// than std::source_location, which clang before 15 cannot build with libstdc++.
struct PropertyCaller {
  const char* file = __builtin_FILE();
  int line = __builtin_LINE();
};

/// Runs `testable` as a RapidCheck property inside the current doctest case: a failure fails
/// the case (a CHECK-level failure at `where`: the case goes on) with `property_failure`'s
/// message; success records a passing check (and RapidCheck's tag distribution as a
/// message when the property classified its cases). Returns true when the property held.
template <class Testable>
bool check_property(std::string_view description, Testable&& testable,
                    const PropertyOptions& options = {}, PropertyCaller where = {}) {
  const detail::PropertyOutcome outcome =
      detail::run_property(description, std::forward<Testable>(testable), options);
  const char* file = where.file;
  const int line = where.line;
  if (outcome.failure) {
    DOCTEST_ADD_FAIL_CHECK_AT(file, line, doctest::String(outcome.failure->c_str()));
    return false;
  }
  if (!outcome.distribution.empty()) {
    DOCTEST_ADD_MESSAGE_AT(file, line, doctest::String(outcome.distribution.c_str()));
  }
  const std::string expression = "property holds: " + std::string(description);
  doctest::detail::ResultBuilder passed(doctest::assertType::DT_CHECK, file, line,
                                        expression.c_str());
  passed.unary_assert(true);
  passed.log();
  passed.react();
  return true;
}

/// Shows `value` in a counterexample: a listed enumeration value by its name, a
/// `std::variant` by its active alternative (itself shown this way), anything else with
/// `rc::show`. Call it from a `showValue` hook (see the file comment).
template <class T>
void show_value(const T& value, std::ostream& os) {
  if constexpr (detail::is_variant_v<T>) {
    std::visit([&os](const auto& alternative) { show_value(alternative, os); }, value);
  } else if constexpr (Enumerated<T>) {
    os << trellis::detail::describe_value(value);
  } else {
    rc::show(value, os);
  }
}

/// One of `T`'s listed values (declared with `TRELLIS_ENUM` or a `trellis_enumerate` hook),
/// picked uniformly whatever RapidCheck's size, shrinking toward the first one listed.
template <Enumerated T>
rc::Gen<T> enumerated() {
  static_assert(enumeration<T>::size > 0, "trellis::testing::enumerated: the enumeration is empty");
  return rc::gen::map(detail::uniform_index(enumeration<T>::size),
                      [](std::size_t i) { return enumeration<T>::values[i]; });
}

/// A `std::variant` `V` built from one of `gens`, each a generator of one of `V`'s
/// alternatives (alternatives without a generator are never generated). The generator is
/// picked uniformly whatever RapidCheck's size (which still scales each alternative's own
/// generator); a failing case shrinks toward the generators listed first, then within
/// the value, so list the simplest alternatives first.
template <class V, class... T>
rc::Gen<V> one_of_variant(rc::Gen<T>... gens) {
  static_assert(detail::is_variant_v<V>,
                "trellis::testing::one_of_variant<V>: V is a std::variant");
  static_assert(sizeof...(T) > 0,
                "trellis::testing::one_of_variant<V>: give at least one generator");
  static_assert((detail::is_alternative_v<V, T> && ...),
                "trellis::testing::one_of_variant<V>: each generator must produce one of V's "
                "alternatives");
  std::vector<rc::Gen<V>> each{
      rc::gen::map(std::move(gens), [](T alternative) { return V(std::move(alternative)); })...};
  const std::size_t count = each.size();
  return rc::gen::mapcat(detail::uniform_index(count),
                         [each = std::move(each)](std::size_t i) { return each[i]; });
}

/// The generator `gen_events<E>()` uses for one event: `enumerated<E>()` for an enumeration
/// trellis can list; for a `std::variant`, `one_of_variant` over every alternative (an empty
/// alternative such as `Cancel{}` is generated as itself, any other with `rc::gen::arbitrary`,
/// so it needs an `rc::Arbitrary` specialization); otherwise `rc::gen::arbitrary<E>()`.
template <class E>
rc::Gen<E> arbitrary_event();

namespace detail {

template <class T>
rc::Gen<T> arbitrary_alternative() {
  if constexpr (std::is_empty_v<T> && std::is_default_constructible_v<T>) {
    return rc::gen::just(T{});
  } else {
    return arbitrary_event<T>();
  }
}

template <class... Ts>
rc::Gen<std::variant<Ts...>> arbitrary_variant(std::variant<Ts...>*) {
  return one_of_variant<std::variant<Ts...>>(arbitrary_alternative<Ts>()...);
}

}  // namespace detail

template <class E>
rc::Gen<E> arbitrary_event() {
  if constexpr (detail::is_variant_v<E>) {
    return detail::arbitrary_variant(static_cast<E*>(nullptr));
  } else if constexpr (Enumerated<E>) {
    return enumerated<E>();
  } else {
    return rc::gen::arbitrary<E>();
  }
}

/// Event sequences: each event from `event`, the length growing with RapidCheck's size (from
/// none to about a hundred events). A failing sequence shrinks by dropping events and then by
/// shrinking each event, toward the shortest sequence that still fails.
template <class E>
rc::Gen<std::vector<E>> gen_events(rc::Gen<E> event) {
  return rc::gen::container<std::vector<E>>(std::move(event));
}

/// Event sequences with each event from `arbitrary_event<E>()`.
template <class E>
rc::Gen<std::vector<E>> gen_events() {
  return gen_events<E>(arbitrary_event<E>());
}

/// Sends `events` to `machine` in order and, after each, compares it with `model`, a
/// hand-written model of the same machine: `model(event)` (called once per event, in order, so
/// it may keep its own state) returns either
///  - the state the machine must be in after the event, or
///  - a `std::optional` of it, where `std::nullopt` means "rejected": the machine's `send`
///    must return a false `SendResult` and the machine keep its state, and a value means the
///    machine must accept the event and be in that state.
/// Fails the property case (as `RC_FAIL` does) at the first disagreement, naming the event's
/// position, the event and both states (shown as `show_value` shows them). `Machine` is any machine
/// with `send(e)` (a result that converts to bool: accepted) and `state()`.
template <class Machine, class E, class Model>
void check_against_model(Machine& machine, const std::vector<E>& events, Model&& model) {
  const auto shown = [](const auto& value) {
    std::ostringstream os;
    show_value(value, os);
    return os.str();
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto before = machine.state();
    const bool accepted = static_cast<bool>(machine.send(events[i]));
    const auto after = machine.state();
    const auto expected = std::invoke(model, events[i]);
    const std::string where = "after event " + std::to_string(i + 1) + " of " +
                              std::to_string(events.size()) + " (" + shown(events[i]) + "), ";
    using Expected = std::remove_cvref_t<decltype(expected)>;
    if constexpr (std::is_same_v<Expected, std::optional<std::remove_cvref_t<decltype(after)>>>) {
      if (!expected) {
        if (accepted || !(after == before)) {
          detail::fail_case(where + "the model rejects it but the machine " +
                            (accepted ? "accepted it" : "rejected it") + " and is in " +
                            shown(after) + " (was " + shown(before) + ")");
        }
        continue;
      }
      if (!accepted) {
        detail::fail_case(where + "the model accepts it (to " + shown(*expected) +
                          ") but the machine rejected it and stays in " + shown(after));
      }
      if (!(after == *expected)) {
        detail::fail_case(where + "the machine is in " + shown(after) + " but the model expects " +
                          shown(*expected));
      }
    } else {
      if (!(after == expected)) {
        detail::fail_case(where + "the machine is in " + shown(after) + " but the model expects " +
                          shown(expected));
      }
    }
  }
}

}  // namespace trellis::testing

// One doctest case that checks one property: `TRELLIS_PROPERTY("subject: behaviour",
// (std::vector<int> xs)) { RC_ASSERT(...); }` (the parenthesised parameters are generated,
// the body follows as a function body; the description names both the case and the property).
#define TRELLIS_PROPERTY(description, parameters) \
  TRELLIS_DETAIL_PROPERTY(DOCTEST_ANONYMOUS(trellis_property_), description, parameters)

#define TRELLIS_DETAIL_PROPERTY(function, description, parameters)                               \
  static void function parameters;                                                               \
  DOCTEST_TEST_CASE(description) { ::trellis::testing::check_property(description, &function); } \
  static void function parameters
