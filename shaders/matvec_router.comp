#version 450
// matvec_router: the decode router matvec (F32 router and shared-expert gate rows stacked) whose
// last workgroup to finish also routes the token (router.glsl), so routing costs no dispatch and
// no barrier level of its own. See matvec.glsl (EPILOGUE_ROUTER).
#define TOKENS_N 1
#define EPILOGUE_ROUTER
#include "matvec.glsl"
