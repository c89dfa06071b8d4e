//go:build amd64 && !noasm

#include "textflag.h"

// The vector loops of depthwise convolution (dwKernelRowAVX2) and MaxPool
// (maxIntoAVX2), AVX2 and FMA; see depthwise_amd64.go for the contracts.

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

// func dwKernelRowAVX2(y, x, w []float32, kh, kw, ld int, b float32, add bool)
// One output row of a depthwise convolution at stride 1 along the row,
// every kernel row at once: y[i] = b (+ y[i] with add) + Σ_{r<kh, t<kw}
// w[r·kw+t]·x[r·ld + i + t]. Each block of outputs stays in registers
// while all kh·kw taps are added: 32 outputs in four chains (Y0–Y3), then
// 8, then the last 1 to 7 through masked loads and stores. Registers: DI
// y, SI x at the block, R8 w, R9 kh, R13 kw, R14 ld in bytes, R10 the
// kernel row's x, R11 the tap's w, R12 the tap's x, DX rows left, BX taps
// left, Y7 b, Y6 the tail's mask, AX add.
TEXT ·dwKernelRowAVX2(SB), NOSPLIT, $0-101
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         w_base+48(FP), R8
	MOVQ         kh+72(FP), R9
	MOVQ         kw+80(FP), R13
	MOVQ         ld+88(FP), R14
	SHLQ         $2, R14
	VBROADCASTSS b+96(FP), Y7
	MOVBQZX      add+100(FP), AX
	TESTQ        R9, R9
	JEQ          kdone
	TESTQ        R13, R13
	JEQ          kdone

kblock32:
	CMPQ    CX, $32
	JLT     kblock8
	VMOVAPS Y7, Y0
	VMOVAPS Y7, Y1
	VMOVAPS Y7, Y2
	VMOVAPS Y7, Y3
	TESTQ   AX, AX
	JEQ     k32taps
	VADDPS  (DI), Y0, Y0
	VADDPS  32(DI), Y1, Y1
	VADDPS  64(DI), Y2, Y2
	VADDPS  96(DI), Y3, Y3

k32taps:
	MOVQ SI, R10
	MOVQ R8, R11
	MOVQ R9, DX

k32row:
	MOVQ R10, R12
	MOVQ R13, BX

k32tap:
	VBROADCASTSS (R11), Y4
	VFMADD231PS  (R12), Y4, Y0
	VFMADD231PS  32(R12), Y4, Y1
	VFMADD231PS  64(R12), Y4, Y2
	VFMADD231PS  96(R12), Y4, Y3
	ADDQ         $4, R12
	ADDQ         $4, R11
	DECQ         BX
	JNZ          k32tap
	ADDQ         R14, R10
	DECQ         DX
	JNZ          k32row
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          kblock32

kblock8:
	CMPQ    CX, $8
	JLT     ktail
	VMOVAPS Y7, Y0
	TESTQ   AX, AX
	JEQ     k8taps
	VADDPS  (DI), Y0, Y0

k8taps:
	MOVQ SI, R10
	MOVQ R8, R11
	MOVQ R9, DX

k8row:
	MOVQ R10, R12
	MOVQ R13, BX

k8tap:
	VBROADCASTSS (R11), Y4
	VFMADD231PS  (R12), Y4, Y0
	ADDQ         $4, R12
	ADDQ         $4, R11
	DECQ         BX
	JNZ          k8tap
	ADDQ         R14, R10
	DECQ         DX
	JNZ          k8row
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	SUBQ         $8, CX
	JMP          kblock8

ktail:
	TESTQ      CX, CX
	JEQ        kdone
	LEAQ       tailmask<>+32(SB), BX
	SHLQ       $2, CX
	SUBQ       CX, BX
	VMOVUPS    (BX), Y6
	VMOVAPS    Y7, Y0
	TESTQ      AX, AX
	JEQ        ktailtaps
	VMASKMOVPS (DI), Y6, Y5
	VADDPS     Y5, Y0, Y0

ktailtaps:
	MOVQ SI, R10
	MOVQ R8, R11
	MOVQ R9, DX

ktailrow:
	MOVQ R10, R12
	MOVQ R13, BX

ktailtap:
	VBROADCASTSS (R11), Y4
	VMASKMOVPS   (R12), Y6, Y5
	VFMADD231PS  Y5, Y4, Y0
	ADDQ         $4, R12
	ADDQ         $4, R11
	DECQ         BX
	JNZ          ktailtap
	ADDQ         R14, R10
	DECQ         DX
	JNZ          ktailrow
	VMASKMOVPS   Y0, Y6, (DI)

kdone:
	VZEROUPPER
	RET
