package tier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a tier in a Redis (or Valkey) database: one string key per record,
// "kvq:blk:" and the block hash in hex. Every command names one key, so a proxy in
// front of a Redis Cluster serves it too. Records are never expired by kvq: give the
// server a memory bound and an eviction policy (maxmemory, maxmemory-policy
// allkeys-lru); a server that refuses writes (full, read-only replica) only stops
// the write-behind, counted as errors.
type Redis struct {
	c    *redis.Client
	name string
}

// OpenRedis connects lazily to the server of url (redis://[user:password@]HOST:PORT[/DB],
// rediss:// for TLS). Commands are not retried: a failing server costs one attempt,
// then the tokens are computed.
func OpenRedis(url string) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("kv tier: %w", err)
	}
	opts.MaxRetries = -1
	opts.DialerRetries = 1            // a server that refuses connections is down: compute now
	opts.ContextTimeoutEnabled = true // the lookup's deadline bounds every command
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = 2 * time.Second
	opts.WriteTimeout = 2 * time.Second
	opts.DisableIdentity = true // no CLIENT SETINFO: older servers and proxies refuse it
	name := fmt.Sprintf("redis://%s/%d", opts.Addr, opts.DB)
	if opts.TLSConfig != nil {
		name = fmt.Sprintf("rediss://%s/%d", opts.Addr, opts.DB)
	}
	quietRedis.Do(func() { redis.SetLogger(quiet{}) })
	return &Redis{c: redis.NewClient(opts), name: name}, nil
}

// The client would log every failed dial; the tier's failures are logged once per
// outage by Cache and counted in its metrics instead.
var quietRedis sync.Once

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func redisKey(k uint64) string { return "kvq:blk:" + keyHex(k) }

// Name implements Tier.
func (r *Redis) Name() string { return r.name }

// Get implements Tier: one pipelined GET per key.
func (r *Redis) Get(ctx context.Context, keys []uint64) ([][]byte, error) {
	pipe := r.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, redisKey(k))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("kv tier %s: %w", r.name, err)
	}
	out := make([][]byte, len(keys))
	for i, c := range cmds {
		b, err := c.Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, fmt.Errorf("kv tier %s: %w", r.name, err)
		default:
			out[i] = b
		}
	}
	return out, nil
}

// Put implements Tier.
func (r *Redis) Put(ctx context.Context, key uint64, rec []byte) error {
	if err := r.c.Set(ctx, redisKey(key), rec, 0).Err(); err != nil {
		var reply redis.Error // the server answered: OOM, READONLY, ...
		if errors.As(err, &reply) {
			return fmt.Errorf("kv tier %s: %w: %w", r.name, ErrRefused, err)
		}
		return fmt.Errorf("kv tier %s: %w", r.name, err)
	}
	return nil
}

// Close implements Tier.
func (r *Redis) Close() error { return r.c.Close() }
