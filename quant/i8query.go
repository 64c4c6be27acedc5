package quant

import "math"

// The integer queries of the integer score kernels (lossy_i8_amd64.go,
// int8_i16_amd64.go), in Go: the reference of their assembly and of the scores
// DotRows gives where they run.

// ScoredQuery returns the queries that DotRows, with the kernels this process runs,
// scores rows of d values of c against, for the queries q (d values each): q itself,
// or, where the kernels quantize queries (on amd64 with F16C: to int8 per 32 values
// for 4-bit and 2-bit Affine rows in groups of 32, to int16 per query for Int8 rows),
// each query's round trip. A reference that is to reproduce DotRows's scores to float
// rounding scores with these.
func ScoredQuery(c RowCodec, q []float32, d int) []float32 {
	return scoredQuery(active.Load(), c, q, d)
}

// scoredQuery is ScoredQuery for kernel set k.
func scoredQuery(k *kernelSet, c RowCodec, q []float32, d int) []float32 {
	if k.scoredQuery == nil {
		return q
	}
	return k.scoredQuery(c, q, d)
}

// quantQueryI8Go is quantQueryI8 (lossy_i8_amd64.go) in Go with the factors in pairs
// (qf[2k] = d_k, qf[2k+1] = d_k·Σq̂): the reference its assembly is checked against.
func quantQueryI8Go(q8 []int8, qf, q []float32, np, gs, bits int) {
	_, _, _ = q8[np*gs-1], qf[2*np-1], q[np*gs-1]
	for k := range np {
		g := q[k*gs : (k+1)*gs]
		d, inv := i8Scale(g)
		out := q8[k*gs : (k+1)*gs]
		sum := 0
		for c := 0; c < gs; c += 32 {
			for i := range 32 {
				v := i8Code(g[c+i], inv)
				out[c+i8Pos(bits, i)] = v
				sum += int(v)
			}
		}
		qf[2*k], qf[2*k+1] = d, d*float32(sum)
	}
}

// i8Scale returns a group's d = max|q| / 127 and 1/d as 127/max|q|; both 0 when
// max|q| is below 2^-120, where 127/max|q| could overflow: the group is taken as zero.
func i8Scale(g []float32) (d, inv float32) { return intScale(g, 127, 0x1p-120) }

// intScale returns d = max|q| / levels over q and 1/d as levels/max|q|, or 0, 0 when
// max|q| is below tiny; d is NaN when a value is NaN or infinite (plus Σ q·0, as the
// assembly computes it), so that the scores are NaN as the float kernels' would be.
func intScale(q []float32, levels, tiny float32) (d, inv float32) {
	var m, z float32
	for _, x := range q {
		m = max(m, math.Float32frombits(math.Float32bits(x)&0x7fffffff))
		z += x * 0
	}
	if m < tiny {
		return 0 + z, 0
	}
	return m/levels + z, levels / m
}

// i8Code returns round(x·inv), to nearest even: x's int8 code.
func i8Code(x, inv float32) int8 { return int8(math.RoundToEven(float64(x * inv))) }

// i8Pos returns where the integer kernels of bits-bit rows (4 or 2) unpack value i of
// 32 codes: 4-bit codes as the 16 even-indexed, then the 16 odd-indexed ones; 2-bit
// codes 4j+m at 8m+j (the m-th 2 bits of each byte, byte by byte).
func i8Pos(bits, i int) int {
	if bits == 4 {
		return i>>1 + i&1*16
	}
	return i%4*8 + i/4
}

// roundTripI8 returns the int8 round trip d_k·q̂ of q, groups of gs values.
func roundTripI8(q []float32, gs int) []float32 { return roundTrip(q, gs, i8Scale, i8Code) }

// roundTrip returns scale·code of every value of q, the scale and reciprocal of each
// group of gs values from scale, codes from code.
func roundTrip[C int8 | int16](q []float32, gs int, scale func([]float32) (d, inv float32), code func(x, inv float32) C) []float32 {
	out := make([]float32, len(q))
	for k := 0; k < len(q); k += gs {
		d, inv := scale(q[k : k+gs])
		for c := k; c < k+gs; c++ {
			out[c] = d * float32(code(q[c], inv))
		}
	}
	return out
}

// quantQueryI16Go is quantQueryI16 (int8_i16_amd64.go) in Go: q16 gets the codes of
// q, and it returns D.
func quantQueryI16Go(q16 []int16, q []float32) float32 {
	d, inv := i16Scale(q)
	q16 = q16[:len(q)]
	for i, x := range q {
		q16[i] = i16Code(x, inv)
	}
	return d
}

// i16Scale returns a query's D = max|q| / 32767 and 1/D as 32767/max|q|; both 0 when
// max|q| is below 2^-110, where 32767/max|q| could overflow: the query is taken as
// zero.
func i16Scale(q []float32) (d, inv float32) { return intScale(q, 32767, 0x1p-110) }

// i16Code returns round(x·inv), to nearest even: x's int16 code.
func i16Code(x, inv float32) int16 { return int16(math.RoundToEven(float64(x * inv))) }

// roundTripI16 returns the int16 round trip D·q̂ of q, queries of d values.
func roundTripI16(q []float32, d int) []float32 { return roundTrip(q, d, i16Scale, i16Code) }
