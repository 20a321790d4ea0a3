package httpapi

import (
	"net/http"
	"time"

	coreapi "github.com/payorch/core-api"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
)

// Scopes of the outbound webhook routes.
const (
	ScopeWebhookSubscriptionsRead  = "webhook-subscriptions.read"
	ScopeWebhookSubscriptionsWrite = "webhook-subscriptions.write"
)

// The outbound webhook routes (docs/webhooks.md):
//
//	POST   /webhook-subscriptions                    write {url, active?, event_names?, basic_auth?} -> 201 (secret once)
//	GET    /webhook-subscriptions                    read  ?limit=&cursor= -> page
//	GET    /webhook-subscriptions/{id}               read  -> subscription with health
//	PUT    /webhook-subscriptions/{id}               write {url?, active?, event_names?, basic_auth?} -> 200
//	DELETE /webhook-subscriptions/{id}               write -> 204
//	POST   /webhook-subscriptions/{id}/rotate-secret write {grace_period_seconds?} -> 200 (new secret once)
//	GET    /webhook-subscriptions/{id}/deliveries    read  -> latest deliveries with attempts (request bodies null)
//	POST   /webhook-subscriptions/{id}/replay        write {since} -> 202 {replayed}
//	GET    /events/{event_id}/deliveries             read  -> the event's deliveries with attempts and request bodies
//	POST   /events/{event_id}/replay                 write {subscription_id?} -> 202 {replayed}
type webhookHandlers struct{ d Deps }

type webhookSubscriptionInJSON struct {
	URL        coreapi.Optional[string]             `json:"url"`
	Active     coreapi.Optional[bool]               `json:"active"`
	EventNames coreapi.Optional[[]string]           `json:"event_names"`
	BasicAuth  coreapi.Optional[*coreapi.BasicAuth] `json:"basic_auth"`
}

func (in webhookSubscriptionInJSON) fields() coreapi.WebhookSubscriptionFields {
	return coreapi.WebhookSubscriptionFields{URL: in.URL, Active: in.Active, EventNames: in.EventNames, BasicAuth: in.BasicAuth}
}

type webhookBasicAuthJSON struct {
	Username string `json:"username"`
}

type webhookHealthJSON struct {
	RecentAttempts int     `json:"recent_attempts"`
	FailureRate    float64 `json:"recent_failure_rate"`
	QueueDepth     int     `json:"queue_depth"`
	FailedCount    int     `json:"failed_deliveries"`
}

// webhookSubscriptionJSON is a subscription on the wire: the secret only
// in the answer that made it; the Basic authentication password never.
type webhookSubscriptionJSON struct {
	Type                 string                `json:"type"`
	ID                   string                `json:"id"`
	MerchantAccountID    string                `json:"merchant_account_id"`
	URL                  string                `json:"url"`
	Active               bool                  `json:"active"`
	EventNames           []string              `json:"event_names"`
	BasicAuth            *webhookBasicAuthJSON `json:"basic_auth"`
	DisabledReason       *string               `json:"disabled_reason"`
	SecretRotationEndsAt *string               `json:"secret_rotation_ends_at"`
	Health               *webhookHealthJSON    `json:"health,omitempty"`
	Secret               *string               `json:"secret,omitempty"`
	CreatedAt            string                `json:"created_at"`
	UpdatedAt            string                `json:"updated_at"`
}

func webhookSubscriptionOut(s *coreapi.WebhookSubscription) webhookSubscriptionJSON {
	out := webhookSubscriptionJSON{Type: "webhook-subscription", ID: s.ID, MerchantAccountID: s.MerchantAccountID, URL: s.URL,
		Active: s.Active, EventNames: s.EventNames, DisabledReason: s.DisabledReason,
		SecretRotationEndsAt: timePtrJSON(s.SecretRotationEndsAt), Secret: s.Secret,
		CreatedAt: timestamp(s.CreatedAt), UpdatedAt: timestamp(s.UpdatedAt)}
	if s.BasicAuthUsername != nil {
		out.BasicAuth = &webhookBasicAuthJSON{Username: *s.BasicAuthUsername}
	}
	return out
}

func (h webhookHandlers) create(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeWebhookSubscriptionsWrite)
	if err != nil {
		return err
	}
	var in webhookSubscriptionInJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	s, err := h.d.Webhooks.Create(r.Context(), c.MerchantAccountID, in.fields())
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	return WriteJSON(w, http.StatusCreated, webhookSubscriptionOut(s))
}

func (h webhookHandlers) get(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsRead, "webhook_subscription_id")
	if err != nil {
		return err
	}
	s, err := h.d.Webhooks.Get(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	hl, err := h.d.Webhooks.Health(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	out := webhookSubscriptionOut(s)
	out.Health = &webhookHealthJSON{RecentAttempts: hl.RecentAttempts, FailureRate: hl.FailureRate,
		QueueDepth: hl.QueueDepth, FailedCount: hl.FailedCount}
	return WriteJSON(w, http.StatusOK, out)
}

func (h webhookHandlers) update(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsWrite, "webhook_subscription_id")
	if err != nil {
		return err
	}
	var in webhookSubscriptionInJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	s, err := h.d.Webhooks.Update(r.Context(), c.MerchantAccountID, id, in.fields())
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	return WriteJSON(w, http.StatusOK, webhookSubscriptionOut(s))
}

func (h webhookHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsWrite, "webhook_subscription_id")
	if err != nil {
		return err
	}
	if err := h.d.Webhooks.Delete(r.Context(), c.MerchantAccountID, id); err != nil {
		return domainError(err, "webhook subscription")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h webhookHandlers) list(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Auth.Authorize(r, ScopeWebhookSubscriptionsRead)
	if err != nil {
		return err
	}
	page, err := h.d.Cursors.ParseRequest(r.URL.Query(), "webhook-subscriptions", pagination.Binding(c.MerchantAccountID))
	if err != nil {
		return err
	}
	rows, err := h.d.Webhooks.List(r.Context(), c.MerchantAccountID, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, rows, func(s coreapi.WebhookSubscription) pagination.Key {
		return pagination.Key{Time: s.CreatedAt, ID: s.ID}
	})
	return WriteJSON(w, http.StatusOK, pageOf(env, webhookSubscriptionOut))
}

type rotateSecretJSON struct {
	GracePeriodSeconds *int64 `json:"grace_period_seconds"`
}

func (h webhookHandlers) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsWrite, "webhook_subscription_id")
	if err != nil {
		return err
	}
	var in rotateSecretJSON
	if err := decodeOptional(r, &in); err != nil {
		return err
	}
	var grace time.Duration
	if in.GracePeriodSeconds != nil {
		if *in.GracePeriodSeconds < 1 {
			return invalidBody("/grace_period_seconds", "grace_period_seconds must be at least 1")
		}
		grace = time.Duration(min(*in.GracePeriodSeconds, 1<<32)) * time.Second
	}
	s, err := h.d.Webhooks.RotateSecret(r.Context(), c.MerchantAccountID, id, grace)
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	return WriteJSON(w, http.StatusOK, webhookSubscriptionOut(s))
}

type webhookAttemptJSON struct {
	Status       coreapi.WebhookDeliveryStatus `json:"status"`
	ResponseCode *int                          `json:"response_code"`
	Error        *string                       `json:"error"`
	LatencyMS    int64                         `json:"latency_ms"`
	CreatedAt    string                        `json:"created_at"`
	Request      *webhookRequestJSON           `json:"request"`
	Response     *webhookResponseJSON          `json:"response"`
}

type webhookRequestJSON struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

type webhookResponseJSON struct {
	StatusCode    int               `json:"status_code"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body"`
	BodyTruncated bool              `json:"body_truncated"`
}

func webhookAttemptOut(a coreapi.WebhookAttempt) webhookAttemptJSON {
	out := webhookAttemptJSON{Status: a.Status, ResponseCode: a.ResponseCode, Error: a.Error,
		LatencyMS: a.Latency.Milliseconds(), CreatedAt: timestamp(a.CreatedAt)}
	if r := a.Request; r != nil {
		out.Request = &webhookRequestJSON{URL: r.URL, Headers: r.Headers, Body: r.Body}
	}
	if r := a.Response; r != nil {
		out.Response = &webhookResponseJSON{StatusCode: r.StatusCode, Headers: r.Headers, Body: r.Body, BodyTruncated: r.BodyTruncated}
	}
	return out
}

type webhookDeliveryJSON struct {
	Type           string                        `json:"type"`
	ID             int64                         `json:"id"`
	EventID        string                        `json:"event_id"`
	EventName      string                        `json:"event_name"`
	SubscriptionID string                        `json:"subscription_id"`
	Status         coreapi.WebhookDeliveryStatus `json:"status"`
	NextAttemptAt  *string                       `json:"next_attempt_at"`
	Attempts       []webhookAttemptJSON          `json:"attempts"`
	CreatedAt      string                        `json:"created_at"`
	UpdatedAt      string                        `json:"updated_at"`
}

type webhookDeliveriesJSON struct {
	Items []webhookDeliveryJSON `json:"items"`
}

func webhookDeliveriesOut(ds []coreapi.WebhookDelivery) webhookDeliveriesJSON {
	out := webhookDeliveriesJSON{Items: make([]webhookDeliveryJSON, len(ds))}
	for i, d := range ds {
		as := make([]webhookAttemptJSON, len(d.Attempts))
		for j, a := range d.Attempts {
			as[j] = webhookAttemptOut(a)
		}
		out.Items[i] = webhookDeliveryJSON{Type: "webhook-delivery", ID: d.ID, EventID: d.EventID, EventName: d.EventName,
			SubscriptionID: d.SubscriptionID, Status: d.Status, NextAttemptAt: timePtrJSON(d.NextAttemptAt), Attempts: as,
			CreatedAt: timestamp(d.CreatedAt), UpdatedAt: timestamp(d.UpdatedAt)}
	}
	return out
}

func (h webhookHandlers) subscriptionDeliveries(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsRead, "webhook_subscription_id")
	if err != nil {
		return err
	}
	ds, err := h.d.Webhooks.SubscriptionDeliveries(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	return WriteJSON(w, http.StatusOK, webhookDeliveriesOut(ds))
}

// event serves GET /events/{event_id}: the outbound event's payload, the
// body each of its deliveries sends, byte for byte.
func (h webhookHandlers) event(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsRead, "event_id")
	if err != nil {
		return err
	}
	payload, err := h.d.Webhooks.Event(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "event")
	}
	return writeJSONBytes(w, http.StatusOK, payload)
}

func (h webhookHandlers) eventDeliveries(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsRead, "event_id")
	if err != nil {
		return err
	}
	ds, err := h.d.Webhooks.EventDeliveries(r.Context(), c.MerchantAccountID, id)
	if err != nil {
		return domainError(err, "event")
	}
	if len(ds) == 0 {
		return apierror.NotFound("event not found, or delivered to no subscription")
	}
	return WriteJSON(w, http.StatusOK, webhookDeliveriesOut(ds))
}

type replayedJSON struct {
	Replayed int `json:"replayed"`
}

type replayFailedJSON struct {
	Since *string `json:"since"`
}

func (h webhookHandlers) replayFailed(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsWrite, "webhook_subscription_id")
	if err != nil {
		return err
	}
	var in replayFailedJSON
	if err := DecodeStrict(r, &in); err != nil {
		return err
	}
	if in.Since == nil {
		return invalidBody("/since", "since is required: the failed deliveries of events since then are replayed")
	}
	since, err := time.Parse(time.RFC3339Nano, *in.Since)
	if err != nil {
		return invalidBody("/since", "since must be an RFC 3339 date-time")
	}
	n, err := h.d.Webhooks.ReplayFailed(r.Context(), c.MerchantAccountID, id, since)
	if err != nil {
		return domainError(err, "webhook subscription")
	}
	return WriteJSON(w, http.StatusAccepted, replayedJSON{n})
}

type replayEventJSON struct {
	SubscriptionID *string `json:"subscription_id"`
}

func (h webhookHandlers) replayEvent(w http.ResponseWriter, r *http.Request) error {
	c, id, err := h.d.Auth.AuthorizeTarget(r, ScopeWebhookSubscriptionsWrite, "event_id")
	if err != nil {
		return err
	}
	var in replayEventJSON
	if err := decodeOptional(r, &in); err != nil {
		return err
	}
	sub := ""
	if in.SubscriptionID != nil {
		sub = *in.SubscriptionID
	}
	n, err := h.d.Webhooks.ReplayEvent(r.Context(), c.MerchantAccountID, id, sub)
	if err != nil {
		return domainError(err, "event")
	}
	return WriteJSON(w, http.StatusAccepted, replayedJSON{n})
}

// invalidBody is the validation error of one value of the body.
func invalidBody(pointer, message string) error {
	var v coreapi.Problems
	v.Add(pointer, message, "value_error")
	return domainError(v.Err(), "")
}
