#pragma once
/// @file
/// Compatibility header: a run's events (run_event.hpp, event_kind.hpp), the terminal
/// printer (progress_printer.hpp) and the Boost.Signals2 bus they are published on
/// (<trellis/signals2/event_bus.hpp>). The agent's own headers include the first three only,
/// so Boost stays out of a program that does not ask for the bus.

#include "trellis/agent/event_kind.hpp"
#include "trellis/agent/progress_printer.hpp"
#include "trellis/agent/run_event.hpp"
#include "trellis/signals2/event_bus.hpp"
