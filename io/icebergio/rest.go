package icebergio

import (
	"context"
	"fmt"
	"github.com/relabel/relabel/io/icebergio/catalogname"
	"net/url"
	"os"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
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
	var ro []rest.Option
	token, cred := os.Getenv(EnvCatalogToken), os.Getenv(EnvCatalogCredential)
	switch {
	case token != "" && cred != "":
		return nil, fmt.Errorf("icebergio: catalog %s: both %s and %s are set: set one", uri, EnvCatalogToken, EnvCatalogCredential)
	case token != "":
		ro = append(ro, rest.WithOAuthToken(token))
	case cred != "":
		if !strings.Contains(cred, ":") {
			return nil, fmt.Errorf("icebergio: catalog %s: %s: want CLIENT_ID:SECRET", uri, EnvCatalogCredential)
		}
		ro = append(ro, rest.WithCredential(cred))
	}
	if s := os.Getenv(EnvCatalogOAuthURI); s != "" {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("icebergio: catalog %s: %s %q: want a URL", uri, EnvCatalogOAuthURI, s)
		}
		ro = append(ro, rest.WithAuthURI(u))
	}
	if s := os.Getenv(EnvCatalogScope); s != "" {
		ro = append(ro, rest.WithScope(s))
	}
	if opts.Warehouse != "" {
		ro = append(ro, rest.WithWarehouseLocation(opts.Warehouse))
	}
	if len(opts.Properties) > 0 {
		ro = append(ro, rest.WithAdditionalProps(opts.Properties))
	}
	cat, err := rest.NewCatalog(ctx, name, base, ro...)
	if err != nil {
		return nil, fmt.Errorf("icebergio: catalog %s: %w (credentials are read from %s or %s)", uri, err, EnvCatalogToken, EnvCatalogCredential)
	}
	removeDeadScratch()
	return &Catalog{uri: uri, name: name, cat: cat, scratch: opts.Scratch,
		scannedFiles: map[string]scannedFile{}, scannedNames: map[string]bool{}}, nil
}

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
