#pragma once
/// @file
/// Internal: a mutex for critical sections of well under a microsecond (MemoryStore's): lock()
/// tries for a moment, spinning, before it sleeps on a std::mutex. Threads that take turns on
/// such a lock (a fan-out's items writing their records) otherwise spend more time being put
/// to sleep and woken than inside it. Meets Lockable.

#include <mutex>

namespace trellis::agent::detail {

class BriefMutex {
 public:
  void lock() {
    for (int i = 0; i < kTries; ++i) {
      if (m_.try_lock()) return;
      relax();
    }
    m_.lock();
  }
  bool try_lock() { return m_.try_lock(); }
  void unlock() { m_.unlock(); }

 private:
  static constexpr int kTries = 200;  // about 10 us at most, then it sleeps
  static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::mutex m_;
};

}  // namespace trellis::agent::detail
