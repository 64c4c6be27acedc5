package gguf

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse and exercises everything a parsed file
// offers. Nothing may panic; a parsed file's tensors must lie inside the input.
func FuzzParse(f *testing.F) {
	f.Add(sampleFile())
	if data, err := os.ReadFile(builtinModel); err == nil {
		f.Add(data[:16384]) // header and metadata, tensor data cut off
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, k := range file.Keys() {
			file.Value(k)
			file.String(k)
			file.Uint(k)
			file.Int(k)
			file.Float(k)
			file.Bool(k)
			file.Strings(k)
			file.Float32s(k)
			file.Int32s(k)
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			b, err := file.TensorData(ti)
			if err != nil {
				t.Fatalf("tensor %q of a parsed file: %v", ti.Name, err)
			}
			if ti.Type.Supported() && ti.Elems() <= 1<<16 {
				dst := make([]float32, ti.Elems())
				if err := Dequantize(ti.Type, dst, b); err != nil {
					t.Fatalf("tensor %q: %v", ti.Name, err)
				}
			}
		}
	})
}
