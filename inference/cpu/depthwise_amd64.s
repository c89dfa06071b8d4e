//go:build amd64 && !noasm

#include "textflag.h"

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

// func dwRowAVX2(y, x, w []float32)
// y[i] += Σ_t w[t]·x[i+t] for i < len(y), t < len(w): one row of a
// depthwise convolution at stride 1, one kernel row at a time. Blocks of
// 32 outputs keep four independent FMA chains in flight (Y0–Y3), then
// blocks of 8, then the last 1 to 7 outputs through masked loads and
// stores, which touch no element past the row. Registers: DI y, SI x at
// the block, R8 w, R9 len(w), R10 the tap's x, R11 the tap's w, DX taps
// left, Y6 the tail's mask.
TEXT ·dwRowAVX2(SB), NOSPLIT, $0-72
	MOVQ  y_base+0(FP), DI
	MOVQ  y_len+8(FP), CX
	MOVQ  x_base+24(FP), SI
	MOVQ  w_base+48(FP), R8
	MOVQ  w_len+56(FP), R9
	TESTQ R9, R9
	JEQ   done

block32:
	CMPQ    CX, $32
	JLT     block8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    SI, R10
	MOVQ    R8, R11
	MOVQ    R9, DX

tap32:
	VBROADCASTSS (R11), Y4
	VFMADD231PS  (R10), Y4, Y0
	VFMADD231PS  32(R10), Y4, Y1
	VFMADD231PS  64(R10), Y4, Y2
	VFMADD231PS  96(R10), Y4, Y3
	ADDQ         $4, R10
	ADDQ         $4, R11
	DECQ         DX
	JNZ          tap32
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          block32

block8:
	CMPQ    CX, $8
	JLT     tail
	VMOVUPS (DI), Y0
	MOVQ    SI, R10
	MOVQ    R8, R11
	MOVQ    R9, DX

tap8:
	VBROADCASTSS (R11), Y4
	VFMADD231PS  (R10), Y4, Y0
	ADDQ         $4, R10
	ADDQ         $4, R11
	DECQ         DX
	JNZ          tap8
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	SUBQ         $8, CX
	JMP          block8

tail:
	TESTQ      CX, CX
	JEQ        done
	LEAQ       tailmask<>+32(SB), AX
	SHLQ       $2, CX
	SUBQ       CX, AX
	VMOVUPS    (AX), Y6
	VMASKMOVPS (DI), Y6, Y0
	MOVQ       SI, R10
	MOVQ       R8, R11
	MOVQ       R9, DX

taptail:
	VBROADCASTSS (R11), Y4
	VMASKMOVPS   (R10), Y6, Y5
	VFMADD231PS  Y5, Y4, Y0
	ADDQ         $4, R10
	ADDQ         $4, R11
	DECQ         DX
	JNZ          taptail
	VMASKMOVPS   Y0, Y6, (DI)

done:
	VZEROUPPER
	RET

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
