package forwardconfig_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/payorch/tokenizer/envelope"
	"github.com/payorch/tokenizer/transit"
	"github.com/payorch/tokenizer/transit/transittest"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/payorch/vault-proxy/postgres/postgrestest"
)

// pausingStore is the real store, except that once armed its next
// AuthMethodsByID or ForwardHosts call, having read the rows, says so on
// read and waits for proceed: a forward that read a method or the hosts
// just before they changed.
type pausingStore struct {
	forwardconfig.Store
	armed         atomic.Bool
	read, proceed chan struct{}
}

func (p *pausingStore) pause() {
	if p.armed.CompareAndSwap(true, false) {
		p.read <- struct{}{}
		<-p.proceed
	}
}

func (p *pausingStore) AuthMethodsByID(ctx context.Context, m string, ids []uuid.UUID) ([]*forwardconfig.AuthMethod, [][]string, error) {
	methods, hosts, err := p.Store.AuthMethodsByID(ctx, m, ids)
	p.pause()
	return methods, hosts, err
}

func (p *pausingStore) ForwardHosts(ctx context.Context, m string) ([]string, error) {
	hosts, err := p.Store.ForwardHosts(ctx, m)
	p.pause()
	return hosts, err
}

// A read of a merchant's hosts that began before a change to its configs
// may return what it read, but does not cache it: once the change has
// returned, this instance's next forward sees the new list, not the old
// one for HostCacheTTL.
func TestHostsReadRacingAChangeIsNotCached(t *testing.T) {
	hosts := []string{"a.example", "b.example"}
	cases := []struct {
		name   string
		change func(ctx context.Context, svc *forwardconfig.Service, cfg uuid.UUID) error
		want   []string
	}{
		{"a host removed", func(ctx context.Context, svc *forwardconfig.Service, cfg uuid.UUID) error {
			only := []string{"a.example"}
			_, err := svc.UpdateConfig(ctx, "m1", cfg, forwardconfig.ConfigInput{Hosts: &only})
			return err
		}, []string{"a.example"}},
		{"the config deleted", func(ctx context.Context, svc *forwardconfig.Service, cfg uuid.UUID) error {
			return svc.DeleteConfig(ctx, "m1", cfg)
		}, nil},
		{"a config created", func(ctx context.Context, svc *forwardconfig.Service, _ uuid.UUID) error {
			name, more := "second", []string{"c.example"}
			_, err := svc.CreateConfig(ctx, "m1", forwardconfig.ConfigInput{DisplayName: &name, Hosts: &more})
			return err
		}, []string{"a.example", "b.example", "c.example"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := postgrestest.Open(t)
			store := &pausingStore{Store: db, read: make(chan struct{}), proceed: make(chan struct{})}
			svc := &forwardconfig.Service{Store: store}
			name := "processor"
			cfg, err := svc.CreateConfig(ctx, "m1", forwardconfig.ConfigInput{DisplayName: &name, Hosts: &hosts})
			if err != nil {
				t.Fatal(err)
			}
			store.armed.Store(true)
			done := make(chan []string, 1)
			go func() {
				h, err := svc.Hosts(ctx, "m1")
				if err != nil {
					t.Error(err)
				}
				done <- h
			}()
			<-store.read // the old list is read; now the change
			if err := tc.change(ctx, svc, cfg.ID); err != nil {
				t.Fatal(err)
			}
			close(store.proceed)
			if h := <-done; !slices.Equal(slices.Sorted(slices.Values(h)), hosts) {
				t.Fatalf("the read that began first: %v", h)
			}
			got, err := svc.Hosts(ctx, "m1")
			if err != nil || !slices.Equal(slices.Sorted(slices.Values(got)), tc.want) {
				t.Fatalf("hosts after the change returned: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// An Open that read a method before it was deleted may finish with what it
// read, but does not leave the deleted method's record key cached
// (SECURITY.md: record keys are dropped when the record is deleted), and
// once the delete has returned no Open finds the method.
func TestOpenRacingADeleteDoesNotCacheTheRecordKey(t *testing.T) {
	cases := []struct {
		name string
		del  func(ctx context.Context, svc *forwardconfig.Service, configID, id uuid.UUID) error
	}{
		{"DeleteAuthMethod", func(ctx context.Context, svc *forwardconfig.Service, configID, id uuid.UUID) error {
			return svc.DeleteAuthMethod(ctx, "m1", configID, id)
		}},
		{"DeleteConfig", func(ctx context.Context, svc *forwardconfig.Service, configID, _ uuid.UUID) error {
			return svc.DeleteConfig(ctx, "m1", configID)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := postgrestest.Open(t)
			env := transittest.New(t)
			store := &pausingStore{Store: db, read: make(chan struct{}), proceed: make(chan struct{})}
			svc := &forwardconfig.Service{Store: store, Sealer: envelope.New(env.Service, db, envelope.Config{TransitKey: transit.CardKey})}
			name, hosts := "processor", []string{"api.processor.example"}
			cfg, err := svc.CreateConfig(ctx, "m1", forwardconfig.ConfigInput{DisplayName: &name, Hosts: &hosts})
			if err != nil {
				t.Fatal(err)
			}
			m, err := svc.AddAuthMethod(ctx, "m1", cfg.ID, forwardconfig.AuthInput{Kind: forwardconfig.KindSignature, DisplayName: "signing key",
				Fields: []forwardconfig.Field{{Key: "algorithm", Value: "hmac-sha256"}, {Key: "key", Value: " s3cret\n"}}})
			if err != nil {
				t.Fatal(err)
			}
			ids := []uuid.UUID{m.ID}

			store.armed.Store(true)
			type opened struct {
				methods []*forwardconfig.Opened
				err     error
			}
			done := make(chan opened, 1)
			go func() {
				methods, err := svc.Open(ctx, "m1", ids)
				done <- opened{methods, err}
			}()
			<-store.read // the method is read; now the delete
			if err := tc.del(ctx, svc, cfg.ID, m.ID); err != nil {
				t.Fatal(err)
			}
			close(store.proceed)
			if o := <-done; o.err != nil || o.methods[0].Fields["key"] != " s3cret\n" {
				t.Fatalf("the Open that began first: %v", o.err)
			}
			if n := svc.Sealer.CachedRecords(); n != 0 {
				t.Fatalf("the deleted method's record key is cached (%d entries)", n)
			}
			if _, err := svc.Open(ctx, "m1", ids); !errors.Is(err, vaultproxy.ErrNotFound) {
				t.Fatalf("opened after the delete returned: %v", err)
			}
		})
	}
}
