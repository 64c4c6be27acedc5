package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Reference vectors produced by llama.cpp's own routines (testdata/llamacpp/README.md):
// for each type, 8 blocks from quantize_row_<type>_ref on Gaussian data and 8 blocks of
// random bytes (with finite f16 scales), followed by dequantize_row_<type> of all 16.

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "llamacpp", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDequantizeMatchesLlamaCpp(t *testing.T) {
	cases := []struct {
		file string
		typ  TensorType
	}{
		{"q4_0.golden", TypeQ4_0}, {"q4_1.golden", TypeQ4_1}, {"q5_0.golden", TypeQ5_0},
		{"q5_1.golden", TypeQ5_1}, {"q8_0.golden", TypeQ8_0}, {"q4_K.golden", TypeQ4_K},
		{"q6_K.golden", TypeQ6_K}, {"q2_K.golden", TypeQ2_K}, {"q3_K.golden", TypeQ3_K},
		{"q5_K.golden", TypeQ5_K}, {"iq4_nl.golden", TypeIQ4_NL}, {"iq4_xs.golden", TypeIQ4_XS},
	}
	for _, c := range cases {
		t.Run(c.typ.String(), func(t *testing.T) {
			data := readGolden(t, c.file)
			n := 16 * c.typ.BlockElems()
			rb, _ := c.typ.RowBytes(n)
			if len(data) != rb+4*n {
				t.Fatalf("%s: %d bytes, want %d", c.file, len(data), rb+4*n)
			}
			got := make([]float32, n)
			if err := Dequantize(c.typ, got, data[:rb]); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				want := math.Float32frombits(binary.LittleEndian.Uint32(data[rb+4*i:]))
				// On amd64 the results are bitwise equal. Where Go fuses a·b + c into
				// one FMA (arm64, ...) allow one rounding of the largest term.
				tol := 0.0
				if runtime.GOARCH != "amd64" {
					tol = 1e-6 * math.Max(1, math.Abs(float64(want)))
				}
				if got[i] != want && math.Abs(float64(got[i]-want)) > tol {
					t.Fatalf("value %d (block %d) = %v, llama.cpp %v", i, i/c.typ.BlockElems(), got[i], want)
				}
			}
		})
	}
}

func TestQuantizeQ8_0MatchesLlamaCpp(t *testing.T) {
	data := readGolden(t, "q8_0_quantize.golden")
	const n = 8 * 32
	if len(data) != 4*n+34*8 {
		t.Fatalf("%d bytes", len(data))
	}
	src := make([]float32, n)
	for i := range src {
		src[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	got := make([]byte, 34*8)
	if err := QuantizeQ8_0(got, src); err != nil {
		t.Fatal(err)
	}
	if want := data[4*n:]; !bytes.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("byte %d (block %d) = %#02x, llama.cpp %#02x", i, i/34, got[i], want[i])
			}
		}
	}
}
