package tracing

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/clustertest"
	"github.com/ax-scheduler/ax/internal/localcluster"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/tlsutil"
	"github.com/ax-scheduler/ax/worker"
)

// receiver is an OTLP/HTTP trace receiver: it decodes each
// ExportTraceServiceRequest and keeps its spans.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []*tracepb.Span
	node     map[*tracepb.Span]string // service.instance.id of its sender
	service  string
	requests int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{node: map[*tracepb.Span]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var ex coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &ex)
		}
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("receiver: %s %s %s: %v", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.requests++
		for _, rs := range ex.ResourceSpans {
			node := ""
			for _, a := range rs.GetResource().GetAttributes() {
				switch a.Key {
				case "service.name":
					r.service = a.GetValue().GetStringValue()
				case "service.instance.id":
					node = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
				for _, sp := range ss.Spans {
					r.node[sp] = node
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// of returns the spans of instance id by name (with "#n" for the
// attempt-numbered ones), its trace's id.
func (r *receiver) of(id string) map[string]*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range r.spans {
		name, inst := s.Name, ""
		for _, a := range s.Attributes {
			switch a.Key {
			case "ax.instance":
				inst = a.GetValue().GetStringValue()
			case "ax.attempt":
				name += fmt.Sprintf("#%d", a.GetValue().GetIntValue())
			}
		}
		if inst == id {
			out[name] = s
		}
	}
	return out
}

// count is how many spans named name instance id has.
func (r *receiver) count(id, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.spans {
		for _, a := range s.Attributes {
			if a.Key == "ax.instance" && a.GetValue().GetStringValue() == id && s.Name == name {
				n++
			}
		}
	}
	return n
}

// waitSpans waits until instance id's spans include every name.
func (r *receiver) waitSpans(t *testing.T, id string, names ...string) map[string]*tracepb.Span {
	t.Helper()
	var got map[string]*tracepb.Span
	testkit.Eventually(t, 30*time.Second, func() error {
		got = r.of(id)
		for _, n := range names {
			if got[n] == nil {
				return fmt.Errorf("instance %s: no span %s yet (have %v)", id, n, slices.Sorted(mapKeys(got)))
			}
		}
		return nil
	})
	return got
}

func mapKeys(m map[string]*tracepb.Span) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func traceparentOf(s *tracepb.Span) string {
	return "00-" + hex.EncodeToString(s.TraceId) + "-" + hex.EncodeToString(s.SpanId) + "-01"
}

// endpoint is where post sends a write: base is http://ADDR or
// https://ADDR, hc trusts the cluster's CA for https, and token ("" for
// none) goes in the Authorization header.
type endpoint struct {
	base, token string
	hc          *http.Client
}

// plain is a node without TLS or ACLs at addr.
func plain(addr string) endpoint { return endpoint{base: "http://" + addr, hc: http.DefaultClient} }

// target is an HTTP action's endpoint: it keeps the last request's
// traceparent header.
type target struct {
	*httptest.Server
	mu     sync.Mutex
	header string
}

func newTarget(t *testing.T) *target {
	tg := &target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		tg.header = r.Header.Get("Traceparent")
		tg.mu.Unlock()
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) traceparent() string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.header
}

// post sends a write with a caller's traceparent header.
func post(t *testing.T, ep endpoint, path, traceparent string, body any) model.Submitted {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, ep.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", traceparent)
	if ep.token != "" {
		req.Header.Set("Authorization", "Bearer "+ep.token)
	}
	resp, err := ep.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s %s", path, resp.Status, out)
	}
	var one model.Submitted
	if json.Unmarshal(out, &one); one.ID != "" {
		return one
	}
	var many model.SubmitResult
	if err := json.Unmarshal(out, &many); err != nil || len(many.Instances) != 1 {
		t.Fatalf("POST %s: %s", path, out)
	}
	return many.Instances[0]
}

const callerTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// TestTracing: one node traces to an OTLP receiver. A shell task that
// fails once and then succeeds, triggered with a caller's traceparent,
// has its whole life as one trace (root linked to the caller, fire,
// queue waits, leases, attempts, the retry's backoff) and each attempt's
// script saw $TRACEPARENT naming its attempt's span; an HTTP action
// received the traceparent header, an SDK handler's context carried it,
// a before-run approval shows as its wait, and a submit with a
// traceparent links its instance, which a re-run does not send again
// (its run is a span under the root). A node with tracing off sends
// nothing and hands out no traceparent.
func TestTracing(t *testing.T) {
	rcv := newReceiver(t)
	target := newTarget(t)

	c := clustertest.StartProcesses(t, 1, clustertest.WithArgs("-executor", "true"),
		clustertest.WithNodeEnv("n1", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=100",
			"OTEL_SERVICE_NAME=ax-traced"))
	ctx := testkit.Context(t, 120*time.Second)
	cl := c.Client()
	addr := c.Nodes[0].HTTPAddr
	testkit.Eventually(t, 30*time.Second, func() error { // the trace link needs protocol 8
		st, err := cl.Cluster(ctx)
		if err == nil && st.Protocol < 8 {
			err = fmt.Errorf("protocol %d", st.Protocol)
		}
		return err
	})
	dir := t.TempDir()
	for _, task := range []*model.Task{
		clustertest.ShellTask("sh", `echo "$TRACEPARENT" > `+dir+`/tp.$AX_ATTEMPT; [ "$AX_ATTEMPT" -ge 2 ]`,
			model.Policy{MaxRetries: 1, RetryInterval: model.Duration(time.Second)}),
		clustertest.ShellTask("gated", "true", model.Policy{Approval: "before_run"}),
		{Name: "web", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: target.URL}},
		{Name: "sdk", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "traced"}},
	} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	handled := make(chan trace.SpanContext, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := worker.New(worker.Config{Servers: []string{addr}, Name: "sdk", Handlers: map[string]worker.Handler{
		"traced": func(ctx context.Context, _ worker.Job) error {
			handled <- trace.SpanContextFromContext(ctx)
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(wctx) }()

	sh := post(t, plain(addr), "/v1/tasks/sh/trigger", callerTrace, model.TriggerRequest{}).ID
	web := post(t, plain(addr), "/v1/tasks/web/submit", callerTrace, model.SubmitRequest{}).ID
	sdk := clustertest.Trigger(t, cl, "sdk")
	gated := clustertest.Trigger(t, cl, "gated")
	agenttest.WaitState(t, cl, gated, 20*time.Second, model.StateWaitingApproval)
	if _, err := cl.Decide(ctx, gated, client.Approve, "ok"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{sh, web, sdk, gated} {
		agenttest.WaitState(t, cl, id, 60*time.Second, model.StateSuccess)
	}

	// The shell instance: one trace, every span a child of the root (a
	// lease of its attempt), the root linked to the caller.
	s := rcv.waitSpans(t, sh, "ax.instance", "ax.fire", "ax.queue#1", "ax.lease#1", "ax.attempt#1", "ax.retry_backoff#1",
		"ax.queue#2", "ax.lease#2", "ax.attempt#2")
	root := s["ax.instance"]
	if len(root.ParentSpanId) != 0 || len(root.Links) != 1 || hex.EncodeToString(root.Links[0].TraceId) != callerTrace[3:35] ||
		hex.EncodeToString(root.Links[0].SpanId) != callerTrace[36:52] {
		t.Errorf("root: parent %x links %v; want no parent and a link to the caller's span", root.ParentSpanId, root.Links)
	}
	for name, sp := range s {
		want := root.SpanId
		switch {
		case name == "ax.instance":
			continue
		case strings.HasPrefix(name, "ax.lease#"):
			want = s["ax.attempt#"+strings.TrimPrefix(name, "ax.lease#")].SpanId
		}
		if !bytes.Equal(sp.TraceId, root.TraceId) || !bytes.Equal(sp.ParentSpanId, want) {
			t.Errorf("%s: trace %x parent %x, want trace %x parent %x", name, sp.TraceId, sp.ParentSpanId, root.TraceId, want)
		}
		if sp.StartTimeUnixNano > sp.EndTimeUnixNano || sp.StartTimeUnixNano < root.StartTimeUnixNano || sp.EndTimeUnixNano > root.EndTimeUnixNano {
			t.Errorf("%s: %d..%d outside the root's %d..%d", name, sp.StartTimeUnixNano, sp.EndTimeUnixNano, root.StartTimeUnixNano, root.EndTimeUnixNano)
		}
	}
	if a1 := s["ax.attempt#1"]; a1.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the failed attempt's status: %v", a1.Status)
	}
	if r := s["ax.retry_backoff#1"]; r.EndTimeUnixNano-r.StartTimeUnixNano < uint64(900*time.Millisecond) {
		t.Errorf("the retry backoff lasted %v, want the 1s retry interval", time.Duration(r.EndTimeUnixNano-r.StartTimeUnixNano))
	}
	for n := 1; n <= 2; n++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("tp.%d", n)))
		if want := traceparentOf(s[fmt.Sprintf("ax.attempt#%d", n)]); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("attempt %d's $TRACEPARENT = %q, %v; want %s", n, b, err, want)
		}
	}

	// The HTTP action's header, the submit's link.
	ws := rcv.waitSpans(t, web, "ax.instance", "ax.attempt#1")
	got := target.traceparent()
	if want := traceparentOf(ws["ax.attempt#1"]); got != want {
		t.Errorf("the HTTP action's traceparent header = %q, want %s", got, want)
	}
	if l := ws["ax.instance"].Links; len(l) != 1 || hex.EncodeToString(l[0].TraceId) != callerTrace[3:35] {
		t.Errorf("the submitted instance's links: %v", l)
	}
	// Re-run: a span of its own under the root, which is not sent again.
	if _, err := cl.Rerun(ctx, web); err != nil {
		t.Fatal(err)
	}
	rs := rcv.waitSpans(t, web, "ax.rerun", "ax.attempt#2")
	if r := rs["ax.rerun"]; !bytes.Equal(r.ParentSpanId, ws["ax.instance"].SpanId) || !bytes.Equal(rs["ax.attempt#2"].ParentSpanId, r.SpanId) {
		t.Errorf("re-run: ax.rerun's parent %x, its attempt's %x; want the root %x, then ax.rerun", r.ParentSpanId, rs["ax.attempt#2"].ParentSpanId, ws["ax.instance"].SpanId)
	}
	if n := rcv.count(web, "ax.instance"); n != 1 {
		t.Errorf("the re-run instance's root span was sent %d times, want once", n)
	}

	// The SDK handler's context.
	ss := rcv.waitSpans(t, sdk, "ax.instance", "ax.attempt#1")
	select {
	case sc := <-handled:
		if traceparentOf(ss["ax.attempt#1"]) != "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01" || !sc.IsRemote() || !sc.IsSampled() {
			t.Errorf("the SDK handler's span context %v, want the attempt's %s", sc, traceparentOf(ss["ax.attempt#1"]))
		}
	default:
		t.Error("the SDK handler did not run")
	}
	if l := ss["ax.instance"].Links; len(l) != 0 {
		t.Errorf("an instance triggered without a traceparent has links %v", l)
	}

	// The approval wait.
	gs := rcv.waitSpans(t, gated, "ax.instance", "ax.approval#0", "ax.queue#1", "ax.attempt#1")
	if a := gs["ax.approval#0"]; !bytes.Equal(a.ParentSpanId, gs["ax.instance"].SpanId) || a.EndTimeUnixNano <= a.StartTimeUnixNano {
		t.Errorf("approval wait: parent %x, %d..%d", a.ParentSpanId, a.StartTimeUnixNano, a.EndTimeUnixNano)
	}
	checkMetrics(t, addr, hex.EncodeToString(root.TraceId))
	rcv.mu.Lock()
	if rcv.service != "ax-traced" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", rcv.service)
	}
	rcv.mu.Unlock()
}

// TestTracing_Off: with tracing off (OTEL_SDK_DISABLED=true, though an
// endpoint is set) a node sends nothing, to the end of its shutdown, and
// its actions get no traceparent.
func TestTracing_Off(t *testing.T) {
	rcv := newReceiver(t)
	c := clustertest.StartProcesses(t, 1, clustertest.WithArgs("-executor", "true"),
		clustertest.WithNodeEnv("n1", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SDK_DISABLED=true"))
	ctx := testkit.Context(t, 60*time.Second)
	cl := c.Client()
	out := filepath.Join(t.TempDir(), "tp")
	if _, err := cl.PutTask(ctx, clustertest.ShellTask("sh", `echo "tp=$TRACEPARENT" > `+out, model.Policy{})); err != nil {
		t.Fatal(err)
	}
	id := post(t, plain(c.Nodes[0].HTTPAddr), "/v1/tasks/sh/trigger", callerTrace, model.TriggerRequest{}).ID
	agenttest.WaitState(t, cl, id, 30*time.Second, model.StateSuccess)
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "tp=" {
		t.Errorf("with tracing off the script saw %q, %v", b, err)
	}
	c.Close() // a tracing node flushes its spans as it stops
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.requests != 0 {
		t.Errorf("with tracing off the node sent %d export requests", rcv.requests)
	}
}

// checkMetrics: the OpenMetrics exposition carries trace-id exemplars on
// the attempt duration and fire lateness histograms (the shell
// instance's among them), and the text exposition still passes promtool.
func checkMetrics(t *testing.T, addr, traceID string) {
	t.Helper()
	get := func(accept string) string {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	om := get("application/openmetrics-text;version=1.0.0")
	for _, m := range []string{"ax_attempt_duration_seconds_bucket", "ax_fire_lateness_seconds_bucket"} {
		found := false
		for _, l := range strings.Split(om, "\n") {
			if strings.HasPrefix(l, m+"{") && strings.Contains(l, `# {trace_id="`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no trace_id exemplar on %s in the OpenMetrics exposition", m)
		}
	}
	if !strings.Contains(om, `# {trace_id="`+traceID+`"}`) {
		t.Errorf("no exemplar names the shell instance's trace %s", traceID)
	}
	text := get("text/plain")
	if strings.Contains(text, "trace_id") {
		t.Error("the text exposition carries exemplars")
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("AX_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool not found and AX_REQUIRE_PROMTOOL is set: %v", err)
		}
		t.Log("promtool not found: the text exposition is not checked")
		return
	}
	cmd := exec.Command(p, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestTracing_LeaderChange: three nodes with TLS and ACLs trace (the
// TLS + ACL deployment; TestTracing is the one-node one). A caller with a
// writer token and a traceparent triggers a shell task and submits to
// an HTTP action and an SDK handler through a follower over HTTPS: each
// instance's root is linked to the caller, and each attempt's
// traceparent reaches its action ($TRACEPARENT, the header, the
// handler's context). The shell instance's first attempt fails under one
// leader, which then stops (handing leadership over); its retry runs
// under the next. Both leaders' spans are one trace: the same trace id,
// every span a child of the one root span id, each attempt's span sent
// by the node that led when it ended.
func TestTracing_LeaderChange(t *testing.T) {
	const token = "s3cret-s3cret-s3cret"
	rcv := newReceiver(t)
	target := newTarget(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}
	tlsDir := t.TempDir()
	c := clustertest.StartProcesses(t, 3, clustertest.WithTLS(tlsDir), clustertest.WithToken(token),
		clustertest.WithNodeEnv("n1", env...), clustertest.WithNodeEnv("n2", env...), clustertest.WithNodeEnv("n3", env...))
	ctx := testkit.Context(t, 120*time.Second)
	cl := c.Client()
	dir := t.TempDir()
	for _, task := range []*model.Task{
		clustertest.ShellTask("flaky", `echo "$TRACEPARENT" > `+dir+`/tp.$AX_ATTEMPT; [ "$AX_ATTEMPT" -ge 2 ]`,
			model.Policy{MaxRetries: 1, RetryInterval: model.Duration(3 * time.Second)}),
		{Name: "web", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionHTTP, URL: target.URL}},
		{Name: "sdk", Trigger: model.Trigger{Type: model.TriggerEvent}, Action: model.Action{Type: model.ActionSDK, Handler: "traced"}},
	} {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.ACLBootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	writer := clustertest.CreateToken(t, ctx, cl, model.ACLTokenRequest{Name: "caller", Role: model.RoleWriter})
	if _, err := c.StartExecutor("e1"); err != nil {
		t.Fatal(err)
	}
	first, err := c.Leader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	follower, _, err := c.Follower(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := tlsutil.NewClientConfig(localcluster.CAFile(tlsDir), "", "")
	if err != nil {
		t.Fatal(err)
	}
	caller := endpoint{base: "https://" + follower.HTTPAddr, token: writer,
		hc: &http.Client{Transport: &http.Transport{TLSClientConfig: ca}, Timeout: 30 * time.Second}}
	handled := make(chan trace.SpanContext, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := worker.New(worker.Config{Servers: []string{follower.HTTPAddr}, TLS: ca, Token: token, Name: "sdk",
		Handlers: map[string]worker.Handler{"traced": func(ctx context.Context, _ worker.Job) error {
			handled <- trace.SpanContextFromContext(ctx)
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(wctx) }()

	id := post(t, caller, "/v1/tasks/flaky/trigger", callerTrace, model.TriggerRequest{}).ID
	web := post(t, caller, "/v1/tasks/web/submit", callerTrace, model.SubmitRequest{}).ID
	sdk := post(t, caller, "/v1/tasks/sdk/submit", callerTrace, model.SubmitRequest{}).ID
	agenttest.WaitState(t, cl, id, 30*time.Second, model.StateRetrying)
	rcv.waitSpans(t, id, "ax.attempt#1") // sent before the leader stops
	first.Stop()
	agenttest.WaitState(t, cl, id, 60*time.Second, model.StateSuccess)
	s := rcv.waitSpans(t, id, "ax.instance", "ax.fire", "ax.queue#1", "ax.attempt#1", "ax.retry_backoff#1", "ax.queue#2", "ax.attempt#2")
	root := s["ax.instance"]
	for name, sp := range s {
		if !bytes.Equal(sp.TraceId, root.TraceId) {
			t.Errorf("%s: trace %x, want the root's %x", name, sp.TraceId, root.TraceId)
		}
		if name != "ax.instance" && !strings.HasPrefix(name, "ax.lease") && !bytes.Equal(sp.ParentSpanId, root.SpanId) {
			t.Errorf("%s: parent %x, want the root %x", name, sp.ParentSpanId, root.SpanId)
		}
	}
	rcv.mu.Lock()
	n1, n2 := rcv.node[s["ax.attempt#1"]], rcv.node[s["ax.attempt#2"]]
	rcv.mu.Unlock()
	if n1 != first.ID || n2 == first.ID || n2 == "" {
		t.Errorf("attempt 1's span from %q, attempt 2's from %q; want the first leader %s, then another", n1, n2, first.ID)
	}
	for n := 1; n <= 2; n++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("tp.%d", n)))
		if want := traceparentOf(s[fmt.Sprintf("ax.attempt#%d", n)]); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("attempt %d's $TRACEPARENT = %q, %v; want %s", n, b, err, want)
		}
	}

	// Every instance the caller made is linked to the caller's span, and
	// the HTTP action and the SDK handler got their attempt's traceparent.
	for _, in := range []string{id, web, sdk} {
		agenttest.WaitState(t, cl, in, 60*time.Second, model.StateSuccess)
		r := rcv.waitSpans(t, in, "ax.instance", "ax.attempt#1")["ax.instance"]
		if len(r.Links) != 1 || hex.EncodeToString(r.Links[0].TraceId) != callerTrace[3:35] || hex.EncodeToString(r.Links[0].SpanId) != callerTrace[36:52] {
			t.Errorf("instance %s: links %v, want one to the caller's span", in, r.Links)
		}
	}
	got := target.traceparent()
	if want := traceparentOf(rcv.of(web)["ax.attempt#1"]); got != want {
		t.Errorf("the HTTP action's traceparent header = %q, want %s", got, want)
	}
	select {
	case sc := <-handled:
		if want := traceparentOf(rcv.of(sdk)["ax.attempt#1"]); want != "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01" {
			t.Errorf("the SDK handler's span context %v, want the attempt's %s", sc, want)
		}
	default:
		t.Error("the SDK handler did not run")
	}
}
