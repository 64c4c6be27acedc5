package quant

import "testing"

// TestKernelTable: every per-token codec of the registry has an entry in the kernel
// table, so the batched functions run its kernels without a switch over codec types,
// and other packages' codecs have none.
func TestKernelTable(t *testing.T) {
	for _, e := range Registry() {
		for _, c := range entryRowCodecs(e) {
			if kernelsOf(c) == nil {
				t.Errorf("%s: row codec %s has no kernel table entry", e.Name, c.Name())
			}
		}
	}
	if kernelsOf(plainCodec{Int8{}}) != nil {
		t.Error("another package's codec has a kernel table entry")
	}
}
