//go:build amd64

#include "textflag.h"
#include "prefetch_amd64.h"

// The one-query integer scores of 2-bit rows eight rows at a time (dotU2RowsI8Z8,
// dotU2ChanI8Z8; declarations and contracts in lossy_i8_amd64.go), with ZMM registers
// and VPDPBUSD (AVX-512 BW and VNNI). The four-row twins (ROWSI8Z) read a group's
// codes row by row into 128-bit lanes, reduce each lane's four dwords apart and
// gather the rows' scales one by one: about 25 instructions per row, which bounded
// them. Here a row's pair of groups (24 bytes of Affine row: scale, zero, 8 code
// bytes, twice; 16 bytes of Channel row) is read whole, two rows per register, and
// word permutes (VPERMT2W, VPERMI2W) leave lane r = row r's 16 code bytes of the
// pair, its first group's in the low qword: four 2-bit planes of one AND or a shift
// and an AND each, four VPDPBUSD against the query's matching bytes, and each lane's
// four dwords are two sums per group. One transposing reduction of the two four-row
// halves gives every (row, group) sum of the eight rows its own float lane, at
// position 4r + 2h + k for row 4h + r and group k of the pair, as are the scales and
// zeros the permutes gathered; the float steps are then the twins' per lane (k = 0
// lanes carry the row's running score into the k = 1 lanes): the same scores bit for
// bit.
//
// Frame (hardware SP), per pair of groups (384 bytes): the query's four planes (the
// 16 bytes of plane m, the first group's 8 and the second's, in each lane) at 0, 64,
// 128, 192; d_k of the two groups as [d_0 d_1 d_0 d_1] per lane at 256; their zero
// factors d_k·Σq̂ the same way at 320. Up to eight groups (four pairs).

// r8idx: the word indexes of the two permutes of an Affine pair and of the code
// permute, as bytes of words. Row r of a register pair sits at word 16r (rows 0, 1
// in the first register, 2, 3 in the second): its first group's scale at word 0,
// zero at 1, codes at 2–5; the second group's at 6, 7 and 8–11.
// r8idx+0: rows 0–3 of the eight: scales at words 4r (first group) and 4r+1, zeros at
// 16+4r and 17+4r. r8idx+64: rows 4–7 at 4r+2, 4r+3 and 18+4r, 19+4r.
// r8idx+128: the codes, lane r = row r's words 2–5 then 8–11.
// r8idx+192: the eight scores' positions (4r+1 and 4r+3), a VPERMPS index.
DATA r8idx<>+0(SB)/8, $0x0000000000060000
DATA r8idx<>+8(SB)/8, $0x0000000000160010
DATA r8idx<>+16(SB)/8, $0x0000000000260020
DATA r8idx<>+24(SB)/8, $0x0000000000360030
DATA r8idx<>+32(SB)/8, $0x0000000000070001
DATA r8idx<>+40(SB)/8, $0x0000000000170011
DATA r8idx<>+48(SB)/8, $0x0000000000270021
DATA r8idx<>+56(SB)/8, $0x0000000000370031
DATA r8idx<>+64(SB)/8, $0x0006000000000000
DATA r8idx<>+72(SB)/8, $0x0016001000000000
DATA r8idx<>+80(SB)/8, $0x0026002000000000
DATA r8idx<>+88(SB)/8, $0x0036003000000000
DATA r8idx<>+96(SB)/8, $0x0007000100000000
DATA r8idx<>+104(SB)/8, $0x0017001100000000
DATA r8idx<>+112(SB)/8, $0x0027002100000000
DATA r8idx<>+120(SB)/8, $0x0037003100000000
DATA r8idx<>+128(SB)/8, $0x0005000400030002
DATA r8idx<>+136(SB)/8, $0x000b000a00090008
DATA r8idx<>+144(SB)/8, $0x0015001400130012
DATA r8idx<>+152(SB)/8, $0x001b001a00190018
DATA r8idx<>+160(SB)/8, $0x0025002400230022
DATA r8idx<>+168(SB)/8, $0x002b002a00290028
DATA r8idx<>+176(SB)/8, $0x0035003400330032
DATA r8idx<>+184(SB)/8, $0x003b003a00390038
DATA r8idx<>+192(SB)/8, $0x0000000500000001
DATA r8idx<>+200(SB)/8, $0x0000000d00000009
DATA r8idx<>+208(SB)/8, $0x0000000700000003
DATA r8idx<>+216(SB)/8, $0x0000000f0000000b
DATA r8idx<>+224(SB)/8, $0
DATA r8idx<>+232(SB)/8, $0
DATA r8idx<>+240(SB)/8, $0
DATA r8idx<>+248(SB)/8, $0
GLOBL r8idx<>(SB), RODATA|NOPTR, $256

// r8cidx: the same permutes for Affine rows of one pair that follow one another
// (24 bytes each: rows 0–3 at words 12r of Z0:Z1, rows 4–7 at words 16 + 12r of
// Z1:Z2), and at r8cidx+192 the codes of rows 4–7 from Z2:Z1 (Z2 the first table).
DATA r8cidx<>+0(SB)/8, $0x0000000000060000
DATA r8cidx<>+8(SB)/8, $0x000000000012000c
DATA r8cidx<>+16(SB)/8, $0x00000000001e0018
DATA r8cidx<>+24(SB)/8, $0x00000000002a0024
DATA r8cidx<>+32(SB)/8, $0x0000000000070001
DATA r8cidx<>+40(SB)/8, $0x000000000013000d
DATA r8cidx<>+48(SB)/8, $0x00000000001f0019
DATA r8cidx<>+56(SB)/8, $0x00000000002b0025
DATA r8cidx<>+64(SB)/8, $0x0016001000000000
DATA r8cidx<>+72(SB)/8, $0x0022001c00000000
DATA r8cidx<>+80(SB)/8, $0x002e002800000000
DATA r8cidx<>+88(SB)/8, $0x003a003400000000
DATA r8cidx<>+96(SB)/8, $0x0017001100000000
DATA r8cidx<>+104(SB)/8, $0x0023001d00000000
DATA r8cidx<>+112(SB)/8, $0x002f002900000000
DATA r8cidx<>+120(SB)/8, $0x003b003500000000
DATA r8cidx<>+128(SB)/8, $0x0005000400030002
DATA r8cidx<>+136(SB)/8, $0x000b000a00090008
DATA r8cidx<>+144(SB)/8, $0x00110010000f000e
DATA r8cidx<>+152(SB)/8, $0x0017001600150014
DATA r8cidx<>+160(SB)/8, $0x001d001c001b001a
DATA r8cidx<>+168(SB)/8, $0x0023002200210020
DATA r8cidx<>+176(SB)/8, $0x0029002800270026
DATA r8cidx<>+184(SB)/8, $0x002f002e002d002c
DATA r8cidx<>+192(SB)/8, $0x0035003400330032
DATA r8cidx<>+200(SB)/8, $0x003b003a00390038
DATA r8cidx<>+208(SB)/8, $0x00010000003f003e
DATA r8cidx<>+216(SB)/8, $0x0007000600050004
DATA r8cidx<>+224(SB)/8, $0x000d000c000b000a
DATA r8cidx<>+232(SB)/8, $0x0013001200110010
DATA r8cidx<>+240(SB)/8, $0x0019001800170016
DATA r8cidx<>+248(SB)/8, $0x001f001e001d001c
GLOBL r8cidx<>(SB), RODATA|NOPTR, $256

DATA r8two<>+0(SB)/4, $0x03030303
GLOBL r8two<>(SB), RODATA|NOPTR, $4

// R8FRAME builds the frame from the np/2 pairs of the query's codes (q) and factors
// (qf); leaves R12 at qf's end (np pairs of 8 bytes on: b of Channel rows). Clobbers
// SI, R10, CX, Z5..Z10.
#define R8FRAME \
	MOVQ q+8(FP), SI          \
	MOVQ qf+40(FP), R12       \
	MOVQ np+48(FP), CX        \
	SHRQ $1, CX               \
	MOVQ SP, R10              \
r8fr:                         \
	VMOVDQU         (SI), Y5          \
	VMOVDQU         32(SI), Y6        \
	VPUNPCKLQDQ     Y6, Y5, Y7        \
	VPUNPCKHQDQ     Y6, Y5, Y8        \
	VSHUFI64X2      $0x00, Z7, Z7, Z9 \
	VMOVDQU64       Z9, (R10)         \
	VSHUFI64X2      $0x00, Z8, Z8, Z9 \
	VMOVDQU64       Z9, 64(R10)       \
	VSHUFI64X2      $0x55, Z7, Z7, Z9 \
	VMOVDQU64       Z9, 128(R10)      \
	VSHUFI64X2      $0x55, Z8, Z8, Z9 \
	VMOVDQU64       Z9, 192(R10)      \
	VBROADCASTI32X4 (R12), Z9         \
	VSHUFPS         $0x88, Z9, Z9, Z10 \
	VMOVUPS         Z10, 256(R10)     \
	VSHUFPS         $0xdd, Z9, Z9, Z10 \
	VMOVUPS         Z10, 320(R10)     \
	ADDQ            $64, SI           \
	ADDQ            $16, R12          \
	ADDQ            $384, R10         \
	DECQ            CX                \
	JNZ             r8fr

// R8ARGS loads the arguments and constants: DI out, R15 the first row's pair span
// (rows − hdr), DX stride, BX 3·stride, R13 the units of eight rows, Z22 the code
// permute, Z23 the 2-bit masks, Z24 the scores' positions.
#define R8ARGS(hdr) \
	MOVQ         out+0(FP), DI       \
	MOVQ         rows+16(FP), R15    \
	SUBQ         $hdr, R15           \
	MOVQ         stride+24(FP), DX   \
	LEAQ         (DX)(DX*2), BX      \
	MOVQ         ng+32(FP), R13      \
	VMOVDQU64    r8idx<>+128(SB), Z22 \
	VPBROADCASTD r8two<>(SB), Z23    \
	VMOVDQU64    r8idx<>+192(SB), Z24

// R8PLANES adds the four planes of the codes in c (lane r: a row's 16 code bytes of
// the pair) times the query's (R10) into acc, in two chains (acc and t, zeroed
// first). Clobbers Z8..Z11.
#define R8PLANES(c, acc, t) \
	VPANDD   Z23, c, Z8         \
	VPSRLW   $2, c, Z9          \
	VPANDD   Z23, Z9, Z9        \
	VPSRLW   $4, c, Z10         \
	VPANDD   Z23, Z10, Z10      \
	VPSRLW   $6, c, Z11         \
	VPANDD   Z23, Z11, Z11      \
	VPXORD   acc, acc, acc      \
	VPXORD   t, t, t            \
	VPDPBUSD (R10), Z8, acc     \
	VPDPBUSD 128(R10), Z10, t   \
	VPDPBUSD 64(R10), Z9, acc   \
	VPDPBUSD 192(R10), Z11, t   \
	VPADDD   t, acc, acc

// R8SUMS leaves in Z14 the float (row, group) sums of the codes of rows 0–3 in Z0 and
// rows 4–7 in Z2.
#define R8SUMS \
	R8PLANES(Z0, Z12, Z25)        \
	R8PLANES(Z2, Z13, Z26)        \
	VSHUFPS   $0x88, Z13, Z12, Z14 \
	VSHUFPS   $0xdd, Z13, Z12, Z15 \
	VPADDD    Z15, Z14, Z14       \
	VCVTDQ2PS Z14, Z14

// TRSUM4 leaves in t2 the sums of the four dwords of each lane l of Z10..Z13 (four
// accumulators a_m), a_m's lane l at dword 4l + m; t0, t1, t3 scratch.
#define TRSUM4(t0, t1, t2, t3) \
	VSHUFPS $0x88, Z11, Z10, t0 \
	VSHUFPS $0xdd, Z11, Z10, t1 \
	VPADDD  t1, t0, t0          \
	VSHUFPS $0x88, Z13, Z12, t1 \
	VSHUFPS $0xdd, Z13, Z12, t2 \
	VPADDD  t2, t1, t1          \
	VSHUFPS $0x88, t1, t0, t2   \
	VSHUFPS $0xdd, t1, t0, t3   \
	VPADDD  t3, t2, t2

// R8BODY is the loop of both kernels over units of eight rows (R15) and, within a
// unit, over the pairs of groups (R8 rows 0–3, R9 rows 4–7; R10 the frame, R11 the
// prefetch pointer; a pair's rows pb bytes apart, PF lines of the unit's pair per
// pair): LOAD reads the pair's codes into Z0 (rows 0–3) and Z2 (rows 4–7), and
// anything else it needs; STEP adds the pair's sums Z14 to the running scores Z17 (the
// k = 1 lanes) through Z18; TAIL ends each row's score. Then the eight scores go to
// out.
#define R8BODY(LOAD, STEP, TAIL, pb, PF) \
r8unit:                                \
	MOVQ    R15, R8                    \
	LEAQ    (R15)(DX*4), R9            \
	MOVQ    R15, R11                   \
	MOVQ    SP, R10                    \
	MOVQ    np+48(FP), CX              \
	SHRQ    $1, CX                     \
	VPXORD  Z17, Z17, Z17              \
r8pair:                                \
	PF                                 \
	LOAD                               \
	R8SUMS                             \
	STEP                               \
	ADDQ    $pb, R8                    \
	ADDQ    $pb, R9                    \
	ADDQ    $384, R10                  \
	DECQ    CX                         \
	JNZ     r8pair                     \
	TAIL                               \
	VPERMPS Z17, Z24, Z18              \
	VMOVUPS Y18, (DI)                  \
	ADDQ    $32, DI                    \
	LEAQ    (R15)(DX*8), R15           \
	DECQ    R13                        \
	JNZ     r8unit                     \
	VZEROUPPER                         \
	RET

// R8PF3 and R8PF2 ask for the three (Affine) or two (Channel) lines of a pair's eight
// rows PFDIST bytes on, where rows follow one another (R11).
#define R8PF3 \
	PREFETCHT0 PFDIST(R11)     \
	PREFETCHT0 PFDIST+64(R11)  \
	PREFETCHT0 PFDIST+128(R11) \
	ADDQ       $192, R11

#define R8PF2 \
	PREFETCHT0 PFDIST(R11)    \
	PREFETCHT0 PFDIST+64(R11) \
	ADDQ       $128, R11

// AFFLOAD reads the 24 bytes of the pair of each of the eight Affine rows (masked,
// two rows per register: K1 the low 24 bytes, K2 the same 32 bytes on), gathers their
// scales and zeros into Z4 (words 4r+2h+k: scales; 16 on: zeros) and their codes into
// Z0 and Z2. Z20, Z21 the parameter permutes, K3 the words of rows 4–7.
#define AFFLOAD \
	VMOVDQU8.Z (R8), K1, Z0           \
	VMOVDQU8   -32(R8)(DX*1), K2, Z0  \
	VMOVDQU8.Z (R8)(DX*2), K1, Z1     \
	VMOVDQU8   -32(R8)(BX*1), K2, Z1  \
	VMOVDQU8.Z (R9), K1, Z2           \
	VMOVDQU8   -32(R9)(DX*1), K2, Z2  \
	VMOVDQU8.Z (R9)(DX*2), K1, Z3     \
	VMOVDQU8   -32(R9)(BX*1), K2, Z3  \
	VMOVDQA64  Z20, Z4                \
	VPERMI2W   Z1, Z0, Z4             \
	VMOVDQA64  Z21, Z5                \
	VPERMI2W   Z3, Z2, Z5             \
	VMOVDQU16  Z5, K3, Z4             \
	VPERMT2W   Z1, Z22, Z0            \
	VPERMT2W   Z3, Z22, Z2

// AFFLOADC is AFFLOAD for rows of one pair that follow one another: the eight rows'
// 192 bytes in three loads, their scales and zeros and their codes permuted out of
// them (Z20, Z21, Z22 and Z27 r8cidx).
#define AFFLOADC \
	VMOVDQU64 (R8), Z0       \
	VMOVDQU64 64(R8), Z1     \
	VMOVDQU64 128(R8), Z2    \
	VMOVDQA64 Z20, Z4        \
	VPERMI2W  Z1, Z0, Z4     \
	VMOVDQA64 Z21, Z5        \
	VPERMI2W  Z2, Z1, Z5     \
	VMOVDQU16 Z5, K3, Z4     \
	VPERMT2W  Z1, Z22, Z0    \
	VPERMT2W  Z1, Z27, Z2

// AFFSTEP: per lane, score = fma(s·d_k, sum, score), then fma(d_k·Σq̂, zero, score),
// ROWSCALE's operations in its operand order: the first group's lanes from the
// running scores (VMOVSHDUP), the second's from the first's (VMOVSLDUP).
#define AFFSTEP \
	VCVTPH2PS     Y4, Z15              \
	VEXTRACTI64X4 $1, Z4, Y16          \
	VCVTPH2PS     Y16, Z16             \
	VMULPS        256(R10), Z15, Z15   \
	VMOVSHDUP     Z17, Z18             \
	VFMADD231PS   Z15, Z14, Z18        \
	VFMADD231PS   320(R10), Z16, Z18   \
	VMOVSLDUP     Z18, Z17             \
	VFMADD231PS   Z15, Z14, Z17        \
	VFMADD231PS   320(R10), Z16, Z17

// CHANLOAD reads the 16 code bytes of the pair of each of the eight Channel rows into
// Z0 (rows 0–3) and Z2 (rows 4–7), a row per lane.
#define CHANLOAD \
	VMOVDQU      (R8), X0                \
	VINSERTI32X4 $1, (R8)(DX*1), Z0, Z0  \
	VINSERTI32X4 $2, (R8)(DX*2), Z0, Z0  \
	VINSERTI32X4 $3, (R8)(BX*1), Z0, Z0  \
	VMOVDQU      (R9), X2                \
	VINSERTI32X4 $1, (R9)(DX*1), Z2, Z2  \
	VINSERTI32X4 $2, (R9)(DX*2), Z2, Z2  \
	VINSERTI32X4 $3, (R9)(BX*1), Z2, Z2

// CHANLOADC is CHANLOAD for rows of one pair (16 bytes) that follow one another.
#define CHANLOADC \
	VMOVDQU64 (R8), Z0   \
	VMOVDQU64 64(R8), Z2

// CHANSTEP: per lane, score = fma(d_k, sum, score) (CHANSCALE's operation).
#define CHANSTEP \
	VMOVSHDUP   Z17, Z18           \
	VFMADD231PS 256(R10), Z14, Z18 \
	VMOVSLDUP   Z18, Z17           \
	VFMADD231PS 256(R10), Z14, Z17

// CHANEND adds b (Z19) to each score (CHANTAIL's operation).
#define CHANEND VADDPS Z19, Z17, Z17

#define NOEND

// func dotU2RowsI8Z8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2RowsI8Z8(SB), $1536-72
	R8FRAME
	R8ARGS(4)
	VMOVDQU64 r8idx<>+0(SB), Z20
	VMOVDQU64 r8idx<>+64(SB), Z21
	MOVQ      $0x00ffffff, AX
	KMOVQ     AX, K1
	SHLQ      $32, AX
	KMOVQ     AX, K2
	MOVL      $0xcccccccc, AX
	KMOVD     AX, K3
	R8BODY(AFFLOAD, AFFSTEP, NOEND, 24, R8PF3)

// func dotU2RowsI8Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2RowsI8Z8C(SB), $384-72
	R8FRAME
	R8ARGS(4)
	VMOVDQU64 r8cidx<>+0(SB), Z20
	VMOVDQU64 r8cidx<>+64(SB), Z21
	VMOVDQU64 r8cidx<>+128(SB), Z22
	VMOVDQU64 r8cidx<>+192(SB), Z27
	MOVL      $0xcccccccc, AX
	KMOVD     AX, K3
	R8BODY(AFFLOADC, AFFSTEP, NOEND, 24, R8PF3)

// func dotU2ChanI8Z8(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2ChanI8Z8(SB), $1536-72
	R8FRAME
	VBROADCASTSS (R12), Z19
	R8ARGS(0)
	R8BODY(CHANLOAD, CHANSTEP, CHANEND, 16, R8PF2)

// func dotU2ChanI8Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU2ChanI8Z8C(SB), $384-72
	R8FRAME
	VBROADCASTSS (R12), Z19
	R8ARGS(0)
	R8BODY(CHANLOADC, CHANSTEP, CHANEND, 16, R8PF2)

// dotU4RowsI8Z8C is the same for 4-bit Affine rows of one pair of groups that follow
// one another (40 bytes each: scale, zero, 16 code bytes, twice), against
// dotU4RowsI8P2's one-query layout (the query's even codes of the two groups in the
// low lanes' order, then the odd; qf in pairFactors' order). Eight rows are five
// loads. Three word permutes gather their scales and zeros (r8q4+0: from the first
// two registers, r8q4+64: the next two, words K2; r8q4+128: the last, words K3) and
// four word permutes their codes, two rows per register (r8q4+192 on, a row's two
// groups in lanes 0–1 and 2–3); each register's low and high nibbles take one
// VPDPBUSD each against the query's even and odd codes. Two transposing reductions
// of the four accumulators leave the (row, group) sums at lane 4l + m for row 2m +
// l/2 and group l mod 2, where the scales and zeros were gathered; then
// dotU4RowsI8P2's float operations: per lane fma(s·d_k, sum, 0), plus d_k·Σq̂·zero,
// and the two groups' lanes added (first group first): the same scores bit for bit.
DATA r8q4<>+0(SB)/8, $0x0000000000280000
DATA r8q4<>+8(SB)/8, $0x000000000032000a
DATA r8q4<>+16(SB)/8, $0x00000000003c0014
DATA r8q4<>+24(SB)/8, $0x000000000000001e
DATA r8q4<>+32(SB)/8, $0x0000000000290001
DATA r8q4<>+40(SB)/8, $0x000000000033000b
DATA r8q4<>+48(SB)/8, $0x00000000003d0015
DATA r8q4<>+56(SB)/8, $0x000000000000001f
DATA r8q4<>+64(SB)/8, $0x0038001000000000
DATA r8q4<>+72(SB)/8, $0x0000001a00000000
DATA r8q4<>+80(SB)/8, $0x0000002400000000
DATA r8q4<>+88(SB)/8, $0x0000002e00060000
DATA r8q4<>+96(SB)/8, $0x0039001100000000
DATA r8q4<>+104(SB)/8, $0x0000001b00000000
DATA r8q4<>+112(SB)/8, $0x0000002500000000
DATA r8q4<>+120(SB)/8, $0x0000002f00070000
DATA r8q4<>+128(SB)/8, $0x0000000000000000
DATA r8q4<>+136(SB)/8, $0x0002000000000000
DATA r8q4<>+144(SB)/8, $0x000c000000000000
DATA r8q4<>+152(SB)/8, $0x0016000000000000
DATA r8q4<>+160(SB)/8, $0x0000000000000000
DATA r8q4<>+168(SB)/8, $0x0003000000000000
DATA r8q4<>+176(SB)/8, $0x000d000000000000
DATA r8q4<>+184(SB)/8, $0x0017000000000000
DATA r8q4<>+192(SB)/8, $0x0005000400030002
DATA r8q4<>+200(SB)/8, $0x0009000800070006
DATA r8q4<>+208(SB)/8, $0x000f000e000d000c
DATA r8q4<>+216(SB)/8, $0x0013001200110010
DATA r8q4<>+224(SB)/8, $0x0019001800170016
DATA r8q4<>+232(SB)/8, $0x001d001c001b001a
DATA r8q4<>+240(SB)/8, $0x0023002200210020
DATA r8q4<>+248(SB)/8, $0x0027002600250024
DATA r8q4<>+256(SB)/8, $0x000d000c000b000a
DATA r8q4<>+264(SB)/8, $0x00110010000f000e
DATA r8q4<>+272(SB)/8, $0x0017001600150014
DATA r8q4<>+280(SB)/8, $0x001b001a00190018
DATA r8q4<>+288(SB)/8, $0x00210020001f001e
DATA r8q4<>+296(SB)/8, $0x0025002400230022
DATA r8q4<>+304(SB)/8, $0x002b002a00290028
DATA r8q4<>+312(SB)/8, $0x002f002e002d002c
DATA r8q4<>+320(SB)/8, $0x0015001400130012
DATA r8q4<>+328(SB)/8, $0x0019001800170016
DATA r8q4<>+336(SB)/8, $0x001f001e001d001c
DATA r8q4<>+344(SB)/8, $0x0023002200210020
DATA r8q4<>+352(SB)/8, $0x0029002800270026
DATA r8q4<>+360(SB)/8, $0x002d002c002b002a
DATA r8q4<>+368(SB)/8, $0x0033003200310030
DATA r8q4<>+376(SB)/8, $0x0037003600350034
DATA r8q4<>+384(SB)/8, $0x001d001c001b001a
DATA r8q4<>+392(SB)/8, $0x00210020001f001e
DATA r8q4<>+400(SB)/8, $0x0027002600250024
DATA r8q4<>+408(SB)/8, $0x002b002a00290028
DATA r8q4<>+416(SB)/8, $0x00310030002f002e
DATA r8q4<>+424(SB)/8, $0x0035003400330032
DATA r8q4<>+432(SB)/8, $0x003b003a00390038
DATA r8q4<>+440(SB)/8, $0x003f003e003d003c
DATA r8q4<>+448(SB)/8, $0x0000000800000000
DATA r8q4<>+456(SB)/8, $0x0000000900000001
DATA r8q4<>+464(SB)/8, $0x0000000a00000002
DATA r8q4<>+472(SB)/8, $0x0000000b00000003
DATA r8q4<>+480(SB)/8, $0x0000000000000000
DATA r8q4<>+488(SB)/8, $0x0000000000000000
DATA r8q4<>+496(SB)/8, $0x0000000000000000
DATA r8q4<>+504(SB)/8, $0x0000000000000000
GLOBL r8q4<>(SB), RODATA|NOPTR, $512

DATA r8nib<>+0(SB)/4, $0x0f0f0f0f
GLOBL r8nib<>(SB), RODATA|NOPTR, $4

// Q4NIB adds the low nibbles of the codes in c times the query's even codes (Z29) and
// the high ones times its odd codes (Z30) into acc, zeroed first. Clobbers Z8, Z9.
#define Q4NIB(c, acc) \
	VPSRLW   $4, c, Z9       \
	VPANDD   Z23, c, Z8      \
	VPANDD   Z23, Z9, Z9     \
	VPXORD   acc, acc, acc   \
	VPDPBUSD Z29, Z8, acc    \
	VPDPBUSD Z30, Z9, acc

// func dotU4RowsI8Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, qf unsafe.Pointer, np int, gs, gb uintptr)
TEXT ·dotU4RowsI8Z8C(SB), NOSPLIT, $0-72
	MOVQ            out+0(FP), DI
	MOVQ            q+8(FP), SI
	MOVQ            rows+16(FP), R8
	SUBQ            $4, R8
	MOVQ            ng+32(FP), R13
	MOVQ            qf+40(FP), R12
	VMOVDQU         (SI), X8
	VINSERTI128     $1, 32(SI), Y8, Y8
	VINSERTI64X4    $1, Y8, Z8, Z29
	VMOVDQU         16(SI), X9
	VINSERTI128     $1, 48(SI), Y9, Y9
	VINSERTI64X4    $1, Y9, Z9, Z30
	VBROADCASTF64X4 (R12), Z31
	VBROADCASTF64X4 32(R12), Z19
	VMOVDQU64       r8q4<>+0(SB), Z20
	VMOVDQU64       r8q4<>+64(SB), Z21
	VMOVDQU64       r8q4<>+128(SB), Z22
	VMOVDQU64       r8q4<>+192(SB), Z25
	VMOVDQU64       r8q4<>+256(SB), Z26
	VMOVDQU64       r8q4<>+320(SB), Z27
	VMOVDQU64       r8q4<>+384(SB), Z28
	VMOVDQU64       r8q4<>+448(SB), Z24
	VPBROADCASTD    r8nib<>(SB), Z23
	MOVL            $0x644c644c, AX
	KMOVD           AX, K2
	MOVL            $0x88808880, AX
	KMOVD           AX, K3

q4unit:
	PREFETCHT0 PFDIST(R8)
	PREFETCHT0 PFDIST+64(R8)
	PREFETCHT0 PFDIST+128(R8)
	PREFETCHT0 PFDIST+192(R8)
	PREFETCHT0 PFDIST+256(R8)
	VMOVDQU64  (R8), Z0
	VMOVDQU64  64(R8), Z1
	VMOVDQU64  128(R8), Z2
	VMOVDQU64  192(R8), Z3
	VMOVDQU64  256(R8), Z4
	VMOVDQA64  Z20, Z5
	VPERMI2W   Z1, Z0, Z5
	VMOVDQA64  Z21, Z6
	VPERMI2W   Z3, Z2, Z6
	VMOVDQU16  Z6, K2, Z5
	VPERMW     Z4, Z22, K3, Z5
	VPERMT2W   Z1, Z25, Z0
	VPERMT2W   Z2, Z26, Z1
	VPERMT2W   Z3, Z27, Z2
	VPERMT2W   Z4, Z28, Z3
	Q4NIB(Z0, Z10)
	Q4NIB(Z1, Z11)
	Q4NIB(Z2, Z12)
	Q4NIB(Z3, Z13)
	TRSUM4(Z14, Z15, Z16, Z17)
	VCVTDQ2PS  Z16, Z16
	VCVTPH2PS  Y5, Z6
	VEXTRACTI64X4 $1, Z5, Y7
	VCVTPH2PS  Y7, Z7
	VMULPS     Z31, Z6, Z6
	VPXORD     Z17, Z17, Z17
	VFMADD231PS Z6, Z16, Z17
	VFMADD231PS Z19, Z7, Z17
	VSHUFF64X2 $0xb1, Z17, Z17, Z18
	VADDPS     Z18, Z17, Z17
	VPERMPS    Z17, Z24, Z17
	VMOVUPS    Y17, (DI)
	ADDQ       $32, DI
	ADDQ       $320, R8
	DECQ       R13
	JNZ        q4unit
	VZEROUPPER
	RET

// dotU4ChanI16Z8C is dotU4ChanI16Z (one int16 query against the 4-bit token rows of a
// KIVI key block) for ng units of eight rows of 64 channels that follow one another
// (32 bytes each), with AVX-512 VBMI: two rows per load, and per load two byte
// permutes (zero-masked, K4) that widen the rows' code bytes to words, 8 bytes of a
// row per lane (r8c16+0: code bytes 0–7 of the two rows, then 8–15; r8c16+64:
// 16–23, then 24–31). A word's low nibble (the even channel) and its high one (the
// odd) take one VPDPWSSD each against the query's matching 8 even or odd codes
// (splitEvenOdd's order: per 16 channels the even ones, then the odd), broadcast to
// the lanes. Two transposing reductions and a half add leave the eight rows'
// integer sums (exact, as the twin's), then its float steps: times D, plus b.
DATA r8c16<>+0(SB)/8, $0x0003000200010000
DATA r8c16<>+8(SB)/8, $0x0007000600050004
DATA r8c16<>+16(SB)/8, $0x0023002200210020
DATA r8c16<>+24(SB)/8, $0x0027002600250024
DATA r8c16<>+32(SB)/8, $0x000b000a00090008
DATA r8c16<>+40(SB)/8, $0x000f000e000d000c
DATA r8c16<>+48(SB)/8, $0x002b002a00290028
DATA r8c16<>+56(SB)/8, $0x002f002e002d002c
DATA r8c16<>+64(SB)/8, $0x0013001200110010
DATA r8c16<>+72(SB)/8, $0x0017001600150014
DATA r8c16<>+80(SB)/8, $0x0033003200310030
DATA r8c16<>+88(SB)/8, $0x0037003600350034
DATA r8c16<>+96(SB)/8, $0x001b001a00190018
DATA r8c16<>+104(SB)/8, $0x001f001e001d001c
DATA r8c16<>+112(SB)/8, $0x003b003a00390038
DATA r8c16<>+120(SB)/8, $0x003f003e003d003c
DATA r8c16<>+128(SB)/8, $0x0000000400000000
DATA r8c16<>+136(SB)/8, $0x0000000500000001
DATA r8c16<>+144(SB)/8, $0x0000000600000002
DATA r8c16<>+152(SB)/8, $0x0000000700000003
GLOBL r8c16<>(SB), RODATA|NOPTR, $160

DATA r8lo16<>+0(SB)/4, $0x000f000f
GLOBL r8lo16<>(SB), RODATA|NOPTR, $4

// C16REG adds the low and high nibbles of the words that idx permutes out of L times
// the query's even (ql) and odd (qh) codes into acc. Clobbers Z8, Z9.
#define C16REG(L, idx, ql, qh, acc) \
	VPERMB.Z L, idx, K4, Z8 \
	VPANDD   Z23, Z8, Z9    \
	VPSRLW   $4, Z8, Z8     \
	VPDPWSSD ql, Z9, acc    \
	VPDPWSSD qh, Z8, acc

// C16ROWS leaves in acc the sums of the two rows in L (lanes: the first row, the
// second, the first, the second), t a second chain.
#define C16ROWS(L, acc, t) \
	VPXORD  acc, acc, acc           \
	VPXORD  t, t, t                 \
	C16REG(L, Z20, Z24, Z25, acc)   \
	C16REG(L, Z21, Z26, Z27, t)     \
	VPADDD  t, acc, acc

// func dotU4ChanI16Z8C(out, q, rows unsafe.Pointer, stride uintptr, ng int, d uintptr)
TEXT ·dotU4ChanI16Z8C(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), DI
	MOVQ         q+8(FP), SI
	MOVQ         rows+16(FP), R8
	MOVQ         ng+32(FP), R13
	VBROADCASTSS 128(SI), Y18
	VBROADCASTSS 132(SI), Y19
	VMOVDQU64    (SI), Z8
	VSHUFI64X2   $0xa0, Z8, Z8, Z24
	VSHUFI64X2   $0xf5, Z8, Z8, Z25
	VMOVDQU64    64(SI), Z8
	VSHUFI64X2   $0xa0, Z8, Z8, Z26
	VSHUFI64X2   $0xf5, Z8, Z8, Z27
	VMOVDQU64    r8c16<>+0(SB), Z20
	VMOVDQU64    r8c16<>+64(SB), Z21
	VMOVDQU32    r8c16<>+128(SB), Y22
	VPBROADCASTD r8lo16<>(SB), Z23
	MOVQ         $0x5555555555555555, AX
	KMOVQ        AX, K4

c16unit:
	PREFETCHT0 PFDIST(R8)
	PREFETCHT0 PFDIST+64(R8)
	PREFETCHT0 PFDIST+128(R8)
	PREFETCHT0 PFDIST+192(R8)
	VMOVDQU64  (R8), Z0
	VMOVDQU64  64(R8), Z1
	VMOVDQU64  128(R8), Z2
	VMOVDQU64  192(R8), Z3
	C16ROWS(Z0, Z10, Z14)
	C16ROWS(Z1, Z11, Z15)
	C16ROWS(Z2, Z12, Z16)
	C16ROWS(Z3, Z13, Z17)
	TRSUM4(Z4, Z5, Z6, Z7)
	VSHUFI64X2 $0x4e, Z6, Z6, Z7
	VPADDD     Y7, Y6, Y6
	VCVTDQ2PS  Y6, Y6
	VMULPS     Y18, Y6, Y6
	VADDPS     Y19, Y6, Y6
	VPERMPS    Y6, Y22, Y6
	VMOVUPS    Y6, (DI)
	ADDQ       $32, DI
	ADDQ       $256, R8
	DECQ       R13
	JNZ        c16unit
	VZEROUPPER
	RET
