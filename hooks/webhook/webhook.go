// Package webhook delivers hooks' webhooks with net/http (Deliver, a
// hooks.DeliverFunc). Only bl-git links it, so the lean bl carries no HTTP
// client (it hands deliveries to bl-git).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bl-backlog/bl/hooks"
)

var _ hooks.DeliverFunc = Deliver

// SignatureHeader carries the HMAC-SHA256 of the body: "sha256=" and hex.
const SignatureHeader = "X-BL-Signature-256"

// Sign is the SignatureHeader value for body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// backoff is the pause before retry n (1-based); a test may shorten it.
var backoff = func(n int) time.Duration { return time.Duration(250<<(n-1)) * time.Millisecond }

// Deliver posts body to w.URL, each try bounded by w.Timeout, retrying
// w.Retries times on a network error or a non-2xx answer.
func Deliver(ctx context.Context, w hooks.Webhook, body []byte) error {
	var last error
	for try := 0; try <= w.Retries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff(try)):
			}
		}
		if last = once(ctx, w, body); last == nil {
			return nil
		}
	}
	if w.Retries > 0 {
		return fmt.Errorf("%w (after %d tries)", last, w.Retries+1)
	}
	return last
}

// client never follows a redirect: one would re-send the body and its
// signature to wherever the receiver points, on any host.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func once(ctx context.Context, w hooks.Webhook, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "bl-hooks")
	req.Header.Set("X-BL-Event", w.Event)
	req.Header.Set("X-BL-Delivery", w.ID)
	if w.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(w.Secret, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("%s answered %s toward %q; webhooks do not follow redirects: put the final URL in hooks.json", w.URL, resp.Status, resp.Header.Get("Location"))
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", w.URL, resp.Status)
	}
	return nil
}
