#pragma once
/// @file
/// `trellis::scxml::save`: a chart (built in code or loaded) as SCXML text, for SCXML editors
/// and viewers, that `load` reads back to the same chart given the same bindings.
///
/// The document has the null datamodel; a guard is written as `cond="<its name>"` (or
/// `In('id')` for `when_in`), an action as `<trellis:call name="<its name>"/>`, a delay in
/// whole seconds or milliseconds ("2s", "250ms"), and a compound state's initial only where it
/// is not its first child (or has content). `scxml_error` ("scxml.unsupported") for what SCXML
/// cannot carry: entry or exit blocks on the chart's root, a guard name a `cond` cannot hold (see
/// trellis/scxml/bindings.hpp), an id or event name with whitespace.

#include <string>

#include "trellis/scxml/errors.hpp"
#include "trellis/statechart/chart.hpp"

namespace trellis::scxml {

/// The chart as an SCXML document (UTF-8, indented, with an XML declaration).
std::string save(const ChartDefinition& chart);

template <class D>
std::string save(const Chart<D>& chart) {
  return save(chart.definition());
}

}  // namespace trellis::scxml
