// The push block of the matvec family (matvec.glsl, mm.glsl, mv.glsl): kernels.ts's MATVEC_PUSH,
// field for field. aux: the router epilogue's nExpert (matvec_router), mv's rows a thread.
layout(push_constant) uniform PC {
  uint rows; uint n; uint rowBytes; uint xStride;
  uint yStride; uint flags; uint K; uint expertBytes;
  uint wOffset; uint xOffset; uint yOffset; uint nRows;
  uint upBytes; uint e0; uint ne; uint aux;
} pc;
