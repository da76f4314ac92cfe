// What the commands share: the session's store, the documents and tables they print, times
// and values given on the command line (cli_support.hpp).

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include <trellis/io/environment.hpp>
#include <trellis/io/utc_time.hpp>

#include "cli_support.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/cli/open_store.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent::cli::detail {

Store& Session::store(Access access) {
  if (opened_) return *opened_;
  if (spec_.empty() && own_) return *own_;
  const std::string& spec = spec_.empty() ? default_spec_ : spec_;
  if (spec.empty())
    throw usage_failure("trellis: --store is required (a directory, or sqlite:PATH)");
  // Only `run` creates a store: any other command on a path that holds none is not_a_store,
  // and nothing is created there.
  if (access == Access::write) (void)open_store(spec, true);
  opened_ = open_store(spec, access == Access::read);
  return *opened_;
}

std::string Session::where() const {
  if (spec_.empty() && own_) return "the program's store";
  return "'" + (spec_.empty() ? default_spec_ : spec_) + "'";
}

void print_json(const nlohmann::json& doc) {
  std::cout << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
}

// --- times ----------------------------------------------------------------------------------

namespace {

bool digits(std::string_view s, std::size_t at, std::size_t n, int& value) {
  if (at + n > s.size()) return false;
  const char* b = s.data() + at;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(b[i]))) return false;
  return std::from_chars(b, b + n, value).ec == std::errc();
}

/// "YYYY-MM-DD", "YYYY-MM-DDTHH:MM:SSZ" or "YYYY-MM-DDTHH:MM:SS.mmmZ".
std::optional<SysClock::time_point> parse_iso(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, ms = 0;
  if (!digits(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d))
    return std::nullopt;
  if (s.size() > 10) {
    if (s.size() < 20 || s[10] != 'T' || !digits(s, 11, 2, h) || s[13] != ':' ||
        !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, se))
      return std::nullopt;
    std::size_t at = 19;
    if (s[at] == '.') {
      std::size_t n = 0;
      while (at + 1 + n < s.size() && std::isdigit(static_cast<unsigned char>(s[at + 1 + n]))) ++n;
      if (n == 0) return std::nullopt;
      int frac = 0;
      if (!digits(s, at + 1, std::min<std::size_t>(n, 3), frac)) return std::nullopt;
      for (std::size_t k = std::min<std::size_t>(n, 3); k < 3; ++k) frac *= 10;
      ms = frac;
      at += 1 + n;
    }
    if (at + 1 != s.size() || s[at] != 'Z') return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  // system_clock counts nanoseconds in 64 bits: it ends in 2262.
  if (!ymd.ok() || y < 1900 || y > 2200 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  return sys_days{ymd} + hours{h} + minutes{mi} + seconds{se} + milliseconds{ms};
}

}  // namespace

SysClock::time_point parse_time(std::string_view text, std::string_view option) {
  if (std::optional<SysClock::time_point> t = parse_iso(text)) return *t;
  // A span back from now: a number and a unit.
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  using namespace std::chrono;
  if (ec == std::errc() && end != text.data() && unit.size() == 1 && n < 100'000'000) {
    const auto now = SysClock::now();
    switch (unit[0]) {
      case 's':
        return now - seconds(n);
      case 'm':
        return now - minutes(n);
      case 'h':
        return now - hours(n);
      case 'd':
        return now - days(n);
      case 'w':
        return now - weeks(n);
      default:
        break;
    }
  }
  throw usage_failure("trellis: " + std::string(option) + " '" + std::string(text) +
                      "' is not a time: give ISO-8601 UTC (2026-11-24T10:00:00Z, 2026-11-24) or "
                      "a span back from now (90s, 30m, 2h, 7d, 2w)");
}

std::string utc(SysClock::time_point t) { return trellis::detail::format_utc(t); }

std::optional<SysClock::time_point> parse_stored_time(std::string_view text) {
  return parse_iso(text);
}

std::string age(std::string_view stored) {
  const std::optional<SysClock::time_point> t = parse_iso(stored);
  if (!t) return "";
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(SysClock::now() - *t).count();
  if (s < 0) return "0s";
  if (s < 120) return std::to_string(s) + "s";
  if (s < 120 * 60) return std::to_string(s / 60) + "m";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string due_text(std::string_view due) {
  const std::optional<SysClock::time_point> t = parse_iso(due);
  if (!t) return "";
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(*t - SysClock::now()).count();
  if (s <= 0) return "now";
  if (s < 120) return "in " + std::to_string(s) + "s";
  if (s < 120 * 60) return "in " + std::to_string(s / 60) + "m";
  if (s < 48 * 3600) return "in " + std::to_string(s / 3600) + "h";
  return "in " + std::to_string(s / 86400) + "d";
}

// --- values ---------------------------------------------------------------------------------

nlohmann::json parse_json_option(std::string_view text, std::string_view option) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = e.what();
    if (const auto at = why.find("parse error"); at != std::string::npos) why = why.substr(at);
    throw usage_failure("trellis: " + std::string(option) + " is not JSON: " + why);
  }
}

std::string default_user() { return trellis::detail::current_user(); }

namespace {
std::string squashed(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '-' && c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

RunStatus parse_status(std::string_view text) {
  for (RunStatus s : enumeration<RunStatus>::values)
    if (squashed(enumeration<RunStatus>::name(s)) == squashed(text)) return s;
  std::string known;
  for (RunStatus s : enumeration<RunStatus>::values)
    known += (known.empty() ? "" : ", ") + std::string(enumeration<RunStatus>::name(s));
  throw usage_failure("trellis: --status '" + std::string(text) + "' is not a status (" + known +
                      ")");
}

std::string name(RunStatus s) { return std::string(enumeration<RunStatus>::name(s)); }
std::string name(Reason r) { return std::string(enumeration<Reason>::name(r)); }

RunFilter make_filter(const std::string& status, const std::string& since,
                      const std::string& node) {
  RunFilter f;
  if (!status.empty()) f.status = parse_status(status);
  if (!since.empty()) f.since = utc(parse_time(since, "--since"));
  f.node = node;
  return f;
}

// --- the documents' parts -------------------------------------------------------------------

nlohmann::json report_json(const RunReport& r) {
  nlohmann::json j = {{"run_id", r.run_id}, {"status", name(r.status)}, {"reason", name(r.reason)},
                      {"detail", r.detail}, {"steps", r.steps},         {"state", r.state},
                      {"request", nullptr}};
  if (r.status == RunStatus::WaitingApproval && r.interrupt)
    j["request"] = interrupt_json(*r.interrupt, r.request_id, "");
  return j;
}

std::string brief(const nlohmann::json& v, std::size_t width) {
  std::string s = v.is_string() ? v.get<std::string>()
                                : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

}  // namespace trellis::agent::cli::detail
