// SPDX-License-Identifier: MIT
/// @file
/// libFuzzer target for what the operator console parses from a request (forms.hpp): every input
/// is parsed as a form or query string, read as a decision, a cancellation, a reconciliation and a
/// fork from that form, and as the API's JSON bodies. The only acceptable failure is bad_request;
/// anything else that escapes reaches std::terminate and libFuzzer reports it as a crash, as it
/// does for ASan/UBSan findings and hangs (-timeout). Built only with -DTRELLIS_FUZZ=ON and clang.
#include <trellis/web/errors.hpp>
#include <trellis/web/forms.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace web = trellis::web;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const web::Form form = web::parse_form(text);
    // What parse_form returns is UTF-8, and url_encode is undone by it.
    for (const auto& [name, value] : form.fields()) {
      const web::Form back = web::parse_form("v=" + web::url_encode(value));
      if (back.value("v") != value) {
        std::fprintf(stderr, "url_encode then parse_form changed a value\n");
        std::abort();
      }
      (void)name;
    }
    try {
      (void)web::decision_from_form(form, "fuzz");
    } catch (const web::bad_request&) {
    }
    try {
      (void)web::cancel_from_form(form);
    } catch (const web::bad_request&) {
    }
    try {
      (void)web::reconciliation_from_form(form, "fuzz");
    } catch (const web::bad_request&) {
    }
    try {
      (void)web::fork_from_form(form);
    } catch (const web::bad_request&) {
    }
  } catch (const web::bad_request&) {
  }
  try {
    (void)web::decision_from_json(text, "fuzz");
  } catch (const web::bad_request&) {
  }
  try {
    (void)web::cancel_from_json(text);
  } catch (const web::bad_request&) {
  }
  try {
    (void)web::fork_from_json(text);
  } catch (const web::bad_request&) {
  }
  return 0;
}
