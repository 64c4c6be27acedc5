// Package quant holds kvq's codecs: how one key or value row (or, for KIVI keys, one
// block of tokens quantized per channel) is stored in fewer bits. Pure functions and
// small types; it knows nothing of caches or models.
//
// Every codec documents its byte layout at the top of its file. Sizes are exact:
// RowBytes and BlockBytes are what Encode writes, and memory accounting everywhere
// else is computed from them.
//
// Codecs and their names:
//
//	F32{}                          "f32"      4 bytes per value
//	F16{}, BF16{}                  "f16", "bf16"  2 bytes per value, round to nearest even
//	Int8{}                         "q8"       symmetric per row, f16 scale
//	Affine{Bits: 8|4|3|2, Group: g} "u8", "q4", "q3", "q2" (whole row) or "q4:g=32" etc.:
//	                               asymmetric min/max per group, f16 scale and zero
//	FP8{Format: E4M3|E5M2}         "fp8e4m3", "fp8e5m2": OCP FP8 with an f16 scale per row
//	FP8{..., TensorScale: s}       "fp8e4m3:s=0.5": OCP FP8 with a fixed scale
//	Channel{Bits: 8|4|3|2}         "kivi8", "kivi4", "kivi3", "kivi2": KIVI keys, per
//	                               channel over a block of tokens (a ChannelCodec)
//	ChannelValues{Bits: 4|2}       "chan4", "chan2": values per channel over a block
//	                               of tokens, Channel's bytes (a ChannelAdder)
//
// Bytes per 128-value row: f32 512, f16/bf16 256, q8 130, fp8 130 (128 with a tensor
// scale), u8 132, q4 68, q3 52, q2 36, u8:g=32 144, q4:g=32 80, q3:g=32 64, q2:g=32 48.
//
// The registry (registry.go) names the cache types built from these codecs: one
// entry per type with its spec parameters and codec constructors, which kv's spec
// parser, kvq and the conformance suites read. Each row codec type carries its entry
// in the kernel table (kernels.go): its SIMD kernels, found without a switch over
// codec types. RoPE (rope.go) rotates keys stored
// before RoPE while they are scored (DotChannelRoPE).
//
// Values: every codec accepts any float32 without panicking. Float formats keep NaN
// and ±Inf (E4M3 saturates ±Inf); integer codecs read NaN as 0 and saturate to
// ±65504, the range of their f16 parameters (params.go). Each codec's error bound is
// stated in its file and proven by the conformance suite (conformance_test.go).
//
// Slices: methods panic, like slice indexing, when given slices shorter than their
// contract (len(dst) < RowBytes(len(src)) and so on), and Affine, FP8 and Channel
// panic when their configuration fails Validate; both are programming errors, to be
// ruled out where the codec is configured (e.g. a cache spec parser calls Validate).
//
// Attention kernels (multi.go, multirow.go): DotRows scores g query vectors against a
// run of rows and AddRows adds a run of rows weighted per query into g accumulators,
// each in one pass over the codes (grouped-query attention reads a KV row once for
// all its query heads); other RowCodec implementations fall back to Dot and AddScaled.
// DecodeRows, DecodeBlockRows, MultiDot and MultiAxpy are the pieces they are built
// from. Each has a portable scalar implementation, the reference, and on amd64 CPUs
// with AVX2 and FMA SIMD ones in Go assembly that agree with it; SetSIMD(false)
// or KVQ_NOSIMD=1 selects the scalar kernels.
//
// RoundTrip is the format-free quant→dequant primitive (1..16 bits, by row or by
// column) for quality tools.
package quant

import "errors"

// ErrInvalid is returned (wrapped, with what was wrong) by Validate methods for an
// unusable codec configuration and by RoundTrip for bad arguments.
var ErrInvalid = errors.New("quant: invalid codec or argument")

// RowCodec stores one row of d float32 values (one token of one KV head) in a fixed
// number of bytes. Implementations are stateless values, safe for concurrent use.
type RowCodec interface {
	// Name is the codec's short name, e.g. "q8" or "q4:g=32".
	Name() string
	// RowBytes is the exact number of bytes one encoded row of d values occupies
	// (codes, scales and zeros). RowBytes(0) is 0.
	RowBytes(d int) int
	// Encode writes the encoding of src into dst. len(dst) must equal RowBytes(len(src)).
	Encode(dst []byte, src []float32)
	// Decode reconstructs len(dst) values from src, which holds RowBytes(len(dst)) bytes.
	Decode(dst []float32, src []byte)
	// Dot returns q · Decode(src) computed on the codes in place, without a
	// dequantized copy; len(q) is the row length d.
	Dot(q []float32, src []byte) float32
	// AddScaled performs dst += w · Decode(src) on the codes in place; len(dst) is d.
	AddScaled(dst []float32, w float32, src []byte)
}

// ChannelCodec stores a block of t tokens × d channels quantized per channel (one
// scale and zero per channel for the whole block), as KIVI does for keys. The source
// is row-major: token i, channel c is src[i*d+c].
type ChannelCodec interface {
	// Name is the codec's short name, e.g. "kivi4".
	Name() string
	// BlockBytes is the exact number of bytes one encoded block of t tokens × d channels occupies.
	BlockBytes(t, d int) int
	// Encode writes the encoding of src (t×d, row-major) into dst; len(dst) must equal BlockBytes(t, d).
	Encode(dst []byte, src []float32, t, d int)
	// Decode reconstructs the t×d block into dst (row-major).
	Decode(dst []float32, src []byte, t, d int)
	// Dot writes scores[i] = q · token i of the block for i < t, computed on the codes
	// in place; len(q) is d and len(scores) at least t.
	Dot(scores []float32, q []float32, src []byte, t, d int)
}

// ChannelAdder is a ChannelCodec that stores values: blocks of t tokens × d channels
// quantized per channel, which attention adds into its weighted sums on the codes
// in place (AddChannelSpan).
type ChannelAdder interface {
	ChannelCodec
	// AddRows performs acc[j*d+c] += Σ_{i0≤i<i1} w[j*ld+i−i0]·Decode(block)[i*d+c]
	// for j < g and c < d, reading the block's codes in place; tmp is scratch of at
	// least ChannelAddFloats(d) values. Each query's sums are the same bits
	// whatever other queries share the call and whatever tokens of weight 0 follow
	// its own.
	AddRows(acc, w []float32, ld, g int, block []byte, t, d, i0, i1 int, tmp []float32)
}

// ChannelAddFloats is the scratch ChannelAdder.AddRows needs for tokens of d values,
// whatever the number of queries: the block's scales and zeros and at least one
// decoded token (3·d values; more scratch decodes more tokens per tile where the
// tokens go through tiles).
func ChannelAddFloats(d int) int { return 3 * d }
