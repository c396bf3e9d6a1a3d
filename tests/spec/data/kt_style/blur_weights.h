// Beside the kernel: the filter's radius and how two taps combine. Both compilers find this
// file only through the kernel's folder on their include path.
#pragma once

#define RADIUS 2

__device__ inline float tap(float value, float weight) { return value * weight; }
