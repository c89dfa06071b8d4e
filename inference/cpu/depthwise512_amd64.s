//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"

// The AVX-512 loops of depthwise convolution (AVX-512F and VL):
// dwRowsAVX512, dwSplitRowsAVX512 and dwCopyRowsAVX512; see
// depthwise_amd64.go for the contracts. Tails go through K-masked loads,
// FMAs and stores, which do not touch the masked-off elements.

// splitidx<> holds VPERMT2PS's indices of the even elements of two ZMM
// registers (0, 2, …, 30), then of the odd ones (1, 3, …, 31).
DATA splitidx<>+0(SB)/4, $0
DATA splitidx<>+4(SB)/4, $2
DATA splitidx<>+8(SB)/4, $4
DATA splitidx<>+12(SB)/4, $6
DATA splitidx<>+16(SB)/4, $8
DATA splitidx<>+20(SB)/4, $10
DATA splitidx<>+24(SB)/4, $12
DATA splitidx<>+28(SB)/4, $14
DATA splitidx<>+32(SB)/4, $16
DATA splitidx<>+36(SB)/4, $18
DATA splitidx<>+40(SB)/4, $20
DATA splitidx<>+44(SB)/4, $22
DATA splitidx<>+48(SB)/4, $24
DATA splitidx<>+52(SB)/4, $26
DATA splitidx<>+56(SB)/4, $28
DATA splitidx<>+60(SB)/4, $30
DATA splitidx<>+64(SB)/4, $1
DATA splitidx<>+68(SB)/4, $3
DATA splitidx<>+72(SB)/4, $5
DATA splitidx<>+76(SB)/4, $7
DATA splitidx<>+80(SB)/4, $9
DATA splitidx<>+84(SB)/4, $11
DATA splitidx<>+88(SB)/4, $13
DATA splitidx<>+92(SB)/4, $15
DATA splitidx<>+96(SB)/4, $17
DATA splitidx<>+100(SB)/4, $19
DATA splitidx<>+104(SB)/4, $21
DATA splitidx<>+108(SB)/4, $23
DATA splitidx<>+112(SB)/4, $25
DATA splitidx<>+116(SB)/4, $27
DATA splitidx<>+120(SB)/4, $29
DATA splitidx<>+124(SB)/4, $31
GLOBL splitidx<>(SB), RODATA|NOPTR, $128

// dwRowsAVX512's registers: R10–R15, AX, BX the input rows of a group
// at the block (rows past the group's last repeat it), SI the block's
// first output row, CX the columns left, R8 the end of the taps, DI the
// tap counting up to 0 and then the output row being stored, R9 w, DX
// the tap's weight index and then its offset (and n in bytes while
// storing), K1 the block's mask, Z16 (Y16) the tap's weight, Z31 b.
// Locals: the rows left, the rows in the group, n and xs in bytes, and
// the group's first output and input rows.
#define LEFT left-8(SP)
#define GROUP group-16(SP)
#define N4 n4-24(SP)
#define XS4 xs4-32(SP)
#define YROW yrow-40(SP)
#define XROW xrow-48(SP)

// FMA8 adds the weight W times the tap's input to the eight rows'
// accumulators, under K1; FMA4 to the first four.
#define FMA4(W, A0, A1, A2, A3) \
	VFMADD231PS (R10)(DX*4), W, K1, A0; \
	VFMADD231PS (R11)(DX*4), W, K1, A1; \
	VFMADD231PS (R12)(DX*4), W, K1, A2; \
	VFMADD231PS (R13)(DX*4), W, K1, A3

#define FMA8(W, A0, A1, A2, A3, A4, A5, A6, A7) \
	FMA4(W, A0, A1, A2, A3); \
	VFMADD231PS (R14)(DX*4), W, K1, A4; \
	VFMADD231PS (R15)(DX*4), W, K1, A5; \
	VFMADD231PS (AX)(DX*4), W, K1, A6; \
	VFMADD231PS (BX)(DX*4), W, K1, A7

// CLAMP clamps accumulator A to [LO, HI] (Z29 and Z30, or Y29 and Y30:
// the loops' lo and hi), NaN kept: VMAXPS and VMINPS return their second
// Intel operand, A, when either is NaN, as clamps does. At lo = −Inf and
// hi = +Inf it leaves A as it is.
#define CLAMP(A, LO, HI) \
	VMAXPS A, LO, A; \
	VMINPS A, HI, A

// STORE clamps accumulator A and stores it to the next output row (DI
// advanced by DX) if the group has more than ROW rows, else jumps to
// DONE.
#define STORE(ROW, A, LO, HI, DONE) \
	CMPQ    GROUP, $ROW; \
	JLE     DONE; \
	ADDQ    DX, DI; \
	CLAMP(A, LO, HI); \
	VMOVUPS A, K1, (DI)

// func dwRowsAVX512(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b, lo, hi float32)
// Rows in groups of eight (of four when four or fewer are left), each
// group in blocks of 16 columns, one ZMM accumulator a row, with every
// tap added before the block is stored; a last block of 8 or fewer
// columns in YMM registers, which CPUs that split ZMM operations in two
// (Zen 4) run at twice the rate (measured under dwRowsSharedAVX512). The
// rows of a short group past its last are computed again from the last
// row's input and not stored. Each tap loads its input: on Zen 4 a ZMM
// load at a shifted column splits a cache line, and this loop runs at
// about half the FMA rate that dwRowsSharedAVX512 reaches.
TEXT ·dwRowsAVX512(SB), NOSPLIT, $48-132
	MOVQ         rows+24(FP), CX
	MOVQ         CX, LEFT
	MOVQ         n+32(FP), DX
	SHLQ         $2, DX
	MOVQ         DX, N4
	MOVQ         xs+64(FP), DX
	SHLQ         $2, DX
	MOVQ         DX, XS4
	MOVQ         y_base+0(FP), DX
	MOVQ         DX, YROW
	MOVQ         x_base+40(FP), DX
	MOVQ         DX, XROW
	MOVQ         taps_len+80(FP), DX
	SHLQ         $4, DX
	MOVQ         taps_base+72(FP), R8
	ADDQ         DX, R8
	MOVQ         w_base+96(FP), R9
	VBROADCASTSS b+120(FP), Z31
	VBROADCASTSS lo+124(FP), Z29
	VBROADCASTSS hi+128(FP), Z30

group:
	MOVQ    LEFT, CX
	CMPQ    CX, $0
	JLE     done
	CMPQ    CX, $4
	JLE     group4
	MOVQ    $8, DX
	CMPQ    CX, DX
	CMOVQGT DX, CX
	MOVQ    CX, GROUP

	// Rows 1–4 are in the group (it has five or more); rows 5–7 step
	// by XS4 while they are, by 0 after.
	MOVQ    XROW, R10
	MOVQ    XS4, DX
	XORL    DI, DI
	LEAQ    (R10)(DX*1), R11
	LEAQ    (R11)(DX*1), R12
	LEAQ    (R12)(DX*1), R13
	LEAQ    (R13)(DX*1), R14
	CMPQ    CX, $5
	CMOVQLE DI, DX
	LEAQ    (R14)(DX*1), R15
	CMPQ    CX, $6
	CMOVQLE DI, DX
	LEAQ    (R15)(DX*1), AX
	CMPQ    CX, $7
	CMOVQLE DI, DX
	LEAQ    (AX)(DX*1), BX
	MOVQ    YROW, SI
	MOVQ    n+32(FP), CX

g8block:
	CMPQ CX, $8
	JLE  g8ymm
	MOVL $0xffff, DX
	CMPQ CX, $16
	JGE  g8mask
	MOVL $1, DX
	SHLL CX, DX
	DECL DX

g8mask:
	KMOVW   DX, K1
	VMOVAPS Z31, Z0
	VMOVAPS Z31, Z1
	VMOVAPS Z31, Z2
	VMOVAPS Z31, Z3
	VMOVAPS Z31, Z4
	VMOVAPS Z31, Z5
	VMOVAPS Z31, Z6
	VMOVAPS Z31, Z7
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g8tap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Z16
	MOVQ         (R8)(DI*8), DX
	FMA8(Z16, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ         $2, DI
	JNZ          g8tap
	MOVQ         SI, DI
	MOVQ         N4, DX
	CLAMP(Z0, Z29, Z30)
	VMOVUPS      Z0, K1, (DI)
	STORE(1, Z1, Z29, Z30, g8stored)
	STORE(2, Z2, Z29, Z30, g8stored)
	STORE(3, Z3, Z29, Z30, g8stored)
	STORE(4, Z4, Z29, Z30, g8stored)
	STORE(5, Z5, Z29, Z30, g8stored)
	STORE(6, Z6, Z29, Z30, g8stored)
	STORE(7, Z7, Z29, Z30, g8stored)

g8stored:
	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $64, R15
	ADDQ $64, AX
	ADDQ $64, BX
	SUBQ $16, CX
	JG   g8block
	JMP  next8

g8ymm:
	MOVL    $1, DX
	SHLL    CX, DX
	DECL    DX
	KMOVW   DX, K1
	VMOVAPS Y31, Y0
	VMOVAPS Y31, Y1
	VMOVAPS Y31, Y2
	VMOVAPS Y31, Y3
	VMOVAPS Y31, Y4
	VMOVAPS Y31, Y5
	VMOVAPS Y31, Y6
	VMOVAPS Y31, Y7
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g8ytap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Y16
	MOVQ         (R8)(DI*8), DX
	FMA8(Y16, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ         $2, DI
	JNZ          g8ytap
	MOVQ         SI, DI
	MOVQ         N4, DX
	CLAMP(Y0, Y29, Y30)
	VMOVUPS      Y0, K1, (DI)
	STORE(1, Y1, Y29, Y30, next8)
	STORE(2, Y2, Y29, Y30, next8)
	STORE(3, Y3, Y29, Y30, next8)
	STORE(4, Y4, Y29, Y30, next8)
	STORE(5, Y5, Y29, Y30, next8)
	STORE(6, Y6, Y29, Y30, next8)
	STORE(7, Y7, Y29, Y30, next8)

next8:
	MOVQ N4, DX
	SHLQ $3, DX
	ADDQ DX, YROW
	MOVQ XS4, DX
	SHLQ $3, DX
	ADDQ DX, XROW
	SUBQ $8, LEFT
	JMP  group

	// One to four rows left, CX of them: rows past the last repeat it.
group4:
	MOVQ    CX, GROUP
	MOVQ    XROW, R10
	MOVQ    XS4, DX
	XORL    DI, DI
	CMPQ    CX, $1
	CMOVQLE DI, DX
	LEAQ    (R10)(DX*1), R11
	CMPQ    CX, $2
	CMOVQLE DI, DX
	LEAQ    (R11)(DX*1), R12
	CMPQ    CX, $3
	CMOVQLE DI, DX
	LEAQ    (R12)(DX*1), R13
	MOVQ    YROW, SI
	MOVQ    n+32(FP), CX

g4block:
	CMPQ CX, $8
	JLE  g4ymm
	MOVL $0xffff, DX
	CMPQ CX, $16
	JGE  g4mask
	MOVL $1, DX
	SHLL CX, DX
	DECL DX

g4mask:
	KMOVW   DX, K1
	VMOVAPS Z31, Z0
	VMOVAPS Z31, Z1
	VMOVAPS Z31, Z2
	VMOVAPS Z31, Z3
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g4tap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Z16
	MOVQ         (R8)(DI*8), DX
	FMA4(Z16, Z0, Z1, Z2, Z3)
	ADDQ         $2, DI
	JNZ          g4tap
	MOVQ         SI, DI
	MOVQ         N4, DX
	CLAMP(Z0, Z29, Z30)
	VMOVUPS      Z0, K1, (DI)
	STORE(1, Z1, Z29, Z30, g4stored)
	STORE(2, Z2, Z29, Z30, g4stored)
	STORE(3, Z3, Z29, Z30, g4stored)

g4stored:
	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	SUBQ $16, CX
	JG   g4block
	JMP  done

g4ymm:
	MOVL    $1, DX
	SHLL    CX, DX
	DECL    DX
	KMOVW   DX, K1
	VMOVAPS Y31, Y0
	VMOVAPS Y31, Y1
	VMOVAPS Y31, Y2
	VMOVAPS Y31, Y3
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g4ytap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Y16
	MOVQ         (R8)(DI*8), DX
	FMA4(Y16, Y0, Y1, Y2, Y3)
	ADDQ         $2, DI
	JNZ          g4ytap
	MOVQ         SI, DI
	MOVQ         N4, DX
	CLAMP(Y0, Y29, Y30)
	VMOVUPS      Y0, K1, (DI)
	STORE(1, Y1, Y29, Y30, done)
	STORE(2, Y2, Y29, Y30, done)
	STORE(3, Y3, Y29, Y30, done)

done:
	VZEROUPPER
	RET

// TAPWEIGHT broadcasts into reg the weight of the tap whose dwTap lies
// off−8 bytes past R8: off(R8) is its w, an index into the weights at R9.
#define TAPWEIGHT(off, reg) \
	MOVL         off(R8), DX; \
	VBROADCASTSS (R9)(DX*4), reg

// The input rows of dwRowsSharedAVX512's group at a tap: ROWi is row i,
// from R13 (rows 0–8), R14 (9–17) or R15 (18), with AX, BX, R10 and R11
// one, three, five and seven rows.
#define ROW0 (R13)
#define ROW1 (R13)(AX*1)
#define ROW2 (R13)(AX*2)
#define ROW3 (R13)(BX*1)
#define ROW4 (R13)(AX*4)
#define ROW5 (R13)(R10*1)
#define ROW6 (R13)(BX*2)
#define ROW7 (R13)(R11*1)
#define ROW8 (R13)(AX*8)
#define ROW9 (R14)
#define ROW10 (R14)(AX*1)
#define ROW11 (R14)(AX*2)
#define ROW12 (R14)(BX*1)
#define ROW13 (R14)(AX*4)
#define ROW14 (R14)(R10*1)
#define ROW15 (R14)(BX*2)
#define ROW16 (R14)(R11*1)
#define ROW17 (R14)(AX*8)
#define ROW18 (R15)

// DWLD loads an input row's block under K1, zeros past the mask; DWFMA
// adds its product with a weight to an accumulator.
#define DWLD(ROW, V) VMOVUPS.Z ROW, K1, V
#define DWFMA(V, W, A) VFMADD231PS V, W, A

// S1K3 adds a tap column of a kernel 3 high at stride 1 down columns:
// input row i to output row j with weight W(i−j).
#define S1K3(V, W0, W1, W2, A0, A1, A2, A3, A4, A5, A6, A7) \
	DWLD(ROW0, V); DWFMA(V, W0, A0); \
	DWLD(ROW1, V); DWFMA(V, W1, A0); DWFMA(V, W0, A1); \
	DWLD(ROW2, V); DWFMA(V, W2, A0); DWFMA(V, W1, A1); DWFMA(V, W0, A2); \
	DWLD(ROW3, V); DWFMA(V, W2, A1); DWFMA(V, W1, A2); DWFMA(V, W0, A3); \
	DWLD(ROW4, V); DWFMA(V, W2, A2); DWFMA(V, W1, A3); DWFMA(V, W0, A4); \
	DWLD(ROW5, V); DWFMA(V, W2, A3); DWFMA(V, W1, A4); DWFMA(V, W0, A5); \
	DWLD(ROW6, V); DWFMA(V, W2, A4); DWFMA(V, W1, A5); DWFMA(V, W0, A6); \
	DWLD(ROW7, V); DWFMA(V, W2, A5); DWFMA(V, W1, A6); DWFMA(V, W0, A7); \
	DWLD(ROW8, V); DWFMA(V, W2, A6); DWFMA(V, W1, A7); \
	DWLD(ROW9, V); DWFMA(V, W2, A7)

// S1K5 adds a tap column of a kernel 5 high at stride 1 down columns:
// input row i to output row j with weight W(i−j).
#define S1K5(V, W0, W1, W2, W3, W4, A0, A1, A2, A3, A4, A5, A6, A7) \
	DWLD(ROW0, V); DWFMA(V, W0, A0); \
	DWLD(ROW1, V); DWFMA(V, W1, A0); DWFMA(V, W0, A1); \
	DWLD(ROW2, V); DWFMA(V, W2, A0); DWFMA(V, W1, A1); DWFMA(V, W0, A2); \
	DWLD(ROW3, V); DWFMA(V, W3, A0); DWFMA(V, W2, A1); DWFMA(V, W1, A2); DWFMA(V, W0, A3); \
	DWLD(ROW4, V); DWFMA(V, W4, A0); DWFMA(V, W3, A1); DWFMA(V, W2, A2); DWFMA(V, W1, A3); DWFMA(V, W0, A4); \
	DWLD(ROW5, V); DWFMA(V, W4, A1); DWFMA(V, W3, A2); DWFMA(V, W2, A3); DWFMA(V, W1, A4); DWFMA(V, W0, A5); \
	DWLD(ROW6, V); DWFMA(V, W4, A2); DWFMA(V, W3, A3); DWFMA(V, W2, A4); DWFMA(V, W1, A5); DWFMA(V, W0, A6); \
	DWLD(ROW7, V); DWFMA(V, W4, A3); DWFMA(V, W3, A4); DWFMA(V, W2, A5); DWFMA(V, W1, A6); DWFMA(V, W0, A7); \
	DWLD(ROW8, V); DWFMA(V, W4, A4); DWFMA(V, W3, A5); DWFMA(V, W2, A6); DWFMA(V, W1, A7); \
	DWLD(ROW9, V); DWFMA(V, W4, A5); DWFMA(V, W3, A6); DWFMA(V, W2, A7); \
	DWLD(ROW10, V); DWFMA(V, W4, A6); DWFMA(V, W3, A7); \
	DWLD(ROW11, V); DWFMA(V, W4, A7)

// S1K7 adds a tap column of a kernel 7 high at stride 1 down columns:
// input row i to output row j with weight W(i−j).
#define S1K7(V, W0, W1, W2, W3, W4, W5, W6, A0, A1, A2, A3, A4, A5, A6, A7) \
	DWLD(ROW0, V); DWFMA(V, W0, A0); \
	DWLD(ROW1, V); DWFMA(V, W1, A0); DWFMA(V, W0, A1); \
	DWLD(ROW2, V); DWFMA(V, W2, A0); DWFMA(V, W1, A1); DWFMA(V, W0, A2); \
	DWLD(ROW3, V); DWFMA(V, W3, A0); DWFMA(V, W2, A1); DWFMA(V, W1, A2); DWFMA(V, W0, A3); \
	DWLD(ROW4, V); DWFMA(V, W4, A0); DWFMA(V, W3, A1); DWFMA(V, W2, A2); DWFMA(V, W1, A3); DWFMA(V, W0, A4); \
	DWLD(ROW5, V); DWFMA(V, W5, A0); DWFMA(V, W4, A1); DWFMA(V, W3, A2); DWFMA(V, W2, A3); DWFMA(V, W1, A4); DWFMA(V, W0, A5); \
	DWLD(ROW6, V); DWFMA(V, W6, A0); DWFMA(V, W5, A1); DWFMA(V, W4, A2); DWFMA(V, W3, A3); DWFMA(V, W2, A4); DWFMA(V, W1, A5); DWFMA(V, W0, A6); \
	DWLD(ROW7, V); DWFMA(V, W6, A1); DWFMA(V, W5, A2); DWFMA(V, W4, A3); DWFMA(V, W3, A4); DWFMA(V, W2, A5); DWFMA(V, W1, A6); DWFMA(V, W0, A7); \
	DWLD(ROW8, V); DWFMA(V, W6, A2); DWFMA(V, W5, A3); DWFMA(V, W4, A4); DWFMA(V, W3, A5); DWFMA(V, W2, A6); DWFMA(V, W1, A7); \
	DWLD(ROW9, V); DWFMA(V, W6, A3); DWFMA(V, W5, A4); DWFMA(V, W4, A5); DWFMA(V, W3, A6); DWFMA(V, W2, A7); \
	DWLD(ROW10, V); DWFMA(V, W6, A4); DWFMA(V, W5, A5); DWFMA(V, W4, A6); DWFMA(V, W3, A7); \
	DWLD(ROW11, V); DWFMA(V, W6, A5); DWFMA(V, W5, A6); DWFMA(V, W4, A7); \
	DWLD(ROW12, V); DWFMA(V, W6, A6); DWFMA(V, W5, A7); \
	DWLD(ROW13, V); DWFMA(V, W6, A7)

// S2K3 adds a tap column of a kernel 3 high at stride 2 down columns:
// input row i to output row j with weight W(i−2·j).
#define S2K3(V, W0, W1, W2, A0, A1, A2, A3, A4, A5, A6, A7) \
	DWLD(ROW0, V); DWFMA(V, W0, A0); \
	DWLD(ROW1, V); DWFMA(V, W1, A0); \
	DWLD(ROW2, V); DWFMA(V, W2, A0); DWFMA(V, W0, A1); \
	DWLD(ROW3, V); DWFMA(V, W1, A1); \
	DWLD(ROW4, V); DWFMA(V, W2, A1); DWFMA(V, W0, A2); \
	DWLD(ROW5, V); DWFMA(V, W1, A2); \
	DWLD(ROW6, V); DWFMA(V, W2, A2); DWFMA(V, W0, A3); \
	DWLD(ROW7, V); DWFMA(V, W1, A3); \
	DWLD(ROW8, V); DWFMA(V, W2, A3); DWFMA(V, W0, A4); \
	DWLD(ROW9, V); DWFMA(V, W1, A4); \
	DWLD(ROW10, V); DWFMA(V, W2, A4); DWFMA(V, W0, A5); \
	DWLD(ROW11, V); DWFMA(V, W1, A5); \
	DWLD(ROW12, V); DWFMA(V, W2, A5); DWFMA(V, W0, A6); \
	DWLD(ROW13, V); DWFMA(V, W1, A6); \
	DWLD(ROW14, V); DWFMA(V, W2, A6); DWFMA(V, W0, A7); \
	DWLD(ROW15, V); DWFMA(V, W1, A7); \
	DWLD(ROW16, V); DWFMA(V, W2, A7)

// S2K5 adds a tap column of a kernel 5 high at stride 2 down columns:
// input row i to output row j with weight W(i−2·j).
#define S2K5(V, W0, W1, W2, W3, W4, A0, A1, A2, A3, A4, A5, A6, A7) \
	DWLD(ROW0, V); DWFMA(V, W0, A0); \
	DWLD(ROW1, V); DWFMA(V, W1, A0); \
	DWLD(ROW2, V); DWFMA(V, W2, A0); DWFMA(V, W0, A1); \
	DWLD(ROW3, V); DWFMA(V, W3, A0); DWFMA(V, W1, A1); \
	DWLD(ROW4, V); DWFMA(V, W4, A0); DWFMA(V, W2, A1); DWFMA(V, W0, A2); \
	DWLD(ROW5, V); DWFMA(V, W3, A1); DWFMA(V, W1, A2); \
	DWLD(ROW6, V); DWFMA(V, W4, A1); DWFMA(V, W2, A2); DWFMA(V, W0, A3); \
	DWLD(ROW7, V); DWFMA(V, W3, A2); DWFMA(V, W1, A3); \
	DWLD(ROW8, V); DWFMA(V, W4, A2); DWFMA(V, W2, A3); DWFMA(V, W0, A4); \
	DWLD(ROW9, V); DWFMA(V, W3, A3); DWFMA(V, W1, A4); \
	DWLD(ROW10, V); DWFMA(V, W4, A3); DWFMA(V, W2, A4); DWFMA(V, W0, A5); \
	DWLD(ROW11, V); DWFMA(V, W3, A4); DWFMA(V, W1, A5); \
	DWLD(ROW12, V); DWFMA(V, W4, A4); DWFMA(V, W2, A5); DWFMA(V, W0, A6); \
	DWLD(ROW13, V); DWFMA(V, W3, A5); DWFMA(V, W1, A6); \
	DWLD(ROW14, V); DWFMA(V, W4, A5); DWFMA(V, W2, A6); DWFMA(V, W0, A7); \
	DWLD(ROW15, V); DWFMA(V, W3, A6); DWFMA(V, W1, A7); \
	DWLD(ROW16, V); DWFMA(V, W4, A6); DWFMA(V, W2, A7); \
	DWLD(ROW17, V); DWFMA(V, W3, A7); \
	DWLD(ROW18, V); DWFMA(V, W4, A7)

// func dwRowsSharedAVX512(y []float32, rows, n int, x []float32, rs, s, kh int, taps []dwTap, w []float32, b, lo, hi float32)
// Output rows in groups of eight, each group in blocks of 16 columns (8
// or fewer in YMM registers, as in dwRowsAVX512), one accumulator a row.
// For each column tap the block loads each input row of the group once,
// adding it with the column's kh weights (in registers) to every output
// row that reads it: (8−1)·s + kh loads for 8·kh FMAs. A short group's
// rows past its last read input rows past the plane's (up to 7·s of them)
// and are not stored. Registers: AX, BX, R10, R11 and R12 one, three,
// five, seven and nine input rows in bytes; R13–R15 the group's input at
// the column; SI its input at the block, CX the columns left; R8 the
// column's first tap, R9 w, DX a tap's offset or weight index (n in bytes
// while storing), DI the output row being stored; K1 the block's mask,
// Z16 (Y16) an input row, Z17–Z23 (Y17–Y23) the column's weights, Z31 b.
// Locals as in dwRowsAVX512, with the variant (kh, plus 8 at stride 2),
// the input rows of a group in bytes, the block's first output row and
// the end of the taps.
//
// Measured on Zen 4 (EPYC, one thread), ns a plane, this loop /
// dwRowsAVX512 / dwRowsAVX2: 112×112 outputs, 3×3 kernel 2331 / 3920 /
// 4394; 28×28, 5×5 453 / 705 / 857; 14×14, 3×3 60 / 90 / 135; 7×7, 5×5
// 46 / 60 / 88; at stride 2 down columns, 56×56, 3×3 821 / 1018. Blocks
// of 8 or fewer columns in YMM rather than ZMM registers: 7×7, 5×5 46
// against 75; 7×7, 3×3 27 against 44; 56×56, 3×3 630 against 670.
#define KIND kind-56(SP)
#define XSTEP xstep-64(SP)
#define YCOL ycol-72(SP)
#define TEND tend-80(SP)

TEXT ·dwRowsSharedAVX512(SB), NOSPLIT, $80-148
	MOVQ         rows+24(FP), CX
	MOVQ         CX, LEFT
	MOVQ         n+32(FP), DX
	SHLQ         $2, DX
	MOVQ         DX, N4
	MOVQ         rs+64(FP), AX
	SHLQ         $2, AX
	LEAQ         (AX)(AX*2), BX
	LEAQ         (AX)(AX*4), R10
	LEAQ         (BX)(AX*4), R11
	LEAQ         (AX)(AX*8), R12
	MOVQ         s+72(FP), CX
	MOVQ         CX, DX
	IMULQ        AX, DX
	SHLQ         $3, DX
	MOVQ         DX, XSTEP
	DECQ         CX
	SHLQ         $3, CX
	ADDQ         kh+80(FP), CX
	MOVQ         CX, KIND
	MOVQ         y_base+0(FP), DX
	MOVQ         DX, YROW
	MOVQ         x_base+40(FP), DX
	MOVQ         DX, XROW
	MOVQ         taps_len+96(FP), DX
	SHLQ         $4, DX
	MOVQ         taps_base+88(FP), R8
	ADDQ         DX, R8
	MOVQ         R8, TEND
	MOVQ         w_base+112(FP), R9
	VBROADCASTSS b+136(FP), Z31
	VBROADCASTSS lo+140(FP), Z29
	VBROADCASTSS hi+144(FP), Z30

sharedgroup:
	MOVQ    LEFT, CX
	CMPQ    CX, $0
	JLE     shareddone
	MOVQ    $8, DX
	CMPQ    CX, DX
	CMOVQGT DX, CX
	MOVQ    CX, GROUP
	MOVQ    XROW, SI
	MOVQ    YROW, DX
	MOVQ    DX, YCOL
	MOVQ    n+32(FP), CX

sharedblock:
	CMPQ CX, $16
	MOVL $0xffff, DX
	JGE  sharedmask
	MOVL $1, DX
	SHLL CX, DX
	DECL DX

sharedmask:
	KMOVW   DX, K1
	VMOVAPS Z31, Z0
	VMOVAPS Z31, Z1
	VMOVAPS Z31, Z2
	VMOVAPS Z31, Z3
	VMOVAPS Z31, Z4
	VMOVAPS Z31, Z5
	VMOVAPS Z31, Z6
	VMOVAPS Z31, Z7
	MOVQ    taps_base+88(FP), R8
	MOVQ    KIND, DX
	CMPQ    CX, $8
	JLE     sharedymm
	CMPQ    DX, $3
	JEQ     zs1k3
	CMPQ    DX, $5
	JEQ     zs1k5
	CMPQ    DX, $7
	JEQ     zs1k7
	CMPQ    DX, $11
	JEQ     zs2k3
	JMP     zs2k5

sharedymm:
	CMPQ DX, $3
	JEQ  ys1k3
	CMPQ DX, $5
	JEQ  ys1k5
	CMPQ DX, $7
	JEQ  ys1k7
	CMPQ DX, $11
	JEQ  ys2k3
	JMP  ys2k5

zs1k3:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Z17)
	TAPWEIGHT(24, Z18)
	TAPWEIGHT(40, Z19)
	S1K3(Z16, Z17, Z18, Z19, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ         $48, R8
	CMPQ         R8, TEND
	JNE          zs1k3
	JMP          sharedstore

zs1k5:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Z17)
	TAPWEIGHT(24, Z18)
	TAPWEIGHT(40, Z19)
	TAPWEIGHT(56, Z20)
	TAPWEIGHT(72, Z21)
	S1K5(Z16, Z17, Z18, Z19, Z20, Z21, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ         $80, R8
	CMPQ         R8, TEND
	JNE          zs1k5
	JMP          sharedstore

zs1k7:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Z17)
	TAPWEIGHT(24, Z18)
	TAPWEIGHT(40, Z19)
	TAPWEIGHT(56, Z20)
	TAPWEIGHT(72, Z21)
	TAPWEIGHT(88, Z22)
	TAPWEIGHT(104, Z23)
	S1K7(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ         $112, R8
	CMPQ         R8, TEND
	JNE          zs1k7
	JMP          sharedstore

zs2k3:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Z17)
	TAPWEIGHT(24, Z18)
	TAPWEIGHT(40, Z19)
	S2K3(Z16, Z17, Z18, Z19, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ         $48, R8
	CMPQ         R8, TEND
	JNE          zs2k3
	JMP          sharedstore

zs2k5:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	LEAQ         (R14)(R12*1), R15
	TAPWEIGHT(8, Z17)
	TAPWEIGHT(24, Z18)
	TAPWEIGHT(40, Z19)
	TAPWEIGHT(56, Z20)
	TAPWEIGHT(72, Z21)
	S2K5(Z16, Z17, Z18, Z19, Z20, Z21, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ         $80, R8
	CMPQ         R8, TEND
	JNE          zs2k5
	JMP          sharedstore

ys1k3:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Y17)
	TAPWEIGHT(24, Y18)
	TAPWEIGHT(40, Y19)
	S1K3(Y16, Y17, Y18, Y19, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ         $48, R8
	CMPQ         R8, TEND
	JNE          ys1k3
	JMP          sharedstore

ys1k5:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Y17)
	TAPWEIGHT(24, Y18)
	TAPWEIGHT(40, Y19)
	TAPWEIGHT(56, Y20)
	TAPWEIGHT(72, Y21)
	S1K5(Y16, Y17, Y18, Y19, Y20, Y21, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ         $80, R8
	CMPQ         R8, TEND
	JNE          ys1k5
	JMP          sharedstore

ys1k7:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Y17)
	TAPWEIGHT(24, Y18)
	TAPWEIGHT(40, Y19)
	TAPWEIGHT(56, Y20)
	TAPWEIGHT(72, Y21)
	TAPWEIGHT(88, Y22)
	TAPWEIGHT(104, Y23)
	S1K7(Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ         $112, R8
	CMPQ         R8, TEND
	JNE          ys1k7
	JMP          sharedstore

ys2k3:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	TAPWEIGHT(8, Y17)
	TAPWEIGHT(24, Y18)
	TAPWEIGHT(40, Y19)
	S2K3(Y16, Y17, Y18, Y19, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ         $48, R8
	CMPQ         R8, TEND
	JNE          ys2k3
	JMP          sharedstore

ys2k5:
	MOVQ         (R8), DX
	LEAQ         (SI)(DX*4), R13
	LEAQ         (R13)(R12*1), R14
	LEAQ         (R14)(R12*1), R15
	TAPWEIGHT(8, Y17)
	TAPWEIGHT(24, Y18)
	TAPWEIGHT(40, Y19)
	TAPWEIGHT(56, Y20)
	TAPWEIGHT(72, Y21)
	S2K5(Y16, Y17, Y18, Y19, Y20, Y21, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ         $80, R8
	CMPQ         R8, TEND
	JNE          ys2k5
	JMP          sharedstore

sharedstore:
	MOVQ    YCOL, DI
	MOVQ    N4, DX
	CLAMP(Z0, Z29, Z30)
	VMOVUPS Z0, K1, (DI)
	STORE(1, Z1, Z29, Z30, sharedstored)
	STORE(2, Z2, Z29, Z30, sharedstored)
	STORE(3, Z3, Z29, Z30, sharedstored)
	STORE(4, Z4, Z29, Z30, sharedstored)
	STORE(5, Z5, Z29, Z30, sharedstored)
	STORE(6, Z6, Z29, Z30, sharedstored)
	STORE(7, Z7, Z29, Z30, sharedstored)

sharedstored:
	ADDQ $64, YCOL
	ADDQ $64, SI
	SUBQ $16, CX
	JG   sharedblock
	MOVQ N4, DX
	SHLQ $3, DX
	ADDQ DX, YROW
	MOVQ XSTEP, DX
	ADDQ DX, XROW
	SUBQ $8, LEFT
	JMP  sharedgroup

shareddone:
	VZEROUPPER
	RET

// func dwSplitRowsAVX512(even, odd, x []float32, rows, width, lde, ldo, ldx int)
// Each row of x, 32 elements at a time: two loads, then VPERMT2PS picks
// the even elements and the odd ones. The last 1 to 31 under masks K1,
// K2 (loads), K3 (even stores) and K4 (odd ones), the same for every
// row. Registers: R8 x, R14 its row, DI and SI the rows of even and odd,
// R11 and R12 their place in them, CX the columns left, R9 rows left,
// R10, R13 and R15 lde, ldo and ldx in bytes, Z30 and Z31 the indices.
TEXT ·dwSplitRowsAVX512(SB), NOSPLIT, $0-112
	MOVQ    even_base+0(FP), DI
	MOVQ    odd_base+24(FP), SI
	MOVQ    x_base+48(FP), R8
	MOVQ    rows+72(FP), R9
	MOVQ    lde+88(FP), R10
	SHLQ    $2, R10
	MOVQ    ldo+96(FP), R13
	SHLQ    $2, R13
	MOVQ    ldx+104(FP), R15
	SHLQ    $2, R15
	VMOVUPS splitidx<>+0(SB), Z30
	VMOVUPS splitidx<>+64(SB), Z31

	// The masks of the last width mod 32 elements, t: loads of min(t, 16)
	// and t − 16 (or none), stores of ⌈t/2⌉ and ⌊t/2⌋.
	MOVQ width+80(FP), BX
	ANDQ $31, BX
	MOVQ BX, CX
	CMPQ CX, $16
	JLE  splitlo
	MOVQ $16, CX

splitlo:
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX
	KMOVW DX, K1
	XORL  DX, DX
	MOVQ  BX, CX
	SUBQ  $16, CX
	JLE   splithi
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX

splithi:
	KMOVW DX, K2
	LEAQ  1(BX), CX
	SHRQ  $1, CX
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX
	KMOVW DX, K3
	MOVQ  BX, CX
	SHRQ  $1, CX
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX
	KMOVW DX, K4
	TESTQ R9, R9
	JEQ   splitdone

splitrow:
	MOVQ DI, R11
	MOVQ SI, R12
	MOVQ R8, R14
	MOVQ width+80(FP), CX

split32:
	CMPQ      CX, $32
	JLT       splittail
	VMOVUPS   (R8), Z0
	VMOVUPS   64(R8), Z1
	VMOVAPS   Z0, Z2
	VPERMT2PS Z1, Z30, Z2
	VPERMT2PS Z1, Z31, Z0
	VMOVUPS   Z2, (R11)
	VMOVUPS   Z0, (R12)
	ADDQ      $128, R8
	ADDQ      $64, R11
	ADDQ      $64, R12
	SUBQ      $32, CX
	JMP       split32

splittail:
	TESTQ     CX, CX
	JEQ       splitnext
	VMOVUPS.Z (R8), K1, Z0
	VMOVUPS.Z 64(R8), K2, Z1
	VMOVAPS   Z0, Z2
	VPERMT2PS Z1, Z30, Z2
	VPERMT2PS Z1, Z31, Z0
	VMOVUPS   Z2, K3, (R11)
	VMOVUPS   Z0, K4, (R12)
	LEAQ      (R8)(CX*4), R8

splitnext:
	ADDQ R10, DI
	ADDQ R13, SI
	LEAQ (R14)(R15*1), R8
	DECQ R9
	JNZ  splitrow

splitdone:
	VZEROUPPER
	RET

// func dwCopyRowsAVX512(dst, x []float32, rows, width, ld int)
// Each row 16 elements at a time, the last 1 to 15 under mask K1.
// Registers: SI x, DI the row of dst, BX the place in it, CX the
// columns left, R8 rows left, R10 ld in bytes.
TEXT ·dwCopyRowsAVX512(SB), NOSPLIT, $0-72
	MOVQ  dst_base+0(FP), DI
	MOVQ  x_base+24(FP), SI
	MOVQ  rows+48(FP), R8
	MOVQ  ld+64(FP), R10
	SHLQ  $2, R10
	MOVQ  width+56(FP), CX
	ANDQ  $15, CX
	MOVL  $1, DX
	SHLL  CX, DX
	DECL  DX
	KMOVW DX, K1
	TESTQ R8, R8
	JEQ   copydone

copyrow:
	MOVQ DI, BX
	MOVQ width+56(FP), CX

copy16:
	CMPQ    CX, $16
	JLT     copytail
	VMOVUPS (SI), Z0
	VMOVUPS Z0, (BX)
	ADDQ    $64, SI
	ADDQ    $64, BX
	SUBQ    $16, CX
	JMP     copy16

copytail:
	TESTQ     CX, CX
	JEQ       copynext
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS   Z0, K1, (BX)
	LEAQ      (SI)(CX*4), SI

copynext:
	ADDQ R10, DI
	DECQ R8
	JNZ  copyrow

copydone:
	VZEROUPPER
	RET

// MAXMASK sets K1 to the lanes of a block of 16 outputs of which CX are
// left: all 16, or the first CX. AX is clobbered.
#define MAXMASK \
	MOVQ  $0xffff, AX; \
	CMPQ  CX, $16;     \
	JGE   4(PC);       \
	MOVQ  $1, AX;      \
	SHLQ  CX, AX;      \
	DECQ  AX;          \
	KMOVW AX, K1

// func maxRowsAVX512(dst, src []float32, rows []int, stride int)
// dst[i] = the largest of src[r·stride + i] over r in rows, NaN skipped
// (from −Inf: VMAXPS with the maximum as its first Go operand returns it
// where the element is NaN), for i < len(dst); rows is not empty. A block
// of 16 a step, the last through K-masked loads and store.
TEXT ·maxRowsAVX512(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	MOVQ         rows_base+48(FP), R8
	MOVQ         rows_len+56(FP), R9
	MOVQ         stride+72(FP), DX
	SHLQ         $2, DX
	PFDIST
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z7
	XORQ         BX, BX

mrblock:
	TESTQ   CX, CX
	JLE     mrdone
	MAXMASK
	VMOVAPS Z7, Z0
	XORQ    R10, R10

mrtap:
	MOVQ         (R8)(R10*8), R11
	IMULQ        DX, R11
	ADDQ         SI, R11
	VMOVUPS.Z    (R11)(BX*1), K1, Z1
	VMAXPS       Z0, Z1, Z0
	ADDQ         R13, R11
	PREFETCHT0   (R11)(BX*1)
	INCQ         R10
	CMPQ         R10, R9
	JLT          mrtap
	VMOVUPS      Z0, K1, (DI)(BX*1)
	ADDQ         $64, BX
	SUBQ         $16, CX
	JMP          mrblock

mrdone:
	VZEROUPPER
	RET

// func colsAVX512(out, v []float32, kw, sw int, sum bool)
// out[o] = the largest of v[o·sw + k] over k < kw (kw ≥ 1), from −Inf,
// NaN skipped (VMAXPS with the maximum as its first Go operand), or with
// sum their sum from 0, for o < len(out), at sw 1 or 2. v is padded past
// what the outputs read (maxColsLen): a block of 16 outputs loads whole
// registers, 32 floats a tap at stride 2, whose even elements VPERMT2PS
// picks; the block's store is masked.
TEXT ·colsAVX512(SB), NOSPLIT, $0-65
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), CX
	MOVQ         v_base+24(FP), SI
	MOVQ         kw+48(FP), R9
	MOVQ         sw+56(FP), DX
	MOVBQZX      sum+64(FP), R12
	MOVL         $0xff800000, AX
	TESTQ        R12, R12
	JEQ          2(PC)
	XORL         AX, AX
	VPBROADCASTD AX, Z7
	VMOVUPS      splitidx<>+0(SB), Z6
	CMPQ         DX, $2
	JEQ          mcs2

mcs1:
	TESTQ   CX, CX
	JLE     mcdone
	MAXMASK
	VMOVAPS Z7, Z0
	MOVQ    SI, R11
	MOVQ    R9, R10

mcs1tap:
	VMOVUPS (R11), Z1
	TESTQ   R12, R12
	JNE     mcs1add
	VMAXPS  Z0, Z1, Z0
	JMP     mcs1next

mcs1add:
	VADDPS Z1, Z0, Z0

mcs1next:
	ADDQ    $4, R11
	DECQ    R10
	JNE     mcs1tap
	VMOVUPS Z0, K1, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     mcs1

mcs2:
	TESTQ   CX, CX
	JLE     mcdone
	MAXMASK
	VMOVAPS Z7, Z0
	MOVQ    SI, R11
	MOVQ    R9, R10

mcs2tap:
	VMOVUPS   (R11), Z1
	VMOVUPS   64(R11), Z2
	VPERMT2PS Z2, Z6, Z1
	TESTQ     R12, R12
	JNE       mcs2add
	VMAXPS    Z0, Z1, Z0
	JMP       mcs2next

mcs2add:
	VADDPS Z1, Z0, Z0

mcs2next:
	ADDQ      $4, R11
	DECQ      R10
	JNE       mcs2tap
	VMOVUPS   Z0, K1, (DI)
	ADDQ      $64, DI
	ADDQ      $128, SI
	SUBQ      $16, CX
	JMP       mcs2

mcdone:
	VZEROUPPER
	RET

// func maxPoolNarrowAVX512(out []float32, osp int, src []float32, isp, planes int, rows []int, iw int, perm []int32, kw, ow int)
// One output row of a 2-D max pool over planes whose rows are at most 31
// wide and whose output rows at most 16: for each of planes planes (src
// isp floats apart, out osp apart), V = the largest of the input rows
// rows names (iw wide, in two registers filled with −Inf past iw, so that
// lane 31 is always −Inf), then out[j] = the largest over the kw column
// taps of V[perm[kx·16 + j]] (VPERMI2PS; a tap in the padding indexes lane
// 31), stored in the first ow lanes. NaN is skipped (the maximum as
// VMAXPS's first Go operand); a window all padding gives −Inf.
TEXT ·maxPoolNarrowAVX512(SB), NOSPLIT, $0-144
	MOVQ         out_base+0(FP), DI
	MOVQ         osp+24(FP), R8
	SHLQ         $2, R8
	MOVQ         src_base+32(FP), SI
	MOVQ         isp+56(FP), R9
	SHLQ         $2, R9
	MOVQ         rows_base+72(FP), R10
	MOVQ         rows_len+80(FP), R11
	MOVQ         iw+96(FP), R12
	MOVQ         perm_base+104(FP), R13
	MOVQ         kw+128(FP), BX

	// K1: the lanes of V's first register the rows fill, K2 its second's,
	// K3 the output's.
	MOVQ  R12, CX
	CMPQ  CX, $16
	JLE   2(PC)
	MOVQ  $16, CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K1
	XORQ  AX, AX
	MOVQ  R12, CX
	SUBQ  $16, CX
	JLE   4(PC)
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K2
	MOVQ  ow+136(FP), CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K3
	MOVQ  planes+64(FP), CX

	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z7
	TESTQ        CX, CX
	JLE          mndone

mnplane:
	VMOVAPS Z7, Z0
	VMOVAPS Z7, Z1
	XORQ    AX, AX
	TESTQ   R11, R11
	JEQ     mncols

mnrow:
	MOVQ    (R10)(AX*8), DX
	IMULQ   R12, DX
	LEAQ    (SI)(DX*4), DX
	VMOVAPS Z7, Z2
	VMOVUPS (DX), K1, Z2
	VMAXPS  Z0, Z2, Z0
	VMOVAPS Z7, Z3
	VMOVUPS 64(DX), K2, Z3
	VMAXPS  Z1, Z3, Z1
	INCQ    AX
	CMPQ    AX, R11
	JLT     mnrow

mncols:
	VMOVAPS Z7, Z4
	MOVQ    R13, DX
	MOVQ    BX, AX

mntap:
	VMOVUPS   (DX), Z5
	VPERMI2PS Z1, Z0, Z5
	VMAXPS    Z4, Z5, Z4
	ADDQ      $64, DX
	DECQ      AX
	JNZ       mntap
	VMOVUPS   Z4, K3, (DI)
	ADDQ      R9, SI
	ADDQ      R8, DI
	DECQ      CX
	JNZ       mnplane

mndone:
	VZEROUPPER
	RET

// func addRowsAVX512(y []float32, ldy int, x []float32, ldx, rows, n int)
// y[r·ldy + i] += x[r·ldx + i] for r < rows, i < n: 16 a step, the last
// 1 to 15 of each row under the mask K1. Registers: DI y's row, SI x's,
// BX the place in them, CX the columns left, R8 and R9 ldy and ldx in
// bytes, R10 the rows left, R11 n.
TEXT ·addRowsAVX512(SB), NOSPLIT, $0-80
	MOVQ  y_base+0(FP), DI
	MOVQ  ldy+24(FP), R8
	SHLQ  $2, R8
	MOVQ  x_base+32(FP), SI
	MOVQ  ldx+56(FP), R9
	SHLQ  $2, R9
	MOVQ  rows+64(FP), R10
	MOVQ  n+72(FP), R11
	MOVQ  R11, CX
	ANDQ  $15, CX
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	TESTQ R10, R10
	JEQ   addrowsdone

addrowsrow:
	XORQ BX, BX
	MOVQ R11, CX

addrows16:
	CMPQ    CX, $16
	JLT     addrowstail
	VMOVUPS (SI)(BX*1), Z0
	VADDPS  (DI)(BX*1), Z0, Z0
	VMOVUPS Z0, (DI)(BX*1)
	ADDQ    $64, BX
	SUBQ    $16, CX
	JMP     addrows16

addrowstail:
	TESTQ     CX, CX
	JEQ       addrowsnext
	VMOVUPS.Z (SI)(BX*1), K1, Z0
	VMOVUPS.Z (DI)(BX*1), K1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(BX*1)

addrowsnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNZ  addrowsrow

addrowsdone:
	VZEROUPPER
	RET
