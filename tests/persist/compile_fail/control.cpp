// SPDX-License-Identifier: MIT
// Must compile: the state has JSON conversions (the event needs none: it is journaled as
// null), so a failure of the other case here comes from the missing conversions.
#include <trellis/persist/durable_state_machine.hpp>

#include <optional>

struct Doc {
  int pages = 0;
  bool operator==(const Doc&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Doc, pages)
enum class Edit { add_page };
std::optional<Doc> edit(const Doc& d, const Edit&) { return Doc{d.pages + 1}; }

int main() {
  trellis::Context ctx;
  trellis::DurableStateMachine<Doc, Edit> doc{ctx, "doc.json", Doc{}, edit};
  doc.send(Edit::add_page);
}
