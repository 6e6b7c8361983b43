#pragma once
#include <string>

namespace q36 {

struct SelfTestResult {
  std::string device;
  double maxError;  // max |gpu − cpu| over the test vector
  uint32_t n;
};

// Runs the embedded selftest_axpy shader on `deviceIndex` and compares with the CPU.
SelfTestResult runSelfTest(int deviceIndex, uint32_t n);

}  // namespace q36
