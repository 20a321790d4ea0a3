package transactions_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/postgres/postgrestest"
	"github.com/payorch/core-api/transactions"
)

// challengeCards is a card connector with mock-card's name and schemas
// that records what it is sent, so that connection options are checked
// and passed as mock-card's would be.
type challengeCards struct{ recordingCards }

func (c *challengeCards) Name() string               { return connector.MockCardName }
func (c *challengeCards) Schemas() connector.Schemas { return connector.MockCard{}.Schemas() }

// challenging answers every authentication with a challenge whose
// completion authenticates the buyer.
type challenging struct{}

func (challenging) Name() string { return connector.MockThreeDSName }
func (challenging) Authenticate(context.Context, connector.ThreeDSAuthentication) (connector.ThreeDSResult, error) {
	return connector.ThreeDSResult{Version: "2.2.0", Status: coreapi.ThreeDSStatusC, ChallengeResult: coreapi.ThreeDSStatusY,
		ChallengeData: &connector.ThreeDSecureData{Version: "2.2.0", Status: coreapi.ThreeDSStatusY, CAVV: strings.Repeat("A", 28), ECI: "05"}}, nil
}

// The authorization after a challenge goes as the payment's would have
// gone without one: with the connection options the payment gave (kept
// with the challenge, then dropped), and with the security code when
// vault-proxy confirms it holds it for this transaction's challenge; a
// denial or a failed question goes without.
func TestChallengeResumesWithOptionsAndHeldCode(t *testing.T) {
	db := postgrestest.New(t)
	for _, tc := range []struct {
		name     string
		held     bool
		err      error
		wantCode bool
	}{
		{"code held for the challenge", true, nil, true},
		{"no code held", false, nil, false},
		{"vault-proxy unreachable", true, errors.New("down"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cards := &challengeCards{recordingCards{answer: approval("")}}
			s, _ := routedTo(t, db, cards)
			s.ThreeDS = transactions.ThreeDS{Connector: challenging{}, ChallengeKey: []byte(strings.Repeat("k", 32)), PublicURL: "https://pay.example"}
			vault := &heldCodes{heldFor: map[string]bool{}, err: tc.err}
			s.VaultProxy = vault
			n := cardPayment(t, db)
			n.ThreeDSecure = &coreapi.NewThreeDSecure{Amount: n.Amount}
			n.ConnectionOptions = map[string]json.RawMessage{connector.MockCardName: json.RawMessage(`{"soft_descriptor":"ORDER 7"}`)}
			tx, err := s.PayByCard(ctx, "default", n)
			if err != nil || tx.Status != coreapi.TransactionBuyerApprovalPending {
				t.Fatalf("pay: %v %v", tx, err)
			}
			if string(tx.ThreeDSecure.ChallengeOptions) != `{"soft_descriptor":"ORDER 7"}` {
				t.Fatalf("options kept with the challenge: %s", tx.ThreeDSecure.ChallengeOptions)
			}
			vault.heldFor[*tx.PaymentMethod.ID+"|"+tx.ID] = tc.held
			u, _ := url.Parse(s.ChallengeURL("default", tx.ID, time.Now().Add(time.Minute)))
			done, err := s.CompleteChallenge(ctx, tx.ID, u.Query().Get("token"))
			if err != nil || done.Status != coreapi.TransactionAuthorizationSucceeded {
				t.Fatalf("complete: %v %v", done, err)
			}
			got := cards.last
			if got.Options.String("soft_descriptor") != "ORDER 7" || got.ThreeDSecure == nil || got.ThreeDSecure.ECI != "05" {
				t.Errorf("authorization sent with options %v and 3-D Secure %+v", got.Options, got.ThreeDSecure)
			}
			if got.SecurityCodeHeld != tc.wantCode || (got.SecurityCodeFor == tx.ID) != tc.wantCode {
				t.Errorf("SecurityCodeHeld %v, SecurityCodeFor %q; want the code: %v", got.SecurityCodeHeld, got.SecurityCodeFor, tc.wantCode)
			}
			if done.ThreeDSecure.ChallengeOptions != nil {
				t.Errorf("options still kept after the challenge: %s", done.ThreeDSecure.ChallengeOptions)
			}
		})
	}
}
