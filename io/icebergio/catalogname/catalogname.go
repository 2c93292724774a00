// Package catalogname holds the rules for Iceberg catalog URIs, catalog
// names and table names: pure string checks, without iceberg-go, so that the
// Beam-free options package can refuse a bad --catalog, --catalog-name or
// table name up front (exit 2) with the same words io/icebergio uses when it
// opens the catalog.
package catalogname

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SQLiteScheme is the URI scheme of a local SQL catalog kept in one SQLite
// file: sqlite:///abs/path/catalog.db, or sqlite://rel/path/catalog.db
// relative to the working directory.
const SQLiteScheme = "sqlite"

// DefaultCatalogName is the catalog name OpenCatalog uses unless told
// another: the one iceberg-go's and pyiceberg's SQL catalog examples use, so
// that a table another writer created with their defaults is found. A SQL
// catalog file files every table under a catalog name; a reader opening the
// file under another name sees none of them.
const DefaultCatalogName = "default"

// RESTScheme is the URI scheme of a REST catalog reached over HTTPS:
// rest://HOST[:PORT]/PATH is https://HOST[:PORT]/PATH. http:// and https://
// URLs are REST catalogs too.
const RESTScheme = "rest"

// The environment variables a REST catalog's credentials come from: never
// flags, which show in process lists, shell histories and relabel's own run
// records (the snapshot summary records every option).
const (
	// EnvCatalogToken is a bearer token sent as it is.
	EnvCatalogToken = "RELABEL_CATALOG_TOKEN"
	// EnvCatalogCredential is an OAuth2 client credential, CLIENT_ID:SECRET,
	// exchanged for a token (the client-credentials grant) at the catalog's
	// v1/oauth/tokens endpoint or EnvCatalogOAuthURI.
	EnvCatalogCredential = "RELABEL_CATALOG_CREDENTIAL"
	// EnvCatalogOAuthURI is the token endpoint for EnvCatalogCredential, when
	// it is not the catalog's own (an identity provider's). Optional.
	EnvCatalogOAuthURI = "RELABEL_CATALOG_OAUTH_URI"
	// EnvCatalogScope is the OAuth2 scope asked for. Optional, default
	// iceberg-go's ("catalog").
	EnvCatalogScope = "RELABEL_CATALOG_SCOPE"
)

// IsREST reports whether uri names a REST catalog (rest://, http://, https://).
func IsREST(uri string) bool {
	scheme, _, _ := strings.Cut(uri, "://")
	return scheme == RESTScheme || scheme == "http" || scheme == "https"
}

// ParseCatalogURI checks a catalog URI, sqlite:///path/catalog.db with an
// optional ?name=NAME or a REST catalog's URL (rest://, http://, https://),
// against an explicit catalog name (empty: none given), and returns the
// SQLite file's path (for REST, the catalog's base URL) and the catalog name
// to use. A name given both ways must be the same name; neither gives
// DefaultCatalogName.
func ParseCatalogURI(uri, name string) (path, catName string, err error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if ok && IsREST(uri) {
		u, err := url.Parse(uri)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("icebergio: catalog %q: want %s://HOST[:PORT][/PATH] (a REST catalog)", Redact(uri), scheme)
		}
		if u.User != nil {
			return "", "", fmt.Errorf("icebergio: catalog %q: credentials do not go in the URI (they would show in process lists and logs): set %s or %s", Redact(uri), EnvCatalogToken, EnvCatalogCredential)
		}
		if scheme == RESTScheme {
			u.Scheme = "https"
		}
		if name == "" {
			name = DefaultCatalogName
		} else if err := CheckName("catalog name", name); err != nil {
			return "", "", fmt.Errorf("icebergio: %w", err)
		}
		return u.String(), name, nil
	}
	if !ok || scheme != SQLiteScheme || rest == "" {
		return "", "", fmt.Errorf("icebergio: catalog %q: want sqlite:///path/to/catalog.db (optionally ?name=CATALOG), or a REST catalog's rest://, https:// or http:// URL", Redact(uri))
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	if path == "" {
		return "", "", fmt.Errorf("icebergio: catalog %q: no catalog file path: want sqlite:///path/to/catalog.db", Redact(uri))
	}
	if hasQuery {
		q, err := url.ParseQuery(query)
		if err != nil {
			return "", "", fmt.Errorf("icebergio: catalog %q: %w", Redact(uri), err)
		}
		for k := range q {
			if k != "name" {
				return "", "", fmt.Errorf("icebergio: catalog %q: unknown parameter %q (known: name)", Redact(uri), k)
			}
		}
		if _, given := q["name"]; given {
			uriName := q.Get("name")
			if err := CheckName("catalog name", uriName); err != nil {
				return "", "", fmt.Errorf("icebergio: catalog %q: %w", Redact(uri), err)
			}
			if name != "" && name != uriName {
				return "", "", fmt.Errorf("icebergio: catalog %q names catalog %q, but catalog name %q was given: give one", Redact(uri), uriName, name)
			}
			name = uriName
		}
	}
	if name == "" {
		name = DefaultCatalogName
	} else if err := CheckName("catalog name", name); err != nil {
		return "", "", fmt.Errorf("icebergio: %w", err)
	}
	return path, name, nil
}

// CheckName refuses a name no catalog can hold usefully: empty, with
// leading or trailing white space (a table 'ns.items ' is created, but no
// one typing ns.items finds it again), or with control characters.
func CheckName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", what)
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("%s %q has leading or trailing white space", what, s)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%s %q has a control character", what, s)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q is not valid UTF-8", what, s)
	}
	return nil
}

// SplitIdent parses a dotted table name, "ns.items" or "a.b.items": the last
// part is the table, the others its namespace, none empty or badly formed
// (CheckName).
func SplitIdent(name string) ([]string, error) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("icebergio: table %q: want namespace.table", name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("icebergio: table %q: empty name part", name)
		}
		if err := CheckName("name part", p); err != nil {
			return nil, fmt.Errorf("icebergio: table %q: %w", name, err)
		}
	}
	return parts, nil
}
