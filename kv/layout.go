package kv

import (
	"errors"
	"fmt"
	"math"

	"kvq/quant"
)

// Config describes a cache: model geometry, cache types and memory.
type Config struct {
	Layers  int // transformer layers
	Heads   int // query heads
	KVHeads int // key/value heads; Heads must be a multiple
	HeadDim int // values per head

	Spec       Spec         // cache type of every layer without an override
	LayerSpecs map[int]Spec // per-layer overrides (layer index in [0, Layers))

	// BlockTokens is the number of tokens per physical block; 0 means
	// DefaultBlockTokens (16). A KIVI key group of G tokens either fills whole
	// blocks (G a multiple of B, its bytes split evenly over G/B consecutive blocks)
	// or a block holds whole groups; other sizes are rounded up to a multiple of
	// every KIVI key group in use. Store.Config reports the value in force.
	BlockTokens int
	// BudgetBytes bounds blocks plus full-precision tails; 0 means unlimited.
	BudgetBytes int64

	// Rotate rotates one head vector by delta positions in place (RoPE). It is only
	// needed once a sequence's history holds segments whose keys sit at positions
	// other than the ones their queries assume (sink+window eviction); nil until then.
	Rotate func(x []float32, delta int)
	// RoPE is the model's rotary embedding, required by specs that store keys before
	// RoPE (rope=pre): keys still arrive rotated at their positions (Layers), and such
	// layers rotate them back when they encode a key block, then rotate each key to
	// its position while scoring it. Its Dims must not exceed HeadDim.
	RoPE *quant.RoPE
	// ModelFingerprint names the model whose keys and values the cache holds (e.g. its
	// name and a hash of its weights); it enters every prefix-cache block hash so
	// that hashes are never shared between models. Empty is allowed.
	ModelFingerprint string
	// NoPrefixCache turns prefix caching off (see Store.NewSeqWithPrefix).
	NoPrefixCache bool

	// Windows, when not nil, holds one attention window per layer in tokens: a query
	// at position p of a layer with window w > 0 attends to positions > p − w only
	// (sliding-window layers of Gemma, Mistral, Phi-3); 0 is the whole history.
	Windows []int
	// AttnScale multiplies attention scores before the softmax; 0 means 1/√HeadDim.
	AttnScale float32
	// AttnSoftCap, when positive, caps every scaled score s to c·tanh(s/c) (Gemma 2).
	AttnSoftCap float32

	// AttnChunkTokens and AttnWorkers tune the attention kernel (see attn.Options);
	// zero values use its defaults (one goroutine).
	AttnChunkTokens int
	AttnWorkers     int
}

// Block length: the default when Config.BlockTokens is 0, and the largest allowed.
// Blocks are the unit of allocation and prefix sharing only: a 304-token sequence
// leaves at most B−1 slots unused, and shares prefixes B tokens at a time. The
// attention kernels do not see blocks: they read a sequence's history in spans of
// SpanTokens logical positions (see geometry.span), whatever the block size.
const (
	DefaultBlockTokens = 16
	MaxBlockTokens     = 1 << 14
	MaxBlockBytes      = 1 << 30 // largest physical block
)

// SpanTokens is the unit of attention work (rounded up to a multiple of every KIVI
// key group): history positions [k·SpanTokens, (k+1)·SpanTokens) are handed to the
// kernels as one span (cut further only where storage changes: sinks, rings, a
// window's start). Each kernel call has fixed costs that a longer span spreads over
// more rows (over 16 rows a decode step of llama-134m's shape took 1.3–1.7× as long
// as over 64; over 128, 6–12% less than over 64). Because the unit is logical, the
// kernels' float sums follow positions only, never where blocks sit: a sequence's
// results are the same bits with any block size that divides the span, its blocks
// adjacent, scattered, adopted from a prefix or copied on a fork.
//
// The pool makes memory in extents of one span's blocks, laid out so that the rows
// of consecutive slots are contiguous (see pool), and gives a span's first block the
// first slot of an empty extent and each next block the slot after: the kernels
// then read the span in place. A span whose blocks are not adjacent (adopted prefix
// blocks, copies on write, a full pool) is copied into the sequence's scratch first.
const SpanTokens = 128

// piece is a run of n bytes at offset off of the block layout.
type piece struct{ off, n int }

// layer is the storage layout of one layer inside a physical block, and the
// full-precision tail geometry of one layer of a sequence.
//
// A physical block of B tokens holds, for each layer in order, a K section then a V
// section. A section is KVHeads head sections back to back; a head section holds
// that head's B tokens: B rows of RowBytes(HeadDim) for per-token codecs, or, for
// KIVI keys, B/G key blocks of BlockBytes(G, HeadDim) when G divides B (tokens
// [jG, (j+1)G) of the block in key block j), and when B divides G (split keys) the
// (i mod G/B)-th of G/B equal parts of the bytes of the key block of tokens
// [iB − iB mod G, …+G) for block i of a sequence. Either way the key bytes of n
// tokens at the start of a block take n·BlockBytes(G, HeadDim)/G bytes (kBytes).
// Values stored per channel are laid out as KIVI keys, G always dividing B.
type layer struct {
	spec Spec
	sideCodecs
	rope           *quant.RoPE // Config.RoPE for keys stored before RoPE
	preRoPE        bool        // keys stored before RoPE (rope=pre)
	sinksK, sinksV int         // sink rows kept per side (0 when that side is lossless)

	kRowBytes, kBlkBytes, vRowBytes, vBlkBytes int
	kHeadStride, vHeadStride                   int  // bytes per head section
	kSplit                                     bool // a KIVI key group spans G/B blocks
	kOff, vOff                                 int  // section offsets inside its group's block
	bytes                                      int  // bytes of this layer per block
	grp, inGrp                                 int  // its group (geometry.groups) and its index among the group's layers
}

// group is a set of layers with one attention window that share one block table
// per sequence: a physical block of a group holds B tokens of its layers only. A
// group whose layers have a window w frees, at each Grow, the blocks wholly before
// the next query's window, so each of its layers holds at most w + B tokens of
// blocks however long the sequence (Gemma's sliding layers beside global ones,
// Mistral's and Phi-3's every layer). Every group has the same number of layers,
// so that all blocks have one size and one pool, one budget and one LRU queue of
// cached prefix blocks serve them all (vLLM's hybrid allocator): with windows
// {w on 22 layers, 0 on 4}, groups of 2 layers, 11 sliding and 2 global. Without
// windows, or when per-layer specs would give the groups blocks of different sizes,
// there is one group of every layer, which keeps the whole history.
type group struct {
	window int     // attention window of its layers in tokens; 0: the whole history
	layers []int   // its layers, ascending
	pieces []piece // its block layout piece by piece (one layer side of one KV head)
}

// geometry is the resolved configuration shared by a Store and BytesPerToken.
type geometry struct {
	cfg    Config
	B      int // tokens per block
	rowLen int // float32s per token per layer side: KVHeads·HeadDim
	// tail is the codec of every row a sequence keeps beside its blocks (rings,
	// work area, sinks): f16, half of f32's bytes. A row read in full precision is
	// read as its f16 rounding by every query, in prefill and decode alike, so a
	// prefill still equals single-token steps and a prefix adopted with its rows
	// equals the computed one. tailHead is one head's row bytes, tailRow a token's
	// (KVHeads heads) of one layer side.
	tail              quant.RowCodec
	tailPlan          *quant.RowPlan
	tailHead, tailRow int
	layers            []layer
	groups            []group
	// blockBytes is the size of a physical block: B tokens of one group's layers.
	blockBytes int
	// U is the prefix unit in tokens: B, or the least common multiple of B and the
	// split KIVI key groups (see layer). A block's bytes depend on the tokens up to
	// the end of its unit (its key group closes there), so blocks are registered,
	// adopted and freed by eviction and windows a whole unit at a time (see unitEnd).
	U int
	// span is SpanTokens rounded up to a multiple of the KIVI key groups (see there).
	span int
	// gathSpan is the bytes a span's copy takes (see Store.gather): keys and values
	// of every KV head of one span of the largest layer.
	gathSpan int
	// E is the number of blocks per extent of pool memory: an extent holds each
	// piece of a group's layout for its E blocks side by side (see pool), so rows of
	// blocks in consecutive slots are contiguous.
	E int
	// workK, workV: some layer keeps f16 key (value) rings, so a step's new rows
	// pass through the sequence's work area.
	workK, workV bool
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

func lossless(t Type) bool { return t.entry().Lossless }

func newGeometry(cfg Config) (*geometry, error) {
	if cfg.Layers < 1 || cfg.Heads < 1 || cfg.KVHeads < 1 || cfg.HeadDim < 1 {
		return nil, fmt.Errorf("kv: config: layers=%d heads=%d kvHeads=%d headDim=%d must all be positive", cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.HeadDim)
	}
	if cfg.Heads%cfg.KVHeads != 0 {
		return nil, fmt.Errorf("kv: config: heads=%d is not a multiple of kvHeads=%d", cfg.Heads, cfg.KVHeads)
	}
	if cfg.BlockTokens < 0 || cfg.BlockTokens > MaxBlockTokens || cfg.BudgetBytes < 0 {
		return nil, fmt.Errorf("kv: config: want 0 ≤ blockTokens ≤ %d and budgetBytes ≥ 0, got %d and %d", MaxBlockTokens, cfg.BlockTokens, cfg.BudgetBytes)
	}
	if int64(cfg.Layers)*int64(cfg.KVHeads)*int64(cfg.HeadDim) > 1<<24 || cfg.Heads > 1<<16 {
		return nil, fmt.Errorf("kv: config: layers=%d × kvHeads=%d × headDim=%d (heads=%d) is beyond any model this cache serves", cfg.Layers, cfg.KVHeads, cfg.HeadDim, cfg.Heads)
	}
	if cfg.Windows != nil && len(cfg.Windows) != cfg.Layers {
		return nil, fmt.Errorf("kv: config: %d attention windows for %d layers", len(cfg.Windows), cfg.Layers)
	}
	for l, w := range cfg.Windows {
		if w < 0 {
			return nil, fmt.Errorf("kv: config: layer %d: attention window %d is negative", l, w)
		}
	}
	if math.IsNaN(float64(cfg.AttnScale)) || math.IsInf(float64(cfg.AttnScale), 0) || cfg.AttnScale < 0 ||
		math.IsNaN(float64(cfg.AttnSoftCap)) || math.IsInf(float64(cfg.AttnSoftCap), 0) || cfg.AttnSoftCap < 0 {
		return nil, fmt.Errorf("kv: config: attention scale %v and soft cap %v must be finite and ≥ 0", cfg.AttnScale, cfg.AttnSoftCap)
	}
	for l := range cfg.LayerSpecs {
		if l < 0 || l >= cfg.Layers {
			return nil, fmt.Errorf("kv: config: layer override for layer %d out of range [0, %d)", l, cfg.Layers)
		}
	}
	g := &geometry{cfg: cfg, rowLen: cfg.KVHeads * cfg.HeadDim, layers: make([]layer, cfg.Layers), tail: quant.F16{}}
	d := cfg.HeadDim
	tp, err := quant.NewRowPlan(g.tail, d)
	if err != nil {
		return nil, fmt.Errorf("kv: config: tail rows of %d values: %w", d, err)
	}
	g.tailPlan, g.tailHead = tp, g.tail.RowBytes(d)
	g.tailRow = cfg.KVHeads * g.tailHead
	B := cfg.BlockTokens
	if B == 0 {
		B = DefaultBlockTokens
	}
	unit := 1  // lcm of the KIVI key groups
	split := 1 // lcm of the key groups that B divides and can split evenly
	for i := range g.layers {
		sp := cfg.Spec
		if o, ok := cfg.LayerSpecs[i]; ok {
			sp = o
		}
		if k, v := sp.K.Type.entry(), sp.V.Type.entry(); k.Row == nil && k.Key == nil || v.Row == nil && v.Value == nil {
			return nil, fmt.Errorf("kv: config: layer %d has no valid cache type (%q/%q; set Config.Spec, e.g. with ParseSpec)", i, sp.K.Type, sp.V.Type)
		}
		if sp.Sinks < 0 {
			return nil, fmt.Errorf("kv: config: layer %d: sinks=%d is negative", i, sp.Sinks)
		}
		c, err := codecsFor(sp, d)
		if err != nil {
			return nil, fmt.Errorf("kv: config: layer %d: %w", i, err)
		}
		if err := validate(c); err != nil {
			return nil, fmt.Errorf("kv: config: layer %d spec %v: %w", i, sp, err)
		}
		ly := &g.layers[i]
		ly.spec, ly.sideCodecs = sp, c
		if sp.K.PreRoPE && c.kChan != nil {
			// Sizes do not depend on the rotation: BytesPerToken takes a Config
			// without RoPE; New refuses it (needsRoPE).
			if sp.K.G > quant.MaxRoPEBlock || (cfg.RoPE != nil && cfg.RoPE.Dims() > d) {
				return nil, fmt.Errorf("kv: config: layer %d spec %v: keys before RoPE need key blocks of at most %d tokens (g=%d) and a RoPE of at most the head size %d", i, sp, quant.MaxRoPEBlock, sp.K.G, d)
			}
			ly.rope, ly.preRoPE = cfg.RoPE, true
		}
		if !lossless(sp.K.Type) {
			ly.sinksK = sp.Sinks
		}
		if !lossless(sp.V.Type) {
			ly.sinksV = sp.Sinks
		}
		g.workK = g.workK || c.kChan != nil
		g.workV = g.workV || c.r > 0 || c.vChan != nil
		if c.vChan != nil { // value blocks are never split: B becomes a multiple of G
			unit = lcm(unit, c.vG)
			if unit > MaxBlockTokens {
				return nil, fmt.Errorf("kv: config: the per-channel value blocks of the layers need blocks of a multiple of %d tokens, more than %d", unit, MaxBlockTokens)
			}
			if B%c.vG != 0 {
				split = MaxBlockTokens + 1
			}
		}
		if c.kChan != nil {
			unit = lcm(unit, c.kG)
			if unit > MaxBlockTokens {
				return nil, fmt.Errorf("kv: config: the KIVI key groups of the layers need blocks of a multiple of %d tokens, more than %d", unit, MaxBlockTokens)
			}
			if c.kG > B && c.kG%B == 0 && c.kChan.BlockBytes(c.kG, d)%(c.kG/B) == 0 {
				split = lcm(split, c.kG)
			} else if B%c.kG != 0 {
				split = MaxBlockTokens + 1 // this group cannot be split over blocks of B
			}
		}
	}
	if split > MaxBlockTokens {
		B = (B + unit - 1) / unit * unit
		split = 1
	}
	if B > MaxBlockTokens {
		return nil, fmt.Errorf("kv: config: %d tokens per block (after rounding to the KIVI groups) exceeds %d", B, MaxBlockTokens)
	}
	g.B, g.U = B, lcm(B, split)
	for i := range g.layers {
		ly := &g.layers[i]
		if ly.vChan != nil {
			ly.vBlkBytes = ly.vChan.BlockBytes(ly.vG, d)
		} else {
			ly.vRowBytes = ly.vRow.RowBytes(d)
		}
		ly.vHeadStride = ly.vBytes(B)
		if ly.kChan != nil {
			ly.kBlkBytes = ly.kChan.BlockBytes(ly.kG, d)
			ly.kSplit = ly.kG > B
		} else {
			ly.kRowBytes = ly.kRow.RowBytes(d)
		}
		ly.kHeadStride = ly.kBytes(B)
		ly.bytes = cfg.KVHeads * (ly.kHeadStride + ly.vHeadStride)
	}
	g.groups = g.groupLayers()
	for gi := range g.groups {
		gr := &g.groups[gi]
		off := 0
		for _, i := range gr.layers {
			ly := &g.layers[i]
			ly.grp, ly.inGrp = gi, len(gr.pieces)/(2*cfg.KVHeads)
			ly.kOff = off
			ly.vOff = off + cfg.KVHeads*ly.kHeadStride
			off += ly.bytes
			for h := range cfg.KVHeads {
				gr.pieces = append(gr.pieces, piece{ly.kOff + h*ly.kHeadStride, ly.kHeadStride})
			}
			for h := range cfg.KVHeads {
				gr.pieces = append(gr.pieces, piece{ly.vOff + h*ly.vHeadStride, ly.vHeadStride})
			}
		}
		g.blockBytes = off // the same for every group (groupLayers)
	}
	g.span = (SpanTokens + unit - 1) / unit * unit
	g.E = max(1, g.span/B)
	for i := range g.layers {
		k, v := g.spanHeads(&g.layers[i])
		g.gathSpan = max(g.gathSpan, cfg.KVHeads*(k+v))
	}
	if g.blockBytes > MaxBlockBytes {
		return nil, fmt.Errorf("kv: config: one block would take %d bytes (%d tokens × %d layers), more than %d", g.blockBytes, B, len(g.groups[0].layers), MaxBlockBytes)
	}
	if cfg.BudgetBytes > 0 && cfg.BudgetBytes < int64(g.tokenBlockBytes()) {
		return nil, fmt.Errorf("kv: config: budget of %d bytes is smaller than one block of every layer (%d bytes = %d tokens × %d layers)", cfg.BudgetBytes, g.tokenBlockBytes(), B, cfg.Layers)
	}
	return g, nil
}

// kBytes is the key bytes of n tokens of layer ly starting at a block boundary (for
// KIVI keys at a block or key group boundary, n a multiple of B or of G; see layer).
func (ly *layer) kBytes(n int) int {
	if ly.kChan != nil {
		return n * ly.kBlkBytes / ly.kG
	}
	return n * ly.kRowBytes
}

// vBytes is the value bytes of n tokens of layer ly starting at a block boundary (n
// a multiple of the value blocks' G where values are stored per channel).
func (ly *layer) vBytes(n int) int {
	if ly.vChan != nil {
		return n / ly.vG * ly.vBlkBytes
	}
	return n * ly.vRowBytes
}

// unitEnd is the end of the prefix unit of block i (see geometry.U): the position
// up to which the tokens decide its bytes.
func (g *geometry) unitEnd(i int) int { return (i*g.B/g.U + 1) * g.U }

// unitBlocks is the number of leading blocks of a sequence of n tokens whose units
// are complete: the blocks that may be registered as prefix blocks.
func (g *geometry) unitBlocks(n int) int { return n / g.U * g.U / g.B }

// pieces is every group's block layout, for the pool.
func (g *geometry) pieces() [][]piece {
	ps := make([][]piece, len(g.groups))
	for i := range g.groups {
		ps[i] = g.groups[i].pieces
	}
	return ps
}

// tokenBlockBytes is the memory of B tokens of every layer: one block per group.
func (g *geometry) tokenBlockBytes() int { return len(g.groups) * g.blockBytes }

// groupLayers partitions the layers into groups of one window each, all of the same
// size: the layers of each window in order, cut into runs of the greatest common
// divisor of the windows' layer counts (see group). Blocks have one size, so when
// per-layer specs make those groups' bytes differ, every layer forms one group
// instead, whose blocks are kept whole (its window layers then keep the history).
func (g *geometry) groupLayers() []group {
	cfg := g.cfg
	var wins []int // windows in order of first appearance
	byWin := map[int][]int{}
	for l := range cfg.Layers {
		w := 0
		if cfg.Windows != nil {
			w = cfg.Windows[l]
		}
		if _, ok := byWin[w]; !ok {
			wins = append(wins, w)
		}
		byWin[w] = append(byWin[w], l)
	}
	k := 0
	for _, w := range wins {
		k = gcd(k, len(byWin[w]))
	}
	var gs []group
	for _, w := range wins {
		for ls := byWin[w]; len(ls) > 0; ls = ls[k:] {
			gs = append(gs, group{window: w, layers: ls[:k:k]})
		}
	}
	bytes := func(gr group) int {
		n := 0
		for _, l := range gr.layers {
			n += g.layers[l].bytes
		}
		return n
	}
	for _, gr := range gs[1:] {
		if bytes(gr) != bytes(gs[0]) {
			all := group{layers: make([]int, cfg.Layers)}
			for l := range all.layers {
				all.layers[l] = l
			}
			return []group{all}
		}
	}
	return gs
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// needsRoPE reports the first layer that stores keys before RoPE without a
// Config.RoPE to rotate them, which a Store cannot serve.
func (g *geometry) needsRoPE() error {
	for i := range g.layers {
		if ly := &g.layers[i]; ly.preRoPE && ly.rope == nil {
			return fmt.Errorf("kv: config: layer %d spec %v stores keys before RoPE: set Config.RoPE (the model's rotary embedding)", i, ly.spec)
		}
	}
	return nil
}

// validate asks codecs that can tell whether their parameters are usable.
func validate(c sideCodecs) error {
	type validator interface{ Validate() error }
	for _, x := range []any{c.kRow, c.kChan, c.vRow, c.vChan} {
		if v, ok := x.(validator); ok {
			if err := v.Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}

// BytesPerToken is the steady-state storage of one token across all layers, keys and
// values, in bytes: codes, scales and zeros as laid out by the codecs (a KIVI key
// block's bytes divided by its G tokens), as if every layer kept the whole history
// (SteadyBytes counts what windows free). It excludes each sequence's fixed
// full-precision tail (sinks, open key block, value residual), which Usage and
// PoolStats report separately.
func BytesPerToken(cfg Config) (float64, error) {
	g, err := newGeometry(cfg)
	if err != nil {
		return 0, err
	}
	return float64(g.tokenBlockBytes()) / float64(g.B), nil
}

// SteadyBytes is the memory a sequence of n tokens holds in the steady state of
// decoding, right after the Grow of its n-th token: per group ⌈n/B⌉ blocks, or for
// a group with window w those holding positions from n − w on (at most w + B tokens'
// worth, see group), plus its tail (SteadyTail): per layer the full-precision rings at their steady size (G key
// rows for KIVI keys, r−1 value rows for KIVI values) and the sink rows of lossy
// sides, and one work row per side that has rings. It is exact once n > max(G, r)
// on a sequence that decodes token by token, and an upper bound for shorter
// sequences; a step of m tokens holds m work rows per such side (for one layer at a
// time) until the next Grow. Room for copies of spans whose blocks are scattered
// (PoolStats.GatherBytes) comes on top; it is 0 while a sequence's blocks of each
// span are adjacent, as the pool places them when it has room.
func SteadyBytes(cfg Config, n int) (int64, error) {
	g, err := newGeometry(cfg)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("kv: steady bytes of %d tokens", n)
	}
	if n == 0 {
		return 0, nil
	}
	blocks := 0
	for _, gr := range g.groups {
		blocks += g.steadyBlocks(gr.window, n)
	}
	return int64(blocks)*int64(g.blockBytes) + g.steadyTail().Bytes, nil
}

// SteadyLayerTokens is, per layer, the token slots of the blocks a sequence of n
// tokens holds in the steady state of decoding (as SteadyBytes counts them): ⌈n/B⌉·B
// for a layer that sees the whole history, at most its window plus B for a layer
// with an attention window (Config.Windows).
func SteadyLayerTokens(cfg Config, n int) ([]int, error) {
	g, err := newGeometry(cfg)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("kv: steady tokens of %d tokens", n)
	}
	out := make([]int, cfg.Layers)
	for l := range out {
		out[l] = g.steadyBlocks(g.groups[g.layers[l].grp].window, n) * g.B
	}
	return out, nil
}

// steadyBlocks is the blocks a group with window w (0: the whole history) holds
// of a sequence of n tokens right after the Grow of its n-th token: ⌈n/B⌉ less
// those that Grow's slide released before the query at position n−1 (outOfWindow).
func (g *geometry) steadyBlocks(w, n int) int {
	return (n+g.B-1)/g.B - g.outOfWindow(w, n-1)
}

// outOfWindow is the number of leading blocks, whole prefix units of them, that lie
// wholly before the window w of a query at position q: no query from q on reads
// them (0 for w = 0, the whole history).
func (g *geometry) outOfWindow(w, q int) int {
	if w == 0 {
		return 0
	}
	return g.unitBlocks(max(0, q-w+1))
}

// Tail is what a decoding sequence holds beyond its blocks in the steady state: rows
// kept in full precision, stored in the tail codec, summed over layers.
type Tail struct {
	Codec     string `json:"codec"`      // codec of the rows, e.g. "f16"
	KeyRows   int    `json:"key_rows"`   // keys of the unfinished KIVI key group (capacity G per KIVI-key layer)
	ValueRows int    `json:"value_rows"` // KIVI value residual (r−1 per KIVI-value layer), unfinished value block (G−1 per layer of values per channel)
	SinkRows  int    `json:"sink_rows"`  // sink rows of lossy sides (keys and values)
	WorkRows  int    `json:"work_rows"`  // the step's rows: one per side that has rings
	RowBytes  int    `json:"row_bytes"`  // bytes of one row: one token's keys or values of one layer
	Bytes     int64  `json:"bytes"`      // all rows × RowBytes
}

// SteadyTail is the tail of every sequence of cfg in the steady state of decoding
// (SteadyBytes minus the blocks).
func SteadyTail(cfg Config) (Tail, error) {
	g, err := newGeometry(cfg)
	if err != nil {
		return Tail{}, err
	}
	return g.steadyTail(), nil
}

// workSides is the number of sides (keys, values) whose step rows pass through a
// sequence's work area: the work area takes that many rows per token of a step.
func (g *geometry) workSides() int {
	n := 0
	if g.workK {
		n++
	}
	if g.workV {
		n++
	}
	return n
}

func (g *geometry) steadyTail() Tail {
	t := Tail{Codec: g.tail.Name(), RowBytes: g.tailRow, WorkRows: g.workSides()}
	for i := range g.layers {
		ly := &g.layers[i]
		if ly.hasKTail() {
			t.KeyRows += ly.kSteady()
		}
		if ly.hasVTail() {
			t.ValueRows += ly.vSteady()
		}
		t.SinkRows += ly.sinksK + ly.sinksV
	}
	t.Bytes = int64(t.KeyRows+t.ValueRows+t.SinkRows+t.WorkRows) * int64(t.RowBytes)
	return t
}

// F16BytesPerToken is what an f16 cache of the same geometry stores per token.
func F16BytesPerToken(cfg Config) float64 {
	return float64(cfg.Layers * 2 * cfg.KVHeads * cfg.HeadDim * 2)
}

// CompressionVsF16 is F16BytesPerToken / BytesPerToken: how many times fewer bytes
// per token the configured cache stores than an f16 cache, tails excluded.
func CompressionVsF16(cfg Config) (float64, error) {
	b, err := BytesPerToken(cfg)
	if err != nil {
		return 0, err
	}
	return F16BytesPerToken(cfg) / b, nil
}

// kTailStart and vTailStart are the first positions whose keys (values) a layer's
// ring holds between steps, for a sequence of p0 tokens: the keys of p0's unfinished
// KIVI block, [p0 − p0 mod G, p0), and the values of the r−1 tokens before p0.
func (ly *layer) kTailStart(p0 int) int {
	if ly.kChan == nil {
		return p0
	}
	return p0 - p0%ly.kG
}

func (ly *layer) vTailStart(p0 int) int {
	if ly.vChan != nil {
		return p0 - p0%ly.vG
	}
	if ly.r == 0 {
		return p0
	}
	return max(0, min(p0, p0-ly.r+1))
}

func (ly *layer) hasKTail() bool { return ly.kChan != nil }
func (ly *layer) hasVTail() bool { return ly.r > 0 || ly.vChan != nil }

// kSteady and vSteady are a ring's capacity once the sequence is long enough: G keys
// (it holds at most G−1, the unfinished key block's, but a capacity of G keeps each
// key block's rows contiguous: attention reads them in one span, see Append), r−1
// values.
func (ly *layer) kSteady() int { return ly.kG }
func (ly *layer) vSteady() int {
	if ly.vChan != nil {
		return ly.vG - 1
	}
	return max(0, ly.r-1)
}

var errNotExact = errors.New("full-precision rows no longer held")
