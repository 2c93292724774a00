package icebergio

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRESTRefusesCredentialsInClear: a token or client credential for a
// catalog (or a token endpoint) reached over plain HTTP beyond loopback is
// refused before anything is sent, the message naming the catalog and why,
// never the credential.
func TestRESTRefusesCredentialsInClear(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, tc := range []struct {
		name, uri string
		env       map[string]string
		want      string
	}{
		// TEST-NET-3 addresses: nothing answers there, so a request that
		// went out would fail otherwise (or hang until the context ends).
		{"bearer", "http://203.0.113.7:8181/", map[string]string{EnvCatalogToken: secret}, "plain http://"},
		{"client credential", "http://203.0.113.7:8181/", map[string]string{EnvCatalogCredential: "relabel:" + secret}, "plain http://"},
		{"token endpoint", "https://203.0.113.7/", map[string]string{EnvCatalogCredential: "relabel:" + secret, EnvCatalogOAuthURI: "http://203.0.113.8/token"}, EnvCatalogOAuthURI},
		{"token endpoint's password", "https://203.0.113.7/", map[string]string{EnvCatalogCredential: "relabel:" + secret, EnvCatalogOAuthURI: "https://idp:pa55 word@203.0.113.8/token"}, "want a URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range RESTAuthEnv {
				t.Setenv(k, tc.env[k])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			cat, err := OpenCatalog(ctx, tc.uri, CatalogOptions{})
			if err == nil {
				cat.Close()
				t.Fatal("opened, want a refusal")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "catalog "+tc.uri) {
				t.Errorf("%v, want an error naming catalog %s and %q", err, tc.uri, tc.want)
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, "pa55") {
				t.Errorf("%v: shows a credential", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %s: something was sent first", d)
			}
		})
	}
}

// TestCredentialGuard: a request carrying an Authorization header (a
// catalog that moved itself to another URI through its config, a redirect)
// goes nowhere but HTTPS or loopback; one without goes anywhere.
func TestCredentialGuard(t *testing.T) {
	var sent []string
	g := credentialGuard{base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r.URL.String())
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})}
	for _, tc := range []struct {
		url  string
		auth bool
		ok   bool
	}{
		{"http://203.0.113.7/v1/config", true, false},
		{"http://203.0.113.7/v1/config", false, true},
		{"https://203.0.113.7/v1/config", true, true},
		{"http://127.0.0.1:8181/v1/config", true, true},
		{"http://localhost:8181/v1/config", true, true},
		{"http://[::1]:8181/v1/config", true, true},
	} {
		sent = nil
		r, _ := http.NewRequest("GET", tc.url, nil)
		if tc.auth {
			r.Header.Set("Authorization", "Bearer tok-123")
		}
		_, err := g.RoundTrip(r)
		if (err == nil) != tc.ok || (len(sent) == 1) != tc.ok {
			t.Errorf("%s (auth %t): err %v, sent %v; want allowed %t", tc.url, tc.auth, err, sent, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "tok-123") {
			t.Errorf("%s: %v shows the token", tc.url, err)
		}
	}
	all := credentialGuard{base: g.base, all: true}
	r, _ := http.NewRequest("POST", "http://203.0.113.7/v1/oauth/tokens", strings.NewReader("client_secret=x"))
	if _, err := all.RoundTrip(r); err == nil {
		t.Error("a token exchange over plain http to another host went out")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTokenExchangeErrors: a refused token exchange says the HTTP status and
// the endpoint's own words (its RFC 6749 error, or its body as bounded,
// one-line text), never the secret, even when the endpoint echoes it.
func TestTokenExchangeErrors(t *testing.T) {
	const secret = "s3cr3t-value"
	page := "<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{color:red}</style></head><body>\n<h1>Bad Gateway</h1>\x1b[31m" + strings.Repeat("upstream unavailable ", 100) + "</body></html>"
	for _, tc := range []struct {
		name   string
		status int
		ctype  string
		body   string
		want   []string
	}{
		{"rfc 6749 error", 401, "application/json", `{"error":"invalid_client","error_description":"unknown client relabel"}`, []string{"HTTP 401 Unauthorized", "invalid_client: unknown client relabel"}},
		{"empty 500", 500, "text/plain", "", []string{"HTTP 500 Internal Server Error", "(empty body)"}},
		{"html page", 502, "text/html", page, []string{"HTTP 502 Bad Gateway", "Bad Gateway upstream unavailable", "..."}},
		{"secret echoed", 400, "text/plain", "bad request: client_secret=" + secret, []string{"HTTP 400 Bad Request", "client_secret=REDACTED"}},
		{"200 without a token", 200, "text/html", "<html>login page</html>", []string{"token exchange", EnvCatalogCredential}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			for _, k := range RESTAuthEnv {
				t.Setenv(k, "")
			}
			t.Setenv(EnvCatalogCredential, "relabel:"+secret)
			cat, err := OpenCatalog(context.Background(), srv.URL, CatalogOptions{})
			if err == nil {
				cat.Close()
				t.Fatal("opened, want the token exchange's failure")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q, want %q in it", msg, w)
				}
			}
			if strings.Contains(msg, secret) || strings.ContainsAny(msg, "\n\x1b") || strings.Contains(msg, "<html") || strings.Contains(msg, "[31m") {
				t.Errorf("%q: shows the secret, a control character or markup", msg)
			}
			if len(msg) > 600 {
				t.Errorf("a %d-byte message, want it bounded", len(msg))
			}
		})
	}
}
