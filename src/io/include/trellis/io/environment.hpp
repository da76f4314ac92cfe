#pragma once
// Private to the trellis library (the durable-I/O toolkit): what the process's environment
// says about the programs it may run and the person it runs for, read one way for every layer
// (the `trellis` command, the console).

#include <optional>
#include <string>
#include <string_view>

namespace trellis::detail {

/// The path of the first executable file `name` in the directories of $PATH (an empty entry is
/// the current directory), or nullopt.
std::optional<std::string> find_program(std::string_view name);

/// Who runs this process, for records that name a person: $TRELLIS_USER, else $USER, else the
/// login name, else the name of the effective user id; empty when none is known.
std::string current_user();

}  // namespace trellis::detail
