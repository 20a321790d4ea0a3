package connector

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
)

// The sandbox simulators sign their notifications alike, each under
// header names of its own, and send them in the same envelope around an
// object of their own wire type: one reading serves every connector to
// them, which says only what its processor's types mean.

// simulatorNotification is the body of a sandbox simulator's
// notification: its id (the same on each retry), its type, and the
// object it is about (D: the simulator's charge, debit, payment...).
type simulatorNotification[D any] struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data D      `json:"data"`
}

// notificationHeaders name the headers of a notification's id, its
// timestamp and its signature.
type notificationHeaders struct {
	id, timestamp, signature string
}

// simulatorNotifications reads and verifies one simulator's
// notifications.
type simulatorNotifications[D any] struct {
	headers notificationHeaders
	// builtInSecret verifies notifications for the built-in sandbox
	// configuration (a Config without webhook_secret).
	builtInSecret string
	// subject is what a notification is about; false when it cannot
	// tell, before verification as after.
	subject func(simulatorNotification[D]) (NotificationSubject, bool)
	// result is what a verified notification about sub answers; false:
	// the notification contradicts itself.
	result func(n simulatorNotification[D], sub NotificationSubject) (coreapi.ConnectorResult, bool)
}

// parse reads what an unverified notification is about.
func (s simulatorNotifications[D]) parse(body []byte) (NotificationSubject, error) {
	var n simulatorNotification[D]
	if err := json.Unmarshal(body, &n); err != nil {
		return NotificationSubject{}, ErrNotificationMalformed
	}
	sub, ok := s.subject(n)
	if !ok {
		return NotificationSubject{}, ErrNotificationMalformed
	}
	return sub, nil
}

// verify checks the signature header ("v1=" + hex HMAC-SHA256(secret,
// timestamp + "." + body)) with cfg's webhook_secret and that the
// timestamp is within NotificationTolerance of now, then reads the
// notification; an id header, when sent, must be the body's.
func (s simulatorNotifications[D]) verify(cfg Config, h http.Header, body []byte, now time.Time) (Notification, error) {
	secret := credential(cfg, "webhook_secret", s.builtInSecret)
	if !validHMAC(secret, h.Get(s.headers.timestamp), h.Get(s.headers.signature), body, now) {
		return Notification{}, ErrBadSignature
	}
	var n simulatorNotification[D]
	if err := json.Unmarshal(body, &n); err != nil || n.ID == "" {
		return Notification{}, ErrNotificationMalformed
	}
	if id := h.Get(s.headers.id); id != "" && id != n.ID {
		return Notification{}, ErrNotificationMalformed
	}
	sub, ok := s.subject(n)
	if !ok {
		return Notification{}, ErrNotificationMalformed
	}
	res, ok := s.result(n, sub)
	if !ok {
		return Notification{}, ErrNotificationMalformed
	}
	return Notification{ID: n.ID, NotificationSubject: sub, Result: res}, nil
}

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
