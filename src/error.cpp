// Anchors the exception classes' vtables in the library.

#include "trellis/error.hpp"
