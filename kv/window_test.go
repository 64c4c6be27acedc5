package kv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ropeTest rotates every head of x (heads × d values, adjacent pairs, base 10000) by
// pos positions: the RoPE convention of llama GGUF models.
func ropeTest(x []float32, d, pos int) {
	for h := 0; h+d <= len(x); h += d {
		for j := 0; j < d/2; j++ {
			f := math.Pow(10000, -2*float64(j)/float64(d))
			s, c := math.Sincos(float64(pos) * f)
			x0, x1 := float64(x[h+2*j]), float64(x[h+2*j+1])
			x[h+2*j] = float32(x0*c - x1*s)
			x[h+2*j+1] = float32(x0*s + x1*c)
		}
	}
}

// quarterTest is a RoPE whose every pair turns by 90° per position: rotations by
// whole quarter turns only swap and negate values, which commutes exactly with
// sign-symmetric per-row codecs (f16, bf16, q8, fp8): a fresh run that stores keys
// rotated to other positions then stores exactly the same codes.
func quarterTest(x []float32, d, pos int) {
	for h := 0; h+d <= len(x); h += d {
		for j := 0; j < d/2; j++ {
			x0, x1 := x[h+2*j], x[h+2*j+1]
			switch ((pos % 4) + 4) % 4 {
			case 1:
				x0, x1 = -x1, x0
			case 2:
				x0, x1 = -x0, -x1
			case 3:
				x0, x1 = x1, -x0
			}
			x[h+2*j], x[h+2*j+1] = x0, x1
		}
	}
}

func roped(rows [][]float32, d int, rope func([]float32, int, int), pos func(j int) int) [][]float32 {
	out := make([][]float32, len(rows))
	for j, r := range rows {
		out[j] = append([]float32(nil), r...)
		rope(out[j], d, pos(j))
	}
	return out
}

// windowRun feeds rows to a new sequence of st: steps of chunk tokens over each
// [a, b) of spans, and returns the outputs of layer 0 for the last span.
func windowRun(t *testing.T, st *Store, id SeqID, k, v, q [][][]float32, spans [][2]int, chunk int) []float32 {
	t.Helper()
	var out []float32
	for si, sp := range spans {
		for a := sp[0]; a < sp[1]; a += chunk {
			b := min(a+chunk, sp[1])
			if err := st.Grow(id, make([]int32, b-a)); err != nil {
				t.Fatal(err)
			}
			for l := range k {
				if err := st.Append(l, id, flat(k[l][a:b]), flat(v[l][a:b])); err != nil {
					t.Fatal(err)
				}
				o := make([]float32, len(flat(q[l][a:b])))
				if err := st.Attend(l, id, flat(q[l][a:b]), o); err != nil {
					t.Fatal(err)
				}
				if l == len(k)-1 && si == len(spans)-1 {
					out = append(out, o...)
				}
			}
		}
	}
	return out
}

// TestEvictEqualsFreshRun: after keeping sinks + window, attention of later tokens
// equals a fresh run over the kept tokens placed contiguously (sinks at 0.., the
// window right after them), keys RoPE'd at those compact positions. With real RoPE
// the fresh run stores differently rotated keys, so lossy codecs agree within their
// quantization error; with quarter-turn RoPE the stored codes are identical and
// every sign-symmetric codec must agree to float rounding.
func TestEvictEqualsFreshRun(t *testing.T) {
	type codec struct {
		spec string
		tol  float64
	}
	for _, rc := range []struct {
		name   string
		rope   func([]float32, int, int)
		codecs []codec
	}{
		{"rope", ropeTest, []codec{{"f32", 2e-5}, {"f16", 3e-3}, {"q8", 3e-2}, {"fp8e4m3", 0.1}, {"kivi8:g=8/q8", 3e-2}, {"kivi4:g=8/kivi2:g=8,r=8", 0.1}}},
		{"quarter", quarterTest, []codec{{"f32", 1e-5}, {"f16", 1e-5}, {"bf16", 1e-5}, {"q8", 1e-5}, {"fp8e4m3", 1e-5}, {"fp8e5m2", 1e-5}}},
	} {
		for _, c := range rc.codecs {
			t.Run(rc.name+"/"+c.spec, func(t *testing.T) { testEvict(t, rc.rope, c.spec, c.tol) })
		}
	}
}

func testEvict(t *testing.T, rope func([]float32, int, int), spec string, tol float64) {
	const (
		layers, heads, kvh, d = 2, 4, 2, 16
		n, sinks, window, m   = 151, 4, 50, 12 // gap of 97 positions: not a whole number of quarter turns
	)

	r := rand.New(rand.NewPCG(5, 6))
	var kr, v, qr [][][]float32
	for range layers {
		kr = append(kr, randRows(r, n+m, kvh*d, true))
		v = append(v, randRows(r, n+m, kvh*d, false))
		qr = append(qr, randRows(r, n+m, heads*d, false))
	}
	logical := func(j int) int { return j }
	// Fresh run: kept positions renumbered 0, 1, ... in order.
	var kF, vF, qF [][][]float32
	compact := func(j int) int { // j indexes the kept list
		return j
	}
	keptIdx := []int{}
	for j := 0; j < n+m; j++ {
		if j < sinks || j >= n-window {
			keptIdx = append(keptIdx, j)
		}
	}
	for l := range layers {
		var kk, vv, qq [][]float32
		for _, j := range keptIdx {
			kk, vv, qq = append(kk, kr[l][j]), append(vv, v[l][j]), append(qq, qr[l][j])
		}
		kF, vF, qF = append(kF, roped(kk, d, rope, compact)), append(vF, vv), append(qF, roped(qq, d, rope, compact))
	}
	var kA, qA [][][]float32
	for l := range layers {
		kA, qA = append(kA, roped(kr[l], d, rope, logical)), append(qA, roped(qr[l], d, rope, logical))
	}
	rotate := func(x []float32, delta int) { rope(x, d, delta) }
	noRotate := func(x []float32, delta int) {}
	kept := sinks + window

	tc := struct {
		spec string
		tol  float64
	}{spec, tol}
	{
		{
			mk := func(rot func([]float32, int)) *Store {
				st, err := New(Config{Layers: layers, Heads: heads, KVHeads: kvh, HeadDim: d, Spec: MustParseSpec(tc.spec), Rotate: rot, BlockTokens: 8})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			evicted := func(rot func([]float32, int)) ([]float32, *Store, SeqID) {
				st := mk(rot)
				id, _ := st.NewSeq()
				windowRun(t, st, id, kA, v, qA, [][2]int{{0, n}}, 7)
				before := st.PoolStats().BlocksUsed
				ev, err := st.Evict(id, sinks, window)
				if err != nil {
					t.Fatal(err)
				}
				if ev.Positions != n-window-sinks {
					t.Fatalf("forgot %d positions, want %d", ev.Positions, n-window-sinks)
				}
				freed := ev.Blocks
				if wantFreed := (n-window)/8 - (sinks+7)/8; freed != wantFreed || st.PoolStats().BlocksUsed != before-freed {
					t.Fatalf("freed %d blocks (used %d → %d), want %d", freed, before, st.PoolStats().BlocksUsed, wantFreed)
				}
				if st.Len(id) != n {
					t.Fatalf("Len after eviction %d, want %d (positions keep counting)", st.Len(id), n)
				}
				return windowRun(t, st, id, kA, v, qA, [][2]int{{n, n + m}}, 3), st, id
			}
			got, st, id := evicted(rotate)
			fresh := mk(nil)
			fid, _ := fresh.NewSeq()
			want := windowRun(t, fresh, fid, kF, vF, qF, [][2]int{{0, kept}, {kept, kept + m}}, 7)
			diff := maxAbsDiff(got, want)
			t.Logf("max |evicted − fresh| = %g", diff)
			if diff > tc.tol {
				t.Errorf("evicted attention differs from the fresh run over the kept tokens by %g (tolerance %g)", diff, tc.tol)
			}
			// Without rotating the query onto the sinks the results are clearly off:
			// the comparison is sensitive to the Delta the store sets.
			bad, _, _ := evicted(noRotate)
			t.Logf("max |unrotated − fresh| = %g", maxAbsDiff(bad, want))
			if bd := maxAbsDiff(bad, want); bd < 5*diff || bd < 0.05 {
				t.Errorf("unrotated sinks differ by only %g (rotated: %g): test not sensitive", bd, diff)
			}
			if u := st.Usage(); u.Tokens != kept+m {
				t.Errorf("Usage.Tokens %d, want %d kept", u.Tokens, kept+m)
			}
			// A second eviction moves the window; sinks must stay.
			if _, err := st.Evict(id, sinks+1, window); err == nil {
				t.Error("eviction with other sinks accepted")
			}
			if ev, err := st.Evict(id, sinks, window-m); err != nil || ev.Positions != 2*m {
				t.Errorf("second eviction: %+v, %v; want %d positions forgotten", ev, err, 2*m)
			}
			if ev, err := st.Evict(id, sinks, window-m); err != nil || ev != (Eviction{}) {
				t.Errorf("eviction with nothing to do: %+v, %v; want a zero Eviction", ev, err)
			}
			if err := st.Truncate(id, n-window-1); err == nil {
				t.Error("truncate into the evicted range accepted")
			}
			if err := st.Drop(id); err != nil {
				t.Fatal(err)
			}
			if ps := st.PoolStats(); ps.BlocksUsed != 0 {
				t.Errorf("%d blocks used after drop", ps.BlocksUsed)
			}
		}
	}
}

func TestEvictErrors(t *testing.T) {
	f := newFixture(t, "q8", 1, 2, 1, 8, 40, 0)
	id, _ := f.st.NewSeq()
	f.mustStep(t, id, 0, 40)
	if _, err := f.st.Evict(id, 4, 8); err == nil {
		t.Error("eviction without Config.Rotate accepted")
	}
	if _, err := f.st.Evict(99, 4, 8); err == nil {
		t.Error("eviction of an unknown sequence accepted")
	}
}
