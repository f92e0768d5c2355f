#include "textflag.h"

// func scaleBytesLess(dst *float64, src *byte, mu *float64, muStep int, n int, scale float64)
//
// Eight bytes a step: zero-extended to eight int32 (VPMOVZXBD), converted
// four at a time to float64 (exact), multiplied by the broadcast scale (one
// rounding, as float64(b)*scale in Go), less eight values of mu (one more
// rounding; mu advances by muStep bytes a step: 64, or 0 over zeros).
TEXT ·scaleBytesLess(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ mu+16(FP), DX
	MOVQ muStep+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD scale+40(FP), Y15
	SHRQ $3, CX

loop:
	VPMOVZXBD (SI), Y0
	VEXTRACTI128 $1, Y0, X2
	VCVTDQ2PD X0, Y1
	VCVTDQ2PD X2, Y2
	VMULPD Y15, Y1, Y1
	VMULPD Y15, Y2, Y2
	VSUBPD (DX), Y1, Y1
	VSUBPD 32(DX), Y2, Y2
	VMOVUPD Y1, (DI)
	VMOVUPD Y2, 32(DI)
	ADDQ $8, SI
	ADDQ R8, DX
	ADDQ $64, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET
