#pragma once
/// @file
/// What the console reads from a request, parsed by trellis (and fuzzed in CI): forms and query
/// strings (application/x-www-form-urlencoded) and the JSON bodies of the API, into the
/// decisions, cancellations, reconciliations and forks they ask for. Anything malformed is
/// bad_request naming the field; nothing is decided from a request that did not parse whole.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/reconciliation.hpp"
#include "trellis/agent/resume.hpp"

namespace trellis::web {

/// A form's or query string's fields, in their order (a name may repeat).
class Form {
 public:
  Form() = default;
  explicit Form(std::vector<std::pair<std::string, std::string>> fields)
      : fields_(std::move(fields)) {}

  /// The first value of `name`, or nullopt.
  std::optional<std::string> get(std::string_view name) const;
  /// The first value of `name`, or `fallback`.
  std::string value(std::string_view name, std::string_view fallback = {}) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const noexcept {
    return fields_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

/// Parses "a=1&b=two+words&c=%C3%A9": '+' is a space, %XY a byte. bad_request on a % not
/// followed by two hex digits, on a field or value that is not UTF-8, and on more than
/// `max_fields` fields.
Form parse_form(std::string_view text, std::size_t max_fields = 256);

/// "%"-encodes `text` for a URL's path segment or query value (unreserved characters stay).
std::string url_encode(std::string_view text);

/// A decision asked for by a form or a JSON body: on which request of the run, and what.
struct DecisionAsk {
  std::string request;  ///< the pause's id (request_id: the WaitingApproval checkpoint's seq)
  agent::Resume decision;
};

/// From a form: request, decision ("approve", "reject" or "input"), comment (approve), reason
/// (reject, required), input (JSON text, required for input). The reviewer is `reviewer` (the
/// authenticated user), never a field: a "reviewer" or "by" field is refused.
DecisionAsk decision_from_form(const Form& form, const std::string& reviewer);
/// From a JSON body {"request": "4", "decision": "approve"|"reject"|"input", "comment": ...,
/// "reason": ..., "input": <any JSON>}; the same rules.
DecisionAsk decision_from_json(std::string_view body, const std::string& reviewer);

/// A cancellation asked for: its reason (may be empty).
struct CancelAsk {
  std::string reason;
};
CancelAsk cancel_from_form(const Form& form);

/// A reconciliation from a form: key (the effect's idempotency key), happened ("yes" or "no"),
/// result (JSON, when it happened; default null), reason (required); recorded as `by` (the
/// authenticated user): a "by" or "reviewer" field is refused.
agent::Reconciliation reconciliation_from_form(const Form& form, const std::string& by);
CancelAsk cancel_from_json(std::string_view body);

/// A fork asked for: from which checkpoint of the run, into which new run id, and why.
struct ForkAsk {
  std::uint64_t seq = 0;  ///< the source checkpoint
  std::string as;         ///< the new run's id (required; fork_run checks it)
  std::string reason;     ///< may be empty
};
/// From a form: seq (a decimal number, required), as (required), reason. The fork is recorded
/// as the authenticated user's: a "by" or "reviewer" field is refused.
ForkAsk fork_from_form(const Form& form);
/// From a JSON body {"seq": 3, "as": "run-7b", "reason": "..."}; the same rules ("seq" a
/// non-negative integer).
ForkAsk fork_from_json(std::string_view body);

}  // namespace trellis::web
