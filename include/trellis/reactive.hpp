#pragma once
/// @file
/// The reactive layer in one include: contexts (Context, ThreadSafeContext, AsyncContext),
/// Cell, CellView, Computed, Signal, Effect, batch and untracked. Standard library only; link
/// trellis::reactive (AsyncContext's oneTBB constructors need trellis::tbb as well).

#include "trellis/reactive/async_context.hpp"
#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/cell_view.hpp"
#include "trellis/reactive/computed.hpp"
#include "trellis/reactive/context.hpp"
#include "trellis/reactive/effect.hpp"
#include "trellis/reactive/errors.hpp"
#include "trellis/reactive/signal.hpp"
#include "trellis/reactive/untracked.hpp"
