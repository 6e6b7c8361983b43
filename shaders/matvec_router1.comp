#version 450
// matvec_router1: matvec_router with one output row per workgroup (257 workgroups for the router
// stack instead of 65). See matvec_router.comp and matvec.glsl.
#define TOKENS_N 1
#define ROWS_N 1u
#define EPILOGUE_ROUTER
#include "matvec.glsl"
