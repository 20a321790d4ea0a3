package forward

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/vault-proxy/auditspool"
	"github.com/payorch/vault-proxy/vaulting"
)

// shelving keeps every record in the spool: the benchmark measures the
// request path, not the shipper.
type shelving struct{}

func (shelving) AuditCheckpoint(context.Context, uuid.UUID) (uint64, error) { return 0, nil }
func (shelving) ShipAudit(context.Context, uuid.UUID, auditspool.Batch) error {
	return errors.New("shelved")
}

// BenchmarkAuditOutcome is what a /vault-forward pays for its audit
// record: the detail Send builds and AuditOutcome's spooling of it.
func BenchmarkAuditOutcome(b *testing.B) {
	s, err := auditspool.Open(b.TempDir(), shelving{}, auditspool.Options{RetryMin: time.Hour, DrainTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	svc := vaulting.New(nil, s, nil, nil, nil, nil)
	ctx := context.Background()
	u, _ := url.Parse("https://127.0.0.1:8443/pay")
	r := Request{
		Caller: vaulting.Caller{MerchantAccountID: "default", Actor: "0192f1c4-7a3e-7d2b-9c1f-4e5a6b7c8d9e", RequestID: "req-0192f1c4"},
		Action: "forward", Purpose: "vault-forward", Method: "POST", URL: u,
		Tokens: []uuid.UUID{uuid.New(), uuid.New()},
		Audit:  map[string]any{"authentications": []string{uuid.NewString()}},
	}
	names := []string{"CARD_NUMBER_1", "CARD_EXPIRATION_DATE_MM_1", "CARD_EXPIRATION_DATE_YY_1", "CARD_SECURITY_CODE_1"}
	b.ReportAllocs()
	for b.Loop() {
		svc.AuditOutcome(ctx, r.Caller, r.Action, r.Purpose, r.Tokens, "success", auditDetail(&r, names, 3*time.Millisecond, 200, ""))
	}
}
