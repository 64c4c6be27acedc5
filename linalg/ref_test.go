package linalg

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"kvq/gguf"
)

// This file holds the test-side encoders and the float64 reference, written independently
// of the package's kernels.

// f32ToF16 rounds f to the nearest binary16 (ties to even), with overflow to infinity.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if b&0x7fffffff > 0x7f800000 { // NaN
		return sign | 0x7e00
	}
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	if exp >= 31 {
		return sign | 0x7c00
	}
	if exp <= 0 {
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// f16ToF64 decodes binary16 arithmetically (no tables, no bit tricks shared with the package).
func f16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * m * math.Pow(2, -24)
	case 31:
		if m == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

// encodeRows encodes rows×cols values (row-major) as type t and returns the bytes together
// with the values the encoding actually represents (the reference weights).
func encodeRows(t *testing.T, typ gguf.TensorType, vals []float32, rows, cols int) ([]byte, []float64) {
	t.Helper()
	ref := make([]float64, len(vals))
	var out []byte
	switch typ {
	case gguf.TypeF32:
		for i, v := range vals {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
			ref[i] = float64(v)
		}
	case gguf.TypeF16:
		for i, v := range vals {
			h := f32ToF16(v)
			out = binary.LittleEndian.AppendUint16(out, h)
			ref[i] = f16ToF64(h)
		}
	case gguf.TypeBF16:
		for i, v := range vals {
			h := uint16(math.Float32bits(v) >> 16) // truncation is a valid encoding too
			out = binary.LittleEndian.AppendUint16(out, h)
			ref[i] = float64(math.Float32frombits(uint32(h) << 16))
		}
	case gguf.TypeQ8_0, gguf.TypeQ4_0:
		for b := 0; b < len(vals)/32; b++ {
			v := vals[b*32 : (b+1)*32]
			var amax, maxv float64
			for _, f := range v {
				if math.Abs(float64(f)) > amax {
					amax, maxv = math.Abs(float64(f)), float64(f)
				}
			}
			if typ == gguf.TypeQ8_0 {
				d := amax / 127
				h := f32ToF16(float32(d))
				out = binary.LittleEndian.AppendUint16(out, h)
				dd := f16ToF64(h)
				for j, f := range v {
					q := 0.0
					if d != 0 {
						q = math.Max(-128, math.Min(127, math.Round(float64(f)/d)))
					}
					out = append(out, byte(int8(q)))
					ref[b*32+j] = dd * q
				}
			} else { // Q4_0 as llama.cpp: d = max/-8, code = round(x/d)+8 clamped to 15
				d := maxv / -8
				h := f32ToF16(float32(d))
				out = binary.LittleEndian.AppendUint16(out, h)
				dd := f16ToF64(h)
				var codes [32]int
				for j, f := range v {
					c := 8
					if d != 0 {
						c = int(math.Min(15, math.Max(0, math.Round(float64(f)/d)+8)))
					}
					codes[j] = c
					ref[b*32+j] = dd * float64(c-8)
				}
				for j := 0; j < 16; j++ {
					out = append(out, byte(codes[j]|codes[j+16]<<4))
				}
			}
		}
	default:
		// No test encoder: random blocks decoded by gguf.Dequantize (tested in package
		// gguf). Bit 6 of every byte cleared keeps every binary16 scale below 2 in size,
		// so every block is finite.
		rb, err := typ.RowBytes(cols)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(len(vals)), uint64(typ)))
		out = make([]byte, rows*rb)
		for i := range out {
			out[i] = byte(r.Uint32()) &^ 0x40
		}
		dec := make([]float32, rows*cols)
		if err := gguf.Dequantize(typ, dec, out); err != nil {
			t.Fatal(err)
		}
		for i, v := range dec {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("encodeRows %v: value %d is %v", typ, i, v)
			}
			ref[i] = float64(v)
		}
	}
	if want, _ := typ.RowBytes(cols); len(out) != want*rows {
		t.Fatalf("encodeRows %v: %d bytes, want %d", typ, len(out), want*rows)
	}
	return out, ref
}

// randVals returns n values, normal with a few outliers, as real weights and activations have.
func randVals(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		f := r.NormFloat64() * scale
		if r.IntN(64) == 0 {
			f *= 8
		}
		v[i] = float32(f)
	}
	return v
}

// refMatMul is the float64 reference product and, for each output, the bound on the
// absolute error the package may make: float32 accumulation (2·cols·2^-24·Σ|w·x|) plus,
// for weights multiplied against quantized activations, the activation rounding error
// Σ_c |w_c|·d_x/2 with d_x = max|x_block|/127.
func refMatMul(wref []float64, rows, cols int, x []float32, n int, quantX bool) (ref, tol []float64) {
	ref = make([]float64, n*rows)
	tol = make([]float64, n*rows)
	for i := 0; i < n; i++ {
		xs := x[i*cols : (i+1)*cols]
		dx := make([]float64, cols/32+1)
		for c, v := range xs {
			dx[c/32] = math.Max(dx[c/32], math.Abs(float64(v))/127)
		}
		for r := 0; r < rows; r++ {
			var s, sa, q float64
			for c := 0; c < cols; c++ {
				w := wref[r*cols+c]
				s += w * float64(xs[c])
				sa += math.Abs(w * float64(xs[c]))
				q += math.Abs(w) * dx[c/32] / 2
			}
			ref[i*rows+r] = s
			t := 2 * float64(cols) * math.Pow(2, -24) * sa
			if quantX {
				t += q*1.0001 + 2*float64(cols)*math.Pow(2, -24)*(sa+q)
			}
			tol[i*rows+r] = t + 1e-30
		}
	}
	return ref, tol
}
