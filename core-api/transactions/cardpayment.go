package transactions

import (
	"context"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/zone"
)

// VaultProxy is vault-proxy's internal API (mutual TLS) as card payments
// need it: a vaulted card's metadata, which says whether vault-proxy
// holds its security code.
type VaultProxy interface {
	Card(ctx context.Context, merchant, token string) (*zone.CardMetadata, error)
	// SecurityCodeHeldFor says whether vault-proxy holds the card's
	// security code for the authorization that resumes transaction id
	// after its 3-D Secure challenge.
	SecurityCodeHeldFor(ctx context.Context, merchant, token, id string) (bool, error)
	// ForgetSecurityCodeFor has vault-proxy wipe that code: the
	// challenge ended without an authorization.
	ForgetSecurityCodeFor(ctx context.Context, merchant, token, id string) error
}

// securityCodeHeld reports whether the connector may ask vault-proxy for
// the security code of n's card: only when the request says vault-proxy
// holds it (n.SecurityCodeHeld, a header any client could send to
// core-api's public listener) and vault-proxy confirms it over its
// mutual-TLS listener. A failed confirmation authorizes without the code,
// as a payment without one would be: asking for a code vault-proxy does
// not hold would make the call fail instead.
func (s *Service) securityCodeHeld(ctx context.Context, merchant string, n coreapi.NewTransaction) bool {
	if !n.SecurityCodeHeld || s.VaultProxy == nil || n.PaymentMethodID == nil || *n.Method != coreapi.MethodCard {
		return false
	}
	m, err := s.VaultProxy.Card(ctx, merchant, *n.PaymentMethodID)
	return err == nil && m.SecurityCodeHeld
}

// securityCodeHeldFor reports whether the authorization that resumes card
// payment t after its 3-D Secure challenge may ask for the security code
// vault-proxy kept for it: only vault-proxy knows (the code was given
// there, with the card); a failed question goes without, as a code the
// instance asked does not hold does.
func (s *Service) securityCodeHeldFor(ctx context.Context, t *coreapi.Transaction) bool {
	if s.VaultProxy == nil || t.PaymentMethod.ID == nil || t.PaymentMethod.Method != coreapi.MethodCard {
		return false
	}
	held, err := s.VaultProxy.SecurityCodeHeldFor(ctx, t.MerchantAccountID, *t.PaymentMethod.ID, t.ID)
	return err == nil && held
}

// forgetTimeout bounds forgetChallengeCode's call.
const forgetTimeout = 5 * time.Second

// forgetChallengeCode has vault-proxy wipe the security code it may hold
// for card payment t's authorization after its 3-D Secure challenge, now
// that the challenge ended without one (declined, failed, expired): the
// code has no use left, and sensitive authentication data is kept no
// longer than it needs to be. It runs whatever becomes of the request,
// within forgetTimeout. A failure is logged (ids only) and changes
// nothing else: the hold still ends at its own expiry.
func (s *Service) forgetChallengeCode(ctx context.Context, t *coreapi.Transaction) {
	if s.VaultProxy == nil || t.PaymentMethod.ID == nil || t.PaymentMethod.Method != coreapi.MethodCard {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetTimeout)
	defer cancel()
	if err := s.VaultProxy.ForgetSecurityCodeFor(ctx, t.MerchantAccountID, *t.PaymentMethod.ID, t.ID); err != nil && s.Log != nil {
		s.Log.WarnContext(ctx, "vault-proxy did not forget the security code held for a 3-D Secure challenge that ended; its hold ends at its expiry",
			"merchant_account_id", t.MerchantAccountID, "transaction_id", t.ID, "error", err)
	}
}

// previousSchemeTransactionID is the scheme transaction id of the payment
// that set up t's series: the request's, when it names one; else, for a
// merchant-initiated payment, the one stored on its payment method (by
// the customer-initiated payment that stored it, or PUT
// /payment-methods/{id}); "" when there is none, which a processor
// declines for a merchant-initiated payment. pm is the stored payment
// method as the payment read it (nil: none).
func previousSchemeTransactionID(n coreapi.NewTransaction, t *coreapi.Transaction, pm *coreapi.PaymentMethod) string {
	if n.PreviousSchemeTransactionID != nil {
		return *n.PreviousSchemeTransactionID
	}
	if !t.MerchantInitiated || pm == nil || pm.SchemeTransactionID == nil {
		return ""
	}
	return *pm.SchemeTransactionID
}
