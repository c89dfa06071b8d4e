// PFDIST sets R13 to how far ahead of a row's load a pass over rows of DX
// bytes prefetches: the whole rows in 4 KiB, at least one. A pass that
// reads a plane's rows in order from memory (a 3×3 pool over a batch's
// 25 MB of activations) waits on each row without it: the hardware
// prefetchers do not run far enough ahead of several interleaved rows.
// AX and R11 are clobbered; DX is kept.
#define PFDIST \
	MOVQ  DX, R11;   \
	MOVQ  $4096, AX; \
	XORL  DX, DX;    \
	DIVQ  R11;       \
	CMPQ  AX, $1;    \
	JGE   2(PC);     \
	MOVQ  $1, AX;    \
	IMULQ R11, AX;   \
	MOVQ  AX, R13;   \
	MOVQ  R11, DX
