// Macros of the Q4_K kernels (q4k_amd64.s), shared with the Q5_K ones (q5k_amd64.s),
// whose super-blocks differ only by a fifth bit per code.

// Q4KCODES loads the 64 code bytes at qoff(SI), four sub-blocks, as unsigned bytes:
// Y1 and Y2 the low and high nibbles of the first 32, Y3 and Y4 those of the next 32.
// Y14: nibble masks.
#define Q4KCODES(qoff) \
	VMOVDQU qoff(SI), Y1 \
	VPSRLW  $4, Y1, Y2 \
	VPAND   Y14, Y1, Y1 \
	VPAND   Y14, Y2, Y2 \
	VMOVDQU (qoff+32)(SI), Y3 \
	VPSRLW  $4, Y3, Y4 \
	VPAND   Y14, Y3, Y3 \
	VPAND   Y14, Y4, Y4

// Q4KDOTS leaves in dst the partial dots of the four sub-blocks in Y1..Y4 (Q4KCODES)
// against the activation codes x0..x3 (32 bytes each): lanes [0 1 2 3 | 0 1 2 3], each
// half the sums of its half of the 32 values. Y15: int16 ones; Y5..Y8 scratch.
#define Q4KDOTS(x0, x1, x2, x3, dst) \
	VPMADDUBSW x0, Y1, Y5 \
	VPMADDUBSW x1, Y2, Y6 \
	VPMADDUBSW x2, Y3, Y7 \
	VPMADDUBSW x3, Y4, Y8 \
	VPMADDWD   Y15, Y5, Y5 \
	VPMADDWD   Y15, Y6, Y6 \
	VPMADDWD   Y15, Y7, Y7 \
	VPMADDWD   Y15, Y8, Y8 \
	VPHADDD    Y6, Y5, Y5 \
	VPHADDD    Y8, Y7, Y7 \
	VPHADDD    Y7, Y5, dst

// Q4KFOLD(lo, hi, dst) converts to float32 in dst the super-block's sub-block dots
// from the partial dots of its halves (Q4KDOTS), lane j sub-block j's: the low halves
// plus the high halves of the folds. tmp is scratch.
#define Q4KFOLD(lo, hi, dst, tmp) \
	VPERM2I128 $0x20, hi, lo, dst \
	VPERM2I128 $0x31, hi, lo, tmp \
	VPADDD     tmp, dst, dst \
	VCVTDQ2PS  dst, dst

// Q4KSCALES decodes the super-block's scales and minimums at SI from their 12 packed
// bytes (u0, u1, u2) as sc = u0&0x3f.. | (u2&0x0f.. | (u0>>6&0x03..)<<4)<<32 and
// m = u1&0x3f.. | (u2>>4&0x0f.. | (u1>>6&0x03..)<<4)<<32, one byte each, into Y2
// (sc·d) and Y3 (m·dmin) as float32. AX, BX, DX, R10..R12, Y4..Y6 are scratch.
#define Q4KSCALES \
	MOVL         4(SI), AX \
	MOVL         8(SI), BX \
	MOVL         12(SI), DX \
	MOVL         AX, R10 \
	ANDL         $0x3f3f3f3f, R10 \
	MOVL         DX, R11 \
	ANDL         $0x0f0f0f0f, R11 \
	SHRL         $6, AX \
	ANDL         $0x03030303, AX \
	SHLL         $4, AX \
	ORL          AX, R11 \
	MOVL         BX, R12 \
	ANDL         $0x3f3f3f3f, R12 \
	SHRL         $4, DX \
	ANDL         $0x0f0f0f0f, DX \
	SHRL         $6, BX \
	ANDL         $0x03030303, BX \
	SHLL         $4, BX \
	ORL          BX, DX \
	VMOVD        R10, X2 \
	VPINSRD      $1, R11, X2, X2 \
	VPMOVZXBD    X2, Y2 \
	VCVTDQ2PS    Y2, Y2 \
	VMOVD        R12, X3 \
	VPINSRD      $1, DX, X3, X3 \
	VPMOVZXBD    X3, Y3 \
	VCVTDQ2PS    Y3, Y3 \
	VMOVD        (SI), X4 \
	VCVTPH2PS    X4, X4 \
	VBROADCASTSS X4, Y5 \
	VMOVSHDUP    X4, X4 \
	VBROADCASTSS X4, Y6 \
	VMULPS       Y5, Y2, Y2 \
	VMULPS       Y6, Y3, Y3

// Q4KACC(dots, xd, xsum, acc) adds to acc the super-block's sum for one token, from its
// sub-block dots (Q4KFOLD) and the token's activation scales and code sums at xd and
// xsum: dots·(sc·d)·xd − (m·dmin)·xd·xsum. Y4, Y7, Y8 are scratch.
#define Q4KACC(dots, xd, xsum, acc) \
	VMOVUPS      xd, Y7 \
	VCVTDQ2PS    xsum, Y8 \
	VMULPS       Y7, Y8, Y8 \
	VMULPS       Y7, Y2, Y4 \
	VFMADD231PS  Y4, dots, acc \
	VFNMADD231PS Y3, Y8, acc

// Q4KROWS is the body of q4kDotRows and q5kDotRows after their constants are set:
// for each of the rows (R14) at R13 (rowBytes apart), the sum over units super-blocks
// of bytes bytes each, one sbm per super-block, stored at R15 and on.
#define Q4KROWS(sbm, bytes) \
row: \
	MOVQ   R13, SI \
	MOVQ   xq+32(FP), DI \
	MOVQ   xd+40(FP), R8 \
	MOVQ   xsum+48(FP), R9 \
	MOVQ   units+56(FP), CX \
	VXORPS Y0, Y0, Y0 \
sb: \
	PREFETCHT0 4096(SI) \
	PREFETCHT0 4160(SI) \
	PREFETCHT0 4224(SI) \
	sbm \
	ADDQ       $bytes, SI \
	ADDQ       $256, DI \
	ADDQ       $32, R8 \
	ADDQ       $32, R9 \
	DECQ       CX \
	JNZ        sb \
	HSUM0 \
	VMOVSS X0, (R15) \
	ADDQ   $4, R15 \
	ADDQ   rowBytes+16(FP), R13 \
	DECQ   R14 \
	JNZ    row \
	VZEROUPPER \
	RET
