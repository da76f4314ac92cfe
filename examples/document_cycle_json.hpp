// SPDX-License-Identifier: MIT
/// @file
/// The document cycle's state in JSON, for its durable sidecar: the phase by name (with
/// trellis/json/enumeration.hpp), then every bookkeeping field. Reading a sidecar that lacks a
/// field throws, which the DurableStateMachine reports as a recovery_error.
#pragma once

#include <nlohmann/json.hpp>
#include <trellis/json/enumeration.hpp>

#include "document_cycle.hpp"

namespace doc_cycle {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Cycle, phase, number, document, pending_writes, queue_head,
                                   capture_hash, response_hash, write_count, timeouts,
                                   abandon_reason)

}  // namespace doc_cycle
