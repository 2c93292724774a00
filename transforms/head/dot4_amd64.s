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

// SETMASK sets y to the first k lanes on, 1 <= k <= 4 (clobbers BX, SI).
#define SETMASK(k, y) \
	MOVQ    k, BX; \
	NEGQ    BX; \
	LEAQ    avx2masks<>+32(SB), SI; \
	VMOVUPD (SI)(BX*8), y

// The loads and stores between out and the accumulators: whole, or masked
// by Y14 (the exact passes) or Y15 (the finite ones).
#define LOAD(y, m) VMOVUPD m, y
#define STORE(y, m) VMOVUPD y, m
#define MLOAD14(y, m) VMASKMOVPD m, Y14, y
#define MSTORE14(y, m) VMASKMOVPD y, Y14, m
#define MLOAD15(y, m) VMASKMOVPD m, Y15, y
#define MSTORE15(y, m) VMASKMOVPD y, Y15, m

// OUT4, OUT8 and OUT12 do op (a load or a store) between the four rows'
// first four, eight or twelve columns of out from DI (rows R11 apart) and
// the accumulators, row i's in Y(i), Y(2i), Y(2i+1) or Y(3i)-Y(3i+2); the
// last four columns with opLast.
#define OUT4(opLast) \
	MOVQ DI, BX; \
	opLast(Y0, 0(BX)); \
	ADDQ R11, BX; \
	opLast(Y1, 0(BX)); \
	ADDQ R11, BX; \
	opLast(Y2, 0(BX)); \
	ADDQ R11, BX; \
	opLast(Y3, 0(BX))

#define OUT8(op, opLast) \
	MOVQ DI, BX; \
	op(Y0, 0(BX)); \
	opLast(Y1, 32(BX)); \
	ADDQ R11, BX; \
	op(Y2, 0(BX)); \
	opLast(Y3, 32(BX)); \
	ADDQ R11, BX; \
	op(Y4, 0(BX)); \
	opLast(Y5, 32(BX)); \
	ADDQ R11, BX; \
	op(Y6, 0(BX)); \
	opLast(Y7, 32(BX))

#define OUT12(op, opLast) \
	MOVQ DI, BX; \
	op(Y0, 0(BX)); \
	op(Y1, 32(BX)); \
	opLast(Y2, 64(BX)); \
	ADDQ R11, BX; \
	op(Y3, 0(BX)); \
	op(Y4, 32(BX)); \
	opLast(Y5, 64(BX)); \
	ADDQ R11, BX; \
	op(Y6, 0(BX)); \
	op(Y7, 32(BX)); \
	opLast(Y8, 64(BX)); \
	ADDQ R11, BX; \
	op(Y9, 0(BX)); \
	op(Y10, 32(BX)); \
	opLast(Y11, 64(BX))

// ZERO4, ZERO8 and ZERO12 clear the accumulators.
#define ZERO4 \
	VXORPD Y0, Y0, Y0; \
	VXORPD Y1, Y1, Y1; \
	VXORPD Y2, Y2, Y2; \
	VXORPD Y3, Y3, Y3

#define ZERO8 \
	ZERO4; \
	VXORPD Y4, Y4, Y4; \
	VXORPD Y5, Y5, Y5; \
	VXORPD Y6, Y6, Y6; \
	VXORPD Y7, Y7, Y7

#define ZERO12 \
	ZERO8; \
	VXORPD Y8, Y8, Y8; \
	VXORPD Y9, Y9, Y9; \
	VXORPD Y10, Y10, Y10; \
	VXORPD Y11, Y11, Y11

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

// FROW12 adds row i's term to twelve columns, the first eight read from b
// at BX, the last four in Y14, without the zero test (the finite passes):
// a in Y12, the products in Y13.
#define FROW12(addr, acc0, acc1, acc2) \
	VBROADCASTSD addr, Y12; \
	VMULPD       (BX), Y12, Y13; \
	VADDPD       Y13, acc0, acc0; \
	VMULPD       32(BX), Y12, Y13; \
	VADDPD       Y13, acc1, acc1; \
	VMULPD       Y14, Y12, Y13; \
	VADDPD       Y13, acc2, acc2

// FROW8 is FROW12 for the eight columns in Y8 and Y9.
#define FROW8(addr, acc0, acc1) \
	VBROADCASTSD addr, Y12; \
	VMULPD       Y8, Y12, Y13; \
	VADDPD       Y13, acc0, acc0; \
	VMULPD       Y9, Y12, Y14; \
	VADDPD       Y14, acc1, acc1

// FROW4 is FROW12 for the four columns in Y8.
#define FROW4(addr, acc) \
	VBROADCASTSD addr, Y12; \
	VMULPD       Y8, Y12, Y13; \
	VADDPD       Y13, acc, acc

// STEP is the end of one step: the next of a and b, and the count.
#define STEP(loop) \
	ADDQ R9, SI; \
	ADDQ R10, BX; \
	DECQ DX; \
	JNZ  loop

// BEGIN points SI and BX at a and the pass's first column of b, sets DX to
// the steps and goes to store if there are none.
#define BEGIN(store) \
	MOVQ  AX, SI; \
	MOVQ  CX, BX; \
	MOVQ  steps+104(FP), DX; \
	TESTQ DX, DX; \
	JZ    store

// func dot4AVX2Sums(a []float64, as, ai int, b []float64, bs int, out []float64, os, steps, n int, flags int)
//
// dot4AVX512's sums in AVX2, for CPUs without AVX-512, with dot4Sums'
// flags: 1 (dot4Add), each sum starts from out's value instead of zero; 2
// (dot4Finite), b holds no infinity or NaN (nor out, with 1, a -0), so that
// a zero a's term, a +0 or -0 product, changes no sum and is added
// untested. Every lane adds its terms over s ascending, each product
// rounded before the add (VMULPD then VADDPD, no fused multiply-add): the
// same bits as the scalar loop. Sixteen registers cannot hold four rows of
// sixteen columns, so the columns go in passes over s, each re-reading a:
// with the zero test, eight columns (row i's accumulators Y(2i), Y(2i+1))
// while more than four are left, then the last one to four (Y0-Y3; Y15
// holds -0 and Y14 masks the pass's last four columns); without it, twelve
// (Y(3i)-Y(3i+2)), then the last one to four, or one pass of up to eight
// (Y15 the mask). Columns at and past n are neither read nor written
// (VMASKMOVPD).
TEXT ·dot4AVX2Sums(SB), NOSPLIT, $0-128
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
	TESTQ $2, flags+120(FP)
	JNZ   fpass
	VBROADCASTSD avx2negzero<>(SB), Y15

	// CX and DI are the pass's first column in b and out, R13 the columns
	// left from there.
pass:
	CMPQ R13, $4
	JLE  four
	CMPQ R13, $8
	JLT  part8

	// Eight whole columns.
	TESTQ  $1, flags+120(FP)
	JNZ    load8
	ZERO8
	JMP    start8

load8:
	OUT8(LOAD, LOAD)

start8:
	BEGIN(store8)

loop8:
	VMOVUPD (BX), Y8
	VMOVUPD 32(BX), Y9
	ROW8((SI), Y0, Y1)
	ROW8((SI)(R8*1), Y2, Y3)
	ROW8((SI)(R8*2), Y4, Y5)
	ROW8((SI)(R12*1), Y6, Y7)
	STEP(loop8)

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
	SETMASK(DX, Y14)
	TESTQ  $1, flags+120(FP)
	JNZ    loadPart8
	ZERO8
	JMP    startPart8

loadPart8:
	OUT8(LOAD, MLOAD14)

startPart8:
	BEGIN(storePart8)

loopPart8:
	VMOVUPD    (BX), Y8
	VMASKMOVPD 32(BX), Y14, Y9
	ROW8((SI), Y0, Y1)
	ROW8((SI)(R8*1), Y2, Y3)
	ROW8((SI)(R8*2), Y4, Y5)
	ROW8((SI)(R12*1), Y6, Y7)
	STEP(loopPart8)

storePart8:
	OUT8(STORE, MSTORE14)
	JMP done

	// One to four columns, the last pass, masked by Y14.
four:
	SETMASK(R13, Y14)
	TESTQ  $1, flags+120(FP)
	JNZ    load4
	ZERO4
	JMP    start4

load4:
	OUT4(MLOAD14)

start4:
	BEGIN(store4)

loop4:
	VMASKMOVPD (BX), Y14, Y8
	ROW4((SI), Y0)
	ROW4((SI)(R8*1), Y1)
	ROW4((SI)(R8*2), Y2)
	ROW4((SI)(R12*1), Y3)
	STEP(loop4)

store4:
	OUT4(MSTORE14)
	JMP done

	// The finite passes: twelve columns (the last four masked by Y15)
	// while more than eight are left, else the last one to eight.
fpass:
	CMPQ R13, $4
	JLE  f4
	CMPQ R13, $8
	JLE  f8
	MOVQ R13, DX
	SUBQ $8, DX
	CMPQ DX, $4
	JLE  f12mask
	MOVQ $4, DX

f12mask:
	SETMASK(DX, Y15)
	TESTQ $1, flags+120(FP)
	JNZ   f12load
	ZERO12
	JMP   f12start

f12load:
	OUT12(LOAD, MLOAD15)

f12start:
	BEGIN(f12store)

f12loop:
	VMASKMOVPD 64(BX), Y15, Y14
	FROW12((SI), Y0, Y1, Y2)
	FROW12((SI)(R8*1), Y3, Y4, Y5)
	FROW12((SI)(R8*2), Y6, Y7, Y8)
	FROW12((SI)(R12*1), Y9, Y10, Y11)
	STEP(f12loop)

f12store:
	OUT12(STORE, MSTORE15)
	ADDQ $96, CX
	ADDQ $96, DI
	SUBQ $12, R13
	JG   fpass
	JMP  done

	// Five to eight columns, the last pass: Y15 masks the second four.
f8:
	MOVQ R13, DX
	SUBQ $4, DX
	SETMASK(DX, Y15)
	TESTQ $1, flags+120(FP)
	JNZ   f8load
	ZERO8
	JMP   f8start

f8load:
	OUT8(LOAD, MLOAD15)

f8start:
	BEGIN(f8store)

f8loop:
	VMOVUPD    (BX), Y8
	VMASKMOVPD 32(BX), Y15, Y9
	FROW8((SI), Y0, Y1)
	FROW8((SI)(R8*1), Y2, Y3)
	FROW8((SI)(R8*2), Y4, Y5)
	FROW8((SI)(R12*1), Y6, Y7)
	STEP(f8loop)

f8store:
	OUT8(STORE, MSTORE15)
	JMP done

	// One to four columns, the last pass, masked by Y15.
f4:
	SETMASK(R13, Y15)
	TESTQ $1, flags+120(FP)
	JNZ   f4load
	ZERO4
	JMP   f4start

f4load:
	OUT4(MLOAD15)

f4start:
	BEGIN(f4store)

f4loop:
	VMASKMOVPD (BX), Y15, Y8
	FROW4((SI), Y0)
	FROW4((SI)(R8*1), Y1)
	FROW4((SI)(R8*2), Y2)
	FROW4((SI)(R12*1), Y3)
	STEP(f4loop)

f4store:
	OUT4(MSTORE15)

done:
	VZEROUPPER
	RET
