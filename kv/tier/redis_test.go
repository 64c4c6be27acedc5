package tier

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// redisServer is a redis-server process of this test on a free loopback port, so that
// a test can stop and restart it.
type redisServer struct {
	bin, dir string
	port     int
	args     []string // more redis-server options
	cmd      *exec.Cmd
}

// redisBinary finds redis-server (Debian's package puts it in /usr/bin).
func redisBinary(t testing.TB) string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no redis-server binary found (install Debian's redis-server package; .ci/run does): the Redis tier tests need a real server")
	return ""
}

func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &redisServer{bin: redisBinary(t), dir: t.TempDir(), port: port, args: args}
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }
func (r *redisServer) url() string  { return "redis://" + r.addr() + "/0" }

func (r *redisServer) start(t testing.TB) {
	t.Helper()
	args := []string{"--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log")}
	r.cmd = exec.Command(r.bin, append(args, r.args...)...)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", r.addr()); err == nil {
			c.Close()
			return
		}
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	t.Fatalf("redis-server did not listen on %s: %s", r.addr(), log)
}

func (r *redisServer) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

// sharedRedisURL is the server .ci/run starts ($KVQ_TEST_REDIS, host:port), or one of
// this test's own.
func sharedRedisURL(t testing.TB) string {
	if a := os.Getenv("KVQ_TEST_REDIS"); a != "" {
		return "redis://" + a + "/0"
	}
	return startRedis(t).url()
}

func TestRedisTier(t *testing.T) {
	r, err := OpenRedis(sharedRedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	redisRoundTrip(t, r)
}

// redisRoundTrip puts, gets and replaces records in r, with keys no other test uses.
func redisRoundTrip(t *testing.T, r Tier) {
	t.Helper()
	ctx := context.Background()
	k1, k2 := uint64(time.Now().UnixNano()), uint64(time.Now().UnixNano())^0xabcdef
	if err := r.Put(ctx, k1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, []uint64{k1, k2})
	if err != nil || string(got[0]) != "one" || got[1] != nil {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := r.Put(ctx, k1, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get(ctx, []uint64{k1}); string(got[0]) != "two" {
		t.Errorf("Put did not replace: %q", got[0])
	}
}

func TestRedisTierDown(t *testing.T) {
	srv := startRedis(t)
	r, err := OpenRedis(srv.url())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if err := r.Put(ctx, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	if _, err := r.Get(ctx, []uint64{1}); err == nil {
		t.Fatal("Get from a stopped server succeeded")
	}
	if err := r.Put(ctx, 2, []byte("y")); err == nil {
		t.Fatal("Put to a stopped server succeeded")
	}
	srv.start(t) // empty: nothing is saved
	got, err := r.Get(ctx, []uint64{1})
	if err != nil || got[0] != nil {
		t.Fatalf("after restart: %q, %v", got, err)
	}
}
