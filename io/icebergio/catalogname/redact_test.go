package catalogname

import (
	"strings"
	"testing"
)

// TestRedact: userinfo and credential-like query values are taken out of
// well-formed and malformed URIs alike; what holds no credential is kept as
// given.
func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, secret, keep string }{
		{"https://user:hunter22@cat.example.com/api", "hunter22", "cat.example.com/api"},
		{"http://alice:hunter22@10.0.0.1:8181/", "hunter22", "10.0.0.1:8181"},
		{"http://alice@cat.example.com/", "alice", "cat.example.com"},
		{"rest://u:hunter22@h/x", "hunter22", "h/x"},
		{"https://u:hun ter22@h/x", "ter22", "h/x"},        // a space: does not parse
		{"https://u:hun/ter22@h/x", "ter22", "h/x"},        // a "/" in the password
		{"https://u:hun?ter22@h/x", "ter22", "h/x"},        // a "?"
		{"https://u:hun#ter22@h/x", "ter22", "h/x"},        // a "#"
		{"https://u:hun%zzter22@h/x", "ter22", "h/x"},      // a bad escape
		{"https://u:p@ss:hunter22@h/x", "hunter22", "h/x"}, // two "@"
		{"u:hunter22@h:8181", "hunter22", "h:8181"},        // no scheme
		{"https://h/x?token=hunter22&name=a", "hunter22", "name=a"},
		{"https://h/x?client_secret=hunter22", "hunter22", "h/x"},
		{"https://h/x?X-Goog-Signature=hunter22", "hunter22", "h/x"},
		{"https://h/x?access_token=hunter22%zz", "hunter22", "h/x"}, // a bad query
		{"sqlite://u:hunter22@/tmp/catalog.db", "hunter22", "/tmp/catalog.db"},
	} {
		got := Redact(tc.in)
		if strings.Contains(got, tc.secret) {
			t.Errorf("Redact(%q) = %q: shows %q", tc.in, got, tc.secret)
		}
		if !strings.Contains(got, tc.keep) {
			t.Errorf("Redact(%q) = %q: lost %q", tc.in, got, tc.keep)
		}
	}
	for _, s := range []string{"sqlite:///tmp/a b/catalog.db?name=x", "https://cat.example.com:8181/api/catalog", "not a uri", ""} {
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want it unchanged", s, got)
		}
	}
}

// FuzzRedact: whatever the user and password, a URI's password never
// survives Redact, nor the messages ParseCatalogURI and CheckCredentials
// make of it (when the password is not also spelled in the URI's host or
// path, which are shown).
func FuzzRedact(f *testing.F) {
	for _, s := range [][3]string{
		{"user", "hunter22", "cat.example.com/api"},
		{"u", "p/ss w?#rd", "h:1/x"},
		{"", "%zz%41", "[::1]:8181"},
		{"a@b", "c@d", "h"},
		{"u", "pw", "h/x?token=zz"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, user, pass, rest string) {
		if len(pass) < 4 {
			return // too short to tell from the shown parts
		}
		for _, scheme := range []string{"http://", "https://", "rest://", "sqlite://", ""} {
			uri := scheme + user + ":" + pass + "@" + rest
			shown := scheme + redacted + uri[strings.LastIndexByte(uri, '@'):]
			if strings.Contains(shown, pass) || strings.Contains(strings.ToLower(shown), strings.ToLower(pass)) {
				return // the password is spelled in the host or path as well
			}
			if got := Redact(uri); strings.Contains(got, pass) {
				t.Fatalf("Redact(%q) = %q: shows the password", uri, got)
			}
			if _, _, err := ParseCatalogURI(uri, ""); err != nil && strings.Contains(err.Error(), pass) {
				t.Fatalf("ParseCatalogURI(%q): %v: shows the password", uri, err)
			}
			env := map[string]string{EnvCatalogCredential: "id:" + "s3cr3t-value", EnvCatalogOAuthURI: uri}
			if err := CheckCredentials("https://cat.example.com/", func(k string) string { return env[k] }); err != nil &&
				(strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), "s3cr3t-value")) {
				t.Fatalf("CheckCredentials with %s=%q: %v: shows a credential", EnvCatalogOAuthURI, uri, err)
			}
		}
	})
}

// TestCheckCredentials: a token or client credential is refused for a
// catalog or token endpoint reached over plain HTTP beyond loopback, and
// allowed over HTTPS, rest:// or to this machine; the message names the
// catalog and the variable, never the credential.
func TestCheckCredentials(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, tc := range []struct {
		name, uri string
		env       map[string]string
		want      string // "" for allowed
	}{
		{"token over http", "http://cat.example.com:8181/", map[string]string{EnvCatalogToken: secret}, "refusing to send " + EnvCatalogToken},
		{"credential over http", "http://10.1.2.3/api", map[string]string{EnvCatalogCredential: "id:" + secret}, "plain http://"},
		{"token over https", "https://cat.example.com/", map[string]string{EnvCatalogToken: secret}, ""},
		{"rest scheme", "rest://cat.example.com/", map[string]string{EnvCatalogCredential: "id:" + secret}, ""},
		{"loopback v4", "http://127.0.0.1:8181/", map[string]string{EnvCatalogToken: secret}, ""},
		{"loopback v6", "http://[::1]:8181/", map[string]string{EnvCatalogToken: secret}, ""},
		{"localhost", "http://localhost:8181/", map[string]string{EnvCatalogToken: secret}, ""},
		{"no credentials over http", "http://cat.example.com/", nil, ""},
		{"sqlite", "sqlite:///tmp/x.db", map[string]string{EnvCatalogToken: secret}, ""},
		{"token endpoint over http", "https://cat.example.com/", map[string]string{EnvCatalogCredential: "id:" + secret, EnvCatalogOAuthURI: "http://idp.example.com/token"}, EnvCatalogOAuthURI},
		{"token endpoint on loopback", "https://cat.example.com/", map[string]string{EnvCatalogCredential: "id:" + secret, EnvCatalogOAuthURI: "http://127.0.0.1:9/token"}, ""},
		{"token endpoint with userinfo", "https://cat.example.com/", map[string]string{EnvCatalogCredential: "id:" + secret, EnvCatalogOAuthURI: "https://u:pw1234@idp.example.com/token"}, "do not go in the URI"},
		{"malformed token endpoint", "https://cat.example.com/", map[string]string{EnvCatalogCredential: "id:" + secret, EnvCatalogOAuthURI: "https://u:pw 1234@idp/token"}, "want a URL"},
		{"lookalike host", "http://127.0.0.1.example.com/", map[string]string{EnvCatalogToken: secret}, "plain http://"},
	} {
		err := CheckCredentials(tc.uri, func(k string) string { return tc.env[k] })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want allowed", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "pw1234") || strings.Contains(err.Error(), "1234@")):
			t.Errorf("%s: %v: shows a credential", tc.name, err)
		case err != nil && !strings.Contains(err.Error(), "catalog "+Redact(tc.uri)):
			t.Errorf("%s: %v: does not name the catalog", tc.name, err)
		}
	}
}
