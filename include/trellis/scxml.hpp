#pragma once
/// @file
/// SCXML files (the trellis::scxml target, which links pugixml privately): `load` a chart from an
/// SCXML document with C++ bindings for its conditions and actions, `save` a chart as SCXML.

#include "trellis/scxml/bindings.hpp"
#include "trellis/scxml/errors.hpp"
#include "trellis/scxml/load.hpp"
#include "trellis/scxml/save.hpp"
