package linalg

import (
	"encoding/binary"
	"math"
	"unsafe"

	"kvq/gguf"
	"kvq/internal/kernelsel"
)

// kernelSet is one implementation of every inner kernel. The scalar set is the reference;
// SIMD sets must agree with it within float32 rounding (integer parts exactly).
type kernelSet struct {
	name string
	// dotF32 returns Σ a[i]·b[i], len(a) == len(b).
	dotF32 func(a, b []float32) float32
	// dotF32T stores to out[t·ld] the dotF32 of w with token t's activations
	// x[t·len(w):(t+1)·len(w)] for t < n, the same value dotF32 returns for them: one
	// call per weight row and token block of an F32 product (per-token calls cost
	// more than the dots of short rows).
	dotF32T func(out []float32, ld int, w, x []float32, n int)
	// dotF16 returns Σ f16(w[2i:2i+2])·x[i]; len(w) == 2·len(x), little-endian binary16.
	dotF16 func(w []byte, x []float32) float32
	// dotF16Tokens, when not nil, is the many-token kernel of F16 (f16tokens.go): each
	// token's sum bit for bit dotF16's.
	dotF16Tokens f16TokensKernel
	// dotQ8 returns Σ_b d_w(b)·xd[b]·Σ_j w_q(b,j)·xq[32b+j] over the len(xd) Q8_0 blocks of w.
	dotQ8 func(w []byte, xq []int8, xd []float32) float32
	// dotQ8Rows writes to out[r] the dotQ8 of the row w[r·rowBytes:] with the same
	// activations, for r < len(out).
	dotQ8Rows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// dotQ8RowsX, when not nil, is dotQ8Rows computing dotQ8Scalar's sums bit for bit,
	// given also the activation blocks' code sums (xsum[b]: the sum of xq[32b:32b+32]):
	// a set with it multiplies many tokens with dotQ8Tokens, whose sums are the same.
	dotQ8RowsX func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)
	// dotQ8Tokens writes to out[t·ldo+r] the dotQ8Scalar sum of the Q8_0 row
	// w[r·rowBytes:] with token t's activations, for r < rows and t < xt.n, bit for bit:
	// the many-token kernel of sets with dotQ8RowsX.
	dotQ8Tokens tokensKernel
	// dotQ4KTokens, when not nil, is the many-token kernel of Q4_K: each token's sum
	// bit for bit dotQ4KRows's (of this set), reading the signed codes, scales and code
	// sums of the pack (xps, xdp, xsp).
	dotQ4KTokens tokensKernel
	// dotQ6KTokens, when not nil, is the many-token kernel of Q6_K: each token's sum
	// bit for bit dotQ6KRows's (of this set), reading the pack's codes plus 128 (xp).
	dotQ6KTokens tokensKernel
	// dotQ4Rows is dotQ8Rows for Q4_0 rows (dotQ4Scalar per row).
	dotQ4Rows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// dotQ4Rows2 is dotQ4KRows2 for Q4_0 rows.
	dotQ4Rows2 func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// dotQ5Rows is dotQ8Rows for Q5_0 rows.
	dotQ5Rows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// dotQ5Rows2 is dotQ4KRows2 for Q5_0 rows.
	dotQ5Rows2 func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// dotQ4KRows writes to out[r] the dot of the Q4_K row w[r·rowBytes:] (len(xd)/8
	// super-blocks of 144 bytes; dotQ4KScalar) with activations quantized as for dotQ8,
	// given also their per-block code sums xsum, for r < len(out): decode multiplies a
	// chunk of rows in one call.
	dotQ4KRows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)
	// dotQ4KRows2 is dotQ4KRows for two tokens: token 0's activations in the first
	// halves of xq, xd and xsum, token 1's in the second; their results to out0 and
	// out1 (of one length). Rows are stored one after the other (rowBytes is a row's
	// size).
	dotQ4KRows2 func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)
	// dotQ6KRows is dotQ4KRows for Q6_K rows (210-byte super-blocks; dotQ6KScalar).
	dotQ6KRows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// dotQ6KRows2 is dotQ4KRows2 for Q6_K rows.
	dotQ6KRows2 func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32)
	// siluMul does g[i] = g[i]/(1+e^−g[i])·u[i], len(g) == len(u).
	siluMul func(g, u []float32)
	// argmax returns the index of the largest value (the first among equal ones; a
	// NaN is never larger, and x[0] is returned when it is NaN); 0 for no values.
	argmax func(x []float32) int
	// axpy does dst[i] += a·x[i], len(dst) == len(x).
	axpy func(dst []float32, a float32, x []float32)
	// kRows are the rows kernels (dotQ4KRows's contract) of Q5_K, Q3_K, Q2_K, IQ4_NL
	// and IQ4_XS (kquants.go).
	kRows map[gguf.TensorType]kKernel
	// exactBlocks, when it has an entry for a type (Q4_0, Q5_0), holds kernels that
	// compute the type's scalar reference sums bit for bit for one token and for
	// many: the set's products of the type go through them (blockexact.go).
	exactBlocks map[gguf.TensorType]blockKernels
	// quantQ8 quantizes x per 32-value block: xd[b] = max|x|/127, xq = round(x/xd[b]);
	// len(x) == len(xq) == 32·len(xd).
	quantQ8 func(xq []int8, xd []float32, x []float32)
	// pack8 transposes n 8×8 matrices of dwords for packTokens: for it < n, i < 8 and
	// j < 8, dst[128·it+16·j+i] = src[stride·i+8·it+j] XOR flip (8 tokens' rows of
	// stride dwords in, 8 runs of 8 lanes of a 16-token group out).
	pack8 func(dst, src []uint32, stride, n int, flip uint32)
}

var scalarKernels = &kernelSet{
	name:        "scalar",
	dotF32:      dotF32Scalar,
	dotF32T:     dotF32TScalar,
	dotF16:      dotF16Scalar,
	dotQ8:       dotQ8Scalar,
	dotQ8Rows:   dotQ8RowsScalar,
	dotQ8RowsX:  dotQ8RowsXScalar,
	dotQ8Tokens: dotQ8TokensScalar,
	pack8:       pack8Scalar,
	dotQ4Rows:   dotQ4RowsScalar,
	dotQ5Rows:   dotQ5RowsScalar,
	dotQ4KRows:  dotQ4KRowsScalar,
	dotQ4KRows2: rows2K(dotQ4KRowsScalar),
	dotQ4Rows2:  rows2(dotQ4RowsScalar),
	dotQ5Rows2:  rows2(dotQ5RowsScalar),
	dotQ6KRows2: rows2(dotQ6KRowsScalar),
	dotQ6KRows:  dotQ6KRowsScalar,
	argmax:      argmaxScalar,
	axpy:        axpyScalar,
	siluMul:     siluMulScalar,
	quantQ8:     quantQ8Scalar,
	kRows:       scalarKRows,
	exactBlocks: scalarExactBlocks,
}

// simdKernels is the SIMD kernel set of this build for this CPU, or nil when there is none
// (portable build, or a CPU without the needed features).
var simdKernels = detectSIMD()

// alternateKernels are further SIMD kernel sets this CPU can run, which the tests check
// like the others (the AVX2 set where the CPU also has AVX-512 VNNI).
var alternateKernels []*kernelSet

// active is the kernel set in use: SIMD when available, unless KVQ_NOSIMD=1.
var active = kernelsel.New(scalarKernels, simdKernels)

// SetSIMD selects the SIMD kernels (on) or the portable scalar ones (off) and reports
// whether SIMD kernels are in use afterwards: false when this build or this CPU has
// none. The environment variable KVQ_NOSIMD=1 sets the initial choice to scalar.
func SetSIMD(on bool) bool { return active.SetSIMD(on) }

// KernelName names the kernel set in use ("scalar", or the SIMD level such as "avx2").
func KernelName() string { return active.Load().name }

// dotF32TScalar is the reference for dotF32T: dotF32Scalar per token.
func dotF32TScalar(out []float32, ld int, w, x []float32, n int) {
	cols := len(w)
	for t := range n {
		out[t*ld] = dotF32Scalar(w, x[t*cols:(t+1)*cols])
	}
}

// dotF32Scalar is the reference for dotF32: for i { s += a[i]*b[i] }, here with four
// partial sums.
func dotF32Scalar(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF16Scalar is the reference for dotF16: for i { s += f16Table[w[i]]*x[i] }.
func dotF16Scalar(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += f16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8] * x[i]
		s1 += f16Table[uint16(w[2*i+2])|uint16(w[2*i+3])<<8] * x[i+1]
	}
	for ; i < len(x); i++ {
		s0 += f16Table[uint16(w[2*i])|uint16(w[2*i+1])<<8] * x[i]
	}
	return s0 + s1
}

// Q8_0 block: 2 bytes little-endian binary16 scale d, then 32 int8 codes q; value = d·q.
const (
	q8BlockBytes = 34
	q4BlockBytes = 18
	blockElems   = 32
)

// dotQ8Scalar is the reference for dotQ8: per block an exact int32 dot of the codes,
// then one float multiply by both scales.
func dotQ8Scalar(w []byte, xq []int8, xd []float32) float32 {
	var s float32
	w = w[:len(xd)*q8BlockBytes]
	xq = xq[:len(xd)*blockElems]
	for b := range xd {
		p := f16Table[uint16(w[b*q8BlockBytes])|uint16(w[b*q8BlockBytes+1])<<8] * xd[b]
		// The conversion keeps the product rounded on its own (no fused multiply-add),
		// the sum every kernel of dotQ8RowsX and dotQ8Tokens reproduces.
		s += float32(p * float32(dotCodes8((*[q8BlockBytes]byte)(w[b*q8BlockBytes:]), (*[blockElems]int8)(xq[b*blockElems:]))))
	}
	return s
}

// tokenPack is a call's quantized activations as the many-token kernels read them: n
// tokens of nb blocks, token-major (xq, xd), and packed in 16-token groups by
// packTokens: codes plus 128 (xp) or as they are (xps), scales (xdp) and code sums
// (xsp); a kernel's packs are those its type asks for (quantType), the others nil.
type tokenPack struct {
	n, nb int
	xq    []int8
	xd    []float32
	xp    []uint32
	xps   []uint32
	xdp   []float32
	xsp   []int32
}

// tokenGroup is the token count of a packTokens group.
const tokenGroup = 16

// packTokens lays out tokens [t0, t1) of n for the many-token kernels, in groups of 16
// tokens: for group g, block b and dword k, xp[((g·nb+b)·8+k)·16+t] holds codes
// 32b+4k … 32b+4k+3 of token 16g+t, each plus 128 (XOR 0x80), little-endian, xps[…]
// the same codes as they are, and xdp[(g·nb+b)·16+t] and xsp[…] the block's scale and
// code sum (from xsum); nil packs are skipped. xq, xd and xsum hold all n tokens,
// token-major. When t1 is n, the last group's lanes past n get codes 0 (xp: 0x80
// bytes), scale 0 and sum 0.
func packTokens(k *kernelSet, pk *tokenPack, xsum []int32, t0, t1 int) {
	n, nb := pk.n, pk.nb
	xq, xd := pk.xq, pk.xd
	// Runs of 8 tokens from lane 0 or 8 of a group by k.pack8: the codes block by
	// block, the scales and sums 8 blocks at a time. The tokens and blocks left one at
	// a time: the block's 32 codes read as eight little-endian words (one load each)
	// and stored 16 words apart, with one bounds check per block and pack. At 16
	// tokens of 768 values a product's packing runs on one thread while the other
	// waits; BenchmarkPackTokens n=16 with AVX2, ns per token, interleaved runs:
	// 294–1041 a token at a time, 39–102 by pack8.
	const span = 7*tokenGroup + 1 // the words of one token and block, first to last
	// scales packs token u's scales and code sums from block b0 on.
	scales := func(u, b0 int) {
		g, l := u/tokenGroup, u%tokenGroup
		for b := b0; b < nb; b++ {
			pk.xdp[(g*nb+b)*tokenGroup+l] = xd[u*nb+b]
			if pk.xsp != nil {
				pk.xsp[(g*nb+b)*tokenGroup+l] = xsum[u*nb+b]
			}
		}
	}
	for t := t0; t < t1; {
		g, l := t/tokenGroup, t%tokenGroup
		if t%8 == 0 && t+8 <= t1 {
			q := words(xq[t*nb*blockElems : (t+8)*nb*blockElems])
			if pk.xp != nil {
				k.pack8(pk.xp[g*nb*8*tokenGroup+l:], q, nb*8, nb, 0x80808080)
			}
			if pk.xps != nil {
				k.pack8(pk.xps[g*nb*8*tokenGroup+l:], q, nb*8, nb, 0)
			}
			k.pack8(words(pk.xdp[g*nb*tokenGroup+l:]), words(xd[t*nb:(t+8)*nb]), nb, nb/8, 0)
			if pk.xsp != nil {
				k.pack8(words(pk.xsp[g*nb*tokenGroup+l:]), words(xsum[t*nb:(t+8)*nb]), nb, nb/8, 0)
			}
			for u := t; u < t+8; u++ {
				scales(u, nb&^7)
			}
			t += 8
			continue
		}
		q := xq[t*nb*blockElems : (t+1)*nb*blockElems]
		for b := 0; b < nb; b++ {
			c := (*[blockElems]byte)(unsafe.Pointer(&q[blockElems*b]))
			o := (g*nb+b)*8*tokenGroup + l
			if pk.xp != nil {
				d := pk.xp[o : o+span]
				for k := range 8 {
					d[k*tokenGroup] = binary.LittleEndian.Uint32(c[4*k:]) ^ 0x80808080
				}
			}
			if pk.xps != nil {
				d := pk.xps[o : o+span]
				for k := range 8 {
					d[k*tokenGroup] = binary.LittleEndian.Uint32(c[4*k:])
				}
			}
		}
		scales(t, 0)
		t++
	}
	if t1 != n || n == 0 {
		return
	}
	g := (n - 1) / tokenGroup
	for l := n - g*tokenGroup; l < tokenGroup; l++ {
		for b := 0; b < nb; b++ {
			for k := 0; k < 8; k++ {
				if pk.xp != nil {
					pk.xp[((g*nb+b)*8+k)*tokenGroup+l] = 0x80808080
				}
				if pk.xps != nil {
					pk.xps[((g*nb+b)*8+k)*tokenGroup+l] = 0
				}
			}
			pk.xdp[(g*nb+b)*tokenGroup+l] = 0
			if pk.xsp != nil {
				pk.xsp[(g*nb+b)*tokenGroup+l] = 0
			}
		}
	}
}

// pack8Scalar is the reference for kernelSet.pack8.
func pack8Scalar(dst, src []uint32, stride, n int, flip uint32) {
	if n == 0 {
		return
	}
	dst = dst[:128*(n-1)+16*7+8]
	src = src[:7*stride+8*n]
	for it := range n {
		for i := range 8 {
			for j := range 8 {
				dst[128*it+16*j+i] = src[stride*i+8*it+j] ^ flip
			}
		}
	}
}

// words views s (of 4-byte elements, or bytes a multiple of 4 long) as dwords.
func words[T int8 | int32 | float32](s []T) []uint32 {
	if len(s) == 0 {
		return nil
	}
	n := len(s) * int(unsafe.Sizeof(s[0])) / 4
	return unsafe.Slice((*uint32)(unsafe.Pointer(&s[0])), n)
}

// dotQ8TokensScalar is the reference for dotQ8Tokens: dotQ8Scalar per row and token.
func dotQ8TokensScalar(out []float32, ldo int, w []byte, rowBytes, rows int, xt tokenPack, _ *rowTables, _ Matrix, _ int) {
	nb := xt.nb
	for r := 0; r < rows; r++ {
		row := w[r*rowBytes : r*rowBytes+nb*q8BlockBytes]
		for t := 0; t < xt.n; t++ {
			out[t*ldo+r] = dotQ8Scalar(row, xt.xq[t*nb*blockElems:(t+1)*nb*blockElems], xt.xd[t*nb:(t+1)*nb])
		}
	}
}

// dotQ8RowsXScalar is the reference for dotQ8RowsX: dotQ8RowsScalar (xsum unused).
func dotQ8RowsXScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, _ []int32) {
	dotQ8RowsScalar(out, w, rowBytes, xq, xd)
}

// dotQ8RowsScalar is the reference for dotQ8Rows: dotQ8Scalar of each row.
func dotQ8RowsScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)*q8BlockBytes, xq, xd, dotQ8Scalar)
}

// eachRow writes to out[r] the dot of the row of rb bytes at w[r·rowBytes:] with the
// activations, for r < len(out): a rows kernel made of a one-row one.
func eachRow(out []float32, w []byte, rowBytes, rb int, xq []int8, xd []float32, dot func([]byte, []int8, []float32) float32) {
	for r := range out {
		out[r] = dot(w[r*rowBytes:r*rowBytes+rb], xq, xd)
	}
}

// dotCodes8 returns Σ_j int8(blk[2+j])·q[j], exactly, in four partial sums.
func dotCodes8(blk *[q8BlockBytes]byte, q *[blockElems]int8) int32 {
	var a0, a1, a2, a3 int32
	for j := 0; j < blockElems; j += 4 {
		a0 += int32(int8(blk[2+j])) * int32(q[j])
		a1 += int32(int8(blk[3+j])) * int32(q[j+1])
		a2 += int32(int8(blk[4+j])) * int32(q[j+2])
		a3 += int32(int8(blk[5+j])) * int32(q[j+3])
	}
	return (a0 + a1) + (a2 + a3)
}

// Q4_0 block: 2 bytes binary16 scale d, then 16 bytes; byte j holds value j in its low
// nibble and value j+16 in its high nibble, each as code-8; value = d·(code-8).

// dotQ4Scalar is the reference of the Q4_0 kernels (dotQ4Rows): dotQ8Scalar with the
// codes unpacked from nibbles.
func dotQ4Scalar(w []byte, xq []int8, xd []float32) float32 {
	var s float32
	w = w[:len(xd)*q4BlockBytes]
	xq = xq[:len(xd)*blockElems]
	for b := range xd {
		p := f16Table[uint16(w[b*q4BlockBytes])|uint16(w[b*q4BlockBytes+1])<<8] * xd[b]
		// Rounded on its own (no fused multiply-add), as dotQ8Scalar's: the sum of
		// the exact kernels (blockexact.go).
		s += float32(p * float32(dotCodes4((*[q4BlockBytes]byte)(w[b*q4BlockBytes:]), (*[blockElems]int8)(xq[b*blockElems:]))))
	}
	return s
}

// dotQ4RowsScalar is the reference for dotQ4Rows: dotQ4Scalar of each row.
func dotQ4RowsScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)*q4BlockBytes, xq, xd, dotQ4Scalar)
}

// dotCodes4 returns Σ_j (code_j - 8)·q[j] over the 32 nibble codes of a Q4_0 block, exactly.
func dotCodes4(blk *[q4BlockBytes]byte, q *[blockElems]int8) int32 {
	var a0, a1 int32
	for j := 0; j < 16; j++ {
		v := blk[2+j]
		a0 += (int32(v&0x0f) - 8) * int32(q[j])
		a1 += (int32(v>>4) - 8) * int32(q[j+16])
	}
	return a0 + a1
}

// Q5_0 block (layout documented in package gguf, q5_0.go): 22 bytes for 32 values, a
// binary16 d, 4 bytes of fifth bits (bit j: value j), then value j in the low nibble of
// byte 6+j and value j+16 in its high nibble; value = d·(code − 16).
const q5BlockBytes = 22

// q5Weight returns value j (0..31) of a Q5_0 block without its scale: code − 16.
func q5Weight(blk *[q5BlockBytes]byte, j int) int32 {
	nib := blk[6+j%16] >> (4 * (j / 16)) & 0x0f
	high := blk[2+j/8] >> (j % 8) & 1
	return int32(nib|high<<4) - 16
}

// dotQ5Scalar is the reference of the Q5_0 kernels (dotQ5Rows): per block the exact
// integer dot of the codes − 16 with the activation codes, then float32 scaling.
func dotQ5Scalar(w []byte, xq []int8, xd []float32) float32 {
	var s float32
	w = w[:len(xd)*q5BlockBytes]
	xq = xq[:len(xd)*blockElems]
	for b := range xd {
		blk := (*[q5BlockBytes]byte)(w[b*q5BlockBytes:])
		var a int32
		for j, x := range (*[blockElems]int8)(xq[b*blockElems:]) {
			a += q5Weight(blk, j) * int32(x)
		}
		p := f16Table[uint16(blk[0])|uint16(blk[1])<<8] * xd[b]
		s += float32(p * float32(a)) // rounded on its own, as in dotQ4Scalar
	}
	return s
}

// dotQ5RowsScalar is the reference for dotQ5Rows: dotQ5Scalar of each row.
func dotQ5RowsScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)*q5BlockBytes, xq, xd, dotQ5Scalar)
}

// Q4_K super-block (layout documented in package gguf, q4_k.go): 144 bytes for 256
// values in 8 sub-blocks of 32: binary16 d and dmin, 12 bytes of 6-bit sub-block scales
// sc[i] and minimums m[i], then 128 bytes of 4-bit codes (group g of 32 bytes: sub-block
// 2g in the low nibbles, 2g+1 in the high); value = d·sc[i]·code − dmin·m[i].
const q4KBlockBytes = 144

// q4KScales unpacks the 8 six-bit scales and minimums of a Q4_K super-block's 12 scale
// bytes s.
func q4KScales(s *[12]byte) (sc, m [8]uint8) {
	for i := 0; i < 4; i++ {
		sc[i], m[i] = s[i]&63, s[i+4]&63
		sc[i+4] = s[i+8]&15 | (s[i]>>6)<<4
		m[i+4] = s[i+8]>>4 | (s[i+4]>>6)<<4
	}
	return sc, m
}

// blockSums writes the sum of each 32-code block of xq to xsum.
func blockSums(xsum []int32, xq []int8) {
	xq = xq[:len(xsum)*blockElems]
	for b := range xsum {
		var s int32
		for _, q := range (*[blockElems]int8)(xq[b*blockElems:]) {
			s += int32(q)
		}
		xsum[b] = s
	}
}

// dotQ4KScalar is the reference of the Q4_K kernels (dotQ4KRows). Activation block b
// of 32 values lines up with sub-block b%8 of super-block b/8, so per sub-block
//
//	Σ (d·sc·code − dmin·m)·xd·xq = d·sc·xd·Σ code·xq − dmin·m·xd·Σ xq,
//
// one exact integer dot and the block's code sum, then float32 scaling.
func dotQ4KScalar(w []byte, xq []int8, xd []float32, xsum []int32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q4KBlockBytes]
	xq = xq[:nsb*256]
	xsum = xsum[:nsb*8]
	var s float32
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q4KBlockBytes]byte)(w[sb*q4KBlockBytes:])
		d := f16Table[uint16(blk[0])|uint16(blk[1])<<8]
		dmin := f16Table[uint16(blk[2])|uint16(blk[3])<<8]
		sc, m := q4KScales((*[12]byte)(blk[4:16]))
		for g := 0; g < 4; g++ {
			b0 := 8*sb + 2*g
			q0 := (*[blockElems]int8)(xq[b0*blockElems:])
			q1 := (*[blockElems]int8)(xq[(b0+1)*blockElems:])
			qs := (*[32]byte)(blk[16+32*g:])
			var a0, a1 int32
			for l, c := range qs {
				a0 += int32(c&15) * int32(q0[l])
				a1 += int32(c>>4) * int32(q1[l])
			}
			s += d*float32(sc[2*g])*xd[b0]*float32(a0) - dmin*float32(m[2*g])*xd[b0]*float32(xsum[b0])
			s += d*float32(sc[2*g+1])*xd[b0+1]*float32(a1) - dmin*float32(m[2*g+1])*xd[b0+1]*float32(xsum[b0+1])
		}
	}
	return s
}

// dotQ4KRowsScalar is the reference for dotQ4KRows: dotQ4KScalar of each row.
func dotQ4KRowsScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	rb := len(xd) / 8 * q4KBlockBytes
	for r := range out {
		out[r] = dotQ4KScalar(w[r*rowBytes:r*rowBytes+rb], xq, xd, xsum)
	}
}

// rows2 is the two-token rows kernel made of a one-token one, rows, run for each token
// in turn: the reference for dotQ4Rows2, dotQ5Rows2 and dotQ6KRows2 (of the scalar
// rows kernels).
func rows2(rows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32)) func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	return func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
		nb := len(xd) / 2
		rows(out0, w, rowBytes, xq[:32*nb], xd[:nb])
		rows(out1, w, rowBytes, xq[32*nb:64*nb], xd[nb:2*nb])
	}
}

// rows2K is rows2 for Q4_K's rows kernels, which also take the code sums: the
// reference for dotQ4KRows2.
func rows2K(rows func(out []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32)) func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
	return func(out0, out1 []float32, w []byte, rowBytes int, xq []int8, xd []float32, xsum []int32) {
		nb := len(xd) / 2
		rows(out0, w, rowBytes, xq[:32*nb], xd[:nb], xsum[:nb])
		rows(out1, w, rowBytes, xq[32*nb:64*nb], xd[nb:2*nb], xsum[nb:2*nb])
	}
}

// Q6_K super-block (layout documented in package gguf, q6_k.go): 210 bytes for 256 values
// in 16 sub-blocks of 16: 128 bytes of low 4 bits (ql), 64 bytes of high 2 bits (qh), 16
// int8 sub-block scales, binary16 d; value = d·sc[k]·(code − 32).
const q6KBlockBytes = 210

// q6KCode returns the 6-bit code of value 32k+l (k = 0..3, l = 0..31) of a Q6_K half
// block with low bits L (64 bytes) and high bits H (32 bytes).
func q6KCode(L *[64]byte, H *[32]byte, k, l int) int32 {
	lo := L[l+32*(k&1)]
	if k >= 2 {
		lo >>= 4
	}
	return int32(lo&15 | (H[l]>>(2*k)&3)<<4)
}

// dotQ6KScalar is the reference of the Q6_K kernels (dotQ6KRows). Activation block 4h+k
// of a super-block holds the 32 values 128h+32k+l; its first 16 use scale sc[8h+2k],
// the last 16 sc[8h+2k+1]:
// two exact integer dots per activation block, then float32 scaling.
func dotQ6KScalar(w []byte, xq []int8, xd []float32) float32 {
	nsb := len(xd) / 8
	w = w[:nsb*q6KBlockBytes]
	xq = xq[:nsb*256]
	var s float32
	for sb := 0; sb < nsb; sb++ {
		blk := (*[q6KBlockBytes]byte)(w[sb*q6KBlockBytes:])
		d := f16Table[uint16(blk[208])|uint16(blk[209])<<8]
		for h := 0; h < 2; h++ {
			L := (*[64]byte)(blk[64*h:])
			H := (*[32]byte)(blk[128+32*h:])
			for k := 0; k < 4; k++ {
				b := 8*sb + 4*h + k
				q := (*[blockElems]int8)(xq[b*blockElems:])
				var a0, a1 int32
				for l := 0; l < 16; l++ {
					a0 += (q6KCode(L, H, k, l) - 32) * int32(q[l])
					a1 += (q6KCode(L, H, k, l+16) - 32) * int32(q[l+16])
				}
				sc0, sc1 := float32(int8(blk[192+8*h+2*k])), float32(int8(blk[192+8*h+2*k+1]))
				s += d * xd[b] * (sc0*float32(a0) + sc1*float32(a1))
			}
		}
	}
	return s
}

// dotQ6KRowsScalar is the reference for dotQ6KRows: dotQ6KScalar of each row.
func dotQ6KRowsScalar(out []float32, w []byte, rowBytes int, xq []int8, xd []float32) {
	eachRow(out, w, rowBytes, len(xd)/8*q6KBlockBytes, xq, xd, dotQ6KScalar)
}

// axpyScalar is the reference for axpy: for i { dst[i] += a*x[i] }.
func axpyScalar(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

// quantQ8Scalar is the reference for quantQ8: per block d = max|x|/127 and
// q = x·(1/d) rounded to nearest, ties to even (in float32), clamped to [-127, 127]; an
// all-zero block gets d = 0, q = 0.
func quantQ8Scalar(xq []int8, xd []float32, x []float32) {
	x = x[:len(xd)*blockElems]
	xq = xq[:len(xd)*blockElems]
	for b := range xd {
		v := x[b*blockElems : (b+1)*blockElems]
		q := xq[b*blockElems : (b+1)*blockElems]
		var amax float32
		for _, f := range v {
			amax = max(amax, abs32(f))
		}
		d := amax / 127
		xd[b] = d
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for j, f := range v {
			q[j] = int8(max(-127, min(127, roundEven32(float32(f*id)))))
		}
	}
}

// roundEven32 rounds f to the nearest integer, ties to even, for |f| < 2^22 (adding and
// subtracting 1.5·2^23 leaves the rounded value); larger or NaN inputs give a value
// outside [-127, 127] or NaN, which callers clamp.
func roundEven32(f float32) int32 {
	const magic = 3 << 22
	if !(abs32(f) < 1<<22) {
		if f > 0 {
			return math.MaxInt32
		}
		return math.MinInt32 // negative overflow or NaN, as VCVTPS2DQ gives
	}
	return int32(float32(f+magic) - magic)
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }
