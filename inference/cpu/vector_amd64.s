//go:build amd64 && !noasm

#include "textflag.h"

// Plain vector loops, AVX2: GELU's argument and combination, the four
// arithmetic operators, panel copies (vector_amd64.go has the contracts).

// The constants of GELU, float32: 1/√2, √(2/π), 0.044715, 0.5 and 1.
DATA gelucon<>+0(SB)/4, $0x3f3504f3
DATA gelucon<>+4(SB)/4, $0x3f4c422a
DATA gelucon<>+8(SB)/4, $0x3d372713
DATA gelucon<>+12(SB)/4, $0x3f000000
DATA gelucon<>+16(SB)/4, $0x3f800000
GLOBL gelucon<>(SB), RODATA|NOPTR, $20

// func geluInAVX2(t, x []float32, tanh bool)
// The argument of GELU's erf or tanh for i < len(t)/8·8: t[i] = x[i]·(1/√2),
// or with tanh √(2/π)·(x + 0.044715·x·x·x), each product and sum rounded
// in the order the Go expressions of geluIn round them (no FMA).
TEXT ·geluInAVX2(SB), NOSPLIT, $0-49
	MOVQ         t_base+0(FP), DI
	MOVQ         t_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVBLZX      tanh+48(FP), AX
	VBROADCASTSS gelucon<>+0(SB), Y4
	VBROADCASTSS gelucon<>+4(SB), Y5
	VBROADCASTSS gelucon<>+8(SB), Y6
	SHRQ         $3, CX
	JEQ          indone
	TESTQ        AX, AX
	JNE          intanh

inerf:
	VMULPS  (SI), Y4, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNE     inerf
	JMP     indone

intanh:
	VMOVUPS (SI), Y0
	VMULPS  Y0, Y6, Y1
	VMULPS  Y0, Y1, Y1
	VMULPS  Y0, Y1, Y1
	VADDPS  Y1, Y0, Y1
	VMULPS  Y1, Y5, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNE     intanh

indone:
	VZEROUPPER
	RET

// func geluOutAVX2(y, x, t []float32)
// y[i] = 0.5·x[i]·(1 + t[i]) for i < len(y)/8·8, rounded as geluOut's Go
// expression rounds: (0.5·x)·(1 + t).
TEXT ·geluOutAVX2(SB), NOSPLIT, $0-72
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         t_base+48(FP), DX
	VBROADCASTSS gelucon<>+12(SB), Y4
	VBROADCASTSS gelucon<>+16(SB), Y5
	SHRQ         $3, CX
	JEQ          outdone

outloop:
	VMULPS  (SI), Y4, Y0
	VADDPS  (DX), Y5, Y1
	VMULPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     outloop

outdone:
	VZEROUPPER
	RET

// func arithVVAVX2(op ewArithOp, out, a, b []float32)
// out[i] = a[i] op b[i] (op 0 +, 1 −, 2 ×, 3 ÷) for i < len(out)/8·8. Each
// result is rounded once: the Go loop's bits, but for which NaN's payload
// passes on where both operands are NaN.
TEXT ·arithVVAVX2(SB), NOSPLIT, $0-80
	MOVBQZX op+0(FP), AX
	MOVQ    out_base+8(FP), DI
	MOVQ    out_len+16(FP), CX
	MOVQ    a_base+32(FP), SI
	MOVQ    b_base+56(FP), DX
	SHRQ    $3, CX
	JEQ     vvdone
	CMPQ    AX, $1
	JLT     vvadd
	JEQ     vvsub
	CMPQ    AX, $2
	JEQ     vvmul

vvdiv:
	VMOVUPS (SI), Y0
	VDIVPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     vvdiv
	JMP     vvdone

vvadd:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     vvadd
	JMP     vvdone

vvsub:
	VMOVUPS (SI), Y0
	VSUBPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     vvsub
	JMP     vvdone

vvmul:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     vvmul

vvdone:
	VZEROUPPER
	RET

// func arithVSAVX2(op ewArithOp, out, a []float32, s float32, swap bool)
// out[i] = a[i] op s, or with swap s op a[i], for i < len(out)/8·8, with
// the Go loop's results as arithVVAVX2.
TEXT ·arithVSAVX2(SB), NOSPLIT, $0-61
	MOVBQZX      op+0(FP), AX
	MOVQ         out_base+8(FP), DI
	MOVQ         out_len+16(FP), CX
	MOVQ         a_base+32(FP), SI
	VBROADCASTSS s+56(FP), Y1
	MOVBQZX      swap+60(FP), DX
	SHRQ         $3, CX
	JEQ          vsdone
	TESTQ        DX, DX
	JNE          svloop

vsloop:
	VMOVUPS (SI), Y0
	CMPQ    AX, $1
	JLT     vsadd
	JEQ     vssub
	CMPQ    AX, $2
	JEQ     vsmul
	VDIVPS  Y1, Y0, Y0
	JMP     vsstore

vsadd:
	VADDPS Y1, Y0, Y0
	JMP    vsstore

vssub:
	VSUBPS Y1, Y0, Y0
	JMP    vsstore

vsmul:
	VMULPS Y1, Y0, Y0

vsstore:
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNE     vsloop
	JMP     vsdone

svloop:
	VMOVUPS (SI), Y0
	CMPQ    AX, $1
	JLT     svadd
	JEQ     svsub
	CMPQ    AX, $2
	JEQ     svmul
	VDIVPS  Y0, Y1, Y0
	JMP     svstore

svadd:
	VADDPS Y0, Y1, Y0
	JMP    svstore

svsub:
	VSUBPS Y0, Y1, Y0
	JMP    svstore

svmul:
	VMULPS Y0, Y1, Y0

svstore:
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNE     svloop

vsdone:
	VZEROUPPER
	RET

// func copyRowsAVX2(dst, src []float32, ld, rows, width int)
// Copies rows runs of width floats (16 or 32), the runs ld floats apart in
// src, one after another into dst: a packed SGEMM panel from a row-major
// matrix, without a memmove call per run.
TEXT ·copyRowsAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ ld+48(FP), DX
	SHLQ $2, DX
	MOVQ rows+56(FP), CX
	MOVQ width+64(FP), AX
	TESTQ CX, CX
	JEQ  rowsdone
	CMPQ AX, $32
	JEQ  rows32

rows16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    DX, SI
	ADDQ    $64, DI
	DECQ    CX
	JNE     rows16
	JMP     rowsdone

rows32:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    DX, SI
	ADDQ    $128, DI
	DECQ    CX
	JNE     rows32

rowsdone:
	VZEROUPPER
	RET

// func axpyAVX2(y, x []float32, a float32)
// y[i] += a·x[i] for i < len(y)/8·8, each through one fused multiply-add:
// 32 at a time, then 8.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-52
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS a+48(FP), Y4
	SHRQ         $3, CX
	JEQ          axpydone

axpy32:
	CMPQ        CX, $4
	JLT         axpy8
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VMOVUPS     64(DI), Y2
	VMOVUPS     96(DI), Y3
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y4, Y1
	VFMADD231PS 64(SI), Y4, Y2
	VFMADD231PS 96(SI), Y4, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $4, CX
	JMP         axpy32

axpy8:
	TESTQ       CX, CX
	JEQ         axpydone
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y4, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JMP         axpy8

axpydone:
	VZEROUPPER
	RET

// HARDSIG(r, t) sets t = min(max(r·Y4 + Y5, 0), 1), the product and the
// sum each rounded, as hardSigmoidsGo's: VMAXPS and VMINPS return their
// first Go operand, t, where it is NaN. Y6 holds 0 and Y7 1.
#define HARDSIG(r, t) \
	VMULPS r, Y4, t;  \
	VADDPS t, Y5, t;  \
	VMAXPS t, Y6, t;  \
	VMINPS t, Y7, t

// func hardSigmoidAVX2(y, x []float32, alpha, beta float32, swish bool)
// y[i] = max(0, min(1, alpha·x[i] + beta)), times x[i] when swish
// (HardSwish), for i < len(y)/8·8: 32 at a time, then 8.
TEXT ·hardSigmoidAVX2(SB), NOSPLIT, $0-57
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS alpha+48(FP), Y4
	VBROADCASTSS beta+52(FP), Y5
	MOVBQZX      swish+56(FP), DX
	VXORPS       Y6, Y6, Y6
	MOVL         $0x3f800000, AX
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	SHRQ         $3, CX
	JEQ          hsdone

hs32:
	CMPQ    CX, $4
	JLT     hs8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	HARDSIG(Y0, Y8)
	HARDSIG(Y1, Y9)
	HARDSIG(Y2, Y10)
	HARDSIG(Y3, Y11)
	TESTQ   DX, DX
	JEQ     hs32store
	VMULPS  Y0, Y8, Y8
	VMULPS  Y1, Y9, Y9
	VMULPS  Y2, Y10, Y10
	VMULPS  Y3, Y11, Y11

hs32store:
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y11, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $4, CX
	JMP     hs32

hs8:
	TESTQ   CX, CX
	JEQ     hsdone
	VMOVUPS (SI), Y0
	HARDSIG(Y0, Y8)
	TESTQ   DX, DX
	JEQ     hs8store
	VMULPS  Y0, Y8, Y8

hs8store:
	VMOVUPS Y8, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JMP     hs8

hsdone:
	VZEROUPPER
	RET

// func sumDevAVX2(x []float32, m float32) (s, sq float32)
// Σ (x[i] − m) and Σ (x[i] − m)² over i < len(x)/8·8, each in four sets
// of eight partial sums, 32 elements a step, then eight.
TEXT ·sumDevAVX2(SB), NOSPLIT, $0-40
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y15
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	MOVQ         CX, BX
	SHRQ         $5, BX
	JEQ          sdeights

sdloop:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VSUBPS      Y15, Y4, Y4
	VSUBPS      Y15, Y5, Y5
	VSUBPS      Y15, Y6, Y6
	VSUBPS      Y15, Y7, Y7
	VADDPS      Y4, Y8, Y8
	VADDPS      Y5, Y9, Y9
	VADDPS      Y6, Y10, Y10
	VADDPS      Y7, Y11, Y11
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ        $128, SI
	DECQ        BX
	JNZ         sdloop

sdeights:
	ANDQ $31, CX
	SHRQ $3, CX
	JEQ  sddone

sdeight:
	VMOVUPS     (SI), Y4
	VSUBPS      Y15, Y4, Y4
	VADDPS      Y4, Y8, Y8
	VFMADD231PS Y4, Y4, Y0
	ADDQ        $32, SI
	DECQ        CX
	JNZ         sdeight

sddone:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	MOVSS        X0, sq+36(FP)
	VADDPS       Y9, Y8, Y8
	VADDPS       Y11, Y10, Y10
	VADDPS       Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS       X9, X8, X8
	VHADDPS      X8, X8, X8
	VHADDPS      X8, X8, X8
	MOVSS        X8, s+32(FP)
	VZEROUPPER
	RET

// func normAffineAVX2(y, x, scale, bias []float32, m, d, inv float32)
// y[i] = ((x[i] − m) − d)·inv·scale[i] + bias[i] for i < len(y)/8·8: each
// difference and the product by inv rounded, bias added in the product by
// scale's FMA; bias nil (length 0) adds nothing.
TEXT ·normAffineAVX2(SB), NOSPLIT, $0-108
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         scale_base+48(FP), DX
	MOVQ         bias_base+72(FP), R8
	MOVQ         bias_len+80(FP), R9
	VBROADCASTSS m+96(FP), Y6
	VBROADCASTSS d+100(FP), Y5
	VBROADCASTSS inv+104(FP), Y7
	SHRQ         $3, CX
	JEQ          nadone
	TESTQ        R9, R9
	JEQ          nanobias

naloop:
	VMOVUPS     (SI), Y0
	VSUBPS      Y6, Y0, Y0
	VSUBPS      Y5, Y0, Y0
	VMULPS      Y7, Y0, Y0
	VMOVUPS     (R8), Y1
	VFMADD231PS (DX), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DX
	ADDQ        $32, R8
	ADDQ        $32, DI
	DECQ        CX
	JNZ         naloop
	JMP         nadone

nanobias:
	VMOVUPS (SI), Y0
	VSUBPS  Y6, Y0, Y0
	VSUBPS  Y5, Y0, Y0
	VMULPS  Y7, Y0, Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     nanobias

nadone:
	VZEROUPPER
	RET

// func transpose8AVX2(dst []float32, ldd int, src []float32, lds, blocks int)
// Transposes blocks 8×8 blocks: block b's rows are src's eight rows lds
// apart from column 8b, and it goes to dst's eight rows ldd apart from row
// 8b, column 0: dst[(8b+i)·ldd + r] = src[r·lds + 8b + i]. Each block is
// transposed in registers (unpack, shuffle, lane permute). An SGEMM's
// 8-row A panel is the case ldd = 8.
TEXT ·transpose8AVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ ldd+24(FP), AX
	SHLQ $2, AX
	MOVQ src_base+32(FP), SI
	MOVQ lds+56(FP), DX
	SHLQ $2, DX
	MOVQ blocks+64(FP), CX
	TESTQ CX, CX
	JEQ  t8done
	LEAQ (DX)(DX*2), BX // 3 rows of src
	LEAQ (SI)(DX*4), R8 // src row 4
	LEAQ (AX)(AX*2), R9 // 3 rows of dst

t8loop:
	VMOVUPS    (SI), Y0
	VMOVUPS    (SI)(DX*1), Y1
	VMOVUPS    (SI)(DX*2), Y2
	VMOVUPS    (SI)(BX*1), Y3
	VMOVUPS    (R8), Y4
	VMOVUPS    (R8)(DX*1), Y5
	VMOVUPS    (R8)(DX*2), Y6
	VMOVUPS    (R8)(BX*1), Y7
	VUNPCKLPS  Y1, Y0, Y8
	VUNPCKHPS  Y1, Y0, Y9
	VUNPCKLPS  Y3, Y2, Y10
	VUNPCKHPS  Y3, Y2, Y11
	VUNPCKLPS  Y5, Y4, Y12
	VUNPCKHPS  Y5, Y4, Y13
	VUNPCKLPS  Y7, Y6, Y14
	VUNPCKHPS  Y7, Y6, Y15
	VSHUFPS    $0x44, Y10, Y8, Y0
	VSHUFPS    $0xee, Y10, Y8, Y1
	VSHUFPS    $0x44, Y11, Y9, Y2
	VSHUFPS    $0xee, Y11, Y9, Y3
	VSHUFPS    $0x44, Y14, Y12, Y4
	VSHUFPS    $0xee, Y14, Y12, Y5
	VSHUFPS    $0x44, Y15, Y13, Y6
	VSHUFPS    $0xee, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	LEAQ       (DI)(AX*4), R10 // dst row 4
	VMOVUPS    Y8, (DI)
	VMOVUPS    Y9, (DI)(AX*1)
	VMOVUPS    Y10, (DI)(AX*2)
	VMOVUPS    Y11, (DI)(R9*1)
	VMOVUPS    Y12, (R10)
	VMOVUPS    Y13, (R10)(AX*1)
	VMOVUPS    Y14, (R10)(AX*2)
	VMOVUPS    Y15, (R10)(R9*1)
	ADDQ       $32, SI
	ADDQ       $32, R8
	LEAQ       (R10)(AX*4), DI // dst row 8
	DECQ       CX
	JNZ        t8loop

t8done:
	VZEROUPPER
	RET

// func interleave2AVX2(out, even, odd []float32, b float32)
// out[2i] = even[i] + b, out[2i+1] = odd[i] + b for i < len(out)/16·8:
// eight of each a step, paired by VUNPCKLPS/VUNPCKHPS and put in order
// by VPERM2F128.
TEXT ·interleave2AVX2(SB), NOSPLIT, $0-76
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), CX
	MOVQ         even_base+24(FP), SI
	MOVQ         odd_base+48(FP), DX
	VBROADCASTSS b+72(FP), Y7
	SHRQ         $4, CX
	JEQ          ildone

illoop:
	VADDPS     (SI), Y7, Y0
	VADDPS     (DX), Y7, Y1
	VUNPCKLPS  Y1, Y0, Y2
	VUNPCKHPS  Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPS    Y4, (DI)
	VMOVUPS    Y5, 32(DI)
	ADDQ       $32, SI
	ADDQ       $32, DX
	ADDQ       $64, DI
	DECQ       CX
	JNZ        illoop

ildone:
	VZEROUPPER
	RET
