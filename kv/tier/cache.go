package tier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"kvq/kv"
)

// Defaults of Options fields.
const (
	DefaultTimeout    = 500 * time.Millisecond
	DefaultWriteQueue = 1024
	DefaultBackoff    = time.Second
)

// writeTimeout bounds one record's write to one tier.
const writeTimeout = 5 * time.Second

// fetchBatch is the number of keys one Get asks a tier for: few round trips, little
// fetched past the first missing block.
const fetchBatch = 8

// Options tune a Cache. The zero value selects the defaults.
type Options struct {
	// Timeout bounds the lookup of one prompt in all tiers; what has not arrived by
	// then is computed.
	Timeout time.Duration
	// WriteQueue is the number of blocks waiting to be written behind; blocks
	// registered while it is full are not written (counted as dropped).
	WriteQueue int
	// Backoff is how long a tier that failed is left alone before it is tried again.
	Backoff time.Duration
	// Logger receives one warning when a tier starts failing and one note when it
	// works again (default: slog.Default()).
	Logger *slog.Logger
}

// Cache is a kv.Store whose full prefix blocks are also kept in tiers. It is used
// where the Store is (an engine takes it as its cache); Prefetch, called before a
// request is admitted, brings the request's blocks from the tiers into the Store,
// and every block the Store registers is written behind to every tier.
type Cache struct {
	*kv.Store
	tiers []*tierState
	opts  Options
	log   *slog.Logger

	queue   chan uint64 // hashes of blocks to write behind
	stop    chan struct{}
	stopped chan struct{}
	closed  atomic.Bool
	pending atomic.Int64 // blocks queued or being written
	dropped atomic.Int64 // blocks not queued: queue full
	once    sync.Once
}

// tierState is one tier with its counters.
type tierState struct {
	t                                 Tier
	hits, misses                      atomic.Int64 // blocks adopted; lookups ended by a block the tier lacks
	bytesRead, bytesWritten           atomic.Int64 // record bytes
	getErrs, putErrs, corrupt, noRoom atomic.Int64
	getNanos, gets                    atomic.Int64 // Get latency
	putNanos, puts                    atomic.Int64
	downUntil                         atomic.Int64 // unix nanoseconds; tier skipped before
	failing, warnedCorrupt            atomic.Bool
	warnedRefused                     atomic.Bool
}

// New makes st's blocks shared with tiers, searched in the order given. The Cache
// owns the tiers (Close closes them).
func New(st *kv.Store, tiers []Tier, opts Options) *Cache {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.WriteQueue <= 0 {
		opts.WriteQueue = DefaultWriteQueue
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	c := &Cache{Store: st, opts: opts, log: opts.Logger,
		queue: make(chan uint64, opts.WriteQueue), stop: make(chan struct{}), stopped: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	for _, t := range tiers {
		c.tiers = append(c.tiers, &tierState{t: t})
	}
	go c.writeBehind()
	st.OnRegister(c.offer)
	return c
}

// Tiers returns the tiers' names, in search order.
func (c *Cache) Tiers() []string {
	names := make([]string, len(c.tiers))
	for i, ts := range c.tiers {
		names[i] = ts.t.Name()
	}
	return names
}

// offer queues a block just registered for writing; it never blocks (it runs with
// the Store locked).
func (c *Cache) offer(hash uint64) {
	c.pending.Add(1)
	select {
	case c.queue <- hash:
	default:
		c.pending.Add(-1)
		c.dropped.Add(1)
	}
}

// Prefetch brings into the Store the blocks that begin tokens and are not in memory,
// as far as the tiers hold a run of them, within Options.Timeout (or ctx). It returns
// the number of tokens brought in. The blocks are cached, not pinned: adopting them
// is NewSeqWithPrefix's work, as for blocks computed here. At most the blocks before
// the last token are fetched (a request computes at least its last token). Safe to
// call from any goroutine, concurrently with the Store's use.
func (c *Cache) Prefetch(ctx context.Context, tokens []int32) int {
	if len(c.tiers) == 0 || !c.PrefixCaching() || c.closed.Load() {
		return 0
	}
	B := c.Config().BlockTokens
	full := 0 // blocks whose hashes name tokens before the last
	for _, hi := c.BlockTokenRange(full); hi <= len(tokens)-1; _, hi = c.BlockTokenRange(full) {
		full++
	}
	if full <= 0 {
		return 0
	}
	hashes := make([]uint64, full)
	parent := c.RootHash()
	start := -1
	for i := range full {
		lo, hi := c.BlockTokenRange(i)
		hashes[i] = kv.BlockHash(parent, tokens[lo:hi])
		parent = hashes[i]
		if start < 0 && !c.HasBlock(hashes[i]) {
			start = i
		}
	}
	if start < 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	w := want{root: c.RootHash(), blockBytes: c.Layout().BlockBytes} // every layer group's block
	next := start
	for _, ts := range c.tiers {
		for next < full && !ts.down() {
			keys := hashes[next:min(next+fetchBatch, full)]
			t0 := time.Now()
			recs, err := ts.t.Get(ctx, keys)
			ts.getNanos.Add(int64(time.Since(t0)))
			ts.gets.Add(1)
			if err != nil {
				ts.getErrs.Add(1)
				c.fail(ts, err)
				break
			}
			c.recovered(ts)
			n := c.adopt(ts, recs, hashes, tokens, next, w)
			next += n
			if n < len(keys) {
				break // this tier lacks (or could not give) block next: ask the next tier
			}
		}
		if next == full || ctx.Err() != nil {
			break
		}
	}
	return (next - start) * B
}

// adopt imports recs (the records of hashes[at:]) into the Store in order, stopping
// at the first one missing or unusable, and returns how many it imported.
func (c *Cache) adopt(ts *tierState, recs [][]byte, hashes []uint64, tokens []int32, at int, w want) int {
	for j, rec := range recs {
		i := at + j
		if rec == nil {
			ts.misses.Add(1)
			return j
		}
		lo, hi := c.BlockTokenRange(i)
		w.hash, w.tokens, w.parent, w.index, w.sideBytes = hashes[i], tokens[lo:hi], c.RootHash(), i, c.SideBytes(i)
		if i > 0 {
			w.parent = hashes[i-1]
		}
		blk, err := decodeRecord(rec, w)
		if err != nil {
			ts.corrupt.Add(1)
			c.warnCorrupt(ts, err)
			return j
		}
		if err := c.ImportPrefixBlock(blk); err != nil {
			if errors.Is(err, kv.ErrNoSpace) {
				ts.noRoom.Add(1) // the cache is full of blocks in use: compute
			} else {
				ts.corrupt.Add(1) // passed its checksum, refused by the store
				c.warnCorrupt(ts, err)
			}
			return j
		}
		ts.hits.Add(1)
		ts.bytesRead.Add(int64(len(rec)))
	}
	return len(recs)
}

// writeBehind writes the queued blocks to every tier until Close.
func (c *Cache) writeBehind() {
	defer close(c.stopped)
	var rec []byte
	root := c.RootHash()
	for {
		var h uint64
		select {
		case h = <-c.queue:
		case <-c.stop:
			return
		}
		rec = c.write(h, root, rec)
		c.pending.Add(-1)
	}
}

// write writes block h to every tier that is not backing off; rec is a buffer for
// the record, returned for reuse.
func (c *Cache) write(h, root uint64, rec []byte) []byte {
	blk, ok := c.ExportPrefixBlock(h)
	if !ok {
		return rec // evicted before its turn
	}
	rec = encodeRecord(rec[:0], root, blk)
	for _, ts := range c.tiers {
		if ts.down() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		t0 := time.Now()
		err := ts.t.Put(ctx, h, rec)
		cancel()
		ts.putNanos.Add(int64(time.Since(t0)))
		ts.puts.Add(1)
		if err != nil {
			ts.putErrs.Add(1)
			if errors.Is(err, ErrRefused) {
				c.warnRefused(ts, err) // the tier works: reads go on
			} else {
				c.fail(ts, err)
			}
			continue
		}
		ts.bytesWritten.Add(int64(len(rec)))
	}
	return rec
}

// warnRefused logs the first write ts refused.
func (c *Cache) warnRefused(ts *tierState, err error) {
	if !ts.warnedRefused.Swap(true) {
		c.log.Warn("kv tier refuses writes (full or read-only): blocks are not stored there (further ones are only counted)", "tier", ts.t.Name(), "err", err)
	}
}

// warnCorrupt logs the first record of ts that was discarded.
func (c *Cache) warnCorrupt(ts *tierState, err error) {
	if !ts.warnedCorrupt.Swap(true) {
		c.log.Warn("kv tier: record discarded, its tokens are computed (further ones are only counted)", "tier", ts.t.Name(), "err", err)
	}
}

func (ts *tierState) down() bool { return time.Now().UnixNano() < ts.downUntil.Load() }

// fail leaves ts alone for Options.Backoff and logs the first failure of a run.
func (c *Cache) fail(ts *tierState, err error) {
	ts.downUntil.Store(time.Now().Add(c.opts.Backoff).UnixNano())
	if !ts.failing.Swap(true) {
		c.log.Warn("kv tier failing: its blocks are computed instead until it works again", "tier", ts.t.Name(), "err", err)
	}
}

func (c *Cache) recovered(ts *tierState) {
	if ts.failing.Swap(false) {
		c.log.Info("kv tier works again", "tier", ts.t.Name())
	}
}

// Flush waits until the blocks queued so far have been written (or ctx ends).
func (c *Cache) Flush(ctx context.Context) error {
	for c.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Close stops taking blocks, writes those queued within ctx, and closes the tiers.
func (c *Cache) Close(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		c.closed.Store(true)
		c.OnRegister(nil)
		err = c.Flush(ctx)
		close(c.stop)
		<-c.stopped
		for _, ts := range c.tiers {
			err = errors.Join(err, ts.t.Close())
		}
	})
	return err
}

// Stats are one tier's counters since New.
type Stats struct {
	Tier                    string
	Hits                    int64 // blocks fetched and adopted
	Misses                  int64 // lookups that ended at a block the tier lacks
	BytesRead, BytesWritten int64 // record bytes
	GetErrors, PutErrors    int64 // failed commands (down, slow, full, read-only)
	Corrupt                 int64 // records discarded (checksum, length, version, layout)
	NoRoom                  int64 // records fetched but not adopted: the cache was full
	Gets, Puts              int64
	GetTime, PutTime        time.Duration // summed latency
}

// Stats returns every tier's counters, in search order, and the blocks not written
// because the write queue was full.
func (c *Cache) Stats() ([]Stats, int64) {
	out := make([]Stats, len(c.tiers))
	for i, ts := range c.tiers {
		out[i] = Stats{Tier: ts.t.Name(), Hits: ts.hits.Load(), Misses: ts.misses.Load(),
			BytesRead: ts.bytesRead.Load(), BytesWritten: ts.bytesWritten.Load(),
			GetErrors: ts.getErrs.Load(), PutErrors: ts.putErrs.Load(), Corrupt: ts.corrupt.Load(), NoRoom: ts.noRoom.Load(),
			Gets: ts.gets.Load(), Puts: ts.puts.Load(), GetTime: time.Duration(ts.getNanos.Load()), PutTime: time.Duration(ts.putNanos.Load())}
	}
	return out, c.dropped.Load()
}

// WriteMetrics writes the tiers' counters in the Prometheus text format, one series
// per tier (label tier).
func (c *Cache) WriteMetrics(w io.Writer) {
	st, dropped := c.Stats()
	family := func(name, typ, help string, v func(s Stats) string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, s := range st {
			fmt.Fprintf(w, "%s{tier=%q} %s\n", name, s.Tier, v(s))
		}
	}
	i := func(f func(s Stats) int64) func(Stats) string {
		return func(s Stats) string { return fmt.Sprint(f(s)) }
	}
	family("kvq_kv_tier_hits_total", "counter", "Blocks fetched from a KV tier and adopted instead of computed.", i(func(s Stats) int64 { return s.Hits }))
	family("kvq_kv_tier_misses_total", "counter", "Lookups in a KV tier that ended at a block it does not hold.", i(func(s Stats) int64 { return s.Misses }))
	family("kvq_kv_tier_read_bytes_total", "counter", "Record bytes fetched from a KV tier and adopted.", i(func(s Stats) int64 { return s.BytesRead }))
	family("kvq_kv_tier_written_bytes_total", "counter", "Record bytes written to a KV tier.", i(func(s Stats) int64 { return s.BytesWritten }))
	fmt.Fprintf(w, "# HELP kvq_kv_tier_errors_total KV tier faults, by kind (get, put: the tier failed; corrupt: a record was discarded; no_room: the cache was full). Each only means tokens are computed.\n# TYPE kvq_kv_tier_errors_total counter\n")
	for _, s := range st {
		for _, e := range []struct {
			kind string
			v    int64
		}{{"get", s.GetErrors}, {"put", s.PutErrors}, {"corrupt", s.Corrupt}, {"no_room", s.NoRoom}} {
			fmt.Fprintf(w, "kvq_kv_tier_errors_total{tier=%q,kind=%q} %d\n", s.Tier, e.kind, e.v)
		}
	}
	fmt.Fprintf(w, "# HELP kvq_kv_tier_latency_seconds Time of KV tier commands, by operation (get: one batched lookup; put: one record).\n# TYPE kvq_kv_tier_latency_seconds summary\n")
	for _, s := range st {
		fmt.Fprintf(w, "kvq_kv_tier_latency_seconds_sum{tier=%q,op=\"get\"} %g\nkvq_kv_tier_latency_seconds_count{tier=%q,op=\"get\"} %d\n", s.Tier, s.GetTime.Seconds(), s.Tier, s.Gets)
		fmt.Fprintf(w, "kvq_kv_tier_latency_seconds_sum{tier=%q,op=\"put\"} %g\nkvq_kv_tier_latency_seconds_count{tier=%q,op=\"put\"} %d\n", s.Tier, s.PutTime.Seconds(), s.Tier, s.Puts)
	}
	fmt.Fprintf(w, "# HELP kvq_kv_tier_writes_dropped_total Blocks not written to the KV tiers because the write-behind queue was full.\n# TYPE kvq_kv_tier_writes_dropped_total counter\nkvq_kv_tier_writes_dropped_total %d\n", dropped)
}
