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

// The AVX2 kernel's constants: -0 (the term a skipped product becomes) and
// the column masks, four all-ones lanes then four zero lanes, so that the
// 32 bytes from avx2masks<>+32-8k have their first k lanes on.
DATA avx2negzero<>+0(SB)/8, $0x8000000000000000
GLOBL avx2negzero<>(SB), RODATA|NOPTR, $8
DATA avx2masks<>+0(SB)/8, $-1
DATA avx2masks<>+8(SB)/8, $-1
DATA avx2masks<>+16(SB)/8, $-1
DATA avx2masks<>+24(SB)/8, $-1
DATA avx2masks<>+32(SB)/8, $0
DATA avx2masks<>+40(SB)/8, $0
DATA avx2masks<>+48(SB)/8, $0
DATA avx2masks<>+56(SB)/8, $0
GLOBL avx2masks<>(SB), RODATA|NOPTR, $64

// ROW8 adds row i's term (its a at addr) to the eight columns in Y8 and Y9,
// accumulated in acc0 and acc1: Y11 is on where a is not zero (NEQ_UQ: a
// NaN is added, as the scalar loop adds it), and where it is off the
// product becomes -0, which adds nothing to any sum (x + -0 is x for every
// x, -0, NaN and the infinities included), so the term is left out as the
// scalar loop leaves it out. Blending the product rather than the sum keeps
// the sum's dependency chain to the add alone.
#define ROW8(addr, acc0, acc1) \
	VBROADCASTSD addr, Y10; \
	VCMPPD       $4, Y15, Y10, Y11; \
	VMULPD       Y8, Y10, Y12; \
	VMULPD       Y9, Y10, Y13; \
	VBLENDVPD    Y11, Y12, Y15, Y12; \
	VBLENDVPD    Y11, Y13, Y15, Y13; \
	VADDPD       Y12, acc0, acc0; \
	VADDPD       Y13, acc1, acc1

// ROW4 is ROW8 for the four columns in Y8.
#define ROW4(addr, acc) \
	VBROADCASTSD addr, Y10; \
	VCMPPD       $4, Y15, Y10, Y11; \
	VMULPD       Y8, Y10, Y12; \
	VBLENDVPD    Y11, Y12, Y15, Y12; \
	VADDPD       Y12, acc, acc

// ROWS8 is one step's four rows over eight columns.
#define ROWS8 \
	ROW8((SI), Y0, Y1); \
	ROW8((SI)(R8*1), Y2, Y3); \
	ROW8((SI)(R8*2), Y4, Y5); \
	ROW8((SI)(R12*1), Y6, Y7)

// OUT8 does op (a load or a store) between the four rows' eight columns of
// out from DI (R11 apart) and the accumulators; op2 the second four.
#define OUT8(op, op2) \
	MOVQ DI, BX; \
	op(Y0, 0(BX)); \
	op2(Y1, 32(BX)); \
	ADDQ R11, BX; \
	op(Y2, 0(BX)); \
	op2(Y3, 32(BX)); \
	ADDQ R11, BX; \
	op(Y4, 0(BX)); \
	op2(Y5, 32(BX)); \
	ADDQ R11, BX; \
	op(Y6, 0(BX)); \
	op2(Y7, 32(BX))

// OUT4 is OUT8 for four columns.
#define OUT4(op) \
	MOVQ DI, BX; \
	op(Y0, 0(BX)); \
	ADDQ R11, BX; \
	op(Y1, 0(BX)); \
	ADDQ R11, BX; \
	op(Y2, 0(BX)); \
	ADDQ R11, BX; \
	op(Y3, 0(BX))

// The loads and stores OUT8 and OUT4 do: whole, or masked by Y14.
#define LOAD(y, m) VMOVUPD m, y
#define STORE(y, m) VMOVUPD y, m
#define MLOAD(y, m) VMASKMOVPD m, Y14, y
#define MSTORE(y, m) VMASKMOVPD y, Y14, m

// SETMASK sets Y14 to the first k lanes on, 1 <= k <= 4 (clobbers BX).
#define SETMASK(k) \
	MOVQ    k, BX; \
	NEGQ    BX; \
	LEAQ    avx2masks<>+32(SB), SI; \
	VMOVUPD (SI)(BX*8), Y14

// func dot4AVX2Sums(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int, add bool)
//
// dot4AVX512's sums in AVX2, for CPUs without AVX-512; with add, each sum
// starts from out's value instead of zero (out[i*os+j] + the terms, added
// in the same order), so that a long sum can be taken in blocks of s. Sixteen
// registers cannot hold four rows of sixteen columns, so the columns go in
// passes over s, each pass re-reading a: eight columns (rows'
// accumulators Y0-Y7, two to a row) while more than four are left, then the
// last one to four (Y0-Y3). Every lane still adds its terms over s
// ascending, each product rounded before the add (VMULPD then VADDPD, no
// fused multiply-add): the same bits as the scalar loop. Columns at and
// past n are neither read nor written (VMASKMOVPD, mask Y14); Y15 holds -0.
TEXT ·dot4AVX2Sums(SB), NOSPLIT, $0-121
	MOVQ a_base+0(FP), AX
	MOVQ as+24(FP), R9
	SHLQ $3, R9
	MOVQ ai+32(FP), R8
	SHLQ $3, R8
	LEAQ (R8)(R8*2), R12
	MOVQ b_base+40(FP), CX
	MOVQ bs+64(FP), R10
	SHLQ $3, R10
	MOVQ out_base+72(FP), DI
	MOVQ os+96(FP), R11
	SHLQ $3, R11
	MOVQ n+112(FP), R13
	VBROADCASTSD avx2negzero<>(SB), Y15

	// CX and DI are the pass's first column in b and out, R13 the columns
	// left from there.
pass:
	CMPQ R13, $4
	JLE  four
	CMPQ R13, $8
	JLT  part8

	// Eight whole columns.
	CMPB add+120(FP), $0
	JNE  load8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	JMP    start8

load8:
	OUT8(LOAD, LOAD)

start8:
	MOVQ  AX, SI
	MOVQ  CX, BX
	MOVQ  steps+104(FP), DX
	TESTQ DX, DX
	JZ    store8

loop8:
	VMOVUPD (BX), Y8
	VMOVUPD 32(BX), Y9
	ROWS8
	ADDQ R9, SI
	ADDQ R10, BX
	DECQ DX
	JNZ  loop8

store8:
	OUT8(STORE, STORE)
	ADDQ $64, CX
	ADDQ $64, DI
	SUBQ $8, R13
	JG   pass
	JMP  done

	// Five to seven columns, the last pass: Y14 masks the second four.
part8:
	MOVQ R13, DX
	SUBQ $4, DX
	SETMASK(DX)
	CMPB add+120(FP), $0
	JNE  loadPart8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	JMP    startPart8

loadPart8:
	OUT8(LOAD, MLOAD)

startPart8:
	MOVQ  AX, SI
	MOVQ  CX, BX
	MOVQ  steps+104(FP), DX
	TESTQ DX, DX
	JZ    storePart8

loopPart8:
	VMOVUPD    (BX), Y8
	VMASKMOVPD 32(BX), Y14, Y9
	ROWS8
	ADDQ R9, SI
	ADDQ R10, BX
	DECQ DX
	JNZ  loopPart8

storePart8:
	OUT8(STORE, MSTORE)
	JMP done

	// One to four columns, the last pass, masked by Y14.
four:
	SETMASK(R13)
	CMPB add+120(FP), $0
	JNE  load4
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	JMP    start4

load4:
	OUT4(MLOAD)

start4:
	MOVQ  AX, SI
	MOVQ  CX, BX
	MOVQ  steps+104(FP), DX
	TESTQ DX, DX
	JZ    store4

loop4:
	VMASKMOVPD (BX), Y14, Y8
	ROW4((SI), Y0)
	ROW4((SI)(R8*1), Y1)
	ROW4((SI)(R8*2), Y2)
	ROW4((SI)(R12*1), Y3)
	ADDQ R9, SI
	ADDQ R10, BX
	DECQ DX
	JNZ  loop4

store4:
	OUT4(MSTORE)

done:
	VZEROUPPER
	RET
