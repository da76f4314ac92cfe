#include "trellis/flow/source.hpp"

namespace trellis::flow {

std::string to_string(const SourcePos& at) {
  std::string text = at.file.empty() ? std::string("<graph>") : at.file;
  if (at.line > 0) {
    text += ':' + std::to_string(at.line);
    if (at.column > 0) text += ':' + std::to_string(at.column);
  }
  return text;
}

SourcePos advance(SourcePos at, std::string_view text, std::size_t offset) {
  if (offset > text.size()) offset = text.size();
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++at.column;  // a UTF-8 continuation byte is part of the character before it
    }
  }
  return at;
}

}  // namespace trellis::flow
