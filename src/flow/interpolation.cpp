// Filled in by the part of issue 16 that owns it (see include/trellis/flow/interpolation.hpp).
