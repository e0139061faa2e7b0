package action

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ax-scheduler/ax/action/redact"
	"github.com/ax-scheduler/ax/action/result"
	"github.com/ax-scheduler/ax/model"
)

// Headers every HTTP action sends (they override the action's own).
const (
	// RequestIDHeader carries the InstanceID: the same on every attempt
	// of an instance, so that a receiver that has done the work already
	// can answer its earlier result to a retry instead of doing it again.
	RequestIDHeader = "X-AX-Request-ID"
	// AttemptHeader carries the attempt number (1, 2, ...);
	// InstanceID-Attempt is the ExecutionID of the attempt.
	AttemptHeader = "X-AX-Attempt"
	// ShardHeader carries a shard's place, "index/total" (from 0), on
	// the attempts of a shard of a sharded instance.
	ShardHeader = "X-AX-Shard"
)

// runHTTP runs an HTTP action.
func (r *Runner) runHTTP(ctx context.Context, job Job, live io.Writer, red *redact.Masker) Result {
	var res Result
	a := job.Action
	rawURL, err := expandURL(a.URL, job)
	if err != nil {
		res.Error = err.Error()
		res.Retryable = overTime(err)
		return res
	}
	ct, typed := contentType(a.Headers)
	body, err := expandBody(a.Body, job, ct, typed)
	if err != nil {
		res.Error = err.Error()
		res.Retryable = overTime(err)
		return res
	}
	if u, err := url.Parse(rawURL); err != nil {
		res.Error = fmt.Sprintf("bad url: %v", err)
		return res
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		res.Error = fmt.Sprintf("bad url %q: want an absolute http or https URL", rawURL)
		return res
	}
	method := strings.ToUpper(a.Method)
	if method == "" {
		method = http.MethodGet
	}

	d := timeout(job)
	if d == 0 {
		d = DefaultHTTPTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var rbody io.Reader
	if body != "" {
		rbody = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, rawURL, rbody)
	if err != nil {
		res.Error = fmt.Sprintf("bad request: %v", err)
		return res
	}
	for k, hv := range a.Headers {
		v, err := valueText(job, hv)
		if err != nil {
			res.Error = fmt.Sprintf("header %s: %v", k, err)
			return res
		}
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if body != "" && req.Header.Get("Content-Type") == "" && json.Valid([]byte(body)) {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(RequestIDHeader, job.InstanceID)
	req.Header.Set(AttemptHeader, strconv.Itoa(job.Attempt))
	if job.Traceparent != "" {
		req.Header.Set("Traceparent", job.Traceparent)
	}
	if job.Shard != nil {
		req.Header.Set(ShardHeader, fmt.Sprintf("%d/%d", job.Shard.Index, job.Shard.Total))
	}

	client := r.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			res.Canceled = true
			res.Error = canceledError(ctx)
		case rctx.Err() != nil || isTimeout(err):
			res.TimedOut = true
			res.Retryable = true
			res.Error = fmt.Sprintf("timeout after %s: %v", d, unwrapURLError(err))
		default:
			res.Retryable = !permanentTransportError(err)
			res.Error = unwrapURLError(err).Error()
		}
		return res
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode

	// The body head is the output; what is left is drained a little so
	// that the connection can be reused. A 2xx body is read for the
	// result too: up to MaxResult+1 bytes, or 1 MiB+1 for a resultFrom
	// pointer to select from (result.BodyLimit).
	code := resp.StatusCode
	ok := code >= 200 && code < 300
	out := newSink(live, OutputLimit, red)
	var respBody bytes.Buffer
	keep := int64(0)
	if ok {
		keep = result.BodyLimit(a.ResultFrom)
	}
	_, _ = io.Copy(io.MultiWriter(&headWriter{w: out, n: OutputLimit}, &headWriter{w: &respBody, n: keep}),
		io.LimitReader(resp.Body, max(OutputLimit, keep)))
	_, _ = io.CopyN(io.Discard, resp.Body, OutputLimit)

	switch {
	case ok:
		res.Success = true
		over := int64(respBody.Len()) == keep
		b := respBody.Bytes()
		if over {
			b = b[:keep-1]
		}
		v, note, refused := result.FromHTTP(a.ResultFrom, b, over, resp.Header.Get("Content-Type"), red)
		res.Result = v
		if refused != nil {
			refuseResult(&res, refused.Error())
		}
		_, _ = io.WriteString(out, note)
	default:
		status := resp.Status
		if status == "" {
			status = fmt.Sprintf("%d %s", code, http.StatusText(code))
		}
		res.Error = "HTTP " + status
		res.Retryable = code >= 500 || code == http.StatusTooManyRequests
	}
	res.Output = out.close()
	return res
}

// headWriter writes the first n bytes written to it to w and drops the
// rest; it never fails.
type headWriter struct {
	w io.Writer
	n int64
}

func (h *headWriter) Write(p []byte) (int, error) {
	if k := min(int64(len(p)), h.n); k > 0 {
		_, _ = h.w.Write(p[:k])
		h.n -= k
	}
	return len(p), nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// unwrapURLError drops the `Get "http://…":` prefix of a client error,
// which repeats the task's URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// contentType returns the Content-Type header of an action's headers and
// whether it has one ("" when it comes from a secret).
func contentType(h map[string]model.Value) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, "Content-Type") {
			return v.Text, true
		}
	}
	return "", false
}

// permanentTransportError reports errors that a retry cannot fix: a server
// certificate that does not verify.
func permanentTransportError(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &invalid) ||
		errors.As(err, &hostname) || errors.As(err, &verification)
}
