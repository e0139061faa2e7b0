// Command asynqload is the asynq side of scripts/peers.sh (issue 27 item
// 6, docs/performance.md "Like-for-like peers"): one asynq.Client shared
// by -goroutines goroutines, each looping on Enqueue of a "close-order"
// task with ax-bench's 34-byte payload, processed in an hour (so that it
// stays pending, like ax-bench submit's delayed submissions), until -n
// enqueues are acknowledged. It prints one row as ax-bench submit does:
// mode, enqueued, per second, p50, p99 of each Enqueue's latency.
//
// It is a module of its own so that ax's module does not depend on asynq
// and go-redis; go ./... patterns of ax's module do not reach it.
//
//	cd scripts/asynqload && go run . -redis 127.0.0.1:16379 -goroutines 64 -n 40000
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	goroutines := flag.Int("goroutines", 64, "goroutines sharing the one asynq.Client")
	n := flag.Int("n", 40000, "enqueues")
	pool := flag.Int("pool", 0, "go-redis pool size (0: asynq's default, 10 per CPU)")
	label := flag.String("label", "", "the row's mode (default \"asynq x GOROUTINES goroutines\")")
	flag.Parse()
	if *goroutines < 1 || *n < 1 || *pool < 0 {
		fmt.Fprintln(os.Stderr, "asynqload: -goroutines and -n must be positive, -pool not negative")
		os.Exit(2)
	}
	if *label == "" {
		*label = fmt.Sprintf("asynq x %d goroutines", *goroutines)
	}
	c := asynq.NewClient(asynq.RedisClientOpt{Addr: *addr, PoolSize: *pool})
	defer c.Close()
	lat, el, err := run(c, *goroutines, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "asynqload:", err)
		os.Exit(1)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(10 * time.Microsecond)
	}
	fmt.Printf("%-28s %10d %12.0f %10s %10s\n", *label, len(lat), float64(len(lat))/el.Seconds(), pct(0.5), pct(0.99))
}

// run enqueues n tasks from the given number of goroutines and returns
// each enqueue's latency and the time all took; the first error stops it.
func run(c *asynq.Client, goroutines, n int) ([]time.Duration, time.Duration, error) {
	payload := []byte(`{"order":123456,"action":"close"}`)
	var next atomic.Int64
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	start := time.Now()
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if _, err := c.Enqueue(asynq.NewTask("close-order", payload), asynq.ProcessIn(time.Hour)); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(n)) // stop the others
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}
