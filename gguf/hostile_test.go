package gguf

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// arrayFile is a GGUF file with one metadata key holding an array of n elements of
// type elem, each encoded as one (an empty string, an empty u8 array, a u8).
func arrayFile(elem ValueType, n int) []byte {
	le := binary.LittleEndian
	b := []byte(Magic)
	b = le.AppendUint32(b, 3)
	b = le.AppendUint64(b, 0) // tensors
	b = le.AppendUint64(b, 1) // metadata pairs
	b = le.AppendUint64(b, 1)
	b = append(b, 'k')
	b = le.AppendUint32(b, uint32(TypeArray))
	b = le.AppendUint32(b, uint32(elem))
	b = le.AppendUint64(b, uint64(n))
	for range n {
		switch elem {
		case TypeString:
			b = le.AppendUint64(b, 0)
		case TypeArray:
			b = le.AppendUint32(b, uint32(TypeUint8))
			b = le.AppendUint64(b, 0)
		default:
			b = append(b, 0)
		}
	}
	return b
}

// Metadata arrays cost at most about twice their bytes in memory: a file of 2^20
// nested empty arrays (they would take 4× and more) fails at once with an error
// naming the cost; 2^20 empty strings and 2^22 bytes parse, within 2× + 1 MiB.
func TestMetadataMemoryBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"nested empty arrays", arrayFile(TypeArray, 1<<20), false},
		{"empty strings", arrayFile(TypeString, 1<<20), true},
		{"bytes", arrayFile(TypeUint8, 1<<22), true},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		f, err := Parse(tc.data)
		d := time.Since(t0)
		runtime.ReadMemStats(&after)
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && (!errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "memory")) {
			t.Errorf("%s: error %v does not say what it would cost", tc.name, err)
		}
		if limit := 2*int64(len(tc.data)) + 2<<20; alloc > limit {
			t.Errorf("%s: %d bytes of file allocated %d bytes, over %d", tc.name, len(tc.data), alloc, limit)
		}
		t.Logf("%s: %d bytes of file: %v, %d bytes allocated, %v", tc.name, len(tc.data), d, alloc, err)
		runtime.KeepAlive(f)
	}
}
