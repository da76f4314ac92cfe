// Events that carry data: the event type is a std::variant of structs, and the transition
// function visits it. The state is a struct too (a machine's state needs == and a copy).
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <trellis/machine/state_machine.hpp>
#include <variant>

enum class Phase { Idle, Downloading, Failed, Done };

struct Download {
  Phase phase = Phase::Idle;
  std::size_t received = 0;
  std::size_t size = 0;
  std::string error;
  friend bool operator==(const Download&, const Download&) = default;
};

struct Start {
  std::size_t size;
};
struct Chunk {
  std::size_t bytes;
};
struct Fail {
  std::string reason;
};
struct Retry {};
using Event = std::variant<Start, Chunk, Fail, Retry>;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

// Pure: what each event does in each phase; nullopt rejects it.
std::optional<Download> step(const Download& d, const Event& e) {
  using Next = std::optional<Download>;
  return std::visit(
      Overloaded{
          [&](const Start& s) -> Next {
            if (d.phase != Phase::Idle) return std::nullopt;
            return Download{Phase::Downloading, 0, s.size, {}};
          },
          [&](const Chunk& c) -> Next {
            if (d.phase != Phase::Downloading || d.received + c.bytes > d.size) return std::nullopt;
            const std::size_t received = d.received + c.bytes;
            return Download{
                received == d.size ? Phase::Done : Phase::Downloading, received, d.size, {}};
          },
          [&](const Fail& f) -> Next {
            if (d.phase != Phase::Downloading) return std::nullopt;
            return Download{Phase::Failed, d.received, d.size, f.reason};
          },
          [&](const Retry&) -> Next {  // resumes where it failed
            if (d.phase != Phase::Failed) return std::nullopt;
            return Download{Phase::Downloading, d.received, d.size, {}};
          },
      },
      e);
}

void print(const Download& d) {
  static const char* const phases[] = {"idle", "downloading", "failed", "done"};
  std::printf("%s %zu/%zu%s%s\n", phases[static_cast<int>(d.phase)], d.received, d.size,
              d.error.empty() ? "" : ": ", d.error.c_str());
}

int main() {
  trellis::Context ctx;
  trellis::StateMachine<Download, Event> download{ctx, Download{}, step};
  auto percent = ctx.computed([cell = download.state_cell()] {
    const Download d = cell.get();
    return d.size == 0 ? 0 : static_cast<int>(100 * d.received / d.size);
  });
  auto printer = download.on_transition([](const Download&, const Download& to) { print(to); });

  download.send(Start{300});
  download.send(Chunk{100});
  download.send(Fail{"connection reset"});
  if (!download.send(Chunk{100})) std::printf("rejected: a chunk while failed\n");
  download.send(Retry{});
  download.send(Chunk{150});
  if (!download.send(Chunk{100})) std::printf("rejected: 100 bytes more than the size\n");
  download.send(Chunk{50});
  std::printf("%d%%\n", percent.get());

  const bool ok = download.state().phase == Phase::Done && percent.get() == 100;
  std::printf(ok ? "done\n" : "unexpected result\n");
  return ok ? 0 : 1;
}
