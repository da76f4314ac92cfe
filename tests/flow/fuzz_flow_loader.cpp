// SPDX-License-Identifier: MIT
/// @file
/// libFuzzer target for graph files: every input is loaded with load_graph_text and, when it
/// loads, validated against a registry holding the built-in actions. The only acceptable
/// failure is a typed trellis::error; anything else that escapes (yaml-cpp's or nlohmann's
/// exceptions, std::out_of_range, ...) reaches std::terminate, and libFuzzer reports it as a
/// crash, as it does for ASan/UBSan findings and hangs (-timeout). Subgraph files named by an
/// input are looked up relative to the current directory (none exist where the fuzzer runs,
/// so they fail to load: a validation error). Built only with -DTRELLIS_FUZZ=ON and clang.
#include <trellis/flow/action.hpp>
#include <trellis/flow/graph_file.hpp>
#include <trellis/flow/validate.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz_flow_loader: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const trellis::flow::ActionRegistry actions =
      trellis::flow::ActionRegistry::with_builtins();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const trellis::flow::GraphFile file = trellis::flow::load_graph_text(text, "fuzz.yaml");
    check(file.hash.size() == 64, "a loaded file's hash is 64 hex digits");
    const trellis::flow::Validation v = trellis::flow::validate(file, actions);
    // check() throws exactly when validate() finds an error.
    bool threw = false;
    try {
      trellis::flow::check(file, actions);
    } catch (const trellis::flow::graph_file_error& e) {
      threw = true;
      check(!e.problems().empty(), "a graph_file_error lists a problem");
    }
    check(threw == !v.ok(), "check() throws exactly when validate() finds an error");
  } catch (const trellis::flow::graph_file_error& e) {
    check(!e.problems().empty(), "a graph_file_error lists a problem");
  } catch (const trellis::error&) {
  }
  return 0;
}
