#pragma once
// The GPUs present, read through the driver into the one device description
// (src/target/device_info.h).

#include <cstdint>
#include <string>
#include <vector>

#include "src/target/device_info.h"

namespace cutune {

// Every device the driver reports, in ordinal order; empty when no driver or device exists.
std::vector<DeviceInfo> list_devices();

// The first detected device's arch, else "sm_90".
std::string default_arch();

}  // namespace cutune
