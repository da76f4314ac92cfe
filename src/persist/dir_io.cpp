// How persist/ finds the directory of a sidecar, a lock or a journal (see dir_io.hpp).

#include "dir_io.hpp"

#include <cerrno>
#include <system_error>

#include "trellis/persist/errors.hpp"

namespace trellis::detail {

int open_parent(const std::filesystem::path& file, Directory& dir, std::string& name) {
  if (file.filename().empty()) {
    return EISDIR;
  }
  if (const int e = dir.open(parent_directory(file), false, Modes{})) {
    return e;
  }
  name = file.filename().string();
  return 0;
}

std::string step_text(std::string_view operation, const std::filesystem::path& file, int e) {
  std::string text(operation);
  if (e == ELOOP) {
    text += " (a symbolic link is at '" + file.string() +
            "'; trellis does not follow links inside its directory)";
  }
  return text;
}

Modes sidecar_modes(mode_t file_mode, const std::filesystem::path& sidecar) {
  return Modes::from_file_mode(file_mode, "sidecar '" + sidecar.string() + "'");
}

std::filesystem::path resolved_sidecar(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  // A link to a sidecar not yet written (a dangling link) names the file it will be: follow
  // it by hand (resolve_file only follows links to files that exist), a bounded number of hops.
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(file, ec) || std::filesystem::exists(file, ec)) {
      break;
    }
    const std::filesystem::path target = std::filesystem::read_symlink(file, ec);
    if (ec) {
      break;
    }
    file = target.is_absolute() ? target : parent_directory(file) / target;
  }
  std::filesystem::path resolved;
  return resolve_file(file, resolved) == 0 ? resolved : path;
}

}  // namespace trellis::detail
