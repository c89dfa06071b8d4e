//go:build amd64 && !noasm

#include "textflag.h"

// Vector versions of exp32, sigmoid32, tanh32 and erf32 (mathf.go), with
// the same range reduction and polynomial, of clamping, and of a slice's
// sum and max: for AVX2 and FMA, eight lanes at a time, and below them for
// AVX-512, sixteen. See mathf_amd64.go for the contracts. Each constant is
// stored eight times, a full YMM operand; the AVX-512 loops broadcast the
// first.

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

// AVX-512 versions, sixteen lanes, two vectors a step with their
// instructions interleaved (each lane's exp is a chain of some 15 dependent
// operations, so one vector at a time leaves the units idle). Every step
// loads and stores under the masks K1 and K2, all lanes until the last,
// partial step, so there is no scalar tail. The arithmetic is the AVX2
// loops' operation for operation, and the results are theirs bit for bit
// (NaN payloads aside): VRNDSCALEPS $0 rounds to nearest as VROUNDPS $0
// does, VSCALEFPS scales by 2^n with one rounding as EXP8's two
// multiplications by 2^(n/2) and 2^(n−n/2) do (the first is exact), and
// VPTERNLOGD and masked moves do the AND, OR and blends exactly. VDIVPS
// stays: VRCP14PS and a Newton step keep each bound but round differently
// in some lanes, need a guard for 1/Inf, and were no faster on Zen 4, where
// these loops wait on the FMA units, not the divider.

// EXPCONSTS512 broadcasts the constants EXP2X keeps in Z16–Z27.
#define EXPCONSTS512 \
	VBROADCASTSS LOG2E, Z16; \
	VBROADCASTSS LN2HI, Z17; \
	VBROADCASTSS LN2LO, Z18; \
	VBROADCASTSS C0, Z19;    \
	VBROADCASTSS C1, Z20;    \
	VBROADCASTSS C2, Z21;    \
	VBROADCASTSS C3, Z22;    \
	VBROADCASTSS C4, Z23;    \
	VBROADCASTSS C5, Z24;    \
	VBROADCASTSS ONE, Z25;   \
	VBROADCASTSS LO, Z26;    \
	VBROADCASTSS HI, Z27

// EXP2X sets ea to e^a and eb to e^b lane by lane, as EXP8 does, using na,
// nb, ta and tb and changing a and b.
#define EXP2X(a, b, ea, eb, na, nb, ta, tb) \
	VMAXPS       a, Z26, a;   \
	VMAXPS       b, Z26, b;   \
	VMINPS       a, Z27, a;   \
	VMINPS       b, Z27, b;   \
	VMULPS       Z16, a, na;  \
	VMULPS       Z16, b, nb;  \
	VRNDSCALEPS  $0, na, na;  \
	VRNDSCALEPS  $0, nb, nb;  \
	VFNMADD231PS Z17, na, a;  \
	VFNMADD231PS Z17, nb, b;  \
	VFNMADD231PS Z18, na, a;  \
	VFNMADD231PS Z18, nb, b;  \
	VMOVAPS      Z19, ea;     \
	VMOVAPS      Z19, eb;     \
	VFMADD213PS  Z20, a, ea;  \
	VFMADD213PS  Z20, b, eb;  \
	VFMADD213PS  Z21, a, ea;  \
	VFMADD213PS  Z21, b, eb;  \
	VFMADD213PS  Z22, a, ea;  \
	VFMADD213PS  Z22, b, eb;  \
	VFMADD213PS  Z23, a, ea;  \
	VFMADD213PS  Z23, b, eb;  \
	VFMADD213PS  Z24, a, ea;  \
	VFMADD213PS  Z24, b, eb;  \
	VMULPS       a, a, ta;    \
	VMULPS       b, b, tb;    \
	VFMADD213PS  a, ta, ea;   \
	VFMADD213PS  b, tb, eb;   \
	VADDPS       Z25, ea, ea; \
	VADDPS       Z25, eb, eb; \
	VSCALEFPS    na, ea, ea;  \
	VSCALEFPS    nb, eb, eb

// SLICES512 loads dst's base into DI, src's into SI, src's length into CX,
// the number of whole steps of 32 into BX, and all lanes into K1 and K2.
#define SLICES512 \
	MOVQ   dst_base+0(FP), DI;  \
	MOVQ   src_base+24(FP), SI; \
	MOVQ   src_len+32(FP), CX;  \
	MOVQ   CX, BX;              \
	SHRQ   $5, BX;              \
	KXNORW K1, K1, K1;          \
	KXNORW K2, K2, K2

// TAILMASKS sets K1 to the first min(CX, 16) lanes and K2 to the next
// CX − 16, for a last step of CX < 32 elements, using AX.
#define TAILMASKS \
	MOVL  $1, AX;  \
	SHLL  CX, AX;  \
	DECL  AX;      \
	KMOVW AX, K1;  \
	SHRL  $16, AX; \
	KMOVW AX, K2

// LOOP512 runs the step body over BX whole steps of 32 elements, then
// once more under TAILMASKS for the CX mod 32 left, if any, and goes to
// done.
#define LOOP512(body, loop, tail, done) \
	TESTQ BX, BX;   \
	JEQ   tail;     \
loop:               \
	body;           \
	ADDQ  $128, SI; \
	ADDQ  $128, DI; \
	DECQ  BX;       \
	JNZ   loop;     \
tail:               \
	ANDQ  $31, CX;  \
	JEQ   done;     \
	TAILMASKS;      \
	body

// SIGMOID2X stores 1/(1 + e^−x) of x at (SI) and 64(SI), times x in the
// lanes of K3, under K1 and K2, to (DI) and 64(DI).
#define SIGMOID2X \
	VMOVUPS.Z (SI), K1, Z0;                \
	VMOVUPS.Z 64(SI), K2, Z1;              \
	VPXORD    Z28, Z0, Z4;                 \
	VPXORD    Z28, Z1, Z5;                 \
	EXP2X(Z4, Z5, Z2, Z3, Z6, Z7, Z8, Z9); \
	VADDPS    Z25, Z2, Z2;                 \
	VADDPS    Z25, Z3, Z3;                 \
	VDIVPS    Z2, Z25, Z2;                 \
	VDIVPS    Z3, Z25, Z3;                 \
	VMULPS    Z0, Z2, K3, Z2;              \
	VMULPS    Z1, Z3, K3, Z3;              \
	VMOVUPS   Z2, K1, (DI);                \
	VMOVUPS   Z3, K2, 64(DI)

// func sigmoidAVX512(dst, src []float32, gate bool)
// As sigmoidAVX2, over all of src; the gate sets K3 to all lanes or none.
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-49
	SLICES512
	MOVBLZX      gate+48(FP), AX
	NEGL         AX
	KMOVW        AX, K3
	EXPCONSTS512
	VPBROADCASTD SIGN, Z28
	LOOP512(SIGMOID2X, sig512loop, sig512tail, sig512done)

sig512done:
	VZEROUPPER
	RET

// HSUM512 sets the first lane of X10 to the sum of Z10's sixteen, using
// Z11.
#define HSUM512 \
	VEXTRACTF64X4 $1, Z10, Y11;  \
	VADDPS        Y11, Y10, Y10; \
	VEXTRACTF128  $1, Y10, X11;  \
	VADDPS        X11, X10, X10; \
	VHADDPS       X10, X10, X10; \
	VHADDPS       X10, X10, X10

// EXPSUM2X stores e^(x − shift) of x at (SI) and 64(SI), under K1 and K2,
// to (DI) and 64(DI), and adds them to the sums in Z10 and Z11.
#define EXPSUM2X \
	VMOVUPS.Z (SI), K1, Z0;                \
	VMOVUPS.Z 64(SI), K2, Z1;              \
	VSUBPS    Z28, Z0, Z0;                 \
	VSUBPS    Z28, Z1, Z1;                 \
	EXP2X(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	VMOVUPS   Z2, K1, (DI);                \
	VMOVUPS   Z3, K2, 64(DI);              \
	VADDPS    Z2, Z10, K1, Z10;            \
	VADDPS    Z3, Z11, K2, Z11

// func expSumAVX512(dst, src []float32, shift float32) float32
// As expSumAVX2, over all of src; the sum differs from its by rounding (32
// partial sums, not 8).
TEXT ·expSumAVX512(SB), NOSPLIT, $0-60
	SLICES512
	EXPCONSTS512
	VBROADCASTSS shift+48(FP), Z28
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	LOOP512(EXPSUM2X, exp512loop, exp512tail, exp512sum)

exp512sum:
	VADDPS Z11, Z10, Z10
	HSUM512
	VZEROUPPER
	MOVSS  X10, ret+56(FP)
	RET

// ERF2X stores erf x of x at (SI) and 64(SI), under K1 and K2, to (DI)
// and 64(DI), as erfAVX2 computes it: x in Z0 and Z1, |x| in Z2 and Z3,
// the series in Z4 and Z5, e^−x² in Z8 and Z9, t in Z10 and Z11, 7.1.26
// in Z6 and Z7. The series' constants, and 7.1.26's, are broadcast from
// memory.
#define ERF2X \
	VMOVUPS.Z        (SI), K1, Z0;                     \
	VMOVUPS.Z        64(SI), K2, Z1;                   \
	VPANDD           Z29, Z0, Z2;                      \
	VPANDD           Z29, Z1, Z3;                      \
	VMULPS           Z0, Z0, Z12;                      \
	VMULPS           Z1, Z1, Z13;                      \
	VBROADCASTSS     S6, Z4;                           \
	VBROADCASTSS     S6, Z5;                           \
	VFMADD213PS.BCST S5, Z12, Z4;                      \
	VFMADD213PS.BCST S5, Z13, Z5;                      \
	VFMADD213PS.BCST S4, Z12, Z4;                      \
	VFMADD213PS.BCST S4, Z13, Z5;                      \
	VFMADD213PS.BCST S3, Z12, Z4;                      \
	VFMADD213PS.BCST S3, Z13, Z5;                      \
	VFMADD213PS.BCST S2, Z12, Z4;                      \
	VFMADD213PS.BCST S2, Z13, Z5;                      \
	VFMADD213PS.BCST S1, Z12, Z4;                      \
	VFMADD213PS.BCST S1, Z13, Z5;                      \
	VFMADD213PS      Z25, Z12, Z4;                     \
	VFMADD213PS      Z25, Z13, Z5;                     \
	VMULPS           Z0, Z4, Z4;                       \
	VMULPS           Z1, Z5, Z5;                       \
	VMULPS.BCST      TSP, Z4, Z4;                      \
	VMULPS.BCST      TSP, Z5, Z5;                      \
	VMULPS           Z2, Z2, Z6;                       \
	VMULPS           Z3, Z3, Z7;                       \
	VPXORD           Z28, Z6, Z6;                      \
	VPXORD           Z28, Z7, Z7;                      \
	EXP2X(Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13);         \
	VMULPS.BCST      P, Z2, Z10;                       \
	VMULPS.BCST      P, Z3, Z11;                       \
	VADDPS           Z25, Z10, Z10;                    \
	VADDPS           Z25, Z11, Z11;                    \
	VDIVPS           Z10, Z25, Z10;                    \
	VDIVPS           Z11, Z25, Z11;                    \
	VBROADCASTSS     A5, Z6;                           \
	VBROADCASTSS     A5, Z7;                           \
	VFMADD213PS.BCST A4, Z10, Z6;                      \
	VFMADD213PS.BCST A4, Z11, Z7;                      \
	VFMADD213PS.BCST A3, Z10, Z6;                      \
	VFMADD213PS.BCST A3, Z11, Z7;                      \
	VFMADD213PS.BCST A2, Z10, Z6;                      \
	VFMADD213PS.BCST A2, Z11, Z7;                      \
	VFMADD213PS.BCST A1, Z10, Z6;                      \
	VFMADD213PS.BCST A1, Z11, Z7;                      \
	VMULPS           Z10, Z6, Z6;                      \
	VMULPS           Z11, Z7, Z7;                      \
	VMULPS           Z8, Z6, Z6;                       \
	VMULPS           Z9, Z7, Z7;                       \
	VSUBPS           Z6, Z25, Z6;                      \
	VSUBPS           Z7, Z25, Z7;                      \
	VPTERNLOGD       $0xf8, Z28, Z0, Z6;               \
	VPTERNLOGD       $0xf8, Z28, Z1, Z7;               \
	VCMPPS           $1, Z30, Z2, K4;                  \
	VCMPPS           $1, Z30, Z3, K5;                  \
	VMOVAPS          Z4, K4, Z6;                       \
	VMOVAPS          Z5, K5, Z7;                       \
	VMOVUPS          Z6, K1, (DI);                     \
	VMOVUPS          Z7, K2, 64(DI)

// func erfAVX512(dst, src []float32)
// As erfAVX2, over all of src. VPTERNLOGD $0xf8 ORs x's sign bit (x AND
// SIGN) into 7.1.26's value; the series replaces it where |x| < 0.5.
TEXT ·erfAVX512(SB), NOSPLIT, $0-48
	SLICES512
	EXPCONSTS512
	VPBROADCASTD SIGN, Z28
	VPBROADCASTD ABS, Z29
	VBROADCASTSS HALF, Z30
	LOOP512(ERF2X, erf512loop, erf512tail, erf512done)

erf512done:
	VZEROUPPER
	RET

// TANH2X stores tanh x of x at (SI) and 64(SI), under K1 and K2, to (DI)
// and 64(DI), as tanhAVX2 computes it: x in Z0 and Z1, |x| in Z2 and Z3,
// the odd polynomial in Z4 and Z5, 1 − 2/(e^2|x| + 1) in Z8 and Z9.
#define TANH2X \
	VMOVUPS.Z        (SI), K1, Z0;                     \
	VMOVUPS.Z        64(SI), K2, Z1;                   \
	VPANDD           Z29, Z0, Z2;                      \
	VPANDD           Z29, Z1, Z3;                      \
	VMULPS           Z0, Z0, Z12;                      \
	VMULPS           Z1, Z1, Z13;                      \
	VBROADCASTSS     T4, Z4;                           \
	VBROADCASTSS     T4, Z5;                           \
	VFMADD213PS.BCST T3, Z12, Z4;                      \
	VFMADD213PS.BCST T3, Z13, Z5;                      \
	VFMADD213PS.BCST T2, Z12, Z4;                      \
	VFMADD213PS.BCST T2, Z13, Z5;                      \
	VFMADD213PS.BCST T1, Z12, Z4;                      \
	VFMADD213PS.BCST T1, Z13, Z5;                      \
	VFMADD213PS.BCST T0, Z12, Z4;                      \
	VFMADD213PS.BCST T0, Z13, Z5;                      \
	VMULPS           Z12, Z4, Z4;                      \
	VMULPS           Z13, Z5, Z5;                      \
	VFMADD213PS      Z0, Z0, Z4;                       \
	VFMADD213PS      Z1, Z1, Z5;                       \
	VADDPS           Z2, Z2, Z6;                       \
	VADDPS           Z3, Z3, Z7;                       \
	EXP2X(Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13);         \
	VADDPS           Z25, Z8, Z8;                      \
	VADDPS           Z25, Z9, Z9;                      \
	VDIVPS           Z8, Z30, Z8;                      \
	VDIVPS           Z9, Z30, Z9;                      \
	VSUBPS           Z8, Z25, Z8;                      \
	VSUBPS           Z9, Z25, Z9;                      \
	VPTERNLOGD       $0xf8, Z28, Z0, Z8;               \
	VPTERNLOGD       $0xf8, Z28, Z1, Z9;               \
	VCMPPS           $1, Z31, Z2, K4;                  \
	VCMPPS           $1, Z31, Z3, K5;                  \
	VMOVAPS          Z4, K4, Z8;                       \
	VMOVAPS          Z5, K5, Z9;                       \
	VMOVUPS          Z8, K1, (DI);                     \
	VMOVUPS          Z9, K2, 64(DI)

// func tanhAVX512(dst, src []float32)
// As tanhAVX2, over all of src, with erfAVX512's sign and blend.
TEXT ·tanhAVX512(SB), NOSPLIT, $0-48
	SLICES512
	EXPCONSTS512
	VPBROADCASTD SIGN, Z28
	VPBROADCASTD ABS, Z29
	VBROADCASTSS TWO, Z30
	VBROADCASTSS TSMALL, Z31
	LOOP512(TANH2X, tanh512loop, tanh512tail, tanh512done)

tanh512done:
	VZEROUPPER
	RET

// MASKS4 sets K1–K4 to the lanes of the four vectors of a step of 64
// elements that the first CX < 64 fill, using AX.
#define MASKS4 \
	MOVQ  $1, AX;  \
	SHLQ  CX, AX;  \
	DECQ  AX;      \
	KMOVW AX, K1;  \
	SHRQ  $16, AX; \
	KMOVW AX, K2;  \
	SHRQ  $16, AX; \
	KMOVW AX, K3;  \
	SHRQ  $16, AX; \
	KMOVW AX, K4

// CLAMP4X clamps the 64 floats at DI under K1–K4, in place.
#define CLAMP4X \
	VMOVUPS.Z (DI), K1, Z0;    \
	VMOVUPS.Z 64(DI), K2, Z1;  \
	VMOVUPS.Z 128(DI), K3, Z2; \
	VMOVUPS.Z 192(DI), K4, Z3; \
	VMAXPS    Z0, Z6, Z0;      \
	VMAXPS    Z1, Z6, Z1;      \
	VMAXPS    Z2, Z6, Z2;      \
	VMAXPS    Z3, Z6, Z3;      \
	VMINPS    Z0, Z7, Z0;      \
	VMINPS    Z1, Z7, Z1;      \
	VMINPS    Z2, Z7, Z2;      \
	VMINPS    Z3, Z7, Z3;      \
	VMOVUPS   Z0, K1, (DI);    \
	VMOVUPS   Z1, K2, 64(DI);  \
	VMOVUPS   Z2, K3, 128(DI); \
	VMOVUPS   Z3, K4, 192(DI)

// func clampAVX512(y []float32, lo, hi float32)
// As clampAVX2, over all of y, 64 floats a step.
TEXT ·clampAVX512(SB), NOSPLIT, $0-32
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	VBROADCASTSS lo+24(FP), Z6
	VBROADCASTSS hi+28(FP), Z7
	KXNORW       K1, K1, K1
	KXNORW       K2, K2, K2
	KXNORW       K3, K3, K3
	KXNORW       K4, K4, K4
	MOVQ         CX, BX
	SHRQ         $6, BX
	JEQ          clamp512tail

clamp512loop:
	CLAMP4X
	ADDQ $256, DI
	DECQ BX
	JNZ  clamp512loop

clamp512tail:
	ANDQ $63, CX
	JEQ  clamp512done
	MASKS4
	CLAMP4X

clamp512done:
	VZEROUPPER
	RET

// func sumAVX512(x []float32) float32
// The sum of x, in four vectors of partial sums, 64 floats a step, under
// K1–K4.
TEXT ·sumAVX512(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	KXNORW K1, K1, K1
	KXNORW K2, K2, K2
	KXNORW K3, K3, K3
	KXNORW K4, K4, K4
	MOVQ   CX, BX
	SHRQ   $6, BX
	JEQ    sum512tail

sum512loop:
	VADDPS (SI), Z0, Z0
	VADDPS 64(SI), Z1, Z1
	VADDPS 128(SI), Z2, Z2
	VADDPS 192(SI), Z3, Z3
	ADDQ   $256, SI
	DECQ   BX
	JNZ    sum512loop

sum512tail:
	ANDQ   $63, CX
	JEQ    sum512done
	MASKS4
	VADDPS (SI), Z0, K1, Z0
	VADDPS 64(SI), Z1, K2, Z1
	VADDPS 128(SI), Z2, K3, Z2
	VADDPS 192(SI), Z3, K4, Z3

sum512done:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z10
	HSUM512
	VZEROUPPER
	MOVSS  X10, ret+24(FP)
	RET

// NEGMIN sets a to min(a, b) as Go's min has it, NaN if either is NaN,
// −0 below +0: VMINPS gives its second Go operand when the two are
// unordered or both zeros, so one of the two orders gives the NaN, or −0,
// and ORing them keeps it (a NaN's bits ORed with any float's are a NaN's).
// Go's max(a, b) is −min(−a, −b), and max loops keep −max this way. t is
// scratch; a, b and t are all X, all Y or all Z registers, and VPORD serves
// only Z (VORPS only X and Y).
#define NEGMIN512(a, b, t) \
	VMINPS b, a, t; \
	VMINPS a, b, a; \
	VPORD  t, a, a

#define NEGMIN256(a, b, t) \
	VMINPS b, a, t; \
	VMINPS a, b, a; \
	VORPS  t, a, a

// NEGMAX4X takes the negated floats at (SI), 64(SI), 128(SI) and 192(SI),
// under K1–K4 (−Inf elsewhere), into −max in Z0–Z3, using Z4–Z7 and Z9.
#define NEGMAX4X \
	VMOVAPS   Z8, Z4;              \
	VMOVAPS   Z8, Z5;              \
	VMOVAPS   Z8, Z6;              \
	VMOVAPS   Z8, Z7;              \
	VMOVUPS   (SI), K1, Z4;        \
	VMOVUPS   64(SI), K2, Z5;      \
	VMOVUPS   128(SI), K3, Z6;     \
	VMOVUPS   192(SI), K4, Z7;     \
	VPXORD    Z10, Z4, Z4;         \
	VPXORD    Z10, Z5, Z5;         \
	VPXORD    Z10, Z6, Z6;         \
	VPXORD    Z10, Z7, Z7;         \
	NEGMIN512(Z0, Z4, Z9);         \
	NEGMIN512(Z1, Z5, Z9);         \
	NEGMIN512(Z2, Z6, Z9);         \
	NEGMIN512(Z3, Z7, Z9)

// func maxAVX512(x []float32) float32
// Go's max over x (−Inf for none), as a fold from −Inf in any order gives
// it: max is associative and commutative, NaN and the signed zeros
// included. Four vectors of −max, 64 floats a step, under K1–K4.
TEXT ·maxAVX512(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	MOVL         $0xff800000, AX
	VPBROADCASTD AX, Z8
	VPBROADCASTD SIGN, Z10
	VPXORD       Z10, Z8, Z0
	VMOVAPS      Z0, Z1
	VMOVAPS      Z0, Z2
	VMOVAPS      Z0, Z3
	KXNORW       K1, K1, K1
	KXNORW       K2, K2, K2
	KXNORW       K3, K3, K3
	KXNORW       K4, K4, K4
	MOVQ         CX, BX
	SHRQ         $6, BX
	JEQ          max512tail

max512loop:
	NEGMAX4X
	ADDQ $256, SI
	DECQ BX
	JNZ  max512loop

max512tail:
	ANDQ $63, CX
	JEQ  max512done
	MASKS4
	NEGMAX4X

max512done:
	NEGMIN512(Z0, Z1, Z9)
	NEGMIN512(Z2, Z3, Z9)
	NEGMIN512(Z0, Z2, Z9)
	VSHUFF32X4 $0x4e, Z0, Z0, Z1
	NEGMIN512(Z0, Z1, Z9)
	VSHUFF32X4 $0xb1, Z0, Z0, Z1
	NEGMIN512(Z0, Z1, Z9)
	VPERMILPS  $0x4e, Z0, Z1
	NEGMIN512(Z0, Z1, Z9)
	VPERMILPS  $0xb1, Z0, Z1
	NEGMIN512(Z0, Z1, Z9)
	VPXORD     Z10, Z0, Z0
	VZEROUPPER
	MOVSS      X0, ret+24(FP)
	RET

// func sumAVX2(x []float32) float32
// The sum of the first len(x)/8·8 floats of x, in four vectors of partial
// sums, 32 floats a step, then eight at a time into the first.
TEXT ·sumAVX2(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   CX, BX
	SHRQ   $5, BX
	JEQ    sum256eights

sum256loop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   BX
	JNZ    sum256loop

sum256eights:
	ANDQ $31, CX
	SHRQ $3, CX
	JEQ  sum256done

sum256eight:
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    sum256eight

sum256done:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func maxAVX2(x []float32) float32
// Go's max over the first len(x)/8·8 floats of x (−Inf for none), as
// maxAVX512 computes it, four vectors of −max, 32 floats a step, then
// eight at a time into the first.
TEXT ·maxAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS SIGN, Y10
	MOVL         $0x7f800000, AX
	MOVL         AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3
	MOVQ         CX, BX
	SHRQ         $5, BX
	JEQ          max256eights

max256loop:
	VXORPS (SI), Y10, Y4
	VXORPS 32(SI), Y10, Y5
	VXORPS 64(SI), Y10, Y6
	VXORPS 96(SI), Y10, Y7
	NEGMIN256(Y0, Y4, Y9)
	NEGMIN256(Y1, Y5, Y9)
	NEGMIN256(Y2, Y6, Y9)
	NEGMIN256(Y3, Y7, Y9)
	ADDQ   $128, SI
	DECQ   BX
	JNZ    max256loop

max256eights:
	ANDQ $31, CX
	SHRQ $3, CX
	JEQ  max256done

max256eight:
	VXORPS (SI), Y10, Y4
	NEGMIN256(Y0, Y4, Y9)
	ADDQ   $32, SI
	DECQ   CX
	JNZ    max256eight

max256done:
	NEGMIN256(Y0, Y1, Y9)
	NEGMIN256(Y2, Y3, Y9)
	NEGMIN256(Y0, Y2, Y9)
	VPERM2F128 $1, Y0, Y0, Y1
	NEGMIN256(Y0, Y1, Y9)
	VPERMILPS  $0x4e, Y0, Y1
	NEGMIN256(Y0, Y1, Y9)
	VPERMILPS  $0xb1, Y0, Y1
	NEGMIN256(Y0, Y1, Y9)
	VXORPS     Y10, Y0, Y0
	VZEROUPPER
	MOVSS      X0, ret+24(FP)
	RET
