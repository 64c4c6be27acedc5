package gguf

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse and exercises everything a parsed file
// offers. Nothing may panic; a parsed file's tensors must lie inside the input; and
// rewriting a parsed file with Writer is a fixed point: the rewrite parses, and
// rewriting it again gives the same bytes.
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
		first := rewrite(t, file)
		again, err := Parse(first)
		if err != nil {
			t.Fatalf("rewrite of a parsed file does not parse: %v", err)
		}
		if second := rewrite(t, again); !bytes.Equal(first, second) {
			t.Fatalf("rewriting is not a fixed point (%d vs %d bytes)", len(first), len(second))
		}
	})
}

// rewrite writes f's metadata and tensors (raw bytes) with Writer.
func rewrite(t *testing.T, f *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, k := range f.Keys() {
		v, _ := f.Value(k)
		if err := w.AddKV(k, v); err != nil {
			t.Fatalf("AddKV(%q) of a parsed value: %v", k, err)
		}
	}
	for _, ti := range f.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims...); err != nil {
			t.Fatalf("AddTensor(%q) of a parsed tensor: %v", ti.Name, err)
		}
	}
	for i := range f.Tensors {
		b, _ := f.TensorData(&f.Tensors[i])
		if len(b) > 0 {
			if err := w.WriteRaw(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
