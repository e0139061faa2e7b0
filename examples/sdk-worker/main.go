// Command sdk-worker is a runnable example of an ax executor written with
// the Go SDK (package worker): it serves the "greet" and "charge" handlers
// for tasks whose action is {"type": "sdk", "handler": "greet"} (or
// "charge"). What a handler writes to worker.Output(ctx) is the attempt's
// log, as a shell action's output is.
//
//	go run ./examples/sdk-worker -server 127.0.0.1:7070
//	echo '{"name":"greet","trigger":{"type":"event"},"action":{"type":"sdk","handler":"greet"}}' | ax task apply -f -
//	ax trigger greet -p who=world
//	ax instance log ID        # hello, world (execution ...)
//
// A secured cluster takes the same credentials as ax executor: an
// executor token (-token, default $AX_TOKEN, or -token-file) and, with
// TLS, the CA (-ca-cert, $AX_CACERT) and, when the nodes ask for one, a
// client certificate (-client-cert and -client-key, $AX_CLIENT_CERT and
// $AX_CLIENT_KEY):
//
//	AX_TOKEN=$(cat sdk-worker.token) go run ./examples/sdk-worker -server 10.0.0.1:7070 -ca-cert tls/ax-ca.pem
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/ax-scheduler/ax/tlsutil"
	"github.com/ax-scheduler/ax/worker"
)

func main() {
	servers := flag.String("server", envOr("AX_ADDR", "127.0.0.1:7070"), "agent HTTP address(es), comma-separated (env AX_ADDR)")
	name := flag.String("name", "sdk-worker", "executor name")
	token := flag.String("token", "", "executor token (default env AX_TOKEN)")
	tokenFile := flag.String("token-file", "", "read the token from this file")
	caCert := flag.String("ca-cert", os.Getenv("AX_CACERT"), "CA certificate to verify the servers with; host:port addresses then mean https (env AX_CACERT)")
	clientCert := flag.String("client-cert", os.Getenv("AX_CLIENT_CERT"), "client certificate to present (env AX_CLIENT_CERT)")
	clientKey := flag.String("client-key", os.Getenv("AX_CLIENT_KEY"), "its private key (env AX_CLIENT_KEY)")
	ledger := flag.String("ledger", "", "append each greeting's execution id to this file (for tests)")
	flag.Parse()

	cfg := worker.Config{Servers: strings.Split(*servers, ","), Name: *name, Capacity: 8,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "sdk-worker"})}
	var err error
	if cfg.Token, err = readToken(*token, *tokenFile); err != nil {
		fail(err)
	}
	if *caCert != "" || *clientCert != "" || *clientKey != "" {
		if cfg.TLS, err = tlsutil.NewClientConfig(*caCert, *clientCert, *clientKey); err != nil {
			fail(fmt.Errorf("%w (flags -ca-cert, -client-cert, -client-key)", err))
		}
	}

	handlers := map[string]worker.Handler{
		// greet writes a greeting to the attempt's log (fmt.Printf would
		// go to this process's stdout, not to the attempt).
		"greet": func(ctx context.Context, job worker.Job) error {
			who := job.Params["who"]
			if who == "" {
				who = "ax"
			}
			fmt.Fprintf(worker.Output(ctx), "hello, %s (execution %s)\n", who, job.ExecutionID)
			if *ledger != "" {
				f, err := os.OpenFile(*ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = fmt.Fprintln(f, job.ExecutionID)
				return err
			}
			return nil
		},
		// charge shows a payload and a permanent (not retried) error; the
		// log of a failed attempt is kept too.
		"charge": func(ctx context.Context, job worker.Job) error {
			var p struct {
				Amount int `json:"amount"`
			}
			out := worker.Output(ctx)
			fmt.Fprintf(out, "charging payload %s\n", job.Payload)
			if err := json.Unmarshal(job.Payload, &p); err != nil || p.Amount <= 0 {
				fmt.Fprintln(out, "refusing: the amount must be a positive integer")
				return fmt.Errorf("bad payload %s: %w", job.Payload, worker.ErrPermanent)
			}
			fmt.Fprintf(out, "charged %d\n", p.Amount)
			return nil
		},
	}
	cfg.Handlers = handlers
	w, err := worker.New(cfg)
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fail(err)
	}
}

// readToken is the token of -token, -token-file or $AX_TOKEN, in that
// order ("" without ACLs).
func readToken(token, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", fmt.Errorf("token file %s is empty", file)
		}
		return token, nil
	}
	if token == "" {
		token = os.Getenv("AX_TOKEN") // not the flag's default: -h would print it
	}
	return token, nil
}

// envOr is the environment variable key, or def when it is empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// fail reports err and exits 1.
func fail(err error) {
	fmt.Fprintln(os.Stderr, "sdk-worker:", err)
	os.Exit(1)
}
