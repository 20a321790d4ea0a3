package vaulting

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/bank"
	"github.com/payorch/tokenizer/card"
	vaultproxy "github.com/payorch/vault-proxy"
)

// VaultBank validates bank details and vaults the account number (or IBAN)
// like a card number, under token (uuid.Nil: a new one; IdempotentToken's
// for an account given with a payment); the returned Account holds only
// non-sensitive fields for core-api (its Number is zeroed). The caller
// clears in's byte slices.
func (s *Service) VaultBank(ctx context.Context, c Caller, in bank.Input, token uuid.UUID) (*vaultproxy.VaultedCard, bank.Account, error) {
	acct, err := CheckBank(in)
	if err != nil {
		return nil, bank.Account{}, err
	}
	defer acct.Zero()
	if token == uuid.Nil {
		token = uuid.New()
	}
	rec := &vaultproxy.VaultedCard{
		Token: token, MerchantAccountID: c.MerchantAccountID, Kind: vaultproxy.KindBankAccount,
		Scheme: acct.Scheme, Last4: acct.Last4(),
	}
	num := acct.Number.Reveal()
	m := hmac.New(sha256.New, s.fingerprintKey)
	m.Write([]byte("payorch/fingerprint/bank/v1|" + c.MerchantAccountID + "|" + acct.Scheme + "|" + acct.RoutingNumber + acct.SortCode + "|"))
	m.Write(num)
	rec.Fingerprint = "fp_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	if err := s.seal(ctx, c, rec, encodePayload(num, nil)); err != nil {
		return nil, bank.Account{}, err
	}
	return rec, acct, nil
}

// CheckBank validates bank details as VaultBank does, vaulting nothing: a
// payment sent again with the account an earlier request vaulted needs
// the details core-api is told about without a second record. The caller
// zeroes the Account.
func CheckBank(in bank.Input) (bank.Account, error) {
	acct, errs := bank.Validate(in)
	if len(errs) > 0 {
		fe := make(FieldErrors, len(errs))
		for i, e := range errs {
			fe[i] = card.FieldError{Field: e.Field, Code: e.Code, Message: e.Message}
		}
		return bank.Account{}, fe
	}
	return acct, nil
}
