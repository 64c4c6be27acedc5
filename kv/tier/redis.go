package tier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a tier in a Redis (or Valkey) database or a Redis Cluster: one string key
// per record, "kvq:blk:" and the block hash in hex. Every command names one key (a
// Get pipelines one GET per key, which the cluster client splits per node), so no
// command crosses hash slots. Records are never expired by kvq: give the server a
// memory bound and an eviction policy (maxmemory, maxmemory-policy allkeys-lru); a
// server that refuses writes (full, read-only replica) only stops the write-behind,
// counted as errors.
type Redis struct {
	c    redis.UniversalClient
	name string
}

// Redis URL schemes: a single server (or a proxy in front of a cluster), or a Redis
// Cluster reached through seed nodes; the -s forms use TLS.
const (
	schemeRedis         = "redis://"
	schemeRedisTLS      = "rediss://"
	schemeRedisCluster  = "redis-cluster://"
	schemeRedissCluster = "rediss-cluster://"
)

// OpenRedis connects lazily to the server of url: redis://[user:password@]HOST:PORT[/DB]
// for one server, redis-cluster://[user:password@]HOST:PORT[,HOST:PORT...] for a Redis
// Cluster through any of its nodes (the client follows MOVED and ASK redirects);
// rediss:// and rediss-cluster:// for TLS. A single server's commands are not
// retried: a failing server costs one attempt, then the tokens are computed. A
// cluster client retries a command up to 3 times (redirects, a node failing over),
// always within the caller's deadline.
func OpenRedis(url string) (*Redis, error) {
	quietRedis.Do(func() { redis.SetLogger(quiet{}) })
	if strings.HasPrefix(url, schemeRedisCluster) || strings.HasPrefix(url, schemeRedissCluster) {
		return openRedisCluster(url)
	}
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
	return &Redis{c: redis.NewClient(opts), name: name}, nil
}

// openRedisCluster rewrites redis-cluster://AUTH@A,B,C into the form go-redis parses
// (redis://AUTH@A?addr=B&addr=C) and opens a cluster client.
func openRedisCluster(spec string) (*Redis, error) {
	scheme, rest, _ := strings.Cut(spec, "://")
	rest, query, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	if path != "" && path != "0" {
		return nil, fmt.Errorf("kv tier %q: a Redis Cluster has only database 0", spec)
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	addrs := strings.Split(hosts, ",")
	for _, a := range addrs {
		if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
			return nil, fmt.Errorf("kv tier %q: seed node %q is not HOST:PORT (%s[user:password@]HOST:PORT[,HOST:PORT...])", spec, a, schemeRedisCluster)
		}
	}
	q := make([]string, 0, len(addrs))
	for _, a := range addrs[1:] {
		q = append(q, "addr="+a)
	}
	if query != "" {
		q = append(q, query)
	}
	u := strings.TrimSuffix(scheme, "-cluster") + "://" + userinfo + addrs[0]
	if len(q) > 0 {
		u += "?" + strings.Join(q, "&")
	}
	opts, err := redis.ParseClusterURL(u)
	if err != nil {
		return nil, fmt.Errorf("kv tier %q: %w", spec, err)
	}
	// MaxRedirects stays at its default (3): following MOVED and ASK is how a cluster
	// client finds a key's node; the lookup's deadline still bounds every command.
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = 2 * time.Second
	opts.WriteTimeout = 2 * time.Second
	opts.DisableIdentity = true
	return &Redis{c: redis.NewClusterClient(opts), name: scheme + "://" + strings.Join(addrs, ",")}, nil
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
		if errors.As(err, &reply) && !clusterUnavailable(err) {
			return fmt.Errorf("kv tier %s: %w: %w", r.name, ErrRefused, err)
		}
		return fmt.Errorf("kv tier %s: %w", r.name, err)
	}
	return nil
}

// clusterUnavailable tells a cluster that cannot serve the key now (down, failing
// over, moving the slot) from a server that refuses the write: the tier has failed.
func clusterUnavailable(err error) bool {
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMasterDownError(err)
}

// Close implements Tier.
func (r *Redis) Close() error { return r.c.Close() }
