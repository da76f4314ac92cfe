#pragma once
/// @file
/// Statecharts (the trellis::statechart target): build a chart in code with ChartBuilder, run
/// it with StateChart, ThreadSafeStateChart or AsyncStateChart. std only: no XML, JSON, Boost
/// or TBB. SCXML files are the trellis::scxml target's (trellis/scxml/load.hpp).

#include "trellis/statechart/builder.hpp"
#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/diagram.hpp"
#include "trellis/statechart/state_chart.hpp"
