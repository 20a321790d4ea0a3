package simulator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Sign is a notification's signature header value for body sent at
// timestamp ts (Unix seconds): "v1=" + hex HMAC-SHA256(secret, ts + "."
// + body).
func Sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Headers are the names of a simulator's notification headers: the
// notification's id, the timestamp it was signed at and the signature.
type Headers struct {
	ID, Timestamp, Signature string
}

// Delivery is what the sends of one notification came to, as a
// simulator's sandbox endpoints answer it.
type Delivery struct {
	Attempts   int    `json:"attempts"`
	StatusCode int    `json:"status_code"` // the last answer's; 0: none
	Error      string `json:"error,omitempty"`
}

// Notifier sends a simulator's signed notifications.
type Notifier struct {
	Headers Headers
	Client  *http.Client
	Now     func() time.Time // the clock of the timestamps
}

// Deliver sends body (notification id) to url, signed with secret,
// until a 2xx answer, d.Attempts reaching upTo, or ctx's end. d carries
// the attempts already made: the wait before the next retry is
// firstRetry doubled after each of them. exhausted reports that the
// attempts ran out without a 2xx answer.
func (n Notifier) Deliver(ctx context.Context, url, id, secret string, body []byte, d *Delivery, upTo int, firstRetry time.Duration) (exhausted bool) {
	wait := firstRetry << max(d.Attempts-1, 0)
	for d.Attempts < upTo {
		if d.Attempts > 0 {
			select {
			case <-ctx.Done():
				d.Error = ctx.Err().Error()
				return false
			case <-time.After(wait):
			}
			wait *= 2
		}
		d.Attempts++
		ts := strconv.FormatInt(n.Now().Unix(), 10)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			d.Error = err.Error()
			return false
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(n.Headers.ID, id)
		req.Header.Set(n.Headers.Timestamp, ts)
		req.Header.Set(n.Headers.Signature, Sign(secret, ts, body))
		resp, err := n.Client.Do(req)
		if err != nil {
			d.StatusCode, d.Error = 0, err.Error()
			continue
		}
		resp.Body.Close()
		d.StatusCode, d.Error = resp.StatusCode, ""
		if resp.StatusCode/100 == 2 {
			return false
		}
	}
	return true
}
