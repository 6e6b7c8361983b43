#include "selftest.h"

#include <cmath>

#include "context.h"
#include "pipeline.h"

namespace q36 {

SelfTestResult runSelfTest(int deviceIndex, uint32_t n) {
  Context ctx(deviceIndex);
  Buffer x(ctx, n * sizeof(float), true), y(ctx, n * sizeof(float), true);
  auto* xp = static_cast<float*>(x.mapped());
  auto* yp = static_cast<float*>(y.mapped());
  for (uint32_t i = 0; i < n; i++) { xp[i] = 0.5f * i; yp[i] = 1.0f - i; }
  struct { uint32_t n; float a; } pc{n, 3.0f};
  Pipeline p(ctx, "selftest_axpy", 2, {}, sizeof(pc));
  Recorder rec(ctx, 4, 8);
  rec.dispatch(p, {{&x, 0, VK_WHOLE_SIZE}, {&y, 0, VK_WHOLE_SIZE}}, &pc, sizeof(pc), (n + 63) / 64);
  rec.submitAndWait();
  double maxErr = 0;
  for (uint32_t i = 0; i < n; i++) {
    double want = 3.0 * (0.5 * i) + (1.0 - i);
    maxErr = std::fmax(maxErr, std::fabs(yp[i] - want));
  }
  return {ctx.info().name, maxErr, n};
}

}  // namespace q36
