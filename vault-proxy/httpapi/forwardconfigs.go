package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/payorch/shared/apierror"
	"github.com/payorch/shared/pagination"
	"github.com/payorch/shared/strictjson"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/payorch/vault-proxy/forwardconfig"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

// Scopes of the forwarding configs routes.
const (
	ScopeForwardConfigsRead  = "vault-forward-configs.read"
	ScopeForwardConfigsWrite = "vault-forward-configs.write"
)

// ForwardConfigs serves /vault-forward/configs and their authentication
// methods. Secret values are write-only: no response carries them.
type ForwardConfigs struct {
	Service *forwardconfig.Service
	Auth    *Authenticator
	Cursors *pagination.Codec // the list's cursors
}

type configJSON struct {
	Type              string   `json:"type"`
	ID                string   `json:"id"`
	MerchantAccountID string   `json:"merchant_account_id"`
	DisplayName       string   `json:"display_name"`
	Hosts             []string `json:"hosts"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
}

func configOut(c *forwardconfig.Config) configJSON {
	hosts := c.Hosts
	if hosts == nil {
		hosts = []string{}
	}
	return configJSON{Type: "vault-forward-config", ID: c.ID.String(), MerchantAccountID: c.MerchantAccountID,
		DisplayName: c.DisplayName, Hosts: hosts, CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339),
		UpdatedAt: c.UpdatedAt.UTC().Format(time.RFC3339)}
}

type fieldJSON struct {
	Key   string  `json:"key"`
	Value *string `json:"value,omitempty"` // absent for secret keys
}

type authMethodJSON struct {
	Type              string      `json:"type"`
	ID                string      `json:"id"`
	ConfigID          string      `json:"config_id"`
	MerchantAccountID string      `json:"merchant_account_id"`
	Kind              string      `json:"kind"`
	DisplayName       string      `json:"display_name"`
	Fields            []fieldJSON `json:"fields"`
	CreatedAt         string      `json:"created_at"`
}

// authMethodOut lists every field key, with a value only for non-secret
// keys; it reads PublicFields only, never the sealed record. A public
// field holding a private key is withheld too: creation refuses one, but
// a method stored before that check may still hold one.
func authMethodOut(m *forwardconfig.AuthMethod) authMethodJSON {
	fields := make([]fieldJSON, 0, len(m.FieldKeys))
	for _, k := range m.FieldKeys {
		f := fieldJSON{Key: k}
		if v, ok := m.PublicFields[k]; ok && !forwardconfig.IsSecret(m.Kind, k) && !forwardconfig.HoldsPrivateKey(v) {
			f.Value = &v
		}
		fields = append(fields, f)
	}
	return authMethodJSON{Type: "vault-forward-authentication", ID: m.ID.String(), ConfigID: m.ConfigID.String(),
		MerchantAccountID: m.MerchantAccountID, Kind: m.Kind, DisplayName: m.DisplayName, Fields: fields,
		CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339)}
}

// forwardingError maps the service's errors to the envelope.
func forwardingError(err error, what string) error {
	var fe forwardconfig.FieldErrors
	if errors.As(err, &fe) {
		details := make([]apierror.Detail, len(fe))
		for i, f := range fe {
			details[i] = apierror.Detail{Location: apierror.LocationBody, Pointer: f.Pointer, Message: f.Message, Type: f.Type}
		}
		return apierror.BadRequest("the "+what+" is not valid", details...)
	}
	if errors.Is(err, vaultproxy.ErrNotFound) {
		return apierror.NotFound(what + " not found")
	}
	if errors.Is(err, vaultproxy.ErrMerchantAccountClosed) {
		return apierror.NotFound("merchant account not found")
	}
	if errors.Is(err, forwardconfig.ErrTooMany) {
		return apierror.Unprocessable(fmt.Sprintf("a forwarding config may have at most %d authentication methods", forwardconfig.MaxMethods))
	}
	return err
}

// begin authorizes a configs request for scope and returns the context its
// work runs under (requestContext); cancel is never nil.
func (h *ForwardConfigs) begin(fctx *fasthttp.RequestCtx, scope string) (context.Context, Caller, context.CancelFunc, error) {
	ctx, cancel := requestContext(fctx, 30*time.Second)
	c, err := h.Auth.Authorize(fctx, scope)
	return ctx, c, cancel, err
}

// target is begin for routes under /vault-forward/configs/{id}.
func (h *ForwardConfigs) target(fctx *fasthttp.RequestCtx, scope string) (context.Context, Caller, uuid.UUID, context.CancelFunc, error) {
	ctx, c, cancel, err := h.begin(fctx, scope)
	if err != nil {
		return ctx, c, uuid.Nil, cancel, err
	}
	id, err := pathUUID(fctx, "id")
	return ctx, c, id, cancel, err
}

// configBody is the body of a config's create (all required) and update
// (all optional), as strictjson holds it.
type configBody struct {
	DisplayName *string  `json:"display_name"`
	Hosts       []string `json:"hosts"`
}

var configSchema = strictjson.For[configBody]()

// configInput reads a create or update body. Neither field is nullable.
func configInput(body []byte) (forwardconfig.ConfigInput, error) {
	var in forwardconfig.ConfigInput
	doc, err := strictObject(body, configSchema)
	if err != nil {
		return in, err
	}
	var details []apierror.Detail
	for _, k := range []string{"display_name", "hosts"} {
		if v := gjson.GetBytes(body, k); v.Exists() && v.Type == gjson.Null {
			details = append(details, strictjson.BodyDetail("/"+k, "must not be null", strictjson.TypeNull))
		}
	}
	if len(details) > 0 {
		return in, strictjson.Invalid(details...)
	}
	if v, ok := doc["display_name"]; ok {
		s := v.Str
		in.DisplayName = &s
	}
	if v, ok := doc["hosts"]; ok {
		hosts := []string{}
		for _, h := range v.Array() {
			hosts = append(hosts, h.Str)
		}
		in.Hosts = &hosts
	}
	return in, nil
}

// Create answers POST /vault-forward/configs.
func (h *ForwardConfigs) Create(fctx *fasthttp.RequestCtx) error {
	ctx, c, cancel, err := h.begin(fctx, ScopeForwardConfigsWrite)
	defer cancel()
	if err != nil {
		return err
	}
	in, err := configInput(fctx.Request.Body())
	if err != nil {
		return err
	}
	cfg, err := h.Service.CreateConfig(ctx, c.MerchantAccountID, in)
	if err != nil {
		return forwardingError(err, "forwarding config")
	}
	return WriteJSON(fctx, fasthttp.StatusCreated, configOut(cfg))
}

// List answers GET /vault-forward/configs?limit=&cursor=, oldest first
// (config ids are UUIDv7, so id order is creation order and a walk is
// stable under concurrent inserts).
func (h *ForwardConfigs) List(fctx *fasthttp.RequestCtx) error {
	ctx, c, cancel, err := h.begin(fctx, ScopeForwardConfigsRead)
	defer cancel()
	if err != nil {
		return err
	}
	page, err := parsePage(h.Cursors, fctx, "vault-forward-configs", c.MerchantAccountID)
	if err != nil {
		return err
	}
	cfgs, err := h.Service.Configs(ctx, c.MerchantAccountID, page)
	if err != nil {
		return err
	}
	env := pagination.Build(page, cfgs, func(cfg *forwardconfig.Config) pagination.Key { return pagination.Key{ID: cfg.ID.String()} })
	items := make([]configJSON, len(env.Items))
	for i, cfg := range env.Items {
		items[i] = configOut(cfg)
	}
	return WriteJSON(fctx, fasthttp.StatusOK, pagination.Envelope[configJSON]{
		Items: items, Limit: env.Limit, NextCursor: env.NextCursor, PreviousCursor: env.PreviousCursor,
	})
}

// Get answers GET /vault-forward/configs/{id}.
func (h *ForwardConfigs) Get(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsRead)
	defer cancel()
	if err != nil {
		return err
	}
	cfg, err := h.Service.Config(ctx, c.MerchantAccountID, id)
	if err != nil {
		return forwardingError(err, "forwarding config")
	}
	return WriteJSON(fctx, fasthttp.StatusOK, configOut(cfg))
}

// Update answers PUT /vault-forward/configs/{id}: a partial update;
// hosts, when given, replaces the whole list.
func (h *ForwardConfigs) Update(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsWrite)
	defer cancel()
	if err != nil {
		return err
	}
	in, err := configInput(fctx.Request.Body())
	if err != nil {
		return err
	}
	cfg, err := h.Service.UpdateConfig(ctx, c.MerchantAccountID, id, in)
	if err != nil {
		return forwardingError(err, "forwarding config")
	}
	return WriteJSON(fctx, fasthttp.StatusOK, configOut(cfg))
}

// Delete answers DELETE /vault-forward/configs/{id}; its authentication
// methods go with it.
func (h *ForwardConfigs) Delete(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsWrite)
	defer cancel()
	if err != nil {
		return err
	}
	if err := h.Service.DeleteConfig(ctx, c.MerchantAccountID, id); err != nil {
		return forwardingError(err, "forwarding config")
	}
	fctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// authBody is the body of an authentication method's creation, as
// strictjson holds it: each field a {key, value} pair of strings.
type authBody struct {
	Kind        *string `json:"kind"`
	DisplayName *string `json:"display_name"`
	Fields      []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"fields"`
}

var authSchema = strictjson.For[authBody]()

// AddAuthentication answers POST /vault-forward/configs/{id}/authentications.
func (h *ForwardConfigs) AddAuthentication(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsWrite)
	defer cancel()
	if err != nil {
		return err
	}
	body := fctx.Request.Body()
	// The pooled request buffer held credentials: clear it once done.
	defer clear(body)
	doc, err := strictObject(body, authSchema)
	if err != nil {
		return err
	}
	in := forwardconfig.AuthInput{Kind: doc["kind"].Str, DisplayName: doc["display_name"].Str}
	var details []apierror.Detail
	for _, k := range []string{"kind", "display_name", "fields"} {
		if _, ok := doc[k]; !ok {
			details = append(details, strictjson.BodyDetail("/"+k, k+" is required", strictjson.TypeMissing))
		}
	}
	for i, item := range doc["fields"].Array() {
		key, value := item.Get("key"), item.Get("value")
		if !key.Exists() || !value.Exists() {
			details = append(details, strictjson.BodyDetail("/fields/"+strconv.Itoa(i), "must have a string key and a string value", strictjson.TypeMissing))
			continue
		}
		// gjson unescapes the JSON string; the value is kept exactly as
		// entered, spaces and new lines included.
		in.Fields = append(in.Fields, forwardconfig.Field{Key: key.Str, Value: value.Str})
	}
	if len(details) > 0 {
		return strictjson.Invalid(details...)
	}
	m, err := h.Service.AddAuthMethod(ctx, c.MerchantAccountID, id, in)
	if err != nil {
		return forwardingError(err, "authentication method")
	}
	return WriteJSON(fctx, fasthttp.StatusCreated, authMethodOut(m))
}

// ListAuthentications answers GET /vault-forward/configs/{id}/authentications.
func (h *ForwardConfigs) ListAuthentications(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsRead)
	defer cancel()
	if err != nil {
		return err
	}
	ms, err := h.Service.AuthMethods(ctx, c.MerchantAccountID, id)
	if err != nil {
		return forwardingError(err, "forwarding config")
	}
	items := make([]authMethodJSON, len(ms))
	for i, m := range ms {
		items[i] = authMethodOut(m)
	}
	return WriteJSON(fctx, fasthttp.StatusOK, map[string]any{"items": items})
}

// GetAuthentication answers GET /vault-forward/configs/{id}/authentications/{auth_id}.
func (h *ForwardConfigs) GetAuthentication(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsRead)
	defer cancel()
	if err != nil {
		return err
	}
	authID, err := pathUUID(fctx, "auth_id")
	if err != nil {
		return err
	}
	ms, err := h.Service.AuthMethods(ctx, c.MerchantAccountID, id)
	if err != nil {
		return forwardingError(err, "forwarding config")
	}
	for _, m := range ms {
		if m.ID == authID {
			return WriteJSON(fctx, fasthttp.StatusOK, authMethodOut(m))
		}
	}
	return apierror.NotFound("authentication method not found")
}

// DeleteAuthentication answers DELETE /vault-forward/configs/{id}/authentications/{auth_id}.
func (h *ForwardConfigs) DeleteAuthentication(fctx *fasthttp.RequestCtx) error {
	ctx, c, id, cancel, err := h.target(fctx, ScopeForwardConfigsWrite)
	defer cancel()
	if err != nil {
		return err
	}
	authID, err := pathUUID(fctx, "auth_id")
	if err != nil {
		return err
	}
	if err := h.Service.DeleteAuthMethod(ctx, c.MerchantAccountID, id, authID); err != nil {
		return forwardingError(err, "authentication method")
	}
	fctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
