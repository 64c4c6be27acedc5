package attn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/internal/kernelsel"
	"kvq/quant"
)

// kernelSets returns every softmax kernel set this build and CPU can run, the scalar
// reference first.
func kernelSets() []*kernelSet {
	ks := []*kernelSet{scalarKernels}
	if simdKernels != nil {
		ks = append(ks, simdKernels)
	}
	return ks
}

// TestSoftmaxKernels checks maxRow and expRow of every kernel set against float64
// references, over lengths around the vector width and values that reach below the
// −87 cut-off of exp32.
func TestSoftmaxKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range kernelSets() {
		for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 100} {
			for _, spread := range []float64{0.1, 5, 60, 200} {
				t.Run(fmt.Sprintf("%s/n=%d/spread=%g", k.name, n, spread), func(t *testing.T) {
					row := make([]float32, n)
					for i := range row {
						row[i] = float32(r.NormFloat64() * spread)
					}
					want := math.Inf(-1)
					for _, x := range row {
						want = math.Max(want, float64(x))
					}
					if got := k.maxRow(row); float64(got) != want {
						t.Fatalf("maxRow = %v, want %v", got, want)
					}
					m := float32(want)
					ref := make([]float64, n)
					var sum float64
					for i, x := range row {
						if d := float64(x - m); d >= -87 {
							ref[i] = math.Exp(d)
						}
						sum += ref[i]
					}
					got := k.expRow(row, math.Float32bits(m))
					if math.Abs(float64(got)-sum) > 1e-6*sum*float64(n) {
						t.Fatalf("expRow sum = %v, want %v", got, sum)
					}
					for i, w := range row {
						if math.Abs(float64(w)-ref[i]) > 4e-7*ref[i]+1e-38 {
							t.Fatalf("expRow[%d] = %v, want %v", i, w, ref[i])
						}
					}
				})
			}
		}
	}
}

// TestSetSIMD checks the kernel switch and that Decode gives the same result (within
// float32 rounding) with the scalar and the SIMD kernels.
func TestSetSIMD(t *testing.T) {
	prev, prevQ := active.Load(), quant.KernelName() != "scalar"
	defer func() { active.Store(prev); quant.SetSIMD(prevQ) }()
	if SetSIMD(false) || KernelName() != "scalar" {
		t.Fatalf("SetSIMD(false): kernels %q", KernelName())
	}
	if on := SetSIMD(true); on != (simdKernels != nil) {
		t.Fatalf("SetSIMD(true) = %v with SIMD kernels %v", on, simdKernels != nil)
	}
	if kernelsel.Initial(scalarKernels, simdKernels, "1") != scalarKernels {
		t.Fatal("KVQ_NOSIMD=1 does not select the scalar kernels")
	}
}

// TestDecodeAutoParallel checks the automatic worker split (Options.Workers 0) on
// histories long enough to use it, against the reference and against one worker,
// for every storage kind.
func TestDecodeAutoParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sh := Shape{Heads: 8, KVHeads: 2, HeadDim: 64}
	for ki, kk := range sideKinds {
		vk := sideKinds[(ki+1)%len(sideKinds)]
		if vk.kind == Channel {
			vk = sideKinds[2]
		}
		for _, n := range []int{ParallelMinTokens - 1, ParallelMinTokens, 3000} {
			h := buildHistory(r, sh, n, 40, kk, vk)
			q := randVec(r, sh.Heads*sh.HeadDim, 1)
			want := refAttendHist(kk, q, h, len(h.keys), sh)
			var sc Scratch
			auto := make([]float32, len(want))
			one := make([]float32, len(want))
			if err := Decode(auto, q, sh, h.spans, Options{}, &sc); err != nil {
				t.Fatal(err)
			}
			if err := Decode(one, q, sh, h.spans, Options{Workers: 1}, &sc); err != nil {
				t.Fatal(err)
			}
			if e := maxDiff(auto, want); e > 2e-5+valueRounding(vk, sh.HeadDim, h.vals) {
				t.Errorf("K=%s V=%s n=%d: auto workers: max |fused−ref| = %.3g", kk.name, vk.name, n, e)
			}
			if e := maxDiff(auto, one); e > 2e-5 {
				t.Errorf("K=%s V=%s n=%d: auto vs one worker differ by %.3g", kk.name, vk.name, n, e)
			}
		}
	}
}
