//go:build amd64

#include "textflag.h"

// BF16 row kernels: the F16 kernels of rows_f16c_amd64.s with each 8 bfloat16
// values widened by VPMOVZXWD and a shift into the high halves of float32s (exact),
// for CPUs with AVX2 and FMA. Declarations and contracts in rows_bf16_amd64.go.

// func dotBF16R4asm(out, q, src unsafe.Pointer, o1, o2, o3, gstep uintptr, ng int, d uintptr)
// Per group k < ng of four rows (at p = src + k·gstep, p + o1, p + o2, p + o3):
// out[4k+r] = q · row r, d values (a multiple of 16). Two accumulators per row.
TEXT ·dotBF16R4asm(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ src+16(FP), R8
	MOVQ o1+24(FP), R9
	MOVQ o2+32(FP), R10
	MOVQ o3+40(FP), R11
	MOVQ gstep+48(FP), R12
	MOVQ ng+56(FP), R13
	MOVQ d+64(FP), R14
	SHLQ $1, R14 // bytes of a row

group:
	TESTQ R13, R13
	JZ    done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ   (R8)(R9*1), BX
	LEAQ   (R8)(R10*1), CX
	LEAQ   (R8)(R11*1), DX
	XORQ   AX, AX // byte offset in the rows; the query's is twice it

loop:
	VMOVUPS     (SI)(AX*2), Y8
	VMOVUPS     32(SI)(AX*2), Y9
	VPMOVZXWD (R8)(AX*1), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(R8)(AX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y11, Y4
	VPMOVZXWD (BX)(AX*1), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(BX)(AX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y8, Y10, Y1
	VFMADD231PS Y9, Y11, Y5
	VPMOVZXWD (CX)(AX*1), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(CX)(AX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y8, Y10, Y2
	VFMADD231PS Y9, Y11, Y6
	VPMOVZXWD (DX)(AX*1), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(DX)(AX*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS Y8, Y10, Y3
	VFMADD231PS Y9, Y11, Y7
	ADDQ        $32, AX
	CMPQ        AX, R14
	JB          loop

	// Lane r of the result: the sum of row r's accumulators.
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DI)
	ADDQ         $16, DI
	ADDQ         R12, R8
	DECQ         R13
	JMP          group

done:
	VZEROUPPER
	RET

// func dotBF16Q4asm(out unsafe.Pointer, ldb uintptr, q unsafe.Pointer, qs uintptr, src unsafe.Pointer, stride uintptr, n int, d uintptr)
// Per row i < n (at src + i·stride) and query r < 4 (at q + r·qs bytes):
// out[i + r·ldb/4] = q_r · row i, d values (a multiple of 16). Two accumulators per
// query.
TEXT ·dotBF16Q4asm(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ ldb+8(FP), BX
	MOVQ q+16(FP), SI
	MOVQ qs+24(FP), CX
	MOVQ src+32(FP), R8
	MOVQ stride+40(FP), R12
	MOVQ n+48(FP), R13
	MOVQ d+56(FP), R14
	SHLQ $1, R14 // bytes of a row
	LEAQ (SI)(CX*1), R9
	LEAQ (R9)(CX*1), R10
	LEAQ (R10)(CX*1), R11
	LEAQ (BX)(BX*2), DX // 3·ldb

row:
	TESTQ  R13, R13
	JZ     qdone
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX

qloop:
	VPMOVZXWD (R8)(AX*1), Y8
	VPSLLD $16, Y8, Y8
	VPMOVZXWD 16(R8)(AX*1), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS (SI)(AX*2), Y8, Y0
	VFMADD231PS 32(SI)(AX*2), Y9, Y4
	VFMADD231PS (R9)(AX*2), Y8, Y1
	VFMADD231PS 32(R9)(AX*2), Y9, Y5
	VFMADD231PS (R10)(AX*2), Y8, Y2
	VFMADD231PS 32(R10)(AX*2), Y9, Y6
	VFMADD231PS (R11)(AX*2), Y8, Y3
	VFMADD231PS 32(R11)(AX*2), Y9, Y7
	ADDQ        $32, AX
	CMPQ        AX, R14
	JB          qloop

	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVSS       X0, (DI)
	VEXTRACTPS   $1, X0, (DI)(BX*1)
	VEXTRACTPS   $2, X0, (DI)(BX*2)
	VEXTRACTPS   $3, X0, (DI)(DX*1)
	ADDQ         $4, DI
	ADDQ         R12, R8
	DECQ         R13
	JMP          row

qdone:
	VZEROUPPER
	RET

// func addBF16Q1x64asm(acc, w, src unsafe.Pointer, stride uintptr, n int)
// acc[c] += Σ_{i<n} w[i]·row_i[c] for c < 64, row i's bfloat16 values at
// src + i·stride: the 64 sums stay in eight registers while the rows stream by.
TEXT ·addBF16Q1x64asm(SB), NOSPLIT, $0-40
	MOVQ    acc+0(FP), DI
	MOVQ    w+8(FP), SI
	MOVQ    src+16(FP), R8
	MOVQ    stride+24(FP), R12
	MOVQ    n+32(FP), R13
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	TESTQ   R13, R13
	JZ      adone

aloop:
	VBROADCASTSS (SI), Y8
	VPMOVZXWD (R8), Y9
	VPSLLD $16, Y9, Y9
	VPMOVZXWD 16(R8), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 32(R8), Y11
	VPSLLD $16, Y11, Y11
	VPMOVZXWD 48(R8), Y12
	VPSLLD $16, Y12, Y12
	VFMADD231PS  Y8, Y9, Y0
	VFMADD231PS  Y8, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y8, Y12, Y3
	VPMOVZXWD 64(R8), Y9
	VPSLLD $16, Y9, Y9
	VPMOVZXWD 80(R8), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 96(R8), Y11
	VPSLLD $16, Y11, Y11
	VPMOVZXWD 112(R8), Y12
	VPSLLD $16, Y12, Y12
	VFMADD231PS  Y8, Y9, Y4
	VFMADD231PS  Y8, Y10, Y5
	VFMADD231PS  Y8, Y11, Y6
	VFMADD231PS  Y8, Y12, Y7
	ADDQ         $4, SI
	ADDQ         R12, R8
	DECQ         R13
	JNZ          aloop

adone:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// func addBF16Q1x16asm(acc, w, src unsafe.Pointer, stride uintptr, n int)
// acc[c] += Σ_{i<n} w[i]·row_i[c] for c < 16, rows as addF16Q1x64's; even and odd
// rows in separate accumulators (two chains per half).
TEXT ·addBF16Q1x16asm(SB), NOSPLIT, $0-40
	MOVQ    acc+0(FP), DI
	MOVQ    w+8(FP), SI
	MOVQ    src+16(FP), R8
	MOVQ    stride+24(FP), R12
	MOVQ    n+32(FP), R13
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3

sloop:
	CMPQ         R13, $2
	JB           stail
	VBROADCASTSS (SI), Y8
	VBROADCASTSS 4(SI), Y9
	VPMOVZXWD (R8), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(R8), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y8, Y11, Y1
	VPMOVZXWD (R8)(R12*1), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(R8)(R12*1), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS  Y9, Y10, Y2
	VFMADD231PS  Y9, Y11, Y3
	ADDQ         $8, SI
	LEAQ         (R8)(R12*2), R8
	SUBQ         $2, R13
	JMP          sloop

stail:
	TESTQ        R13, R13
	JZ           sdone
	VBROADCASTSS (SI), Y8
	VPMOVZXWD (R8), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 16(R8), Y11
	VPSLLD $16, Y11, Y11
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y8, Y11, Y1

sdone:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET
