#pragma once
/// @file
/// Umbrella header: everything trellis offers.

#include "trellis/error.hpp"
#include "trellis/machine/diagram.hpp"
#include "trellis/machine/enumeration.hpp"
#include "trellis/machine/send_result.hpp"
#include "trellis/machine/state_machine.hpp"
#include "trellis/machine/subscription.hpp"
#include "trellis/machine/transition_function.hpp"
#include "trellis/machine/transition_table.hpp"
#include "trellis/reactive/async_context.hpp"
#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/cell_view.hpp"
#include "trellis/reactive/computed.hpp"
#include "trellis/reactive/context.hpp"
#include "trellis/reactive/effect.hpp"
#include "trellis/reactive/signal.hpp"
#include "trellis/reactive/subscribe.hpp"
#include "trellis/reactive/untracked.hpp"
