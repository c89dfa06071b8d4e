//go:build amd64 && !noasm

#include "textflag.h"

// SGEMM micro-kernels; see nnKernel in sgemm.go for the contract. Each sums
// an mr×nr tile of C in vector registers over kc steps, reading per step mr
// A values (broadcast to all lanes, one row at a time) and nr B values (the
// step's row of B, at b[off[p]]), then adds the tile to C, or, given start,
// stores row i of the tile plus start[i] in C without reading it. The k
// loop is unrolled four times. Registers: SI the A panel, DI B, R11 the
// offsets, R9 the step's offset, CX the steps left, DX the C row, R8 ldc
// in bytes, AX start (0 when nil).

#define KERNEL_ARGS \
	MOVQ kc+0(FP), CX;         \
	MOVQ ap_base+8(FP), SI;    \
	MOVQ b_base+32(FP), DI;    \
	MOVQ off_base+56(FP), R11; \
	MOVQ c_base+80(FP), DX;    \
	MOVQ ldc+104(FP), R8;      \
	SHLQ $2, R8;               \
	MOVQ start_base+112(FP), AX

// AVX2+FMA, 6×16: row i of the tile sums in Y(4+2i):Y(5+2i), 12
// accumulators; B takes Y0:Y1 and the broadcast A values Y2 and Y3, filling
// all 16 YMM registers.

// ROW16 adds the A value at ao(SI), broadcast into bc, times B in Y0:Y1 to
// lo:hi.
#define ROW16(ao, bc, lo, hi) \
	VBROADCASTSS ao(SI), bc; \
	VFMADD231PS  Y0, bc, lo; \
	VFMADD231PS  Y1, bc, hi

// STEP6x16 is one k step with A at ao(SI) and B at DI plus the offset at
// oo(R11), in floats.
#define STEP6x16(ao, oo) \
	MOVL    oo(R11), R9;         \
	VMOVUPS (DI)(R9*4), Y0;      \
	VMOVUPS 32(DI)(R9*4), Y1;    \
	ROW16(ao, Y2, Y4, Y5);       \
	ROW16((ao+4), Y3, Y6, Y7);   \
	ROW16((ao+8), Y2, Y8, Y9);   \
	ROW16((ao+12), Y3, Y10, Y11); \
	ROW16((ao+16), Y2, Y12, Y13); \
	ROW16((ao+20), Y3, Y14, Y15)

// ADDROW16 adds lo:hi to the 16 floats at DX and moves DX to the next row.
#define ADDROW16(lo, hi) \
	VADDPS  (DX), lo, lo;   \
	VMOVUPS lo, (DX);       \
	VADDPS  32(DX), hi, hi; \
	VMOVUPS hi, 32(DX);     \
	ADDQ    R8, DX

// SETROW stores lo:hi, two vectors of half bytes each, plus the start
// value at so(AX), broadcast into bc, in the row at DX, and moves DX to the
// next row: the store of a tile given start, for both kernels.
#define SETROW(so, bc, lo, hi, half) \
	VBROADCASTSS so(AX), bc;   \
	VADDPS       bc, lo, lo;   \
	VMOVUPS      lo, (DX);     \
	VADDPS       bc, hi, hi;   \
	VMOVUPS      hi, half(DX); \
	ADDQ         R8, DX

// func nnKernel6x16AVX2(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)
TEXT ·nnKernel6x16AVX2(SB), NOSPLIT, $0-136
	KERNEL_ARGS
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	CMPQ   CX, $4
	JLT    tail16

loop16:
	STEP6x16(0, 0)
	STEP6x16(24, 4)
	STEP6x16(48, 8)
	STEP6x16(72, 12)
	ADDQ $96, SI
	ADDQ $16, R11
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop16

tail16:
	TESTQ CX, CX
	JEQ   store16

step16:
	STEP6x16(0, 0)
	ADDQ $24, SI
	ADDQ $4, R11
	DECQ CX
	JNZ  step16

store16:
	TESTQ AX, AX
	JNE   set16
	ADDROW16(Y4, Y5)
	ADDROW16(Y6, Y7)
	ADDROW16(Y8, Y9)
	ADDROW16(Y10, Y11)
	ADDROW16(Y12, Y13)
	ADDROW16(Y14, Y15)
	VZEROUPPER
	RET

set16:
	SETROW(0, Y0, Y4, Y5, 32)
	SETROW(4, Y0, Y6, Y7, 32)
	SETROW(8, Y0, Y8, Y9, 32)
	SETROW(12, Y0, Y10, Y11, 32)
	SETROW(16, Y0, Y12, Y13, 32)
	SETROW(20, Y0, Y14, Y15, 32)
	VZEROUPPER
	RET

// AVX-512F, 8×32: row i of the tile sums in Z(16+2i):Z(17+2i), 16
// accumulators; B takes Z0:Z1 and the broadcast A values Z2 and Z3. Of the
// 8×32, 12×32 and 14×32 tiles (the last two with 24 and 28 accumulators)
// all ran within noise of each other on large products, and 8×32 was
// fastest on 64×3136×576; its 8 rows also divide the channel counts of
// ResNet-style convolutions (64…512), which leaves no edge tiles in M.

// ROW32 adds the A value at ao(SI), broadcast into bc, times B in Z0:Z1 to
// lo:hi.
#define ROW32(ao, bc, lo, hi) \
	VBROADCASTSS ao(SI), bc; \
	VFMADD231PS  Z0, bc, lo; \
	VFMADD231PS  Z1, bc, hi

// STEP8x32 is one k step with A at ao(SI) and B at DI plus the offset at
// oo(R11), in floats.
#define STEP8x32(ao, oo) \
	MOVL    oo(R11), R9;          \
	VMOVUPS (DI)(R9*4), Z0;       \
	VMOVUPS 64(DI)(R9*4), Z1;     \
	ROW32(ao, Z2, Z16, Z17);      \
	ROW32((ao+4), Z3, Z18, Z19);  \
	ROW32((ao+8), Z2, Z20, Z21);  \
	ROW32((ao+12), Z3, Z22, Z23); \
	ROW32((ao+16), Z2, Z24, Z25); \
	ROW32((ao+20), Z3, Z26, Z27); \
	ROW32((ao+24), Z2, Z28, Z29); \
	ROW32((ao+28), Z3, Z30, Z31)

// ADDROW32 adds lo:hi to the 32 floats at DX and moves DX to the next row.
#define ADDROW32(lo, hi) \
	VADDPS  (DX), lo, lo;   \
	VMOVUPS lo, (DX);       \
	VADDPS  64(DX), hi, hi; \
	VMOVUPS hi, 64(DX);     \
	ADDQ    R8, DX

// ZERO8x16 and ZERO8x32 clear the accumulators of an 8×16 tile (Z16–Z23)
// and of an 8×32 tile (Z16–Z31).
#define ZERO8x16 \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

#define ZERO8x32 \
	ZERO8x16;             \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z26, Z26, Z26; \
	VPXORD Z27, Z27, Z27; \
	VPXORD Z28, Z28, Z28; \
	VPXORD Z29, Z29, Z29; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31

// ADDTILE8x32 adds the 8×32 tile's rows to C's, from DX, ldc (bytes) in
// R8.
#define ADDTILE8x32 \
	ADDROW32(Z16, Z17); \
	ADDROW32(Z18, Z19); \
	ADDROW32(Z20, Z21); \
	ADDROW32(Z22, Z23); \
	ADDROW32(Z24, Z25); \
	ADDROW32(Z26, Z27); \
	ADDROW32(Z28, Z29); \
	ADDROW32(Z30, Z31)

// func nnKernel8x32AVX512(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)
TEXT ·nnKernel8x32AVX512(SB), NOSPLIT, $0-136
	KERNEL_ARGS
	ZERO8x32
	CMPQ   CX, $4
	JLT    tail32

loop32:
	STEP8x32(0, 0)
	STEP8x32(32, 4)
	STEP8x32(64, 8)
	STEP8x32(96, 12)
	ADDQ $128, SI
	ADDQ $16, R11
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop32

tail32:
	TESTQ CX, CX
	JEQ   store32

step32:
	STEP8x32(0, 0)
	ADDQ $32, SI
	ADDQ $4, R11
	DECQ CX
	JNZ  step32

store32:
	TESTQ AX, AX
	JNE   set32
	ADDTILE8x32
	VZEROUPPER
	RET

set32:
	SETROW(0, Z0, Z16, Z17, 64)
	SETROW(4, Z0, Z18, Z19, 64)
	SETROW(8, Z0, Z20, Z21, 64)
	SETROW(12, Z0, Z22, Z23, 64)
	SETROW(16, Z0, Z24, Z25, 64)
	SETROW(20, Z0, Z26, Z27, 64)
	SETROW(24, Z0, Z28, Z29, 64)
	SETROW(28, Z0, Z30, Z31, 64)
	VZEROUPPER
	RET

// AVX-512F, 8×16: the 8×32 kernel's half, for a product's last panel of
// at most 16 columns (169 = 5·32 + 9 columns at 13×13, 196 = 6·32 + 4 at
// 14×14), which the 8×32 tile computes at twice the multiplies. Row i sums
// in Z(16+i); B takes Z0 and the broadcast A values Z2 and Z3. It reads
// the first 16 of each B row's values, at the same offsets.

// ROW16Z adds the A value at ao(SI), broadcast into bc, times B in Z0 to
// acc.
#define ROW16Z(ao, bc, acc) \
	VBROADCASTSS ao(SI), bc; \
	VFMADD231PS  Z0, bc, acc

// STEP8x16 is one k step with A at ao(SI) and B at DI plus the offset at
// oo(R11), in floats.
#define STEP8x16(ao, oo) \
	MOVL    oo(R11), R9;       \
	VMOVUPS (DI)(R9*4), Z0;    \
	ROW16Z(ao, Z2, Z16);       \
	ROW16Z((ao+4), Z3, Z17);   \
	ROW16Z((ao+8), Z2, Z18);   \
	ROW16Z((ao+12), Z3, Z19);  \
	ROW16Z((ao+16), Z2, Z20);  \
	ROW16Z((ao+20), Z3, Z21);  \
	ROW16Z((ao+24), Z2, Z22);  \
	ROW16Z((ao+28), Z3, Z23)

// ADDROW16Z adds acc to the 16 floats at DX and moves DX to the next row.
#define ADDROW16Z(acc) \
	VADDPS  (DX), acc, acc; \
	VMOVUPS acc, (DX);      \
	ADDQ    R8, DX

// SETROW16Z stores acc plus the start value at so(AX), broadcast into Z0,
// in the row at DX, and moves DX to the next row.
#define SETROW16Z(so, acc) \
	VBROADCASTSS so(AX), Z0; \
	VADDPS       Z0, acc, acc; \
	VMOVUPS      acc, (DX);    \
	ADDQ         R8, DX

// func nnKernel8x16AVX512(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)
TEXT ·nnKernel8x16AVX512(SB), NOSPLIT, $0-136
	KERNEL_ARGS
	ZERO8x16
	CMPQ   CX, $4
	JLT    tail16z

loop16z:
	STEP8x16(0, 0)
	STEP8x16(32, 4)
	STEP8x16(64, 8)
	STEP8x16(96, 12)
	ADDQ $128, SI
	ADDQ $16, R11
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop16z

tail16z:
	TESTQ CX, CX
	JEQ   store16z

step16z:
	STEP8x16(0, 0)
	ADDQ $32, SI
	ADDQ $4, R11
	DECQ CX
	JNZ  step16z

store16z:
	TESTQ AX, AX
	JNE   set16z
	ADDROW16Z(Z16)
	ADDROW16Z(Z17)
	ADDROW16Z(Z18)
	ADDROW16Z(Z19)
	ADDROW16Z(Z20)
	ADDROW16Z(Z21)
	ADDROW16Z(Z22)
	ADDROW16Z(Z23)
	VZEROUPPER
	RET

set16z:
	SETROW16Z(0, Z16)
	SETROW16Z(4, Z17)
	SETROW16Z(8, Z18)
	SETROW16Z(12, Z19)
	SETROW16Z(16, Z20)
	SETROW16Z(20, Z21)
	SETROW16Z(24, Z22)
	SETROW16Z(28, Z23)
	VZEROUPPER
	RET

// AVX-512F, tall 8×32: the tile's eight rows are output positions of a
// convolution, its 32 columns output channels (cvTall). Row i broadcasts
// b[pos[i] + off[p]] at step p, read where it lies in the image (no
// packing: eight base registers, one per position, and the step's
// offset), times the step's 32 values of the packed Wᵀ panel at wp; it
// sets (set) or adds the 8×32 tile at c, rows ldc apart. Row i sums in
// Z(16+2i):Z(17+2i); B takes Z0:Z1 and the broadcasts Z2 and Z3.

// TROW32 adds the value at (base)(R9*4), broadcast into bc, times Z0:Z1
// to lo:hi.
#define TROW32(base, bc, lo, hi) \
	VBROADCASTSS (base)(R9*4), bc; \
	VFMADD231PS  Z0, bc, lo;       \
	VFMADD231PS  Z1, bc, hi

// TSTEP is one k step with its offset at oo(R11) and the panel's row at
// wo(DI).
#define TSTEP(oo, wo) \
	MOVL    oo(R11), R9;            \
	VMOVUPS wo(DI), Z0;             \
	VMOVUPS (wo+64)(DI), Z1;        \
	TROW32(AX, Z2, Z16, Z17);       \
	TROW32(BX, Z3, Z18, Z19);       \
	TROW32(DX, Z2, Z20, Z21);       \
	TROW32(R8, Z3, Z22, Z23);       \
	TROW32(R10, Z2, Z24, Z25);      \
	TROW32(R12, Z3, Z26, Z27);      \
	TROW32(R13, Z2, Z28, Z29);      \
	TROW32(SI, Z3, Z30, Z31)

// TBASE sets reg to the address of b[pos[i]], pos[i] at po(R9), b at SI.
#define TBASE(po, reg) \
	MOVLQSX po(R9), reg; \
	LEAQ    (SI)(reg*4), reg

// STROW32 stores lo:hi in the row at DX and moves DX to the next row.
#define STROW32(lo, hi) \
	VMOVUPS lo, (DX);   \
	VMOVUPS hi, 64(DX); \
	ADDQ    R8, DX

// func nnKernelTall8x32AVX512(kc int, b []float32, pos, off []int32, wp, c []float32, ldc int, set bool)
TEXT ·nnKernelTall8x32AVX512(SB), NOSPLIT, $0-137
	MOVQ   kc+0(FP), CX
	MOVQ   b_base+8(FP), SI
	MOVQ   pos_base+32(FP), R9
	MOVQ   off_base+56(FP), R11
	MOVQ   wp_base+80(FP), DI
	TBASE(0, AX)
	TBASE(4, BX)
	TBASE(8, DX)
	TBASE(12, R8)
	TBASE(16, R10)
	TBASE(20, R12)
	TBASE(24, R13)
	TBASE(28, R9)
	MOVQ   R9, SI
	ZERO8x32
	CMPQ   CX, $4
	JLT    ttail

tloop:
	TSTEP(0, 0)
	TSTEP(4, 128)
	TSTEP(8, 256)
	TSTEP(12, 384)
	ADDQ $16, R11
	ADDQ $512, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  tloop

ttail:
	TESTQ CX, CX
	JEQ   tstore

tstep:
	TSTEP(0, 0)
	ADDQ $4, R11
	ADDQ $128, DI
	DECQ CX
	JNZ  tstep

tstore:
	MOVQ    c_base+104(FP), DX
	MOVQ    ldc+128(FP), R8
	SHLQ    $2, R8
	MOVBQZX set+136(FP), AX
	TESTQ   AX, AX
	JNE     tset
	ADDTILE8x32
	VZEROUPPER
	RET

tset:
	STROW32(Z16, Z17)
	STROW32(Z18, Z19)
	STROW32(Z20, Z21)
	STROW32(Z22, Z23)
	STROW32(Z24, Z25)
	STROW32(Z26, Z27)
	STROW32(Z28, Z29)
	STROW32(Z30, Z31)
	VZEROUPPER
	RET

// Row kernels: one row of A, unpacked, times a packed B panel, for
// products of one to three rows, where a tile of 8 or 6 rows would be
// mostly zeros. Contract (nnKernel.row): c[j] += Σ_p a[p]·bp[p·nr+j] for
// j < nr and p < kc; len(a) ≥ kc, len(bp) ≥ nr·kc, len(c) ≥ nr. Two k
// steps at a time in two sets of accumulators, summed at the end.

// func nnRow32AVX512(kc int, a, bp, c []float32)
TEXT ·nnRow32AVX512(SB), NOSPLIT, $0-80
	MOVQ   kc+0(FP), CX
	MOVQ   a_base+8(FP), SI
	MOVQ   bp_base+32(FP), DI
	MOVQ   c_base+56(FP), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	CMPQ   CX, $2
	JLT    row32tail

row32loop:
	VBROADCASTSS (SI), Z4
	VBROADCASTSS 4(SI), Z5
	VFMADD231PS  (DI), Z4, Z0
	VFMADD231PS  64(DI), Z4, Z1
	VFMADD231PS  128(DI), Z5, Z2
	VFMADD231PS  192(DI), Z5, Z3
	ADDQ         $8, SI
	ADDQ         $256, DI
	SUBQ         $2, CX
	CMPQ         CX, $2
	JGE          row32loop

row32tail:
	TESTQ        CX, CX
	JEQ          row32store
	VBROADCASTSS (SI), Z4
	VFMADD231PS  (DI), Z4, Z0
	VFMADD231PS  64(DI), Z4, Z1

row32store:
	VADDPS  Z2, Z0, Z0
	VADDPS  Z3, Z1, Z1
	VADDPS  (DX), Z0, Z0
	VADDPS  64(DX), Z1, Z1
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VZEROUPPER
	RET

// func nnRow16AVX2(kc int, a, bp, c []float32)
TEXT ·nnRow16AVX2(SB), NOSPLIT, $0-80
	MOVQ   kc+0(FP), CX
	MOVQ   a_base+8(FP), SI
	MOVQ   bp_base+32(FP), DI
	MOVQ   c_base+56(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $2
	JLT    row16tail

row16loop:
	VBROADCASTSS (SI), Y4
	VBROADCASTSS 4(SI), Y5
	VFMADD231PS  (DI), Y4, Y0
	VFMADD231PS  32(DI), Y4, Y1
	VFMADD231PS  64(DI), Y5, Y2
	VFMADD231PS  96(DI), Y5, Y3
	ADDQ         $8, SI
	ADDQ         $128, DI
	SUBQ         $2, CX
	CMPQ         CX, $2
	JGE          row16loop

row16tail:
	TESTQ        CX, CX
	JEQ          row16store
	VBROADCASTSS (SI), Y4
	VFMADD231PS  (DI), Y4, Y0
	VFMADD231PS  32(DI), Y4, Y1

row16store:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VADDPS  (DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VZEROUPPER
	RET
