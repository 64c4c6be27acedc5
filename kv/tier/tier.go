// Package tier keeps a KV cache's full prefix blocks beyond one process: on a local
// disk (which survives restarts) and in Redis (which replicas share). A block
// computed by one process is written behind, asynchronously, to every tier; a
// request whose prompt begins with blocks that are not in memory fetches the longest
// run of them from the tiers, in order, before it is admitted, and adopts them
// instead of computing them. Tiers are a cache: any fault (a tier down, slow, full
// or read-only, a record corrupt or made for another layout) only means the tokens
// are computed, and is counted in the metrics.
//
// Blocks are keyed by their prefix hash (kv.BlockHash), which binds the model
// fingerprint, the cache geometry and every layer's spec, and travel as records
// (record.go): the block's bytes as the cache stores them — compressed — plus a
// header, the token ids and a CRC-32C, all checked before adoption.
package tier

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"kvq/internal/units"
)

// Tier stores block records by key (the block's prefix hash). Implementations are
// safe for concurrent use. A tier is a cache: it may drop any record at any time.
type Tier interface {
	// Name identifies the tier in metrics and logs; it holds no secrets.
	Name() string
	// Get returns the records stored under keys, nil for each key the tier does not
	// hold. An error means the tier failed; the results are then not used.
	Get(ctx context.Context, keys []uint64) ([][]byte, error)
	// Put stores rec under key, replacing any record stored there. An error wrapping
	// ErrRefused means the tier works but cannot take the record (full, read-only).
	Put(ctx context.Context, key uint64, rec []byte) error
	// Close releases the tier's resources.
	Close() error
}

// ErrRefused is returned (wrapped) by Put when the tier works but refuses the write
// (full, read-only): reads go on, only that write is lost. Its text carries no
// prefix: the tier that refused wraps it ("kv tier disk:DIR: write refused: …").
var ErrRefused = errors.New("write refused")

// DefaultDiskBytes bounds a disk tier whose spec gives no size.
const DefaultDiskBytes = 4 << 30

// Open opens a tier from its spec: "disk:DIR[,size=BYTES]" (BYTES as 1073741824,
// 512MiB, 10GB; default DefaultDiskBytes) or a Redis URL (see OpenRedis):
// "redis://[user:password@]HOST:PORT[/DB]" for one server,
// "redis-cluster://[user:password@]HOST:PORT[,HOST:PORT...]" for a Redis Cluster.
func Open(spec string) (Tier, error) {
	switch {
	case strings.HasPrefix(spec, "disk:"):
		dir, opts, _ := strings.Cut(strings.TrimPrefix(spec, "disk:"), ",")
		if dir == "" {
			return nil, fmt.Errorf("kv tier %q: no directory (disk:DIR[,size=BYTES])", spec)
		}
		size := int64(DefaultDiskBytes)
		if opts != "" {
			v, ok := strings.CutPrefix(opts, "size=")
			if !ok {
				return nil, fmt.Errorf("kv tier %q: unknown option %q (disk:DIR[,size=BYTES])", spec, opts)
			}
			var err error
			if size, err = units.ParseBytes(v); err != nil || size <= 0 {
				return nil, fmt.Errorf("kv tier %q: size must be a positive byte count such as 1073741824 or 4GiB", spec)
			}
		}
		return OpenDisk(dir, size)
	case strings.HasPrefix(spec, schemeRedis), strings.HasPrefix(spec, schemeRedisTLS),
		strings.HasPrefix(spec, schemeRedisCluster), strings.HasPrefix(spec, schemeRedissCluster):
		return OpenRedis(spec)
	}
	return nil, fmt.Errorf("kv tier %q: want disk:DIR[,size=BYTES], redis://HOST:PORT[/DB] or redis-cluster://HOST:PORT[,HOST:PORT...]", spec)
}

func keyHex(k uint64) string { return fmt.Sprintf("%016x", k) }
