// SPDX-License-Identifier: MIT
/// @file
/// libFuzzer target for the persist/ loaders: every input is fed both to decode_sidecar (as a
/// sidecar's bytes) and to read_journal (as a journal file's bytes). The only acceptable
/// failure is a typed trellis::error; anything else that escapes (nlohmann's exceptions,
/// std::out_of_range, ...) reaches std::terminate, and libFuzzer reports it as a crash, as it
/// does for ASan/UBSan findings and hangs (-timeout).
///
/// read_journal only reads files, so the bytes go into a memfd, opened by read_journal as
/// /proc/self/fd/N: no file system traffic. Built only with -DTRELLIS_FUZZ=ON and clang.
#include <trellis/persist/errors.hpp>
#include <trellis/persist/journal.hpp>
#include <trellis/persist/sidecar.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

/// The memfd that stands for the journal file, created once.
int journal_fd() {
  static const int fd = [] {
    const int created = ::memfd_create("trellis-fuzz-journal", MFD_CLOEXEC);
    if (created < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    return created;
  }();
  return fd;
}

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz_loaders: invariant broken: %s\n", what);
    std::abort();
  }
}

void fuzz_sidecar(std::string_view bytes) {
  try {
    const trellis::SidecarRecord any = trellis::decode_sidecar(bytes, "", "fuzz.json");
    // A sidecar of machine M is refused by any other name, accepted by its own.
    try {
      (void)trellis::decode_sidecar(bytes, any.machine + "-other", "fuzz.json");
      check(false, "a sidecar accepted by another machine's name");
    } catch (const trellis::recovery_error& e) {
      check(e.why() == trellis::recovery_error::reason::foreign_machine,
            "another machine's name refused for another reason");
    }
  } catch (const trellis::error&) {
  }
}

void fuzz_journal(std::string_view bytes) {
  const int fd = journal_fd();
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    std::perror("writing the memfd");
    std::abort();
  }
  try {
    const trellis::JournalContents contents =
        trellis::read_journal("/proc/self/fd/" + std::to_string(fd));
    check(contents.valid_size <= bytes.size(), "valid_size past the end of the file");
    if (contents.torn) check(contents.torn->offset == contents.valid_size, "torn tail offset");
    for (std::size_t i = 1; i < contents.entries.size(); ++i) {
      check(contents.entries[i - 1].epoch < contents.entries[i].epoch,
            "journal epochs that do not increase");
    }
  } catch (const trellis::error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz_sidecar(bytes);
  fuzz_journal(bytes);
  return 0;
}
