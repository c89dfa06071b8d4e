//go:build amd64 && !noasm

#include "textflag.h"

// Plain vector loops, AVX2: addInto, scale and maxOf's (vector_amd64.go
// has the contracts).

// func addIntoAVX2(y, x []float32)
// y[i] += x[i] for i < len(y)/32·32: four YMM chains a step. Addition
// rounds each element alone, so the result is the Go loop's, bit for bit.
TEXT ·addIntoAVX2(SB), NOSPLIT, $0-48
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	SHRQ $5, CX
	JEQ  done

loop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNE     loop
	VZEROUPPER

done:
	RET

// func scaleAVX2(y []float32, r float32)
// y[i] *= r for i < len(y)/32·32.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	VBROADCASTSS r+24(FP), Y4
	SHRQ         $5, CX
	JEQ          scaledone

scaleloop:
	VMULPS  (DI), Y4, Y0
	VMULPS  32(DI), Y4, Y1
	VMULPS  64(DI), Y4, Y2
	VMULPS  96(DI), Y4, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	DECQ    CX
	JNE     scaleloop

scaledone:
	VZEROUPPER
	RET

// func maxOfAVX2(x []float32) (m float32, nan bool)
// The largest of x[i] for i < len(x)/8·8 (len(x) ≥ 8), and whether any of
// them is NaN: VMAXPS passes NaN on only from one operand, so NaNs are
// found apart, by an unordered comparison of each vector with itself.
// Y0–Y1 running maxima, Y2–Y3 NaN masks.
TEXT ·maxOfAVX2(SB), NOSPLIT, $0-29
	MOVQ    x_base+0(FP), SI
	MOVQ    x_len+8(FP), CX
	SHRQ    $3, CX
	VMOVUPS (SI), Y0
	VMOVUPS Y0, Y1
	VCMPPS  $3, Y0, Y0, Y2
	VMOVUPS Y2, Y3
	ADDQ    $32, SI
	DECQ    CX

max16:
	CMPQ    CX, $2
	JLT     max8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMAXPS  Y4, Y0, Y0
	VMAXPS  Y5, Y1, Y1
	VCMPPS  $3, Y4, Y4, Y6
	VCMPPS  $3, Y5, Y5, Y7
	VORPS   Y6, Y2, Y2
	VORPS   Y7, Y3, Y3
	ADDQ    $64, SI
	SUBQ    $2, CX
	JMP     max16

max8:
	TESTQ   CX, CX
	JEQ     maxreduce
	VMOVUPS (SI), Y4
	VMAXPS  Y4, Y0, Y0
	VCMPPS  $3, Y4, Y4, Y6
	VORPS   Y6, Y2, Y2

maxreduce:
	VMAXPS       Y1, Y0, Y0
	VORPS        Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	MOVSS        X0, m+24(FP)
	VMOVMSKPS    Y2, AX
	TESTL        AX, AX
	SETNE        nan+28(FP)
	VZEROUPPER
	RET
