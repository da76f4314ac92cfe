// SPDX-License-Identifier: MIT
// Must compile: the machine layer's headers (and the base and reactive ones below them)
// include no Boost, no oneTBB and no nlohmann_json; those live in the adapters.
#include <trellis/base/enumeration.hpp>
#include <trellis/base/subscription.hpp>
#include <trellis/machine/diagram.hpp>
#include <trellis/machine/send_result.hpp>
#include <trellis/machine/state_machine.hpp>
#include <trellis/machine/transition_function.hpp>
#include <trellis/machine/transition_table.hpp>
#include <trellis/reactive/async_context.hpp>
#include <trellis/testing.hpp>

#if defined(BOOST_VERSION) || defined(BOOST_CONFIG_HPP)
#error "a machine header included Boost"
#endif
#if defined(TBB_VERSION_MAJOR) || defined(__TBB_tbb_stddef_H)
#error "a machine header included oneTBB"
#endif
#if defined(NLOHMANN_JSON_VERSION_MAJOR) || defined(INCLUDE_NLOHMANN_JSON_FWD_HPP_)
#error "a machine header included nlohmann_json"
#endif

int main() {}
