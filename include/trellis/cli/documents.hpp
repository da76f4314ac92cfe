#pragma once
/// @file
/// The JSON documents of the `trellis` command's `-o json` (docs/cli.md, docs/cli.schema.json),
/// built from a store: what `trellis runs show -o json` prints is run_document(store, run), and
/// the operator console's API (`trellis serve`, /api/v1) answers with the same documents, so a
/// script written against one reads the other.
///
/// ```cpp
/// trellis::agent::SqliteStore store{"runs.db"};
/// nlohmann::json doc = trellis::agent::cli::run_document(store, "r-7");
/// std::cout << doc["run"]["status"] << '\n';  // "WaitingApproval"
/// ```
///
/// Every document is an object with "trellis_cli" (schema_version) and "kind". A run that does
/// not exist is unknown_run naming it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/operations.hpp"
#include "trellis/agent/run_summary.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/cli/graph_runner.hpp"

namespace trellis::agent::cli {

/// The version of the documents (the "trellis_cli" member).
inline constexpr int schema_version = 1;

/// {"trellis_cli": schema_version, "kind": kind}: the start of every document.
nlohmann::json document(std::string_view kind);

/// One run of a listing: run_id, status, reason, node, step, seq, created_at, updated_at,
/// fingerprint, request (null unless waiting), due (null when none), priority.
nlohmann::json summary_json(const RunSummary& s);
/// Appends summary_json(s).dump() to `out` without building the JSON tree (a listing of
/// 100,000 runs).
void append_summary_json(std::string& out, const RunSummary& s);
/// The "runs" document of `runs` (its "runs" array), as dump() would print it, without a
/// newline.
std::string runs_document_text(const std::vector<RunSummary>& runs);

/// A pause: id, reason, asked_by, then, and the approval request's action, proposed_input,
/// risk_reason and expires_at (null without one).
nlohmann::json interrupt_json(const Interrupt& i, const std::string& id, const std::string& node);
/// The pending request of a WaitingApproval checkpoint (null otherwise).
nlohmann::json request_json(const Checkpoint& cp);
/// A checkpoint: seq, status, reason, detail, node, step, attempt, created_at, state, effects,
/// request, decision, reconciliation, forked_from (a fork's first checkpoint).
nlohmann::json checkpoint_json(const Checkpoint& cp);
/// The state's changes from `a` to `b`: [{op, path, old, new}], a JSON pointer per change.
nlohmann::json state_changes(const nlohmann::json& a, const nlohmann::json& b);
/// An effect record: key, name, policy, status, issued, node, step, args, result, error,
/// compensates, started_at, finished_at, reconciliation (and cached_from for a cached receipt).
nlohmann::json effect_json(const EffectRecord& r);

/// "run": the run's summary ("run"), detail, state, request, decision, reconciliation and
/// cancel_requests.
nlohmann::json run_document(Store& store, std::string_view run);
/// "history": every checkpoint of the run, each with its "changes" when `with_changes`.
nlohmann::json history_document(Store& store, std::string_view run, bool with_changes);
/// "events": the run's events after position `after` (0: all), each {seq, event}.
nlohmann::json events_document(Store& store, std::string_view run, std::uint64_t after);
/// "effects": the run's effect records.
nlohmann::json effects_document(Store& store, std::string_view run);
/// "approvals": every pending request (interrupt_json plus run_id and waiting_since).
nlohmann::json approvals_document(const std::vector<PendingApproval>& pending);

/// A run's picture: its graph (the shape the run's program stored, else `graph`'s when the
/// fingerprints agree, else the path alone) with the run's path over it.
struct RunPicture {
  std::string text;  ///< DOT, Mermaid or SVG text
  bool graph_known;  ///< false when only the path could be drawn
};
/// `format` is "dot", "mermaid" or "svg" (Graphviz's `dot -Tsvg`: store_error when dot is not on
/// PATH or fails). unknown_run when there is no such run.
RunPicture draw_run(Store& store, std::string_view run, std::string_view format,
                    GraphRunner* graph = nullptr);

}  // namespace trellis::agent::cli
