package kv_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExternalModule builds and runs testdata/extmod, a module outside kvq that uses
// the cache through its exported API only (a replace directive points it here), as
// another engine would: it reads back every cached row of every cache type and
// compares it with its own reference built from package quant, grows sequences
// without token ids and checks that no prefix lookup ever matches them, and checks
// that a NaN or infinite row is refused with ErrNonFinite and the cache unchanged.
func TestExternalModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build the external module: %v", err)
	}
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir = filepath.Join("testdata", "extmod")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("go run in %s: %v", cmd.Dir, err)
	}
	if !strings.HasPrefix(string(out), "ok: ") {
		t.Fatalf("unexpected output")
	}
}
