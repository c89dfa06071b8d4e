//go:build amd64 && !noasm

#include "textflag.h"
#include "prefetch_amd64.h"

// The AVX2 and FMA loops of depthwise convolution (dwRowsAVX2,
// dwSplitRowsAVX2, dwCopyRowsAVX2) and MaxPool (maxIntoAVX2); see
// depthwise_amd64.go for the contracts.

// tailmask<>+4·(8−r) holds r lanes of all ones, then zeros: the mask of a
// block of r < 8 outputs.
DATA tailmask<>+0(SB)/4, $0xffffffff
DATA tailmask<>+4(SB)/4, $0xffffffff
DATA tailmask<>+8(SB)/4, $0xffffffff
DATA tailmask<>+12(SB)/4, $0xffffffff
DATA tailmask<>+16(SB)/4, $0xffffffff
DATA tailmask<>+20(SB)/4, $0xffffffff
DATA tailmask<>+24(SB)/4, $0xffffffff
DATA tailmask<>+28(SB)/4, $0xffffffff
DATA tailmask<>+32(SB)/4, $0
DATA tailmask<>+36(SB)/4, $0
DATA tailmask<>+40(SB)/4, $0
DATA tailmask<>+44(SB)/4, $0
DATA tailmask<>+48(SB)/4, $0
DATA tailmask<>+52(SB)/4, $0
DATA tailmask<>+56(SB)/4, $0
DATA tailmask<>+60(SB)/4, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// func maxIntoAVX2(acc, x []float32)
// acc[i] = x[i] > acc[i] ? x[i] : acc[i] for i < len(acc): VMAXPS with
// acc as its second Intel operand returns acc when x[i] is NaN or equal,
// exactly as the comparison does. The last 1 to 7 through masked loads
// and stores.
TEXT ·maxIntoAVX2(SB), NOSPLIT, $0-48
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ x_base+24(FP), SI

max8:
	CMPQ    CX, $8
	JLT     maxtail
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VMAXPS  Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     max8

maxtail:
	TESTQ      CX, CX
	JEQ        maxdone
	LEAQ       tailmask<>+32(SB), AX
	SHLQ       $2, CX
	SUBQ       CX, AX
	VMOVUPS    (AX), Y6
	VMASKMOVPS (DI), Y6, Y0
	VMASKMOVPS (SI), Y6, Y1
	VMAXPS     Y0, Y1, Y0
	VMASKMOVPS Y0, Y6, (DI)

maxdone:
	VZEROUPPER
	RET

// dwRowsAVX2's registers: R10–R15, AX, BX the input rows of a group at
// the block (rows past the group's last repeat it), SI the block's first
// output row, CX the columns left, R8 the end of the taps, DI the tap
// counting up to 0 and then the output row being stored, R9 w, DX the
// tap's weight index and then its offset, Y8 the tap's weight, Y9 a
// tail's input, Y10 the tail's mask, Y11 b. Locals as in
// dwRowsAVX512: the rows left, the rows in the group, n and xs in bytes,
// and the group's first output and input rows.
#define LEFT left-8(SP)
#define GROUP group-16(SP)
#define N4 n4-24(SP)
#define XS4 xs4-32(SP)
#define YROW yrow-40(SP)
#define XROW xrow-48(SP)

// FMA8 adds Y8 times the tap's input to the eight rows' accumulators
// Y0–Y7, FMA4 to Y0–Y3; MFMA8 and MFMA4 load the input under the mask
// Y10 first.
#define FMA4 \
	VFMADD231PS (R10)(DX*4), Y8, Y0; \
	VFMADD231PS (R11)(DX*4), Y8, Y1; \
	VFMADD231PS (R12)(DX*4), Y8, Y2; \
	VFMADD231PS (R13)(DX*4), Y8, Y3

#define FMA8 \
	FMA4; \
	VFMADD231PS (R14)(DX*4), Y8, Y4; \
	VFMADD231PS (R15)(DX*4), Y8, Y5; \
	VFMADD231PS (AX)(DX*4), Y8, Y6; \
	VFMADD231PS (BX)(DX*4), Y8, Y7

#define MFMA(ROW, A) \
	VMASKMOVPS  (ROW)(DX*4), Y10, Y9; \
	VFMADD231PS Y9, Y8, A

#define MFMA4 \
	MFMA(R10, Y0); \
	MFMA(R11, Y1); \
	MFMA(R12, Y2); \
	MFMA(R13, Y3)

#define MFMA8 \
	MFMA4; \
	MFMA(R14, Y4); \
	MFMA(R15, Y5); \
	MFMA(AX, Y6); \
	MFMA(BX, Y7)

// CLAMP clamps accumulator A to [Y12, Y13] (the loop's lo and hi), NaN
// kept: VMAXPS and VMINPS return their second Intel operand, A, when
// either is NaN, as clamps does. At lo = −Inf and hi = +Inf it leaves A
// as it is.
#define CLAMP(A) \
	VMAXPS A, Y12, A; \
	VMINPS A, Y13, A

// STORE clamps accumulator A and stores it to the next output row (DI
// advanced by N4) if the group has more than ROW rows, else jumps to
// DONE; MSTORE under the mask Y10.
#define STORE(ROW, A, DONE) \
	CMPQ    GROUP, $ROW; \
	JLE     DONE; \
	ADDQ    N4, DI; \
	CLAMP(A); \
	VMOVUPS A, (DI)

#define MSTORE(ROW, A, DONE) \
	CMPQ       GROUP, $ROW; \
	JLE        DONE; \
	ADDQ       N4, DI; \
	CLAMP(A); \
	VMASKMOVPS A, Y10, (DI)

// func dwRowsAVX2(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b, lo, hi float32)
// Rows in groups of eight (of four when four or fewer are left), each
// group in blocks of 8 columns, one YMM accumulator a row, with every tap
// added before the block is stored; the last 1 to 7 columns through
// masked loads and stores. The rows of a short group past its last are
// computed again from the last row's input and not stored.
TEXT ·dwRowsAVX2(SB), NOSPLIT, $48-132
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
	VBROADCASTSS b+120(FP), Y11
	VBROADCASTSS lo+124(FP), Y12
	VBROADCASTSS hi+128(FP), Y13

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
	CMPQ    CX, $8
	JLT     g8tail
	VMOVAPS Y11, Y0
	VMOVAPS Y11, Y1
	VMOVAPS Y11, Y2
	VMOVAPS Y11, Y3
	VMOVAPS Y11, Y4
	VMOVAPS Y11, Y5
	VMOVAPS Y11, Y6
	VMOVAPS Y11, Y7
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g8tap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Y8
	MOVQ         (R8)(DI*8), DX
	FMA8
	ADDQ         $2, DI
	JNZ          g8tap
	MOVQ         SI, DI
	CLAMP(Y0)
	VMOVUPS      Y0, (DI)
	STORE(1, Y1, g8stored)
	STORE(2, Y2, g8stored)
	STORE(3, Y3, g8stored)
	STORE(4, Y4, g8stored)
	STORE(5, Y5, g8stored)
	STORE(6, Y6, g8stored)
	STORE(7, Y7, g8stored)

g8stored:
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, R14
	ADDQ $32, R15
	ADDQ $32, AX
	ADDQ $32, BX
	SUBQ $8, CX
	JMP  g8block

g8tail:
	TESTQ   CX, CX
	JEQ     next8
	LEAQ    tailmask<>+32(SB), DX
	SHLQ    $2, CX
	SUBQ    CX, DX
	VMOVUPS (DX), Y10
	VMOVAPS Y11, Y0
	VMOVAPS Y11, Y1
	VMOVAPS Y11, Y2
	VMOVAPS Y11, Y3
	VMOVAPS Y11, Y4
	VMOVAPS Y11, Y5
	VMOVAPS Y11, Y6
	VMOVAPS Y11, Y7
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g8mtap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Y8
	MOVQ         (R8)(DI*8), DX
	MFMA8
	ADDQ         $2, DI
	JNZ          g8mtap
	MOVQ         SI, DI
	CLAMP(Y0)
	VMASKMOVPS   Y0, Y10, (DI)
	MSTORE(1, Y1, next8)
	MSTORE(2, Y2, next8)
	MSTORE(3, Y3, next8)
	MSTORE(4, Y4, next8)
	MSTORE(5, Y5, next8)
	MSTORE(6, Y6, next8)
	MSTORE(7, Y7, next8)

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
	CMPQ    CX, $8
	JLT     g4tail
	VMOVAPS Y11, Y0
	VMOVAPS Y11, Y1
	VMOVAPS Y11, Y2
	VMOVAPS Y11, Y3
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g4tap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Y8
	MOVQ         (R8)(DI*8), DX
	FMA4
	ADDQ         $2, DI
	JNZ          g4tap
	MOVQ         SI, DI
	CLAMP(Y0)
	VMOVUPS      Y0, (DI)
	STORE(1, Y1, g4stored)
	STORE(2, Y2, g4stored)
	STORE(3, Y3, g4stored)

g4stored:
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	SUBQ $8, CX
	JMP  g4block

g4tail:
	TESTQ   CX, CX
	JEQ     done
	LEAQ    tailmask<>+32(SB), DX
	SHLQ    $2, CX
	SUBQ    CX, DX
	VMOVUPS (DX), Y10
	VMOVAPS Y11, Y0
	VMOVAPS Y11, Y1
	VMOVAPS Y11, Y2
	VMOVAPS Y11, Y3
	MOVQ    taps_len+80(FP), DI
	SHLQ    $1, DI
	NEGQ    DI

g4mtap:
	MOVL         8(R8)(DI*8), DX
	VBROADCASTSS (R9)(DX*4), Y8
	MOVQ         (R8)(DI*8), DX
	MFMA4
	ADDQ         $2, DI
	JNZ          g4mtap
	MOVQ         SI, DI
	CLAMP(Y0)
	VMASKMOVPS   Y0, Y10, (DI)
	MSTORE(1, Y1, done)
	MSTORE(2, Y2, done)
	MSTORE(3, Y3, done)

done:
	VZEROUPPER
	RET

// func dwSplitRowsAVX2(even, odd, x []float32, rows, width, lde, ldo, ldx int)
// Each row of x, 16 elements at a time: two loads, VSHUFPS picks the
// even (odd) elements of each 128-bit half, VPERMPD puts the halves in
// order; then 8 in the same way in 128 bits, and the last 1 to 7 one
// or two at a time. Registers: R8 x, R14 its row, DI and SI the rows of
// even and odd, R11 and R12 their place in them, CX the columns left, R9
// rows left, R10, R13 and R15 lde, ldo and ldx in bytes.
TEXT ·dwSplitRowsAVX2(SB), NOSPLIT, $0-112
	MOVQ  even_base+0(FP), DI
	MOVQ  odd_base+24(FP), SI
	MOVQ  x_base+48(FP), R8
	MOVQ  rows+72(FP), R9
	MOVQ  lde+88(FP), R10
	SHLQ  $2, R10
	MOVQ  ldo+96(FP), R13
	SHLQ  $2, R13
	MOVQ  ldx+104(FP), R15
	SHLQ  $2, R15
	TESTQ R9, R9
	JEQ   splitdone

splitrow:
	MOVQ DI, R11
	MOVQ SI, R12
	MOVQ R8, R14
	MOVQ width+80(FP), CX

split16:
	CMPQ    CX, $16
	JLT     split8
	VMOVUPS (R8), Y0
	VMOVUPS 32(R8), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xdd, Y1, Y0, Y3
	VPERMPD $0xd8, Y2, Y2
	VPERMPD $0xd8, Y3, Y3
	VMOVUPS Y2, (R11)
	VMOVUPS Y3, (R12)
	ADDQ    $64, R8
	ADDQ    $32, R11
	ADDQ    $32, R12
	SUBQ    $16, CX
	JMP     split16

split8:
	CMPQ    CX, $8
	JLT     split2
	VMOVUPS (R8), X0
	VMOVUPS 16(R8), X1
	VSHUFPS $0x88, X1, X0, X2
	VSHUFPS $0xdd, X1, X0, X3
	VMOVUPS X2, (R11)
	VMOVUPS X3, (R12)
	ADDQ    $32, R8
	ADDQ    $16, R11
	ADDQ    $16, R12
	SUBQ    $8, CX

split2:
	CMPQ   CX, $2
	JLT    split1
	VMOVSS (R8), X0
	VMOVSS X0, (R11)
	VMOVSS 4(R8), X0
	VMOVSS X0, (R12)
	ADDQ   $8, R8
	ADDQ   $4, R11
	ADDQ   $4, R12
	SUBQ   $2, CX
	JMP    split2

split1:
	TESTQ  CX, CX
	JEQ    splitnext
	VMOVSS (R8), X0
	VMOVSS X0, (R11)
	ADDQ   $4, R8

splitnext:
	ADDQ R10, DI
	ADDQ R13, SI
	LEAQ (R14)(R15*1), R8
	DECQ R9
	JNZ  splitrow

splitdone:
	VZEROUPPER
	RET

// func dwCopyRowsAVX2(dst, x []float32, rows, width, ld int)
// Each row 8 elements at a time, the last 1 to 7 under the mask Y10.
// Registers: SI x, DI the row of dst, BX the place in it, CX the columns
// left, R8 rows left, R10 ld in bytes.
TEXT ·dwCopyRowsAVX2(SB), NOSPLIT, $0-72
	MOVQ    dst_base+0(FP), DI
	MOVQ    x_base+24(FP), SI
	MOVQ    rows+48(FP), R8
	MOVQ    ld+64(FP), R10
	SHLQ    $2, R10
	MOVQ    width+56(FP), CX
	ANDQ    $7, CX
	SHLQ    $2, CX
	LEAQ    tailmask<>+32(SB), DX
	SUBQ    CX, DX
	VMOVUPS (DX), Y10
	TESTQ   R8, R8
	JEQ     copydone

copyrow:
	MOVQ DI, BX
	MOVQ width+56(FP), CX

copy8:
	CMPQ    CX, $8
	JLT     copytail
	VMOVUPS (SI), Y0
	VMOVUPS Y0, (BX)
	ADDQ    $32, SI
	ADDQ    $32, BX
	SUBQ    $8, CX
	JMP     copy8

copytail:
	TESTQ      CX, CX
	JEQ        copynext
	VMASKMOVPS (SI), Y10, Y0
	VMASKMOVPS Y0, Y10, (BX)
	LEAQ       (SI)(CX*4), SI

copynext:
	ADDQ R10, DI
	DECQ R8
	JNZ  copyrow

copydone:
	VZEROUPPER
	RET

// MAXMASK2 sets Y6 to the lanes of a block of 8 outputs of which CX are
// left: all 8 (CX ≥ 8), or the first CX (tailmask<>). AX is clobbered.
#define MAXMASK2 \
	MOVQ    CX, AX;               \
	CMPQ    AX, $8;               \
	JLT     2(PC);                \
	MOVQ    $8, AX;               \
	SHLQ    $2, AX;               \
	NEGQ    AX;                   \
	LEAQ    tailmask<>+32(SB), R12; \
	ADDQ    AX, R12;              \
	VMOVUPS (R12), Y6

// func maxRowsAVX2(dst, src []float32, rows []int, stride int)
// As maxRowsAVX512, a block of 8 a step; the last, short block through
// VMASKMOVPS (slow on AMD cores, so only there).
TEXT ·maxRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	MOVQ         rows_base+48(FP), R8
	MOVQ         rows_len+56(FP), R9
	MOVQ         stride+72(FP), DX
	SHLQ         $2, DX
	PFDIST
	MOVL         $0xff800000, AX
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	XORQ         BX, BX

mr2block:
	CMPQ    CX, $8
	JLT     mr2tail
	VMOVAPS Y7, Y0
	XORQ    R10, R10

mr2tap:
	MOVQ       (R8)(R10*8), R11
	IMULQ      DX, R11
	ADDQ       SI, R11
	VMOVUPS    (R11)(BX*1), Y1
	VMAXPS     Y0, Y1, Y0
	ADDQ       R13, R11
	PREFETCHT0 (R11)(BX*1)
	INCQ       R10
	CMPQ       R10, R9
	JLT        mr2tap
	VMOVUPS    Y0, (DI)(BX*1)
	ADDQ       $32, BX
	SUBQ       $8, CX
	JMP        mr2block

mr2tail:
	TESTQ   CX, CX
	JLE     mr2done
	MAXMASK2
	VMOVAPS Y7, Y0
	XORQ    R10, R10

mr2tailtap:
	MOVQ       (R8)(R10*8), R11
	IMULQ      DX, R11
	ADDQ       SI, R11
	ADDQ       BX, R11
	VMASKMOVPS (R11), Y6, Y1
	VMAXPS     Y0, Y1, Y0
	INCQ       R10
	CMPQ       R10, R9
	JLT        mr2tailtap
	ADDQ       BX, DI
	VMASKMOVPS Y0, Y6, (DI)

mr2done:
	VZEROUPPER
	RET

// func colsAVX2(out, v []float32, kw, sw int, sum bool)
// As colsAVX512, a block of 8 outputs a step; at stride 2 a tap loads 16
// floats, whose even elements VSHUFPS and VPERMPD gather.
TEXT ·colsAVX2(SB), NOSPLIT, $0-65
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), CX
	MOVQ         v_base+24(FP), SI
	MOVQ         kw+48(FP), R9
	MOVQ         sw+56(FP), DX
	MOVBQZX      sum+64(FP), R13
	MOVL         $0xff800000, AX
	TESTQ        R13, R13
	JEQ          2(PC)
	XORL         AX, AX
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	CMPQ         DX, $2
	JEQ          mc2s2

mc2s1:
	TESTQ   CX, CX
	JLE     mc2done
	MAXMASK2
	VMOVAPS Y7, Y0
	MOVQ    SI, R11
	MOVQ    R9, R10

mc2s1tap:
	VMOVUPS (R11), Y1
	TESTQ   R13, R13
	JNE     mc2s1add
	VMAXPS  Y0, Y1, Y0
	JMP     mc2s1next

mc2s1add:
	VADDPS Y1, Y0, Y0

mc2s1next:
	ADDQ       $4, R11
	DECQ       R10
	JNE        mc2s1tap
	VMASKMOVPS Y0, Y6, (DI)
	ADDQ       $32, DI
	ADDQ       $32, SI
	SUBQ       $8, CX
	JMP        mc2s1

mc2s2:
	TESTQ   CX, CX
	JLE     mc2done
	MAXMASK2
	VMOVAPS Y7, Y0
	MOVQ    SI, R11
	MOVQ    R9, R10

mc2s2tap:
	VMOVUPS (R11), Y1
	VMOVUPS 32(R11), Y2
	VSHUFPS $0x88, Y2, Y1, Y1
	VPERMPD $0xd8, Y1, Y1
	TESTQ   R13, R13
	JNE     mc2s2add
	VMAXPS  Y0, Y1, Y0
	JMP     mc2s2next

mc2s2add:
	VADDPS Y1, Y0, Y0

mc2s2next:
	ADDQ       $4, R11
	DECQ       R10
	JNE        mc2s2tap
	VMASKMOVPS Y0, Y6, (DI)
	ADDQ       $32, DI
	ADDQ       $64, SI
	SUBQ       $8, CX
	JMP        mc2s2

mc2done:
	VZEROUPPER
	RET

// func addRowsAVX2(y []float32, ldy int, x []float32, ldx, rows, n int)
// y[r·ldy + i] += x[r·ldx + i] for r < rows, i < n: 8 a step, the last 1
// to 7 of each row under the mask Y10. Registers as in addRowsAVX512.
TEXT ·addRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ    y_base+0(FP), DI
	MOVQ    ldy+24(FP), R8
	SHLQ    $2, R8
	MOVQ    x_base+32(FP), SI
	MOVQ    ldx+56(FP), R9
	SHLQ    $2, R9
	MOVQ    rows+64(FP), R10
	MOVQ    n+72(FP), R11
	MOVQ    R11, CX
	ANDQ    $7, CX
	SHLQ    $2, CX
	LEAQ    tailmask<>+32(SB), DX
	SUBQ    CX, DX
	VMOVUPS (DX), Y10
	TESTQ   R10, R10
	JEQ     addrowsdone

addrowsrow:
	XORQ BX, BX
	MOVQ R11, CX

addrows8:
	CMPQ    CX, $8
	JLT     addrowstail
	VMOVUPS (SI)(BX*1), Y0
	VADDPS  (DI)(BX*1), Y0, Y0
	VMOVUPS Y0, (DI)(BX*1)
	ADDQ    $32, BX
	SUBQ    $8, CX
	JMP     addrows8

addrowstail:
	TESTQ      CX, CX
	JEQ        addrowsnext
	VMASKMOVPS (SI)(BX*1), Y10, Y0
	VMASKMOVPS (DI)(BX*1), Y10, Y1
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y10, (DI)(BX*1)

addrowsnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNZ  addrowsrow

addrowsdone:
	VZEROUPPER
	RET
