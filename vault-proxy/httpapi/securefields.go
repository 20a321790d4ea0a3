package httpapi

import (
	"io/fs"
	"mime"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	vaultproxy "github.com/payorch/vault-proxy"
	"github.com/valyala/fasthttp"
)

// SecureFieldsPath is where the secure card fields' files are served.
const SecureFieldsPath = "/securefields"

// fieldPage is the page each secure field's iframe loads.
const fieldPage = "field.html"

// SecureFields serves the secure card fields' browser package (Files, the
// embedded dist/): the loader a merchant's page includes, and the field
// page, served only to be framed by an origin the session's merchant
// account allows.
type SecureFields struct {
	Files fs.FS
	Store CheckoutStore
}

// fieldPageCSP is the field page's Content-Security-Policy but for
// frame-ancestors: its own scripts, styles, icons and API only, no inline
// script, nothing from elsewhere.
const fieldPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "

// Serve answers GET /securefields/{file}.
func (h *SecureFields) Serve(ctx *fasthttp.RequestCtx) error {
	name, _ := ctx.UserValue("file").(string)
	name = strings.TrimPrefix(name, "/")
	if !fs.ValidPath(name) || strings.HasPrefix(name, ".") {
		return h.notFound(ctx)
	}
	b, err := fs.ReadFile(h.Files, name)
	if err != nil {
		return h.notFound(ctx)
	}
	hdr := &ctx.Response.Header
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if name == fieldPage {
		ancestors, status := h.ancestors(ctx)
		hdr.Set("Content-Security-Policy", fieldPageCSP+ancestors)
		hdr.Set("Cache-Control", "no-store")
		if status != fasthttp.StatusOK {
			ctx.SetStatusCode(status)
			ctx.SetContentType("text/plain; charset=utf-8")
			ctx.SetBodyString("This secure field cannot be shown: its checkout session is unknown, or this page may not embed it.\n")
			return nil
		}
	} else {
		// The loader is included from the merchant's page with
		// subresource integrity, which needs CORS; nothing here is secret.
		hdr.Set("Access-Control-Allow-Origin", "*")
		hdr.Set("Cross-Origin-Resource-Policy", "cross-origin")
		hdr.Set("Cache-Control", "public, max-age=300")
		hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'") // an SVG opened on its own runs nothing
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	ctx.SetContentType(ct)
	ctx.SetBody(b)
	return nil
}

func (h *SecureFields) notFound(ctx *fasthttp.RequestCtx) error {
	ctx.SetStatusCode(fasthttp.StatusNotFound)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("not found\n")
	return nil
}

// ancestors is the field page's frame-ancestors: the allowed origins of
// the session's merchant account when the page was asked for one of them
// (the origin parameter, where the field will send its messages);
// otherwise 'none' with 404 (no such session) or 403.
func (h *SecureFields) ancestors(ctx *fasthttp.RequestCtx) (string, int) {
	args := ctx.QueryArgs()
	id, err := uuid.ParseBytes(args.Peek("session"))
	if err != nil {
		return "'none'", fasthttp.StatusNotFound
	}
	rctx, cancel := requestContext(ctx, 10*time.Second)
	defer cancel()
	s, err := h.Store.CheckoutSession(rctx, id)
	if err != nil {
		if err == vaultproxy.ErrNotFound {
			return "'none'", fasthttp.StatusNotFound
		}
		return "'none'", fasthttp.StatusServiceUnavailable
	}
	origins, err := h.Store.CheckoutOrigins(rctx, s.MerchantAccountID)
	if err != nil {
		return "'none'", fasthttp.StatusServiceUnavailable
	}
	origin, ok := NormalizeOrigin(string(args.Peek("origin")))
	if !ok || !slices.Contains(origins, origin) {
		return "'none'", fasthttp.StatusForbidden
	}
	// An expired or used session still gets its page: the field then
	// tells the merchant's page why it cannot take a card.
	return strings.Join(origins, " "), fasthttp.StatusOK
}
