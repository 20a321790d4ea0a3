// Package vaulting is the card vault's service: it validates a card,
// fingerprints it with the Vault-held HMAC key, seals it with envelope
// encryption, stores it, and audits every touch. It also reveals cards for
// substitution and shreds them on delete. Transport lives in httpapi.
package vaulting

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/payorch/shared/uuidtext"
	"github.com/payorch/tokenizer/card"
	"github.com/payorch/tokenizer/envelope"
	vaultproxy "github.com/payorch/vault-proxy"
)

// Service vaults and reveals cards.
type Service struct {
	store          vaultproxy.CardStore
	audits         vaultproxy.AuditLog
	sealer         *envelope.Sealer
	fingerprintKey []byte
	codes          *SecurityCodes
	now            func() time.Time

	// rows caches vaulted card rows (ciphertext and display data, never a
	// number) so a hot card's detokenization makes no database round trip.
	// This instance drops a row the moment it changes or is deleted; other
	// instances within RowCacheTTL (SECURITY.md).
	rows *expirable.LRU[rowKey, *vaultproxy.VaultedCard]
	// rowsMu and changes keep a row read before a change or deletion out of
	// the cache once the change is made: cards caches what it read only if
	// no change happened while it read (changes is bumped, under rowsMu,
	// after the database is changed and before the row is dropped).
	rowsMu  sync.Mutex
	changes atomic.Uint64
}

type rowKey struct {
	merchant string
	token    uuid.UUID
}

// RowCacheTTL bounds how long another instance may still use a card row
// after a change or deletion.
const RowCacheTTL = 10 * time.Second

// New builds the service. Cards are stored in store, every touch of them is
// recorded in audits. fingerprintKey is the HMAC key exported from Vault at
// start; it is never stored on disk.
func New(store vaultproxy.CardStore, audits vaultproxy.AuditLog, sealer *envelope.Sealer, fingerprintKey []byte, codes *SecurityCodes, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, audits: audits, sealer: sealer, fingerprintKey: fingerprintKey, codes: codes, now: now,
		rows: expirable.NewLRU[rowKey, *vaultproxy.VaultedCard](10_000, nil, RowCacheTTL)}
}

// Caller identifies who asks, for the audit log.
type Caller struct {
	MerchantAccountID string
	Actor             string // token id (jti) or client identity
	RequestID         string
}

// CardRequest is a card to vault. Number and SecurityCode are scratch bytes
// the service zeroes before it returns.
type CardRequest struct {
	Kind           vaultproxy.Kind
	Number         []byte
	ExpirationDate string
	SecurityCode   []byte // optional; gift cards: the PIN (stored sealed, as a bearer credential)
	// Token is the record's token when not uuid.Nil (IdempotentToken's);
	// else a random one is drawn.
	Token uuid.UUID
}

// FieldErrors is a validation failure with one entry per bad field.
type FieldErrors []card.FieldError

func (f FieldErrors) Error() string { return fmt.Sprintf("vaulting: %d invalid field(s)", len(f)) }

// VaultCard validates, seals and stores a card and returns its record. A card's
// security code is held in memory only (SecurityCodes), never stored.
func (s *Service) VaultCard(ctx context.Context, c Caller, req CardRequest) (*vaultproxy.VaultedCard, error) {
	defer clear(req.Number)
	defer clear(req.SecurityCode)
	now := s.now()
	rec := &vaultproxy.VaultedCard{Token: req.Token, MerchantAccountID: c.MerchantAccountID, Kind: req.Kind}
	if rec.Token == uuid.Nil {
		rec.Token = uuid.New()
	}
	var payload, code []byte
	switch req.Kind {
	case vaultproxy.KindCard:
		in := card.CardInput{Number: req.Number, ExpirationDate: req.ExpirationDate, SecurityCode: req.SecurityCode}
		parsed, errs := card.Validate(in, now)
		if len(errs) > 0 {
			return nil, FieldErrors(errs)
		}
		defer parsed.Zero()
		d := parsed.Number.Display()
		rec.Scheme, rec.CardType, rec.BIN, rec.Last4 = string(d.Scheme), string(d.CardType), d.BIN, d.Label
		rec.ExpirationDate = parsed.Expiry.String()
		rec.Fingerprint = s.fingerprint(c.MerchantAccountID, parsed.Number.Reveal())
		payload = encodePayload(parsed.Number.Reveal(), nil)
		code = parsed.SecurityCode.Reveal()
	case vaultproxy.KindGiftCard:
		g, errs := parseGiftCard(req.Number, req.SecurityCode, req.ExpirationDate, now)
		if len(errs) > 0 {
			return nil, FieldErrors(errs)
		}
		rec.Scheme, rec.BIN, rec.Last4, rec.ExpirationDate = "gift-card", g.bin, g.last4, g.expiry
		rec.Fingerprint = s.fingerprint(c.MerchantAccountID, req.Number)
		payload = encodePayload(req.Number, req.SecurityCode)
	default:
		return nil, FieldErrors{{Field: "method", Code: "invalid_value", Message: "method must be card or gift-card"}}
	}
	if err := s.seal(ctx, c, rec, payload); err != nil {
		return nil, err
	}
	// Held only once the card is stored: a vaulting that failed returns no
	// token, and a code held under it would wait out its TTL for nothing.
	if len(code) > 0 {
		s.codes.Put(rec.Token, code, now)
	}
	return rec, nil
}

// IdempotentToken is the token a card given with a payment under the
// merchant's idempotency key is vaulted with: a keyed HMAC (the
// fingerprint key, so no one without it can compute or guess one) of the
// merchant account, the key and the payment method's JSON bytes as sent
// (card number, expiry and security code among them). A retry of the
// payment, the same bytes under the same key, finds the card it vaulted
// the first time instead of vaulting a second one; any change of the card
// gives another token, so the payment it goes on as differs from the
// first, and the key's reuse is refused downstream. Version 4 and variant
// bits are set so it reads as every other token does.
func (s *Service) IdempotentToken(merchantAccountID, key string, paymentMethod []byte) uuid.UUID {
	m := hmac.New(sha256.New, s.fingerprintKey)
	m.Write([]byte("payorch/idempotent-token/v1|"))
	var n [4]byte
	for _, part := range [][]byte{[]byte(merchantAccountID), []byte(key)} {
		// Length-prefixed: no two (account, key) pairs write the same bytes.
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		m.Write(n[:])
		m.Write(part)
	}
	m.Write(paymentMethod)
	var t uuid.UUID
	copy(t[:], m.Sum(nil))
	t[6] = t[6]&0x0f | 0x40
	t[8] = t[8]&0x3f | 0x80
	return t
}

// Vaulted reports whether the merchant account holds a record under
// token, as the database says now (not the row cache: a record another
// instance shredded a moment ago must not be taken for one still there).
func (s *Service) Vaulted(ctx context.Context, c Caller, token uuid.UUID) (bool, error) {
	_, err := s.store.Cards(ctx, c.MerchantAccountID, []uuid.UUID{token})
	if errors.Is(err, vaultproxy.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// HoldSecurityCode holds code for the card of token, as VaultCard does
// for a card it vaults: a payment sent again with a card vaulted the first
// time holds the code it carries for its own authorization. It clears
// code.
func (s *Service) HoldSecurityCode(token uuid.UUID, code []byte) {
	defer clear(code)
	if len(code) > 0 {
		s.codes.Put(token, code, s.now())
	}
}

// ForgetSecurityCode ends the hold of token's security code, if any: the
// payment it was given for is over.
func (s *Service) ForgetSecurityCode(token uuid.UUID) {
	s.codes.Delete(token)
}

// SecurityCodeHeld reports whether a security code is held for token (the
// security code's presence only, never its value).
func (s *Service) SecurityCodeHeld(token uuid.UUID) bool {
	return s.codes.Held(token, s.now())
}

// HoldSecurityCodeForChallenge moves the security code held for token's
// payment to the hold of the 3-D Secure challenge of transaction id, which
// ends at until (the challenge's expiry; at most the holder's TTL from
// now): the authorization that resumes the transaction once the buyer
// completes the challenge takes it (RevealFor), and nothing else can. It
// reports whether a code was moved; without one it does nothing.
func (s *Service) HoldSecurityCodeForChallenge(token uuid.UUID, id string, until time.Time) bool {
	now := s.now()
	code := s.codes.Take(token, now)
	if code == nil {
		return false
	}
	defer clear(code)
	s.codes.PutUntil(ChallengeKey(token, id), code, now, until)
	return s.codes.Held(ChallengeKey(token, id), now)
}

// ForgetSecurityCodeFor ends the hold of the security code kept for the
// authorization that would resume transaction id, paid with the card of
// token, after its 3-D Secure challenge (HoldSecurityCodeForChallenge):
// the challenge ended without one (declined, failed, expired), so the
// code has no use left. Forgetting a code not held does nothing.
func (s *Service) ForgetSecurityCodeFor(token uuid.UUID, id string) {
	s.codes.Delete(ChallengeKey(token, id))
}

// SecurityCodeHeldFor reports whether a security code is held for the
// authorization that resumes transaction id, paid with the card of token,
// after its 3-D Secure challenge.
func (s *Service) SecurityCodeHeldFor(token uuid.UUID, id string) bool {
	return s.codes.Held(ChallengeKey(token, id), s.now())
}

// seal encrypts payload into rec, stores it and audits; it clears payload.
func (s *Service) seal(ctx context.Context, c Caller, rec *vaultproxy.VaultedCard, payload []byte) error {
	defer clear(payload)
	sealed, err := s.sealer.Seal(ctx, payload, AAD(c.MerchantAccountID, rec.Token))
	if err != nil {
		s.audit(ctx, c, "vault", []uuid.UUID{rec.Token}, "", "failure: seal")
		return err
	}
	rec.Sealed = sealed
	ev := vaultproxy.AuditEvent{Actor: c.Actor, MerchantAccountID: c.MerchantAccountID, Action: "vault", Outcome: "success", RequestID: c.RequestID}
	if err := s.store.InsertCardAudited(ctx, rec, ev); err != nil {
		s.audit(ctx, c, "vault", []uuid.UUID{rec.Token}, "", "failure: store")
		return err
	}
	return nil
}

// AAD binds a ciphertext to its merchant account and token.
func AAD(merchantAccountID string, token uuid.UUID) []byte {
	return appendAAD(make([]byte, 0, aadLen(merchantAccountID)), merchantAccountID, token)
}

const aadPrefix = "payorch/card/v1|"

// aadLen is the length of a card's AAD for the merchant account: sized
// up front, the buffer is allocated once rather than grown three times.
func aadLen(merchantAccountID string) int {
	return len(aadPrefix) + len(merchantAccountID) + 1 + 36
}

func appendAAD(b []byte, merchantAccountID string, token uuid.UUID) []byte {
	b = append(append(append(b, aadPrefix...), merchantAccountID...), '|')
	return uuidtext.Append(b, token)
}

// fingerprint is a keyed HMAC of the PAN, scoped to the merchant account so
// that one merchant's fingerprints say nothing about another's.
func (s *Service) fingerprint(merchantAccountID string, pan []byte) string {
	m := hmac.New(sha256.New, s.fingerprintKey)
	m.Write([]byte("payorch/fingerprint/v1|" + merchantAccountID + "|"))
	m.Write(pan)
	return "fp_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Revealed is a card opened for substitution. Zero it after use.
type Revealed struct {
	Card         *vaultproxy.VaultedCard
	Number       []byte
	PIN          []byte // gift cards
	SecurityCode []byte // only when asked for and still held
}

// Zero clears the revealed secrets.
func (r *Revealed) Zero() {
	clear(r.Number)
	clear(r.PIN)
	clear(r.SecurityCode)
}

// PurposeAuthorization is the purpose of a detokenized authorization call,
// the one use a held security code may have.
const PurposeAuthorization = "authorization"

// The purposes of core-api's detokenized gift card calls, the only uses
// of a gift card's number and PIN.
const (
	PurposeRedemption = "redemption"
	PurposeBalance    = "balance"
)

// GiftCardPurpose reports whether purpose may use a gift card's number
// and PIN.
func GiftCardPurpose(purpose string) bool {
	return purpose == PurposeRedemption || purpose == PurposeBalance
}

// Reveal opens the merchant's cards for tokens, in order. Before any card
// is opened it holds room in the audit log for the record of what is
// done with them (vaultproxy.ErrAuditUnavailable when there is none); the
// caller writes that record with the returned Outcome, with purpose and
// outcome, never the values. A reveal that fails records its failure
// itself.
func (s *Service) Reveal(ctx context.Context, c Caller, action, purpose string, tokens []uuid.UUID, withSecurityCode bool) ([]*Revealed, *Outcome, error) {
	return s.RevealFor(ctx, c, action, purpose, tokens, withSecurityCode, "")
}

// RevealFor is Reveal for the authorization that resumes transaction id
// after its 3-D Secure challenge: the security code, when asked for, is
// the one held for that challenge (HoldSecurityCodeForChallenge). An
// empty id is Reveal.
func (s *Service) RevealFor(ctx context.Context, c Caller, action, purpose string, tokens []uuid.UUID, withSecurityCode bool, id string) ([]*Revealed, *Outcome, error) {
	codeKey := func(token uuid.UUID) uuid.UUID { return token }
	if id != "" {
		codeKey = func(token uuid.UUID) uuid.UUID { return ChallengeKey(token, id) }
	}
	room, err := s.audits.Reserve(vaultproxy.AuditEvent{
		Actor: c.Actor, MerchantAccountID: c.MerchantAccountID, Action: action, Tokens: tokens, Purpose: purpose, RequestID: c.RequestID,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", vaultproxy.ErrAuditUnavailable, err)
	}
	o := &Outcome{c: c, action: action, purpose: purpose, tokens: tokens, room: room}
	// Taken before the rows are read: a card deleted after the read has
	// had its record key forgotten, and the open must not cache it again.
	since := s.sealer.Drops()
	cards, err := s.cards(ctx, c.MerchantAccountID, tokens)
	if err != nil {
		o.Record(ctx, "failure: "+outcomeOf(err), nil)
		return nil, nil, err
	}
	out := make([]*Revealed, len(cards))
	revealed := make([]Revealed, len(cards))            // one allocation for all
	aad := make([]byte, 0, aadLen(c.MerchantAccountID)) // one buffer for every card's
	for i, vc := range cards {
		aad = appendAAD(aad[:0], c.MerchantAccountID, vc.Token)
		pt, err := s.sealer.OpenSince(ctx, vc.Sealed, aad, since)
		if err != nil {
			for _, r := range out[:i] {
				r.Zero()
			}
			o.Record(ctx, "failure: decrypt", nil)
			return nil, nil, err
		}
		num, pin := decodePayload(pt)
		r := &revealed[i]
		r.Card, r.Number, r.PIN = vc, num, pin
		if withSecurityCode {
			r.SecurityCode = s.codes.Take(codeKey(vc.Token), s.now())
		} else if purpose == PurposeAuthorization {
			// The code is held for at most one authorization (SECURITY.md,
			// "Security codes"): one that does not send it ends the hold too.
			s.codes.Delete(codeKey(vc.Token))
		}
		out[i] = r
	}
	return out, o, nil
}

// Outcome is the audit record a reveal owes: its room in the audit log,
// held since before any card was opened, and what it is about.
type Outcome struct {
	c               Caller
	action, purpose string
	tokens          []uuid.UUID
	room            vaultproxy.AuditReservation // nil once used
}

// Record writes the reveal's record with outcome and detail into the room
// held for it; the reveal has one record, so later calls write nothing.
// It keeps nothing of detail once it returns. An error is the audit log's
// to report (auditspool logs it); the card has been used by then.
func (o *Outcome) Record(ctx context.Context, outcome string, detail map[string]any) {
	if o == nil || o.room == nil {
		return
	}
	room := o.room
	o.room = nil
	_ = room.Record(ctx, vaultproxy.AuditEvent{
		Actor: o.c.Actor, MerchantAccountID: o.c.MerchantAccountID, Action: o.action, Tokens: o.tokens,
		Purpose: o.purpose, Outcome: outcome, RequestID: o.c.RequestID, Detail: detail,
	})
}

// Release gives the room back when the reveal's use records its own
// events (or none); after Record it does nothing.
func (o *Outcome) Release() {
	if o == nil || o.room == nil {
		return
	}
	o.room.Release()
	o.room = nil
}

// AuditOutcome records the outcome of a call refused before any card was
// revealed for it (a forward to a destination refused up front). It keeps
// nothing of detail once it returns.
func (s *Service) AuditOutcome(ctx context.Context, c Caller, action, purpose string, tokens []uuid.UUID, outcome string, detail map[string]any) {
	_ = s.audits.Record(ctx, vaultproxy.AuditEvent{
		Actor: c.Actor, MerchantAccountID: c.MerchantAccountID, Action: action, Tokens: tokens,
		Purpose: purpose, Outcome: outcome, RequestID: c.RequestID, Detail: detail,
	})
}

// Metadata returns display data for one token of the merchant.
func (s *Service) Metadata(ctx context.Context, c Caller, token uuid.UUID) (*vaultproxy.VaultedCard, error) {
	cards, err := s.cards(ctx, c.MerchantAccountID, []uuid.UUID{token})
	if err != nil {
		return nil, err
	}
	return cards[0], nil
}

// UpdateExpiry changes a card's expiry; expiry placeholders use it at once.
func (s *Service) UpdateExpiry(ctx context.Context, c Caller, token uuid.UUID, expiry string) error {
	e, err := card.ParseExpiry(expiry, s.now())
	if err != nil {
		var fe card.FieldError
		if errors.As(err, &fe) {
			return FieldErrors{fe}
		}
		return FieldErrors{{Field: card.FieldExpirationDate, Code: card.CodeInvalidFormat, Message: "expiration_date must be MM/YY"}}
	}
	err = s.store.UpdateExpiry(ctx, c.MerchantAccountID, token, e.String())
	s.dropRow(c.MerchantAccountID, token)
	if err != nil {
		return err
	}
	s.audit(ctx, c, "update", []uuid.UUID{token}, "expiry", "success")
	return nil
}

// Delete crypto-shreds a card: the row and its record key are removed, and
// any security code held for it is zeroed. Once it returns, a reveal that
// starts on this instance does not find the card. One that read the row
// before may still open it, but leaves neither the row nor the record key
// cached (cards, envelope.Sealer.OpenSince). A card with a live network
// token is kept (vaultproxy.ErrLiveNetworkToken).
func (s *Service) Delete(ctx context.Context, c Caller, token uuid.UUID) error {
	return s.shred(ctx, c, token, "delete", "", s.store.DeleteCard)
}

// ActionReconcileShred is the audit action of ShredUnclaimed.
const ActionReconcileShred = "reconcile.shred"

// PurposeUnclaimed is the audit purpose of ShredUnclaimed: core-api holds
// no payment method for the record.
const PurposeUnclaimed = "no-payment-method"

// ShredUnclaimed crypto-shreds a record that core-api's reconciliation
// found no payment method for, as Delete does, but only one vaulted at
// least minAge ago (vaultproxy.ErrTooRecent otherwise, and nothing
// changes): whoever asks, a card cannot be shredded this way while its
// payment method's creation may still be under way. Either way the
// attempt is audited as ActionReconcileShred.
func (s *Service) ShredUnclaimed(ctx context.Context, c Caller, token uuid.UUID, minAge time.Duration) error {
	return s.shred(ctx, c, token, ActionReconcileShred, PurposeUnclaimed,
		func(ctx context.Context, merchant string, token uuid.UUID) error {
			return s.store.DeleteCardOlderThan(ctx, merchant, token, minAge)
		})
}

func (s *Service) shred(ctx context.Context, c Caller, token uuid.UUID, action, purpose string,
	del func(context.Context, string, uuid.UUID) error) error {
	cards, lookErr := s.store.Cards(ctx, c.MerchantAccountID, []uuid.UUID{token})
	err := del(ctx, c.MerchantAccountID, token)
	s.dropRow(c.MerchantAccountID, token)
	if lookErr == nil {
		s.sealer.Forget(cards[0].Sealed)
	}
	if err != nil {
		s.audit(ctx, c, action, []uuid.UUID{token}, purpose, "failure: "+outcomeOf(err))
		return err
	}
	// Only now, so that another merchant account's call cannot drop it.
	s.codes.Delete(token)
	s.audit(ctx, c, action, []uuid.UUID{token}, purpose, "success")
	return nil
}

// dropRow forgets a row after the database changed it, and keeps a read
// that started before the change from caching the old row (see cards).
func (s *Service) dropRow(merchant string, token uuid.UUID) {
	s.rowsMu.Lock()
	s.changes.Add(1)
	s.rows.Remove(rowKey{merchant, token})
	s.rowsMu.Unlock()
}

// cards returns the merchant's card rows for tokens, in order, from the row
// cache where it can and from the database for the rest.
func (s *Service) cards(ctx context.Context, merchant string, tokens []uuid.UUID) ([]*vaultproxy.VaultedCard, error) {
	out := make([]*vaultproxy.VaultedCard, len(tokens))
	var missing []uuid.UUID
	var at []int
	for i, t := range tokens {
		if c, ok := s.rows.Get(rowKey{merchant, t}); ok {
			out[i] = c
			continue
		}
		missing, at = append(missing, t), append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	before := s.changes.Load()
	got, err := s.store.Cards(ctx, merchant, missing)
	if err != nil {
		return nil, err
	}
	for j, c := range got {
		out[at[j]] = c
	}
	// A change made while the rows were read may postdate them: they serve
	// this call, which began before it, but are not cached.
	s.rowsMu.Lock()
	if s.changes.Load() == before {
		for _, c := range got {
			s.rows.Add(rowKey{merchant, c.Token}, c)
		}
	}
	s.rowsMu.Unlock()
	return out, nil
}

func (s *Service) audit(ctx context.Context, c Caller, action string, tokens []uuid.UUID, purpose, outcome string) {
	_ = s.audits.Record(ctx, vaultproxy.AuditEvent{
		Actor: c.Actor, MerchantAccountID: c.MerchantAccountID, Action: action, Tokens: tokens,
		Purpose: purpose, Outcome: outcome, RequestID: c.RequestID,
	})
}

func outcomeOf(err error) string {
	switch {
	case errors.Is(err, vaultproxy.ErrNotFound):
		return "not_found"
	case errors.Is(err, vaultproxy.ErrLiveNetworkToken):
		// Not an error of the vault: the trail says why the card stayed.
		return "live_network_token"
	case errors.Is(err, vaultproxy.ErrTooRecent):
		return "too_recent"
	}
	return "error"
}

// The sealed payload: version byte, then length-prefixed number and PIN.
// Display data stays out of it; it lives in clear columns.
func encodePayload(number, pin []byte) []byte {
	b := make([]byte, 0, 1+2+len(number)+2+len(pin))
	b = append(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(number)))
	b = append(b, number...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(pin)))
	return append(b, pin...)
}

func decodePayload(b []byte) (number, pin []byte) {
	if len(b) < 5 || b[0] != 1 {
		return nil, nil
	}
	n := int(binary.BigEndian.Uint16(b[1:3]))
	if 3+n+2 > len(b) {
		return nil, nil
	}
	number = b[3 : 3+n]
	p := int(binary.BigEndian.Uint16(b[3+n : 5+n]))
	if 5+n+p > len(b) {
		return number, nil
	}
	return number, b[5+n : 5+n+p]
}
