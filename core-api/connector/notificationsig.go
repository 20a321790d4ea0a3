package connector

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// The sandbox simulators sign their notifications alike, each under
// header names of its own: one check serves every connector.

// validHMAC reports whether sig is "v1=" + hex HMAC-SHA256(secret, ts +
// "." + body) and ts (Unix seconds) within NotificationTolerance of now.
func validHMAC(secret, ts, sig string, body []byte, now time.Time) bool {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > NotificationTolerance || d < -NotificationTolerance {
		return false
	}
	got, ok := strings.CutPrefix(sig, "v1=")
	raw, err := hex.DecodeString(got)
	if !ok || err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hmac.Equal(raw, mac.Sum(nil))
}
