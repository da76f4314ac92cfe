// SPDX-License-Identifier: MIT
// Forms, query strings and the API's JSON bodies (forms.hpp).

#include "trellis/web/forms.hpp"

#include <trellis/io/json_text.hpp>

#include "trellis/web/errors.hpp"

namespace trellis::web {

std::string_view bad_request::id() const noexcept { return "web.bad_request"; }
std::string_view users_file_error::id() const noexcept { return "web.users_file"; }
std::string_view refused_option::id() const noexcept { return "web.refused_option"; }

std::optional<std::string> Form::get(std::string_view name) const {
  for (const auto& [k, v] : fields_)
    if (k == name) return v;
  return std::nullopt;
}

std::string Form::value(std::string_view name, std::string_view fallback) const {
  std::optional<std::string> v = get(name);
  return v ? std::move(*v) : std::string(fallback);
}

namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%') {
      const int hi = i + 2 < text.size() ? hex(text[i + 1]) : -1;
      const int lo = hi >= 0 ? hex(text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        throw bad_request("trellis serve: a form field has a '%' not followed by two hex digits");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += c;
    }
  }
  if (!trellis::detail::valid_utf8(out))
    throw bad_request("trellis serve: a form field is not UTF-8 text");
  return out;
}

[[noreturn]] void missing(std::string_view field, std::string_view why) {
  throw bad_request("trellis serve: the field '" + std::string(field) + "' " + std::string(why));
}

DecisionAsk make_decision(const std::optional<std::string>& request,
                          const std::optional<std::string>& kind,
                          const std::optional<std::string>& comment,
                          const std::optional<std::string>& reason,
                          const std::optional<nlohmann::json>& input, const std::string& reviewer) {
  if (!request || request->empty()) missing("request", "is required (the request's id)");
  for (const char c : *request)
    if (c < '0' || c > '9') missing("request", "is a request id: digits only");
  if (!kind) missing("decision", "is required: approve, reject or input");
  DecisionAsk ask{*request, agent::Approve{}};
  if (*kind == "approve") {
    ask.decision = agent::Approve{reviewer, comment.value_or("")};
  } else if (*kind == "reject") {
    if (!reason || reason->empty()) missing("reason", "is required to reject");
    ask.decision = agent::Reject{*reason, reviewer};
  } else if (*kind == "input") {
    if (!input) missing("input", "is required to give input (JSON)");
    ask.decision = agent::Input{*input, reviewer};
  } else {
    missing("decision", "must be approve, reject or input");
  }
  return ask;
}

}  // namespace

Form parse_form(std::string_view text, std::size_t max_fields) {
  std::vector<std::pair<std::string, std::string>> fields;
  while (!text.empty()) {
    const std::size_t amp = text.find('&');
    const std::string_view part = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
    if (part.empty()) continue;
    if (fields.size() == max_fields)
      throw bad_request("trellis serve: a form has more than " + std::to_string(max_fields) +
                        " fields");
    const std::size_t eq = part.find('=');
    fields.emplace_back(decode(part.substr(0, eq)),
                        eq == std::string_view::npos ? std::string() : decode(part.substr(eq + 1)));
  }
  return Form(std::move(fields));
}

std::string url_encode(std::string_view text) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += digits[u >> 4];
      out += digits[u & 15];
    }
  }
  return out;
}

DecisionAsk decision_from_form(const Form& form, const std::string& reviewer) {
  if (form.get("reviewer") || form.get("by"))
    throw bad_request(
        "trellis serve: a decision's reviewer is the signed-in user, not a form field");
  std::optional<nlohmann::json> input;
  if (std::optional<std::string> text = form.get("input")) {
    input = nlohmann::json::parse(*text, nullptr, false);
    if (input->is_discarded()) missing("input", "is not JSON");
  }
  return make_decision(form.get("request"), form.get("decision"), form.get("comment"),
                       form.get("reason"), input, reviewer);
}

namespace {

/// Refuses a form or body that names who acts: that is the authenticated user.
void refuse_author(bool named, const char* what) {
  if (named)
    throw bad_request(std::string("trellis serve: ") + what +
                      " is recorded as the signed-in user's, not a field's");
}

nlohmann::json parse_object(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) throw bad_request("trellis serve: the request's body is not JSON");
  if (!j.is_object()) throw bad_request("trellis serve: the request's body is not a JSON object");
  return j;
}

std::optional<std::string> text_member(const nlohmann::json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) missing(name, "must be a string");
  return it->get<std::string>();
}

}  // namespace

DecisionAsk decision_from_json(std::string_view body, const std::string& reviewer) {
  const nlohmann::json j = parse_object(body);
  if (j.contains("reviewer") || j.contains("by"))
    throw bad_request(
        "trellis serve: a decision's reviewer is the authenticated user, not a "
        "member of the body");
  std::optional<nlohmann::json> input;
  if (const auto it = j.find("input"); it != j.end()) input = *it;
  return make_decision(text_member(j, "request"), text_member(j, "decision"),
                       text_member(j, "comment"), text_member(j, "reason"), input, reviewer);
}

CancelAsk cancel_from_form(const Form& form) {
  refuse_author(form.get("by") || form.get("reviewer"), "a cancellation");
  return CancelAsk{form.value("reason")};
}

agent::Reconciliation reconciliation_from_form(const Form& form, const std::string& by) {
  refuse_author(form.get("by") || form.get("reviewer"), "a reconciliation");
  agent::Reconciliation r;
  r.key = form.value("key");
  if (r.key.empty()) missing("key", "is required (the effect's key)");
  const std::string happened = form.value("happened");
  if (happened != "yes" && happened != "no") missing("happened", "must be yes or no");
  r.happened = happened == "yes";
  const std::string result = form.value("result", "null");
  r.result = nlohmann::json::parse(result, nullptr, false);
  if (r.result.is_discarded()) missing("result", "is not JSON");
  r.reason = form.value("reason");
  if (r.reason.empty()) missing("reason", "is required: how you know");
  r.by = by;
  return r;
}

CancelAsk cancel_from_json(std::string_view body) {
  const nlohmann::json j = parse_object(body);
  refuse_author(j.contains("by") || j.contains("reviewer"), "a cancellation");
  return CancelAsk{text_member(j, "reason").value_or("")};
}

ForkAsk fork_from_form(const Form& form) {
  refuse_author(form.get("by") || form.get("reviewer"), "a fork");
  ForkAsk ask;
  const std::string seq = form.value("seq");
  if (seq.empty() || seq.size() > 19 || seq.find_first_not_of("0123456789") != std::string::npos)
    missing("seq", "must be a checkpoint's number");
  ask.seq = std::stoull(seq);
  ask.as = form.value("as");
  if (ask.as.empty()) missing("as", "is required: the new run's id");
  ask.reason = form.value("reason");
  return ask;
}

ForkAsk fork_from_json(std::string_view body) {
  const nlohmann::json j = parse_object(body);
  refuse_author(j.contains("by") || j.contains("reviewer"), "a fork");
  ForkAsk ask;
  const auto seq = j.find("seq");
  if (seq == j.end() || !seq->is_number_unsigned())
    missing("seq", "must be a checkpoint's number (a non-negative integer)");
  ask.seq = seq->get<std::uint64_t>();
  ask.as = text_member(j, "as").value_or("");
  if (ask.as.empty()) missing("as", "is required: the new run's id");
  ask.reason = text_member(j, "reason").value_or("");
  return ask;
}

}  // namespace trellis::web
