package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// serveEnv is the environment of a `serve` child on the SQLite database
// dbURL: offline, JSON logs, no PUBLIC_URL.
func serveEnv(dbURL string, extra ...string) []string {
	return append(os.Environ(), append([]string{"DATABASE_URL=" + dbURL, "JETSTREAM_URL=off", "LOG_FORMAT=json",
		"PUBLIC_URL=", "HOST=", "PLC_URL=http://127.0.0.1:1", "RELAY_URL=http://127.0.0.1:1"}, extra...)...)
}

// startServe runs `appview serve args...` with env in dir and returns the
// address it listens on and its public URL, from its log. The child is
// killed when the test ends.
func startServe(t *testing.T, env []string, dir string, args ...string) (addr, publicURL string) {
	t.Helper()
	return startCommand(t, env, dir, nil, append([]string{"serve"}, args...)...)
}

// startCommand runs `appview args...` (a command that serves) with env
// in dir, its standard output to stdout (nil for none), and returns the
// address it listens on and its public URL, from its log. The child is
// killed when the test ends.
func startCommand(t *testing.T, env []string, dir string, stdout io.Writer, args ...string) (addr, publicURL string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env, cmd.Dir, cmd.Stdout = env, dir, stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return listening(t, stderr)
}

// listening reads JSON log lines until the "lexview listening" line and
// returns its addr and public_url.
func listening(t *testing.T, stderr io.Reader) (addr, publicURL string) {
	t.Helper()
	type line struct {
		Msg       string `json:"msg"`
		Addr      string `json:"addr"`
		PublicURL string `json:"public_url"`
	}
	found := make(chan line, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "lexview listening" {
				found <- l
			}
		}
	}()
	select {
	case l := <-found:
		return l.Addr, l.PublicURL
	case <-time.After(30 * time.Second):
		t.Fatal("server did not report its address")
		return "", ""
	}
}

// callJSON makes an HTTP request with a JSON body (nil for none) and
// headers (name, value pairs) and decodes the JSON answer.
func callJSON(t *testing.T, method, url string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	status, raw := callRaw(t, method, url, body, headers...)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return status, m
}

// callRaw sends a JSON request (headers are name, value pairs) and
// returns the status and the body.
func callRaw(t *testing.T, method, url string, body any, headers ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// TestServeFreePortPublicURL: with PORT=0 and no PUBLIC_URL, the default
// public URL names the port actually bound. DPoP proofs are checked
// against it, so a proof made for the address the server listens on
// authenticates a device session (when the public URL said port 0, every
// proof was refused as "invalid DPoP proof"), and the URLs Lexview hands
// out (an API client's jwks_uri) name the real port too.
func TestServeFreePortPublicURL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	dbURL := "sqlite://" + filepath.Join(dir, "appview.db")
	env := serveEnv(dbURL, "PORT=0")
	bootstrap := exec.Command(binary(t), "admin", "bootstrap", "--did", "did:plc:portzeroadmin")
	bootstrap.Env, bootstrap.Dir = env, dir
	out, err := bootstrap.Output()
	if err != nil {
		t.Fatalf("admin bootstrap: %v", err)
	}
	admin := []string{"Authorization", "Bearer " + strings.TrimSpace(string(out))}

	addr, publicURL := startServe(t, env, dir)
	if publicURL != addr || strings.HasSuffix(addr, ":0") {
		t.Fatalf("listening on %s, public URL %s", addr, publicURL)
	}

	for _, doc := range []string{
		`{"lexicon_json":{"lexicon":1,"id":"com.example.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}}`,
		`{"target_collection":"com.example.note","lexicon_json":{"lexicon":1,"id":"com.example.listNotes","defs":{"main":{"type":"query"}}}}`,
	} {
		if status, body := callJSON(t, "POST", addr+"/admin/lexicons", json.RawMessage(doc), admin...); status != 201 {
			t.Fatalf("upload lexicon: %d %v", status, body)
		}
	}
	status, body := callJSON(t, "POST", addr+"/admin/api-clients", map[string]any{
		"name": "port zero", "client_id_url": "https://app.example/client-metadata.json",
		"client_uri": "https://app.example", "redirect_uris": []string{"https://app.example/callback"},
	}, admin...)
	if status != 201 {
		t.Fatalf("create API client: %d %v", status, body)
	}
	clientID, clientKey := body["id"].(string), body["client_key"].(string)
	status, body = callJSON(t, "POST", addr+"/admin/api-clients/"+clientID+"/auth-key", nil, admin...)
	if jwks, _ := body["jwks_uri"].(string); status != 200 || !strings.HasPrefix(jwks, addr+"/") {
		t.Fatalf("auth key: %d %v, want a jwks_uri under %s", status, body, addr)
	}

	// A device session of the client, bound to a DPoP key of the test's.
	key, err := oauth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := oauth.NewSigner(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	const token = "port-zero-access-token"
	sum := sha256.Sum256([]byte(token))
	store, err := appview.OpenStore(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Now()
	err = store.CreateDeviceSession(context.Background(), storage.DeviceSession{
		ID: storage.NewID(), ClientID: clientID, DID: "did:plc:portzerouser", DPoPKeyID: storage.NewID(), JKT: signer.JKT(),
		SealedDPoPKey: "unused", SealedAccessToken: "unused", SealedRefreshToken: "unused", ExpiresAt: now.Add(time.Hour),
		Scopes: "atproto", PDSURL: "https://pds.example", Issuer: "https://pds.example",
		AppTokenHash: hex.EncodeToString(sum[:]), AppExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		t.Fatal(err)
	}

	url := addr + "/xrpc/com.example.listNotes"
	proof, err := signer.NewProof("GET", url, token, "")
	if err != nil {
		t.Fatal(err)
	}
	status, body = callJSON(t, "GET", url+"?limit=1", nil,
		"X-Client-Key", clientKey, "Authorization", "DPoP "+token, "DPoP", proof)
	if status != 200 {
		t.Fatalf("DPoP-authenticated query: %d %v", status, body)
	}
}

// TestServeFlagsOverrideEnvironment: --port and --public-url win over PORT
// and PUBLIC_URL. PORT names a port that is taken, so reading it would
// fail the start.
func TestServeFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	dir := t.TempDir()
	env := serveEnv("sqlite://"+filepath.Join(dir, "appview.db"), "PORT="+takenPort, "PUBLIC_URL=http://wrong.example")
	addr, publicURL := startServe(t, env, dir, "--port", "0", "--public-url", "https://appview.example")
	if addr == "http://"+taken.Addr().String() || publicURL != "https://appview.example" {
		t.Fatalf("listening on %s (PORT %s), public URL %s", addr, takenPort, publicURL)
	}
	if status, _ := callJSON(t, "GET", addr+"/health", nil); status != 200 {
		t.Fatalf("health: %d", status)
	}
}
