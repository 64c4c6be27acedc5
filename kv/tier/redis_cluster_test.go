package tier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// freePort is a loopback TCP port no one listened on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startRedisCluster starts three cluster-enabled redis-server processes of this test
// on loopback, each in its own directory, joins them into one Redis Cluster with no
// replicas (redis-cli --cluster create) and waits until every node reports
// cluster_state:ok. It returns the tier spec naming all three as seeds, and the nodes.
func startRedisCluster(t *testing.T) (string, []*redisServer) {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		redisBinary(t) // skips when the server is absent too
		t.Skip("no redis-cli binary found (Debian's redis-tools, which redis-server brings; .ci/run installs it): the Redis Cluster tests need it")
	}
	nodes := make([]*redisServer, 3)
	addrs := make([]string, len(nodes))
	for i := range nodes {
		// The cluster bus gets its own free port: the default, port+10000, may be taken
		// or past 65535.
		nodes[i] = startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", fmt.Sprint(freePort(t)), "--cluster-node-timeout", "500")
		addrs[i] = nodes[i].addr()
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, DisableIdentity: true})
		info := ""
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if info, err = c.ClusterInfo(ctx).Result(); err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
		}
		c.Close()
		if !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("node %s never reported cluster_state:ok (%v): %s", a, err, info)
		}
	}
	return schemeRedisCluster + strings.Join(addrs, ","), nodes
}

// A Redis Cluster of three nodes: the tier follows the cluster's redirects, its
// records spread over the nodes and come back exactly, and two caches share blocks
// through it as through one server.
func TestRedisClusterTier(t *testing.T) {
	spec, nodes := startRedisCluster(t)
	tr, err := Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Name() != spec {
		t.Errorf("Name() = %q, want %q", tr.Name(), spec)
	}

	t.Run("round trip", func(t *testing.T) { redisRoundTrip(t, tr) })

	t.Run("spread over nodes", func(t *testing.T) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(33, 1))
		const n = 48
		keys := make([]uint64, n)
		recs := make([][]byte, n)
		for i := range keys {
			keys[i] = rng.Uint64()
			recs[i] = make([]byte, 1+rng.IntN(64<<10))
			for j := range recs[i] {
				recs[i][j] = byte(rng.Uint32())
			}
			if err := tr.Put(ctx, keys[i], recs[i]); err != nil {
				t.Fatalf("Put %d: %v", i, err)
			}
		}
		// One Get for every key and some absent ones: a pipeline across the slots.
		absent := []uint64{rng.Uint64(), rng.Uint64(), rng.Uint64()}
		got, err := tr.Get(ctx, append(append([]uint64(nil), keys...), absent...))
		if err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if !bytes.Equal(got[i], recs[i]) {
				t.Fatalf("record %d: got %d bytes, want the %d put", i, len(got[i]), len(recs[i]))
			}
		}
		for i := range absent {
			if got[n+i] != nil {
				t.Errorf("absent key %d: got %d bytes", i, len(got[n+i]))
			}
		}
		// Ask each node alone (no redirects followed): every record is on exactly one
		// node, as put, and the records are on more than one node.
		perNode := make([]int, len(nodes))
		for i, k := range keys {
			holders := 0
			for j, nd := range nodes {
				c := redis.NewClient(&redis.Options{Addr: nd.addr(), DisableIdentity: true, MaxRetries: -1})
				b, err := c.Get(ctx, redisKey(k)).Bytes()
				c.Close()
				switch {
				case err == nil:
					if !bytes.Equal(b, recs[i]) {
						t.Fatalf("record %d on node %s differs", i, nd.addr())
					}
					holders++
					perNode[j]++
				case !strings.HasPrefix(err.Error(), "MOVED "):
					t.Fatalf("GET on node %s: %v", nd.addr(), err)
				}
			}
			if holders != 1 {
				t.Fatalf("record %d held by %d nodes", i, holders)
			}
		}
		used := 0
		for _, c := range perNode {
			if c > 0 {
				used++
			}
		}
		if used < 2 {
			t.Errorf("records per node %v: want them on more than one node", perNode)
		}
		t.Logf("%d records per node: %v", n, perNode)
	})

	t.Run("caches share blocks", func(t *testing.T) { cacheSharesThrough(t, spec) })

	// Last: a node stopped. Once the others declare the cluster down, reads and writes
	// fail as a failing tier's do (the blocks are computed), not as a refused write.
	t.Run("node down", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		first := redis.NewClient(&redis.Options{Addr: nodes[0].addr(), DisableIdentity: true, MaxRetries: -1})
		defer first.Close()
		k := uint64(0)
		for i := uint64(1); k == 0; i++ { // a key the first node serves
			if err := tr.Put(ctx, i, []byte("x")); err != nil {
				t.Fatal(err)
			}
			if first.Get(ctx, redisKey(i)).Err() == nil {
				k = i
			}
		}
		nodes[2].stop()
		for state := ""; !strings.Contains(state, "cluster_state:fail"); time.Sleep(50 * time.Millisecond) {
			var err error
			if state, err = first.ClusterInfo(ctx).Result(); err != nil {
				t.Fatalf("waiting for the cluster to fail: %v", err)
			}
		}
		err := tr.Put(ctx, k, []byte("y"))
		if err == nil || errors.Is(err, ErrRefused) || !redis.IsClusterDownError(err) {
			t.Errorf("Put with the cluster down: %v; want CLUSTERDOWN as a failure, not ErrRefused", err)
		}
		if got, err := tr.Get(ctx, []uint64{k}); err == nil {
			t.Errorf("Get with the cluster down = %q, no error", got)
		}
	})
}

// Specs a Redis Cluster tier refuses, and the name it gives a good one (no password).
func TestRedisClusterSpec(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"redis-cluster://", "is not HOST:PORT"},
		{"redis-cluster://127.0.0.1", "is not HOST:PORT"},
		{"redis-cluster://127.0.0.1:7000,", "is not HOST:PORT"},
		{"redis-cluster://127.0.0.1:7000,:7001", "is not HOST:PORT"},
		{"redis-cluster://127.0.0.1:7000/2", "only database 0"},
		{"redis-cluster://127.0.0.1:7000?bogus=1", "bogus"},
	} {
		if _, err := Open(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
	for _, tc := range []struct{ spec, name string }{
		{"redis-cluster://u:secret@127.0.0.1:7000,127.0.0.1:7001/0", "redis-cluster://127.0.0.1:7000,127.0.0.1:7001"},
		{"rediss-cluster://127.0.0.1:7000", "rediss-cluster://127.0.0.1:7000"},
	} {
		r, err := Open(tc.spec)
		if err != nil {
			t.Errorf("Open(%q): %v", tc.spec, err)
			continue
		}
		if r.Name() != tc.name {
			t.Errorf("Open(%q).Name() = %q, want %q", tc.spec, r.Name(), tc.name)
		}
		r.Close()
	}
}
