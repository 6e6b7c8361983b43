// Workgroup arg-max over one (value, index) candidate per invocation: the largest value, ties to the
// lower index (the CPU engine's and sampler's rule). subgroupMax/Min inside each subgroup, then the
// subgroups' winners through shared memory (any subgroup size, workgroups of at most 256).
// Every invocation must call it (it has barriers); every invocation gets the winner.
shared float wgArgV[256];
shared uint wgArgI[256];
void wg_argmax(inout float v, inout uint i) {
  float m = subgroupMax(v);
  uint mi = subgroupMin(v == m ? i : 0xFFFFFFFFu);
  if (subgroupElect()) { wgArgV[gl_SubgroupID] = m; wgArgI[gl_SubgroupID] = mi; }
  barrier();
  v = wgArgV[0]; i = wgArgI[0];
  for (uint s = 1u; s < gl_NumSubgroups; s++) if (wgArgV[s] > v || (wgArgV[s] == v && wgArgI[s] < i)) { v = wgArgV[s]; i = wgArgI[s]; }
  barrier();
}
