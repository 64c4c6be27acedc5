package tier

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDiskTier(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d, err := OpenDisk(dir, 250)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(b byte) []byte { return bytes.Repeat([]byte{b}, 100) }
	for k := uint64(1); k <= 2; k++ {
		if err := d.Put(ctx, k, rec(byte(k))); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.Get(ctx, []uint64{1, 3})
	if err != nil || !bytes.Equal(got[0], rec(1)) || got[1] != nil {
		t.Fatalf("Get = %v, %v", got, err)
	}
	// 1 was used after 2: a third record evicts 2.
	time.Sleep(10 * time.Millisecond) // distinct modification times
	if err := d.Put(ctx, 3, rec(3)); err != nil {
		t.Fatal(err)
	}
	if d.Bytes() != 200 {
		t.Errorf("%d bytes after eviction, want 200", d.Bytes())
	}
	if _, err := os.Stat(filepath.Join(dir, keyHex(2)+diskExt)); !os.IsNotExist(err) {
		t.Errorf("least recently used record not deleted: %v", err)
	}
	// Survives a restart: the records and their order. A leftover temporary file
	// (a process stopped mid-write) is removed.
	if err := os.WriteFile(filepath.Join(dir, ".tmp-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	d2, err := OpenDisk(dir, 250)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Bytes() != 200 {
		t.Errorf("reopened: %d bytes, want 200", d2.Bytes())
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp-123")); !os.IsNotExist(err) {
		t.Error("temporary file left")
	}
	time.Sleep(10 * time.Millisecond)
	if err := d2.Put(ctx, 4, rec(4)); err != nil { // evicts 1, the oldest
		t.Fatal(err)
	}
	got, _ = d2.Get(ctx, []uint64{1, 3, 4})
	if got[0] != nil || !bytes.Equal(got[1], rec(3)) || !bytes.Equal(got[2], rec(4)) {
		t.Errorf("after reopen and eviction: %v", got)
	}
	// A smaller bound on reopening evicts down to it.
	d3, err := OpenDisk(dir, 100)
	if err != nil || d3.Bytes() != 100 {
		t.Errorf("reopened with a smaller bound: %d bytes, %v", d3.Bytes(), err)
	}
	if err := d3.Put(ctx, 9, make([]byte, 101)); err == nil {
		t.Error("record larger than the bound stored")
	}
}

// A directory gone (or unwritable) makes Put fail and leaves nothing behind.
func TestDiskTierFaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tier")
	d, err := OpenDisk(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(context.Background(), 1, []byte("x")); err == nil {
		t.Error("Put into a removed directory succeeded")
	}
	if got, err := d.Get(context.Background(), []uint64{1}); err != nil || got[0] != nil {
		t.Errorf("Get from a removed directory: %v, %v", got, err)
	}
	if _, err := OpenDisk("/proc/kvq-tier-test", 1<<20); err == nil {
		t.Error("opened a tier where no directory can be made")
	}
	// A full disk (not reproducible here) is a refusal named once, with its cause.
	full := d.putErr(&os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC})
	if msg := full.Error(); !errors.Is(full, ErrRefused) || !errors.Is(full, syscall.ENOSPC) || strings.Count(msg, "kv tier") != 1 {
		t.Errorf("full disk: %q: want ErrRefused wrapping ENOSPC, naming \"kv tier\" once", msg)
	}
}
