// One BK-value step of mmc.glsl's main loop, included there once per set of loads (a fragment,
// not a function: it reads and writes the kernel's cooperative-matrix accumulators, which a
// function would take as copies). Needs kS (the step's first value) and F_, the Fetch set holding
// step kS's loads; refills F_ with step kS + SETS·BK's.
{
    barrier();
    [[unroll]] for (uint q = 0u; q < DJ; q++) {
      uint r = dr + (NT / 4u) * q, g = kS / 8u + dg;
      STAGE_GROUP(w, s, wo[q], WS, SW)
#ifdef GLU
      STAGE_GROUP(u, su, wo[q] + pc.upBytes, US, SU)
#endif
    }
    if (xlive) {
      [[unroll]] for (uint i = 0u; i < XL; i += 4u) PUT(XS, xs * SK + (xk + i) / 4u, vec4(F_.x[i], F_.x[i + 1u], F_.x[i + 2u], F_.x[i + 3u]));
    }
    barrier();
    if (kS + SETS * BK < pc.n) load(kS + SETS * BK, wo, dg, xo, xlive, F_);
#ifdef SCALED
    // a scale span starts: its products go to fresh accumulators
    if (kS % DECODE_SCALED == 0u) [[unroll]] for (uint j = 0u; j < CB; j++) {
      accL[j] = ACC(0.0);
#ifdef GLU
      accUL[j] = ACC(0.0);
#endif
    }
#endif
    if (cb < nb) [[unroll]] for (uint kk = 0u; kk < BK / 4u; kk += CM / 4u) {
      // A: rows of W (row-major); B: the tokens' values (token-major = column-major K × N)
      coopMatLoad(a, WS, rb * CM * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#ifdef SCALED
      al = a * float16_t(1.0 / LO);
#elif defined(SPLIT)
      coopMatLoad(al, WSL, rb * CM * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#endif
#ifdef GLU
      coopMatLoad(au, US, rb * CM * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#ifdef SCALED
      aul = au * float16_t(1.0 / LO);
#else
      coopMatLoad(aul, USL, rb * CM * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#endif
#endif
      [[unroll]] for (uint j = 0u; j < CB; j++) if (cb + j < nb) {
        coopMatLoad(b, XS, (cb + j) * CM * SK + kk, SK, gl_CooperativeMatrixLayoutColumnMajor);
#ifdef SPLIT
        coopMatLoad(bl, XSL, (cb + j) * CM * SK + kk, SK, gl_CooperativeMatrixLayoutColumnMajor);
#endif
        PRODUCTS(a, al, acc, accL)
#ifdef GLU
        PRODUCTS(au, aul, accU, accUL)
#endif
      }
    }
#ifdef SCALED
    // the span's last step: its sums times the rows' scales (uniform in the workgroup: n is a
    // multiple of the span, the blocks' size)
    if ((kS + BK) % DECODE_SCALED == 0u) {
      APPLY_SCALES(SW, accL, acc)
#ifdef GLU
      APPLY_SCALES(SU, accUL, accU)
#endif
    }
#endif
}
