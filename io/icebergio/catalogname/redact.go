package catalogname

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// redacted stands for a credential taken out of a message.
const redacted = "REDACTED"

// secretKey matches the query parameter names that carry credentials in the
// URLs of catalogs, identity providers and object stores (token,
// access_token, client_secret, password, X-Goog-Signature, api_key, ...).
var secretKey = regexp.MustCompile(`(?i)(token|secret|passw|pwd|credential|signature|sig$|key|auth)`)

// secretPair finds key=value pairs with such a key in a string that does
// not parse as a URL.
var secretPair = regexp.MustCompile(`(?i)((?:[a-z0-9_.-]*)(?:token|secret|passw|pwd|credential|signature|sig|key|auth)[a-z0-9_.-]*=)[^&#\s]*`)

// Redact returns s, a URI or anything given where one was expected, fit for
// a message: its userinfo (user and password) and the values of query
// parameters that look like credentials replaced by REDACTED. It never
// fails: a string that does not parse as a URL is redacted by its shape,
// everything from the scheme to its last "@" taken for userinfo, so that a
// malformed URI (a password with a space or a "/" in it) is not echoed.
func Redact(s string) string {
	if !strings.Contains(s, "@") && !secretPair.MatchString(s) {
		return s // nothing to take out: the string as given, unescaped
	}
	u, err := url.Parse(s)
	// The parsed form is trusted only where it accounts for every "@": a
	// password holding "/", "?" or "#" would otherwise be taken for the
	// start of a path, query or fragment and partly shown.
	ats := strings.Count(s, "@")
	if err == nil && (u.Scheme != "" || u.Host != "") && (ats == 0 || ats == 1 && u.User != nil) {
		if u.User != nil {
			u.User = url.User(redacted)
		}
		if u.RawQuery != "" {
			q := u.Query()
			for k := range q {
				if secretKey.MatchString(k) {
					q[k] = []string{redacted}
				}
			}
			u.RawQuery = q.Encode()
		}
		if u.Fragment != "" && strings.Contains(u.Fragment, "=") {
			u.Fragment = secretPair.ReplaceAllString(u.Fragment, "${1}"+redacted)
			u.RawFragment = ""
		}
		return u.String()
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	if at := strings.LastIndexByte(s, '@'); at >= start {
		s = s[:start] + redacted + s[at:]
	}
	return secretPair.ReplaceAllString(s, "${1}"+redacted)
}

// IsLoopback reports whether host (a URL's host, with or without its port)
// names this machine: localhost or a loopback address.
func IsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CredentialsAllowed says why a credential (a bearer token, an OAuth2 client
// secret) must not be sent to rawURL, or nil when it may: over HTTPS, or to
// this machine (a catalog or token endpoint on loopback, as in a test or
// behind a local proxy). Over plain HTTP to any other host, anyone on the
// path reads the credential and can act as the caller.
func CredentialsAllowed(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s is not a URL with a host", Redact(rawURL))
	}
	switch strings.ToLower(u.Scheme) {
	case "https", RESTScheme:
		return nil
	case "http":
		if IsLoopback(u.Host) {
			return nil
		}
		return fmt.Errorf("%s is plain http:// to a host that is not this machine (%s): the credential and every request's bearer token would cross the network in clear; use https:// (or rest://)", Redact(rawURL), Redact(u.Hostname()))
	}
	return fmt.Errorf("%s is neither https:// nor http:// to this machine", Redact(rawURL))
}

// CheckCredentials refuses a REST catalog's credentials, read from the
// environment through getenv, that would be sent in clear: a token or
// client credential for a catalog (the catalog URI uri) that is not reached
// over HTTPS or on loopback, or a client credential whose token endpoint
// (EnvCatalogOAuthURI) is not. The message names the catalog (redacted) and
// the variable, never the credential. uri that is not a REST catalog has no
// credentials to check.
func CheckCredentials(uri string, getenv func(string) string) error {
	if !IsREST(uri) {
		return nil
	}
	base, _, err := ParseCatalogURI(uri, "")
	if err != nil {
		return err
	}
	token, cred, authURI := getenv(EnvCatalogToken), getenv(EnvCatalogCredential), getenv(EnvCatalogOAuthURI)
	var set string
	switch {
	case token != "":
		set = EnvCatalogToken
	case cred != "":
		set = EnvCatalogCredential
	default:
		return nil
	}
	if err := CredentialsAllowed(base); err != nil {
		return fmt.Errorf("icebergio: catalog %s: refusing to send %s: %w", Redact(uri), set, err)
	}
	if cred != "" && authURI != "" {
		u, perr := url.Parse(authURI)
		if perr != nil || u.Host == "" {
			return fmt.Errorf("icebergio: catalog %s: %s %s: want a URL", Redact(uri), EnvCatalogOAuthURI, Redact(authURI))
		}
		if u.User != nil {
			return fmt.Errorf("icebergio: catalog %s: %s %s: credentials do not go in the URI: set %s", Redact(uri), EnvCatalogOAuthURI, Redact(authURI), EnvCatalogCredential)
		}
		if err := CredentialsAllowed(authURI); err != nil {
			return fmt.Errorf("icebergio: catalog %s: refusing to send %s to its token endpoint %s: %w", Redact(uri), EnvCatalogCredential, EnvCatalogOAuthURI, err)
		}
	}
	return nil
}
