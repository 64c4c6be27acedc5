// Package linalg holds the matrix kernels of the kvq model runtime: weight-matrix ×
// activation products for every GGUF tensor type (MatMul, MatMulMany), and the small
// vector kernels the forward pass needs (Dot, Axpy, RMSNorm, SiLUMul).
//
// # Layout
//
// A Matrix is a row-major weight of Rows rows of Cols values, each row Type.RowBytes(Cols)
// bytes, exactly as GGUF stores a tensor of shape ne=[Cols, Rows]. Activations are plain
// float32, token-major: token i of a batch occupies x[i*Cols : (i+1)*Cols], and its output
// occupies out[i*Rows : (i+1)*Rows].
//
// # Types
//
// F32 and F16 weights are multiplied in float32 (F16 widened exactly). Q8_0, Q4_0, Q5_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS weights are multiplied natively
// against activations quantized per 32-value block to int8 with a float32 scale (as
// llama.cpp's q8_0 dot does): one integer dot per block (per 16-value half for the
// types with sub-block scales per 16 values, Q2_K, Q3_K and Q6_K; Q4_K's and Q5_K's
// minimums through the blocks' code sums, Q2_K's through its halves' sums), then float
// scaling (kernels.go, kquants.go). BF16 and the remaining types package gguf
// reads (Q4_1, Q5_1) are multiplied by dequantizing one weight row at a time into a
// scratch row (gguf.Dequantize).
//
// # Batch invariance
//
// A token's output is the same bits whatever other tokens share the call: activations
// are quantized per token, and every product runs each token through its type's
// one-token kernel or a kernel that computes each token's sum with the same arithmetic
// (TestBatchInvariant). The model's logits, and so the engine's outputs, then do not
// depend on batch size, prefill chunking or preemption.
//
// On CPUs with AVX-512 VNNI, Q8_0 products go through kernels that compute the scalar
// reference's sum bit for bit (per block the exact integer dot, then
// s = s + (d_w·d_x)·dot, three rounded float32 operations, block after block):
// q8Rows1Z for up to 5 tokens (a row at a time, each token in turn), q8TokensZ from 6
// (16-token groups in the lanes, each row's four codes broadcast into a VPDPBUSD per
// group, so a weight read from cache serves 16 tokens: from 4 groups, groups in pairs
// by 4-row tiles, a group left over by 8-row tiles; up to 3 groups, as decode steps
// of up to 48 sequences have, each by 8-row tiles, q8Tokens8Z, so that 8 rows share
// each load of its codes, on YMM registers when it has at most 8 tokens, q8Tokens8Y,
// through all the tiles of a call in one; its weights, which it reads once per group,
// are prefetched to L2 two tiles ahead in memory order). Activations are packed for
// it once per call (packTokens: 8 tokens at a time by an AVX2 transpose, pack8); the
// per-block weight scales and code sums it needs are made once per matrix (made by
// NewMatrix) at its first many-token product and kept, in one table of 8-row tiles: 4
// bytes per 32 weights (the binary16 scale and the negated code sum, widened per block
// and tile by the kernels), which streams from memory beside the weights' 34. Q4_K
// products of 6 or more tokens go through q4kTokensZ, which gives each token the sum
// of the one-token AVX2 kernel bit for bit (its eight sub-block lanes become eight
// registers of 16 tokens each, updated by the same fused multiply-adds and added in
// the same order). With AVX-512 VBMI and GFNI as well, IQ4_NL and IQ4_XS products (a
// token at a time) take kernels that split nibbles with VGF2P8AFFINEQB and multiply the
// looked-up levels (plus 128, unsigned) by VPDPBUSD, less 128 times the activation
// blocks' code sums (iq4_amd64.s); the Q3_K and Q2_K ones lay the activations out once
// per call by quads of their 16-value halves, so that a VPERMD and a VGF2P8AFFINEQB per
// quad put a row's codes in the same places and four VPDPBUSD leave each half's dot in
// a lane of its own, with no horizontal sums (q3k_amd64.s).
//
// Q4_0 and Q5_0 products compute their scalar references' sums bit for bit as Q8_0's do
// (the same per-block arithmetic): q4Rows1Z and q5Rows1Z for one token (the nibbles
// dotted unsigned, their offset times the block's code sum taken off after), and from 6
// tokens the rows of a chunk expanded to Q8_0 blocks (q4ExpandZ, q5ExpandZ: once per
// call, shared by its tokens) multiplied by q8TokensZ (blockexact.go, q45z_amd64.s).
// Q6_K products of 10 or more tokens go through q6kTokensZ, which gives each token
// q6kDotRows's sum bit for bit as q4kTokensZ does for Q4_K (its eight lanes per block
// become eight registers of 16 tokens), each row expanded once per call (q6kExpandZ:
// signed codes, their groups' corrections, d·sc per half). F16 products of 16 or more
// tokens go through f16TokensZ, which gives each token dotF16C's sum bit for bit (its 32
// lane accumulators become registers of 16 tokens, eight per pass over a quarter of the
// columns, three rows sharing each load of the tokens' values) from the activations
// transposed once per call and the rows widened once per chunk (f16tokens.go,
// f16z_amd64.s). F16 stays in float32 arithmetic: BF16 products would round the weights.
//
// # Blocking
//
// With one token (decode) each weight row is read once and dotted with the activations.
// With n tokens (prefill) the rows are split into chunks of about 64 KiB of weights; a
// chunk is multiplied against blocks of tokens whose activations stay within 128 KiB,
// about 8 KiB of rows at a time for every token of the block, so each weight row comes
// from memory once per chunk and is reused from L1 for every token (Q4_0, Q5_0, Q4_K
// and Q6_K two tokens per kernel call).
//
// # Kernels
//
// Each hot kernel has a portable scalar version (kernels.go), which is the reference the
// conformance tests check every other version against. On amd64 CPUs with AVX2 and FMA,
// Go assembly runs the F32 dots (one call per weight row and token block, f32_amd64.s),
// SiLUMul (its exponential a polynomial) and the quantizing and packing of activations
// (quant_amd64.s) in every build; with F16C also the F16
// kernels and the Q8_0, Q4_0, Q5_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS
// products (f16c_amd64.s, q8_amd64.s, q45_amd64.s, q4k_amd64.s, q5k_amd64.s, q3k_amd64.s,
// q6k_amd64.s, iq4_amd64.s; rows_amd64.go, kquants_amd64.go), which widen binary16 scales with
// VCVTPH2PS: a chunk of rows is one call per token that streams the rows in memory order
// and prefetches 4 KiB ahead. The other kernels (Axpy, RMSNorm) are plain Go: the set in
// use is the scalar one with the assembly kernels in place ("avx2-asm", asm_amd64.go).
// Setting the environment variable KVQ_NOSIMD=1, or calling
// SetSIMD(false), forces the scalar kernels. KernelName reports the set in use.
//
// # Parallelism
//
// A product larger than 128 KiB of weight bytes × tokens is split between the persistent
// helper goroutines of internal/workpool and the calling goroutine (SetThreads, default
// runtime.NumCPU()). Products that read each weight row once (decode, and batches whose
// activations fit one token block, but for the many-token kernels') give each thread a
// contiguous share of the rows, which it streams in memory order in shrinking runs, the
// kernels' prefetching running on from one run into the next; a thread done with its
// share takes runs from the end of another's, so a thread slowed by other load is
// caught up (workpool.ForRuns). Prefill chunks, and the many-token kernels' chunks, are
// claimed one at a time. MatMulMany runs several products that share their input in
// one dispatch. MatMulQuantized runs them on Activations that the goroutines computing
// them quantized as they went (Activations.Quantize over their token ranges), so that
// no goroutine quantizes the input alone before the product while the others wait: at
// 16 tokens the quantization runs on the calling goroutine (too small to split). All
// functions but an Activations' methods are safe for concurrent use.
package linalg
