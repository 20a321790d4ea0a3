package forward_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/vault-proxy/forward"
	"github.com/payorch/vault-proxy/substitute"
	"github.com/payorch/vault-proxy/vaulting"
	"github.com/valyala/fasthttp"
)

// brokenNT is the vault's own infrastructure failing (database, Vault
// transit, a deadline), not a token service refusing to provision.
type brokenNT struct{}

var errInfra = errors.New("database connection refused")

func (brokenNT) Token(context.Context, vaulting.Caller, *vaulting.Revealed) ([]byte, card.Expiry, uuid.UUID, error) {
	return nil, card.Expiry{}, uuid.Nil, errInfra
}
func (brokenNT) Cryptogram(context.Context, vaulting.Caller, *vaulting.Revealed, uuid.UUID) ([]byte, error) {
	return nil, errInfra
}

// The vault's own failure to serve a network token is not a failed
// provisioning: it is neither a 400 value_unavailable (a client error, not
// retried) nor, in the _OR_EMPTY_STRING form, an empty value sent on as if
// the card had no token. Nothing is sent, and the error stays the vault's.
func TestNetworkTokenServiceFailureIsNotThePlaceholders(t *testing.T) {
	ctx := context.Background()
	_, _, svc, caller, token := vaultedCard(t)
	u, _ := url.Parse("https://processor.example/pay")
	e := &forward.Engine{Vaulting: svc, NetworkTokens: brokenNT{}}
	for _, body := range []string{`{"t":"{{ CARD_NETWORK_TOKEN_1 }}"}`, `{"t":"{{ CARD_NETWORK_TOKEN_OR_EMPTY_STRING_1 }}"}`} {
		sent := false
		var resp fasthttp.Response
		_, err := e.Send(ctx, forward.Request{Caller: caller, Action: "forward", Purpose: "vault-forward", Method: "POST", URL: u,
			ContentType: "application/json", Body: []byte(body), Tokens: []uuid.UUID{token}},
			&resp, func(context.Context, *fasthttp.Request, *fasthttp.Response) error { sent = true; return nil })
		var se *substitute.Error
		if sent || errors.As(err, &se) || !errors.Is(err, errInfra) {
			t.Errorf("%s: sent=%v err=%v (substitute.Error %v): an internal failure was reported as a placeholder problem or swallowed", body, sent, err, se != nil)
		}
	}
}
