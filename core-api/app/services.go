package app

import (
	"cmp"
	"crypto/rand"
	"time"

	"github.com/payorch/core-api/buyers"
	"github.com/payorch/core-api/connector"
	"github.com/payorch/core-api/httpapi"
	"github.com/payorch/core-api/idempotency"
	"github.com/payorch/core-api/merchants"
	"github.com/payorch/core-api/paymentmethods"
	"github.com/payorch/core-api/paymentservices"
	"github.com/payorch/core-api/postgres"
	"github.com/payorch/core-api/threeds"
	"github.com/payorch/core-api/transactions"
	"github.com/payorch/core-api/webhookhttp"
	"github.com/payorch/core-api/webhooks"
	"github.com/payorch/shared/auth"
	"github.com/payorch/shared/config"
	"github.com/payorch/shared/pagination"
)

// deps builds the services the routes call, on the core database,
// vault-proxy's internal listener and the connectors of the environment,
// and the readiness checks of what core-api depends on.
func (m *Main) deps(verifier *auth.Verifier, cursors *pagination.Codec) httpapi.Deps {
	connectors, mandates := connectorsOf(m.Config.Environment, m.VaultProxy, m.Config.simulators())
	m.Connectors = connectors
	paymentServices := &paymentservices.Service{Store: postgres.PaymentServicesStore{DB: m.DB}, Connectors: connectors, Crypter: m.Vault}
	// A mandate set up with a stored bank account routes as the account's
	// debits do: the transactions service chooses where.
	txs := m.transactions(connectors, mandates, paymentServices)
	return httpapi.Deps{
		Log:     m.Log,
		Auth:    &httpapi.Auth{Verifier: verifier, Exists: m.DB.MerchantAccountExists},
		Cursors: cursors,
		Checks: []httpapi.Check{
			{Name: "postgres", Check: m.DB.Ping},
			{Name: "vault-proxy", Check: m.VaultProxy.Ready},
			{Name: "vault", Check: m.Vault.Ready},
		},

		MerchantAccounts: &merchants.Service{Store: postgres.MerchantsStore{DB: m.DB}, VaultProxy: m.VaultProxy, Log: m.Log},
		Buyers:           &buyers.Service{Store: m.DB},
		PaymentMethods: &paymentmethods.Service{Store: postgres.PaymentMethodsStore{DB: m.DB}, VaultProxy: m.VaultProxy,
			Connectors: connectors, Mandates: txs, PaymentServices: paymentServices, Now: time.Now, Log: m.Log},
		PaymentServices:  paymentServices,
		Transactions:     txs,
		Idempotency:      &idempotency.Service{Store: m.DB, Lease: m.Config.idempotencyLease()},
		ThreeDSScenarios: m.threeDSScenarios(),
		Webhooks:         &webhooks.Service{Store: m.DB, Crypter: m.Vault, Production: m.Config.Environment == config.Production},
	}
}

// threeDSScenarios is the sandbox 3-D Secure simulator's rule book where
// the simulator exists (sandbox and development); nil in production.
func (m *Main) threeDSScenarios() *threeds.Service {
	if !simulatorsRun(m.Config.Environment) {
		return nil
	}
	if m.scenarios == nil {
		m.scenarios = &threeds.Service{Store: postgres.ThreeDSStore{DB: m.DB}, Vault: m.VaultProxy, Log: m.Log}
	}
	return m.scenarios
}

// threeDS is what card payments with 3-D Secure need: the connector to
// the sandbox simulator, mock-3ds, reached through vault-proxy's
// detokenized call, where it exists; none in production, where such
// payments are refused.
func (m *Main) threeDS(challengeKey []byte) transactions.ThreeDS {
	d := transactions.ThreeDS{ChallengeKey: challengeKey, PublicURL: m.Config.PublicURL}
	if scenarios := m.threeDSScenarios(); scenarios != nil {
		d.Connector = connector.MockThreeDS{VaultProxy: m.VaultProxy, Scenarios: scenarios}
	}
	return d
}

// simulatorsRun says whether env has the sandbox simulators.
func simulatorsRun(env config.Environment) bool {
	return env == config.Sandbox || env == config.Development
}

// startDelivering runs this instance's webhook dispatcher: every
// instance delivers, the claims sharing the work out.
func (m *Main) startDelivering() {
	w := m.Config.Webhooks
	if w.AllowLoopback {
		m.Log.Warn("webhook deliveries may reach loopback addresses (WEBHOOK_ALLOW_LOOPBACK=true); never use this outside tests")
	}
	timeout := cmp.Or(w.Timeout, webhooks.DefaultTimeout)
	d := &webhooks.Dispatcher{Store: m.DB, Crypter: m.Vault, Sender: webhookhttp.New(w.AllowLoopback, timeout),
		Log: m.Log.With("component", "webhook-delivery"), Timeout: timeout, PerEndpoint: w.PerEndpoint,
		Lease: w.Lease, Poll: w.Poll, Observer: m.webhookObserver}
	m.startJob(d.Run)
}

// transactions is the transactions service on the environment's
// connectors and the merchant accounts' payment services; Run sweeps with
// the same one.
func (m *Main) transactions(connectors *connector.Registry, mandates string, paymentServices *paymentservices.Service) *transactions.Service {
	if m.txs == nil {
		// One key signs both kinds of buyer-facing tokens; each signs
		// under a context of its own, so neither is ever the other.
		key := m.completionKey()
		m.txs = &transactions.Service{Store: postgres.TransactionsStore{DB: m.DB}, Cards: cardsOf(connectors),
			PaymentServices: paymentServices, Connectors: connectors, SyncMinAge: m.Config.transactionSyncMinAge(),
			VaultProxy: m.VaultProxy,
			QR:         &transactions.QR{BuiltIn: qrsOf(connectors), NotificationBaseURL: m.Config.notificationURL(), Expiry: m.Config.QRExpiry},
			Bank:       &transactions.Bank{BuiltIn: banksOf(connectors, mandates), Mandates: m.DB},
			Direct: transactions.Direct{BuiltIn: directOf(connectors), Connectors: connectors, Sessions: postgres.TransactionsStore{DB: m.DB},
				CompletionKey: key, PublicURL: m.Config.PublicURL},
			Redirect: &transactions.Redirect{BuiltIn: redirectOf(connectors), Connectors: connectors},
			ThreeDS:  m.threeDS(key), Buyers: m.DB, Log: m.Log.With("component", "transactions")}
	}
	return m.txs
}

// Transactions is the transactions service the routes and the sweep use
// (nil before Run).
func (m *Main) Transactions() *transactions.Service { return m.txs }

// directOf is the built-in sandbox connector of direct integrations:
// mock-direct, where the environment registers it; none otherwise.
func directOf(registry *connector.Registry) connector.DirectConnector {
	d, err := registry.Directs(connector.MockDirectName)
	if err != nil {
		return nil
	}
	return d
}

// redirectOf is the built-in sandbox connector of redirect payments:
// mock-redirect, where the environment registers it; none otherwise.
func redirectOf(registry *connector.Registry) connector.RedirectConnector {
	r, err := registry.Redirects(connector.MockRedirectName)
	if err != nil {
		return nil
	}
	return r
}

// completionKey is the configured key of completion tokens, or a random
// one (Config.CompletionKey; production requires one).
func (m *Main) completionKey() []byte {
	if !m.Config.CompletionKey.IsZero() {
		return []byte(m.Config.CompletionKey.Reveal())
	}
	m.Log.Warn("CORE_API_COMPLETION_KEY is not set: completion URLs use a random key and do not survive a restart")
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// cardsOf is the built-in sandbox card connector, which card payments go
// to when they name no payment service and their merchant account has no
// default: mock-card, where the environment registers it; none in
// production, where such a payment is refused (payment_service_unavailable).
func cardsOf(registry *connector.Registry) transactions.CardConnector {
	cards, err := registry.Cards(connector.MockCardName)
	if err != nil {
		return nil
	}
	return cards
}

// qrsOf is the built-in sandbox QR connector, which pix payments go to
// when they name no payment service and their merchant account has no
// default for pix: mock-bank, where the environment registers it.
func qrsOf(registry *connector.Registry) transactions.QRConnector {
	qrs, err := registry.QRs(connector.MockBankName)
	if err != nil {
		return nil
	}
	return qrs
}

// banksOf is the environment's bank connector: the one bank mandates are
// set up with (connectorsOf), which debits the accounts too; nil when
// there is none.
func banksOf(registry *connector.Registry, mandates string) transactions.BankConnector {
	b, err := registry.BankDebits(mandates)
	if err != nil {
		return nil
	}
	return b
}

// connectorsOf registers the connectors of env and names the one new bank
// mandates go to. The sandbox simulators run in the sandbox and
// development environments only (mock-card's connector reaches the
// processor through vp, vault-proxy's detokenized call); production has
// no processor connections yet, so recurring bank mandates are refused
// there ("" names none). mock-direct's, mock-redirect's and
// mock-antifraud's connectors are registered when their simulators'
// addresses are given, outside production only.
func connectorsOf(env config.Environment, vp connector.Detokenizer, sims simulatorURLs) (registry *connector.Registry, mandates string) {
	if simulatorsRun(env) {
		cs := []connector.Connector{connector.MockBank{BaseURL: sims.bank}, connector.MockCard{VaultProxy: vp}}
		if sims.direct != "" {
			cs = append(cs, connector.MockDirect{BaseURL: sims.direct})
		}
		if sims.redirect != "" {
			cs = append(cs, connector.MockRedirect{BaseURL: sims.redirect})
		}
		if sims.antiFraud != "" {
			cs = append(cs, connector.MockAntiFraud{BaseURL: sims.antiFraud})
		}
		return connector.NewRegistry(cs...), connector.MockBankName
	}
	return connector.NewRegistry(), ""
}
