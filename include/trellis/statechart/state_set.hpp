#pragma once
/// @file
/// `StateSet`: a set of a chart's states, by index (document order). States are numbered in
/// document order (preorder, the `<scxml>` root is 0), so iterating a set visits its states in
/// entry order, and the descendants of a state are a contiguous range of indices. Charts of up
/// to 128 states keep their sets inline: copying one (a configuration, per event) allocates
/// nothing.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace trellis {

class StateSet {
 public:
  static constexpr std::size_t inline_words = 2;

  StateSet() noexcept = default;
  /// An empty set able to hold states 0 .. `states` - 1.
  explicit StateSet(std::size_t states) { resize(states); }

  // Copies and moves of an inline set (up to 128 states) copy two words and nothing else.
  StateSet(const StateSet& o) : words_(o.words_) {
    if (words_ <= inline_words) {
      inline_[0] = o.inline_[0];
      inline_[1] = o.inline_[1];
    } else {
      copy_heap(o);
    }
  }
  StateSet(StateSet&& o) noexcept : words_(o.words_) {
    inline_[0] = o.inline_[0];
    inline_[1] = o.inline_[1];
    if (words_ > inline_words) heap_ = std::move(o.heap_);
  }
  StateSet& operator=(const StateSet& o) {
    if (o.words_ <= inline_words && words_ <= inline_words) {
      words_ = o.words_;
      inline_[0] = o.inline_[0];
      inline_[1] = o.inline_[1];
    } else if (this != &o) {
      assign_heap(o);
    }
    return *this;
  }
  StateSet& operator=(StateSet&& o) noexcept {
    words_ = o.words_;
    inline_[0] = o.inline_[0];
    inline_[1] = o.inline_[1];
    if (words_ > inline_words || heap_) heap_ = std::move(o.heap_);
    return *this;
  }
  ~StateSet() = default;

  /// Clears the set and makes it hold states 0 .. `states` - 1.
  void resize(std::size_t states) {
    const std::size_t w = (states + 63) / 64;
    if (w > inline_words && w != words_) heap_ = std::make_unique<std::uint64_t[]>(w);
    words_ = w;
    clear();
  }

  bool contains(int s) const noexcept {
    const auto u = static_cast<std::size_t>(s);
    return u / 64 < words_ && ((data()[u / 64] >> (u % 64)) & 1U) != 0;
  }
  void insert(int s) noexcept {
    const auto u = static_cast<std::size_t>(s);
    data()[u / 64] |= std::uint64_t{1} << (u % 64);
  }
  void erase(int s) noexcept {
    const auto u = static_cast<std::size_t>(s);
    data()[u / 64] &= ~(std::uint64_t{1} << (u % 64));
  }
  void clear() noexcept {
    std::uint64_t* w = data();
    for (std::size_t i = 0; i < words_; ++i) w[i] = 0;
  }

  bool empty() const noexcept {
    return std::all_of(data(), data() + words_, [](std::uint64_t w) { return w == 0; });
  }
  std::size_t size() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < words_; ++i)
      n += static_cast<std::size_t>(std::popcount(data()[i]));
    return n;
  }

  /// Whether some state with an index in [first, last] is in the set.
  bool any_in(int first, int last) const noexcept {
    for (int s = next(first - 1); s >= 0 && s <= last; s = next(s)) return true;
    return false;
  }

  /// The smallest member greater than `after` (-1 for the first), or -1.
  int next(int after) const noexcept {
    std::size_t u = static_cast<std::size_t>(after + 1);
    std::size_t w = u / 64;
    if (w >= words_) return -1;
    std::uint64_t bits = data()[w] & (~std::uint64_t{0} << (u % 64));
    while (true) {
      if (bits != 0)
        return static_cast<int>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
      if (++w >= words_) return -1;
      bits = data()[w];
    }
  }
  /// The smallest member greater than `after` that is also in `mask`, or -1.
  int next_in(const StateSet& mask, int after) const noexcept {
    std::size_t u = static_cast<std::size_t>(after + 1);
    std::size_t w = u / 64;
    const std::size_t n = std::min(words_, mask.words_);
    if (w >= n) return -1;
    std::uint64_t bits = data()[w] & mask.data()[w] & (~std::uint64_t{0} << (u % 64));
    while (true) {
      if (bits != 0)
        return static_cast<int>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
      if (++w >= n) return -1;
      bits = data()[w] & mask.data()[w];
    }
  }
  /// The largest member smaller than `before` (pass capacity() for the last), or -1.
  int prev(int before) const noexcept {
    if (before <= 0) return -1;
    std::size_t u = static_cast<std::size_t>(before - 1);
    std::size_t w = u / 64;
    if (w >= words_) {
      w = words_ - 1;
      u = w * 64 + 63;
    }
    std::uint64_t bits = data()[w] & (~std::uint64_t{0} >> (63 - u % 64));
    while (true) {
      if (bits != 0)
        return static_cast<int>(w * 64 + 63 - static_cast<std::size_t>(std::countl_zero(bits)));
      if (w-- == 0) return -1;
      bits = data()[w];
    }
  }

  /// How many state indices the set can hold (a multiple of 64).
  int capacity() const noexcept { return static_cast<int>(words_ * 64); }

  StateSet& operator|=(const StateSet& o) noexcept {
    for (std::size_t i = 0; i < std::min(words_, o.words_); ++i) data()[i] |= o.data()[i];
    return *this;
  }
  /// Removes the members of `o`.
  StateSet& operator-=(const StateSet& o) noexcept {
    for (std::size_t i = 0; i < std::min(words_, o.words_); ++i) data()[i] &= ~o.data()[i];
    return *this;
  }
  /// Makes this set `a` ∩ `b` (sized like `a`).
  void assign_and(const StateSet& a, const StateSet& b) {
    if (words_ != a.words_) resize(static_cast<std::size_t>(a.capacity()));
    for (std::size_t i = 0; i < words_; ++i)
      data()[i] = a.data()[i] & (i < b.words_ ? b.data()[i] : 0);
  }
  bool intersects(const StateSet& o) const noexcept {
    for (std::size_t i = 0; i < std::min(words_, o.words_); ++i)
      if ((data()[i] & o.data()[i]) != 0) return true;
    return false;
  }

  friend bool operator==(const StateSet& a, const StateSet& b) noexcept {
    const std::size_t n = std::max(a.words_, b.words_);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t x = i < a.words_ ? a.data()[i] : 0;
      const std::uint64_t y = i < b.words_ ? b.data()[i] : 0;
      if (x != y) return false;
    }
    return true;
  }

  /// The members, ascending (document order).
  std::vector<int> members() const {
    std::vector<int> out;
    for (int s = next(-1); s >= 0; s = next(s)) out.push_back(s);
    return out;
  }

 private:
  [[gnu::noinline]] void copy_heap(const StateSet& o) {
    heap_ = std::make_unique<std::uint64_t[]>(words_);
    std::memcpy(heap_.get(), o.heap_.get(), words_ * sizeof(std::uint64_t));
  }
  [[gnu::noinline]] void assign_heap(const StateSet& o) {
    if (o.words_ > inline_words && (words_ != o.words_ || !heap_))
      heap_ = std::make_unique<std::uint64_t[]>(o.words_);
    words_ = o.words_;
    std::memcpy(data(), o.data(), words_ * sizeof(std::uint64_t));
  }

  std::uint64_t* data() noexcept { return words_ > inline_words ? heap_.get() : inline_; }
  const std::uint64_t* data() const noexcept {
    return words_ > inline_words ? heap_.get() : inline_;
  }

  std::size_t words_ = 0;
  std::uint64_t inline_[inline_words] = {};
  std::unique_ptr<std::uint64_t[]> heap_;
};

}  // namespace trellis
