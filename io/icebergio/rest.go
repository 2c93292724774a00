package icebergio

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/relabel/relabel/io/icebergio/catalogname"
)

// RESTScheme: see catalogname.RESTScheme.
const RESTScheme = catalogname.RESTScheme

// The environment variables of a REST catalog's credentials: see catalogname.
const (
	EnvCatalogToken      = catalogname.EnvCatalogToken
	EnvCatalogCredential = catalogname.EnvCatalogCredential
	EnvCatalogOAuthURI   = catalogname.EnvCatalogOAuthURI
	EnvCatalogScope      = catalogname.EnvCatalogScope
)

// RESTAuthEnv lists the environment variables a REST catalog's credentials
// are read from, for help texts.
var RESTAuthEnv = []string{EnvCatalogToken, EnvCatalogCredential, EnvCatalogOAuthURI, EnvCatalogScope}

// openREST opens a REST catalog through iceberg-go's client (catalog/rest),
// which speaks the Iceberg REST protocol, refreshes OAuth2 tokens and applies
// the catalog's config. CatalogOptions.Warehouse is sent as the warehouse the
// catalog serves (what Polaris, Lakekeeper and Unity call a catalog or a
// warehouse), not as a directory.
func openREST(ctx context.Context, uri, base, name string, opts CatalogOptions) (*Catalog, error) {
	shown := catalogname.Redact(uri)
	// Credentials go only over HTTPS or to this machine: checked here, before
	// anything is sent, and again on every request (credentialGuard), which
	// also covers a catalog whose config moves it to another URI.
	if err := catalogname.CheckCredentials(uri, os.Getenv); err != nil {
		return nil, err
	}
	ro := []rest.Option{rest.WithCustomTransport(credentialGuard{base: baseTransport()})}
	token, cred := os.Getenv(EnvCatalogToken), os.Getenv(EnvCatalogCredential)
	switch {
	case token != "" && cred != "":
		return nil, fmt.Errorf("icebergio: catalog %s: both %s and %s are set: set one", shown, EnvCatalogToken, EnvCatalogCredential)
	case token != "":
		ro = append(ro, rest.WithOAuthToken(token))
	case cred != "":
		id, secret, ok := strings.Cut(cred, ":")
		if !ok {
			return nil, fmt.Errorf("icebergio: catalog %s: %s: want CLIENT_ID:SECRET", shown, EnvCatalogCredential)
		}
		tokenURL := strings.TrimSuffix(base, "/") + "/v1/oauth/tokens"
		if s := os.Getenv(EnvCatalogOAuthURI); s != "" {
			tokenURL = s
		}
		m := newOAuthManager(tokenURL, id, secret, os.Getenv(EnvCatalogScope))
		// The first token is fetched now, so that a refused exchange is
		// reported as such (its status and the endpoint's own words), not
		// as the failure of whichever catalog request came first.
		if _, _, err := m.AuthHeader(); err != nil {
			return nil, fmt.Errorf("icebergio: catalog %s: %w", shown, err)
		}
		ro = append(ro, rest.WithAuthManager(m))
	}
	if opts.Warehouse != "" {
		ro = append(ro, rest.WithWarehouseLocation(opts.Warehouse))
	}
	if len(opts.Properties) > 0 {
		ro = append(ro, rest.WithAdditionalProps(opts.Properties))
	}
	cat, err := rest.NewCatalog(ctx, name, base, ro...)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %s (credentials are read from %s or %s)", shown, redactErr(err, token, cred), EnvCatalogToken, EnvCatalogCredential)
	}
	removeDeadScratch()
	return &Catalog{uri: shown, name: name, cat: cat, scratch: opts.Scratch,
		scannedFiles: map[string]scannedFile{}, scannedNames: map[string]bool{}}, nil
}

// baseTransport is what a REST catalog's requests go through below
// credentialGuard: Go's default transport (proxies from the environment,
// the system's TLS roots), a copy of its own.
func baseTransport() http.RoundTripper {
	return http.DefaultTransport.(*http.Transport).Clone()
}

// credentialGuard refuses, before it leaves the process, any request that
// carries a credential (an Authorization header; with all, every request: a
// token exchange carries the client secret in its body) to a URL that is
// not HTTPS or on loopback. Redirects pass through it too.
type credentialGuard struct {
	base http.RoundTripper
	all  bool
}

func (g credentialGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if g.all || r.Header.Get("Authorization") != "" {
		if err := catalogname.CredentialsAllowed(r.URL.String()); err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, fmt.Errorf("icebergio: refusing to send a credential: %w", err)
		}
	}
	return g.base.RoundTrip(r)
}

// oauthManager is the REST catalog's AuthManager for an OAuth2 client
// credential: iceberg-go's own one reports a refused exchange without its
// HTTP status or the endpoint's text (an empty message when the endpoint
// answers with no RFC 6749 error code, as a proxy's HTML page does).
type oauthManager struct {
	tokenURL string
	secret   string
	src      oauth2.TokenSource
}

// oauthTimeout bounds one token exchange: oauth2's TokenSource takes no
// context, so a stalled endpoint would otherwise hold the run.
const oauthTimeout = 60 * time.Second

func newOAuthManager(tokenURL, id, secret, scope string) *oauthManager {
	if scope == "" {
		scope = "catalog" // the Iceberg REST spec's, and iceberg-go's, default
	}
	cfg := &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: tokenURL,
		Scopes: []string{scope}, AuthStyle: oauth2.AuthStyleInParams}
	cl := &http.Client{Transport: credentialGuard{base: baseTransport(), all: true}, Timeout: oauthTimeout}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, cl)
	return &oauthManager{tokenURL: tokenURL, secret: secret, src: cfg.TokenSource(ctx)}
}

func (m *oauthManager) AuthHeader() (string, string, error) {
	tok, err := m.src.Token()
	if err != nil {
		return "", "", fmt.Errorf("OAuth2 token exchange at %s (%s) failed: %s", catalogname.Redact(m.tokenURL), EnvCatalogCredential, tokenError(err, m.secret))
	}
	typ := tok.Type()
	if strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	return "Authorization", typ + " " + tok.AccessToken, nil
}

// maxErrorText bounds how much of a token endpoint's answer a message
// quotes: enough for an error description, not a whole HTML page.
const maxErrorText = 200

// tokenError says why a token exchange failed: the HTTP status and the
// endpoint's error code and description, or the start of its body as text
// (tags, control characters and runs of white space removed, at most
// maxErrorText bytes), with secret never shown.
func tokenError(err error, secret string) string {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return sanitise(err.Error(), secret)
	}
	status := "no HTTP status"
	if re.Response != nil {
		status = "HTTP " + re.Response.Status
	}
	var text string
	switch {
	case re.ErrorCode != "":
		text = re.ErrorCode
		if re.ErrorDescription != "" {
			text += ": " + re.ErrorDescription
		}
	case len(re.Body) > 0:
		text = string(re.Body)
	default:
		text = "(empty body)"
	}
	return status + ": " + sanitise(text, secret)
}

var (
	htmlTag    = regexp.MustCompile(`(?s)<(script|style)[^>]*>.*?</(script|style)>|<[^>]*>`)
	whiteSpace = regexp.MustCompile(`\s+`)
	ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)
)

// sanitise makes text from a remote server fit for one line of a message:
// HTML tags dropped, control characters and white space runs made single
// spaces, the secret (should the server echo it) redacted, and at most
// maxErrorText bytes kept, cut at a character boundary.
func sanitise(text, secret string) string {
	text = strings.ToValidUTF8(text, "?")
	text = htmlTag.ReplaceAllString(text, " ")
	text = ansiEscape.ReplaceAllString(text, "")
	text = html.UnescapeString(text)
	if secret != "" {
		text = strings.ReplaceAll(text, secret, "REDACTED")
	}
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, text)
	text = strings.TrimSpace(whiteSpace.ReplaceAllString(text, " "))
	if len(text) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "..."
	}
	if text == "" {
		return "(no text)"
	}
	return text
}

// redactErr is err's message with the credentials (a token, a
// CLIENT_ID:SECRET and its secret) and any URL's userinfo taken out.
func redactErr(err error, creds ...string) string {
	msg := err.Error()
	for _, c := range creds {
		if c == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, c, "REDACTED")
		if _, secret, ok := strings.Cut(c, ":"); ok && secret != "" {
			msg = strings.ReplaceAll(msg, secret, "REDACTED")
		}
	}
	return userinfo.ReplaceAllString(msg, "${1}REDACTED@")
}

// userinfo matches the userinfo of a URL inside a message.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@"']*@`)

// listTables lists the tables of every namespace through the catalog API,
// under the catalog's own name (a REST catalog has no other names).
func (c *Catalog) listTables(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		nss, err := c.cat.ListNamespaces(ctx, parent)
		if err != nil {
			return err
		}
		for _, ns := range nss {
			if len(ns) <= len(parent) {
				continue // a server that ignores the parent: listed already
			}
			for id, err := range c.cat.ListTables(ctx, ns) {
				if err != nil {
					return err
				}
				out[c.name] = append(out[c.name], strings.Join(id, "."))
			}
			if err := walk(ns); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk(nil)
	return out, err
}

var _ catalog.Catalog = (*rest.Catalog)(nil)
