// Package attnref is the plain reference attention that the conformance suites of
// packages attn and kv check their kernels against: float32 rows in, float64 softmax,
// nothing shared with the code under test.
package attnref

import "math"

// Attend returns, for each of heads query heads h, Σ_t softmax_t(q_h·k_t/√d)·v_t over the
// rows of keys and vals (each kvHeads·d values, head after head), where query head h
// reads KV head h/(heads/kvHeads). q holds heads·d values. With no rows the result is
// zero.
func Attend(q []float32, keys, vals [][]float32, heads, kvHeads, d int) []float32 {
	return AttendWith(func(int) []float32 { return q }, keys, vals, heads, kvHeads, d)
}

// AttendWith is Attend with row t's scores taken against the queries qFor(t) (heads·d
// values): for kernels that score some rows against a rounded query (the int8 queries
// of 4-bit and 2-bit keys) and others against the query itself.
func AttendWith(qFor func(t int) []float32, keys, vals [][]float32, heads, kvHeads, d int) []float32 {
	group := heads / kvHeads
	scale := 1 / math.Sqrt(float64(d))
	return AttendScored(func(h, t int) float64 {
		qh, k := qFor(t)[h*d:(h+1)*d], keys[t][h/group*d:]
		var s float64
		for c := range d {
			s += float64(qh[c]) * float64(k[c])
		}
		return s * scale
	}, vals, heads, kvHeads, d)
}

// AttendScored is Attend with the softmax logits given: logit(h, t) is query head h's
// scaled score of row t (q_h·k_t/√d for Attend), for kernels whose scores are not the
// product of one query with a key (KIVI keys scored with int8 queries).
func AttendScored(logit func(h, t int) float64, vals [][]float32, heads, kvHeads, d int) []float32 {
	group := heads / kvHeads
	out := make([]float32, heads*d)
	if len(vals) == 0 {
		return out
	}
	sc := make([]float64, len(vals))
	for h := range heads {
		kh := h / group
		mx := math.Inf(-1)
		for t := range vals {
			sc[t] = logit(h, t)
			mx = math.Max(mx, sc[t])
		}
		var sum float64
		for t := range sc {
			sc[t] = math.Exp(sc[t] - mx)
			sum += sc[t]
		}
		for c := range d {
			var a float64
			for t, v := range vals {
				a += sc[t] * float64(v[kh*d+c])
			}
			out[h*d+c] = float32(a / sum)
		}
	}
	return out
}
