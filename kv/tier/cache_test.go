package tier

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kvq/engine"
	"kvq/kv"
	"kvq/model"
)

const testB = 16 // tokens per block in these tests

func newStore(t testing.TB, budget int64) *kv.Store { return newStoreSpec(t, "q8", budget) }

func newStoreSpec(t testing.TB, spec string, budget int64) *kv.Store {
	t.Helper()
	st, err := kv.New(kv.Config{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Spec: kv.MustParseSpec(spec),
		BlockTokens: testB, BudgetBytes: budget, ModelFingerprint: "tier-test"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// compute runs toks through a sequence of st in one step, with keys and values a
// function of (position, token), then drops it: its full blocks are registered.
func compute(t testing.TB, st *kv.Store, toks []int32) {
	t.Helper()
	id, err := st.NewSeq()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Grow(id, toks); err != nil {
		t.Fatal(err)
	}
	cfg := st.Config()
	row := cfg.KVHeads * cfg.HeadDim
	k, v := make([]float32, len(toks)*row), make([]float32, len(toks)*row)
	for i, tok := range toks {
		r := rand.New(rand.NewPCG(uint64(i), uint64(tok)))
		for j := range row {
			k[i*row+j], v[i*row+j] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
	}
	q := make([]float32, len(toks)*cfg.Heads*cfg.HeadDim)
	out := make([]float32, len(q))
	for l := range cfg.Layers {
		if err := st.Append(l, id, k, v); err != nil {
			t.Fatal(err)
		}
		if err := st.Attend(l, id, q, out); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Drop(id); err != nil {
		t.Fatal(err)
	}
}

func prompt(n int, salt int32) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)*13 + salt
	}
	return p
}

func newCache(t testing.TB, st *kv.Store, log *slog.Logger, tiers ...Tier) *Cache {
	t.Helper()
	c := New(st, tiers, Options{Timeout: 2 * time.Second, Backoff: 50 * time.Millisecond, Logger: log})
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// diskWith opens a disk tier in dir holding the blocks of toks, computed by a
// cache of newStore over it and written behind.
func diskWith(t testing.TB, dir string, toks []int32) *Disk {
	t.Helper()
	disk, err := OpenDisk(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	w := newCache(t, newStore(t, 0), nil, disk)
	compute(t, w.Store, toks)
	flush(t, w)
	return disk
}

func flush(t testing.TB, c *Cache) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func openRedis(t testing.TB, url string) *Redis {
	t.Helper()
	r, err := OpenRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two stores on one Redis: blocks computed by one are adopted by the other, the
// same bytes, with the record overhead stated.
func TestCacheSharesThroughRedis(t *testing.T) { cacheSharesThrough(t, startRedis(t).url()) }

// cacheSharesThrough checks two stores sharing blocks through the Redis tier at url
// (a fresh database).
func cacheSharesThrough(t *testing.T, url string) {
	a := newCache(t, newStore(t, 0), nil, openRedis(t, url))
	b := newCache(t, newStore(t, 0), nil, openRedis(t, url))
	p := prompt(5*testB+3, 1)
	compute(t, a.Store, p)
	flush(t, a)
	sa, _ := a.Stats()
	blocks := int64(5)
	recBytes := int64(a.BlockBytes() + RecordOverhead(testB))
	if sa[0].BytesWritten != blocks*recBytes || sa[0].PutErrors != 0 {
		t.Fatalf("written %+v, want %d records of %d bytes", sa[0], blocks, recBytes)
	}
	if got := b.Prefetch(context.Background(), p); got != 5*testB {
		t.Fatalf("Prefetch brought %d tokens, want %d", got, 5*testB)
	}
	id, cached, err := b.NewSeqWithPrefix(p[:len(p)-1])
	if err != nil || cached != 5*testB {
		t.Fatalf("adopted %d tokens (err %v)", cached, err)
	}
	_ = b.Drop(id)
	sb, _ := b.Stats()
	if sb[0].Hits != blocks || sb[0].BytesRead != blocks*recBytes || sb[0].Misses != 0 {
		t.Errorf("reader stats %+v", sb[0])
	}
	// The adopted blocks are the computed ones, byte for byte.
	parent := a.RootHash()
	for i := range 5 {
		h := kv.BlockHash(parent, p[i*testB:(i+1)*testB])
		ba, _ := a.ExportPrefixBlock(h)
		bb, ok := b.ExportPrefixBlock(h)
		if !ok || !bytes.Equal(ba.Bytes, bb.Bytes) {
			t.Fatalf("block %d differs after the trip through Redis", i)
		}
		parent = h
	}
	// Nothing more to fetch: the blocks are in memory.
	if got := b.Prefetch(context.Background(), p); got != 0 {
		t.Errorf("second Prefetch brought %d tokens", got)
	}
	// Imported blocks are not written back.
	flush(t, b)
	if sb, _ := b.Stats(); sb[0].Puts != 0 {
		t.Errorf("imported blocks written back: %d puts", sb[0].Puts)
	}
}

// A cache whose layers keep rows beside the blocks (a KIVI value window, sinks)
// ships them in the records: the other store adopts the prefix with them.
func TestCacheSideRows(t *testing.T) {
	for _, spec := range []string{"kivi4/kivi2:r=8", "q8:sinks=4"} {
		t.Run(spec, func(t *testing.T) {
			disk, err := OpenDisk(t.TempDir(), 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			a := newCache(t, newStoreSpec(t, spec, 0), nil, disk)
			B := a.Config().BlockTokens
			_, U := a.BlockTokenRange(0) // blocks go a unit at a time: a KIVI key group of 32 spans two
			p := prompt(3*U+1, 17)
			compute(t, a.Store, p)
			flush(t, a)
			b := newCache(t, newStoreSpec(t, spec, 0), nil, disk)
			if got := b.Prefetch(context.Background(), p); got != 3*U {
				s, _ := b.Stats()
				t.Fatalf("brought %d tokens, want %d: %+v", got, 3*U, s[0])
			}
			id, cached, err := b.NewSeqWithPrefix(p[:len(p)-1])
			if err != nil || cached != 3*U {
				t.Fatalf("adopted %d tokens (err %v), want %d", cached, err, 3*U)
			}
			_ = b.Drop(id)
			if s, _ := b.Stats(); s[0].BytesRead <= int64(3*U/B)*int64(b.BlockBytes()+RecordOverhead(U)) {
				t.Errorf("read %d bytes: no side rows in the records", s[0].BytesRead)
			}
		})
	}
}

// Tiers are searched in order, each from where the previous one stopped.
func TestCacheTierOrder(t *testing.T) {
	url := startRedis(t).url()
	disk, err := OpenDisk(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	p := prompt(4*testB+1, 7)
	w1 := newCache(t, newStore(t, 0), nil, disk)
	compute(t, w1.Store, p[:2*testB]) // blocks 0, 1 on disk
	flush(t, w1)
	w2 := newCache(t, newStore(t, 0), nil, openRedis(t, url))
	compute(t, w2.Store, p) // blocks 0–3 in Redis
	flush(t, w2)

	r := newCache(t, newStore(t, 0), nil, disk, openRedis(t, url))
	if got := r.Prefetch(context.Background(), p); got != 4*testB {
		t.Fatalf("brought %d tokens, want %d", got, 4*testB)
	}
	st, _ := r.Stats()
	if st[0].Hits != 2 || st[0].Misses != 1 || st[1].Hits != 2 || st[1].Misses != 0 {
		t.Errorf("disk %+v, redis %+v: want 2 hits then a miss on disk, 2 hits in Redis", st[0], st[1])
	}
}

// lockedLog collects log output safely.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Redis stopped: lookups fail fast, nothing is adopted, the failure is logged once
// and counted; once Redis is back (empty), the tier is used again.
func TestCacheRedisDownAndBack(t *testing.T) {
	srv := startRedis(t)
	var logs lockedLog
	log := slog.New(slog.NewTextHandler(&logs, nil))
	a := newCache(t, newStore(t, 0), log, openRedis(t, srv.url()))
	b := newCache(t, newStore(t, 0), log, openRedis(t, srv.url()))
	p := prompt(3*testB+1, 3)
	compute(t, a.Store, p)
	flush(t, a)
	srv.stop()
	for i := range 3 {
		t0 := time.Now()
		if got := b.Prefetch(context.Background(), p); got != 0 {
			t.Fatalf("Redis down: brought %d tokens", got)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("lookup %d with Redis down took %v", i, d)
		}
		time.Sleep(60 * time.Millisecond) // past the backoff: the next lookup tries again
	}
	st, _ := b.Stats()
	if st[0].GetErrors != 3 || st[0].Hits != 0 {
		t.Errorf("Redis down: %+v", st[0])
	}
	if n := strings.Count(logs.String(), "kv tier failing"); n != 1 {
		t.Errorf("failure logged %d times, want once: %s", n, logs.String())
	}
	// Blocks computed while Redis is down are not written (counted as errors).
	p2 := prompt(2*testB+1, 99)
	compute(t, a.Store, p2)
	flush(t, a)
	if sa, _ := a.Stats(); sa[0].PutErrors == 0 {
		t.Errorf("writes to a stopped Redis not counted: %+v", sa[0])
	}

	srv.start(t)
	time.Sleep(60 * time.Millisecond)
	p3 := prompt(2*testB+1, 500)
	compute(t, a.Store, p3)
	flush(t, a)
	if got := b.Prefetch(context.Background(), p3); got != 2*testB {
		t.Fatalf("Redis back: brought %d tokens, want %d", got, 2*testB)
	}
	if !strings.Contains(logs.String(), "kv tier works again") {
		t.Errorf("recovery not logged: %s", logs.String())
	}
}

// Redis full (a memory bound, no eviction): writes are refused and counted, what
// fits is still shared, and nothing fails.
func TestCacheRedisFull(t *testing.T) {
	srv := startRedis(t, "--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	big := func() *kv.Store { // blocks of about 135 KB: a few fill the server
		st, err := kv.New(kv.Config{Layers: 4, Heads: 8, KVHeads: 8, HeadDim: 128, Spec: kv.MustParseSpec("q8"),
			BlockTokens: testB, ModelFingerprint: "tier-test"})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var logs lockedLog
	a := newCache(t, big(), slog.New(slog.NewTextHandler(&logs, nil)), openRedis(t, srv.url()))
	b := newCache(t, big(), slog.New(slog.DiscardHandler), openRedis(t, srv.url()))
	const blocks = 24 // about 3 MB of records
	p := prompt(blocks*testB+1, 2)
	compute(t, a.Store, p)
	flush(t, a)
	sa, _ := a.Stats()
	if sa[0].PutErrors == 0 || sa[0].BytesWritten == 0 || sa[0].Puts != blocks {
		t.Fatalf("writer stats %+v: want some of %d records stored, then refusals, each block tried", sa[0], blocks)
	}
	// A refusal is not an outage: the tier is not left alone, the warning is given once.
	if a.tiers[0].down() || strings.Count(logs.String(), "refuses writes") != 1 || strings.Contains(logs.String(), "failing") {
		t.Errorf("after refused writes: down %v, logs %s", a.tiers[0].down(), logs.String())
	}
	got := b.Prefetch(context.Background(), p)
	if got == 0 || got >= blocks*testB {
		t.Errorf("brought %d tokens of %d: want the run the server kept", got, blocks*testB)
	}
	if sb, _ := b.Stats(); sb[0].GetErrors != 0 || sb[0].Misses != 1 {
		t.Errorf("reader stats %+v", sb[0])
	}
}

// slowTier answers after delay, or when ctx ends.
type slowTier struct {
	Tier
	delay time.Duration
}

func (s slowTier) Get(ctx context.Context, keys []uint64) ([][]byte, error) {
	select {
	case <-time.After(s.delay):
		return s.Tier.Get(ctx, keys)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A tier slower than the timeout costs the timeout, not its delay.
func TestCacheSlowTier(t *testing.T) {
	p := prompt(2*testB+1, 5)
	disk := diskWith(t, t.TempDir(), p)
	r := New(newStore(t, 0), []Tier{slowTier{disk, 5 * time.Second}}, Options{Timeout: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close(context.Background())
	t0 := time.Now()
	if got := r.Prefetch(context.Background(), p); got != 0 {
		t.Errorf("brought %d tokens from a tier slower than the timeout", got)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("lookup took %v with a 100ms timeout", d)
	}
	if st, _ := r.Stats(); st[0].GetErrors != 1 {
		t.Errorf("timeout not counted: %+v", st[0])
	}
}

// A corrupted record on disk is discarded: the blocks before it are adopted, it and
// those after are computed; the block, once computed again, is rewritten.
func TestCacheCorruptRecord(t *testing.T) {
	dir := t.TempDir()
	p := prompt(3*testB+1, 11)
	disk := diskWith(t, dir, p)
	h0 := kv.BlockHash(newStore(t, 0).RootHash(), p[:testB])
	h1 := kv.BlockHash(h0, p[testB:2*testB])
	path := filepath.Join(dir, keyHex(h1)+diskExt)
	rec, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec[len(rec)/2] ^= 1
	if err := os.WriteFile(path, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	r := newCache(t, newStore(t, 0), slog.New(slog.NewTextHandler(&logs, nil)), disk)
	if got := r.Prefetch(context.Background(), p); got != testB {
		t.Fatalf("brought %d tokens, want the %d before the corrupt record", got, testB)
	}
	s, _ := r.Stats()
	if s[0].Corrupt != 1 || s[0].Hits != 1 {
		t.Errorf("stats %+v", s[0])
	}
	if !strings.Contains(logs.String(), "record discarded") || !strings.Contains(logs.String(), "checksum") {
		t.Errorf("corrupt record not logged: %s", logs.String())
	}
	// r computes the rest itself and writes its blocks behind: the record is good again.
	compute(t, r.Store, p)
	flush(t, r)
	fresh := newCache(t, newStore(t, 0), nil, disk)
	if got := fresh.Prefetch(context.Background(), p); got != 3*testB {
		t.Errorf("after rewrite: brought %d tokens, want %d", got, 3*testB)
	}
}

// blockingTier holds every Put until release is closed.
type blockingTier struct {
	Tier
	release chan struct{}
}

func (b blockingTier) Put(ctx context.Context, key uint64, rec []byte) error {
	<-b.release
	return b.Tier.Put(ctx, key, rec)
}

// Write-behind never blocks the cache: with the tier stuck, registering blocks
// returns at once and what does not fit the queue is dropped and counted.
func TestCacheWriteBehindNeverBlocks(t *testing.T) {
	disk, err := OpenDisk(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	bt := blockingTier{disk, make(chan struct{})}
	c := New(newStore(t, 0), []Tier{bt}, Options{WriteQueue: 2})
	done := make(chan struct{})
	go func() {
		compute(t, c.Store, prompt(10*testB, 1)) // 10 blocks: 1 in flight, 2 queued
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("computing blocked on a stuck tier")
	}
	if _, dropped := c.Stats(); dropped < 7 {
		t.Errorf("%d blocks dropped, want ≥ 7", dropped)
	}
	close(bt.release)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.Stats(); st[0].Puts < 2 || st[0].Puts > 3 {
		t.Errorf("%d puts after release, want the 2–3 queued or in flight", st[0].Puts)
	}
}

// A full cache (every block in use) adopts nothing and counts it; the request
// computes its tokens.
func TestCacheNoRoom(t *testing.T) {
	p := prompt(2*testB+1, 21)
	disk := diskWith(t, t.TempDir(), p)
	st := newStore(t, 2*int64(newStore(t, 0).BlockBytes()))
	r := newCache(t, st, nil, disk)
	id, _ := st.NewSeq()
	if err := st.Grow(id, prompt(2*testB, 1000)); err != nil { // both blocks in use
		t.Fatal(err)
	}
	if got := r.Prefetch(context.Background(), p); got != 0 {
		t.Errorf("brought %d tokens into a full cache", got)
	}
	if s, _ := r.Stats(); s[0].NoRoom != 1 {
		t.Errorf("stats %+v", s[0])
	}
}

// With the real model: a request served from blocks another engine wrote to Redis
// gives the same logits, bit for bit, as computing them, and the same greedy text.
func TestModelFromTierIsExact(t *testing.T) {
	url := startRedis(t).url()
	m, err := model.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"q8", "kivi4/kivi2"} { // kivi2 values keep a window: side rows
		t.Run(spec, func(t *testing.T) { modelFromTier(t, m, spec, url) })
	}
}

func modelFromTier(t *testing.T, m *model.Model, spec, url string) {
	cfg, err := m.CacheConfig(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BlockTokens = 32
	mk := func() *Cache {
		st, err := kv.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return newCache(t, st, nil, openRedis(t, url))
	}
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends and her dog. "
	toks := m.Tok.Encode(text+text+"One day", true)
	B := mk().Config().BlockTokens
	cut := (len(toks) - 1) / B * B
	if cut < 2*B {
		t.Fatalf("prompt of %d tokens: want at least two blocks of %d", len(toks), B)
	}
	logits := func(c *Cache, warm bool) []float32 {
		id, n := kv.SeqID(0), 0
		if warm {
			c.Prefetch(context.Background(), toks)
			if id, n, err = c.NewSeqWithPrefix(toks[:len(toks)-1]); err != nil || n != cut {
				t.Fatalf("adopted %d tokens (err %v), want %d", n, err, cut)
			}
		} else {
			if id, err = c.NewSeq(); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Forward(c, []model.Span{{Seq: id, Tokens: toks[:cut]}}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := m.Forward(c, []model.Span{{Seq: id, Tokens: toks[cut:]}})
		if err != nil {
			t.Fatal(err)
		}
		l := append([]float32(nil), out[0]...)
		_ = c.Drop(id)
		return l
	}
	a := mk()
	cold := logits(a, false)
	flush(t, a)
	warm := logits(mk(), true)
	for i := range cold {
		if math.Float32bits(cold[i]) != math.Float32bits(warm[i]) {
			t.Fatalf("logit %d: %g cold, %g from the tier", i, cold[i], warm[i])
		}
	}

	// Through engines: the same greedy text, the tier's tokens counted as cached.
	run := func(c *Cache) engine.Result {
		e, err := engine.New(m, c, engine.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(context.Background())
		s, err := e.Submit(context.Background(), engine.Request{Prompt: toks, MaxTokens: 12})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Wait()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ra := run(mk()) // blocks already in Redis: fetched too
	b := mk()
	rb := run(b)
	if ra.Choices[0].Text != rb.Choices[0].Text || rb.Usage.CachedPromptTokens != cut {
		t.Errorf("engine B: %q with %d cached tokens; engine A: %q", rb.Choices[0].Text, rb.Usage.CachedPromptTokens, ra.Choices[0].Text)
	}
}
