package transactions

import (
	"errors"
	"strings"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// A payment's three_d_secure is refused before anything is stored: on
// another method, with a bad amount, below the transaction's amount
// (422), or where no 3-D Secure connector exists (production).
func TestCheckThreeDS(t *testing.T) {
	card, gift := coreapi.MethodCard, coreapi.MethodGiftCard
	sandbox := &Service{ThreeDS: ThreeDS{Connector: connector.MockThreeDS{}}}
	production := &Service{}
	tds := func(a int64) *coreapi.NewThreeDSecure { return &coreapi.NewThreeDSecure{Amount: a} }
	for name, tc := range map[string]struct {
		s       *Service
		n       coreapi.NewTransaction
		pointer string
		is      error
	}{
		"none":              {production, coreapi.NewTransaction{Amount: 100, Method: &card}, "", nil},
		"equal":             {sandbox, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(100)}, "", nil},
		"above":             {sandbox, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(900)}, "", nil},
		"below":             {sandbox, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(99)}, "", coreapi.ErrThreeDSAmountTooLow},
		"zero":              {sandbox, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(0)}, "/three_d_secure/amount", nil},
		"too large":         {sandbox, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(coreapi.MaxTransactionAmount + 1)}, "/three_d_secure/amount", nil},
		"gift card":         {sandbox, coreapi.NewTransaction{Amount: 100, Method: &gift, ThreeDSecure: tds(100)}, "/three_d_secure", nil},
		"in production":     {production, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(100)}, "", coreapi.ErrThreeDSUnavailable},
		"below, production": {production, coreapi.NewTransaction{Amount: 100, Method: &card, ThreeDSecure: tds(1)}, "", coreapi.ErrThreeDSAmountTooLow},
	} {
		err := tc.s.checkThreeDS(tc.n)
		var ve *coreapi.ValidationError
		switch {
		case tc.pointer != "":
			if !errors.As(err, &ve) || ve.Problems[0].Pointer != tc.pointer {
				t.Errorf("%s: %v, want a problem at %s", name, err, tc.pointer)
			}
		case !errors.Is(err, tc.is) || (tc.is == nil && err != nil):
			t.Errorf("%s: %v, want %v", name, err, tc.is)
		}
	}
}

// Challenge tokens: the merchant account of a good one; a forged, another
// transaction's, an expired one, or a direct integration's completion
// token, refused with their codes.
func TestChallengeTokens(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Service{ThreeDS: ThreeDS{ChallengeKey: []byte(strings.Repeat("k", 32)), PublicURL: "https://pay.example/", Now: func() time.Time { return now }},
		Direct: Direct{CompletionKey: []byte(strings.Repeat("k", 32)), PublicURL: "https://pay.example", Now: func() time.Time { return now }}}
	const id, other = "0b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e", "1b7c1a52-6f0e-4d7a-9c1e-2f3a4b5c6d7e"
	url := s.ChallengeURL("acct", id, now.Add(time.Minute))
	tok := url[strings.Index(url, "token=")+len("token="):]
	if !strings.HasPrefix(url, "https://pay.example/three-ds-challenges/"+id+"?token=tc1.") {
		t.Fatalf("url %s", url)
	}
	if m, err := s.verifyChallenge(id, tok); err != nil || m != "acct" {
		t.Fatalf("verify: %q %v", m, err)
	}
	direct := s.CompletionURL("acct", id, now.Add(time.Minute))
	directTok := direct[strings.Index(direct, "token=")+len("token="):]
	expired := s.ChallengeURL("acct", id, now)
	for name, tc := range map[string]struct {
		id, tok, code string
	}{
		"another transaction": {other, tok, coreapi.CodeCompletionTokenMismatch},
		"expired":             {id, expired[strings.Index(expired, "token=")+len("token="):], coreapi.CodeCompletionTokenExpired},
		"forged":              {id, tok[:len(tok)-2] + "AA", coreapi.CodeCompletionTokenInvalid},
		"a completion token":  {id, directTok, coreapi.CodeCompletionTokenInvalid},
		"garbage":             {id, "tc1.x", coreapi.CodeCompletionTokenInvalid},
	} {
		var ce *coreapi.CompletionTokenError
		if _, err := s.verifyChallenge(tc.id, tc.tok); !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: %v, want %s", name, err, tc.code)
		}
	}
	// And a challenge token is no completion token.
	var ce *coreapi.CompletionTokenError
	if _, err := s.verifyCompletion(id, tok); !errors.As(err, &ce) || ce.Code != coreapi.CodeCompletionTokenInvalid {
		t.Errorf("a challenge token as a completion token: %v", err)
	}
}
