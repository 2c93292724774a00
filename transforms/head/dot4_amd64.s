//go:build !noasm

#include "textflag.h"

// func dot4AVX512(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int)
//
// out[i*os+j] = sum over s < steps, ascending, of a[s*as+i*ai] * b[s*bs+j],
// for i < 4 and j < n <= 16, a term whose a is zero (either sign) left out.
// Accumulators Z8-Z15: row i's columns 0-7 in Z(8+2i), 8-15 in Z(9+2i).
// K1 and K2 mask the columns below n; K3-K6 the rows whose a is not zero
// at this step (NEQ_UQ: a NaN is added, as the scalar loop adds it).
TEXT ·dot4AVX512(SB), NOSPLIT, $0-120
	MOVQ a_base+0(FP), SI
	MOVQ as+24(FP), R9
	SHLQ $3, R9
	MOVQ ai+32(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R12
	MOVQ b_base+40(FP), BX
	MOVQ bs+64(FP), R10
	SHLQ $3, R10
	MOVQ out_base+72(FP), DI
	MOVQ os+96(FP), R11
	SHLQ $3, R11
	MOVQ steps+104(FP), DX

	// K1: the columns below min(n, 8); K2: those of 8..n-1.
	MOVQ n+112(FP), R13
	MOVQ R13, CX
	CMPQ CX, $8
	JLE  lo
	MOVQ $8, CX
lo:
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	MOVQ R13, CX
	SUBQ $8, CX
	JGE  hi
	XORQ CX, CX
hi:
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2

	VPXORQ Z0, Z0, Z0
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15
	TESTQ DX, DX
	JZ    store

loop:
	VMOVUPD.Z (BX), K1, Z1
	VMOVUPD.Z 64(BX), K2, Z2

	VBROADCASTSD (SI), Z3
	VCMPPD $4, Z0, Z3, K3
	VMULPD Z1, Z3, Z16
	VMULPD Z2, Z3, Z17
	VADDPD Z16, Z8, K3, Z8
	VADDPD Z17, Z9, K3, Z9

	VBROADCASTSD (SI)(R8*1), Z4
	VCMPPD $4, Z0, Z4, K4
	VMULPD Z1, Z4, Z18
	VMULPD Z2, Z4, Z19
	VADDPD Z18, Z10, K4, Z10
	VADDPD Z19, Z11, K4, Z11

	VBROADCASTSD (SI)(R8*2), Z5
	VCMPPD $4, Z0, Z5, K5
	VMULPD Z1, Z5, Z20
	VMULPD Z2, Z5, Z21
	VADDPD Z20, Z12, K5, Z12
	VADDPD Z21, Z13, K5, Z13

	VBROADCASTSD (SI)(R12*1), Z6
	VCMPPD $4, Z0, Z6, K6
	VMULPD Z1, Z6, Z22
	VMULPD Z2, Z6, Z23
	VADDPD Z22, Z14, K6, Z14
	VADDPD Z23, Z15, K6, Z15

	ADDQ R9, SI
	ADDQ R10, BX
	DECQ DX
	JNZ  loop

store:
	VMOVUPD Z8, K1, (DI)
	VMOVUPD Z9, K2, 64(DI)
	ADDQ R11, DI
	VMOVUPD Z10, K1, (DI)
	VMOVUPD Z11, K2, 64(DI)
	ADDQ R11, DI
	VMOVUPD Z12, K1, (DI)
	VMOVUPD Z13, K2, 64(DI)
	ADDQ R11, DI
	VMOVUPD Z14, K1, (DI)
	VMOVUPD Z15, K2, 64(DI)
	VZEROUPPER
	RET
