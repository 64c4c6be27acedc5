package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"kvq/internal/workpool"
	"kvq/kv"
	"kvq/linalg"
	"kvq/model"
	"kvq/tokenizer"
)

// request is the scheduler's state of one submitted request. Apart from id, stream,
// submitted and stopCancel (set before it is shared), it is touched only by the
// scheduler goroutine.
type request struct {
	id         uint64
	req        Request
	prompt     []int32
	maxTokens  int
	stream     *Stream
	submitted  time.Time
	stopCancel func() bool

	choices []*choice
	// carrier is the choice whose sequence computes the prompt before it is forked to
	// the choices in unforked; nil once every unfinished choice has its sequence.
	carrier  *choice
	unforked []*choice

	started     bool // admitted at least once
	running     bool
	preemptions int
	cached      int // prompt tokens from the prefix cache at first admission
	firstToken  time.Time
	completion  int // tokens sampled across choices
	ended       bool
	promptLP    []Logprob // with Request.PromptLogprobs: prompt positions done so far
}

// choice is one generated continuation of a request, with its own cache sequence.
type choice struct {
	idx     int
	seq     kv.SeqID
	hasSeq  bool
	fed     int     // tokens of hist held by seq
	hist    []int32 // prompt followed by the generated tokens
	nGen    int
	sampler *model.Sampler
	con     Constraint // nil: unconstrained
	masked  []float32  // logits after con's mask
	dec     *tokenizer.StreamDecoder
	stop    stopper
	finish  string
	last    time.Time // when the previous token was sampled
}

func (c *choice) active() bool { return c.finish == "" }

// need is the number of tokens the choice must feed before its next sample.
func (c *choice) need() int { return len(c.hist) - c.fed }

// newRequest validates req and builds its state.
func (e *Engine) newRequest(req Request) (*request, error) {
	ctx := e.m.Ctx
	if len(req.Prompt) == 0 {
		return nil, fmt.Errorf("%w: empty prompt", ErrBadRequest)
	}
	for i, t := range req.Prompt {
		if t < 0 || int(t) >= e.m.Vocab {
			return nil, fmt.Errorf("%w: prompt token %d is %d, outside the vocabulary of %d", ErrBadRequest, i, t, e.m.Vocab)
		}
	}
	for _, s := range req.Stop {
		if s == "" {
			return nil, fmt.Errorf("%w: empty stop string", ErrBadRequest)
		}
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs {
		return nil, fmt.Errorf("%w: %d top log-probabilities asked, want 0 to %d", ErrBadRequest, req.TopLogprobs, MaxTopLogprobs)
	}
	n := req.N
	if n <= 0 {
		n = 1
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = ctx - len(req.Prompt)
	}
	switch {
	case maxTokens < 1:
		return nil, fmt.Errorf("%w: prompt of %d tokens leaves no room in the model's context of %d", ErrTooLarge, len(req.Prompt), ctx)
	case e.cfg.Window == 0 && len(req.Prompt)+maxTokens > ctx:
		return nil, fmt.Errorf("%w: prompt of %d tokens + %d new tokens exceeds the model's context of %d", ErrTooLarge, len(req.Prompt), maxTokens, ctx)
	}
	if bt := e.blockTokens; e.blocksTotal > 0 {
		// Lower bound: the prompt's blocks once, each choice's own blocks after it.
		prompt, gen := len(req.Prompt), maxTokens
		if w := e.cfg.Window; w > 0 {
			// With a window a sequence holds at most its sinks, the window and one step.
			prompt = min(prompt, e.cfg.Sinks+w+e.cfg.PrefillChunk)
			gen = min(gen, e.cfg.Sinks+w+1)
		}
		need := (prompt+bt-1)/bt + n*((gen+bt-1)/bt)
		if prompt%bt != 0 {
			need-- // the prompt's last block may be the first choice's too
		}
		// Of each B tokens, the layer groups that keep the whole history hold a
		// block (window groups hold less: left out of this lower bound).
		need *= e.wholeGroups()
		if need > e.blocksTotal {
			return nil, fmt.Errorf("%w: %d prompt + %d×%d new tokens need at least %d blocks of %d tokens; the cache budget holds %d", ErrTooLarge, len(req.Prompt), n, maxTokens, need, bt, e.blocksTotal)
		}
		// Each of the n sequences also holds its full-precision tail (KIVI rings,
		// sinks) from the same budget.
		if bytes := int64(need)*e.blockBytes + int64(n)*e.seqTail; e.seqTail > 0 && bytes > e.budget {
			return nil, fmt.Errorf("%w: %d prompt + %d×%d new tokens need at least %d blocks of %d bytes and %d full-precision tails of %d bytes, %d bytes in all; the cache budget is %d bytes",
				ErrTooLarge, len(req.Prompt), n, maxTokens, need, e.blockBytes, n, e.seqTail, bytes, e.budget)
		}
	}
	r := &request{req: req, prompt: slices.Clone(req.Prompt), maxTokens: maxTokens}
	for i := range n {
		sc := req.Sampling
		sc.Seed += uint64(i)
		c := &choice{
			idx:     i,
			hist:    slices.Clone(r.prompt),
			sampler: model.NewSampler(sc),
			con:     newConstraint(req.Constraint),
			dec:     e.m.Tok.NewStreamDecoder(),
			stop:    stopper{stops: req.Stop},
		}
		r.choices = append(r.choices, c)
	}
	r.resetForks()
	return r, nil
}

// resetForks makes the first unfinished choice the prompt carrier and the other
// unfinished choices wait for its fork.
func (r *request) resetForks() {
	r.carrier, r.unforked = nil, r.unforked[:0]
	for _, c := range r.choices {
		if !c.active() {
			continue
		}
		if r.carrier == nil {
			r.carrier = c
		} else {
			r.unforked = append(r.unforked, c)
		}
	}
	if len(r.unforked) == 0 {
		r.carrier = nil
	}
}

// loop is the scheduler goroutine.
func (e *Engine) loop() {
	defer close(e.exited)
	for {
		closing, abort := e.intake()
		if abort {
			for _, r := range slices.Concat(e.running, e.waiting) {
				e.endRequest(r, ErrClosed)
			}
			e.publish(nil)
			return
		}
		if len(e.running) == 0 && len(e.waiting) == 0 {
			if closing {
				e.publish(nil)
				return
			}
			if e.prefault() {
				continue // a piece at a time: new work is taken in between
			}
			<-e.wake
			continue
		}
		e.step()
		e.pfDone = false  // the step may have taken free blocks
		e.yielder.yield() // readers of the step's tokens go first
	}
}

// prefault runs one piece of idle-time prefaulting (Config.Prefault) and reports
// whether more remains.
func (e *Engine) prefault() bool {
	if e.pf == nil || e.pfDone {
		return false
	}
	if !e.pfRun {
		// e.stats is written on this goroutine only: reading it needs no lock.
		e.pfRun, e.pfFrom, e.pfSpent = true, e.stats.Pool.PrefaultBytes, 0
	}
	t := time.Now()
	// One piece per call, then a look for new work: on a loaded machine slices of
	// 2 ms ran to 8.7 ms at the median (a piece, a huge page made and zeroed by the
	// kernel, took 11–14 ms at p99, once 236 ms), and a request arriving meanwhile
	// waited the slice out.
	more := e.pf.Prefault(e.cfg.Prefault, 0)
	e.pfSpent += time.Since(t)
	e.publish(nil) // the pool's figures grew
	if !more {
		e.pfDone, e.pfRun = true, false
		if n := e.stats.Pool.PrefaultBytes - e.pfFrom; n > 0 && e.cfg.OnPrefault != nil {
			e.cfg.OnPrefault(n, e.pfSpent)
		}
	}
	return more
}

// errCancelled is the error that ends a request whose context ended with cause.
func errCancelled(cause error) error { return fmt.Errorf("engine: request cancelled: %w", cause) }

// intake moves submitted requests to the waiting queue and ends cancelled ones.
func (e *Engine) intake() (closing, abort bool) {
	e.mu.Lock()
	in, cancels := e.incoming, e.cancels
	e.incoming, e.cancels = nil, nil
	closing, abort = e.closing, e.abort
	e.mu.Unlock()
	e.waiting = append(e.waiting, in...) // ids grow with submission order
	for _, r := range cancels {
		if !r.ended {
			e.endRequest(r, errCancelled(r.stream.ctx.Err()))
		}
	}
	if len(cancels) > 0 {
		e.publish(nil)
	}
	return closing, abort
}

// span is one entry of a step's batch and who it belongs to.
type span struct {
	r *request
	c *choice
	n int
}

// step runs one forward step, preempting on memory exhaustion until a batch fits.
func (e *Engine) step() {
	t0 := time.Now()
	admit := true
	for {
		plan := e.plan(admit)
		if len(plan) == 0 {
			e.publish(nil)
			return
		}
		batch := make([]model.Span, len(plan))
		for i, p := range plan {
			batch[i] = model.Span{Seq: p.c.seq, Tokens: p.c.hist[p.c.fed : p.c.fed+p.n], AllLogits: p.allLogits()}
		}
		logits, err := e.m.Forward(e.c, batch)
		if err == nil {
			e.apply(plan, logits, t0)
			return
		}
		if !errors.Is(err, kv.ErrNoSpace) {
			// The cache may hold part of this step: end every request in it.
			for _, p := range plan {
				if !p.r.ended {
					e.endRequest(p.r, fmt.Errorf("engine: forward step: %w", err))
				}
			}
			e.publish(nil)
			return
		}
		if !e.preemptNewest(nil, err) {
			e.publish(nil)
			return
		}
		admit = false // the preempted request would only be admitted again
	}
}

// runningSeqs counts the sequences of the running batch, forks to come included.
func (e *Engine) runningSeqs() int {
	n := 0
	for _, r := range e.running {
		for _, c := range r.choices {
			if c.active() {
				n++
			}
		}
	}
	return n
}

// plan builds the next batch: a decode token of every decoding choice, then prefill
// chunks of running requests, then, if admit, of newly admitted requests, within
// DecodeStepTokens: each prefill first gets at most LongPrefillTokens, then what is
// left extends them (see extend). A step from which no sequence gets a token (only
// parts of long prompts) then grows to MaxBatchTokens.
func (e *Engine) plan(admit bool) []span {
	budget := e.cfg.MaxBatchTokens
	var plan []span
	for _, r := range e.running {
		for _, c := range r.choices {
			if budget > 0 && c.hasSeq && c.active() && c.need() == 1 {
				plan = append(plan, span{r, c, 1})
				budget--
			}
		}
	}
	decodes := len(plan)
	left := budget
	budget = min(budget, max(e.cfg.DecodeStepTokens-decodes, e.cfg.LongPrefillTokens))
	grow := 0 // how much more a step from which no sequence gets a token may take
	if decodes == 0 {
		grow = left - budget
	}
	share := e.cfg.LongPrefillTokens
	for _, r := range e.running {
		for _, c := range r.choices {
			if budget > 0 && c.hasSeq && c.active() && c.need() > 1 {
				if n := e.chunk(r, c, min(budget, share)); n > 0 {
					plan = append(plan, span{r, c, n})
					budget -= n
				}
			}
		}
	}
	seqs := e.runningSeqs()
	if e.hold && len(e.running) > 0 {
		admit = false
	}
	for admit && budget > 0 && len(e.waiting) > 0 {
		r := e.waiting[0]
		if err := r.stream.ctx.Err(); err != nil {
			// Cancelled while it waited, and its cancellation has not reached intake
			// yet (context.AfterFunc runs on its own goroutine): it must not start.
			e.endRequest(r, errCancelled(err))
			continue
		}
		k := 0
		for _, c := range r.choices {
			if c.active() {
				k++
			}
		}
		if len(e.running) > 0 && (seqs+k > e.cfg.MaxRunning || !e.memoryAllows(r, budget+grow) || e.prefixComing(r)) {
			break
		}
		c, err := e.admit(r)
		if err != nil {
			e.endRequest(r, err)
			continue
		}
		seqs += k
		if n := e.chunk(r, c, min(budget, share)); n > 0 {
			plan = append(plan, span{r, c, n})
			budget -= n
		}
	}
	budget = e.extend(plan[decodes:], budget)
	if grow > 0 && !slices.ContainsFunc(plan, span.samples) {
		// No sequence gets a token from this step, so none waits on its length:
		// long prompts take up to MaxBatchTokens.
		e.extend(plan, budget+grow)
	}
	return plan
}

// samples reports whether the span ends its sequence's pending tokens, so that the
// step samples its next token (or forks the prompt).
func (p span) samples() bool { return p.n == p.c.need() }

// extend gives the budget left after every prefill had its share to the prefill
// spans pre, the one with the fewest tokens still to compute first (ties in
// plan order): short prompts finish in this step, long ones take the rest.
func (e *Engine) extend(pre []span, budget int) (left int) {
	if budget <= 0 || len(pre) == 0 {
		return budget
	}
	order := make([]int, len(pre))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return (pre[a].c.need() - pre[a].n) - (pre[b].c.need() - pre[b].n)
	})
	for _, i := range order {
		p := &pre[i]
		more := e.chunk(p.r, p.c, p.n+budget) - p.n
		p.n += more
		if budget -= more; budget == 0 {
			break
		}
	}
	return budget
}

// prefixComing reports whether a running request is still computing a prompt that
// begins as r's does, at least one whole cache block of it: r then waits (so do
// the requests behind it) and takes that prefix from the prefix cache once it is
// computed, instead of computing it a second time in the same steps. Only with a
// prefix cache, and only for the same cache salt.
func (e *Engine) prefixComing(r *request) bool {
	B := e.prefixBlock
	if B < 1 || len(r.prompt) <= B {
		return false
	}
	for _, x := range e.running {
		c := x.carrier
		if c == nil && len(x.choices) > 0 {
			c = x.choices[0]
		}
		if c == nil || !c.hasSeq || x.req.CacheSalt != r.req.CacheSalt || len(x.prompt) <= B || c.fed >= len(x.prompt) {
			continue
		}
		// Both prompts begin with the same tokens up to the end of the block x
		// completes next.
		if n := (c.fed/B + 1) * B; n <= min(len(r.prompt), len(x.prompt)) && slices.Equal(r.prompt[:n], x.prompt[:n]) {
			return true
		}
	}
	return false
}

// chunk is how many of c's pending tokens fit this step: at most budget and
// PrefillChunk, and while the prompt still has to be forked, no further than the
// prompt's end.
func (e *Engine) chunk(r *request, c *choice, budget int) int {
	n := min(c.need(), budget, e.cfg.PrefillChunk)
	if r.carrier == c {
		n = min(n, len(r.prompt)-c.fed)
	}
	return n
}

// groups is the number of blocks B tokens of every layer take: one per layer group
// (kv.Store.GroupWindows), 1 when the cache does not say.
func (e *Engine) groups() int { return max(1, len(e.groupWindows)) }

// wholeGroups is how many of those blocks grow with the history: one per layer
// group without an attention window.
func (e *Engine) wholeGroups() int {
	n := e.groups()
	for _, w := range e.groupWindows {
		if w > 0 {
			n--
		}
	}
	return n
}

// histBlocks is the number of blocks (of B tokens) a sequence of n tokens holds: in
// each layer group that keeps the whole history n's blocks, in one with an attention
// window w at most those of w and a prefill step, and two more for where they start
// and end.
func (e *Engine) histBlocks(B, n int) int {
	all := (n + B - 1) / B
	if len(e.groupWindows) == 0 {
		return all
	}
	total := 0
	for _, w := range e.groupWindows {
		if w > 0 {
			total += min(all, (w+e.cfg.PrefillChunk+B-1)/B+2)
		} else {
			total += all
		}
	}
	return total
}

// memoryAllows estimates whether the cache has room to start r now: free memory must
// cover what the running sequences still have to compute (prompts in progress and
// recomputations, requests admitted earlier in this plan included) plus one block of
// growth each, and r's history plus one block of growth per sequence of r; and the
// tails: every sequence's steady one plus the full-precision rows of a prefill step
// (r's first at most budget tokens).
func (e *Engine) memoryAllows(r *request, budget int) bool {
	B := 16 // tokens per block when the cache does not say
	var p kv.PoolStats
	if e.pool != nil {
		p = e.pool.PoolStats()
		if p.BlocksFree < 0 {
			return true
		}
		B = p.BlockTokens
	}
	blocks := 0 // blocks still to allocate
	seqs := 0   // running sequences, forks to come included
	work := 0   // rows of prefill steps beyond one token, each holding a work row per token
	for _, x := range e.running {
		for _, c := range x.choices {
			if !c.active() {
				continue
			}
			if c.hasSeq {
				blocks += e.histBlocks(B, c.fed+c.need()) - e.histBlocks(B, c.fed)
				work += max(0, min(c.need(), e.cfg.PrefillChunk)-1)
			}
			blocks += e.groups()
			seqs++
		}
	}
	work += max(0, min(len(r.prompt), budget, e.cfg.PrefillChunk)-1)
	k := 0
	tokens := len(r.prompt)
	for _, c := range r.choices {
		if c.active() {
			tokens += c.nGen
			k++
		}
	}
	blocks += e.histBlocks(B, tokens) + k*e.groups()
	if e.pool != nil {
		// Tails: every sequence, new ones included, holds one at the steady size,
		// and one of a prefill step its rows; what sequences hold now counts.
		tails := e.seqTail*int64(seqs+k) + int64(work)*e.workRow
		need := int64(blocks)*int64(p.BlockBytes) + max(0, tails-p.TailBytes)
		return int64(p.BlocksFree)*int64(p.BlockBytes) >= need
	}
	u := e.c.Usage()
	if u.BudgetBytes <= 0 {
		return true
	}
	bpt := e.cfg.BytesPerToken
	if bpt == 0 {
		if u.Tokens == 0 {
			return true
		}
		bpt = float64(u.AllocBytes) / float64(u.Tokens)
	}
	return float64(u.BudgetBytes-u.AllocBytes) >= bpt*float64(blocks*B)
}

// prefixCache is implemented by caches that reuse the stored blocks of earlier
// sequences whose tokens begin the same way: NewSeqWithPrefix creates a sequence
// holding the longest cached prefix of tokens and returns its length.
type prefixCache interface {
	NewSeqWithPrefix(tokens []int32) (kv.SeqID, int, error)
}

// saltedPrefixCache is a prefixCache whose sequences can keep to the prefixes cached
// under a salt (kv.Store.NewSeqWithPrefixSalt).
type saltedPrefixCache interface {
	NewSeqWithPrefixSalt(tokens []int32, salt string) (kv.SeqID, int, error)
}

// admit moves the first waiting request to the running batch and gives its carrier
// (or its only unfinished choice) a sequence. It returns that choice.
func (e *Engine) admit(r *request) (*choice, error) {
	e.waiting = e.waiting[1:]
	r.resetForks()
	c := r.carrier
	if c == nil {
		for _, x := range r.choices {
			if x.active() {
				c = x
				break
			}
		}
	}
	// Reuse cached blocks of the history, but leave at least one token to compute
	// (its logits give the next token) and, before a fork, stop at the prompt's end.
	limit := len(c.hist) - 1
	if r.carrier == c {
		limit = len(r.prompt) - 1
	}
	var (
		seq    kv.SeqID
		cached int
		err    error
	)
	if r.wantsPromptLogprobs() {
		limit = 0 // every prompt position's logits are needed
	}
	pc, ok := e.c.(prefixCache)
	sc, salted := e.c.(saltedPrefixCache)
	switch {
	case limit > 0 && r.req.CacheSalt != "" && salted:
		seq, cached, err = sc.NewSeqWithPrefixSalt(c.hist[:limit], r.req.CacheSalt)
	case limit > 0 && r.req.CacheSalt == "" && ok:
		seq, cached, err = pc.NewSeqWithPrefix(c.hist[:limit])
	default:
		seq, err = e.c.NewSeq()
	}
	if err == nil && (cached < 0 || cached > max(limit, 0)) {
		_ = e.c.Drop(seq)
		err = fmt.Errorf("cache reports %d cached tokens of %d", cached, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: new cache sequence: %w", err)
	}
	c.seq, c.hasSeq, c.fed = seq, true, cached
	e.mu.Lock()
	e.stats.ReusedTokens += int64(cached)
	if !r.started {
		r.started = true
		r.cached = min(cached, len(r.prompt))
		e.queued--
		e.stats.PromptTokens += int64(len(r.prompt))
		e.stats.CachedPromptTokens += int64(r.cached)
	}
	e.mu.Unlock()
	r.running = true
	e.running = insertByID(e.running, r)
	return c, nil
}

func insertByID(rs []*request, r *request) []*request {
	i, _ := slices.BinarySearchFunc(rs, r.id, func(x *request, id uint64) int {
		switch {
		case x.id < id:
			return -1
		case x.id > id:
			return 1
		}
		return 0
	})
	return slices.Insert(rs, i, r)
}

// preemptNewest preempts the newest running request other than keep. cause is the
// memory error that made it necessary. If no other request runs, the request that
// needed the memory cannot fit at all: it fails with ErrTooLarge. It reports whether
// a request was preempted (so that retrying may succeed).
func (e *Engine) preemptNewest(keep *request, cause error) bool {
	for i := len(e.running) - 1; i >= 0; i-- {
		r := e.running[i]
		if r == keep {
			continue
		}
		if keep == nil && len(e.running) == 1 {
			break
		}
		e.preempt(r)
		return true
	}
	// Alone and still out of memory.
	victim := keep
	if victim == nil && len(e.running) == 1 {
		victim = e.running[0]
	}
	if victim != nil {
		e.endRequest(victim, fmt.Errorf("%w: it needs more cache memory than the whole budget of %d bytes: %w", ErrTooLarge, e.c.Usage().BudgetBytes, cause))
	}
	return false
}

// preempt drops r's sequences and puts it back in the waiting queue, to be
// recomputed from its prompt and generated tokens.
func (e *Engine) preempt(r *request) {
	e.dropSeqs(r)
	e.running = slices.DeleteFunc(e.running, func(x *request) bool { return x == r })
	r.running = false
	r.preemptions++
	e.hold = true
	e.waiting = insertByID(e.waiting, r)
	e.mu.Lock()
	e.stats.Preemptions++
	e.mu.Unlock()
}

func (e *Engine) dropSeqs(r *request) {
	for _, c := range r.choices {
		if c.hasSeq {
			_ = e.c.Drop(c.seq) // the engine created seq and has not dropped it: cannot fail
			c.hasSeq, c.fed = false, 0
		}
	}
}

// apply consumes a successful step's logits: it advances every span, forks prompts
// that are complete, and samples the next token of every choice that caught up.
func (e *Engine) apply(plan []span, logits [][]float32, t0 time.Time) {
	type forkJob struct {
		r      *request
		logits []float32
	}
	var forks []forkJob
	draws := e.draws[:0]
	defer func() { clear(draws); e.draws = draws[:0] }()
	info := StepInfo{}
	for i, p := range plan {
		c := p.c
		if p.allLogits() {
			// All logits of the span (prompt log-probabilities); the last row samples.
			v := e.m.Vocab
			p.r.takePromptLogits(logits[i], c.fed, p.n, v)
			logits[i] = logits[i][len(logits[i])-v:]
		}
		c.fed += p.n
		if p.n == 1 && c.need() == 0 && c.nGen > 0 {
			info.DecodeTokens++
		} else {
			info.PrefillTokens += p.n
		}
		if p.r.carrier == c && c.fed == len(p.r.prompt) {
			forks = append(forks, forkJob{p.r, logits[i]})
			continue
		}
		if c.need() == 0 {
			draws = append(draws, draw{r: p.r, c: c, logits: logits[i]})
		}
	}
	e.drawAll(draws)
	for i := range draws {
		e.emit(draws[i].r, draws[i].c, draws[i].token, draws[i].logprob)
	}
	// Forks allocate no new token memory but may need a block for a copy-on-write
	// tail; on exhaustion preempt newer requests, as for a step.
	for _, f := range forks {
		r := f.r
		if r.ended || !r.running {
			continue
		}
		for len(r.unforked) > 0 {
			c := r.unforked[0]
			seq, err := e.c.Fork(r.carrier.seq)
			if err != nil {
				if errors.Is(err, kv.ErrNoSpace) && e.preemptNewest(r, err) {
					continue
				}
				if !r.ended {
					e.endRequest(r, fmt.Errorf("engine: forking the prompt: %w", err))
				}
				break
			}
			c.seq, c.hasSeq, c.fed = seq, true, r.carrier.fed
			r.unforked = r.unforked[1:]
		}
		if r.ended {
			continue
		}
		r.carrier = nil
		for _, c := range r.choices {
			if c.hasSeq && c.active() && c.need() == 0 {
				d := draw{r: r, c: c, logits: f.logits}
				d.run()
				e.emit(r, c, d.token, d.logprob)
			}
		}
	}
	if e.ev != nil {
		e.evict()
	}
	info.Duration = time.Since(t0)
	info.Sampled, e.sampled = e.sampled, 0
	e.publish(&info)
}

// evict keeps every running sequence to its sinks and window.
func (e *Engine) evict() {
	limit := e.cfg.Sinks + e.cfg.Window
	for _, r := range slices.Clone(e.running) {
		for _, c := range r.choices {
			if !c.hasSeq || c.fed <= limit {
				continue
			}
			if _, err := e.ev.Evict(c.seq, e.cfg.Sinks, e.cfg.Window); err != nil {
				e.endRequest(r, fmt.Errorf("engine: evicting beyond the window: %w", err))
				break
			}
		}
	}
}

// draw is one choice's sampling in a step: its inputs, then its token (and its
// log-probability when the request asks for it).
type draw struct {
	r       *request
	c       *choice
	logits  []float32
	token   int32
	logprob *Logprob
}

// run samples d.c's next token. It touches only d.c's sampler and constraint, so the
// draws of one step may run at once.
func (d *draw) run() {
	r, c := d.r, d.c
	l := d.logits
	if c.con != nil {
		c.masked = append(c.masked[:0], d.logits...)
		c.con.Mask(c.masked, r.maxTokens-c.nGen)
		l = c.masked
	}
	d.token = c.sampler.Sample(l, c.hist)
	if c.con != nil {
		c.con.Accept(d.token)
	}
	if r.req.Logprobs {
		lp := logprobOf(d.logits, d.token, r.req.TopLogprobs)
		d.logprob = &lp
	}
}

// drawAll runs the draws of a step. Unconstrained draws are spread over the forward
// pass's threads: each choice has its own sampler, so the tokens are those drawn one
// after another. Constrained ones run here, in order, as a Constraint need not be
// safe for concurrent use.
func (e *Engine) drawAll(draws []draw) {
	free := 0
	for i := range draws {
		if draws[i].c.con != nil {
			draws[i].run()
		} else {
			free++
		}
	}
	if free <= 1 {
		for i := range draws {
			if draws[i].c.con == nil {
				draws[i].run()
			}
		}
		return
	}
	workpool.For(linalg.Threads(), len(draws), func(i int) {
		if draws[i].c.con == nil {
			draws[i].run()
		}
	})
}

// emit appends the sampled token t to c, publishes its event (lp: its
// log-probability, nil unless asked for) and applies the stop conditions.
func (e *Engine) emit(r *request, c *choice, t int32, lp *Logprob) {
	now := time.Now()
	c.hist = append(c.hist, t)
	c.nGen++
	r.completion++
	e.sampled++
	e.mu.Lock()
	e.stats.GeneratedTokens++
	if r.firstToken.IsZero() {
		r.firstToken = now
		e.stats.TTFTSum += now.Sub(r.submitted)
		e.stats.TTFTCount++
	}
	if !c.last.IsZero() {
		e.stats.ITLSum += now.Sub(c.last)
		e.stats.ITLCount++
	}
	e.mu.Unlock()
	c.last = now

	ev := Event{Choice: c.idx, Token: t, Logprob: lp}
	if e.m.Tok.IsEOG(t) && !r.req.IgnoreEOS {
		s, _ := c.stop.add(c.dec.Flush())
		ev.Text, ev.Finish = s+c.stop.flush(), FinishStop
	} else {
		s, stopped := c.stop.add(c.dec.Write(t))
		ev.Text = s
		switch {
		case stopped:
			ev.Finish = FinishStop
		case c.nGen >= r.maxTokens || e.cfg.Window == 0 && len(c.hist)-1 >= e.m.Ctx:
			ev.Finish = FinishLength
		}
		if ev.Finish == FinishLength {
			s, stopped := c.stop.add(c.dec.Flush())
			ev.Text += s
			if stopped {
				ev.Finish = FinishStop
			} else {
				ev.Text += c.stop.flush()
			}
		}
	}
	if r.req.OnToken != nil {
		r.req.OnToken(ev)
	}
	r.stream.push(ev)
	if ev.Finish != "" {
		c.finish = ev.Finish
		if c.hasSeq {
			_ = e.c.Drop(c.seq) // owned by the engine: cannot fail
			c.hasSeq = false
		}
		done := true
		for _, x := range r.choices {
			done = done && !x.active()
		}
		if done {
			e.endRequest(r, nil)
		}
	}
}

// endRequest frees r's sequences, removes it from the queues and finishes its stream.
func (e *Engine) endRequest(r *request, err error) {
	if r.ended {
		return
	}
	r.ended = true
	if r.running {
		e.hold = false // its memory is free: admission may resume
	}
	e.dropSeqs(r)
	e.running = slices.DeleteFunc(e.running, func(x *request) bool { return x == r })
	e.waiting = slices.DeleteFunc(e.waiting, func(x *request) bool { return x == r })
	r.running = false
	if r.stopCancel != nil {
		r.stopCancel()
	}
	res := Result{
		Usage:       Usage{PromptTokens: len(r.prompt), CompletionTokens: r.completion, CachedPromptTokens: r.cached},
		Preemptions: r.preemptions,
	}
	if r.req.PromptLogprobs {
		res.PromptLogprobs = slices.Clone(r.promptLP)
	}
	if !r.firstToken.IsZero() {
		res.TimeToFirstToken = r.firstToken.Sub(r.submitted)
	}
	for _, c := range r.choices {
		gen := c.hist[len(r.prompt):]
		if c.finish == FinishStop && len(gen) > 0 && e.m.Tok.IsEOG(gen[len(gen)-1]) && !r.req.IgnoreEOS {
			gen = gen[:len(gen)-1]
		}
		res.Choices = append(res.Choices, Choice{Tokens: slices.Clone(gen), Text: c.stop.text(), FinishReason: c.finish})
	}
	e.mu.Lock()
	if !r.started {
		e.queued--
	}
	switch {
	case err == nil:
		e.stats.Completed++
	case r.stream.ctx.Err() != nil || errors.Is(err, ErrClosed):
		e.stats.Cancelled++
	default:
		e.stats.Failed++
	}
	e.mu.Unlock()
	// The stream is finished by the next publish, so that Stats seen after Wait
	// returns already account for this request.
	e.ending = append(e.ending, ending{r.stream, res, err})
}

// ending is a finished request whose stream is released at the next publish.
type ending struct {
	s   *Stream
	res Result
	err error
}

// publish refreshes the shared Stats snapshot; info is nil when no step completed.
func (e *Engine) publish(info *StepInfo) {
	u := e.c.Usage()
	seqs := e.runningSeqs()
	e.mu.Lock()
	s := &e.stats
	s.Running, s.RunningRequests, s.Waiting = seqs, len(e.running), len(e.waiting)
	s.PeakRunning = max(s.PeakRunning, seqs)
	s.Cache = u
	if e.pool != nil {
		s.Pool = e.pool.PoolStats()
	}
	if info != nil {
		s.Steps++
		s.PrefillTokens += int64(info.PrefillTokens)
	}
	e.mu.Unlock()
	if info != nil && e.cfg.OnStep != nil {
		info.Running, info.Waiting, info.Cache = seqs, len(e.waiting), u
		e.cfg.OnStep(*info)
	}
	for _, x := range e.ending {
		x.s.finish(x.res, x.err)
	}
	e.ending = e.ending[:0]
}

func newConstraint(f func() Constraint) Constraint {
	if f == nil {
		return nil
	}
	return f()
}
