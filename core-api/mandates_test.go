package coreapi_test

import (
	"errors"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
)

// Each notification kind from each status: where the mandate goes and
// the event that records it; a revoked or failed mandate never comes
// back.
func TestMandateNotified(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	for _, tc := range []struct {
		status    string
		token     bool
		kind      string
		want      string
		wantToken bool
		event     string
	}{
		{coreapi.MandatePending, false, coreapi.MandateActivated, coreapi.MandateActive, false, coreapi.MandateEventActivated},
		{coreapi.MandateActive, false, coreapi.MandateActivated, coreapi.MandateActive, false, coreapi.MandateEventNotificationReceived},
		{coreapi.MandatePending, false, coreapi.RecurringTokenCreated, coreapi.MandatePending, true, coreapi.MandateEventRecurringToken},
		{coreapi.MandateActive, false, coreapi.RecurringTokenCreated, coreapi.MandateActive, true, coreapi.MandateEventRecurringToken},
		{coreapi.MandateActive, true, coreapi.RecurringTokenCreated, coreapi.MandateActive, true, coreapi.MandateEventNotificationReceived},
		{coreapi.MandateActive, true, coreapi.MandateRevokedKind, coreapi.MandateRevoked, true, coreapi.MandateEventRevoked},
		{coreapi.MandatePending, false, coreapi.MandateRevokedKind, coreapi.MandateRevoked, false, coreapi.MandateEventRevoked},
		{coreapi.MandateRevoked, false, coreapi.MandateActivated, coreapi.MandateRevoked, false, coreapi.MandateEventNotificationReceived},
		{coreapi.MandateRevoked, false, coreapi.RecurringTokenCreated, coreapi.MandateRevoked, false, coreapi.MandateEventNotificationReceived},
		{coreapi.MandateRevoked, false, coreapi.MandateRevokedKind, coreapi.MandateRevoked, false, coreapi.MandateEventNotificationReceived},
		{coreapi.MandateFailed, false, coreapi.MandateActivated, coreapi.MandateFailed, false, coreapi.MandateEventNotificationReceived},
		{coreapi.MandateActive, false, "something.else", coreapi.MandateActive, false, coreapi.MandateEventNotificationReceived},
	} {
		t.Run(tc.status+"/"+tc.kind, func(t *testing.T) {
			m := coreapi.Mandate{Status: tc.status, UpdatedAt: earlier}
			if tc.token {
				m.RecurringTokenAt = &earlier
			}
			next, event := m.Notified(tc.kind, now)
			if next.Status != tc.want || (next.RecurringTokenAt != nil) != tc.wantToken || event != tc.event {
				t.Fatalf("%+v %s", next, event)
			}
			changed := event != coreapi.MandateEventNotificationReceived
			if changed != next.UpdatedAt.Equal(now) || tc.want == coreapi.MandateRevoked && changed && !next.RevokedAt.Equal(now) {
				t.Fatalf("times %+v", next)
			}
		})
	}
}

// A merchant-initiated charge needs an active mandate with its token;
// each other state has its code.
func TestMandateUsable(t *testing.T) {
	at := time.Now()
	for _, tc := range []struct {
		name string
		m    *coreapi.Mandate
		code string
	}{
		{"none", nil, coreapi.CodeMandateRequired},
		{"pending", &coreapi.Mandate{Status: coreapi.MandatePending}, coreapi.CodeMandateNotReady},
		{"pending with a token", &coreapi.Mandate{Status: coreapi.MandatePending, RecurringTokenAt: &at}, coreapi.CodeMandateNotReady},
		{"active without a token", &coreapi.Mandate{Status: coreapi.MandateActive}, coreapi.CodeMandateNotReady},
		{"active with its token", &coreapi.Mandate{Status: coreapi.MandateActive, RecurringTokenAt: &at}, ""},
		{"revoked", &coreapi.Mandate{Status: coreapi.MandateRevoked, RecurringTokenAt: &at}, coreapi.CodeMandateRevoked},
		{"failed", &coreapi.Mandate{Status: coreapi.MandateFailed}, coreapi.CodeMandateRevoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Usable()
			var me *coreapi.MandateError
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.code != "" && (!errors.As(err, &me) || me.Code != tc.code || me.Message == ""):
				t.Fatalf("%v, want %s", err, tc.code)
			}
		})
	}
}
