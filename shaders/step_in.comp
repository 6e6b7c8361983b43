#version 450
// step_in: the first dispatch of every recorded step: copies the host-written inputs (embedding
// rows XIN, step parameters PIN = {pos, T, …}, np words: one such row per session of a batched
// decode step, each at the device's binding alignment) into device-local X and PARAMS. On a discrete GPU
// host-visible memory sits across PCIe: the residual stream read and written by every norm, and
// the parameters read by every attention kernel, would otherwise cross the bus many times a step.
// Thread mapping: one float per thread. Dispatch: (⌈n / 256⌉, 1, 1).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer IB { float XIN[]; };
layout(std430, binding = 1) writeonly buffer XB { float X[]; };
layout(std430, binding = 2) readonly buffer PIB { uint PIN[]; };
layout(std430, binding = 3) writeonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint n; uint np; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.n) X[i] = XIN[i];
  if (i < pc.np) PARAMS[i] = PIN[i];
}
