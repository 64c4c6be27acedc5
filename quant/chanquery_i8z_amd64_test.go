//go:build amd64

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestChanQueryI8Z checks chanQueryI8Z against the calls it replaces, channelQueryF16C
// of the one query then quantQueryI8 (2-bit order, one query's factor table) and b
// stored after the factor pairs: every byte of the codes, of the factors and of b the
// same (NaN payloads and the codes of groups with a NaN included), and nothing
// written past them. Head sizes of 1 to 8 groups of 32 channels; blocks encoded from
// keys with channels of different scales and offsets, and blocks of random bytes (any
// f16 scale and zero, NaN and ±Inf among them); queries of Gaussian values at
// magnitudes from 1e-37 (every group taken as zero) to 1e30 (products that overflow),
// with a NaN, ±Inf, NaNs and infinities at several places of one group, a NaN whose
// channel's zero is another NaN, an all-zero
// group, a lone value, or a group whose one value's product is at or just below
// 2^-120, the smallest largest magnitude that gets codes.
func TestChanQueryI8Z(t *testing.T) {
	if !haveVNNI512 || !haveF16C {
		t.Skip("the kernel needs AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(53, 54))
	const guard8, guardf = 0x5a, -777
	shapes := []string{"gauss", "nan", "inf", "-inf", "nans and infs", "nan times nan", "zero group", "lone value", "edge"}
	for _, d := range []int{32, 64, 96, 128, 256} {
		p := d / 32
		c := Channel{Bits: 2}
		const tt = 4
		block := make([]byte, c.BlockBytes(tt, d))
		for _, kind := range []string{"encoded", "random bytes"} {
			if kind == "encoded" {
				src := gaussRow(r, tt*d, 1)
				for i := range src {
					src[i] = src[i]*float32(1+i%d%7) + float32(i%d%5)
				}
				c.Encode(block, src, tt, d)
			} else {
				for i := range block {
					block[i] = byte(r.Uint32())
				}
			}
			for _, amp := range []float64{1e-37, 1e-3, 1, 1e30} {
				for _, shape := range shapes {
					for rep := range 4 {
						name := fmt.Sprintf("d=%d/%s/amp=%g/%s/rep=%d", d, kind, amp, shape, rep)
						q, blk := gaussRow(r, d, amp), block
						k := r.IntN(p)
						g := q[32*k : 32*k+32]
						switch shape {
						case "nan":
							g[r.IntN(32)] = float32(math.NaN())
						case "inf":
							g[r.IntN(32)] = float32(math.Inf(1))
						case "-inf":
							g[r.IntN(32)] = float32(math.Inf(-1))
						case "nans and infs": // in several of quantQueryI8's vectors and lanes
							for range 1 + r.IntN(4) {
								g[r.IntN(32)] = []float32{float32(math.NaN()), float32(math.Inf(1)), -float32(math.NaN())}[r.IntN(3)]
							}
						case "nan times nan": // which NaN b keeps
							i := r.IntN(32)
							g[i] = math.Float32frombits(0x7fc12345)
							blk = append([]byte(nil), block...)
							blk[4*(32*k+i)+2], blk[4*(32*k+i)+3] = 0x21, 0x7e
						case "zero group":
							clear(g)
						case "lone value":
							clear(g)
							g[r.IntN(32)] = float32(-amp)
						case "edge":
							clear(g)
							i := r.IntN(32)
							s := float64(getF16(block[4*(32*k+i):]))
							g[i] = float32(math.Exp2(-120) / s * []float64{1, 1 - 0x1p-20, 0.5}[rep%3])
						}
						qs, b := make([]float32, d), make([]float32, 1)
						channelQueryF16C(unsafe.Pointer(&qs[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&blk[0]), 1, d)
						want8, got8 := make([]byte, d+64), make([]byte, d+64)
						for i := range want8 {
							want8[i], got8[i] = guard8, guard8
						}
						wantf, gotf := constRow(2*p+5, guardf), constRow(2*p+5, guardf)
						quantQueryI8(unsafe.Pointer(&want8[0]), unsafe.Pointer(&wantf[0]), unsafe.Pointer(&qs[0]), p, 32, 2, 8, 4)
						wantf[2*p] = b[0]
						chanQueryI8Z(unsafe.Pointer(&got8[0]), unsafe.Pointer(&gotf[0]), unsafe.Pointer(&q[0]), unsafe.Pointer(&blk[0]), d)
						for i := range want8 {
							if got8[i] != want8[i] {
								t.Fatalf("%s: byte %d of the codes = %d, want %d (d = %d)", name, i, int8(got8[i]), int8(want8[i]), d)
							}
						}
						for i := range wantf {
							if math.Float32bits(gotf[i]) != math.Float32bits(wantf[i]) {
								t.Fatalf("%s: float %d of the factors = %v (%#x), want %v (%#x) (b at %d)", name, i, gotf[i], math.Float32bits(gotf[i]), wantf[i], math.Float32bits(wantf[i]), 2*p)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkChanQueryI8Z times the preparation of one query for a 2-bit KIVI key block
// (d = 64), over 64 blocks of 32 tokens in turn: "calls" through channelQueryF16C and
// quantQueryI8, "fused" through chanQueryI8Z; "/scores" with the block's 32 scores
// (chanRowsI8Z) after it. ns/op is per block.
//
//	go test ./quant -run '^$' -bench ChanQueryI8Z -benchtime=500ms
func BenchmarkChanQueryI8Z(b *testing.B) {
	if !haveVNNI512 || !haveF16C {
		b.Skip("the kernel needs AVX-512 VNNI")
	}
	const d, tt, nb, p = 64, 32, 64, 2
	r := rand.New(rand.NewPCG(55, 56))
	c := Channel{Bits: 2}
	bb := c.BlockBytes(tt, d)
	src := make([]byte, nb*bb)
	for j := range nb {
		c.Encode(src[j*bb:][:bb], gaussRow(r, tt*d, 1), tt, d)
	}
	q, qs, qb := gaussRow(r, d, 1), make([]float32, d), make([]float32, 1)
	q8, qf, out := make([]byte, d), make([]float32, 2*p+1), make([]float32, tt)
	k8 := rows8(2, p, d/4, true)
	for _, fused := range []bool{false, true} {
		for _, scores := range []bool{false, true} {
			name := map[bool]string{false: "calls", true: "fused"}[fused]
			if scores {
				name += "/scores"
			}
			b.Run(name, func(b *testing.B) {
				i := 0
				for b.Loop() {
					block := unsafe.Pointer(&src[i%nb*bb])
					if fused {
						chanQueryI8Z(unsafe.Pointer(&q8[0]), unsafe.Pointer(&qf[0]), unsafe.Pointer(&q[0]), block, d)
					} else {
						channelQueryF16C(unsafe.Pointer(&qs[0]), unsafe.Pointer(&qb[0]), unsafe.Pointer(&q[0]), block, 1, d)
						quantQueryI8(unsafe.Pointer(&q8[0]), unsafe.Pointer(&qf[0]), unsafe.Pointer(&qs[0]), p, 32, 2, 8, 4)
						qf[2*p] = qb[0]
					}
					if scores {
						chanRowsI8Z(k8, unsafe.Pointer(&out[0]), unsafe.Pointer(&q8[0]), unsafe.Pointer(&qf[0]), unsafe.Add(block, 4*d), d/4, tt, p)
					}
					i++
				}
			})
		}
	}
}
