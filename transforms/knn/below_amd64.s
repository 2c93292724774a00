//go:build !noasm

#include "textflag.h"

// func below(g, bias []float32, qterm, thr float32, from int) int
//
// Returns the first j >= from with (qterm + bias[j]) + g[j] < thr, or len(g).
// Requires len(bias) >= len(g).
TEXT ·below(SB), NOSPLIT, $0-72
	MOVQ   g_base+0(FP), SI
	MOVQ   g_len+8(FP), CX
	MOVQ   bias_base+24(FP), DI
	MOVSS  qterm+48(FP), X6
	SHUFPS $0x00, X6, X6            // X6 = qterm in every lane
	MOVSS  thr+52(FP), X7
	SHUFPS $0x00, X7, X7            // X7 = thr in every lane
	MOVQ   from+56(FP), AX
	MOVQ   CX, DX
	SUBQ   $8, DX                   // last start of a full 8-wide step

loop8:
	CMPQ   AX, DX
	JGT    tail
	MOVUPS (DI)(AX*4), X0
	MOVUPS 16(DI)(AX*4), X1
	ADDPS  X6, X0                   // qterm + bias
	ADDPS  X6, X1
	MOVUPS (SI)(AX*4), X2
	MOVUPS 16(SI)(AX*4), X3
	ADDPS  X2, X0                   // + g
	ADDPS  X3, X1
	CMPPS  X7, X0, $1               // X0 = d < thr
	CMPPS  X7, X1, $1
	MOVMSKPS X0, R8
	MOVMSKPS X1, R9
	MOVQ   R9, R10
	ORQ    R8, R10
	JNZ    found8
	ADDQ   $8, AX
	JMP    loop8

found8:
	TESTQ  R8, R8
	JZ     high
	BSFQ   R8, R8
	ADDQ   R8, AX
	MOVQ   AX, ret+64(FP)
	RET

high:
	BSFQ   R9, R9
	ADDQ   $4, AX
	ADDQ   R9, AX
	MOVQ   AX, ret+64(FP)
	RET

tail:
	CMPQ   AX, CX
	JGE    none
	MOVSS  (DI)(AX*4), X0
	ADDSS  X6, X0
	ADDSS  (SI)(AX*4), X0
	UCOMISS X0, X7                  // thr vs d: CF is unset, ZF unset when thr > d
	JA     done
	INCQ   AX
	JMP    tail

done:
	MOVQ   AX, ret+64(FP)
	RET

none:
	MOVQ   CX, ret+64(FP)
	RET
