#pragma once
/// @file
/// A forward declaration of `tbb::task_arena` exactly as oneTBB 2021 declares it (the class
/// `tbb::detail::d1::task_arena`, named `tbb::task_arena` through the inline namespace `v1`),
/// so that AsyncContext can declare its oneTBB constructors without including oneTBB. The
/// `tbb` adapter (src/tbb/) checks it against the real header when it is compiled.

namespace tbb {
namespace detail::d1 {
class task_arena;
}  // namespace detail::d1
inline namespace v1 {
using detail::d1::task_arena;
}  // namespace v1
}  // namespace tbb
