package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// TestPreload copies all tensors but one of the built-in model's file and checks that
// every tensor reads as before, that the copies are aligned and outside the mapping,
// and that the one left out still reads from the mapping.
func TestPreload(t *testing.T) {
	f, err := Open(builtinModel)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, len(f.Tensors))
	for i := range f.Tensors {
		b, err := f.TensorData(&f.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = bytes.Clone(b)
	}
	const left = "token_embd.weight"
	if err := f.Preload(func(ti *TensorInfo) bool { return ti.Name != left }); err != nil {
		t.Fatal(err)
	}
	inMapping := func(b []byte) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
		return p >= lo && p < lo+uintptr(len(f.data))
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		got, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) || cap(got) != len(got) {
			t.Errorf("%s: %d bytes (cap %d) differ from the file's after Preload", ti.Name, len(got), cap(got))
		}
		if mapped := inMapping(got); mapped != (ti.Name == left) {
			t.Errorf("%s: in the file's mapping = %v after Preload", ti.Name, mapped)
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(got))); ti.Name != left && p%preloadAlign != 0 {
			t.Errorf("%s: copy at %#x, not %d-byte aligned", ti.Name, p, preloadAlign)
		}
	}
	var copied int64
	for i := range f.Tensors {
		if f.Tensors[i].Name != left {
			copied += int64(f.Tensors[i].Size)
		}
	}
	if got := f.PreloadedBytes(); got != copied || copied == 0 {
		t.Errorf("PreloadedBytes %d, want %d", got, copied)
	}
	if err := f.Preload(func(*TensorInfo) bool { return true }); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Preload: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.TensorData(&f.Tensors[3]); err == nil {
		t.Error("TensorData after Close succeeded")
	}
	if n := f.PreloadedBytes(); n != 0 {
		t.Errorf("PreloadedBytes %d after Close", n)
	}
	if err := f.Preload(func(*TensorInfo) bool { return true }); err == nil {
		t.Error("Preload after Close succeeded")
	}
}

// TestPreloadParsed preloads a file parsed from memory (no mapping to release).
func TestPreloadParsed(t *testing.T) {
	data := sampleFile()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Preload(func(*TensorInfo) bool { return true }); err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		got, _ := f.TensorData(&f.Tensors[i])
		lo := f.DataOffset + f.Tensors[i].Offset
		if !bytes.Equal(got, data[lo:lo+f.Tensors[i].Size]) {
			t.Errorf("%s differs after Preload", f.Tensors[i].Name)
		}
	}
}

// TestPreloadTinyTensors preloads a file of many 4-byte tensors at alignment 8: the
// copies, each on a cache line, take more bytes than the whole file, which is fine.
func TestPreloadTinyTensors(t *testing.T) {
	var tensors []Tensor
	for i := range 200 {
		tensors = append(tensors, Tensor{Name: fmt.Sprintf("t%d", i), Type: TypeF32, Dims: []uint64{1}, Data: []float32{float32(i)}})
	}
	var buf bytes.Buffer
	if err := Write(&buf, []KV{{Key: KeyAlignment, Value: uint32(8)}}, tensors); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Preload(func(*TensorInfo) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if n := f.PreloadedBytes(); n != 800 || 200*preloadAlign <= buf.Len() {
		t.Fatalf("PreloadedBytes %d (want 800) of a %d-byte file", n, buf.Len())
	}
	for i := range f.Tensors {
		b, err := f.TensorData(&f.Tensors[i])
		if err != nil || math.Float32frombits(binary.LittleEndian.Uint32(b)) != float32(i) {
			t.Fatalf("tensor %d after Preload: %v, %v", i, b, err)
		}
	}
}
