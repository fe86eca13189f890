package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
)

// reportPercentiles reports the median and 99th percentile of lat.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// BenchmarkProxyOverhead measures a createRecord through the Client
// (session load, fresh proof, request, response parse) against the same
// request sent directly with a proof made before the timer started; the
// difference is the latency Lexview adds to a proxied write. Both go to
// the stand-in on loopback, which verifies every proof.
func BenchmarkProxyOverhead(b *testing.B) {
	f := newFixture(b, oauthtest.Options{})
	f.warm(b)
	ctx := context.Background()
	record := json.RawMessage(`{"text":"benchmark"}`)

	viaClient := func(b *testing.B) {
		status, body, _, err := f.client.CreateRecord(ctx, f.id, testCollection, record, "")
		if err != nil || status != http.StatusOK {
			b.Fatalf("%d %s %v", status, body, err)
		}
	}

	s := f.src.get(f.id)
	signer, err := oauth.NewSigner(s.DPoPKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	target := s.PDSURL + "/xrpc/" + createNSID
	payload, _ := json.Marshal(map[string]any{"repo": s.DID, "collection": testCollection, "record": record})
	hc := f.srv.Client()
	// proofs makes n proofs ahead of time (each may be used once).
	proofs := func(b *testing.B, n int) []string {
		nonce := f.srv.Nonce()
		out := make([]string, n)
		for i := range out {
			if out[i], err = signer.NewProof(http.MethodPost, target, s.AccessToken, nonce); err != nil {
				b.Fatal(err)
			}
		}
		return out
	}
	direct := func(b *testing.B, proof string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
		req.Header.Set("Authorization", "DPoP "+s.AccessToken)
		req.Header.Set("DPoP", proof)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}

	b.Run("client", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			viaClient(b)
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})

	b.Run("direct", func(b *testing.B) {
		ps := proofs(b, b.N)
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			direct(b, ps[i])
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})

	// Both alternately, so that machine noise hits them alike; the added
	// latency is reported as the difference of their percentiles.
	b.Run("interleaved", func(b *testing.B) {
		ps := proofs(b, b.N)
		viaLat := make([]time.Duration, 0, b.N)
		dirLat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			direct(b, ps[i])
			mid := time.Now()
			viaClient(b)
			viaLat = append(viaLat, time.Since(mid))
			dirLat = append(dirLat, mid.Sub(start))
		}
		b.StopTimer()
		slices.Sort(viaLat)
		slices.Sort(dirLat)
		for _, p := range []struct {
			name string
			q    float64
		}{{"p50", 0.50}, {"p99", 0.99}} {
			i := min(b.N-1, int(p.q*float64(b.N)))
			b.ReportMetric(float64(viaLat[i].Nanoseconds()), "client-"+p.name+"-ns")
			b.ReportMetric(float64(dirLat[i].Nanoseconds()), "direct-"+p.name+"-ns")
			b.ReportMetric(float64((viaLat[i] - dirLat[i]).Nanoseconds()), "added-"+p.name+"-ns")
		}
	})

	// The proof alone: the main cryptographic cost the Client adds.
	b.Run("proof", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			signer, err := oauth.NewSigner(s.DPoPKey, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := signer.NewProof(http.MethodPost, s.PDSURL+"/xrpc/"+createNSID, s.AccessToken, "n"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
