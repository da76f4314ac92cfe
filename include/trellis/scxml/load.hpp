#pragma once
/// @file
/// `trellis::scxml::load`: a `Chart<D>` from an SCXML document (W3C SCXML 1.0), its conditions
/// and actions bound to C++ (`Bindings<D>`, trellis/scxml/bindings.hpp).
///
/// ```cpp
/// auto chart = trellis::scxml::load("player.scxml");          // a file
/// auto same = trellis::scxml::load(R"(<scxml initial="idle" ...>)");  // text
/// trellis::StateChart<> running(ctx, chart);
/// ```
///
/// What a document may hold (anything else is an `scxml_error`, trellis/scxml/errors.hpp, naming
/// the file, the element, its line and column):
/// - `<scxml>` (`initial`, `name`, `version` "1.0", `datamodel` "null" or none, `binding`;
///   `xmlns` the SCXML namespace or none), `<state>` (`id`, `initial`), `<parallel>`,
///   `<final>`, `<initial>` with its `<transition>`, `<history>` (`type` shallow or deep, and its
///   default `<transition>`), `<transition>` (`event`, `cond`, `target` (space-separated),
///   `type` internal or external), `<onentry>`, `<onexit>`;
/// - executable content: `<raise event>`, `<send event>` to the chart itself (no `target`, or
///   `#_internal`, which raises; any other target, `#_scxml_<session>` included, is refused)
///   with `delay` ("2s", "500ms", ".5s",
///   "1m", "1h", "1d"; whole milliseconds) and `id`, `<cancel sendid>`, `<log>` (a no-op: its
///   `label` is kept for diagrams and `save`, its `expr` ignored), and
///   `<trellis:call name="x"/>` with `xmlns:trellis="https://trellis.dev/scxml"`: the action
///   bound as "x";
/// - `cond`: a guard bound by name (`cond="ready"`), `In('id')`, `true`, `false`, combined with
///   `!`/`not`, `&&`/`and`, `||`/`or` and parentheses (at most 32 levels deep).
/// Attributes in other namespaces are ignored. The chart's name is `<scxml name>` (default
/// "scxml"); states without an id get one ("_state<n>"). Documents are read as UTF-8.
///
/// `LoadOptions::allow_unused_ecmascript` (off by default) also accepts `datamodel="ecmascript"`
/// for documents that do not use it: no `<datamodel>`, `<script>` or `<assign>` (refused in any
/// case), conditions only of `In(...)`, `true`, `false`, `!`, `&&`, `||` and parentheses (no
/// bound names: in such a document a name is ECMAScript), and `delayexpr` only as a quoted literal
/// (`delayexpr="'1s'"`). This is how the W3C conformance tests run.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "trellis/scxml/bindings.hpp"
#include "trellis/scxml/errors.hpp"
#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/detail/chart_spec.hpp"

namespace trellis::scxml {

struct LoadOptions {
  /// Accept `datamodel="ecmascript"` in documents that do not use it (see the file comment).
  bool allow_unused_ecmascript = false;
  /// The name errors give a text document (`"<text>"` when empty).
  std::string source_name;
  /// How the chart is checked: SCXML documents may have unreachable states and parallel states
  /// with one region; `max_depth` also caps the nesting the loader reads.
  ChartBuildOptions build{.allow_unreachable = true, .allow_single_region = true};
  /// Larger documents are refused ("scxml.invalid") before they are parsed.
  std::size_t max_bytes = std::size_t{64} << 20;
};

namespace detail {

enum class Source { guess, file, text };

/// The loader proper (src/scxml/loader.cpp).
std::shared_ptr<const ChartDefinition> load_definition(std::string_view path_or_text, Source source,
                                                       const ErasedBindings& bindings,
                                                       const LoadOptions& options);

}  // namespace detail

/// A chart from `path_or_text`: SCXML text when its first character after whitespace (and a
/// UTF-8 byte order mark) is `<`, otherwise the path of a file. `scxml_error` when it cannot be
/// read, is not well-formed, uses what trellis does not support or is not a sound chart.
template <class D = NoData>
Chart<D> load(std::string_view path_or_text, const Bindings<D>& bindings = {},
              const LoadOptions& options = {}) {
  return Chart<D>(
      detail::load_definition(path_or_text, detail::Source::guess, bindings.erased(), options));
}

/// A chart from the SCXML file at `path` (a file that cannot be read: "scxml.invalid").
template <class D = NoData>
Chart<D> load_file(std::string_view path, const Bindings<D>& bindings = {},
                   const LoadOptions& options = {}) {
  return Chart<D>(detail::load_definition(path, detail::Source::file, bindings.erased(), options));
}

/// A chart from SCXML text.
template <class D = NoData>
Chart<D> load_text(std::string_view text, const Bindings<D>& bindings = {},
                   const LoadOptions& options = {}) {
  return Chart<D>(detail::load_definition(text, detail::Source::text, bindings.erased(), options));
}

}  // namespace trellis::scxml
