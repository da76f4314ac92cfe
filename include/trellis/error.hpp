#pragma once
/// @file
/// Every error class of trellis, for code written before the layers had their own errors
/// headers: the root and the shared errors (trellis/base/error.hpp) and each layer's
/// (trellis/reactive/errors.hpp, trellis/machine/errors.hpp, trellis/persist/errors.hpp,
/// trellis/agent/errors.hpp, trellis/statechart/errors.hpp, trellis/scxml/errors.hpp). Include
/// the narrowest of those instead; docs/errors.md lists every error code.

#include "trellis/agent/errors.hpp"
#include "trellis/base/error.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/machine/errors.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/reactive/errors.hpp"
#include "trellis/scxml/errors.hpp"
#include "trellis/statechart/errors.hpp"
