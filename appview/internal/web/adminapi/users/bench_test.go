package users_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/serviceauth"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// benchAuth builds an Authenticator on a fresh SQLite store whose PLC
// stand-in knows one account, which is the super user.
func benchAuth(b *testing.B, k256 bool) (*adminapi.Authenticator, *testenv.Account, storage.Store) {
	store := storagetest.SQLite(b)
	plc := testenv.NewPLC(b)
	acct := plc.NewAccount(b, k256, "https://pds.test")
	dir := identity.NewCacheDirectory(&identity.BaseDirectory{PLCURL: plc.URL, SkipHandleVerification: true},
		1000, time.Hour, time.Minute, time.Minute)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := admins.New(admins.Options{Store: store, Events: eventlog.New(eventlog.Options{Store: store, Logger: log}),
		Claim: admins.ClaimPolicy{FirstRequest: true}, Logger: log})
	auth := adminapi.NewAuthenticator(adminapi.AuthenticatorOptions{ServiceAuth: &serviceauth.Verifier{Directory: dir},
		Cookies: sessioncookie.NewCodec(make([]byte, 32), nil), Admins: svc, Logger: log})
	u := storage.AdminUser{ID: storage.NewID(), DID: acct.DID.String(), IsSuper: true, Permissions: admins.NewSet(admins.All()).Sorted(), CreatedAt: time.Now()}
	if ok, err := store.BootstrapSuperUser(context.Background(), u); !ok || err != nil {
		b.Fatalf("bootstrap: %v %v", ok, err)
	}
	return auth, acct, store
}

func benchAuthenticate(b *testing.B, auth *adminapi.Authenticator, authorization string) {
	req := httptest.NewRequest("GET", "/admin/users", nil)
	req.Header.Set("Authorization", authorization)
	if _, err := auth.Authenticate(req); err != nil { // warm: caches, last-use debounce
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := auth.Authenticate(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateAPIKey authenticates with an hv_ admin API key
// against SQLite (two indexed look-ups: the key by hash, its creator).
func BenchmarkAuthenticateAPIKey(b *testing.B) {
	auth, acct, store := benchAuth(b, false)
	u, err := store.GetAdminUserByDID(context.Background(), acct.DID.String())
	if err != nil {
		b.Fatal(err)
	}
	secret, _, err := admins.MintKey(context.Background(), store, u.ID, "bench", admins.NewSet(admins.All()).Sorted(), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	benchAuthenticate(b, auth, "Bearer "+secret)
}

// BenchmarkAuthenticateServiceAuth authenticates with a service-auth JWT
// (ES256 and ES256K) whose issuer's DID document is cached: the signature
// check and one user look-up by DID.
func BenchmarkAuthenticateServiceAuth(b *testing.B) {
	for _, alg := range []string{"ES256", "ES256K"} {
		b.Run(alg, func(b *testing.B) {
			auth, acct, _ := benchAuth(b, alg == "ES256K")
			tok := acct.JWT(b, nil, map[string]any{"iss": acct.DID.String(), "aud": "did:web:lexview.test", "exp": time.Now().Add(time.Hour).Unix()})
			benchAuthenticate(b, auth, "Bearer "+tok)
		})
	}
}
