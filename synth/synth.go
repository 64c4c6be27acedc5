// Package synth writes random-weight GGUF models with the shapes of real models, for
// speed work on machines where the real weights cannot be downloaded.
//
// A synthetic file is a complete llama.cpp-style model: general.* and <arch>.* metadata,
// a tokenizer, and every tensor a Llama-family forward pass reads, named and shaped as
// llama.cpp names and shapes them (dims in GGML order, ne[0] = input features). Weights
// are drawn from N(0, 0.02²) — matrices and biases — and norm weights are 1, so that
// activations stay in a sane range through all layers. The same seed gives the same
// values whatever the weight type, so an F32 and a Q8_0 file of one seed differ only by
// quantization.
//
// Vocabulary. Every shape uses the 32,000-piece SentencePiece vocabulary of llama.cpp's
// ggml-vocab-llama-spm.gguf (assets.LlamaVocab; tokenizer.ggml.model "llama"). A
// shape with a smaller vocabulary keeps its first pieces (the 3 control tokens and 256
// byte pieces come first, so at least 259 are required). A shape with a larger one —
// smollm2-135m (49,152) and qwen2.5-0.5b (151,936), whose real tokenizers are GPT-2-style
// BPE — is padded with placeholder pieces "<placeholder_N>" of token type UNUSED (5) and
// score -1e9, so that token ids cover the real vocabulary size (the width of the
// embedding and output matrices, which is what speed depends on) while text still
// tokenizes with the 32k pieces.
//
// Files are written in one streaming pass: chunks of 64 Ki values are generated and
// encoded on up to GOMAXPROCS goroutines and written in order, so memory use is a few
// megabytes plus the vocabulary, whatever the model size.
package synth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"kvq/assets"
	"kvq/gguf"
)

// Shape is the architecture and size of a model.
type Shape struct {
	Name     string
	Arch     string  // general.architecture: one of Architectures
	Dim      int     // embedding width
	Layers   int     // transformer blocks
	Heads    int     // query heads
	KVHeads  int     // key/value heads (≤ Heads, dividing it)
	FFN      int     // feed-forward hidden width
	Vocab    int     // tokens (rows of token_embd)
	Ctx      int     // trained context length, tokens
	RMSEps   float32 // RMSNorm epsilon
	RopeBase float32 // RoPE frequency base
	QKVBias  bool    // attn_q/k/v carry biases (qwen2)
	Tied     bool    // no output.weight: the output projection is token_embd
	// HeadSize is the width of one attention head when it is not Dim/Heads (written
	// as attention.key_length and value_length); 0 means Dim/Heads.
	HeadSize int
	// Window is the sliding attention window in tokens (attention.sliding_window),
	// 0 for none; which layers slide is the architecture's rule.
	Window int
	// RopeScale is a linear RoPE scaling factor (rope.scaling.*), 0 for none.
	RopeScale float32
}

// Architectures are the general.architecture values synth writes, with the tensors
// each reads beyond llama's:
//
//	qwen2   attn_q/k/v biases
//	qwen3   attn_q_norm, attn_k_norm (per head)
//	gemma2  post_attention_norm, post_ffw_norm; soft-capping metadata
//	gemma3  attn_q_norm, attn_k_norm, post_attention_norm, post_ffw_norm
//	phi3    attn_qkv (q, k, v rows) in place of attn_q/k/v, ffn_up holding gate then
//	        up rows in place of ffn_gate and ffn_up
var Architectures = []string{"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}

// Shapes are the real model shapes synth knows, by name.
var Shapes = []Shape{
	{Name: "llama-134m", Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 2048,
		Vocab: 32000, Ctx: 2048, RMSEps: 1e-5, RopeBase: 10000},
	{Name: "smollm2-135m", Arch: "llama", Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, FFN: 1536,
		Vocab: 49152, Ctx: 8192, RMSEps: 1e-5, RopeBase: 100000, Tied: true},
	{Name: "qwen2.5-0.5b", Arch: "qwen2", Dim: 896, Layers: 24, Heads: 14, KVHeads: 2, FFN: 4864,
		Vocab: 151936, Ctx: 32768, RMSEps: 1e-6, RopeBase: 1000000, QKVBias: true, Tied: true},
	{Name: "qwen3-0.6b", Arch: "qwen3", Dim: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadSize: 128, FFN: 3072,
		Vocab: 151936, Ctx: 40960, RMSEps: 1e-6, RopeBase: 1000000, Tied: true},
	{Name: "gemma2-2b", Arch: "gemma2", Dim: 2304, Layers: 26, Heads: 8, KVHeads: 4, HeadSize: 256, FFN: 9216,
		Vocab: 256000, Ctx: 8192, RMSEps: 1e-6, RopeBase: 10000, Window: 4096, Tied: true},
	{Name: "gemma3-1b", Arch: "gemma3", Dim: 1152, Layers: 26, Heads: 4, KVHeads: 1, HeadSize: 256, FFN: 6912,
		Vocab: 262144, Ctx: 32768, RMSEps: 1e-6, RopeBase: 1000000, Window: 512, Tied: true},
	{Name: "phi3-mini-4k", Arch: "phi3", Dim: 3072, Layers: 32, Heads: 32, KVHeads: 32, FFN: 8192,
		Vocab: 32064, Ctx: 4096, RMSEps: 1e-5, RopeBase: 10000, Window: 2047},
	{Name: "mistral-7b-v0.1", Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, FFN: 14336,
		Vocab: 32000, Ctx: 32768, RMSEps: 1e-5, RopeBase: 10000, Window: 4096},
}

// ShapeNames returns the names of Shapes, in order.
func ShapeNames() []string {
	names := make([]string, len(Shapes))
	for i, s := range Shapes {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the shape with the given name.
func Lookup(name string) (Shape, bool) {
	for _, s := range Shapes {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}

// HeadDim is the width of one attention head.
func (s Shape) HeadDim() int {
	if s.HeadSize > 0 {
		return s.HeadSize
	}
	return s.Dim / s.Heads
}

func (s Shape) knownArch() bool {
	for _, a := range Architectures {
		if a == s.Arch {
			return true
		}
	}
	return false
}

// minVocab is the smallest vocabulary that keeps the control tokens and all byte pieces.
const minVocab = 259

// Validate reports whether the shape can be written: a known architecture, positive
// sizes, heads dividing the width, KV heads dividing heads, an even head width, and
// matrix row lengths (Dim, FFN) that are whole Q8_0 blocks (multiples of 32).
func (s Shape) Validate() error {
	if !s.knownArch() {
		return fmt.Errorf("synth: shape %q: architecture %q is not one of %v", s.Name, s.Arch, Architectures)
	}
	if s.Dim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.FFN <= 0 || s.Ctx <= 0 {
		return fmt.Errorf("synth: shape %q: sizes must be positive (%+v)", s.Name, s)
	}
	if s.HeadSize < 0 || s.Window < 0 || s.RopeScale < 0 {
		return fmt.Errorf("synth: shape %q: head size, window and RoPE scale must not be negative", s.Name)
	}
	if s.HeadSize == 0 && s.Dim%s.Heads != 0 || s.HeadDim()%2 != 0 {
		return fmt.Errorf("synth: shape %q: width %d is not an even head width times %d heads", s.Name, s.Dim, s.Heads)
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("synth: shape %q: %d heads are not a multiple of %d KV heads", s.Name, s.Heads, s.KVHeads)
	}
	if s.Dim%32 != 0 || s.FFN%32 != 0 {
		return fmt.Errorf("synth: shape %q: width %d and FFN %d must be multiples of 32 (Q8_0 blocks)", s.Name, s.Dim, s.FFN)
	}
	if s.Vocab < minVocab || s.Vocab > 1<<24 {
		return fmt.Errorf("synth: shape %q: vocabulary %d outside [%d, 2^24]", s.Name, s.Vocab, minVocab)
	}
	if s.RMSEps <= 0 || s.RopeBase <= 0 {
		return fmt.Errorf("synth: shape %q: RMS epsilon and RoPE base must be positive", s.Name)
	}
	return nil
}

// Params returns the number of weights of the shape (all tensors' values).
func (s Shape) Params() uint64 {
	var n uint64
	for _, t := range s.tensors(gguf.TypeF32) {
		n += t.elems()
	}
	return n
}

// DataBytes returns the bytes of the shape's tensor data with its matrices in
// weights: what Write streams after the header (for progress reports).
func (s Shape) DataBytes(weights gguf.TensorType) uint64 {
	var n uint64
	for _, t := range s.tensors(weights) {
		rb, err := t.typ.RowBytes(int(t.dims[0]))
		if err != nil {
			continue // WriteShape refuses the shape
		}
		n += uint64(rb) * (t.elems() / t.dims[0])
	}
	return n
}

// tensorSpec is one tensor to write.
type tensorSpec struct {
	name string
	typ  gguf.TensorType
	dims []uint64
	one  bool // all ones (norm weights) instead of random
}

func (t tensorSpec) elems() uint64 {
	n := uint64(1)
	for _, d := range t.dims {
		n *= d
	}
	return n
}

// tensors lists the shape's tensors in llama.cpp's order, matrices in type w and
// 1-D tensors (norms, biases) in F32.
func (s Shape) tensors(w gguf.TensorType) []tensorSpec {
	dim, ffn, vocab := uint64(s.Dim), uint64(s.FFN), uint64(s.Vocab)
	hd := uint64(s.HeadDim())
	qDim, kvDim := uint64(s.Heads)*hd, uint64(s.KVHeads)*hd
	qkNorm := s.Arch == "qwen3" || s.Arch == "gemma3"
	postNorms := s.Arch == "gemma2" || s.Arch == "gemma3"
	fused := s.Arch == "phi3"
	norm := func(name string, n uint64) tensorSpec {
		return tensorSpec{name: name, typ: gguf.TypeF32, dims: []uint64{n}, one: true}
	}
	ts := []tensorSpec{{name: "token_embd.weight", typ: w, dims: []uint64{dim, vocab}}}
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts, norm(p+"attn_norm.weight", dim))
		if fused {
			ts = append(ts, tensorSpec{name: p + "attn_qkv.weight", typ: w, dims: []uint64{dim, qDim + 2*kvDim}})
		} else {
			ts = append(ts,
				tensorSpec{name: p + "attn_q.weight", typ: w, dims: []uint64{dim, qDim}},
				tensorSpec{name: p + "attn_k.weight", typ: w, dims: []uint64{dim, kvDim}},
				tensorSpec{name: p + "attn_v.weight", typ: w, dims: []uint64{dim, kvDim}},
			)
		}
		ts = append(ts, tensorSpec{name: p + "attn_output.weight", typ: w, dims: []uint64{qDim, dim}})
		if s.QKVBias {
			ts = append(ts,
				tensorSpec{name: p + "attn_q.bias", typ: gguf.TypeF32, dims: []uint64{qDim}},
				tensorSpec{name: p + "attn_k.bias", typ: gguf.TypeF32, dims: []uint64{kvDim}},
				tensorSpec{name: p + "attn_v.bias", typ: gguf.TypeF32, dims: []uint64{kvDim}},
			)
		}
		if qkNorm {
			ts = append(ts, norm(p+"attn_q_norm.weight", hd), norm(p+"attn_k_norm.weight", hd))
		}
		if postNorms {
			ts = append(ts, norm(p+"post_attention_norm.weight", dim))
		}
		ts = append(ts, norm(p+"ffn_norm.weight", dim))
		if fused {
			ts = append(ts, tensorSpec{name: p + "ffn_up.weight", typ: w, dims: []uint64{dim, 2 * ffn}})
		} else {
			ts = append(ts,
				tensorSpec{name: p + "ffn_gate.weight", typ: w, dims: []uint64{dim, ffn}},
				tensorSpec{name: p + "ffn_up.weight", typ: w, dims: []uint64{dim, ffn}},
			)
		}
		ts = append(ts, tensorSpec{name: p + "ffn_down.weight", typ: w, dims: []uint64{ffn, dim}})
		if postNorms {
			ts = append(ts, norm(p+"post_ffw_norm.weight", dim))
		}
	}
	ts = append(ts, tensorSpec{name: "output_norm.weight", typ: gguf.TypeF32, dims: []uint64{dim}, one: true})
	if !s.Tied {
		ts = append(ts, tensorSpec{name: "output.weight", typ: w, dims: []uint64{dim, vocab}})
	}
	return ts
}

// WeightStd is the standard deviation of the random weights and biases.
const WeightStd = 0.02

// weightTypes are the weight types Write encodes, each with its general.file_type
// (llama.cpp's llama_ftype).
var weightTypes = []struct {
	t     gguf.TensorType
	ftype uint32
}{
	{gguf.TypeF32, 0}, {gguf.TypeF16, 1}, {gguf.TypeQ8_0, 7}, {gguf.TypeQ4_0, 2}, {gguf.TypeQ5_0, 8}, {gguf.TypeQ4_K, 14},
}

// fileType is t's general.file_type, false if Write does not encode t.
func fileType(t gguf.TensorType) (uint32, bool) {
	for _, w := range weightTypes {
		if w.t == t {
			return w.ftype, true
		}
	}
	return 0, false
}

// WeightTypes returns the weight types Write and WriteShape encode.
func WeightTypes() []gguf.TensorType {
	ts := make([]gguf.TensorType, len(weightTypes))
	for i, w := range weightTypes {
		ts[i] = w.t
	}
	return ts
}

// Write writes a random-weight model of the named shape (one of ShapeNames) with its
// matrices in weights (one of WeightTypes) to w. The output depends only on the
// shape, weights and seed.
func Write(w io.Writer, shape string, weights gguf.TensorType, seed uint64) error {
	s, ok := Lookup(shape)
	if !ok {
		return fmt.Errorf("synth: unknown shape %q (known: %s)", shape, strings.Join(ShapeNames(), ", "))
	}
	return WriteShape(w, s, weights, seed)
}

// Parse is WriteShape into memory: the parsed model file, ready for model.FromGGUF.
func Parse(s Shape, weights gguf.TensorType, seed uint64) (*gguf.File, error) {
	var buf bytes.Buffer
	if err := WriteShape(&buf, s, weights, seed); err != nil {
		return nil, err
	}
	return gguf.Parse(buf.Bytes())
}

// WriteShape is Write for any valid Shape, such as a small custom one.
func WriteShape(w io.Writer, s Shape, weights gguf.TensorType, seed uint64) error {
	if err := s.Validate(); err != nil {
		return err
	}
	ftype, ok := fileType(weights)
	if !ok {
		var names []string
		for _, w := range weightTypes {
			names = append(names, w.t.String())
		}
		return fmt.Errorf("synth: weight type %v not supported (%s)", weights, strings.Join(names, ", "))
	}
	if n := weights.BlockElems(); s.Dim%n != 0 || s.FFN%n != 0 {
		return fmt.Errorf("synth: shape %q: width %d and FFN %d must be multiples of %d for %v weights", s.Name, s.Dim, s.FFN, n, weights)
	}
	gw := gguf.NewWriter(w)
	meta, err := s.metadata(ftype, weights)
	if err != nil {
		return err
	}
	for _, kv := range meta {
		if err := gw.AddKV(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	specs := s.tensors(weights)
	for _, t := range specs {
		if err := gw.AddTensor(t.name, t.typ, t.dims...); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	if err := writeData(gw, specs, seed); err != nil {
		return err
	}
	if err := gw.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// chunkValues is the number of values generated and encoded as one unit: a multiple of
// 256, so every chunk is whole blocks of 32 values and Q4_K super-blocks.
const chunkValues = 1 << 16

// chunk is one unit of work: values [k·chunkValues, k·chunkValues+n) of a tensor.
type chunk struct {
	spec *tensorSpec
	k    uint64
	n    int
	out  chan chunkResult // buffered: a worker never blocks on it
}

// chunkResult is an encoded chunk: data in the pooled buffer box (the pool holds
// *[]byte, so putting a buffer back does not allocate).
type chunkResult struct {
	data []byte
	box  *[]byte
	err  error
}

// writeData generates and encodes the tensors' chunks on up to GOMAXPROCS workers and
// writes them in order. At most 2 chunks per worker are in flight, so memory stays a
// few megabytes whatever the model size.
func writeData(gw *gguf.Writer, specs []tensorSpec, seed uint64) error {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	order := make(chan *chunk, 2*workers)
	jobs := make(chan *chunk, 2*workers)
	done := make(chan struct{})
	var pool sync.Pool

	go func() { // producer: chunks in file order
		defer close(order)
		defer close(jobs)
		for i := range specs {
			t := &specs[i]
			for k, left := uint64(0), t.elems(); left > 0; k++ {
				n := min(left, chunkValues)
				c := &chunk{spec: t, k: k, n: int(n), out: make(chan chunkResult, 1)}
				select {
				case <-done:
					return
				default:
				}
				select {
				case order <- c:
				case <-done:
					return
				}
				jobs <- c // never blocks for long: workers drain jobs until it is closed
				left -= n
			}
		}
	}()

	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := make([]float32, chunkValues)
			for c := range jobs {
				c.out <- encodeChunk(c, vals[:c.n], seed, &pool)
			}
		}()
	}

	var err error
	for c := range order {
		r := <-c.out
		if r.err == nil {
			r.err = gw.WriteRaw(r.data)
		}
		if r.box != nil {
			pool.Put(r.box)
		}
		if r.err != nil {
			err = fmt.Errorf("synth: %w", r.err)
			close(done)
			break
		}
	}
	if err != nil {
		for c := range order { // let the producer finish; discard queued results
			<-c.out
		}
	}
	wg.Wait()
	return err
}

// encodeChunk generates one chunk's values and encodes them in the tensor's type.
func encodeChunk(c *chunk, vals []float32, seed uint64, pool *sync.Pool) chunkResult {
	if c.spec.one {
		for i := range vals {
			vals[i] = 1
		}
	} else {
		rng := chunkRand(seed, c.spec.name, c.k)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * WeightStd)
		}
	}
	size, err := c.spec.typ.RowBytes(len(vals))
	if err != nil {
		return chunkResult{err: err}
	}
	box, ok := pool.Get().(*[]byte)
	if !ok || cap(*box) < size {
		b := make([]byte, 0, max(size, 4*chunkValues))
		box = &b
	}
	buf := (*box)[:size]
	if err := gguf.Encode(c.spec.typ, buf, vals); err != nil {
		return chunkResult{err: err, box: box}
	}
	return chunkResult{data: buf, box: box}
}

// chunkRand returns the generator of one chunk of a tensor's values, seeded by the
// file seed, the tensor's name and the chunk's index: every chunk is independent of the
// others (so chunks can be generated in parallel) and of the weight type.
func chunkRand(seed uint64, name string, k uint64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write(binary.LittleEndian.AppendUint64(nil, k))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// spmVocab is the 32k SentencePiece vocabulary every synthetic model carries.
var spmVocab = assets.LlamaVocab

// placeholderScore is the piece score of padding tokens: lower than any real piece.
const placeholderScore = -1e9

// tokenTypeUnused is llama.cpp's LLAMA_TOKEN_TYPE_UNUSED.
const tokenTypeUnused = 5

// metadata returns the file's key/value pairs in order.
func (s Shape) metadata(ftype uint32, weights gguf.TensorType) ([]gguf.KV, error) {
	a := s.Arch + "."
	meta := []gguf.KV{
		{Key: "general.architecture", Value: s.Arch},
		{Key: "general.name", Value: NamePrefix + s.Name},
		{Key: "general.file_type", Value: ftype},
	}
	if weights != gguf.TypeF32 && weights != gguf.TypeF16 {
		meta = append(meta, gguf.KV{Key: "general.quantization_version", Value: uint32(2)})
	}
	meta = append(meta,
		gguf.KV{Key: a + "vocab_size", Value: uint32(s.Vocab)},
		gguf.KV{Key: a + "context_length", Value: uint32(s.Ctx)},
		gguf.KV{Key: a + "embedding_length", Value: uint32(s.Dim)},
		gguf.KV{Key: a + "block_count", Value: uint32(s.Layers)},
		gguf.KV{Key: a + "feed_forward_length", Value: uint32(s.FFN)},
		gguf.KV{Key: a + "attention.head_count", Value: uint32(s.Heads)},
		gguf.KV{Key: a + "attention.head_count_kv", Value: uint32(s.KVHeads)},
		gguf.KV{Key: a + "attention.layer_norm_rms_epsilon", Value: s.RMSEps},
		gguf.KV{Key: a + "rope.freq_base", Value: s.RopeBase},
		gguf.KV{Key: a + "rope.dimension_count", Value: uint32(s.HeadDim())},
	)
	if s.HeadSize > 0 {
		meta = append(meta,
			gguf.KV{Key: a + "attention.key_length", Value: uint32(s.HeadSize)},
			gguf.KV{Key: a + "attention.value_length", Value: uint32(s.HeadSize)})
	}
	if s.Window > 0 {
		meta = append(meta, gguf.KV{Key: a + "attention.sliding_window", Value: uint32(s.Window)})
	}
	if s.RopeScale > 0 {
		meta = append(meta,
			gguf.KV{Key: a + "rope.scaling.type", Value: "linear"},
			gguf.KV{Key: a + "rope.scaling.factor", Value: s.RopeScale})
	}
	if s.Arch == "gemma2" { // as llama.cpp's converter writes them
		meta = append(meta,
			gguf.KV{Key: a + "attn_logit_softcapping", Value: float32(50)},
			gguf.KV{Key: a + "final_logit_softcapping", Value: float32(30)})
	}
	tok, err := s.tokenizerMetadata()
	if err != nil {
		return nil, err
	}
	return append(meta, tok...), nil
}

// tokenizerMetadata returns the tokenizer.* pairs of the embedded vocabulary, cut or
// padded to the shape's vocabulary size.
func (s Shape) tokenizerMetadata() ([]gguf.KV, error) {
	vf, err := gguf.Parse(spmVocab)
	if err != nil {
		return nil, fmt.Errorf("synth: embedded vocabulary: %w", err)
	}
	tokens, ok1 := vf.Strings("tokenizer.ggml.tokens")
	scores, ok2 := vf.Float32s("tokenizer.ggml.scores")
	types, ok3 := vf.Int32s("tokenizer.ggml.token_type")
	if !ok1 || !ok2 || !ok3 || len(scores) != len(tokens) || len(types) != len(tokens) {
		return nil, errors.New("synth: embedded vocabulary lacks consistent tokens, scores and token types")
	}
	n := s.Vocab
	outTok := make([]string, n)
	outScore := make([]float32, n)
	outType := make([]int32, n)
	k := copy(outTok, tokens)
	copy(outScore, scores)
	copy(outType, types)
	for i := k; i < n; i++ {
		outTok[i] = fmt.Sprintf("<placeholder_%d>", i)
		outScore[i] = placeholderScore
		outType[i] = tokenTypeUnused
	}
	var meta []gguf.KV
	for _, key := range vf.Keys() {
		if !strings.HasPrefix(key, "tokenizer.") {
			continue
		}
		v, _ := vf.Value(key)
		var val any = v
		switch key {
		case "tokenizer.ggml.tokens":
			val = outTok
		case "tokenizer.ggml.scores":
			val = outScore
		case "tokenizer.ggml.token_type":
			val = outType
		default:
			if id, isInt := vf.Uint(key); isInt && strings.HasSuffix(key, "_token_id") && id >= uint64(n) {
				return nil, fmt.Errorf("synth: shape %q: %s %d lies beyond the %d-token vocabulary", s.Name, key, id, n)
			}
		}
		meta = append(meta, gguf.KV{Key: key, Value: val})
	}
	return meta, nil
}

// NamePrefix starts the general.name of every model Write makes ("synthetic
// llama-134m"), by which reports recognise random weights.
const NamePrefix = "synthetic "

// IsSynthetic reports whether a model's general.name is that of a model Write made.
func IsSynthetic(name string) bool { return strings.HasPrefix(name, NamePrefix) }
