// SPDX-License-Identifier: MIT
/// @file
/// libFuzzer target for the SCXML loader: every input is loaded as SCXML text, with and without
/// `allow_unused_ecmascript`, against bindings that name a guard and an action. The only
/// acceptable failure is a typed trellis::scxml::scxml_error; anything else that escapes
/// (chart_error, std::out_of_range, ...) reaches std::terminate, and libFuzzer reports it as a
/// crash, as it does for ASan/UBSan findings and hangs (-timeout). A document that loads is
/// saved, and the saved text must load back. Built only with -DTRELLIS_FUZZ=ON and clang.
#include <trellis/scxml.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

const trellis::scxml::Bindings<>& bindings() {
  static const trellis::scxml::Bindings<> b = [] {
    trellis::scxml::Bindings<> x;
    x.guard("ready", [] { return true; }).action("beep", [] {});
    return x;
  }();
  return b;
}

void load(std::string_view text, bool ecmascript) noexcept {
  trellis::scxml::LoadOptions options;
  options.allow_unused_ecmascript = ecmascript;
  options.source_name = "fuzz.scxml";
  std::string saved;
  try {
    const auto chart = trellis::scxml::load_text(text, bindings(), options);
    try {
      saved = trellis::scxml::save(chart);
    } catch (const trellis::scxml::scxml_error&) {
      return;  // SCXML cannot hold it (e.g. an id with whitespace): a typed refusal
    }
  } catch (const trellis::scxml::scxml_error&) {
    return;
  }
  try {
    (void)trellis::scxml::load_text(saved, bindings());
  } catch (const trellis::scxml::scxml_error& e) {
    std::fprintf(stderr, "fuzz_scxml: a saved chart does not load back: %s\n%s\n", e.what(),
                 saved.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  load(text, false);
  load(text, true);
  return 0;
}
