package transactions

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/core-api/connector"
)

// ThreeDSConnector authenticates the buyer of a card payment
// (connector.MockThreeDS, through vault-proxy to mock-3ds).
type ThreeDSConnector interface {
	Name() string
	Authenticate(ctx context.Context, r connector.ThreeDSAuthentication) (connector.ThreeDSResult, error)
}

// Buyers reads a buyer's billing details for 3-D Secure and anti-fraud
// (the core database).
type Buyers interface {
	FindBuyer(ctx context.Context, merchant, id string) (*coreapi.Buyer, error)
}

// ThreeDS is what card payments with 3-D Secure need
// (docs/three-d-secure.md). Without a Connector (production) a payment
// asking for 3-D Secure is refused (coreapi.ErrThreeDSUnavailable).
type ThreeDS struct {
	Connector ThreeDSConnector
	// ChallengeKey signs challenge URLs' tokens (at least 32 bytes);
	// PublicURL is their base, where core-api's routes are reached.
	ChallengeKey []byte
	PublicURL    string
	// ChallengeTTL is how long a challenge URL is valid (0:
	// DefaultChallengeTTL).
	ChallengeTTL time.Duration
	Now          func() time.Time
}

// DefaultChallengeTTL is how long the buyer has to complete a challenge.
const DefaultChallengeTTL = 15 * time.Minute

func (d *ThreeDS) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// checkThreeDS refuses a payment's three_d_secure before anything is
// stored: on a payment that is not by card (400), with an amount below
// the transaction's (422, coreapi.ErrThreeDSAmountTooLow), or where no
// 3-D Secure connector is configured.
func (s *Service) checkThreeDS(n coreapi.NewTransaction) error {
	tds := n.ThreeDSecure
	switch {
	case tds == nil:
		return nil
	case n.Method == nil || *n.Method != coreapi.MethodCard:
		return invalid("/three_d_secure", "3-D Secure applies to card payments only", "value_error.three_d_secure")
	case tds.Amount < 1 || tds.Amount > coreapi.MaxTransactionAmount:
		return invalid("/three_d_secure/amount", "must be an integer from 1 to "+strconv.Itoa(coreapi.MaxTransactionAmount)+", in minor units", "value_error.number")
	case tds.Amount < n.Amount:
		return coreapi.ErrThreeDSAmountTooLow
	case s.ThreeDS.Connector == nil:
		return coreapi.ErrThreeDSUnavailable
	}
	return nil
}

// threeDSPayment is what the scenarios match t against: the buyer's
// billing name and e-mail, the amount and external identifier, and the
// card's BIN (pm); the card's number is the simulator's to compare.
func (s *Service) threeDSPayment(ctx context.Context, merchant string, t *coreapi.Transaction, pm *coreapi.PaymentMethod) coreapi.ThreeDSPayment {
	p := coreapi.ThreeDSPayment{Amount: t.Amount, ExternalIdentifier: deref(t.ExternalIdentifier)}
	if pm != nil {
		p.BIN = pm.BIN
	}
	if bd := s.billingDetails(ctx, merchant, t); bd != nil {
		p.FirstName, p.LastName, p.EmailAddress = deref(bd.FirstName), deref(bd.LastName), deref(bd.EmailAddress)
	}
	return p
}

// threeDSEnds are the statuses that end a payment before its
// authorization: the step, and the error code the transaction gets.
var threeDSEnds = map[string]struct {
	op   coreapi.TransactionOperation
	code string
}{
	coreapi.ThreeDSStatusN:       {coreapi.OpThreeDSDeclined, coreapi.ErrorCodeThreeDSNotAuthenticated},
	coreapi.ThreeDSStatusR:       {coreapi.OpThreeDSDeclined, coreapi.ErrorCodeThreeDSRejected},
	coreapi.ThreeDSStatusU:       {coreapi.OpThreeDSFailed, coreapi.ErrorCodeThreeDSUnavailable},
	coreapi.ThreeDSStatusTimeout: {coreapi.OpThreeDSFailed, coreapi.ErrorCodeThreeDSTimeout},
}

// authenticate runs 3-D Secure for transaction t, just created, and
// records its answer as a step: authenticated (Y, A: the data the
// authorization carries is returned), a challenge (C: the transaction
// waits for the buyer, keeping options, the card connector's validated
// connection options, for the authorization that follows), or the end of
// the payment (declined or failed; stop). A connector that failed fails
// the transaction (three_d_secure_error) and is a
// *coreapi.ConnectorError.
func (s *Service) authenticate(ctx context.Context, merchant string, t *coreapi.Transaction, n coreapi.NewTransaction,
	pm *coreapi.PaymentMethod, options connector.Values) (data *connector.ThreeDSecureData, out *coreapi.Transaction, stop bool, err error) {
	res, err := s.ThreeDS.Connector.Authenticate(ctx, connector.ThreeDSAuthentication{
		MerchantAccountID: merchant, PaymentMethodID: deref(t.PaymentMethod.ID), Reference: t.ID,
		Amount: n.ThreeDSecure.Amount, Currency: t.Currency, Payment: s.threeDSPayment(ctx, merchant, t, pm),
	})
	summary := &coreapi.ThreeDSecure{Version: res.Version, Status: res.Status, Method: coreapi.ThreeDSMethodFrictionless, Amount: n.ThreeDSecure.Amount}
	if err != nil {
		summary.Status = "error"
		out, aerr := s.threeDSStep(ctx, merchant, t.ID, coreapi.OpThreeDSFailed, summary, coreapi.ConnectorResult{ErrorCode: coreapi.ErrorCodeThreeDSError})
		if aerr != nil {
			return nil, nil, true, aerr
		}
		return nil, out, true, &coreapi.ConnectorError{Failed: "the 3-D Secure connector failed; the transaction is recorded as failed", Err: err}
	}
	res3 := coreapi.ConnectorResult{RawResponseCode: res.Status, RawResponseDescription: "3-D Secure authentication: " + res.Status}
	switch res.Status {
	case coreapi.ThreeDSStatusY, coreapi.ThreeDSStatusA:
		summary.ResponseData = &coreapi.ThreeDSResponseData{CAVV: res.Data.CAVV, ECI: res.Data.ECI}
		out, err := s.threeDSStep(ctx, merchant, t.ID, coreapi.OpThreeDSAuthenticated, summary, res3)
		return res.Data, out, false, err
	case coreapi.ThreeDSStatusC:
		summary.Method, summary.ChallengeResult = coreapi.ThreeDSMethodChallenge, res.ChallengeResult
		if d := res.ChallengeData; d != nil {
			summary.ChallengeData = &coreapi.ThreeDSResponseData{CAVV: d.CAVV, ECI: d.ECI}
		}
		if len(options) > 0 {
			// Strings, integers and booleans: they encode.
			summary.ChallengeOptions, _ = json.Marshal(options)
		}
		expires := s.ThreeDS.now().Add(s.challengeTTL())
		res3.ApprovalURL, res3.ExpiresAt = s.ChallengeURL(merchant, t.ID, expires), expires
		out, err := s.threeDSStep(ctx, merchant, t.ID, coreapi.OpThreeDSChallengeRequested, summary, res3)
		return nil, out, true, err
	}
	end, ok := threeDSEnds[res.Status]
	if !ok {
		end = threeDSEnds[coreapi.ThreeDSStatusU]
	}
	res3.ErrorCode = end.code
	out, err = s.threeDSStep(ctx, merchant, t.ID, end.op, summary, res3)
	return nil, out, true, err
}

// threeDSStep records a 3-D Secure step of transaction id with the
// summary it leaves.
func (s *Service) threeDSStep(ctx context.Context, merchant, id string, op coreapi.TransactionOperation,
	summary *coreapi.ThreeDSecure, res coreapi.ConnectorResult) (*coreapi.Transaction, error) {
	return s.apply(ctx, true, merchant, id, func(_ Tx, _ *coreapi.Transaction, _ time.Time) (plan, error) {
		return plan{step: coreapi.Step{Operation: op, Result: &res, ThreeDSecure: summary}}, nil
	})
}

// CompleteChallenge completes the 3-D Secure challenge of transaction id
// (its challenge URL's token is the authority): the result the simulator
// decided is applied, a Y continuing to the authorization with fresh
// authentication data the simulator gave with the challenge, an N
// declining the transaction and a timeout
// failing it; those two have vault-proxy wipe the security code it held
// for the authorization (forgetChallengeCode). A token that is not valid
// for the transaction, or a challenge already completed, is a
// *coreapi.CompletionTokenError and changes nothing.
func (s *Service) CompleteChallenge(ctx context.Context, id, token string) (*coreapi.Transaction, error) {
	merchant, err := s.verifyChallenge(id, token)
	if err != nil {
		return nil, err
	}
	var data *connector.ThreeDSecureData
	var result string
	var options json.RawMessage
	t, err := s.apply(ctx, true, merchant, id, func(_ Tx, t *coreapi.Transaction, _ time.Time) (plan, error) {
		tds := t.ThreeDSecure
		if tds == nil || tds.Method != coreapi.ThreeDSMethodChallenge {
			return plan{}, &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenInvalid}
		}
		if t.Status != coreapi.TransactionBuyerApprovalPending || tds.ChallengeResult == "" {
			return plan{}, &coreapi.CompletionTokenError{Code: coreapi.CodeCompletionTokenUsed}
		}
		summary := *tds
		result, summary.Status, summary.ChallengeResult, summary.ChallengeData = tds.ChallengeResult, tds.ChallengeResult, "", nil
		options, summary.ChallengeOptions = tds.ChallengeOptions, nil
		res := coreapi.ConnectorResult{RawResponseCode: result, RawResponseDescription: "3-D Secure challenge: " + result}
		op := coreapi.OpThreeDSAuthenticated
		switch {
		case result == coreapi.ThreeDSStatusY && tds.ChallengeData != nil:
			data = &connector.ThreeDSecureData{Version: tds.Version, Status: result, CAVV: tds.ChallengeData.CAVV, ECI: tds.ChallengeData.ECI}
			summary.ResponseData = tds.ChallengeData
		case result == coreapi.ThreeDSStatusN:
			op, res.ErrorCode = coreapi.OpThreeDSDeclined, coreapi.ErrorCodeThreeDSChallengeFailed
		default:
			op, res.ErrorCode = coreapi.OpThreeDSFailed, coreapi.ErrorCodeThreeDSChallengeTimeout
		}
		return plan{step: coreapi.Step{Operation: op, Result: &res, ThreeDSecure: &summary}}, nil
	})
	if err != nil {
		return t, err
	}
	if data == nil {
		s.forgetChallengeCode(ctx, t)
		return t, nil
	}
	return s.authorizeAuthenticated(ctx, merchant, t, data, options)
}

// ExpireChallenge fails card payment id whose 3-D Secure challenge was
// not completed before its expiry (approval_expires_at) at now, as a
// challenge's timeout would (three-d-secure-failed,
// three_d_secure_challenge_timeout), and has vault-proxy wipe the
// security code it may still hold for it (forgetChallengeCode: its clock
// may lag core-api's); the sweep calls it. Anything else is returned as
// it is: a challenge completed meanwhile wins under the row lock.
func (s *Service) ExpireChallenge(ctx context.Context, merchant, id string, now time.Time) (*coreapi.Transaction, error) {
	expired := false
	t, err := s.apply(ctx, true, merchant, id, func(_ Tx, t *coreapi.Transaction, _ time.Time) (plan, error) {
		tds := t.ThreeDSecure
		expired = false
		if t.Status != coreapi.TransactionBuyerApprovalPending || tds == nil || tds.ChallengeResult == "" ||
			t.ApprovalExpiresAt == nil || now.Before(*t.ApprovalExpiresAt) {
			return plan{unchanged: true}, nil
		}
		expired = true
		summary := *tds
		summary.Status, summary.ChallengeResult, summary.ChallengeData, summary.ChallengeOptions = coreapi.ThreeDSStatusTimeout, "", nil, nil
		res := coreapi.ConnectorResult{ErrorCode: coreapi.ErrorCodeThreeDSChallengeTimeout, RawResponseCode: coreapi.ThreeDSStatusTimeout,
			RawResponseDescription: "3-D Secure challenge: not completed before its expiry"}
		return plan{step: coreapi.Step{Operation: coreapi.OpThreeDSFailed, Result: &res, ThreeDSecure: &summary}}, nil
	})
	if err == nil && expired {
		s.forgetChallengeCode(ctx, t)
	}
	return t, err
}

// authorizeAuthenticated sends the authorization of card payment t, its
// buyer authenticated after a challenge, to the connector of its payment
// service, and records the answer. It goes as the payment's would have
// gone without the challenge: with the connection options kept for it
// (options, checked again against the connector's schema), and with the
// security code vault-proxy kept for the challenge when it still holds
// it (securityCodeHeldFor).
func (s *Service) authorizeAuthenticated(ctx context.Context, merchant string, t *coreapi.Transaction, data *connector.ThreeDSecureData,
	options json.RawMessage) (*coreapi.Transaction, error) {
	cards, cfg, err := s.cardsOf(ctx, t)
	if err != nil {
		return nil, err
	}
	a := connector.CardAuthorization{
		MerchantAccountID: merchant, PaymentMethodID: *t.PaymentMethod.ID, Reference: t.ID,
		Amount: t.Amount, Currency: t.Currency, Intent: t.Intent,
		MerchantInitiated: t.MerchantInitiated, PaymentSource: t.PaymentSource, CartItems: t.CartItems,
		BillingPostalCode: s.billingPostalCode(ctx, merchant, t),
		ThreeDSecure:      data, Config: cfg, Options: s.keptOptions(cards.Name(), options),
	}
	if s.securityCodeHeldFor(ctx, t) {
		a.SecurityCodeHeld, a.SecurityCodeFor = true, t.ID
	}
	res, err := cards.Authorize(ctx, a)
	res, sendErr := sent(res, err)
	t, _, err = s.ApplyAuthorization(ctx, merchant, t.ID, res)
	if err != nil {
		return nil, err
	}
	return t, sendErr
}

// keptOptions are the connection options kept for the authorization
// after a challenge, read against the connector's schema as the payment
// read them: the values of fields it still declares (a schema changed
// meanwhile drops the others rather than failing a payment the buyer
// has authenticated).
func (s *Service) keptOptions(name string, raw json.RawMessage) connector.Values {
	if len(raw) == 0 {
		return nil
	}
	sc, err := s.Connectors.Schemas(name)
	if err != nil {
		return nil
	}
	var ignored coreapi.Problems
	return sc.ConnectionOptions.Validate("/connection_options/"+name, raw, &ignored)
}

func (s *Service) challengeTTL() time.Duration {
	if s.ThreeDS.ChallengeTTL == 0 {
		return DefaultChallengeTTL
	}
	return s.ThreeDS.ChallengeTTL
}

// ChallengeURL is the sandbox challenge page of transaction id, valid
// until expires: its token is "tc1." + base64url(merchant|id|expiry) +
// "." + base64url(HMAC-SHA256 under the challenge key), signed with a
// context of its own (signedToken), so that no other token of the service
// is one.
func (s *Service) ChallengeURL(merchant, id string, expires time.Time) string {
	tok := s.challengeTokens().issue(merchant, id, expires)
	return strings.TrimRight(s.ThreeDS.PublicURL, "/") + "/three-ds-challenges/" + id + "?token=" + url.QueryEscape(tok)
}

func (s *Service) challengeTokens() signedToken {
	return signedToken{prefix: "tc1", context: "payorch 3-D Secure challenge token\x00", key: s.ThreeDS.ChallengeKey}
}

// verifyChallenge checks a challenge token for transaction id: the
// merchant account it was signed for.
func (s *Service) verifyChallenge(id, tok string) (string, error) {
	return s.challengeTokens().verify(id, tok, s.ThreeDS.now())
}
