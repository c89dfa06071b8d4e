//go:build amd64 && !noasm

#include "textflag.h"

// Vector versions of exp32, sigmoid32, tanh32 and erf32 (mathf.go) for AVX2 and FMA, eight
// lanes at a time, with the same range reduction and polynomial; see
// mathf_amd64.go for the contracts. Each constant is stored eight times, a
// full YMM operand.

DATA mathf<>+0(SB)/4, $0x3fb8aa3b
DATA mathf<>+4(SB)/4, $0x3fb8aa3b
DATA mathf<>+8(SB)/4, $0x3fb8aa3b
DATA mathf<>+12(SB)/4, $0x3fb8aa3b
DATA mathf<>+16(SB)/4, $0x3fb8aa3b
DATA mathf<>+20(SB)/4, $0x3fb8aa3b
DATA mathf<>+24(SB)/4, $0x3fb8aa3b
DATA mathf<>+28(SB)/4, $0x3fb8aa3b
DATA mathf<>+32(SB)/4, $0x3f318000
DATA mathf<>+36(SB)/4, $0x3f318000
DATA mathf<>+40(SB)/4, $0x3f318000
DATA mathf<>+44(SB)/4, $0x3f318000
DATA mathf<>+48(SB)/4, $0x3f318000
DATA mathf<>+52(SB)/4, $0x3f318000
DATA mathf<>+56(SB)/4, $0x3f318000
DATA mathf<>+60(SB)/4, $0x3f318000
DATA mathf<>+64(SB)/4, $0xb95e8083
DATA mathf<>+68(SB)/4, $0xb95e8083
DATA mathf<>+72(SB)/4, $0xb95e8083
DATA mathf<>+76(SB)/4, $0xb95e8083
DATA mathf<>+80(SB)/4, $0xb95e8083
DATA mathf<>+84(SB)/4, $0xb95e8083
DATA mathf<>+88(SB)/4, $0xb95e8083
DATA mathf<>+92(SB)/4, $0xb95e8083
DATA mathf<>+96(SB)/4, $0x39506967
DATA mathf<>+100(SB)/4, $0x39506967
DATA mathf<>+104(SB)/4, $0x39506967
DATA mathf<>+108(SB)/4, $0x39506967
DATA mathf<>+112(SB)/4, $0x39506967
DATA mathf<>+116(SB)/4, $0x39506967
DATA mathf<>+120(SB)/4, $0x39506967
DATA mathf<>+124(SB)/4, $0x39506967
DATA mathf<>+128(SB)/4, $0x3ab743ce
DATA mathf<>+132(SB)/4, $0x3ab743ce
DATA mathf<>+136(SB)/4, $0x3ab743ce
DATA mathf<>+140(SB)/4, $0x3ab743ce
DATA mathf<>+144(SB)/4, $0x3ab743ce
DATA mathf<>+148(SB)/4, $0x3ab743ce
DATA mathf<>+152(SB)/4, $0x3ab743ce
DATA mathf<>+156(SB)/4, $0x3ab743ce
DATA mathf<>+160(SB)/4, $0x3c088908
DATA mathf<>+164(SB)/4, $0x3c088908
DATA mathf<>+168(SB)/4, $0x3c088908
DATA mathf<>+172(SB)/4, $0x3c088908
DATA mathf<>+176(SB)/4, $0x3c088908
DATA mathf<>+180(SB)/4, $0x3c088908
DATA mathf<>+184(SB)/4, $0x3c088908
DATA mathf<>+188(SB)/4, $0x3c088908
DATA mathf<>+192(SB)/4, $0x3d2aa9c1
DATA mathf<>+196(SB)/4, $0x3d2aa9c1
DATA mathf<>+200(SB)/4, $0x3d2aa9c1
DATA mathf<>+204(SB)/4, $0x3d2aa9c1
DATA mathf<>+208(SB)/4, $0x3d2aa9c1
DATA mathf<>+212(SB)/4, $0x3d2aa9c1
DATA mathf<>+216(SB)/4, $0x3d2aa9c1
DATA mathf<>+220(SB)/4, $0x3d2aa9c1
DATA mathf<>+224(SB)/4, $0x3e2aaaaa
DATA mathf<>+228(SB)/4, $0x3e2aaaaa
DATA mathf<>+232(SB)/4, $0x3e2aaaaa
DATA mathf<>+236(SB)/4, $0x3e2aaaaa
DATA mathf<>+240(SB)/4, $0x3e2aaaaa
DATA mathf<>+244(SB)/4, $0x3e2aaaaa
DATA mathf<>+248(SB)/4, $0x3e2aaaaa
DATA mathf<>+252(SB)/4, $0x3e2aaaaa
DATA mathf<>+256(SB)/4, $0x3f000000
DATA mathf<>+260(SB)/4, $0x3f000000
DATA mathf<>+264(SB)/4, $0x3f000000
DATA mathf<>+268(SB)/4, $0x3f000000
DATA mathf<>+272(SB)/4, $0x3f000000
DATA mathf<>+276(SB)/4, $0x3f000000
DATA mathf<>+280(SB)/4, $0x3f000000
DATA mathf<>+284(SB)/4, $0x3f000000
DATA mathf<>+288(SB)/4, $0x3f800000
DATA mathf<>+292(SB)/4, $0x3f800000
DATA mathf<>+296(SB)/4, $0x3f800000
DATA mathf<>+300(SB)/4, $0x3f800000
DATA mathf<>+304(SB)/4, $0x3f800000
DATA mathf<>+308(SB)/4, $0x3f800000
DATA mathf<>+312(SB)/4, $0x3f800000
DATA mathf<>+316(SB)/4, $0x3f800000
DATA mathf<>+320(SB)/4, $0x42b20000
DATA mathf<>+324(SB)/4, $0x42b20000
DATA mathf<>+328(SB)/4, $0x42b20000
DATA mathf<>+332(SB)/4, $0x42b20000
DATA mathf<>+336(SB)/4, $0x42b20000
DATA mathf<>+340(SB)/4, $0x42b20000
DATA mathf<>+344(SB)/4, $0x42b20000
DATA mathf<>+348(SB)/4, $0x42b20000
DATA mathf<>+352(SB)/4, $0xc2d00000
DATA mathf<>+356(SB)/4, $0xc2d00000
DATA mathf<>+360(SB)/4, $0xc2d00000
DATA mathf<>+364(SB)/4, $0xc2d00000
DATA mathf<>+368(SB)/4, $0xc2d00000
DATA mathf<>+372(SB)/4, $0xc2d00000
DATA mathf<>+376(SB)/4, $0xc2d00000
DATA mathf<>+380(SB)/4, $0xc2d00000
DATA mathf<>+384(SB)/4, $0x7f
DATA mathf<>+388(SB)/4, $0x7f
DATA mathf<>+392(SB)/4, $0x7f
DATA mathf<>+396(SB)/4, $0x7f
DATA mathf<>+400(SB)/4, $0x7f
DATA mathf<>+404(SB)/4, $0x7f
DATA mathf<>+408(SB)/4, $0x7f
DATA mathf<>+412(SB)/4, $0x7f
DATA mathf<>+416(SB)/4, $0x80000000
DATA mathf<>+420(SB)/4, $0x80000000
DATA mathf<>+424(SB)/4, $0x80000000
DATA mathf<>+428(SB)/4, $0x80000000
DATA mathf<>+432(SB)/4, $0x80000000
DATA mathf<>+436(SB)/4, $0x80000000
DATA mathf<>+440(SB)/4, $0x80000000
DATA mathf<>+444(SB)/4, $0x80000000
DATA mathf<>+448(SB)/4, $0x38e00e01
DATA mathf<>+452(SB)/4, $0x38e00e01
DATA mathf<>+456(SB)/4, $0x38e00e01
DATA mathf<>+460(SB)/4, $0x38e00e01
DATA mathf<>+464(SB)/4, $0x38e00e01
DATA mathf<>+468(SB)/4, $0x38e00e01
DATA mathf<>+472(SB)/4, $0x38e00e01
DATA mathf<>+476(SB)/4, $0x38e00e01
DATA mathf<>+480(SB)/4, $0xba46980c
DATA mathf<>+484(SB)/4, $0xba46980c
DATA mathf<>+488(SB)/4, $0xba46980c
DATA mathf<>+492(SB)/4, $0xba46980c
DATA mathf<>+496(SB)/4, $0xba46980c
DATA mathf<>+500(SB)/4, $0xba46980c
DATA mathf<>+504(SB)/4, $0xba46980c
DATA mathf<>+508(SB)/4, $0xba46980c
DATA mathf<>+512(SB)/4, $0x3b97b426
DATA mathf<>+516(SB)/4, $0x3b97b426
DATA mathf<>+520(SB)/4, $0x3b97b426
DATA mathf<>+524(SB)/4, $0x3b97b426
DATA mathf<>+528(SB)/4, $0x3b97b426
DATA mathf<>+532(SB)/4, $0x3b97b426
DATA mathf<>+536(SB)/4, $0x3b97b426
DATA mathf<>+540(SB)/4, $0x3b97b426
DATA mathf<>+544(SB)/4, $0xbcc30c31
DATA mathf<>+548(SB)/4, $0xbcc30c31
DATA mathf<>+552(SB)/4, $0xbcc30c31
DATA mathf<>+556(SB)/4, $0xbcc30c31
DATA mathf<>+560(SB)/4, $0xbcc30c31
DATA mathf<>+564(SB)/4, $0xbcc30c31
DATA mathf<>+568(SB)/4, $0xbcc30c31
DATA mathf<>+572(SB)/4, $0xbcc30c31
DATA mathf<>+576(SB)/4, $0x3dcccccd
DATA mathf<>+580(SB)/4, $0x3dcccccd
DATA mathf<>+584(SB)/4, $0x3dcccccd
DATA mathf<>+588(SB)/4, $0x3dcccccd
DATA mathf<>+592(SB)/4, $0x3dcccccd
DATA mathf<>+596(SB)/4, $0x3dcccccd
DATA mathf<>+600(SB)/4, $0x3dcccccd
DATA mathf<>+604(SB)/4, $0x3dcccccd
DATA mathf<>+608(SB)/4, $0xbeaaaaab
DATA mathf<>+612(SB)/4, $0xbeaaaaab
DATA mathf<>+616(SB)/4, $0xbeaaaaab
DATA mathf<>+620(SB)/4, $0xbeaaaaab
DATA mathf<>+624(SB)/4, $0xbeaaaaab
DATA mathf<>+628(SB)/4, $0xbeaaaaab
DATA mathf<>+632(SB)/4, $0xbeaaaaab
DATA mathf<>+636(SB)/4, $0xbeaaaaab
DATA mathf<>+640(SB)/4, $0x3f906ebb
DATA mathf<>+644(SB)/4, $0x3f906ebb
DATA mathf<>+648(SB)/4, $0x3f906ebb
DATA mathf<>+652(SB)/4, $0x3f906ebb
DATA mathf<>+656(SB)/4, $0x3f906ebb
DATA mathf<>+660(SB)/4, $0x3f906ebb
DATA mathf<>+664(SB)/4, $0x3f906ebb
DATA mathf<>+668(SB)/4, $0x3f906ebb
DATA mathf<>+672(SB)/4, $0x3ea7ba05
DATA mathf<>+676(SB)/4, $0x3ea7ba05
DATA mathf<>+680(SB)/4, $0x3ea7ba05
DATA mathf<>+684(SB)/4, $0x3ea7ba05
DATA mathf<>+688(SB)/4, $0x3ea7ba05
DATA mathf<>+692(SB)/4, $0x3ea7ba05
DATA mathf<>+696(SB)/4, $0x3ea7ba05
DATA mathf<>+700(SB)/4, $0x3ea7ba05
DATA mathf<>+704(SB)/4, $0x3e827906
DATA mathf<>+708(SB)/4, $0x3e827906
DATA mathf<>+712(SB)/4, $0x3e827906
DATA mathf<>+716(SB)/4, $0x3e827906
DATA mathf<>+720(SB)/4, $0x3e827906
DATA mathf<>+724(SB)/4, $0x3e827906
DATA mathf<>+728(SB)/4, $0x3e827906
DATA mathf<>+732(SB)/4, $0x3e827906
DATA mathf<>+736(SB)/4, $0xbe91a98e
DATA mathf<>+740(SB)/4, $0xbe91a98e
DATA mathf<>+744(SB)/4, $0xbe91a98e
DATA mathf<>+748(SB)/4, $0xbe91a98e
DATA mathf<>+752(SB)/4, $0xbe91a98e
DATA mathf<>+756(SB)/4, $0xbe91a98e
DATA mathf<>+760(SB)/4, $0xbe91a98e
DATA mathf<>+764(SB)/4, $0xbe91a98e
DATA mathf<>+768(SB)/4, $0x3fb5f0e3
DATA mathf<>+772(SB)/4, $0x3fb5f0e3
DATA mathf<>+776(SB)/4, $0x3fb5f0e3
DATA mathf<>+780(SB)/4, $0x3fb5f0e3
DATA mathf<>+784(SB)/4, $0x3fb5f0e3
DATA mathf<>+788(SB)/4, $0x3fb5f0e3
DATA mathf<>+792(SB)/4, $0x3fb5f0e3
DATA mathf<>+796(SB)/4, $0x3fb5f0e3
DATA mathf<>+800(SB)/4, $0xbfba00e3
DATA mathf<>+804(SB)/4, $0xbfba00e3
DATA mathf<>+808(SB)/4, $0xbfba00e3
DATA mathf<>+812(SB)/4, $0xbfba00e3
DATA mathf<>+816(SB)/4, $0xbfba00e3
DATA mathf<>+820(SB)/4, $0xbfba00e3
DATA mathf<>+824(SB)/4, $0xbfba00e3
DATA mathf<>+828(SB)/4, $0xbfba00e3
DATA mathf<>+832(SB)/4, $0x3f87dc22
DATA mathf<>+836(SB)/4, $0x3f87dc22
DATA mathf<>+840(SB)/4, $0x3f87dc22
DATA mathf<>+844(SB)/4, $0x3f87dc22
DATA mathf<>+848(SB)/4, $0x3f87dc22
DATA mathf<>+852(SB)/4, $0x3f87dc22
DATA mathf<>+856(SB)/4, $0x3f87dc22
DATA mathf<>+860(SB)/4, $0x3f87dc22
DATA mathf<>+864(SB)/4, $0x3f000000
DATA mathf<>+868(SB)/4, $0x3f000000
DATA mathf<>+872(SB)/4, $0x3f000000
DATA mathf<>+876(SB)/4, $0x3f000000
DATA mathf<>+880(SB)/4, $0x3f000000
DATA mathf<>+884(SB)/4, $0x3f000000
DATA mathf<>+888(SB)/4, $0x3f000000
DATA mathf<>+892(SB)/4, $0x3f000000
DATA mathf<>+896(SB)/4, $0x7fffffff
DATA mathf<>+900(SB)/4, $0x7fffffff
DATA mathf<>+904(SB)/4, $0x7fffffff
DATA mathf<>+908(SB)/4, $0x7fffffff
DATA mathf<>+912(SB)/4, $0x7fffffff
DATA mathf<>+916(SB)/4, $0x7fffffff
DATA mathf<>+920(SB)/4, $0x7fffffff
DATA mathf<>+924(SB)/4, $0x7fffffff
DATA mathf<>+928(SB)/4, $0xbbbaf0ea
DATA mathf<>+932(SB)/4, $0xbbbaf0ea
DATA mathf<>+936(SB)/4, $0xbbbaf0ea
DATA mathf<>+940(SB)/4, $0xbbbaf0ea
DATA mathf<>+944(SB)/4, $0xbbbaf0ea
DATA mathf<>+948(SB)/4, $0xbbbaf0ea
DATA mathf<>+952(SB)/4, $0xbbbaf0ea
DATA mathf<>+956(SB)/4, $0xbbbaf0ea
DATA mathf<>+960(SB)/4, $0x3ca9134e
DATA mathf<>+964(SB)/4, $0x3ca9134e
DATA mathf<>+968(SB)/4, $0x3ca9134e
DATA mathf<>+972(SB)/4, $0x3ca9134e
DATA mathf<>+976(SB)/4, $0x3ca9134e
DATA mathf<>+980(SB)/4, $0x3ca9134e
DATA mathf<>+984(SB)/4, $0x3ca9134e
DATA mathf<>+988(SB)/4, $0x3ca9134e
DATA mathf<>+992(SB)/4, $0xbd5c1e2d
DATA mathf<>+996(SB)/4, $0xbd5c1e2d
DATA mathf<>+1000(SB)/4, $0xbd5c1e2d
DATA mathf<>+1004(SB)/4, $0xbd5c1e2d
DATA mathf<>+1008(SB)/4, $0xbd5c1e2d
DATA mathf<>+1012(SB)/4, $0xbd5c1e2d
DATA mathf<>+1016(SB)/4, $0xbd5c1e2d
DATA mathf<>+1020(SB)/4, $0xbd5c1e2d
DATA mathf<>+1024(SB)/4, $0x3e088393
DATA mathf<>+1028(SB)/4, $0x3e088393
DATA mathf<>+1032(SB)/4, $0x3e088393
DATA mathf<>+1036(SB)/4, $0x3e088393
DATA mathf<>+1040(SB)/4, $0x3e088393
DATA mathf<>+1044(SB)/4, $0x3e088393
DATA mathf<>+1048(SB)/4, $0x3e088393
DATA mathf<>+1052(SB)/4, $0x3e088393
DATA mathf<>+1056(SB)/4, $0xbeaaaa99
DATA mathf<>+1060(SB)/4, $0xbeaaaa99
DATA mathf<>+1064(SB)/4, $0xbeaaaa99
DATA mathf<>+1068(SB)/4, $0xbeaaaa99
DATA mathf<>+1072(SB)/4, $0xbeaaaa99
DATA mathf<>+1076(SB)/4, $0xbeaaaa99
DATA mathf<>+1080(SB)/4, $0xbeaaaa99
DATA mathf<>+1084(SB)/4, $0xbeaaaa99
DATA mathf<>+1088(SB)/4, $0x3f200000
DATA mathf<>+1092(SB)/4, $0x3f200000
DATA mathf<>+1096(SB)/4, $0x3f200000
DATA mathf<>+1100(SB)/4, $0x3f200000
DATA mathf<>+1104(SB)/4, $0x3f200000
DATA mathf<>+1108(SB)/4, $0x3f200000
DATA mathf<>+1112(SB)/4, $0x3f200000
DATA mathf<>+1116(SB)/4, $0x3f200000
DATA mathf<>+1120(SB)/4, $0x40000000
DATA mathf<>+1124(SB)/4, $0x40000000
DATA mathf<>+1128(SB)/4, $0x40000000
DATA mathf<>+1132(SB)/4, $0x40000000
DATA mathf<>+1136(SB)/4, $0x40000000
DATA mathf<>+1140(SB)/4, $0x40000000
DATA mathf<>+1144(SB)/4, $0x40000000
DATA mathf<>+1148(SB)/4, $0x40000000
GLOBL mathf<>(SB), RODATA|NOPTR, $1152

#define LOG2E mathf<>+0(SB)
#define LN2HI mathf<>+32(SB)
#define LN2LO mathf<>+64(SB)
#define C0 mathf<>+96(SB)
#define C1 mathf<>+128(SB)
#define C2 mathf<>+160(SB)
#define C3 mathf<>+192(SB)
#define C4 mathf<>+224(SB)
#define C5 mathf<>+256(SB)
#define ONE mathf<>+288(SB)
#define HI mathf<>+320(SB)
#define LO mathf<>+352(SB)
#define BIAS mathf<>+384(SB)
#define S6 mathf<>+448(SB)
#define S5 mathf<>+480(SB)
#define S4 mathf<>+512(SB)
#define S3 mathf<>+544(SB)
#define S2 mathf<>+576(SB)
#define S1 mathf<>+608(SB)
#define TSP mathf<>+640(SB)
#define P mathf<>+672(SB)
#define A1 mathf<>+704(SB)
#define A2 mathf<>+736(SB)
#define A3 mathf<>+768(SB)
#define A4 mathf<>+800(SB)
#define A5 mathf<>+832(SB)
#define HALF mathf<>+864(SB)
#define ABS mathf<>+896(SB)
#define T4 mathf<>+928(SB)
#define T3 mathf<>+960(SB)
#define T2 mathf<>+992(SB)
#define T1 mathf<>+1024(SB)
#define T0 mathf<>+1056(SB)
#define TSMALL mathf<>+1088(SB)
#define TWO mathf<>+1120(SB)
#define SIGN mathf<>+416(SB)

// SLICES loads dst's base into DI, src's into SI, and the number of
// whole blocks of 8 of src into CX.
#define SLICES \
	MOVQ dst_base+0(FP), DI;  \
	MOVQ src_base+24(FP), SI; \
	MOVQ src_len+32(FP), CX;  \
	SHRQ $3, CX

// EXPCONSTS loads the constants EXP8 keeps in registers: 1 in Y7 and the
// clamp bounds in Y8 and Y9.
#define EXPCONSTS \
	VMOVUPS ONE, Y7; \
	VMOVUPS LO, Y8;  \
	VMOVUPS HI, Y9

// EXP8 sets Y2 to e^Y0 lane by lane, using Y1 and Y4. x is clamped to
// [-104, 89] first, where e^x is 0 and +Inf in float32; VMAXPS and VMINPS
// return their first Go operand, x, when it is NaN, so NaN stays NaN. The
// scale 2^n is applied as 2^(n/2)·2^(n−n/2), so that subnormal and
// overflowing results come out right.
#define EXP8 \
	VMAXPS       Y0, Y8, Y0;  \
	VMINPS       Y0, Y9, Y0;  \
	VMULPS       LOG2E, Y0, Y1; \
	VROUNDPS     $0, Y1, Y1;  \
	VFNMADD231PS LN2HI, Y1, Y0; \
	VFNMADD231PS LN2LO, Y1, Y0; \
	VMOVUPS      C0, Y2;      \
	VFMADD213PS  C1, Y0, Y2;  \
	VFMADD213PS  C2, Y0, Y2;  \
	VFMADD213PS  C3, Y0, Y2;  \
	VFMADD213PS  C4, Y0, Y2;  \
	VFMADD213PS  C5, Y0, Y2;  \
	VMULPS       Y0, Y0, Y4;  \
	VFMADD213PS  Y0, Y4, Y2;  \
	VADDPS       Y7, Y2, Y2;  \
	VCVTPS2DQ    Y1, Y1;      \
	VPSRAD       $1, Y1, Y4;  \
	VPSUBD       Y4, Y1, Y1;  \
	VPADDD       BIAS, Y4, Y4; \
	VPSLLD       $23, Y4, Y4; \
	VPADDD       BIAS, Y1, Y1; \
	VPSLLD       $23, Y1, Y1; \
	VMULPS       Y4, Y2, Y2;  \
	VMULPS       Y1, Y2, Y2

// func expSumAVX2(dst, src []float32, shift float32) float32
TEXT ·expSumAVX2(SB), NOSPLIT, $0-60
	SLICES
	EXPCONSTS
	VBROADCASTSS shift+48(FP), Y3
	VXORPS       Y5, Y5, Y5
	TESTQ        CX, CX
	JEQ          expdone

exploop:
	VMOVUPS (SI), Y0
	VSUBPS  Y3, Y0, Y0
	EXP8
	VMOVUPS Y2, (DI)
	VADDPS  Y2, Y5, Y5
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     exploop

expdone:
	VEXTRACTF128 $1, Y5, X0
	VADDPS       X0, X5, X5
	VHADDPS      X5, X5, X5
	VHADDPS      X5, X5, X5
	VZEROUPPER
	MOVSS        X5, ret+56(FP)
	RET

// func sigmoidAVX2(dst, src []float32, gate bool)
// dst[i] = 1/(1 + e^−src[i]), times src[i] with gate (SiLU: the same
// operations as Sigmoid then Mul, so the result is theirs bit for bit).
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-49
	SLICES
	MOVBQZX gate+48(FP), AX
	VMOVUPS SIGN, Y6
	EXPCONSTS
	TESTQ   CX, CX
	JEQ     sigdone

sigloop:
	VMOVUPS (SI), Y3
	VXORPS  Y6, Y3, Y0
	EXP8
	VADDPS  Y7, Y2, Y2
	VDIVPS  Y2, Y7, Y2
	TESTQ   AX, AX
	JEQ     sigstore
	VMULPS  Y3, Y2, Y2

sigstore:
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     sigloop

sigdone:
	VZEROUPPER
	RET

// func erfAVX2(dst, src []float32)
// Both of erf32's formulas are computed for every lane and blended: the
// series where |x| < 0.5, Abramowitz and Stegun's 7.1.26 with x's sign
// elsewhere (NaN takes that side and stays NaN). Y3 holds x, Y5 |x|, Y6 the
// series, Y10 t, Y11 the 7.1.26 value.
TEXT ·erfAVX2(SB), NOSPLIT, $0-48
	SLICES
	EXPCONSTS
	TESTQ   CX, CX
	JEQ     erfdone

erfloop:
	VMOVUPS      (SI), Y3
	VANDPS       ABS, Y3, Y5
	VMULPS       Y3, Y3, Y10
	VMOVUPS      S6, Y6
	VFMADD213PS  S5, Y10, Y6
	VFMADD213PS  S4, Y10, Y6
	VFMADD213PS  S3, Y10, Y6
	VFMADD213PS  S2, Y10, Y6
	VFMADD213PS  S1, Y10, Y6
	VFMADD213PS  Y7, Y10, Y6
	VMULPS       Y3, Y6, Y6
	VMULPS       TSP, Y6, Y6
	VMULPS       Y5, Y5, Y0
	VXORPS       SIGN, Y0, Y0
	EXP8
	VMULPS       P, Y5, Y10
	VADDPS       Y7, Y10, Y10
	VDIVPS       Y10, Y7, Y10
	VMOVUPS      A5, Y11
	VFMADD213PS  A4, Y10, Y11
	VFMADD213PS  A3, Y10, Y11
	VFMADD213PS  A2, Y10, Y11
	VFMADD213PS  A1, Y10, Y11
	VMULPS       Y10, Y11, Y11
	VMULPS       Y2, Y11, Y11
	VSUBPS       Y11, Y7, Y11
	VANDPS       SIGN, Y3, Y1
	VORPS        Y1, Y11, Y11
	VCMPPS       $1, HALF, Y5, Y12
	VBLENDVPS    Y12, Y6, Y11, Y2
	VMOVUPS      Y2, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          erfloop

erfdone:
	VZEROUPPER
	RET

// func clampAVX2(y []float32, lo, hi float32)
// y[i] = min(max(y[i], lo), hi), 32 floats a step: VMAXPS and VMINPS
// return their first Go operand, y[i], when it is NaN (or when both are
// zeros), so NaN and −0 stay.
TEXT ·clampAVX2(SB), NOSPLIT, $0-32
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	VBROADCASTSS lo+24(FP), Y6
	VBROADCASTSS hi+28(FP), Y7
	SHRQ         $5, CX
	TESTQ        CX, CX
	JEQ          clampdone

clamploop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMAXPS  Y0, Y6, Y0
	VMAXPS  Y1, Y6, Y1
	VMAXPS  Y2, Y6, Y2
	VMAXPS  Y3, Y6, Y3
	VMINPS  Y0, Y7, Y0
	VMINPS  Y1, Y7, Y1
	VMINPS  Y2, Y7, Y2
	VMINPS  Y3, Y7, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	DECQ    CX
	JNZ     clamploop

clampdone:
	VZEROUPPER
	RET

// func tanhAVX2(dst, src []float32)
// Both of tanh32's formulas for every lane, blended: the odd polynomial
// where |x| < 0.625, 1 − 2/(e^2|x| + 1) with x's sign elsewhere (NaN takes
// that side and stays NaN). Y3 holds x, Y5 |x|, Y6 the polynomial.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-48
	SLICES
	EXPCONSTS
	TESTQ   CX, CX
	JEQ     tanhdone

tanhloop:
	VMOVUPS     (SI), Y3
	VANDPS      ABS, Y3, Y5
	VMULPS      Y3, Y3, Y10
	VMOVUPS     T4, Y6
	VFMADD213PS T3, Y10, Y6
	VFMADD213PS T2, Y10, Y6
	VFMADD213PS T1, Y10, Y6
	VFMADD213PS T0, Y10, Y6
	VMULPS      Y10, Y6, Y6
	VFMADD213PS Y3, Y3, Y6
	VADDPS      Y5, Y5, Y0
	EXP8
	VADDPS      Y7, Y2, Y2
	VMOVUPS     TWO, Y11
	VDIVPS      Y2, Y11, Y2
	VSUBPS      Y2, Y7, Y2
	VANDPS      SIGN, Y3, Y1
	VORPS       Y1, Y2, Y2
	VCMPPS      $1, TSMALL, Y5, Y12
	VBLENDVPS   Y12, Y6, Y2, Y2
	VMOVUPS     Y2, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         tanhloop

tanhdone:
	VZEROUPPER
	RET
