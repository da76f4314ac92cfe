// SPDX-License-Identifier: MIT
// Must not compile: a durable state with no JSON conversions; the diagnostic must say, in one
// line, what to define.
#include <trellis/persist/durable_state_machine.hpp>

#include <optional>

struct Doc {
  int pages = 0;
  bool operator==(const Doc&) const = default;
};
enum class Edit { add_page };
std::optional<Doc> edit(const Doc& d, const Edit&) { return Doc{d.pages + 1}; }

int main() {
  trellis::Context ctx;
  trellis::DurableStateMachine<Doc, Edit> doc{ctx, "doc.json", Doc{}, edit};
  doc.send(Edit::add_page);
}
