package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ax-scheduler/ax/client"
)

// RawLoad drives n HTTP/1.1 requests over `clients` keep-alive connections
// to one server, the way wrk does: each request is written from a prepared
// buffer and the answer is read with a bufio.Reader, so the load generator
// spends a few microseconds per request instead of the Go HTTP client's
// tens. On a two-core machine the generator shares the CPU with the
// cluster; a lean one leaves more of it to the thing being measured.
// Every answer must have status want (0: any 2xx). With tc the
// connections are TLS.
func RawLoad(ctx context.Context, addr string, tc *tls.Config, clients, n, want int, build func(buf []byte, i int) []byte) (*LoadResult, error) {
	conns := make([]net.Conn, clients)
	for i := range conns {
		var c net.Conn
		var err error
		if tc != nil {
			c, err = tls.Dial("tcp", addr, tc)
		} else {
			c, err = net.Dial("tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		defer c.Close()
		conns[i] = c
	}
	var next atomic.Int64
	lat := make([]time.Duration, n)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bufio.NewReaderSize(c, 16<<10)
			var buf []byte
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				buf = build(buf[:0], i)
				t0 := time.Now()
				if _, err := c.Write(buf); err != nil {
					errs <- err
					return
				}
				if err := readRawAnswer(r, want); err != nil {
					errs <- fmt.Errorf("request %d: %w", i, err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return Summarize(lat, el), nil
}

// readRawAnswer reads one HTTP/1.1 response with a Content-Length body and
// fails unless its status is want (0: any 2xx).
func readRawAnswer(r *bufio.Reader, want int) error {
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !strings.HasPrefix(line, "HTTP/1.") {
		return fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(line[9:12])
	if err != nil {
		return fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if length < 0 {
		return fmt.Errorf("answer without Content-Length (status %d)", status)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	if (want == 0 && status/100 != 2) || (want != 0 && status != want) {
		return fmt.Errorf("status %d: %s", status, body)
	}
	return nil
}

// RawPost appends a POST request with a JSON body and a fresh
// Idempotency-Key, as client.Client sends it, to buf.
func RawPost(buf []byte, host, path, token string, body []byte) []byte {
	buf = fmt.Appendf(buf, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\n",
		path, host, len(body), client.HeaderIdempotencyKey, client.NewRequestID())
	if token != "" {
		buf = fmt.Appendf(buf, "Authorization: Bearer %s\r\n", token)
	}
	buf = append(buf, "\r\n"...)
	return append(buf, body...)
}

// LeaderAddr asks the cluster for its leader's HTTP address, so load
// generators that do not follow redirects or forwarding hit it directly.
func LeaderAddr(ctx context.Context, cl *client.Client) (string, error) {
	s, err := cl.Cluster(ctx)
	if err != nil {
		return "", err
	}
	if s.LeaderHTTP == "" {
		return "", fmt.Errorf("no leader")
	}
	return strings.TrimPrefix(s.LeaderHTTP, "http://"), nil
}
