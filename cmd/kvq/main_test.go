package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kvq/gguf"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = runMain(args, &o, &e)
	return code, o.String(), e.String()
}

// The reference continuation of "Once upon a time" (greedy, 64 tokens) from an
// independent implementation.
const onceUponATime = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said"

func TestGeneratePrintsReferenceContinuation(t *testing.T) {
	code, out, errOut := run(t, "generate", "--prompt", "Once upon a time", "-n", "64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := strings.TrimSuffix(out, "\n"); got != onceUponATime {
		t.Fatalf("output\n%q\nwant\n%q", got, onceUponATime)
	}
}

func TestGenerateWithCompressedCache(t *testing.T) {
	code, out, errOut := run(t, "generate", "--cache", "kivi4/kivi2", "-n", "40", "--stats")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(strings.Fields(out)) < 20 || !strings.Contains(errOut, "bytes/token") {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
}

// TestEvalLayers runs kvq eval --layers with a budget that has room for one f16
// layer (stories260K: kivi2 takes 36 bytes per token and layer, f16 128, 5 layers).
func TestEvalLayers(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "layers.json")
	code, out, errOut := run(t, "eval", "--layers", "--ctx", "128", "--chunks", "1", "--cache", "kivi2:rope=pre/kivi2", "--budget", "300", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "kivi2:rope=pre/kivi2 ") < 5 || !strings.Contains(out, "=f16' (272.0 bytes/token, measured: KLD") {
		t.Fatalf("stdout %q", out)
	}
	// --json holds the table's rows.
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Layer   int     `json:"layer"`
		Spec    string  `json:"spec"`
		KLDMean float64 `json:"kld_mean"`
	}
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 5 || rows[4].Layer != 4 || rows[0].Spec != "kivi2:rope=pre/kivi2" || rows[0].KLDMean <= 0 {
		t.Fatalf("--json: %v, %s", err, b)
	}
}

func TestEvalJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eval.json")
	code, out, errOut := run(t, "eval", "--ctx", "128", "--chunks", "2", "--cache", "q8", "--cache", "kivi4/kivi2:r=128", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "kivi4/kivi2") || !strings.Contains(errOut, "eval") {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Model  string           `json:"model"`
		Text   string           `json:"text"`
		Ctx    int              `json:"ctx"`
		Chunks int              `json:"chunks"`
		Tokens int              `json:"tokens"`
		Rows   []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Ctx != 128 || res.Chunks != 2 || res.Tokens != 256 || len(res.Rows) != 3 || res.Model == "" || res.Text == "" {
		t.Fatalf("json header %+v", res)
	}
	if res.Rows[0]["cache"] != "f32" {
		t.Fatalf("first row %v, want f32", res.Rows[0])
	}
	for _, r := range res.Rows {
		for _, f := range []string{"cache", "bytes_per_token", "compression_vs_f16", "ppl", "ppl_ratio", "kld_mean", "top1_agree", "tok_per_s"} {
			if _, ok := r[f]; !ok {
				t.Errorf("row %v lacks %q", r["cache"], f)
			}
		}
	}
	// At ctx 128 KIVI's values (r=128) are all in full precision: warned, not
	// recommended, and said so under the table; q8 is on the frontier.
	if r := res.Rows[2]; r["warning"] == nil || r["recommended"] != false || res.Rows[1]["recommended"] != true {
		t.Errorf("rows %v", res.Rows)
	}
	if !strings.Contains(out, "! kivi4/kivi2:r=128: ctx 128 does not exceed") || !strings.Contains(out, "* recommended") {
		t.Errorf("stdout lacks the warning or the rule:\n%s", out)
	}
}

func TestInspect(t *testing.T) {
	code, out, errOut := run(t, "inspect", "--budget", "1MiB", "--ctx", "256")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"llama", "5 layers", "8 heads", "4 KV heads", "head size 8", "kivi4/kivi2", "q8"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	// A model file: its weights are copied into memory (all of them: the built-in
	// model's output shares token_embd), or none with --mmap.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "--model", "../../assets/stories260K.gguf"}, "1015.8 KiB of weights copied into memory"},
		{[]string{"inspect", "--mmap", "--model", "../../assets/stories260K.gguf"}, "0 B of weights copied into memory"},
	} {
		code, out, errOut := run(t, c.args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output lacks %q:\n%s%s", c.args, code, c.want, out, errOut)
		}
	}
}

// TestInspectUnrunnable: inspect describes a file kvq cannot run (an architecture
// and a tensor type it does not know) and says why, with the cache figures its
// metadata allows; a file without a transformer's shape still gets its metadata and
// tensors listed.
func TestInspectUnrunnable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, meta []gguf.KV) string {
		var buf bytes.Buffer
		w := gguf.NewWriter(&buf)
		for _, kv := range meta {
			if err := w.AddKV(kv.Key, kv.Value); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.AddTensor("token_embd.weight", 17, 256, 300); err != nil { // IQ2_XS
			t.Fatal(err)
		}
		if err := w.WriteRaw(make([]byte, 300*74)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	falcon := write("falcon.gguf", []gguf.KV{
		{Key: "general.architecture", Value: "falcon"},
		{Key: "falcon.embedding_length", Value: uint32(256)},
		{Key: "falcon.block_count", Value: uint32(4)},
		{Key: "falcon.attention.head_count", Value: uint32(8)},
		{Key: "falcon.attention.head_count_kv", Value: uint32(2)},
		{Key: "falcon.feed_forward_length", Value: uint32(512)},
		{Key: "falcon.context_length", Value: uint32(2048)},
	})
	code, out, errOut := run(t, "inspect", "--model", falcon, "--tensors")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"runs         no: ", `unsupported architecture "falcon"`, "cannot multiply: IQ2_XS",
		"4 layers, 8 heads, 2 KV heads, head size 32", "falcon.block_count", "token_embd.weight  IQ2_XS  [256 300]", "kivi4/kivi2"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	bare := write("bare.gguf", []gguf.KV{{Key: "general.architecture", Value: "clip"}, {Key: "general.name", Value: "vision tower"}})
	code, out, errOut = run(t, "inspect", "--model", bare)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"vision tower (architecture clip)", "runs         no: model: clip.embedding_length missing", "no cache figures", "[IQ2_XS×1]"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
}

// TestDequantNote: inspect names the weight types that run dequantized row by row,
// and says nothing when every type has kernels of its own (the built-in model, above).
func TestDequantNote(t *testing.T) {
	for _, tc := range []struct {
		types map[gguf.TensorType]int
		want  string
	}{
		{map[gguf.TensorType]int{gguf.TypeF32: 5, gguf.TypeQ4_K: 80, gguf.TypeQ6_K: 9, gguf.TypeQ5_0: 3}, ""},
		{map[gguf.TensorType]int{gguf.TypeF32: 5, gguf.TypeQ5_1: 80, gguf.TypeBF16: 2}, "BF16, Q5_1 weights are multiplied by dequantizing"},
	} {
		got := dequantNote(tc.types)
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("dequantNote(%v) = %q, want it to start with %q", tc.types, got, tc.want)
		}
	}
	code, out, _ := run(t, "inspect")
	if code != 0 || strings.Contains(out, "dequantizing") {
		t.Errorf("inspect of the built-in model (F32 weights): exit %d, output %q", code, out)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	if err := os.WriteFile(notGGUF, []byte("hello, this is not a model file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("once upon a time ", 400)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"generate", "--model", filepath.Join(dir, "missing.gguf")}, "missing.gguf"},
		{[]string{"generate", "--model", notGGUF}, "magic"},
		{[]string{"generate", "--cache", "q5"}, "q5"},
		{[]string{"generate", "--prompt", long}, "context"},
		{[]string{"eval", "--cache", "kivi9"}, "kivi9"},
		{[]string{"eval", "--budget", "100"}, "--budget needs --layers"},
		{[]string{"eval", "--layers", "--cache", "kivi2", "--budget", "100"}, "more than the budget"},
		{[]string{"eval", "--layers", "--svg", filepath.Join(dir, "c.svg"), "--cache-layers", "0=f16"}, "--cache-layers, --svg cannot be combined with --layers"},
		{[]string{"inspect", "--budget", "lots"}, "lots"},
		{[]string{"synth", "--shape", "nope", "--out", filepath.Join(dir, "s.gguf")}, "nope"},
		{[]string{"generate", "--temp", "-1"}, "--temp"},
		{[]string{"generate", "--top-p", "0"}, "--top-p"},
		{[]string{"inspect", "--ctx", "4096"}, "--ctx must be in [1, 512]"},
		{[]string{"eval", "--ctx", "4096"}, "exceeds the model's context of 512"},
	}
	for _, tc := range tests {
		code, _, errOut := run(t, tc.args...)
		if code == 0 {
			t.Errorf("%v: exit 0, want failure", tc.args)
			continue
		}
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: stderr %q does not mention %q", tc.args, errOut, tc.want)
		}
	}
}

func TestBenchDecodeJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decode.json")
	code, out, errOut := run(t, "bench", "decode", "--cache", "q8", "--ctx", "64", "--gen", "4", "--threads", "1", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "tok/s") {
		t.Fatalf("stdout %q", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cache", "ctx", "threads", "decode_tok_per_s", "prefill_tok_per_s", "kv_bytes", "rss_bytes"} {
		if _, ok := r[f]; !ok {
			t.Errorf("result lacks %q: %v", f, r)
		}
	}
	if r["cache"] != "q8" || r["ctx"] != float64(64) || r["threads"] != float64(1) {
		t.Errorf("result %v", r)
	}
	if v, _ := r["decode_tok_per_s"].(float64); v <= 0 {
		t.Errorf("decode_tok_per_s %v", r["decode_tok_per_s"])
	}
	if v, _ := r["kv_bytes"].(float64); v <= 0 {
		t.Errorf("kv_bytes %v", r["kv_bytes"])
	}
}

func TestBenchAttentionAndBandwidthJSON(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args   []string
		fields []string
	}{
		{[]string{"bench", "attention", "--cache", "kivi4/kivi2", "--ctx", "300", "--heads", "8", "--kv-heads", "2", "--head-dim", "16",
			"--time", "50ms", "--rounds", "3"}, []string{"cache", "ctx", "gb_per_s", "bandwidth_gb_per_s", "frac_of_bandwidth"}},
		{[]string{"bench", "attention", "--cache", "q4", "--ctx", "200", "--heads", "4", "--kv-heads", "4", "--head-dim", "32",
			"--time", "50ms", "--rounds", "3", "--warm"}, []string{"cache", "ctx", "gb_per_s", "bandwidth_gb_per_s", "frac_of_bandwidth"}},
		{[]string{"bench", "attention", "--cache", "q8", "--ctx", "200", "--shape", "llama-134m",
			"--time", "50ms", "--rounds", "3", "--warm"}, []string{"cache", "ctx", "gb_per_s", "bandwidth_gb_per_s", "frac_of_bandwidth"}},
		{[]string{"bench", "attention", "--cache", "q4", "--ctx", "300", "--heads", "4", "--kv-heads", "2", "--head-dim", "32",
			"--time", "50ms", "--rounds", "3", "--vs-block-tokens", "128"}, []string{"block_tokens", "vs_block_tokens", "vs_step_us", "step_ratio", "step_ratio_min", "step_ratio_max"}},
		{[]string{"bench", "attention", "--cache", "kivi3:rope=pre/kivi2", "--ctx", "300", "--heads", "4", "--kv-heads", "4", "--head-dim", "64",
			"--time", "50ms", "--rounds", "3", "--vs-cache", "kivi2"}, []string{"vs_cache", "vs_block_tokens", "vs_step_us", "step_ratio", "step_ratio_min", "step_ratio_max"}},
		{[]string{"bench", "bandwidth", "--size", "64MiB", "--threads", "1", "--time", "50ms"}, nil},
	}
	for i, tc := range tests {
		path := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		code, _, errOut := run(t, append(tc.args, "--json", path)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%v: %v in %s", tc.args, err, b)
		}
		for _, f := range tc.fields {
			if v, ok := r[f]; !ok || v == nil {
				t.Errorf("%v: result lacks %q: %s", tc.args, f, b)
			}
		}
		if tc.fields != nil {
			if g, _ := r["gb_per_s"].(float64); g <= 0 {
				t.Errorf("gb_per_s %v", r["gb_per_s"])
			}
			// Cold by default (no CPU time per step), warm with --warm (CPU time measured).
			warm := slices.Contains(tc.args, "--warm")
			if w, _ := r["warm"].(bool); w != warm {
				t.Errorf("%v: warm = %v, want %v", tc.args, r["warm"], warm)
			}
			if c, _ := r["cpu_us_per_step"].(float64); (c > 0) != warm {
				t.Errorf("%v: cpu_us_per_step = %v", tc.args, r["cpu_us_per_step"])
			}
			// Cold runs time the reads between the steps too.
			if b, _ := r["bandwidth_between_steps_gb_per_s"].(float64); (b > 0) == warm {
				t.Errorf("%v: bandwidth_between_steps_gb_per_s = %v", tc.args, r["bandwidth_between_steps_gb_per_s"])
			}
			if f, _ := r["frac_of_bandwidth_between_steps"].(float64); (f > 0) == warm {
				t.Errorf("%v: frac_of_bandwidth_between_steps = %v", tc.args, r["frac_of_bandwidth_between_steps"])
			}
		}
	}
	if code, _, errOut := run(t, "bench", "attention", "--cache", "nope"); code == 0 || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown cache: exit %d, stderr %q", code, errOut)
	}
	// --shape takes the model shape's heads: llama-134m's 12 on 12 KV heads of 64 values.
	var shaped map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "2.json")); err != nil || json.Unmarshal(b, &shaped) != nil {
		t.Fatalf("--shape run's JSON: %v", err)
	}
	if shaped["heads"] != 12.0 || shaped["kv_heads"] != 12.0 || shaped["head_dim"] != 64.0 {
		t.Errorf("--shape llama-134m: heads %v, kv_heads %v, head_dim %v; want 12, 12, 64", shaped["heads"], shaped["kv_heads"], shaped["head_dim"])
	}
	if code, _, errOut := run(t, "bench", "attention", "--shape", "nope"); code == 0 || !strings.Contains(errOut, "nope") || !strings.Contains(errOut, "llama-134m") {
		t.Errorf("unknown shape: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run(t, "bench", "attention", "--shape", "llama-134m", "--heads", "8"); code == 0 || !strings.Contains(errOut, "--heads") {
		t.Errorf("--shape with --heads: exit %d, stderr %q", code, errOut)
	}
}

// TestCLIManners: bare kvq fails with the usage, help reaches every command, a bad
// flag is one line naming it (not the whole help), and a missing file is named once.
func TestCLIManners(t *testing.T) {
	if code, _, errOut := run(t); code != 2 || !strings.Contains(errOut, "Usage: kvq <command>") {
		t.Errorf("bare kvq: exit %d, stderr %q; want 2 and the usage", code, errOut)
	}
	if code, out, _ := run(t, "version"); code != 0 || !strings.HasPrefix(out, "kvq ") || !strings.Contains(out, "kernels:") {
		t.Errorf("kvq version: exit %d, stdout %q", code, out)
	}
	if code, out, _ := run(t, "version", "--licenses"); code != 0 || !strings.Contains(out, "Permission is hereby granted") || !strings.Contains(out, "The ggml authors") {
		t.Errorf("kvq version --licenses: exit %d, no licence in %q", code, out)
	}
	code, _, errOut := run(t, "eval", "--ctx", "x")
	if code != 2 || strings.Count(errOut, "\n") != 2 || !strings.Contains(errOut, "-ctx") || strings.Count(errOut, "parse error") != 1 {
		t.Errorf("bad flag: exit %d, stderr %q; want 2, the error once and a pointer to -h", code, errOut)
	}
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	if _, _, errOut := run(t, "inspect", "--model", missing); strings.Count(errOut, missing) != 1 {
		t.Errorf("missing model: stderr %q names the file %d times, want once", errOut, strings.Count(errOut, missing))
	}
	// Every command's help, reached as kvq help CMD: a usage line naming every flag, and
	// each flag's value named by an upper-case word (no backquoted phrase taken for one).
	valueName := regexp.MustCompile(`^  --([a-z0-9-]+)( ([A-Z][A-Z0-9_]*))?$`)
	cmds := [][]string{}
	for name := range commands {
		if name != "bench" {
			cmds = append(cmds, []string{name})
		}
	}
	for name := range benchmarks {
		cmds = append(cmds, []string{"bench", name})
	}
	for _, c := range cmds {
		code, _, help := run(t, append([]string{"help"}, c...)...)
		if code != 0 {
			t.Errorf("kvq help %v: exit %d", c, code)
			continue
		}
		usageLine, _, _ := strings.Cut(help, "\n\n")
		n := 0
		for line := range strings.Lines(help) {
			line = strings.TrimRight(line, "\n")
			if !strings.HasPrefix(line, "  --") {
				continue
			}
			n++
			m := valueName.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("kvq help %v: flag line %q: want --name and an upper-case value name", c, line)
				continue
			}
			if !strings.Contains(usageLine, "--"+m[1]) {
				t.Errorf("kvq help %v: usage line %q lacks --%s", c, usageLine, m[1])
			}
		}
		if n == 0 || strings.Contains(help, "`") {
			t.Errorf("kvq help %v: %d flags, help:\n%s", c, n, help)
		}
	}
}
