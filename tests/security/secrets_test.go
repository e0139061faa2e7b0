package security

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ax-scheduler/ax/client"
	"github.com/ax-scheduler/ax/internal/agenttest"
	"github.com/ax-scheduler/ax/internal/testkit"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/channel"
)

// TestSecrets_NeverAtRestOrInAnswers: a three-node cluster with
// -encrypt-key-file delivers a secret to a shell task (template and env)
// and an HTTP task (header and JSON body); afterwards the secret's
// plaintext appears in no API answer, log, metric, data file or snapshot
// (every byte of each is searched, raw and base64), while a literal env
// value of another task, the control, is found in the data files.
func TestSecrets_NeverAtRestOrInAnswers(t *testing.T) {
	keyFile := newKeyFile(t)
	c := startCluster(t, 3, withArgs("-encrypt-key-file", keyFile, "-snapshot-threshold", "32", "-trailing-logs", "8", "-snapshot-interval", "200ms"))
	ctx := ctxT(t, 90*time.Second)
	if _, err := c.StartExecutor("exec-a", "-capacity", "4"); err != nil {
		t.Fatal(err)
	}
	plain := "PLAIN-" + randHex(t)
	control := "CONTROL-" + randHex(t)

	// The receiver of the HTTP task checks what it got.
	var mu sync.Mutex
	var gotHeader, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotHeader, gotBody = r.Header.Get("X-Api-Key"), string(b)
		mu.Unlock()
		// Echo it back: the kept response body must be masked too.
		fmt.Fprintf(w, "got %s", r.Header.Get("X-Api-Key"))
	}))
	defer srv.Close()

	valueFile := filepath.Join(t.TempDir(), "value")
	if err := os.WriteFile(valueFile, []byte(plain), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := axCLI(t, "secret", "put", "api_key", "-value-file", valueFile, "-addr", c.Nodes[1].HTTPAddr); err != nil || !strings.Contains(out, "encrypted true") {
		t.Fatalf("secret put: %q, %v", out, err)
	}
	outFile := filepath.Join(t.TempDir(), "delivered")
	cl := c.Client()
	tasks := []*model.Task{
		{Name: "uses-secret", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell,
				Command: `printf '%s %s' {{secret "api_key"}} "$FROM_ENV" > ` + outFile + `; echo "value {{secret "api_key"}} env $FROM_ENV"; echo "failing with $FROM_ENV" >&2; exit 3`,
				Env:     map[string]model.Value{"FROM_ENV": model.SecretValue("api_key")}}},
		{Name: "posts-secret", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionHTTP, Method: "POST", URL: srv.URL + "/hook",
				Headers: map[string]model.Value{"X-Api-Key": model.SecretValue("api_key"), "Content-Type": model.TextValue("application/json")},
				Body:    `{"key": "{{secret "api_key"}}"}`}},
		{Name: "control", Trigger: model.Trigger{Type: model.TriggerEvent},
			Action: model.Action{Type: model.ActionShell, Command: "true", Env: map[string]model.Value{"LITERAL": model.TextValue(control)}}},
	}
	for _, task := range tasks {
		if _, err := cl.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	shellID := trigger(t, cl, "uses-secret")
	httpID := trigger(t, cl, "posts-secret")
	shell := agenttest.WaitState(t, cl, shellID, 30*time.Second, model.StateFailed)
	agenttest.WaitState(t, cl, httpID, 30*time.Second, model.StateSuccess)

	// Delivered where it was referenced...
	if b, err := os.ReadFile(outFile); err != nil || string(b) != plain+" "+plain {
		t.Errorf("the shell task wrote %q, %v; want the secret twice", b, err)
	}
	mu.Lock()
	if gotHeader != plain || gotBody != `{"key": "`+plain+`"}` {
		t.Errorf("the HTTP task sent header %q and body %q", gotHeader, gotBody)
	}
	mu.Unlock()
	// ...and masked in what the executor reported.
	if a := shell.AttemptList[0]; !strings.Contains(a.Output, "value *** env ***") || !strings.Contains(a.Error+a.Output, "failing with ***") {
		t.Errorf("attempt output %q, error %q: want the secret masked", a.Output, a.Error)
	}

	// Enough writes for every node to take a snapshot after the secret.
	for i := range 80 {
		if _, err := cl.PutTask(ctx, eventTask(fmt.Sprintf("filler-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		testkit.Eventually(t, 30*time.Second, func() error {
			snaps, _ := filepath.Glob(filepath.Join(n.DataDir, "raft", "snapshots", "*", "state.bin"))
			if len(snaps) == 0 {
				return fmt.Errorf("%s: no snapshot yet", n.ID)
			}
			return nil
		})
	}

	needles := [][]byte{[]byte(plain), []byte(base64.StdEncoding.EncodeToString([]byte(plain))), []byte(hex.EncodeToString([]byte(plain)))}
	leak := func(where string, b []byte) {
		t.Helper()
		for _, nd := range needles {
			if bytes.Contains(b, nd) {
				t.Errorf("the secret's plaintext is in %s", where)
			}
		}
	}
	// Every API answer that could carry it.
	for _, n := range c.Nodes {
		ncl := n.Client()
		for _, path := range []string{"/healthz", "/metrics", "/v1/tasks", "/v1/tasks/uses-secret", "/v1/tasks/posts-secret",
			"/v1/tasks/uses-secret/history", "/v1/tasks/uses-secret/events", "/v1/instances", "/v1/instances/" + shellID,
			"/v1/instances/" + shellID + "/log", "/v1/instances/" + httpID, "/v1/instances/" + httpID + "/log",
			"/v1/secrets", "/v1/cluster", "/v1/executors"} {
			var raw []byte
			if err := ncl.Do(ctx, client.Request{Method: http.MethodGet, Path: path}, &raw); err != nil {
				t.Fatalf("%s %s: %v", n.ID, path, err)
			}
			leak(n.ID+" GET "+path, raw)
		}
	}
	// Every log and every data file, snapshots included.
	controlSeen := false
	err := filepath.WalkDir(filepath.Dir(c.Nodes[0].DataDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		leak(path, b)
		if strings.Contains(path, "raft") && (bytes.Contains(b, []byte(control)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte(control))))) {
			controlSeen = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !controlSeen {
		t.Error("the control value is in no data file: the search sees nothing")
	}
}

// newKeyFile writes a key made by ax keygen to a file, for
// -encrypt-key-file.
func newKeyFile(t *testing.T) string {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "encrypt.key")
	key, err := axCLI(t, "keygen")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile
}

func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestChannels_SecretsNeverAtRest: with -encrypt-key-file, the
// credentials of notification channels — a Slack webhook's URL, a key and
// user info in a webhook's URL, the webhook's signing secret, an SMTP
// password, the chat robots' tokens (a DingTalk access_token, a WeCom
// key, a Feishu hook id) and signing secrets — are in no data file (Raft log, state machine, snapshot),
// while the leader still delivers to the whole URL, and writers read it.
// (The URLs used to be stored in the clear.)
func TestChannels_SecretsNeverAtRest(t *testing.T) {
	keyFile := newKeyFile(t)
	c := startCluster(t, 1, withArgs("-encrypt-key-file", keyFile, "-executor", "true", "-snapshot-threshold", "32", "-trailing-logs", "8", "-snapshot-interval", "200ms"))
	ctx := ctxT(t, 90*time.Second)
	cl := c.Client()
	// Sealed URLs need the cluster at this release's protocol.
	testkit.Eventually(t, 10*time.Second, func() error {
		h, err := cl.Health(ctx)
		if err != nil || h.Protocol != h.Proto {
			return fmt.Errorf("cluster protocol: %+v, %v", h, err)
		}
		return nil
	})
	slack, hookPath, keyParam, sign, smtpPass := "SLACK-"+randHex(t), "HOOK-"+randHex(t), "KEY-"+randHex(t), "SIGN-"+randHex(t), "SMTP-"+randHex(t)
	dingToken, dingSecret, wecomKey, larkHook, larkSecret := "DING-"+randHex(t), "SECDING-"+randHex(t), "WECOM-"+randHex(t), "LARK-"+randHex(t), "LARKSEC-"+randHex(t)
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.URL.String() }))
	defer srv.Close()
	hookURL := srv.URL + "/ax/" + hookPath + "?key=" + keyParam
	for _, ch := range []channel.Channel{
		{Name: "chat", Type: channel.TypeSlack, URL: "https://hooks.slack.com/services/T000/B000/" + slack, Match: map[string]string{"team": "nobody"}},
		{Name: "ops", Type: channel.TypeWebhook, URL: hookURL, Secret: sign, Match: map[string]string{"team": "data"}},
		{Name: "mail", Type: channel.TypeEmail, Match: map[string]string{"team": "nobody"},
			Email: &channel.Email{To: []string{"ops@example.com"}, From: "ax@example.com", SMTP: "127.0.0.1:1", Username: "ax", Password: smtpPass}},
		{Name: "ding", Type: channel.TypeDingTalk, URL: "https://oapi.dingtalk.com/robot/send?access_token=" + dingToken, Secret: dingSecret, Match: map[string]string{"team": "nobody"}},
		{Name: "wecom", Type: channel.TypeWeCom, URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + wecomKey, Match: map[string]string{"team": "nobody"}},
		{Name: "lark", Type: channel.TypeFeishu, URL: "https://open.feishu.cn/open-apis/bot/v2/hook/" + larkHook, Secret: larkSecret, Match: map[string]string{"team": "nobody"}},
	} {
		if _, err := cl.PutChannel(ctx, &ch); err != nil {
			t.Fatalf("put channel %s: %v", ch.Name, err)
		}
	}
	if ch, err := cl.GetChannel(ctx, "ops"); err != nil || ch.URL != hookURL {
		t.Fatalf("the webhook channel read back: %+v, %v; want its whole URL", ch, err)
	}
	// A failure of a task of team data is delivered to the whole URL.
	control := "CONTROL-" + randHex(t) // in the clear: the search must find it
	task := shellTask("fails", "echo "+control+"; exit 3", model.Policy{})
	task.Labels = map[string]string{"team": "data"}
	if _, err := cl.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	trigger(t, cl, "fails")
	select {
	case u := <-got:
		if u != "/ax/"+hookPath+"?key="+keyParam {
			t.Errorf("the webhook was called at %s", u)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notification within 30 s")
	}
	// Snapshots too.
	for i := range 40 {
		if _, err := cl.PutTask(ctx, eventTask(fmt.Sprintf("filler-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	n := c.Nodes[0]
	testkit.Eventually(t, 30*time.Second, func() error {
		if snaps, _ := filepath.Glob(filepath.Join(n.DataDir, "raft", "snapshots", "*", "state.bin")); len(snaps) == 0 {
			return fmt.Errorf("no snapshot yet")
		}
		return nil
	})
	files, controlSeen := 0, false
	err := filepath.WalkDir(n.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		controlSeen = controlSeen || bytes.Contains(b, []byte(control))
		for _, s := range []string{slack, hookPath, keyParam, sign, smtpPass, dingToken, dingSecret, wecomKey, larkHook, larkSecret} {
			for _, nd := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
				if bytes.Contains(b, []byte(nd)) {
					t.Errorf("%s holds %s in the clear", path, s[:strings.Index(s, "-")])
				}
			}
		}
		return nil
	})
	if err != nil || files < 3 || !controlSeen {
		t.Fatalf("searched %d files (control found: %v): %v", files, controlSeen, err)
	}
}
